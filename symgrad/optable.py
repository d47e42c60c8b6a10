"""The table of operations: one row per op.

A row says everything symgrad knows about an op: its shape rule, its meaning
entry by entry in SymPy, how torch computes it (for the cross-check), how it is
spelled in torch code and in LaTeX, and what torch calls its backward node.
Adding an op means adding a row here (and a test); nothing else changes.

Templates use ``{0}``, ``{1}`` for the inputs and ``{name}`` for attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from . import functions
from .arrays import elementwise, matmul, object_array, reduce_sum
from .calculus import count, elementwise_derivative, expand_back, unbroadcast
from .dims import (
    Shape,
    broadcast_shapes,
    format_shape,
    matmul_shape,
    normalize_dim,
    numel,
    reshape_target,
)
from .errors import ShapeError, UnsupportedError
from .indexing import apply_index, format_index, index_grad_fn, index_shape


@dataclass(frozen=True)
class Op:
    """One operation. ``scalar`` is the SymPy function of one entry, for elementwise ops."""

    name: str
    shape: Callable[..., Shape]
    meaning: Callable[..., np.ndarray]
    torch: Callable[..., Any]
    code: str
    latex: str
    grad_fn: str | Callable[..., str]
    saves: bool = True  # torch's node keeps tensors, so a second backward needs retain_graph
    scalar: Callable[..., sympy.Expr] | None = None
    precedence: int = 9  # Python's binding strength of the torch spelling, for parentheses
    vjp: Callable[..., tuple] | None = None  # (g, out, *inputs, **attrs) -> one gradient (or None) per input
    differentiable: bool = True  # False for comparisons, masks and one-hot encodings

    def grad_fn_name(self, inputs: tuple, attrs: dict) -> str:
        return self.grad_fn if isinstance(self.grad_fn, str) else self.grad_fn(inputs, **attrs)


OPS: dict[str, Op] = {}


def row(op: Op) -> Op:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


def _same(shape: Shape, **_: Any) -> Shape:
    return shape


def _api():
    import importlib

    return importlib.import_module("symgrad.tensor")


def _apply(name: str, *args: Any, **attrs: Any):
    return _api().apply(name, *args, **attrs)


def unary(
    name: str,
    scalar: Callable,
    latex: str,
    *,
    grad_fn: str | None = None,
    torch_fn: Callable | None = None,
    code: str | None = None,
    vjp: Callable | None = None,
) -> Op:
    """A row for an elementwise function of one tensor; its VJP is ``g * f'(x)`` with f' from SymPy."""
    return row(
        Op(
            name=name,
            shape=_same,
            meaning=lambda a, **params: elementwise(lambda t: scalar(t, **params), a),
            torch=torch_fn or (lambda torch, a: getattr(torch, name)(a)),
            code=code or f"torch.{name}({{0}})",
            latex=latex,
            grad_fn=grad_fn or f"{name.capitalize()}Backward0",
            scalar=scalar,
            vjp=vjp or (lambda g, out, a, **params: (g * elementwise_derivative(scalar, a, out, **params),)),
        )
    )


def binary(
    name: str,
    scalar: Callable,
    torch_fn: Callable,
    code: str,
    latex: str,
    grad_fn,
    *,
    saves: bool,
    precedence: int,
    vjp: Callable | None = None,
    differentiable: bool = True,
) -> Op:
    """A row for a broadcasting elementwise function of two tensors."""
    return row(
        Op(
            name=name,
            shape=lambda a, b: broadcast_shapes(a, b),
            meaning=lambda a, b: elementwise(scalar, a, b),
            torch=torch_fn,
            code=code,
            latex=latex,
            grad_fn=grad_fn,
            saves=saves,
            scalar=scalar,
            precedence=precedence,
            vjp=vjp,
            differentiable=differentiable,
        )
    )


def _scalar_kinds(inputs: tuple) -> tuple[bool, bool]:
    return tuple(getattr(t, "is_python_scalar", False) for t in inputs)  # type: ignore[return-value]


def _log(a):
    return _apply("log", a)


def _divide(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    """a / b with torch's IEEE results for a zero divisor (inf, -inf, nan) instead of an exception."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    if b.is_Number and b.is_zero:
        if a.is_Number:
            return sympy.nan if a.is_zero else (sympy.oo if a > 0 else -sympy.oo)
        return a * sympy.zoo
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
)
binary(
    "sub",
    lambda a, b: a - b,
    lambda torch, a, b: a - b,
    "{0} - {1}",
    "{0} - {1}",
    lambda inputs: "RsubBackward1" if _scalar_kinds(inputs)[0] else "SubBackward0",
    saves=False,
    precedence=4,
    vjp=lambda g, out, a, b: (unbroadcast(g, a.shape), unbroadcast(-g, b.shape)),
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
    vjp=lambda g, out, a, b: (unbroadcast(g / b, a.shape), unbroadcast(-g * out / b, b.shape)),
)
binary(
    "pow",
    lambda a, b: a**b,
    lambda torch, a, b: a**b,
    "{0} ** {1}",
    "{0}^{{{1}}}",
    lambda inputs: {(False, True): "PowBackward0", (True, False): "PowBackward2"}.get(
        _scalar_kinds(inputs), "PowBackward1"
    ),
    saves=True,
    precedence=7,
    vjp=lambda g, out, a, b: (unbroadcast(g * b * a ** (b - 1), a.shape), unbroadcast(g * out * _log(a), b.shape)),
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
    sympy.Max,
    lambda torch, a, b: torch.maximum(a, b),
    "torch.maximum({0}, {1})",
    r"\max\left({0}, {1}\right)",
    "MaximumBackward0",
    saves=True,
    precedence=9,
    vjp=lambda g, out, a, b: (
        unbroadcast(g * _apply("step", a - b, at_zero=sympy.S.Half), a.shape),
        unbroadcast(g * _apply("step", b - a, at_zero=sympy.S.Half), b.shape),
    ),
)
row(
    Op(
        "neg",
        _same,
        lambda a: elementwise(lambda x: -x, a),
        lambda torch, a: -a,
        "-{0}",
        "-{0}",
        "NegBackward0",
        saves=False,
        scalar=lambda x: -x,
        precedence=6,
        vjp=lambda g, out, a: (-g,),
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
        (lambda op: lambda torch, a, b: op(a, b))(getattr(__import__("operator"), _name)),
        f"{{0}} {_symbol} {{1}}",
        f"{{0}} {_tex} {{1}}",
        "none",
        saves=False,
        precedence=3,
        vjp=lambda g, out, a, b: (None, None),
        differentiable=False,
    )


def _where(c: Any, a: Any, b: Any) -> sympy.Expr:
    if c in (sympy.true, True):
        return a
    if c in (sympy.false, False):
        return b
    return sympy.Piecewise((a, c), (b, True))


row(
    Op(
        "where",
        lambda c, a, b: broadcast_shapes(broadcast_shapes(c, a), b),
        lambda c, a, b: elementwise(_where, c, a, b),
        lambda torch, c, a, b: torch.where(c.bool(), a, b),
        "torch.where({0}, {1}, {2})",
        r"\begin{{cases}} {1} & {0} \\ {2} & \text{{otherwise}} \end{{cases}}",
        "WhereBackward0",
        vjp=lambda g, out, c, a, b: (
            None,
            unbroadcast(_apply("where", c, g, 0), a.shape),
            unbroadcast(_apply("where", c, 0, g), b.shape),
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
unary("exp", sympy.exp, r"\exp\left({0}\right)")
unary("log", sympy.log, r"\log\left({0}\right)")
unary("sin", sympy.sin, r"\sin\left({0}\right)")
unary("cos", sympy.cos, r"\cos\left({0}\right)")
unary("tanh", sympy.tanh, r"\tanh\left({0}\right)")
unary("sigmoid", functions.sigmoid, r"\sigma\left({0}\right)")
unary("relu", functions.relu, r"\operatorname{{relu}}\left({0}\right)")
unary("abs", sympy.Abs, r"\left|{0}\right|")
unary("sqrt", sympy.sqrt, r"\sqrt{{{0}}}")
unary("erf", sympy.erf, r"\operatorname{{erf}}\left({0}\right)")
unary("log1p", lambda t: sympy.log(1 + t), r"\log\left(1 + {0}\right)")
unary("reciprocal", lambda t: 1 / t, r"\frac{{1}}{{{0}}}")
unary("rsqrt", lambda t: 1 / sympy.sqrt(t), r"\frac{{1}}{{\sqrt{{{0}}}}}")
unary(
    "softplus",
    functions.softplus,
    r"\operatorname{{softplus}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.softplus(a),
    code="torch.nn.functional.softplus({0})",
)
unary(
    "gelu",
    lambda t: t / 2 * (1 + sympy.erf(t / sympy.sqrt(2))),
    r"\operatorname{{GELU}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.gelu(a),
    code="torch.nn.functional.gelu({0})",
)
unary(
    "silu",
    lambda t: t * functions.sigmoid(t),
    r"\operatorname{{SiLU}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.silu(a),
    code="torch.nn.functional.silu({0})",
)
unary(
    "logsigmoid",
    lambda t: -functions.softplus(-t),
    r"\log\sigma\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.logsigmoid(a),
    code="torch.nn.functional.logsigmoid({0})",
    grad_fn="LogSigmoidBackward0",
)
unary(
    "clamp",
    lambda t, min, max: _clamp(t, min, max),
    r"\operatorname{{clamp}}\left({0}\right)",
    torch_fn=lambda torch, a, min, max: torch.clamp(a, min=min, max=max),
    code="torch.clamp({0}, min={min}, max={max})",
    grad_fn="ClampBackward1",
)
unary(
    "leaky_relu",
    lambda t, negative_slope: sympy.Piecewise((t, t > 0), (negative_slope * t, True)),
    r"\operatorname{{leaky\_relu}}\left({0}\right)",
    torch_fn=lambda torch, a, negative_slope: torch.nn.functional.leaky_relu(a, negative_slope),
    code="torch.nn.functional.leaky_relu({0}, {negative_slope})",
    grad_fn="LeakyReluBackward0",
)
unary(
    "threshold",
    lambda t, threshold, value: sympy.Piecewise((t, t > threshold), (value, True)),
    r"\operatorname{{threshold}}\left({0}\right)",
    torch_fn=lambda torch, a, threshold, value: torch.nn.functional.threshold(a, threshold, value),
    code="torch.nn.functional.threshold({0}, {threshold}, {value})",
    grad_fn="ThresholdBackward0",
)


def _clamp(t: sympy.Expr, low: Any, high: Any) -> sympy.Expr:
    """clamp as a Piecewise whose derivative is 1 on the closed interval: torch passes the gradient at a bound."""
    pieces = []
    if low is not None:
        pieces.append((sympy.sympify(low), t < low))
    if high is not None:
        pieces.append((sympy.sympify(high), t > high))
    return sympy.Piecewise(*pieces, (t, True)) if pieces else t


row(
    Op(
        name="map",  # any SymPy-expressible scalar function, given as a Lambda
        shape=_same,
        meaning=lambda a, fn, label: elementwise(fn, a),
        torch=lambda torch, a, fn, label: _evaluate_lambda(torch, fn, a),
        code="{label}({0})",
        latex=r"\operatorname{{{label}}}\left({0}\right)",
        grad_fn=lambda inputs, fn, label: f"{label}Backward",
        vjp=lambda g, out, a, fn, label: (g * elementwise_derivative(fn, a, out),),
    )
)


def _evaluate_lambda(torch: Any, fn: sympy.Lambda, a: Any) -> Any:
    from .sympy_torch import evaluate

    (variable,) = fn.variables
    return evaluate(fn.expr, {variable: a}, torch) + 0 * a  # keeps shape for constant functions


# ── products ───────────────────────────────────────────────────────────────
def _matmul_vjp(g, out, a, b) -> tuple:
    """G Bᵀ and Aᵀ G, with 1-D operands promoted and batch broadcasting undone."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if b.ndim == 1:  # restore the trailing dim first: g is 0-d for a 1-D @ 1-D product
        g2 = g2.unsqueeze(-1)
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    ga = unbroadcast(g2 @ b2.mT, a2.shape)
    gb = unbroadcast(a2.mT @ g2, b2.shape)
    if a.ndim == 1:
        ga = ga[0]
    if b.ndim == 1:
        gb = gb[..., 0]
    return ga, gb


row(
    Op(
        "mm",
        lambda a, b: matmul_shape(a, b, strict_2d=True),
        matmul,
        lambda torch, a, b: torch.mm(a, b),
        "{0} @ {1}",
        "{0} {1}",
        "MmBackward0",
        precedence=5,
        vjp=_matmul_vjp,
    )
)
row(
    Op(
        "matmul",
        lambda a, b: matmul_shape(a, b),
        matmul,
        lambda torch, a, b: torch.matmul(a, b),
        "{0} @ {1}",
        "{0} {1}",
        lambda inputs: "MmBackward0" if all(len(t.shape) == 2 for t in inputs) else "MatmulBackward",
        precedence=5,
        vjp=_matmul_vjp,
    )
)


def _einsum_parts(equation: str) -> tuple[str, str, str]:
    inputs, _, output = equation.replace(" ", "").partition("->")
    left, _, right = inputs.partition(",")
    return left, right, output


def _einsum_sizes(a: Shape, b: Shape, equation: str) -> dict[str, Any]:
    """The size of each subscript, with torch's rules and messages (a size-1 dim broadcasts, as in torch)."""
    left, right, _ = _einsum_parts(equation)
    sizes: dict[str, Any] = {}
    for position, (letters, shape) in enumerate(((left, a), (right, b))):
        if len(letters) != len(shape):
            raise ShapeError(
                f"einsum(): the number of subscripts in the equation ({len(letters)}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {position} and no ellipsis was given"
            )
        own: dict[str, Any] = {}
        for letter, d in zip(letters, shape, strict=True):
            if letter in own and own[letter] != d:
                raise ShapeError(
                    f"einsum(): subscript {letter} is repeated for operand {position} but the sizes don't match, "
                    f"{d} != {own[letter]}"
                )
            own[letter] = d
            seen = sizes.get(letter)
            if seen is None or seen == 1:
                sizes[letter] = d
            elif d != 1 and d != seen:
                raise ShapeError(
                    f"einsum(): subscript {letter} has size {d} for operand {position} which does not broadcast with "
                    f"previously seen size {seen} (shapes {format_shape(a)} and {format_shape(b)})"
                )
    return sizes


def _einsum_shape(a: Shape, b: Shape, equation: str) -> Shape:
    sizes = _einsum_sizes(a, b, equation)
    return tuple(sizes[letter] for letter in _einsum_parts(equation)[2])


def _einsum(a: np.ndarray, b: np.ndarray, equation: str) -> np.ndarray:
    """np.einsum after broadcasting size-1 dims to their subscript's size (torch broadcasts them)."""
    left, right, _ = _einsum_parts(equation)
    sizes = _einsum_sizes(a.shape, b.shape, equation)
    a = np.broadcast_to(a, tuple(sizes[c] for c in left))
    b = np.broadcast_to(b, tuple(sizes[c] for c in right))
    return np.array(np.einsum(equation, a, b), dtype=object)


def _einsum_vjp(g, out, a, b, equation: str) -> tuple:
    left, right, output = _einsum_parts(equation)
    sizes = _einsum_sizes(a.shape, b.shape, equation)
    return (
        _einsum_operand_grad(g, b, output, right, left, sizes, a.shape),
        _einsum_operand_grad(g, a, output, left, right, sizes, b.shape),
    )


def _einsum_operand_grad(g, other, output: str, theirs: str, mine: str, sizes: dict, shape: Shape):
    """The gradient for the operand with subscripts ``mine``: g contracted with the other operand.

    A subscript summed in this operand only gets the gradient broadcast along it; a broadcast (size-1)
    dim of this operand gets it summed over that dim.
    """
    if len(set(mine)) != len(mine):
        raise UnsupportedError(f"no einsum gradient rule for a repeated subscript (diagonal) in {mine}")
    reached = "".join(c for c in mine if c in output or c in theirs)
    grad = _apply("einsum", g, other, equation=f"{output},{theirs}->{reached}")
    for axis, letter in enumerate(mine):
        if letter not in reached:
            grad = grad.unsqueeze(axis)
    full = tuple(sizes[c] for c in mine)
    if tuple(grad.shape) != full:
        grad = grad.expand(*full)
    return unbroadcast(grad, shape)


row(
    Op(
        "einsum",
        _einsum_shape,
        _einsum,
        lambda torch, a, b, equation: torch.einsum(equation, a, b),
        'torch.einsum("{equation}", {0}, {1})',
        r"\operatorname{{einsum}}_{{\mathtt{{{equation}}}}}\left({0}, {1}\right)",
        "EinsumBackward",
        vjp=_einsum_vjp,
    )
)


# ── reductions ─────────────────────────────────────────────────────────────
def _reduced_shape(shape: Shape, dim: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if axis in dim else d for axis, d in enumerate(shape))
    return tuple(d for axis, d in enumerate(shape) if axis not in dim)


def _mean(a: np.ndarray, dim: tuple[int, ...], keepdim: bool) -> np.ndarray:
    total = int(np.prod([a.shape[axis] for axis in dim if axis < a.ndim], dtype=int))  # a 0-d tensor has dim 0
    return elementwise(lambda s: s / total, reduce_sum(a, dim, keepdim))


def _reduce(a: np.ndarray, dim: tuple[int, ...], keepdim: bool, combine: Callable) -> np.ndarray:
    """Apply ``combine(list_of_entries)`` over ``dim``."""
    axes = tuple(d for d in dim if d < a.ndim)
    keep = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, keep + list(axes))
    out_shape = tuple(a.shape[d] for d in keep)
    rows = moved.reshape(int(np.prod(out_shape, dtype=int)), -1)
    out = object_array([combine(list(r)) for r in rows], out_shape)
    if keepdim:
        out = out.reshape(tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
    return out


def _slices(a: np.ndarray, dim: int, fn: Callable) -> np.ndarray:
    """Apply ``fn(list) -> list`` along one dim."""
    moved = np.moveaxis(a, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    out = object_array([v for r in rows for v in fn(list(r))], moved.shape)
    return np.moveaxis(out, -1, dim)


def _reduction_grad_fn(base: str) -> Callable:
    return lambda inputs, dim, keepdim: (
        f"{base}Backward1" if len(dim) < len(inputs[0].shape) or keepdim else f"{base}Backward0"
    )


row(
    Op(
        "sum",
        _reduced_shape,
        lambda a, dim, keepdim: reduce_sum(a, dim, keepdim),
        lambda torch, a, dim, keepdim: torch.sum(a, dim=list(dim), keepdim=keepdim),
        "{0}.sum({reduce_args})",
        "{sum_before}{0}{sum_after}",
        _reduction_grad_fn("Sum"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim),),
    )
)
row(
    Op(
        "mean",
        _reduced_shape,
        _mean,
        lambda torch, a, dim, keepdim: torch.mean(a, dim=list(dim), keepdim=keepdim),
        "{0}.mean({reduce_args})",
        r"\operatorname{{mean}}_{{{dims_text}}} {0}",
        _reduction_grad_fn("Mean"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim) / count(a.shape, dim),),
    )
)
row(
    Op(
        "amax",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: functions.amax(*r)),
        lambda torch, a, dim, keepdim: torch.amax(a, dim=list(dim), keepdim=keepdim),
        "{0}.amax({reduce_args})",
        r"\max_{{{dims_text}}} {0}",
        "AmaxBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_tie_share(g, out, a, dim, keepdim),),
    )
)


def _tie_share(g, out, a, dim, keepdim):
    """Gradient of amax: split evenly among the entries equal to the maximum."""
    ties = _apply("where", _apply("eq", a, expand_back(out, a.shape, dim, keepdim)), 1, 0)
    return expand_back(g, a.shape, dim, keepdim) * ties / ties.sum(dim=dim, keepdim=True)


def _first_max(values: list) -> list:
    return [functions.first_max(values)]


row(
    Op(
        "max_dim",
        lambda a, dim, keepdim: _reduced_shape(a, (dim,), keepdim),
        lambda a, dim, keepdim: _reduce(a, (dim,), keepdim, functions.first_max),
        lambda torch, a, dim, keepdim: torch.max(a, dim=dim, keepdim=keepdim).values,
        "{0}.max(dim={dim}, keepdim={keepdim}).values",
        r"\max_{{{dim}}} {0}",
        "MaxBackward0",
        vjp=lambda g, out, a, dim, keepdim: (
            expand_back(g, a.shape, (dim,), keepdim) * _apply("first_max_mask", a, dim=dim),
        ),
    )
)
row(
    Op(
        "first_max_mask",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, lambda r: [functions.first_max_indicator(r, i) for i in range(len(r))]),
        lambda torch, a, dim: torch.nn.functional.one_hot(a.argmax(dim), a.shape[dim]).movedim(-1, dim).to(a.dtype),
        "torch.nn.functional.one_hot({0}.argmax({dim}), {0}.shape[{dim}]).movedim(-1, {dim})",
        r"\mathbb{{1}}\left[\operatorname{{argmax}}_{{{dim}}} {0}\right]",
        "none",
        differentiable=False,
        vjp=lambda g, out, a, dim: (None,),
    )
)
row(
    Op(
        "norm",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: functions.norm2(*r)),
        lambda torch, a, dim, keepdim: torch.linalg.vector_norm(a, 2, dim=list(dim), keepdim=keepdim),
        "torch.linalg.vector_norm({0}{reduce_kwargs})",
        r"\left\|{0}\right\|_{{{dims_text}}}",
        "NormBackward1",
        vjp=lambda g, out, a, dim, keepdim: (_norm_vjp(g, out, a, dim, keepdim),),
    )
)


def _norm_vjp(g, out, a, dim, keepdim):
    """x / ‖x‖, and 0 where the norm is 0 (torch's convention)."""
    n = expand_back(out, a.shape, dim, keepdim)
    return expand_back(g, a.shape, dim, keepdim) * _apply("where", _apply("eq", n, 0), 0, a / n)


def _softmax(values: list) -> list:
    exps = [sympy.exp(v) for v in values]
    total = sympy.Add(*exps)
    return [e / total for e in exps]


def _log_softmax(values: list) -> list:
    lse = sympy.log(sympy.Add(*[sympy.exp(v) for v in values]))
    return [v - lse for v in values]


row(
    Op(
        "softmax",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _softmax),
        lambda torch, a, dim: torch.softmax(a, dim=dim),
        "torch.softmax({0}, dim={dim})",
        r"\operatorname{{softmax}}\left({0}\right)",
        "SoftmaxBackward0",
        vjp=lambda g, out, a, dim: (out * (g - (g * out).sum(dim=dim, keepdim=True)),),
    )
)
row(
    Op(
        "log_softmax",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _log_softmax),
        lambda torch, a, dim: torch.log_softmax(a, dim=dim),
        "torch.log_softmax({0}, dim={dim})",
        r"\log\operatorname{{softmax}}\left({0}\right)",
        "LogSoftmaxBackward0",
        vjp=lambda g, out, a, dim: (g - _apply("softmax", a, dim=dim) * g.sum(dim=dim, keepdim=True),),
    )
)
row(
    Op(
        "logsumexp",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: sympy.log(sympy.Add(*[sympy.exp(v) for v in r]))),
        lambda torch, a, dim, keepdim: torch.logsumexp(a, dim=list(dim), keepdim=keepdim),
        "torch.logsumexp({0}{reduce_kwargs})",
        r"\operatorname{{logsumexp}}_{{{dims_text}}} {0}",
        "LogsumexpBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_logsumexp_vjp(g, out, a, dim, keepdim),),
    )
)


def _logsumexp_vjp(g, out, a, dim: tuple, keepdim: bool):
    """g times the softmax over ``dim`` (written as a softmax when ``dim`` is one dimension)."""
    weights = (
        _apply("softmax", a, dim=dim[0])
        if len(dim) == 1
        else _apply("exp", a - expand_back(out, a.shape, dim, keepdim))
    )
    return expand_back(g, a.shape, dim, keepdim) * weights


def _variance(values: list, correction: int) -> sympy.Expr:
    mean = sympy.Add(*values) / len(values)
    return sympy.Add(*[(v - mean) ** 2 for v in values]) / (len(values) - correction)


row(
    Op(
        "var",
        lambda a, dim, keepdim, correction: _reduced_shape(a, dim, keepdim),
        lambda a, dim, keepdim, correction: _reduce(a, dim, keepdim, lambda r: _variance(r, correction)),
        lambda torch, a, dim, keepdim, correction: torch.var(a, dim=list(dim), correction=correction, keepdim=keepdim),
        "torch.var({0}{reduce_kwargs}, correction={correction})",
        r"\operatorname{{Var}}_{{{dims_text}}} {0}",
        "VarBackward0",
        vjp=lambda g, out, a, dim, keepdim, correction: (
            expand_back(g, a.shape, dim, keepdim)
            * 2
            * (a - a.mean(dim=dim, keepdim=True))
            / (count(a.shape, dim) - correction),
        ),
    )
)


def _cumsum(values: list) -> list:
    return [sympy.Add(*values[: i + 1]) for i in range(len(values))]


row(
    Op(
        "cumsum",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _cumsum),
        lambda torch, a, dim: torch.cumsum(a, dim=dim),
        "torch.cumsum({0}, dim={dim})",
        r"\operatorname{{cumsum}}_{{{dim}}} {0}",
        "CumsumBackward0",
        saves=False,
        vjp=lambda g, out, a, dim: (_apply("cumsum", g.flip(dim), dim=dim).flip(dim),),
    )
)


# ── losses with a closed-form gradient ─────────────────────────────────────
def _class_indices(y: np.ndarray) -> list[int]:
    flat = [sympy.sympify(v) for v in y.reshape(-1)]
    if not all(v.is_Integer for v in flat):
        raise ShapeError("class targets need integer values (give the target tensor values)")
    return [int(v) for v in flat]


def _cross_entropy(z: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    losses = [sympy.log(sympy.Add(*[sympy.exp(v) for v in row])) - row[c] for row, c in zip(z, _class_indices(y))]
    total = sympy.Add(*losses)
    return np.array(total / len(losses) if reduction == "mean" else total, dtype=object)


def _one_hot(y: np.ndarray, num_classes: int) -> np.ndarray:
    out = np.full(y.shape + (num_classes,), sympy.S.Zero, dtype=object)
    for index, c in zip(np.ndindex(y.shape), _class_indices(y)):
        out[index + (c,)] = sympy.S.One
    return out


row(
    Op(
        "cross_entropy",
        lambda z, y, reduction: (),
        _cross_entropy,
        lambda torch, z, y, reduction: torch.nn.functional.cross_entropy(z, y.long(), reduction=reduction),
        'torch.nn.functional.cross_entropy({0}, {1}, reduction="{reduction}")',
        r"\operatorname{{CE}}\left({0}, {1}\right)",
        "NllLossBackward0",
        vjp=lambda g, out, z, y, reduction: (
            (_apply("softmax", z, dim=1) - _apply("one_hot", y, num_classes=z.shape[1]))
            * (g / z.shape[0] if reduction == "mean" else g),
            None,
        ),
    )
)
row(
    Op(
        "one_hot",
        lambda y, num_classes: tuple(y) + (num_classes,),
        _one_hot,
        lambda torch, y, num_classes: torch.nn.functional.one_hot(y.long(), int(num_classes)).to(torch.float64),
        "torch.nn.functional.one_hot({0}, {num_classes})",
        r"\operatorname{{onehot}}\left({0}\right)",
        "none",
        differentiable=False,
        vjp=lambda g, out, y, num_classes: (None,),
    )
)


# ── linear algebra (square matrices) ───────────────────────────────────────
def _square(a: Shape, what: str) -> Shape:
    """One square matrix, with torch's messages (``what`` is torch's name of the op, e.g. ``linalg.det``)."""
    if len(a) < 2:
        raise ShapeError(f"{what}: The input tensor A must have at least 2 dimensions.")
    if a[-2] != a[-1] and isinstance(a[-2], int) and isinstance(a[-1], int):
        raise ShapeError(f"{what}: A must be batches of square matrices, but they are {a[-2]} by {a[-1]} matrices")
    if len(a) > 2:
        raise UnsupportedError(f"{what} of a batch of matrices (shape {format_shape(a)}) is not supported yet")
    return a


def _as_matrix(a: np.ndarray) -> sympy.Matrix:
    return sympy.Matrix(a.tolist())


def _trace_shape(a: Shape) -> Shape:
    """torch.trace takes any 2-D tensor (the diagonal of a non-square one is min(n, m) long)."""
    if len(a) != 2:
        raise ShapeError(f"trace: expected a matrix, but got tensor with dim {len(a)}")
    return ()


def _trace_vjp(g, out, a):
    """g times the n×m matrix with ones on its diagonal."""
    n, m = a.shape
    if n == m:
        return (g * _apply("eye", n=n),)
    if not (isinstance(n, int) and isinstance(m, int)):
        raise UnsupportedError(f"the trace law of a non-square {format_shape(a.shape)} matrix needs concrete sizes")
    diagonal = _apply("index", _apply("eye", n=max(n, m)), index=(slice(0, n), slice(0, m)), via="index")
    return (g * diagonal,)


row(
    Op(
        "trace",
        _trace_shape,
        lambda a: np.array(sympy.Add(*np.diagonal(a)), dtype=object),
        lambda torch, a: torch.trace(a),
        "torch.trace({0})",
        r"\operatorname{{tr}}\left({0}\right)",
        "TraceBackward0",
        saves=False,
        vjp=_trace_vjp,
    )
)
row(
    Op(
        "eye",
        lambda n: (n, n),
        lambda n: np.array(sympy.eye(n).tolist(), dtype=object),
        lambda torch, n: torch.eye(n, dtype=torch.float64),
        "torch.eye({n})",
        "I",
        "none",
        differentiable=False,
        vjp=lambda g, out, n: (),
    )
)
row(
    Op(
        "det",
        lambda a: (_square(a, "linalg.det"), ())[1],
        lambda a: np.array(_as_matrix(a).det(), dtype=object),
        lambda torch, a: torch.linalg.det(a),
        "torch.linalg.det({0})",
        r"\det\left({0}\right)",
        "LinalgDetBackward0",
        vjp=lambda g, out, a: (g * out * _apply("inv", a).mT,),
    )
)
row(
    Op(
        "logdet",
        lambda a: (_square(a, "logdet"), ())[1],
        lambda a: np.array(sympy.log(_as_matrix(a).det()), dtype=object),
        lambda torch, a: torch.logdet(a),
        "torch.logdet({0})",
        r"\log\det\left({0}\right)",
        "LogdetBackward0",
        vjp=lambda g, out, a: (g * _apply("inv", a).mT,),
    )
)
row(
    Op(
        "logabsdet",
        lambda a: (_square(a, "linalg.slogdet"), ())[1],
        lambda a: np.array(sympy.log(sympy.Abs(_as_matrix(a).det())), dtype=object),
        lambda torch, a: torch.linalg.slogdet(a)[1],
        "torch.linalg.slogdet({0}).logabsdet",
        r"\log\left|\det\left({0}\right)\right|",
        "LinalgSlogdetBackward0",
        vjp=lambda g, out, a: (g * _apply("inv", a).mT,),
    )
)
row(
    Op(
        "inv",
        lambda a: _square(a, "linalg.inv"),
        lambda a: np.array(_as_matrix(a).inv().tolist(), dtype=object),
        lambda torch, a: torch.linalg.inv(a),
        "torch.linalg.inv({0})",
        "{0}^{{-1}}",
        "LinalgInvExBackward0",
        precedence=8,
        vjp=lambda g, out, a: (-(out.mT @ g @ out.mT),),
    )
)


# ── shape and layout ───────────────────────────────────────────────────────
def _transpose_shape(shape: Shape, dim0: int, dim1: int) -> Shape:
    if not shape:  # torch allows transpose(0, 0) and transpose(-1, 0) of a 0-d tensor
        return ()
    out = list(shape)
    out[dim0], out[dim1] = out[dim1], out[dim0]
    return tuple(out)


def _transpose(a: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    return np.swapaxes(a, dim0, dim1) if a.ndim else a


def _permute_shape(shape: Shape, dims: tuple[int, ...]) -> Shape:
    if len(dims) != len(shape):
        raise ShapeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {len(shape)} is not equal to len(dims) = {len(dims)} "
            f"(shape {format_shape(shape)}, dims {dims})"
        )
    if len(set(dims)) != len(dims):
        raise ShapeError(f"permute(): duplicate dims are not allowed. (shape {format_shape(shape)}, dims {dims})")
    return tuple(shape[d] for d in dims)


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(order)
    for position, d in enumerate(order):
        out[d] = position
    return tuple(out)


def _expand_shape(a: Shape, shape: tuple) -> Shape:
    target = tuple(shape)
    if len(target) < len(a):
        raise ShapeError(
            f"expand: the number of sizes provided ({len(target)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({len(a)}) (shape {format_shape(a)})"
        )
    broadcast = broadcast_shapes(a, target)
    if broadcast != target:
        raise ShapeError(
            f"The expanded size of the tensor must match the existing size (shapes {format_shape(a)} and "
            f"{format_shape(target)})"
        )
    return target


def _index_backward(g: np.ndarray, shape: tuple, index: tuple) -> np.ndarray:
    out = np.full(shape, sympy.S.Zero, dtype=object)
    out[index] = g
    return out


def _torch_index_backward(torch: Any, g: Any, shape: tuple, index: tuple) -> Any:
    out = torch.zeros(shape, dtype=g.dtype)
    out[index] = g
    return out


row(
    Op(
        "transpose",
        _transpose_shape,
        _transpose,
        lambda torch, a, dim0, dim1: a.transpose(dim0, dim1),
        "{0}{transpose_text}",
        "{0}^{{\\top}}",
        "TransposeBackward0",
        saves=False,
        vjp=lambda g, out, a, dim0, dim1: (g if dim0 == dim1 else g.transpose(dim0, dim1),),
    )
)  # 0-d: dim0 == dim1
row(
    Op(
        "permute",
        _permute_shape,
        lambda a, dims: np.transpose(a, dims),
        lambda torch, a, dims: a.permute(tuple(dims)),  # a.permute() (no dims) fails for 0-d tensors
        "{0}{permute_text}",
        "{0}^{{\\top}}",
        "PermuteBackward0",
        saves=False,
        vjp=lambda g, out, a, dims: (g.permute(*_inverse(dims)),),
    )
)
row(
    Op(
        "reshape",
        lambda a, shape: reshape_target(a, shape),
        lambda a, shape: a.reshape(shape),
        lambda torch, a, shape: a.reshape(shape),
        "{0}.reshape({shape_args})",
        "{0}",
        "ViewBackward0",
        saves=False,
        vjp=lambda g, out, a, shape: (g.reshape(*a.shape),),
    )
)
row(
    Op(
        "expand",
        _expand_shape,
        lambda a, shape: np.broadcast_to(a, shape).copy(),
        lambda torch, a, shape: a.expand(*shape),
        "{0}.expand({shape_args})",
        "{0}",
        "ExpandBackward0",
        saves=False,
        vjp=lambda g, out, a, shape: (unbroadcast(g, a.shape),),
    )
)
row(
    Op(
        "flip",
        lambda a, dim: a,
        lambda a, dim: np.flip(a, dim).copy(),
        lambda torch, a, dim: a.flip(dim),
        "{0}.flip({dim})",
        r"\operatorname{{flip}}\left({0}\right)",
        "FlipBackward0",
        saves=False,
        vjp=lambda g, out, a, dim: (g.flip(dim),),
    )
)
row(
    Op(
        "index",
        lambda a, index, via: index_shape(a, index),
        lambda a, index, via: apply_index(a, index),
        lambda torch, a, index, via: a[index],
        "{0}[{index_text}]",
        "{0}_{{{index_text}}}",
        lambda inputs, index, via: "UnbindBackward0" if via == "unbind" else index_grad_fn(index),
        saves=False,
        vjp=lambda g, out, a, index, via: (_index_vjp(g, a, index),),
    )
)


def _index_vjp(g, a, index: tuple):
    """An unsqueeze (only ``None``, ``:`` and ``...``) is undone by indexing 0; anything else scatters into zeros."""
    if all(i is None or i is Ellipsis or i == slice(None) for i in index):
        return g[tuple(0 if i is None else i for i in index)]
    return _apply("index_backward", g, shape=a.shape, index=index)


row(
    Op(
        "index_backward",
        lambda g, shape, index: tuple(shape),
        _index_backward,
        _torch_index_backward,
        "index_backward({0}, {shape}, [{index_text}])",
        r"\operatorname{{scatter}}\left({0}\right)",
        "none",
        saves=False,
        vjp=lambda g, out, x, shape, index: (x[index],),
    )
)
row(
    Op(
        "full",
        lambda shape, value: tuple(shape),
        lambda shape, value: np.full(shape, sympy.sympify(value), dtype=object),
        lambda torch, shape, value: torch.full(tuple(shape), float(value), dtype=torch.float64),
        "torch.full({shape}, {value})",
        r"{value}",
        "none",
        differentiable=False,
        vjp=lambda g, out, shape, value: (),
    )
)


def _sum_latex(dim: tuple, keepdim: bool, shape: tuple | None) -> tuple[str, str]:
    """A sum as a paper writes it: row sums of a matrix are ``X 1``, column sums ``1ᵀ X``."""
    if shape is not None and len(shape) == 2 and keepdim and len(dim) == 1:
        return ("", r" \mathbf{1}") if dim[0] in (1, -1) else (r"\mathbf{1}^{\top} ", "")
    if shape is not None and len(dim) == len(shape):
        return r"\textstyle\sum ", ""
    return r"\textstyle\sum_{\mathrm{dim}\," + ",".join(map(str, dim)) + "} ", ""


def describe(op: Op, attrs: dict, inputs: tuple = ()) -> dict:
    """Attributes as they appear in the code and LaTeX templates."""
    out = dict(attrs)
    if "index" in attrs:
        out["index_text"] = format_index(attrs["index"])
    if isinstance(attrs.get("shape"), tuple):
        out["shape_args"] = ", ".join(str(d) for d in attrs["shape"])
    if "keepdim" in attrs and isinstance(attrs.get("dim"), tuple):
        dim, keepdim = attrs["dim"], attrs["keepdim"]
        every = bool(inputs) and len(dim) == len(inputs[0].shape)
        args = [] if every and not keepdim else [f"dim={dim[0] if len(dim) == 1 else dim}"]
        out["reduce_args"] = ", ".join(args + (["keepdim=True"] if keepdim else []))
        out["reduce_kwargs"] = ", " + out["reduce_args"] if out["reduce_args"] else ""
        if op.name == "logsumexp" and not args:  # torch.logsumexp has no default dim
            out["reduce_kwargs"] = f", dim={dim[0] if len(dim) == 1 else dim}" + (", keepdim=True" if keepdim else "")
        out["dims_text"] = "" if every else ",".join(map(str, dim))
        out["sum_before"], out["sum_after"] = _sum_latex(dim, keepdim, inputs[0].shape if inputs else None)
    if op.name == "permute":
        dims = tuple(attrs["dims"])
        out["permute_text"] = (
            ".T" if dims == tuple(reversed(range(len(dims)))) and len(dims) == 2 else f".permute{dims}"
        )
    if op.name == "transpose" and inputs:
        ndim, pair = len(inputs[0].shape), sorted((attrs["dim0"], attrs["dim1"]))
        if ndim == 2 and pair == [0, 1]:
            out["transpose_text"] = ".T"
        elif ndim >= 2 and pair == [ndim - 2, ndim - 1]:
            out["transpose_text"] = ".mT"
        else:
            out["transpose_text"] = f".transpose({attrs['dim0']}, {attrs['dim1']})"
    return out


__all__ = ["OPS", "Op", "describe", "normalize_dim", "numel"]
