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
from ..core.tensor import apply
from . import functions
from .calculus import elementwise_derivative, unbroadcast
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
    vjp=lambda g, out, a, b: (
        unbroadcast(g * b * a ** (b - 1), a.shape),
        unbroadcast(g * out * apply("log", a), b.shape),
    ),
)
binary(
    "atan2",
    sympy.atan2,
    lambda torch, a, b: torch.atan2(a, b),
    "torch.atan2({0}, {1})",
    r"\operatorname{{atan2}}\left({0}, {1}\right)",
    "Atan2Backward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: (
        unbroadcast(g * b / (a**2 + b**2), a.shape),
        unbroadcast(-g * a / (a**2 + b**2), b.shape),
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
        unbroadcast(g * apply("step", a - b, at_zero=sympy.S.Half), a.shape),
        unbroadcast(g * apply("step", b - a, at_zero=sympy.S.Half), b.shape),
    ),
)
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
    )
)

# ── comparisons and masks (no gradient) ────────────────────────────────────
for _name, _relation, _symbol, _tex in (
    ("gt", sympy.StrictGreaterThan, ">", ">"),
    ("ge", sympy.GreaterThan, ">=", r"\geq"),
    ("lt", sympy.StrictLessThan, "<", "<"),
    ("le", sympy.LessThan, "<=", r"\leq"),
    ("eq", sympy.Eq, "==", "="),
):
    binary(
        _name,
        _relation,
        (lambda op: lambda torch, a, b: op(a, b))(getattr(operator, _name)),
        f"{{0}} {_symbol} {{1}}",
        f"{{0}} {_tex} {{1}}",
        "none",
        saves=False,
        precedence=3,
        vjp=lambda g, out, a, b: (None, None),
        differentiable=False,
        tags=("comparison",),
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
unary("sign", functions.sign, r"\operatorname{{sign}}\left({0}\right)", vjp=lambda g, out, a: (None,))

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
unary("reciprocal", lambda t: 1 / t, r"\frac{{1}}{{{0}}}", float_result=True)
unary("rsqrt", lambda t: 1 / sympy.sqrt(t), r"\frac{{1}}{{\sqrt{{{0}}}}}", float_result=True)
unary(
    "clamp",
    lambda t, min, max: _clamp(t, min, max),
    r"\operatorname{{clamp}}\left({0}\right)",
    torch_fn=lambda torch, a, min, max: torch.clamp(a, min=min, max=max),
    code="torch.clamp({0}, min={min}, max={max})",
    grad_fn="ClampBackward1",
)


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
        vjp=lambda g, out, a, fn, label: (g * elementwise_derivative(fn, a, out),),
    )
)


def _evaluate_lambda(torch: Any, fn: sympy.Lambda, a: Any) -> Any:
    (variable,) = fn.variables
    return evaluate(fn.expr, {variable: a}, torch) + 0 * a  # keeps shape for constant functions
