"""Activation modules: each calls its function of :mod:`symgrad.torch.nn.functional` with the options it keeps.

``PReLU`` holds a learnt slope; ``GLU`` and ``Tanhshrink`` are composites of ops with torch's gradients.

>>> import symgrad.torch as torch
>>> x = torch.tensor([-2.0, 0.0, 2.0], requires_grad=True, name="x")
>>> torch.nn.LeakyReLU(0.1)(x).tolist()
[-0.2, 0.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from ....core.dims import normalize_dim
from ....core.errors import TorchAssertionError, TorchRuntimeError
from ....core.tensor import Tensor
from ... import pointwise
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import initial_parameters
from .module import Module
from .parameter import Parameter


class _Activation(Module):
    """An activation with keyword options ``fields`` passed on to ``F.<function>``."""

    function = ""
    fields: tuple[str, ...] = ()

    def __init__(self, **options: Any) -> None:
        super().__init__()
        for name, value in options.items():
            setattr(self, name, value)

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self.function)(input, **{name: getattr(self, name) for name in self.fields})

    def extra_repr(self) -> str:
        shown = [f"{name}={getattr(self, name)}" for name in self.fields if name != "inplace"]
        return ", ".join(shown + (["inplace=True"] if getattr(self, "inplace", False) else []))


class ReLU(_Activation):
    function, fields = "relu", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class ReLU6(_Activation):
    function, fields = "relu6", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class Tanh(_Activation):
    function = "tanh"


class Sigmoid(_Activation):
    function = "sigmoid"


class LogSigmoid(_Activation):
    function = "logsigmoid"


class Softsign(_Activation):
    function = "softsign"


class GELU(_Activation):
    function, fields = "gelu", ("approximate",)

    def __init__(self, approximate: str = "none") -> None:
        super().__init__(approximate=approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Activation):
    function, fields = "silu", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class Mish(_Activation):
    function, fields = "mish", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class Hardswish(_Activation):
    function, fields = "hardswish", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class Hardsigmoid(_Activation):
    function, fields = "hardsigmoid", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class SELU(_Activation):
    function, fields = "selu", ("inplace",)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)


class ELU(_Activation):
    function, fields = "elu", ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha=alpha, inplace=inplace)


class CELU(_Activation):
    function, fields = "celu", ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha=alpha, inplace=inplace)


class LeakyReLU(_Activation):
    function, fields = "leaky_relu", ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(negative_slope=negative_slope, inplace=inplace)


class Hardtanh(_Activation):
    function, fields = "hardtanh", ("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        if min_val >= max_val:
            raise TorchAssertionError
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class Threshold(_Activation):
    function, fields = "threshold", ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(threshold=threshold, value=value, inplace=inplace)


class Softplus(_Activation):
    function, fields = "softplus", ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=beta, threshold=threshold)


class Softmax(_Activation):
    function, fields = "softmax", ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)


class LogSoftmax(_Activation):
    function, fields = "log_softmax", ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)


class Softmin(_Activation):
    function, fields = "softmin", ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)


class Tanhshrink(Module):
    """x − tanh(x)."""

    def forward(self, input: Tensor) -> Tensor:
        return input - pointwise.tanh(input)


class GLU(Module):
    """a · sigmoid(b) for the two halves a, b of ``dim``."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        axis = normalize_dim(self.dim, input.ndim)
        size = input.shape[axis]
        if not isinstance(size, int) or size % 2:
            raise TorchRuntimeError(f"Halving dimension must be even, but dimension {axis} is size {size}")
        a, b = input.chunk(2, axis)
        return a * b.sigmoid()

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x where x > 0, else weight · x, with a learnt ``weight`` of ``num_parameters`` slopes (one per channel, dim 1);
    as torch, the gradient at 0 is weight (for x) and 0 (for weight)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        shapes = {"weight": (num_parameters,)}
        state = initial_parameters("PReLU", shapes, num_parameters, init, device=device, dtype=dtype)
        self.weight = Parameter(state["weight"])

    def forward(self, input: Tensor) -> Tensor:
        weight = self.weight
        if input.ndim >= 2 and self.num_parameters != 1:
            weight = weight.reshape(1, self.num_parameters, *([1] * (input.ndim - 2)))
        elif self.num_parameters == 1:
            weight = weight.reshape(*([1] * input.ndim)) if input.ndim else weight.reshape(())
        return pointwise.where(input > 0, input, weight * input)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmin",
    "Softplus",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]  # fmt: skip
