"""Elementwise functions of torch: arithmetic, exp/log/trigonometry, rounding, comparisons, ``where``, ``clamp``.

>>> import symgrad.torch as torch
>>> x = torch.tensor([-1.5, 0.5, 2.5], name="x")
>>> torch.div(x, 2, rounding_mode="floor").tolist(), torch.round(x).tolist()
([-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0])
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
from collections import namedtuple as _namedtuple
from typing import Any

from ..core.errors import TorchRuntimeError, TorchValueError
from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.registry import SPELLINGS, register_spelling
from ..core.tensor import Tensor, apply, wrap
from . import creation

_ROUNDING = {"trunc": "div_trunc", "floor": "div_floor"}
_frexp = _namedtuple("frexp", ["mantissa", "exponent"])  # torch.return_types.frexp's fields


def _relabel(t: Tensor, dtype: str) -> Tensor:
    """The same node with torch's result dtype (symgrad's numbers are float64 whatever the label)."""
    t.dtype = dtype
    return t


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return wrap(input) + (other if alpha == 1 else alpha * wrap(other))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return wrap(input) - (other if alpha == 1 else alpha * wrap(other))


def mul(input: Any, other: Any) -> Tensor:
    return wrap(input) * other


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``; ``rounding_mode="trunc"`` or ``"floor"`` rounds the quotient (its gradient is 0, as
    torch's)."""
    if rounding_mode is None:
        return wrap(input) / other
    if rounding_mode not in _ROUNDING:
        raise TorchValueError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
        )
    return apply(_ROUNDING[rounding_mode], input, other)


divide = true_divide = div


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``: floor(input / other); torch defines no gradient for it (see ``div(rounding_mode="floor")``,
    which has one)."""
    return apply("floor_divide", input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    return apply("pow", input, exponent)


def float_power(input: Any, exponent: Any) -> Tensor:
    """``pow`` in double precision: the result is float64, as torch's."""
    return _relabel(apply("pow", input, exponent), "float64")


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


def expm1(input: Tensor) -> Tensor:
    return apply("expm1", input)


def exp2(input: Tensor) -> Tensor:
    return apply("exp2", input)


def erfc(input: Tensor) -> Tensor:
    return apply("erfc", input)


def reciprocal(input: Tensor) -> Tensor:
    return apply("reciprocal", input)


def rsqrt(input: Tensor) -> Tensor:
    return apply("rsqrt", input)


def sign(input: Tensor) -> Tensor:
    """The sign; like torch's, its gradient is 0 everywhere."""
    return apply("sign", input)


def floor(input: Tensor) -> Tensor:
    """Rounding down; its gradient is 0, as torch's (so are ``ceil``, ``trunc`` and ``round``)."""
    return apply("floor", input)


def ceil(input: Tensor) -> Tensor:
    return apply("ceil", input)


def trunc(input: Tensor) -> Tensor:
    return apply("trunc", input)


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """To the nearest integer, ties to even (``decimals``: to that many decimal places, as torch computes it)."""
    if decimals == 0:
        return apply("round", input)
    try:
        scale = 10.0 ** _builtins.abs(decimals)
    except OverflowError:
        scale = _math.inf
    if scale == _math.inf:  # torch's scale is inf too: its values are nan, and their gradient 0 · inf
        raise _UnsupportedError(
            f"round(decimals={decimals}): 10**{_builtins.abs(decimals)} is past float64's range, where torch's "
            "result is nan; give decimals within ±308"
        )
    if decimals > 0:
        return apply("round", input * scale) / scale
    return apply("round", input / scale) * scale


def atan2(input: Any, other: Any) -> Tensor:
    return apply("atan2", input, other)


def hypot(input: Any, other: Any) -> Tensor:
    """sqrt(input² + other²) without overflow; its gradient is input / hypot (nan at 0, as torch's)."""
    return apply("hypot", input, other)


def logaddexp(input: Any, other: Any) -> Tensor:
    """log(exp(input) + exp(other)), computed as torch does (no overflow for large inputs)."""
    return apply("logaddexp", input, other)


def xlogy(input: Any, other: Any) -> Tensor:
    """input · log(other), and 0 where input is 0 (nan where other is nan), as torch.xlogy."""
    return apply("xlogy", input, other)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """The larger entry; at a tie each input gets half the gradient, as in torch."""
    return apply("maximum", input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """``-maximum(-input, -other)``: the smaller entry, ties shared as in torch."""
    return -apply("maximum", -wrap(input), -wrap(other))


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp to [min, max] (numbers or tensors, broadcast): torch's values (``max`` wins where min > max, nan
    passes) and gradients (the input gets it inside the closed interval, a tensor bound where it clamps)."""
    if min is None and max is None:
        raise TorchRuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        return input.clamp(min=min, max=max)
    if max is None:
        return apply("clamp_min", input, min)
    if min is None:
        return apply("clamp_max", input, max)
    return apply("clamp_between", input, min, max)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    return clamp(input, max=max)


def lerp(input: Any, end: Any, weight: Any) -> Tensor:
    """input + weight · (end − input), computed as torch does: from ``end`` when |weight| ≥ 0.5."""
    if not isinstance(weight, Tensor):
        if _builtins.abs(weight) < 0.5:
            return input + weight * (end - input)
        return end - (end - input) * (1 - weight)
    small = apply("lt", weight.abs(), 0.5)
    return apply("where", small, input + weight * (end - input), end - (end - input) * (1 - weight))


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """input + value · tensor1 · tensor2 (in torch's order of operations)."""
    return input + (tensor1 if value == 1 else value * wrap(tensor1)) * tensor2


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
    """input + value · tensor1 / tensor2 (in torch's order of operations)."""
    return input + (tensor1 if value == 1 else value * wrap(tensor1)) / tensor2


def where(condition: Tensor, input: Any = None, other: Any = None) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (numbers or tensors; broadcast)."""
    if input is None or other is None:
        raise _UnsupportedError("torch.where(condition) (the nonzero form) is not supported; give input and other")
    out = apply("where", condition, input, other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):  # two Python numbers: torch's promotion
        floating = isinstance(input, float) or isinstance(other, float)
        _relabel(out, "float32" if floating else "int64")
    return out


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


def ne(input: Any, other: Any) -> Tensor:
    return apply("ne", input, other)


def isnan(input: Tensor) -> Tensor:
    return apply("isnan", input)


def logical_and(input: Any, other: Any) -> Tensor:
    """True where both are nonzero (torch's logical ops read numbers as ``!= 0``); no gradient."""
    return apply("logical_and", input, other)


def logical_or(input: Any, other: Any) -> Tensor:
    return apply("logical_or", input, other)


def logical_xor(input: Any, other: Any) -> Tensor:
    return apply("logical_xor", input, other)


def logical_not(input: Any) -> Tensor:
    return apply("logical_not", input)


def polygamma(n: int, input: Tensor) -> Tensor:
    """ψ⁽ⁿ⁾(input), the n-th derivative of the digamma function."""
    return apply("polygamma", input, n=int(n))


register_spelling("Tensor.polygamma", lambda self, n: polygamma(n, self))  # the order is n, input in torch.polygamma


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(input / (1 - input)), of input clamped to [eps, 1 - eps] when eps is given (torch's gradient is 0
    outside it)."""
    return apply("logit", input, eps=None if eps is None else float(eps))


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension p: p(p-1)/4·log(π) + Σᵢ lgamma(input - i/2)."""
    if p < 1:
        raise TorchRuntimeError("p has to be greater than or equal to 1")
    terms = [apply("lgamma", input - i / 2 if i else input) for i in range(p)]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    return total + p * (p - 1) / 4 * _math.log(_math.pi) if p > 1 else total


def ldexp(input: Any, other: Any) -> Tensor:
    """input · 2^other."""
    return wrap(input) * apply("exp2", wrap(other))


def frexp(input: Tensor) -> Any:
    """(mantissa, exponent) with input = mantissa · 2^exponent and 0.5 ≤ |mantissa| < 1; the exponent is int32."""
    exponent = apply("frexp_exponent", input)
    exponent.dtype = "int32"
    return _frexp(apply("frexp_mantissa", input), exponent)


def fill(input: Tensor, value: Any) -> Tensor:
    """``value`` (a number, or a 0-d tensor whose gradient is then the sum) in input's shape and dtype."""
    return input.fill(value)


def sgn(input: Tensor) -> Tensor:
    """The sign of a real tensor (torch.sign's)."""
    return apply("sign", input)


def angle(input: Tensor) -> Tensor:
    """The argument of a real number: π for a negative one, 0 otherwise (nan stays nan); its gradient is 0."""
    return apply("where", apply("lt", input, 0), _math.pi, input * 0.0)


def positive(input: Tensor) -> Tensor:
    """The input itself."""
    return input


def conj(input: Tensor) -> Tensor:
    """The complex conjugate: a real tensor itself."""
    return input


conj_physical = resolve_conj = resolve_neg = conj


def isreal(input: Tensor) -> Tensor:
    """True everywhere for a real tensor."""
    return creation.ones_like(input, dtype="bool")


__all__ = [
    "abs",
    "add",
    "addcdiv",
    "addcmul",
    "angle",
    "atan2",
    "ceil",
    "clamp",
    "clamp_max",
    "clamp_min",
    "clip",
    "conj",
    "conj_physical",
    "cos",
    "div",
    "divide",
    "eq",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "fill",
    "float_power",
    "floor",
    "floor_divide",
    "frexp",
    "ge",
    "gt",
    "hypot",
    "isnan",
    "isreal",
    "ldexp",
    "le",
    "lerp",
    "log",
    "log1p",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logit",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "mvlgamma",
    "ne",
    "neg",
    "polygamma",
    "positive",
    "pow",
    "reciprocal",
    "relu",
    "resolve_conj",
    "resolve_neg",
    "round",
    "rsqrt",
    "sgn",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "sub",
    "tanh",
    "true_divide",
    "trunc",
    "where",
    "xlogy",
]  # fmt: skip
# the functions rows spell themselves (acos, special functions, bit operations, …): see symgrad.ops.rows.spell
_SPELLED = {name: build for name, build in sorted(SPELLINGS.get("torch", {}).items()) if name not in globals()}
globals().update(_SPELLED)
__all__ += list(_SPELLED)
