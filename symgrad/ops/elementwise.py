"""Elementwise ops: arithmetic with broadcasting, comparisons, ``where``, and functions of one tensor.

>>> import symgrad as sg
>>> x = sg.tensor([[0.5, -1.0]], name="x")
>>> (x.exp() * 2 - 1).tolist()[0][1] == 2 * float(sympy.exp(-1)) - 1
True
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import sympy

from ..core.arrays import elementwise
from ..core.dims import broadcast_shapes
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from . import float_functions, functions
from .calculus import NoDerivative, elementwise_vjp, unbroadcast, zero_gradient
from .rows import binary, same_shape, scalar_kinds, unary
from .sympy_torch import evaluate


def _divide(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """a / b with torch's IEEE results for a zero divisor (inf, -inf, nan) instead of an exception."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    if b.is_Number and b.is_zero:
        if a.is_Number:
            return sympy.nan if a.is_zero else (sympy.oo if a > 0 else -sympy.oo)
        return a * sympy.oo  # ±inf by the sign of a, and nan where a is 0, as IEEE division
    return a / b


# ── elementwise arithmetic (broadcasting) ──────────────────────────────────
binary(
    "add",
    lambda a, b: a + b,
    lambda torch, a, b: a + b,
    "{0} + {1}",
    "{0} + {1}",
    "AddBackward0",
    saves=False,
    precedence=4,
    vjp=lambda g, out, a, b: (unbroadcast(g, a.shape), unbroadcast(g, b.shape)),
    float64=np.add,
)
binary(
    "sub",
    lambda a, b: a - b,
    lambda torch, a, b: a - b,
    "{0} - {1}",
    "{0} - {1}",
    lambda inputs: "RsubBackward1" if scalar_kinds(inputs)[0] else "SubBackward0",
    saves=False,
    precedence=4,
    vjp=lambda g, out, a, b: (unbroadcast(g, a.shape), unbroadcast(-g, b.shape)),
    float64=np.subtract,
)
binary(
    "mul",
    lambda a, b: a * b,
    lambda torch, a, b: a * b,
    "{0} * {1}",
    r"{0} \odot {1}",
    "MulBackward0",
    saves=True,
    precedence=5,
    vjp=lambda g, out, a, b: (unbroadcast(g * b, a.shape), unbroadcast(g * a, b.shape)),
    float64=np.multiply,
)
binary(
    "div",
    _divide,
    lambda torch, a, b: a / b,
    "{0} / {1}",
    r"\frac{{{0}}}{{{1}}}",
    "DivBackward0",
    saves=True,
    precedence=5,
    float_result=True,
    vjp=lambda g, out, a, b: (unbroadcast(g / b, a.shape), unbroadcast(-g * out / b, b.shape)),
    float64=np.true_divide,
)
binary(
    "pow",
    lambda a, b: a**b,
    lambda torch, a, b: a**b,
    "{0} ** {1}",
    "{0}^{{{1}}}",
    lambda inputs: {(False, True): "PowBackward0", (True, False): "PowBackward2"}.get(
        scalar_kinds(inputs), "PowBackward1"
    ),
    saves=True,
    precedence=7,
    vjp=lambda g, out, a, b: _pow_vjp(g, out, a, b),
    float64=lambda a, b: _pow_float64(a, b),
)


def _pow_float64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a ** b as torch's kernel: an exponent of 0.5 is sqrt and -0.5 is rsqrt, so (-inf) ** 0.5 is nan
    (C's pow gives inf) and (-0.0) ** -0.5 is -inf."""
    with np.errstate(all="ignore"):
        if np.ndim(b) == 0 and float(b) == 0.5:
            return np.sqrt(a)
        if np.ndim(b) == 0 and float(b) == -0.5:
            return 1.0 / np.sqrt(a)
        return np.power(a, b)


def _scalar_value(t: Any) -> Any:
    """The number a Python scalar operand holds (None for a tensor, or a size such as 1/n)."""
    if not getattr(t, "is_python_scalar", False) or t.shape:
        return None
    value = sympy.sympify(t.entries().item())
    return float(value) if value.is_Number else None


def _pow_vjp(g, out, a, b) -> tuple:
    """torch's pow backward: zeros to the base where the exponent is 0 (zeros that flow on, as torch's
    ``zeros_like``: a nan further back still meets them), none to the exponent where the base is 0 and the
    exponent is at least 0 (where 0 · inf would give nan). The base's ``where`` replaces the incoming gradient
    too (a nan gradient gives 0 where the exponent is 0), the exponent's multiplies it, as torch's."""
    exponent, base = _scalar_value(b), _scalar_value(a)
    if exponent is not None:  # the lowered exponent stays a Python number: x ** 2 → 2 * x ** 1 → 2 * x
        lowered = sympy.sympify(b.entries().item()) - 1
        if lowered.is_Integer or lowered.is_Float:
            ga = (
                zero_gradient(a)
                if exponent == 0
                else g * b * a ** (int(lowered) if lowered.is_Integer else float(lowered))
            )
        else:
            ga = zero_gradient(a) if exponent == 0 else g * b * a ** (b - 1)
    else:  # the incoming gradient inside the where, as torch's: a nan gradient still gives 0 where b is 0
        ga = apply("where", apply("eq", b, 0), 0, g * b * a ** (b - 1))
    log_term = out * apply("log", a)  # the exponent's: the incoming gradient outside the where, as torch's
    if base is not None:
        gb = g * (apply("where", apply("ge", b, 0), 0, log_term) if base == 0 else log_term)
    else:
        gb = g * apply("where", apply("eq", a, 0), apply("where", apply("ge", b, 0), 0, log_term), log_term)
    return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


binary(
    "atan2",
    sympy.atan2,
    lambda torch, a, b: torch.atan2(a, b),
    "torch.atan2({0}, {1})",
    r"\operatorname{{atan2}}\left({0}, {1}\right)",
    "Atan2Backward0",
    saves=True,
    precedence=9,
    # torch's atan2 backward multiplies by 1 / (a² + b²) taken as 0 where a² + b² is 0 (at the origin, or when it
    # underflows): 0 there for a finite g, nan for an infinite one (−∞ · 0 · 0)
    vjp=lambda g, out, a, b: (
        unbroadcast(g * b * apply("masked_div", 1.0, a**2 + b**2), a.shape),
        unbroadcast(-g * a * apply("masked_div", 1.0, a**2 + b**2), b.shape),
    ),
)
binary(
    "maximum",
    functions.maximum,
    lambda torch, a, b: torch.maximum(a, b),
    "torch.maximum({0}, {1})",
    r"\max\left({0}, {1}\right)",
    "MaximumBackward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: (
        unbroadcast(_maximum_share(g, a, b), a.shape),
        unbroadcast(_maximum_share(g, b, a), b.shape),
    ),
)


def _maximum_share(g: Tensor, mine: Tensor, other: Tensor) -> Tensor:
    """torch's maximum backward for one side: 0 where the other side is larger, g/2 at a tie, else g.

    It selects (a nan or infinite g never meets the 0), and a nan on either side passes g on.
    """
    return apply("where", apply("lt", mine, other), 0, apply("where", apply("eq", mine, other), g / 2, g))


binary(
    "masked_div",
    functions.masked_div,
    lambda torch, a, b: torch.where(b == 0, torch.zeros_like(a / b), a / b),
    "torch.where({1} == 0, 0.0, {0} / {1})",
    r"\frac{{{0}}}{{{1}}}",
    "DivBackward0",
    saves=True,
    precedence=9,
    float_result=True,
    vjp=lambda g, out, a, b: (
        unbroadcast(apply("masked_div", g, b), a.shape),
        unbroadcast(-apply("masked_div", g * out, b), b.shape),
    ),
)
register(
    Op(
        "neg",
        same_shape,
        lambda a: elementwise(lambda x: -x, a),
        lambda torch, a: -a,
        "-{0}",
        "-{0}",
        "NegBackward0",
        saves=False,
        scalar=lambda x: -x,
        precedence=6,
        vjp=lambda g, out, a: (-g,),
        float64=np.negative,
        batch="pointwise",
    )
)

register(
    Op(
        "ignored",
        same_shape,
        lambda a: elementwise(lambda x: sympy.S.Zero, a),
        lambda torch, a: torch.zeros_like(a),
        "torch.zeros_like({0})",
        "0",
        "none",
        saves=False,
        # addmm(c, a, b, beta=0) leaves c's values out, yet torch's backward gives c the gradient g * beta
        vjp=lambda g, out, a: (g * 0,),
        float64=np.zeros_like,
        batch="pointwise",
    )
)

# ── comparisons and masks (no gradient) ────────────────────────────────────
for _name, _relation, _symbol, _tex, _ufunc in (
    ("gt", sympy.StrictGreaterThan, ">", ">", np.greater),
    ("ge", sympy.GreaterThan, ">=", r"\geq", np.greater_equal),
    ("lt", sympy.StrictLessThan, "<", "<", np.less),
    ("le", sympy.LessThan, "<=", r"\leq", np.less_equal),
    ("eq", sympy.Eq, "==", "=", np.equal),
    ("ne", sympy.Ne, "!=", r"\neq", np.not_equal),
):
    binary(
        _name,
        (lambda relation: lambda a, b: functions.compare(relation, a, b))(_relation),
        (lambda op: lambda torch, a, b: op(a, b))(getattr(operator, _name)),
        f"{{0}} {_symbol} {{1}}",
        f"{{0}} {_tex} {{1}}",
        "none",
        saves=False,
        precedence=3,
        vjp=lambda g, out, a, b: (None, None),
        differentiable=False,
        tags=("comparison",),
        float64=_ufunc,
    )


def _truth(entry: Any) -> Any:
    """An entry as a truth value, as torch's logical ops read it: a boolean as it is, a number as ``!= 0``."""
    if entry in (sympy.true, sympy.false, True, False) or isinstance(entry, sympy.logic.boolalg.Boolean):
        return sympy.true if entry is True else sympy.false if entry is False else entry
    return functions.compare(sympy.Ne, entry, 0)


for _name, _logic, _tex, _ufunc in (
    ("logical_and", sympy.And, r"\wedge", np.logical_and),
    ("logical_or", sympy.Or, r"\vee", np.logical_or),
    ("logical_xor", sympy.Xor, r"\oplus", np.logical_xor),
):
    binary(
        _name,
        (lambda logic: lambda a, b: logic(_truth(a), _truth(b)))(_logic),
        (lambda fn: lambda torch, a, b: getattr(torch, fn)(a, b))(_name),
        f"torch.{_name}({{0}}, {{1}})",
        f"{{0}} {_tex} {{1}}",
        "none",
        saves=False,
        precedence=9,
        vjp=lambda g, out, a, b: (None, None),
        differentiable=False,
        tags=("comparison",),
        float64=_ufunc,
    )
register(
    Op(
        "logical_not",
        same_shape,
        lambda a: elementwise(lambda e: sympy.Not(_truth(e)), a),
        lambda torch, a: torch.logical_not(a),
        "torch.logical_not({0})",
        r"\neg {0}",
        "none",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, a: (None,),
        tags=frozenset({"comparison"}),
        float64=np.logical_not,
        batch="pointwise",
    )
)


def _where(c: Any, a: Any, b: Any) -> sympy.Expr:
    if c in (sympy.true, True):
        return a
    if c in (sympy.false, False):
        return b
    return sympy.Piecewise((a, c), (b, True))


register(
    Op(
        "where",
        lambda c, a, b: broadcast_shapes(broadcast_shapes(c, a), b),
        lambda c, a, b: elementwise(_where, c, a, b),
        lambda torch, c, a, b: torch.where(c.bool(), a, b),
        "torch.where({0}, {1}, {2})",
        r"\begin{{cases}} {1} & {0} \\ {2} & \text{{otherwise}} \end{{cases}}",
        "WhereBackward0",
        tags=frozenset({"broadcasting"}),
        vjp=lambda g, out, c, a, b: (
            None,
            unbroadcast(apply("where", c, g, 0), a.shape),
            unbroadcast(apply("where", c, 0, g), b.shape),
        ),
        batch="broadcast",
    )
)
unary(
    "step",
    lambda t, at_zero: sympy.Heaviside(t, at_zero),
    r"H\left({0}\right)",
    torch_fn=lambda torch, a, at_zero: torch.heaviside(a, torch.tensor(float(at_zero), dtype=a.dtype)),
    code="torch.heaviside({0}, {at_zero})",
    vjp=lambda g, out, a, at_zero: (None,),
)
unary("sign", functions.sign, r"\operatorname{{sign}}\left({0}\right)", vjp=lambda g, out, a: (zero_gradient(a),))

# ── elementwise functions ──────────────────────────────────────────────────
unary("exp", sympy.exp, r"\exp\left({0}\right)", float_result=True, float64=np.exp)
unary("log", sympy.log, r"\log\left({0}\right)", float_result=True, float64=np.log)
unary("sin", sympy.sin, r"\sin\left({0}\right)", float_result=True, float64=np.sin)
unary("cos", sympy.cos, r"\cos\left({0}\right)", float_result=True, float64=np.cos)
unary("tanh", sympy.tanh, r"\tanh\left({0}\right)", float_result=True, float64=np.tanh)
unary("sigmoid", functions.sigmoid, r"\sigma\left({0}\right)", float_result=True)
unary("abs", sympy.Abs, r"\left|{0}\right|", float64=np.abs)
unary("sqrt", sympy.sqrt, r"\sqrt{{{0}}}", float_result=True, float64=np.sqrt)
unary("erf", sympy.erf, r"\operatorname{{erf}}\left({0}\right)", float_result=True)
unary("log1p", lambda t: sympy.log(1 + t), r"\log\left(1 + {0}\right)", float_result=True)
unary("expm1", lambda t: sympy.exp(t) - 1, r"\left(e^{{{0}}} - 1\right)", float_result=True, float64=np.expm1)
unary("exp2", lambda t: 2**t, r"2^{{{0}}}", float_result=True, float64=np.exp2)
unary("erfc", sympy.erfc, r"\operatorname{{erfc}}\left({0}\right)", float_result=True)
unary("reciprocal", lambda t: 1 / t, r"\frac{{1}}{{{0}}}", float_result=True)
unary("rsqrt", lambda t: 1 / sympy.sqrt(t), r"\frac{{1}}{{\sqrt{{{0}}}}}", float_result=True)
unary(
    "clamp",
    lambda t, min, max: _clamp(t, min, max),
    r"\operatorname{{clamp}}\left({0}\right)",
    torch_fn=lambda torch, a, min, max: torch.clamp(a, min=min, max=max),
    code="torch.clamp({0}, min={min}, max={max})",
    grad_fn="ClampBackward1",
    vjp=lambda g, out, a, min, max: (_inside(g, a, min, max),),
    float64=lambda a, min, max: _clip(a, min, max),
)


def _inside(g, a, low, high):
    """g where low <= a <= high, else 0 (torch's clamp backward: nan gets 0, a bound passes g)."""
    if high is not None:
        g = apply("where", apply("le", a, high), g, 0)
    if low is not None:
        g = apply("where", apply("ge", a, low), g, 0)
    return g


def _clip(a: np.ndarray, low: Any, high: Any) -> np.ndarray:
    """min(max(a, low), high) with nan passing through, as torch.clamp (high wins when low > high)."""
    out = a if low is None else np.maximum(a, low)
    return out if high is None else np.minimum(out, high)


def _clamp(t: sympy.Expr, low: Any, high: Any) -> sympy.Expr:
    """clamp as a Piecewise whose derivative is 1 on the closed interval: torch passes the gradient at a bound."""
    pieces = []
    if low is not None:
        pieces.append((sympy.sympify(low), t < low))
    if high is not None:
        pieces.append((sympy.sympify(high), t > high))
    return sympy.Piecewise(*pieces, (t, True)) if pieces else t


register(
    Op(
        name="map",  # any SymPy-expressible scalar function, given as a Lambda
        shape=same_shape,
        meaning=lambda a, fn, label: elementwise(fn, a),
        torch=lambda torch, a, fn, label: _evaluate_lambda(torch, fn, a),
        code="{label}({0})",
        latex=r"\operatorname{{{label}}}\left({0}\right)",
        grad_fn=lambda inputs, fn, label: f"{label}Backward",
        float_result=True,
        vjp=lambda g, out, a, fn, label: (elementwise_vjp(g, fn, a, out),),
    )
)


def _evaluate_lambda(torch: Any, fn: sympy.Lambda, a: Any) -> Any:
    (variable,) = fn.variables
    return evaluate(fn.expr, {variable: a}, torch) + 0 * a  # keeps shape for constant functions


# ── clamp with tensor bounds: torch's gradients, the bounds' included ─────
binary(
    "clamp_min",
    lambda x, low: sympy.Piecewise((low, functions.lt(x, low)), (x, True)),
    lambda torch, x, low: torch.clamp_min(x, low),
    "torch.clamp_min({0}, {1})",
    r"\max\left({0}, {1}\right)",
    "ClampMinBackward1",
    saves=True,
    precedence=9,
    vjp=lambda g, out, x, low: (
        unbroadcast(apply("where", apply("ge", x, low), g, 0), x.shape),
        unbroadcast(apply("where", apply("lt", x, low), g, 0), low.shape),
    ),
    float64=np.maximum,
)
binary(
    "clamp_max",
    lambda x, high: sympy.Piecewise((high, functions.gt(x, high)), (x, True)),
    lambda torch, x, high: torch.clamp_max(x, high),
    "torch.clamp_max({0}, {1})",
    r"\min\left({0}, {1}\right)",
    "ClampMaxBackward1",
    saves=True,
    precedence=9,
    vjp=lambda g, out, x, high: (
        unbroadcast(apply("where", apply("le", x, high), g, 0), x.shape),
        unbroadcast(apply("where", apply("gt", x, high), g, 0), high.shape),
    ),
    float64=np.minimum,
)


def _clamp_between(x: Any, low: Any, high: Any) -> sympy.Expr:
    """min(max(x, low), high): ``high`` wherever low > high, as in torch."""
    return sympy.Piecewise(
        (low, functions.lt(x, low) & functions.le(low, high)),
        (high, functions.gt(x, high) | functions.gt(low, high)),
        (x, True),
    )


def _clamp_between_vjp(g, out, x, low, high) -> tuple:
    """torch's clamp backward for tensor bounds: x gets g inside [low, high], low where x < low < high,
    high where x > high or high < low."""
    zero = 0
    gx = apply("where", apply("ge", x, low), apply("where", apply("le", x, high), g, zero), zero)
    glow = apply("where", apply("lt", x, low), apply("where", apply("lt", low, high), g, zero), zero)
    ghigh = apply("where", apply("gt", x, high), g, apply("where", apply("lt", high, low), g, zero))
    return unbroadcast(gx, x.shape), unbroadcast(glow, low.shape), unbroadcast(ghigh, high.shape)


register(
    Op(
        "clamp_between",
        lambda x, low, high: broadcast_shapes(broadcast_shapes(x, low), high),
        lambda x, low, high: elementwise(_clamp_between, x, low, high),
        lambda torch, x, low, high: torch.clamp(x, low, high),
        "torch.clamp({0}, {1}, {2})",
        r"\operatorname{{clamp}}\left({0}, {1}, {2}\right)",
        "ClampBackward0",
        tags=frozenset({"broadcasting"}),
        vjp=_clamp_between_vjp,
        float64=lambda x, low, high: np.minimum(np.maximum(x, low), high),
        batch="broadcast",
    )
)

# ── rounding (torch's gradient is 0) and division with a rounding mode ─────
for _name, _fn, _tex in (
    ("floor", functions.floor, r"\left\lfloor {0} \right\rfloor"),
    ("ceil", functions.ceil, r"\left\lceil {0} \right\rceil"),
    ("trunc", functions.trunc, r"\operatorname{{trunc}}\left({0}\right)"),
    ("round", functions.round_half_even, r"\operatorname{{round}}\left({0}\right)"),
):
    unary(
        _name,
        _fn,
        _tex,
        vjp=lambda g, out, a: (zero_gradient(a),),
        float64=getattr(np, _name if _name != "round" else "rint"),
    )


def _rounded_division_vjp(g: Tensor, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """torch's gradient of a division with a rounding mode: zeros for both sides (a nan or infinite g
    does not reach them)."""
    return zero_gradient(a), zero_gradient(b)


binary(
    "div_trunc",
    lambda a, b: functions.trunc(_divide(a, b)),
    lambda torch, a, b: torch.div(a, b, rounding_mode="trunc"),
    'torch.div({0}, {1}, rounding_mode="trunc")',
    r"\operatorname{{trunc}}\left(\frac{{{0}}}{{{1}}}\right)",
    "DivBackward2",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: _rounded_division_vjp(g, a, b),
    float64=lambda a, b: np.trunc(np.true_divide(a, b)),
)
binary(
    "div_floor",
    functions.div_floor,
    lambda torch, a, b: torch.div(a, b, rounding_mode="floor"),
    'torch.div({0}, {1}, rounding_mode="floor")',
    r"\left\lfloor\frac{{{0}}}{{{1}}}\right\rfloor",
    "DivBackward2",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: _rounded_division_vjp(g, a, b),
    float64=np.floor_divide,
)


def _floor_divide_vjp(g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> tuple:
    """torch defines no derivative of floor_divide (``//``): a gradient through it is refused, as torch refuses it
    at backward time (``torch.div(a, b, rounding_mode="floor")`` has one: zeros)."""
    refused = NoDerivative(
        "derivative for aten::floor_divide is not implemented (torch raises this at backward): detach the "
        "operands of //, or use torch.div(a, b, rounding_mode='floor'), whose gradient is 0"
    )
    return refused, refused


binary(
    "floor_divide",
    float_functions.floor_divide,
    lambda torch, a, b: torch.floor_divide(a, b),
    "torch.floor_divide({0}, {1})",
    r"\left\lfloor\frac{{{0}}}{{{1}}}\right\rfloor",
    "FloorDivideBackward0",
    saves=True,
    precedence=9,
    vjp=_floor_divide_vjp,
    float64=np.floor_divide,
)

# ── more binary functions, with torch's numerics and gradients ─────────────
binary(
    "hypot",
    functions.hypot,
    lambda torch, a, b: torch.hypot(a, b),
    "torch.hypot({0}, {1})",
    r"\sqrt{{{0}^2 + {1}^2}}",
    "HypotBackward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: (unbroadcast(g * a / out, a.shape), unbroadcast(g * b / out, b.shape)),
    float_result=True,
    float64=np.hypot,
)


def _logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's logaddexp: max + log1p(exp(-|a − b|)), and a itself where both are the same infinity."""
    out = np.maximum(a, b) + np.log1p(np.exp(-np.abs(a - b)))
    return np.where(np.isinf(a) & (a == b), a, out)


binary(
    "logaddexp",
    functions.logaddexp,
    lambda torch, a, b: torch.logaddexp(a, b),
    "torch.logaddexp({0}, {1})",
    r"\log\left(e^{{{0}}} + e^{{{1}}}\right)",
    "LogaddexpBackward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: (
        unbroadcast(g / (1 + apply("exp", b - a)), a.shape),
        unbroadcast(g / (1 + apply("exp", a - b)), b.shape),
    ),
    float_result=True,
    float64=_logaddexp,
)


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """torch's xlogy: nan where y is nan, else 0 where x is 0, else x · log(y)."""
    return np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log(y)))


def _xlogy_grad(g, x, y):
    """torch's: xlogy(g, y), and 0 where x is 0 and y ≤ 0 (the derivative along x = 0 there)."""
    grad = apply("xlogy", g, y)
    return apply("where", apply("eq", x, 0), apply("where", apply("le", y, 0), 0, grad), grad)


def _xlogy_jvp(tangents, out, x, y):
    """torch's: xlogy(x != 0, y) · ẋ + ẏ · x / y. (Transposing the VJP would leave its select on g == 0, the
    derivative along x = 0, in the result.)"""
    tx, ty = tangents
    terms = []
    if tx is not None:
        terms.append(tx * apply("xlogy", apply("where", apply("eq", x, 0), 0, 1.0), y))
    if ty is not None:
        terms.append(ty * x / y)
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


binary(
    "xlogy",
    functions.xlogy,
    lambda torch, a, b: torch.xlogy(a, b),
    "torch.xlogy({0}, {1})",
    r"{0} \log {1}",
    "XlogyBackward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, x, y: (unbroadcast(_xlogy_grad(g, x, y), x.shape), unbroadcast(g * x / y, y.shape)),
    jvp=_xlogy_jvp,
    float_result=True,
    float64=_xlogy,
)
register(
    Op(
        "isnan",
        same_shape,
        lambda a: elementwise(functions.isnan, a),
        lambda torch, a: torch.isnan(a),
        "torch.isnan({0})",
        r"\operatorname{{isnan}}\left({0}\right)",
        "none",
        saves=False,
        scalar=functions.isnan,
        differentiable=False,
        vjp=lambda g, out, a: (None,),
        tags=frozenset({"comparison"}),
        float64=np.isnan,
        batch="pointwise",
    )
)
