"""Elementwise functions of torch: arithmetic, exp/log/trigonometry, comparisons, ``where``, ``clamp``."""

from __future__ import annotations

from typing import Any

from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.tensor import Tensor, apply, wrap


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


__all__ = [
    "abs",
    "add",
    "atan2",
    "clamp",
    "clip",
    "cos",
    "div",
    "eq",
    "erf",
    "exp",
    "ge",
    "gt",
    "le",
    "log",
    "log1p",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "neg",
    "pow",
    "reciprocal",
    "relu",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "sub",
    "tanh",
    "where",
]
