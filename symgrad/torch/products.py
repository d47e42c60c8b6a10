"""Products and linear algebra at the top of torch: ``mm``, ``matmul``, ``einsum``, ``det``, ``inverse``."""

from __future__ import annotations

from typing import Any

from ..core.dims import format_shape as _format_shape
from ..core.errors import ShapeError as _ShapeError
from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.tensor import Tensor, apply, wrap


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return apply("mm", input, mat2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return apply("matmul", input, other)


def trace(input: Tensor) -> Tensor:
    return input.trace()


def det(input: Tensor) -> Tensor:
    return apply("det", input)


def logdet(input: Tensor) -> Tensor:
    return apply("logdet", input)


def inverse(input: Tensor) -> Tensor:
    return apply("inv", input)


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


__all__ = ["addmm", "bmm", "det", "dot", "einsum", "ger", "inverse", "logdet", "matmul", "mm", "outer", "trace"]
