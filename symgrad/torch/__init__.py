"""A torch-compatible namespace: ``import symgrad.torch as torch`` runs torch code symbolically.

The functions take and return symbolic tensors, with torch's signatures, defaults and error
messages; each is an op of the table or a composite of ops, so its gradient follows from the
ops' rules. ``torch.autograd.backward`` and ``Tensor.backward`` mirror torch's semantics. This
package imports :mod:`symgrad.derive` and the layers below it, never the real torch.

>>> import symgrad.torch as torch
>>> w = torch.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = torch.tensor([[1.0], [1.0]], name="x")
>>> loss = torch.mm(w, x)
>>> loss.backward()
>>> w.grad.tolist()
[[1.0, 1.0]]
"""

from __future__ import annotations

import math as _math
from typing import Any

from ..core.constructors import tensor
from ..core.dims import format_shape as _format_shape
from ..core.dims import normalize_dims as _normalize_dims
from ..core.dims import require_concrete as _require_concrete
from ..core.errors import ShapeError as _ShapeError
from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.tensor import Tensor, apply, constant, wrap
from ..derive.autograd import backward
from . import autograd, linalg, nn
from .linalg import slogdet

float32 = float = "float32"
float64 = double = "float64"
int64 = long = "int64"
inf = _math.inf


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


def pow(input: Any, exponent: Any) -> Tensor:
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


def abs(input: Tensor) -> Tensor:
    return apply("abs", input)


def sqrt(input: Tensor) -> Tensor:
    return apply("sqrt", input)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
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
    shape = _require_concrete(input.shape, "full_like")
    return constant(fill_value, shape=shape, dtype=str(dtype or input.dtype))


def ones_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 1, dtype=dtype)


def zeros_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 0, dtype=dtype)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


# ── more elementwise functions ───────────────────────────────────────────────
def erf(input: Tensor) -> Tensor:
    return apply("erf", input)


def log1p(input: Tensor) -> Tensor:
    return apply("log1p", input)


def reciprocal(input: Tensor) -> Tensor:
    return apply("reciprocal", input)


def rsqrt(input: Tensor) -> Tensor:
    return apply("rsqrt", input)


def sign(input: Tensor) -> Tensor:
    """The sign; like torch's, its gradient is 0 everywhere."""
    return apply("sign", input)


def atan2(input: Any, other: Any) -> Tensor:
    return apply("atan2", input, other)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The larger entry; at a tie each input gets half the gradient, as in torch."""
    return apply("maximum", input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """``-maximum(-input, -other)``: the smaller entry, ties shared as in torch."""
    return -apply("maximum", -wrap(input), -wrap(other))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp to [min, max]; at a bound the gradient passes, as in torch. Bounds must be numbers."""
    for bound in (min, max):
        if isinstance(bound, Tensor):
            raise _UnsupportedError("clamp() with tensor bounds is not supported; give numbers")
    return input.clamp(min=min, max=max)


clip = clamp


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (numbers or tensors; broadcast)."""
    if input is None or other is None:
        raise _UnsupportedError("torch.where(condition) (the nonzero form) is not supported; give input and other")
    return apply("where", condition, input, other)


def gt(input: Any, other: Any) -> Tensor:
    return apply("gt", input, other)


def ge(input: Any, other: Any) -> Tensor:
    return apply("ge", input, other)


def lt(input: Any, other: Any) -> Tensor:
    return apply("lt", input, other)


def le(input: Any, other: Any) -> Tensor:
    return apply("le", input, other)


def eq(input: Any, other: Any) -> Tensor:
    return apply("eq", input, other)


# ── softmax family and reductions ────────────────────────────────────────────
def softmax(input: Tensor, dim: int) -> Tensor:
    return input.softmax(dim)


def log_softmax(input: Tensor, dim: int) -> Tensor:
    return input.log_softmax(dim)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    return input.logsumexp(dim, keepdim=keepdim)


def amax(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The largest entry over ``dim`` (all dims for None or ``()``); ties share the gradient evenly, as in torch."""
    return input.amax(dim, keepdim=keepdim)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """``max(x)`` (ties share the gradient), ``max(x, dim)`` -> (values, indices) with the gradient going to the
    first maximal entry (``indices`` is None: symgrad does not compute it), or ``max(x, other)`` = ``maximum``."""
    if isinstance(dim, Tensor):
        if keepdim:
            raise TypeError("max(input, other) takes no keepdim")
        return maximum(input, dim)
    return input.max(dim, keepdim=keepdim)


def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    """The p-norm over ``dim`` (all dims by default): p = 2 or 'fro' (gradient 0 at 0, as torch), 1 or inf."""
    if p == _math.inf:
        return input.abs().amax(_normalize_dims(dim, input.ndim), keepdim=keepdim)
    if p is None:
        p = 2
    return input.norm(p, dim=dim, keepdim=keepdim)


def _spread_arguments(dim: Any, unbiased: Any, correction: Any, what: str) -> tuple[Any, Any]:
    """torch's var/std signatures: ``(x)``, ``(x, unbiased)``, ``(x, dim, unbiased, keepdim)`` or ``correction=``."""
    if isinstance(dim, bool):  # torch.var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{what}(): unbiased given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{what}(): cannot specify both unbiased and correction")
    if unbiased is not None:
        correction = int(bool(unbiased))
    return dim, 1 if correction is None else correction


def var(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """torch.var: ``var(x)``, ``var(x, dim, keepdim=..., correction=...)`` and the old ``unbiased`` forms."""
    dim, correction = _spread_arguments(dim, unbiased, correction, "var")
    return input.var(dim, correction=correction, keepdim=keepdim)


def std(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> Tensor:
    """torch.std (same arguments as :func:`var`); its gradient is 0 where it is 0, as torch's."""
    dim, correction = _spread_arguments(dim, unbiased, correction, "std")
    return input.std(dim, correction=correction, keepdim=keepdim)


def cumsum(input: Tensor, dim: int) -> Tensor:
    return input.cumsum(dim)


def flip(input: Tensor, dims: Any) -> Tensor:
    return input.flip(dims)


def trace(input: Tensor) -> Tensor:
    return input.trace()


def det(input: Tensor) -> Tensor:
    return apply("det", input)


def logdet(input: Tensor) -> Tensor:
    return apply("logdet", input)


def inverse(input: Tensor) -> Tensor:
    return apply("inv", input)


# ── products ─────────────────────────────────────────────────────────────────
def _einsum_equation(equation: Any) -> str:
    """The equation with an explicit output (torch's implicit one: letters used once, in alphabetical order)."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, not {type(equation).__name__}")
    text = equation.replace(" ", "")
    if "..." in text:
        raise _UnsupportedError("einsum(): ellipsis (...) is not supported")
    inputs, arrow, output = text.partition("->")
    subscripts = inputs.split(",")
    if not all(c.isascii() and c.isalpha() for c in "".join(subscripts) + output):
        raise RuntimeError(f"einsum(): invalid subscript in equation {equation!r}: use letters a-z, A-Z")
    if len(subscripts) != 2:
        raise RuntimeError(f"einsum(): the equation {equation!r} has {len(subscripts)} operands, but 2 were given")
    letters = "".join(subscripts)
    if not arrow:
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    elif len(set(output)) != len(output) or not set(output) <= set(letters):
        raise RuntimeError(f"einsum(): output subscripts {output!r} must be distinct and appear in the inputs")
    return f"{inputs}->{output}"


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation of exactly two operands, e.g. ``einsum("ij,jk->ik", a, b)``."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) != 2:
        raise _UnsupportedError(f"einsum() with {len(operands)} operands is not supported; give exactly two")
    a, b = operands
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError("einsum(): operands must be tensors")
    return apply("einsum", a, b, equation=_einsum_equation(equation))


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[:, None] * vec2[None, :]`` for 1-D tensors."""
    for what, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise _ShapeError(f"outer: Expected 1-D argument {what}, but got {t.ndim}-D")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # torch's keyword names
    """``(input * tensor).sum()`` for 1-D tensors of the same size."""
    other = tensor
    if input.ndim != 1 or other.ndim != 1:
        raise _ShapeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    (n,), (m,) = input.shape, other.shape
    if n != m:
        raise _ShapeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, "
            f"but got {n} and {m} elements respectively"
        )
    return (input * other).sum()


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    for what, t in (("batch1", input), ("batch2", mat2)):
        if t.ndim != 3:
            raise _ShapeError(f"{what} must be a 3D tensor")
    if mat2.shape[:2] != (input.shape[0], input.shape[2]):
        expected = [input.shape[0], input.shape[2]]
        raise _ShapeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{expected[0]}, {expected[1]}] but got: "
            f"[{mat2.shape[0]}, {mat2.shape[1]}]. (shapes {_format_shape(input.shape)} and "
            f"{_format_shape(mat2.shape)})"
        )
    return apply("matmul", input, mat2)


def addmm(input: Any, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; with beta = 0, ``input`` is ignored (as in torch)."""
    product = apply("mm", mat1, mat2)
    if alpha != 1:
        product = alpha * product
    if beta == 0:
        return product
    return (wrap(input) if beta == 1 else beta * wrap(input)) + product


__all__ = [
    "Tensor", "abs", "add", "addmm", "amax", "atan2", "autograd", "backward", "bmm", "clamp", "clip", "cos", "cumsum",
    "det", "div", "dot", "einsum", "eq", "erf", "exp", "flatten", "flip", "full_like", "ge", "ger", "gt", "inf",
    "inverse", "is_tensor", "le", "linalg", "log", "log1p", "log_softmax", "logdet", "logsumexp", "lt", "matmul",
    "max", "maximum", "mean", "minimum", "mm", "mul", "neg", "nn", "norm", "ones_like", "outer", "permute", "pow",
    "reciprocal", "relu", "reshape", "rsqrt", "sigmoid", "sign", "sin", "slogdet", "softmax", "sqrt", "std", "sub",
    "sum", "t", "tanh", "tensor", "trace", "transpose", "unsqueeze", "var", "where", "zeros_like",
]  # fmt: skip
