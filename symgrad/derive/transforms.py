"""Function transforms, as torch.func and torch.autograd.functional define them, on symgrad tensors.

A function of tensors is called once on the given inputs (symbolic tensors, leaves), and the result
is differentiated: gradients and vector products through the VJP rules (graphs that can be
differentiated again), Jacobians and Hessians entry by entry with torch's layouts.

>>> import symgrad as sg
>>> x = sg.tensor([1.0, 2.0], name="x")
>>> gradient(lambda x: (x**2).sum(), [x])[0].tolist()
[2.0, 4.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.errors import SymgradError, TorchTypeError
from ..core.tensor import Tensor, constant
from .forward import jvp
from .reverse import implicit_grad, law


def as_tensors(values: Any, what: str) -> list[Tensor]:
    """A tensor or a tuple of tensors, as a list (torch.func's and torch.autograd.functional's inputs)."""
    items = list(values) if isinstance(values, (tuple, list)) else [values]
    for item in items:
        if not isinstance(item, Tensor):
            raise TorchTypeError(f"{what} must be symgrad Tensors, not {type(item).__name__}")
    return items


def vector_jacobian(outputs: Sequence[Tensor], inputs: Sequence[Tensor], cotangents: Sequence[Tensor]) -> list[Tensor]:
    """vᵀJ for each input, as graphs of VJP rules (differentiable again)."""
    return list(law(list(outputs), list(inputs), list(cotangents), simplified=False))


def jacobian_vector(outputs: Sequence[Tensor], inputs: Sequence[Tensor], tangents: Sequence[Tensor]) -> list[Tensor]:
    """J·t for each output, through forward mode."""
    return jvp(list(outputs), list(inputs), list(tangents), simplified=False)


def gradient(func: Callable[..., Tensor], inputs: Sequence[Tensor]) -> list[Tensor]:
    """The gradient of a one-element ``func(*inputs)`` with respect to each input."""
    out = func(*inputs)
    if not isinstance(out, Tensor):
        raise SymgradError(f"the function must return a tensor, not {type(out).__name__}")
    return vector_jacobian([out], inputs, [implicit_grad(out)])


def zeros_like(t: Tensor) -> Tensor:
    return constant(0, shape=t.shape, dtype=t.dtype)
