"""``nn.Linear``, ``nn.Identity``, ``nn.Flatten`` and ``nn.Unflatten``.

``Linear(in_features, out_features)`` starts from torch's initial weights (drawn from symgrad's generator);
with symbolic sizes its weight and bias are symbols, and the layer has laws for every size.

>>> import symgrad as sg
>>> import symgrad.torch as torch
>>> n, k, m = sg.dims("n k m")
>>> layer = torch.nn.Linear(n, k)
>>> layer.weight.name, layer.weight.shape
('weight', (k, n))
>>> layer(sg.symbols("X", (m, n))).shape
(m, k)
"""

from __future__ import annotations

from typing import Any

from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import initial_parameters
from .module import Module
from .parameter import Parameter


class Identity(Module):
    """The input itself (any constructor arguments are ignored, as torch's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""

    def __init__(
        self, in_features: Any, out_features: Any, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        shapes = {"weight": (out_features, in_features), "bias": (out_features,) if bias else None}
        state = initial_parameters("Linear", shapes, in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.weight = Parameter(state["weight"])
        if bias:
            self.bias = Parameter(state["bias"])
        else:
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """``MultiheadAttention.out_proj``'s class in torch: a ``Linear`` (the name only matters to quantisation)."""


def linear_layer(weight: Any, bias: Any, kind: type[Linear] = Linear) -> Linear:
    """A ``kind`` (a ``Linear``) holding these initial weight and bias (None: no bias), without drawing random
    numbers."""
    layer = kind.__new__(kind)
    Module.__init__(layer)
    layer.out_features, layer.in_features = weight.shape
    layer.weight = Parameter(weight)
    if bias is None:
        layer.register_parameter("bias", None)
    else:
        layer.bias = Parameter(bias)
    return layer


class Flatten(Module):
    """``input.flatten(start_dim, end_dim)``, from dim 1 by default (the batch dim stays)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """``input.unflatten(dim, unflattened_size)``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = ["Flatten", "Identity", "Linear", "NonDynamicallyQuantizableLinear", "Unflatten", "linear_layer"]
