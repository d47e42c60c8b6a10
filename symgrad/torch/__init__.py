"""A torch-compatible namespace: ``import symgrad.torch as torch`` runs torch code symbolically.

>>> import symgrad.torch as torch
>>> w = torch.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = torch.tensor([[1.0], [1.0]], name="x")
>>> loss = torch.mm(w, x)
>>> loss.backward()
>>> w.grad.tolist()
[[1.0, 1.0]]
"""

from __future__ import annotations

from typing import Any

from .. import autograd as _autograd_impl
from ..tensor import Tensor, apply, constant, tensor, wrap
from . import autograd, nn

float32 = float = "float32"
float64 = double = "float64"
int64 = long = "int64"


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return apply("mm", input, mat2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return apply("matmul", input, other)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return wrap(input) + (other if alpha == 1 else alpha * wrap(other))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return wrap(input) - (other if alpha == 1 else alpha * wrap(other))


def mul(input: Any, other: Any) -> Tensor:
    return wrap(input) * other


def div(input: Any, other: Any) -> Tensor:
    return wrap(input) / other


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001 - torch's spelling
    return apply("pow", input, exponent)


def neg(input: Tensor) -> Tensor:
    return -input


def exp(input: Tensor) -> Tensor:
    return apply("exp", input)


def log(input: Tensor) -> Tensor:
    return apply("log", input)


def sin(input: Tensor) -> Tensor:
    return apply("sin", input)


def cos(input: Tensor) -> Tensor:
    return apply("cos", input)


def tanh(input: Tensor) -> Tensor:
    return apply("tanh", input)


def sigmoid(input: Tensor) -> Tensor:
    return apply("sigmoid", input)


def relu(input: Tensor) -> Tensor:
    return apply("relu", input)


def abs(input: Tensor) -> Tensor:  # noqa: A001 - torch's spelling
    return apply("abs", input)


def sqrt(input: Tensor) -> Tensor:
    return apply("sqrt", input)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return input.sum(dim=dim, keepdim=keepdim)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    return input.mean(dim=dim, keepdim=keepdim)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    return input.transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    return input.t()


def permute(input: Tensor, dims: Any) -> Tensor:
    return input.permute(dims)


def reshape(input: Tensor, shape: Any) -> Tensor:
    return input.reshape(shape)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return input.unsqueeze(dim)


def flatten(input: Tensor) -> Tensor:
    return input.flatten()


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None) -> Tensor:
    """Known numbers shaped like ``input`` (no symbols of their own)."""
    from ..dims import require_concrete

    shape = require_concrete(input.shape, "full_like")
    return constant(fill_value, shape=shape, dtype=str(dtype or input.dtype))


def ones_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 1, dtype=dtype)


def zeros_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 0, dtype=dtype)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


backward = _autograd_impl.backward

__all__ = [
    "Tensor", "abs", "add", "autograd", "backward", "cos", "div", "exp", "flatten", "full_like", "is_tensor", "log",
    "matmul", "mean", "mm", "mul", "neg", "nn", "ones_like", "permute", "pow", "relu", "reshape", "sigmoid", "sin",
    "sqrt", "sub", "sum", "t", "tanh", "tensor", "transpose", "unsqueeze", "zeros_like",
]
