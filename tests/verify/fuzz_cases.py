"""The differential fuzzer's parts (used by ``test_fuzz.py``): op specs, value draws, cases as code, comparison.

A case is Python source: ``def build(T, x0, x1): ...`` whose body spells torch code with a
namespace argument ``T``, run once with ``T = symgrad.torch`` and once with ``T = torch``.
Specs write that source; the harness executes exactly that source, so the repro printed on a
failure (:meth:`Case.code`, :meth:`Program.code`) is the test itself.

Only the public API is used: ``symgrad``, ``symgrad.torch``, ``sg.core.OPS`` (read), ``sg.compile``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import os
import re
import signal
import threading
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import sympy
import torch
from hypothesis import strategies as st

import symgrad as sg
import symgrad.torch as storch

F64 = torch.float64
RTOL = 1e-7
ATOL = 1e-7
MAX_LEAVES = 3
MAX_LEAF_NUMEL = 12
MAX_NUMEL = 27  # any node
MAX_LINALG = 2  # det/inv/logdet/slogdet per graph: entries of nested inverses grow fast

# ── values ───────────────────────────────────────────────────────────────────
GENERIC = st.integers(-30000, 30000).map(lambda i: i / 10000)  # 4 decimals in [-3, 3]
POSITIVE = st.integers(1000, 30000).map(lambda i: i / 10000)  # [0.1, 3]
POOL = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0)  # zeros, ties, the kinks of relu/abs/leaky_relu
LARGE = (50.0, -50.0, 20.0, -20.0, 100.0, -100.0)  # into exp/softplus/logsumexp/sigmoid
SMALL_INTS = (0.0, 1.0, -1.0, 2.0, -2.0, 3.0)  # exact arithmetic, for singular matrices
MODES = ("generic", "special", "mixed", "large", "constant", "positive", "singular", "conditioned")
GRAD_ENTRY = st.one_of(GENERIC, st.sampled_from((0.0, 1.0, -1.0)))


def numel(shape: tuple) -> int:
    return math.prod(int(d) for d in shape)


def nest(flat: list, shape: tuple) -> Any:
    """Flat numbers as nested lists of ``shape`` (a bare number for ``()``)."""
    if not shape:
        return flat[0]
    step = numel(shape[1:])
    return [nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def square(shape: tuple) -> bool:
    return len(shape) == 2 and shape[0] == shape[1]


def singular_matrix(draw: st.DrawFn, n: int) -> list[float]:
    """An n×n matrix of small integers that is exactly singular (a repeated, doubled, negated or zero row or
    column): float64 LU and the determinant formula both give exactly 0."""
    if n == 1:
        return [0.0]
    rows = [draw(st.lists(st.sampled_from(SMALL_INTS), min_size=n, max_size=n)) for _ in range(n)]
    i, j = draw(st.sampled_from([(a, b) for a in range(n) for b in range(n) if a != b]))
    kind = draw(st.sampled_from(("repeat", "double", "negate", "zero")))
    rows[j] = {"repeat": rows[i], "double": [2 * v for v in rows[i]], "negate": [-v for v in rows[i]]}.get(
        kind, [0.0] * n
    )
    if draw(st.booleans()):
        rows = [list(r) for r in zip(*rows)]
    return [float(v) + 0.0 for row in rows for v in row]


def leaf_values(draw: st.DrawFn, shape: tuple, mode: str | None = None) -> list[float]:
    """Flat float64 values for a leaf: random, or special points (zeros, ties, kinks, large, singular)."""
    n = numel(shape)
    mode = mode or draw(st.sampled_from(MODES))
    if mode == "singular" and square(shape):
        return singular_matrix(draw, int(shape[0]))
    if mode == "conditioned" and square(shape):  # diagonally dominant: far from singular
        flat = draw(st.lists(GENERIC, min_size=n, max_size=n))
        size = int(shape[0])
        return [v + (7.0 if k // size == k % size else 0.0) for k, v in enumerate(flat)]
    entry = {
        "generic": GENERIC,
        "special": st.sampled_from(POOL),
        "mixed": st.one_of(GENERIC, st.sampled_from(POOL), st.sampled_from(LARGE)),
        "large": st.one_of(st.sampled_from(LARGE), GENERIC),
        "positive": POSITIVE,
    }.get(mode, st.one_of(st.sampled_from(POOL), GENERIC))
    if mode == "constant":
        return [draw(entry)] * n
    return draw(st.lists(entry, min_size=n, max_size=n))


def grad_values(draw: st.DrawFn, shape: tuple) -> list[float]:
    return draw(st.lists(GRAD_ENTRY, min_size=numel(shape), max_size=numel(shape)))


def exact_det(rows: list[list[float]]) -> Fraction:
    """The determinant of a float64 matrix in exact rational arithmetic."""
    m = [[Fraction(v) for v in row] for row in rows]
    n = len(m)
    if n == 1:
        return m[0][0]
    return sum((-1) ** j * m[0][j] * exact_det([row[:j] + row[j + 1 :] for row in m[1:]]) for j in range(n))  # n <= 3


def linalg_ready(value: torch.Tensor, singular_ok: bool) -> bool:
    """A matrix torch and symgrad agree on: well conditioned, or (for det only) exactly singular with torch's det
    exactly 0. Nearly singular matrices are left out (torch's LU and the determinant formula round differently),
    and so are singular ones for inv/logdet/slogdet: there torch's gradient holds the inf and nan of its LU."""
    rows = value.tolist()
    if not all(math.isfinite(v) for row in rows for v in row):
        return False
    if exact_det(rows) == 0:
        return singular_ok and float(torch.linalg.det(value)) == 0.0
    return float(torch.linalg.cond(value)) < 1e6


# ── shapes (ints, or dims of sg.dims: `==` works on both) ───────────────────
def broadcast(a: tuple, b: tuple) -> tuple | None:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(reversed(out))


def matmul_shape(a: tuple, b: tuple) -> tuple | None:
    if not a or not b:
        return None
    if a[-1] != (b[0] if len(b) == 1 else b[-2]):
        return None
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(b) == 1:
        return a[:-1]
    if len(a) == 1:
        return b[:-2] + b[-1:]
    batch = broadcast(a[:-2], b[:-2])
    return None if batch is None else batch + (a[-2], b[-1])


CONCRETE_SHAPES = [
    (2, 2), (2,), (3,), (), (1,), (2, 3), (3, 2), (3, 3), (1, 3), (3, 1), (1, 1), (1, 2), (2, 1),
    (2, 1, 3), (2, 2, 2), (2, 3, 2), (1, 2, 2),
]  # fmt: skip
K, N, M = sg.dims("k n m")
SYMBOLIC_SHAPES = [(K, N), (N, N), (N, M), (K, 1), (1, N), (N,), (K,), (), (N, 1), (K, N, M)]


# ── a graph being drawn ──────────────────────────────────────────────────────
def user_function() -> Any:
    """The ``sg.function`` the cases call as ``f(T, x)`` (symgrad's op ``map``)."""
    return sg.function("f", lambda t: t**3 + sympy.sin(t))


USER_F = None


def f(T: Any, x: Any) -> Any:
    global USER_F
    if T is storch:
        USER_F = USER_F or user_function()
        return USER_F(x)
    return x**3 + torch.sin(x)


USER_F_SOURCE = """\
import sympy

F_SYMGRAD = sg.function("f", lambda t: t**3 + sympy.sin(t))


def f(T, x):
    return F_SYMGRAD(x) if T is storch else x**3 + torch.sin(x)
"""


class Builder:
    """The nodes of a graph being drawn. Concrete graphs evaluate every step with torch (its shape, and values
    for choosing kink parameters); symbolic graphs evaluate with symgrad on symbolic shapes (shapes only)."""

    def __init__(self, draw: st.DrawFn, symbolic: bool = False) -> None:
        self.draw = draw
        self.symbolic = symbolic
        self.leaves: list[str] = []
        self.leaf_values: dict[str, list[float]] = {}
        self.shapes: dict[str, tuple] = {}
        self.lines: list[tuple[str, str, str]] = []  # (variable, code, spec name)
        self.env: dict[str, Any] = {"T": storch if symbolic else torch, "f": f}
        self.order: list[str] = []
        self.linalg = 0
        self.linalg_leaves: dict[str, bool] = {}  # leaves det/inv/... read -> whether they may be singular
        self.rejected = 0
        self.exact: set[str] = set()  # nodes whose float64 values symgrad and torch compute bit for bit

    # drawing helpers
    def pick(self, options: Any) -> Any:
        return self.draw(st.sampled_from(list(options)))

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def shape(self, var: str) -> tuple:
        return self.shapes[var]

    def value(self, var: str) -> torch.Tensor | None:
        return None if self.symbolic else self.env[var]

    def params(self, var: str) -> list[float]:
        """Numbers for bounds and thresholds: the pool and, on concrete graphs, the entries of ``var`` (kinks).
        Entries only of exact nodes: an exp or a sum may differ by an ulp between symgrad and torch, and a
        threshold equal to torch's value would then split the two at a tie that is a rounding artefact."""
        found = list(POOL)
        value = self.value(var)
        if value is not None and value.numel() and var in self.exact:
            found += [float(v) for v in value.reshape(-1).tolist() if math.isfinite(v)]
        return found

    def number(self, var: str) -> float:
        return float(self.pick(self.params(var))) + 0.0

    @property
    def newest(self) -> str:
        return self.order[-1]

    def leaf(self, shape: tuple) -> str:
        name = f"x{len(self.leaves)}"
        self.leaves.append(name)
        self.shapes[name] = tuple(shape)
        if self.symbolic:
            self.env[name] = sg.symbols(name, shape, requires_grad=True)
        else:
            values = leaf_values(self.draw, shape)
            self.leaf_values[name] = values
            self.env[name] = torch.tensor(nest(values, shape), dtype=F64)
        self.order.append(name)
        self.exact.add(name)
        return name

    def candidate_shapes(self, like: tuple) -> list[tuple]:
        base = SYMBOLIC_SHAPES if self.symbolic else CONCRETE_SHAPES
        out = [like, *base]
        out += [tuple(1 if i == j else d for i, d in enumerate(like)) for j in range(len(like))]
        out += [like[j:] for j in range(1, len(like) + 1)]
        if not self.symbolic:
            out = [s for s in out if numel(s) <= MAX_LEAF_NUMEL]
        seen: list[tuple] = []
        for s in out:
            if s not in seen:
                seen.append(s)
        return seen

    def partner(self, fits: Callable[[tuple], bool], like: tuple = (), extra: tuple = ()) -> str | None:
        """A second operand whose shape fits: an earlier node (a shared subexpression) or a fresh leaf."""
        existing = [v for v in self.order if fits(self.shapes[v])]
        fresh = [s for s in [*extra, *self.candidate_shapes(like)] if fits(s)]
        if fresh and len(self.leaves) < MAX_LEAVES and (not existing or self.flag()):
            return self.leaf(self.pick(fresh))
        return self.pick(existing) if existing else None

    def same_shape(self, x: str) -> str | None:
        shape = self.shape(x)
        return self.partner(lambda s: s == shape, shape)

    def broadcastable(self, x: str) -> str | None:
        shape = self.shape(x)
        return self.partner(lambda s: self.fits_broadcast(shape, s), shape)

    def fits_broadcast(self, a: tuple, b: tuple) -> bool:
        out = broadcast(a, b)
        return out is not None and len(out) <= 3 and (self.symbolic or numel(out) <= MAX_NUMEL)

    def operand_or_number(self, x: str) -> str:
        """A broadcastable tensor operand, or a number (often an entry of x: ties)."""
        if self.flag():
            other = self.broadcastable(x)
            if other is not None:
                return other
        return repr(self.number(x))

    def constant_like(self, x: str) -> str:
        shape = self.shape(x)
        values = leaf_values(self.draw, shape, "special")
        return f"T.tensor({nest(values, shape)!r}, dtype=T.float64)"

    # evaluation
    def add(self, code: str, spec: str) -> str | None:
        var = f"t{len(self.lines)}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = eval(code, self.env)
        except Exception:
            self.rejected += 1
            return None
        if self.symbolic:
            if not isinstance(value, sg.Tensor) or not str(value.dtype).startswith("float"):
                return None
        else:
            if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() > MAX_NUMEL:
                return None
            if value.numel() == 0:
                return None
        self.env[var] = value
        self.shapes[var] = tuple(value.shape)
        self.lines.append((var, code, spec))
        self.order.append(var)
        inexact = re.search(r"\.(exp|log|rsqrt)\(", code)
        if spec in EXACT_SPECS and not inexact and set(re.findall(r"\b[xt]\d+\b", code)) <= self.exact:
            self.exact.add(var)
        return var


# Specs whose results are single IEEE operations or moved entries: symgrad and torch agree to the bit.
EXACT_SPECS = {
    "neg", "abs", "relu", "sign", "clamp", "hardtanh", "leaky_relu", "threshold", "maximum", "minimum",
    "where_gt", "where_ge", "where_lt", "where_le", "where_eq", "transpose", "permute", "reshape", "index",
    "expand", "flip", "amax", "max_all", "max_dim", "norm_inf", "add", "sub", "mul", "div", "one_hot", "outer",
}  # fmt: skip


# ── op specs ─────────────────────────────────────────────────────────────────
Make = Callable[[Builder, str], "str | None"]


@dataclass(frozen=True)
class Spec:
    """How to call one torch function (or family of spellings) in both namespaces, and which ops it reaches."""

    name: str
    ops: frozenset[str]
    make: Make
    law: bool = False  # usable with symbolic shapes (sg.law / sg.compile)


SPECS: dict[str, Spec] = {}


def spec(name: str, ops: str, law: bool = False) -> Callable[[Make], Make]:
    def register(make: Make) -> Make:
        SPECS[name] = Spec(name, frozenset(ops.split()), make, law)
        return make

    return register


def dim_of(c: Builder, x: str) -> int | None:
    nd = len(c.shape(x))
    return c.pick(range(-nd, nd)) if nd else None


def dims_arg(c: Builder, x: str, allow_none: bool = True) -> str | None:
    """A ``dim`` argument: None (all), an int, or a tuple of distinct ints; None when x is 0-d."""
    nd = len(c.shape(x))
    if nd == 0:
        return None
    kind = c.pick(("int", "tuple", "none") if allow_none else ("int", "tuple"))
    if kind == "none":
        return "None"
    if kind == "int":
        return str(c.pick(range(-nd, nd)))
    chosen = c.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    return repr(tuple(chosen))


# elementwise functions of one input: spelled as a method, a torch function or an F function
UNARY = {
    "exp": "method T", "log": "method T", "sin": "method T", "cos": "method T", "tanh": "method T F",
    "sigmoid": "method T F", "relu": "method T F", "abs": "method T", "sqrt": "method T", "erf": "method T",
    "log1p": "method T", "reciprocal": "method T", "rsqrt": "method T", "sign": "method T",
    "expm1": "method T", "exp2": "method T", "erfc": "method T",
    "gelu": "F", "silu": "F", "softplus": "F", "logsigmoid": "F",
    # torch's mathematical functions (symgrad.ops.math_functions); S: torch.special
    "tan": "method T", "asin": "method T", "acos": "method T", "atan": "method T", "sinh": "method T",
    "cosh": "method T", "asinh": "method T", "acosh": "method T", "atanh": "method T", "sinc": "method T S",
    "deg2rad": "method T", "rad2deg": "method T", "log2": "method T", "log10": "method T", "frac": "method T",
    "lgamma": "method T", "digamma": "method T S", "erfinv": "method T S", "i0": "method T S", "entr": "S",
    "ndtr": "S", "ndtri": "S", "log_ndtr": "S", "erfcx": "S", "i0e": "S", "i1": "S", "i1e": "S",
    "bessel_j0": "S", "bessel_j1": "S", "bessel_y0": "S", "bessel_y1": "S", "modified_bessel_i0": "S",
    "modified_bessel_i1": "S", "modified_bessel_k0": "S", "modified_bessel_k1": "S",
    "scaled_modified_bessel_k0": "S", "scaled_modified_bessel_k1": "S", "spherical_bessel_j0": "S", "airy_ai": "S",
}  # fmt: skip


def unary_make(op: str, spellings: str) -> Make:
    def make(c: Builder, x: str) -> str:
        how = c.pick(spellings.split())
        return {"method": f"{x}.{op}()", "T": f"T.{op}({x})", "F": f"T.nn.functional.{op}({x})",
                "S": f"T.special.{op}({x})"}[how]  # fmt: skip

    return make


for _op, _how in UNARY.items():
    spec(_op, _op, law=True)(unary_make(_op, _how))


@spec("neg", "neg", law=True)
def _neg(c: Builder, x: str) -> str:
    return c.pick((f"-{x}", f"T.neg({x})", f"{x}.neg()"))


@spec("pow_scalar", "pow", law=True)
def _pow_scalar(c: Builder, x: str) -> str:
    p = c.pick((2, 3, 0.5, -1, 0, 1, -0.5, 1.5, -2, 2.5))
    return c.pick((f"{x} ** {p}", f"T.pow({x}, {p})", f"{x}.pow({p})"))


@spec("pow_base", "pow", law=True)
def _pow_base(c: Builder, x: str) -> str:
    return f"{c.pick((2.0, 0.5, 0.0, 1.0, 3.0))} ** {x}"


@spec("pow_tensor", "pow", law=True)
def _pow_tensor(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    if y is None:
        return None
    a, b = (x, y) if c.flag() else (y, x)
    return c.pick((f"{a} ** {b}", f"T.pow({a}, {b})"))


@spec("clamp", "clamp", law=True)
def _clamp(c: Builder, x: str) -> str:
    lo, hi = c.number(x), c.number(x)
    args = c.pick((f"min={lo}", f"max={hi}", f"{lo}, {hi}", f"min={lo}, max={hi}"))
    return c.pick((f"{x}.clamp({args})", f"T.clamp({x}, {args})", f"T.clip({x}, {args})"))


@spec("hardtanh", "hardtanh", law=True)
def _hardtanh(c: Builder, x: str) -> str:
    lo, hi = sorted((c.number(x), c.number(x)))
    return c.pick((f"T.nn.functional.hardtanh({x})", f"T.nn.functional.hardtanh({x}, {lo}, {hi})"))


@spec("leaky_relu", "leaky_relu", law=True)
def _leaky_relu(c: Builder, x: str) -> str:
    slope = c.pick((None, 0.01, 0.2, 0.0, 1.0, -0.5, 2.0))
    return f"T.nn.functional.leaky_relu({x})" if slope is None else f"T.nn.functional.leaky_relu({x}, {slope})"


@spec("threshold", "threshold", law=True)
def _threshold(c: Builder, x: str) -> str:
    return f"T.nn.functional.threshold({x}, {c.number(x)}, {c.pick(POOL)})"


@spec("user_function", "map", law=True)
def _user_function(c: Builder, x: str) -> str:
    return f"f(T, {x})"


BINARY = {
    "add": ("{0} + {1}", "T.add({0}, {1})", "{0}.add({1})", "T.add({0}, {1}, alpha=2.0)"),
    "sub": ("{0} - {1}", "T.sub({0}, {1})", "{0}.sub({1})", "T.sub({0}, {1}, alpha=0.5)"),
    "mul": ("{0} * {1}", "T.mul({0}, {1})", "{0}.mul({1})"),
    "div": ("{0} / {1}", "T.div({0}, {1})", "{0}.div({1})"),
}


def binary_make(op: str, spellings: tuple) -> Make:
    def make(c: Builder, x: str) -> str | None:
        kind = c.pick(("tensor", "number", "constant") if not c.symbolic else ("tensor", "number"))
        if kind == "tensor":
            y = c.broadcastable(x)
            if y is None:
                return None
        elif kind == "number":
            y = repr(c.number(x))
        else:
            y = c.constant_like(x)
        a, b = (x, y) if c.flag() else (y, x)
        if op in ("mul", "div") and kind == "number" and a == y:  # 2.0 / x: a Python number first
            return f"{a} {'*' if op == 'mul' else '/'} {b}"
        if kind == "number" and a == y:
            return f"{a} {'+' if op == 'add' else '-'} {b}"
        return c.pick(spellings).format(a, b)

    return make


for _op, _spellings in BINARY.items():
    spec(_op, _op, law=True)(binary_make(_op, _spellings))


@spec("maximum", "maximum", law=True)
def _maximum(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    return None if y is None else c.pick((f"T.maximum({x}, {y})", f"T.max({x}, {y})", f"T.maximum({y}, {x})"))


@spec("minimum", "maximum neg", law=True)
def _minimum(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    return None if y is None else c.pick((f"T.minimum({x}, {y})", f"T.minimum({y}, {x})"))


@spec("atan2", "atan2", law=True)
def _atan2(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    return None if y is None else c.pick((f"T.atan2({x}, {y})", f"T.atan2({y}, {x})"))


COMPARISONS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
BRANCH_FUNCTIONS = ("sqrt", "log", "reciprocal", "rsqrt", "exp")


def where_make(op: str) -> Make:
    def make(c: Builder, x: str) -> str | None:
        other = c.operand_or_number(x)
        if op == "eq":
            cond = f"T.eq({x}, {other})"
        else:
            cond = c.pick((f"{x} {COMPARISONS[op]} {other}", f"T.{op}({x}, {other})"))
        branches = []
        for _ in range(2):
            kind = c.pick(("x", "fn", "tensor", "number"))
            if kind == "fn":  # out-of-domain values in the branch not taken: torch passes their nan to the grad
                branches.append(f"{x}.{c.pick(BRANCH_FUNCTIONS)}()")
            elif kind == "tensor":
                branches.append(c.broadcastable(x) or x)
            elif kind == "number":
                branches.append(repr(c.number(x)))
            else:
                branches.append(x)
        if all(b[0].isdigit() or b[0] == "-" for b in branches):
            branches[0] = x
        return f"T.where({cond}, {branches[0]}, {branches[1]})"

    return make


for _op in ("gt", "ge", "lt", "le", "eq"):
    spec(f"where_{_op}", f"where {_op}", law=True)(where_make(_op))


@spec("mask_mul", "gt lt mul", law=True)
def _mask_mul(c: Builder, x: str) -> str:
    """A boolean mask times a tensor, as torch code often writes it."""
    other = c.operand_or_number(x)
    return c.pick((f"({x} > {other}) * {x}", f"{x} * ({x} < {other})"))


# reductions
@spec("sum", "sum", law=True)
def _sum(c: Builder, x: str) -> str:
    d = dims_arg(c, x)
    if d is None or d == "None":
        return c.pick((f"{x}.sum()", f"T.sum({x})"))
    k = c.flag()
    return c.pick((f"{x}.sum({d}, keepdim={k})", f"T.sum({x}, dim={d}, keepdim={k})"))


@spec("mean", "mean", law=True)
def _mean(c: Builder, x: str) -> str:
    d = dims_arg(c, x)
    if d is None or d == "None":
        return c.pick((f"{x}.mean()", f"T.mean({x})"))
    k = c.flag()
    return c.pick((f"{x}.mean({d}, keepdim={k})", f"T.mean({x}, dim={d}, keepdim={k})"))


@spec("amax", "amax", law=True)
def _amax(c: Builder, x: str) -> str:
    d = dims_arg(c, x, allow_none=False)
    if d is None or c.pick((0, 1, 2)) == 0:
        return c.pick((f"{x}.amax()", f"T.amax({x})"))
    k = c.flag()
    return c.pick((f"{x}.amax({d}, keepdim={k})", f"T.amax({x}, dim={d}, keepdim={k})"))


@spec("max_all", "max_all", law=True)
def _max_all(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if all(isinstance(d, int) for d in shape) and not numel(shape):
        return None
    return c.pick((f"T.max({x})", f"{x}.max()"))


@spec("max_dim", "max_dim", law=True)
def _max_dim(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    if d is None:
        return None
    k = c.flag()
    return c.pick((f"{x}.max({d}).values", f"{x}.max(dim={d}, keepdim={k})[0]", f"T.max({x}, {d}, keepdim={k}).values"))


@spec("norm", "norm", law=True)
def _norm(c: Builder, x: str) -> str:
    nd = len(c.shape(x))
    d = dims_arg(c, x)
    k = c.flag()
    options = [f"{x}.norm()", f"T.norm({x})", f"T.linalg.norm({x})", f"T.linalg.vector_norm({x})"]
    if d is not None and d != "None":
        options += [
            f"{x}.norm(dim={d}, keepdim={k})",
            f"T.norm({x}, dim={d}, keepdim={k})",
            f"T.linalg.vector_norm({x}, dim={d}, keepdim={k})",
        ]
    if nd >= 2:
        options += [f"T.linalg.matrix_norm({x})", f"T.norm({x}, p='fro')"]
    return c.pick(options)


@spec("norm_1", "abs sum", law=True)
def _norm_1(c: Builder, x: str) -> str:
    d = dims_arg(c, x, allow_none=False)
    if d is None:
        return f"T.norm({x}, p=1)"
    return c.pick((f"T.norm({x}, p=1, dim={d})", f"T.linalg.vector_norm({x}, ord=1, dim={d})", f"{x}.norm(p=1)"))


@spec("norm_inf", "inf_norm", law=True)
def _norm_inf(c: Builder, x: str) -> str:
    d = dims_arg(c, x, allow_none=False)
    if d is None:
        return f"T.norm({x}, p=T.inf)"
    return c.pick(
        (
            f"T.norm({x}, p=T.inf, dim={d})",
            f"T.linalg.vector_norm({x}, ord=T.inf, dim={d})",
            f"T.linalg.vector_norm({x}, ord=-T.inf, dim={d})",
        )
    )


def spread_make(op: str) -> Make:
    def make(c: Builder, x: str) -> str:
        d = dims_arg(c, x)
        correction = c.pick((1, 0, 2, 0.5))
        k = c.flag()
        if d is None or d == "None":
            return c.pick((f"{x}.{op}()", f"T.{op}({x})", f"T.{op}({x}, correction={correction})"))
        return c.pick(
            (
                f"{x}.{op}({d}, correction={correction}, keepdim={k})",
                f"T.{op}({x}, dim={d}, correction={correction}, keepdim={k})",
                f"T.{op}({x}, {d}, keepdim={k})",
            )
        )

    return make


spec("var", "var", law=True)(spread_make("var"))
spec("std", "std", law=True)(spread_make("std"))


def along_make(op: str) -> Make:
    def make(c: Builder, x: str) -> str | None:
        d = dim_of(c, x)
        if d is None:
            return None
        options = {
            "softmax": (f"{x}.softmax({d})", f"T.softmax({x}, {d})", f"T.nn.functional.softmax({x}, dim={d})"),
            "log_softmax": (
                f"{x}.log_softmax({d})",
                f"T.log_softmax({x}, {d})",
                f"T.nn.functional.log_softmax({x}, dim={d})",
            ),
            "cumsum": (f"{x}.cumsum({d})", f"T.cumsum({x}, dim={d})"),
        }[op]
        return c.pick(options)

    return make


spec("softmax", "softmax", law=True)(along_make("softmax"))
spec("log_softmax", "log_softmax", law=True)(along_make("log_softmax"))
spec("cumsum", "cumsum", law=True)(along_make("cumsum"))


@spec("logsumexp", "logsumexp", law=True)
def _logsumexp(c: Builder, x: str) -> str | None:
    d = dims_arg(c, x, allow_none=False)
    if d is None:
        return None
    k = c.flag()
    return c.pick((f"{x}.logsumexp({d}, keepdim={k})", f"T.logsumexp({x}, {d}, keepdim={k})"))


@spec("trace", "trace", law=True)
def _trace(c: Builder, x: str) -> str | None:
    return c.pick((f"{x}.trace()", f"T.trace({x})")) if len(c.shape(x)) == 2 else None


@spec("layer_norm", "layer_norm", law=True)
def _layer_norm(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    last = c.pick(range(1, nd + 1))
    return f"T.nn.functional.layer_norm({x}, {x}.shape[{-last}:])"


# layout
@spec("transpose", "transpose", law=True)
def _transpose(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    a, b = c.pick(range(-nd, nd)), c.pick(range(-nd, nd))
    options = [f"{x}.transpose({a}, {b})", f"T.transpose({x}, {a}, {b})"]
    if nd <= 2:
        options += [f"{x}.t()", f"T.t({x})"]
    if nd >= 2:
        options += [f"{x}.mT"]
    return c.pick(options)


@spec("permute", "permute", law=True)
def _permute(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    order = tuple(c.draw(st.permutations(range(nd))))
    if nd == 2 and c.flag():
        return f"{x}.T"
    return c.pick((f"{x}.permute({order})", f"T.permute({x}, {order})", f"{x}.permute{order}"))


def factorizations(n: int, parts: int) -> list[tuple]:
    if parts == 1:
        return [(n,)]
    return [(d, *rest) for d in range(1, n + 1) if n % d == 0 for rest in factorizations(n // d, parts - 1)]


@spec("reshape", "reshape")
def _reshape(c: Builder, x: str) -> str:
    n = numel(c.shape(x))
    target = c.pick([s for parts in (1, 2, 3) for s in factorizations(n, parts)])
    if len(target) > 1 and c.flag():
        target = tuple(-1 if i == 0 else d for i, d in enumerate(target))
    args = ", ".join(map(str, target))
    return c.pick(
        (f"{x}.reshape({args})", f"{x}.reshape({target})", f"T.reshape({x}, {target})", f"{x}.view({args})")
        + (f"{x}.flatten()", f"T.flatten({x})")
    )


@spec("index", "index", law=True)
def _index(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape or c.pick((0, 1, 2)) == 0:
        nd = len(shape)
        return f"{x}.unsqueeze({c.pick(range(-nd - 1, nd + 1))})" if c.flag() else f"{x}[None]"
    items, ellipsis = [], False
    for size in shape:
        choices = ["0", "-1", ":", "None, :"]
        if not c.symbolic:
            choices += [str(i) for i in range(-int(size), int(size))] + ["1:", ":2", "::2", "-2:"]
        if not ellipsis:
            choices.append("...")
        item = c.pick(choices)
        ellipsis = ellipsis or item == "..."
        items.append(item)
        if item == "...":
            break
    return f"{x}[{', '.join(items)}]"


@spec("unbind", "index add", law=True)
def _unbind(c: Builder, x: str) -> str | None:
    return f"sum(list({x}))" if c.shape(x) else None


@spec("expand", "expand")
def _expand(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    target = [c.pick((1, 2, 3)) if d == 1 else c.pick((d, -1)) for d in shape]
    if c.flag() or not shape:
        target.insert(0, c.pick((1, 2)))
    if c.flag():
        return f"{x}.expand({', '.join(map(str, target))})"
    y = c.partner(lambda s: broadcast(shape, s) == s and s != shape, shape)
    return f"{x}.expand_as({y})" if y is not None else f"{x}.expand({tuple(target)})"


@spec("flip", "flip", law=True)
def _flip(c: Builder, x: str) -> str | None:
    d = dims_arg(c, x, allow_none=False)
    if d is None:
        return None
    return c.pick((f"{x}.flip({d})", f"T.flip({x}, {d if d.startswith('(') else f'({d},)'})"))


# products
@spec("matmul", "matmul", law=True)
def _matmul(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    left = c.flag()
    sizes = (K, N, M) if c.symbolic else (1, 2, 3)
    if left:
        extra = [(shape[-1],), *((shape[-1], s) for s in sizes)] if shape else []
        y = c.partner(lambda s: matmul_shape(shape, s) is not None, shape, tuple(extra))
        a, b = x, y
    else:
        lead = shape[0] if len(shape) == 1 else (shape[-2] if shape else None)
        extra = [(lead,), *((s, lead) for s in sizes)] if shape else []
        y = c.partner(lambda s: matmul_shape(s, shape) is not None, shape, tuple(extra))
        a, b = y, x
    if y is None:
        return None
    return c.pick((f"{a} @ {b}", f"T.matmul({a}, {b})", f"{a}.matmul({b})"))


@spec("mm", "mm", law=True)
def _mm(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    sizes = (K, N, M) if c.symbolic else (1, 2, 3)
    y = c.partner(lambda s: len(s) == 2 and s[0] == shape[1], shape, tuple((shape[1], s) for s in sizes))
    return None if y is None else c.pick((f"T.mm({x}, {y})", f"{x}.mm({y})"))


@spec("addmm", "mm add mul ignored", law=True)
def _addmm(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    y = c.partner(lambda s: len(s) == 2 and s[0] == shape[1], shape, ((shape[1], shape[0]),))
    if y is None:
        return None
    out = (shape[0], c.shape(y)[1])
    z = c.partner(lambda s: broadcast(s, out) == out, out)
    if z is None:
        return None
    beta, alpha = c.pick((1, 0, 0.5)), c.pick((1, 2.0, -1.0))
    return f"T.addmm({z}, {x}, {y}, beta={beta}, alpha={alpha})"


@spec("linear", "matmul transpose add", law=True)
def _linear(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    sizes = (K, N) if c.symbolic else (1, 2, 3)
    w = c.partner(lambda s: len(s) == 2 and s[1] == shape[-1], shape, tuple((s, shape[-1]) for s in sizes))
    if w is None:
        return None
    if c.flag():
        return f"T.nn.functional.linear({x}, {w})"
    b = c.partner(lambda s: len(s) == 1 and s[0] == c.shape(w)[0], shape, ((c.shape(w)[0],),))
    return f"T.nn.functional.linear({x}, {w})" if b is None else f"T.nn.functional.linear({x}, {w}, {b})"


@spec("bmm", "matmul")
def _bmm(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 3:
        return None
    y = c.partner(lambda s: len(s) == 3 and s[0] == shape[0] and s[1] == shape[2], shape,
                  tuple((shape[0], shape[2], s) for s in (1, 2)))  # fmt: skip
    return None if y is None else f"T.bmm({x}, {y})"


@spec("outer", "outer", law=True)
def _outer(c: Builder, x: str) -> str | None:
    if len(c.shape(x)) != 1:
        return None
    y = c.partner(lambda s: len(s) == 1, c.shape(x))
    return None if y is None else c.pick((f"T.outer({x}, {y})", f"T.ger({y}, {x})"))


@spec("dot", "mul sum", law=True)
def _dot(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 1:
        return None
    y = c.partner(lambda s: s == shape, shape)
    return None if y is None else f"T.dot({x}, {y})"


@spec("einsum", "einsum")
def _einsum(c: Builder, x: str) -> str | None:
    a = c.shape(x)
    y = c.partner(lambda s: len(s) <= 3 and numel(s) * numel(a) <= 4 * MAX_NUMEL, a)
    if y is None:
        return None
    b = c.shape(y)
    letters = iter("abcdefgh")
    xs = [next(letters) for _ in a]
    if len(a) == 2 and a[0] == a[1] and c.pick((0, 0, 0, 1)):  # a diagonal: "aa"
        xs[1] = xs[0]
    ys: list[str] = []
    for size in b:
        shared = [xs[i] for i, s in enumerate(a) if s == size and xs[i] not in ys]
        ys.append(c.pick(shared) if shared and c.flag() else next(letters))
    used = sorted(set(xs + ys))
    out = c.draw(st.lists(st.sampled_from(used), unique=True, max_size=len(used))) if used else []
    equation = f"{''.join(xs)},{''.join(ys)}" + ("" if c.pick((0, 1, 1)) == 0 else f"->{''.join(out)}")
    return f"T.einsum({equation!r}, {x}, {y})"


# linalg on square matrices
def square_operand(c: Builder, x: str, singular_ok: bool) -> str | None:
    """x if it is a square matrix torch and symgrad agree on (see linalg_ready), else a square partner.
    With symbolic shapes, only leaves: their values are drawn singular or well conditioned."""
    if c.linalg >= MAX_LINALG:
        return None

    def ready(v: str) -> bool:
        return v in c.leaves if c.symbolic else linalg_ready(c.env[v], singular_ok)

    if square(c.shape(x)) and ready(x):
        return x
    shapes = [(N, N)] if c.symbolic else [(1, 1), (2, 2), (3, 3)]
    if len(c.leaves) < MAX_LEAVES and (c.symbolic or c.flag()):
        p = c.leaf(c.pick(shapes))
    else:
        found = [v for v in c.order if c.shape(v) in shapes and ready(v)]
        if not found:
            return None
        p = c.pick(found)
    return p if ready(p) else None


def linalg_make(options: Callable[[str], tuple], singular_ok: bool = False) -> Make:
    def make(c: Builder, x: str) -> str | None:
        a = square_operand(c, x, singular_ok)
        if a is None:
            return None
        c.linalg += 1
        if a in c.leaves:
            c.linalg_leaves[a] = c.linalg_leaves.get(a, True) and singular_ok
        code = c.pick(options(a))
        return code if a == x else f"{x} * {code}"

    return make


spec("det", "det", law=True)(linalg_make(lambda a: (f"T.det({a})", f"T.linalg.det({a})"), singular_ok=True))
spec("inv", "inv", law=True)(linalg_make(lambda a: (f"T.inverse({a})", f"T.linalg.inv({a})")))
spec("logdet", "logdet", law=True)(linalg_make(lambda a: (f"T.logdet({a})",)))
spec("slogdet", "logabsdet", law=True)(
    linalg_make(lambda a: (f"T.linalg.slogdet({a}).logabsdet", f"T.slogdet({a})[1]"))
)
spec("slogdet_sign", "sign det logabsdet", law=True)(
    linalg_make(lambda a: (f"T.linalg.slogdet({a}).sign * T.linalg.slogdet({a}).logabsdet",))
)


# losses
def class_targets(c: Builder, batch: int, classes: int) -> str:
    values = c.draw(st.lists(st.integers(0, classes - 1), min_size=batch, max_size=batch))
    return f"T.tensor({values})"


@spec("cross_entropy", "cross_entropy")
def _cross_entropy(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    reduction = c.pick(("mean", "sum"))
    return f"T.nn.functional.cross_entropy({x}, {class_targets(c, *shape)}, reduction={reduction!r})"


@spec("nll_loss", "nll_loss")
def _nll_loss(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    reduction = c.pick(("mean", "sum"))
    return f"T.nn.functional.nll_loss({x}, {class_targets(c, *shape)}, reduction={reduction!r})"


@spec("one_hot", "one_hot mul")
def _one_hot(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) not in (1, 2):
        return None
    targets = c.draw(st.lists(st.integers(0, shape[-1] - 1), min_size=numel(shape[:-1]), max_size=numel(shape[:-1])))
    literal = targets[0] if len(shape) == 1 else targets
    return f"{x} * T.nn.functional.one_hot(T.tensor({literal}), {shape[-1]})"


def reduction(c: Builder) -> str:
    return c.pick(("mean", "sum", "none"))


@spec("mse_loss", "sub pow mean sum", law=True)
def _mse_loss(c: Builder, x: str) -> str | None:
    y = c.same_shape(x)
    return None if y is None else f"T.nn.functional.mse_loss({x}, {y}, reduction={reduction(c)!r})"


@spec("bce_with_logits", "binary_cross_entropy_with_logits mean sum", law=True)
def _bce_with_logits(c: Builder, x: str) -> str | None:
    y = c.same_shape(x)
    if y is None:
        return None
    return f"T.nn.functional.binary_cross_entropy_with_logits({x}, {y}, reduction={reduction(c)!r})"


@spec("bce", "binary_cross_entropy")
def _bce(c: Builder, x: str) -> str:
    shape = c.shape(x)
    targets = nest(c.draw(st.lists(st.sampled_from((0.0, 1.0, 0.25, 0.5)), min_size=numel(shape),
                                   max_size=numel(shape))), shape)  # fmt: skip
    return (
        f"T.nn.functional.binary_cross_entropy({x}.sigmoid(), T.tensor({targets!r}, dtype=T.float64), "
        f"reduction={reduction(c)!r})"
    )


@spec("l1_losses", "", law=True)
def _l1_losses(c: Builder, x: str) -> str | None:
    y = c.same_shape(x)
    if y is None:
        return None
    r = reduction(c)
    return c.pick(
        (
            f"T.nn.functional.l1_loss({x}, {y}, reduction={r!r})",
            f"T.nn.functional.smooth_l1_loss({x}, {y}, reduction={r!r}, beta={c.pick((1.0, 0.5))})",
            f"T.nn.functional.huber_loss({x}, {y}, reduction={r!r}, delta={c.pick((1.0, 2.0))})",
        )
    )


@spec("kl_div", "", law=True)
def _kl_div(c: Builder, x: str) -> str | None:
    y = c.same_shape(x)
    if y is None:
        return None
    log_target = c.flag()
    r = c.pick(("sum", "mean", "batchmean", "none")) if len(c.shape(x)) else c.pick(("sum", "mean", "none"))
    target = y if log_target else f"{y}.sigmoid()"
    return f"T.nn.functional.kl_div({x}, {target}, reduction={r!r}, log_target={log_target})"


# ── more elementwise ops ────────────────────────────────────────────────────
for _op in ("floor", "ceil", "trunc", "round"):
    spec(_op, _op, law=True)(unary_make(_op, "method T"))


@spec("to_float", "to_float", law=True)
def _to_float(c: Builder, x: str) -> str:
    """A round trip through another float dtype's label (float64 inputs: the numbers stay float64's)."""
    return c.pick((f"{x}.float().double()", f"{x}.to(T.float32).to(T.float64)", f"{x}.half().double()"))


@spec("to_integer", "to_integer to_float mul", law=True)
def _to_integer(c: Builder, x: str) -> str:
    """An integer or bool view of x's values, back as floats, times x: truncation toward zero, nonzero as 1."""
    cast = c.pick(("long()", "int()", "bool()", "to(T.int64)"))
    return f"{x}.{cast}.double() * {x}"


@spec("clone", "clone", law=True)
def _clone(c: Builder, x: str) -> str:
    return c.pick((f"{x}.clone()", f"T.clone({x})"))


@spec("round_decimals", "round mul div", law=True)
def _round_decimals(c: Builder, x: str) -> str:
    return f"T.round({x}, decimals={c.pick((1, 2, -1))})"


def activation_make(options: Callable[[str], tuple]) -> Make:
    def make(c: Builder, x: str) -> str:
        return c.pick(options(x))

    return make


F_ = "T.nn.functional"
spec("elu", "elu", law=True)(activation_make(lambda x: (f"{F_}.elu({x})", f"{F_}.elu({x}, alpha=0.5)")))
spec("celu", "celu", law=True)(activation_make(lambda x: (f"{F_}.celu({x})", f"{F_}.celu({x}, alpha=2.0)")))
spec("selu", "selu", law=True)(activation_make(lambda x: (f"{F_}.selu({x})",)))
spec("mish", "mish", law=True)(activation_make(lambda x: (f"{F_}.mish({x})",)))
spec("hardsigmoid", "hardsigmoid", law=True)(activation_make(lambda x: (f"{F_}.hardsigmoid({x})",)))
spec("hardswish", "hardswish", law=True)(activation_make(lambda x: (f"{F_}.hardswish({x})",)))
spec("gelu_tanh", "gelu_tanh", law=True)(activation_make(lambda x: (f"{F_}.gelu({x}, approximate='tanh')",)))
spec("relu6", "", law=True)(activation_make(lambda x: (f"{F_}.relu6({x})",)))
spec("softsign", "", law=True)(activation_make(lambda x: (f"{F_}.softsign({x})",)))


@spec("softmin", "", law=True)
def _softmin(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    return None if d is None else f"{F_}.softmin({x}, dim={d})"


def binary_function_make(op: str) -> Make:
    def make(c: Builder, x: str) -> str | None:
        y = c.broadcastable(x)
        if y is None:
            return None
        a, b = (x, y) if c.flag() else (y, x)
        return c.pick((f"T.{op}({a}, {b})", f"{a}.{op}({b})"))

    return make


for _op in ("hypot", "logaddexp", "xlogy", "copysign", "remainder", "fmod", "nextafter", "fmax", "fmin"):
    spec(_op, _op, law=True)(binary_function_make(_op))


@spec("xlog1py", "xlog1py", law=True)
def _xlog1py(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    return None if y is None else f"T.special.xlog1py({x}, {y})"


@spec("incomplete_gamma", "igamma igammac zeta", law=True)
def _incomplete_gamma(c: Builder, x: str) -> str:
    """torch differentiates these by their second argument only: the first is a detached number or tensor."""
    first = c.pick(("0.5", "1.5", "3.0", f"({x}.detach().abs() + 1.1)"))
    function = c.pick(("T.igamma", "T.igammac", "T.special.gammainc", "T.special.zeta"))
    return f"{function}({first}, {x})"


@spec("polygamma", "polygamma", law=True)
def _polygamma(c: Builder, x: str) -> str:
    n = c.pick((0, 1, 2, 3))
    return c.pick((f"T.polygamma({n}, {x})", f"{x}.polygamma({n})", f"T.special.polygamma({n}, {x})"))


@spec("logit", "logit", law=True)
def _logit(c: Builder, x: str) -> str:
    eps = c.pick(("", ", eps=0.1", ", 0.25"))
    return c.pick((f"T.logit({x}{eps})", f"{x}.logit({eps.lstrip(', ')})"))


@spec("polynomials", " ".join(f"{k}_polynomial_{s}" for k, s in (
    ("chebyshev", "t"), ("chebyshev", "u"), ("chebyshev", "v"), ("chebyshev", "w"), ("shifted_chebyshev", "t"),
    ("shifted_chebyshev", "u"), ("shifted_chebyshev", "v"), ("shifted_chebyshev", "w"), ("hermite", "h"),
    ("hermite", "he"), ("laguerre", "l"), ("legendre", "p"))), law=True)  # fmt: skip
def _polynomials(c: Builder, x: str) -> str:
    """Orthogonal polynomials of a degree n (a number, or a detached tensor): torch does not differentiate them."""
    kind = c.pick(("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                   "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                   "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                   "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"))  # fmt: skip
    return f"T.special.{kind}({x}, {c.pick((0, 1, 2, 3, 5, 8))}) * {x}"


@spec("float_class", "isfinite isinf isposinf isneginf signbit where", law=True)
def _float_class(c: Builder, x: str) -> str:
    test = c.pick(("isfinite", "isinf", "isposinf", "isneginf", "signbit"))
    return c.pick((f"T.where(T.{test}({x}), {x}, 0.5)", f"T.where({x}.{test}(), 1.0, {x})"))


@spec("frexp", "frexp_mantissa frexp_exponent", law=True)
def _frexp(c: Builder, x: str) -> str:
    return c.pick((f"T.frexp({x}).mantissa", f"T.frexp({x})[0] * T.frexp({x}).exponent"))


@spec("div_rounding", "div_floor div_trunc floor_divide", law=True)
def _div_rounding(c: Builder, x: str) -> str | None:
    y = c.operand_or_number(x)
    mode = c.pick(("floor", "trunc"))
    # torch has no derivative for floor_divide (//): its operands are detached, as they must be in torch
    floored = f"T.floor_divide({x}.detach(), {y}.detach() if hasattr({y}, 'detach') else {y}) * {x}"
    return c.pick((f"T.div({x}, {y}, rounding_mode={mode!r})", floored))


@spec("float_power", "", law=True)
def _float_power(c: Builder, x: str) -> str:
    return f"T.float_power({x}, {c.pick((2, 0.5, -1, 3))})"


@spec("lerp", "", law=True)
def _lerp(c: Builder, x: str) -> str | None:
    y = c.broadcastable(x)
    if y is None:
        return None
    w = c.pick((0.5, 0.0, 1.0, 0.25)) if c.flag() else (c.broadcastable(x) or "0.5")
    return f"T.lerp({x}, {y}, {w})"


@spec("addcmul", "", law=True)
def _addcmul(c: Builder, x: str) -> str | None:
    y, z = c.broadcastable(x), c.broadcastable(x)
    if y is None or z is None:
        return None
    op = c.pick(("addcmul", "addcdiv"))
    return f"T.{op}({x}, {y}, {z}, value={c.pick((1, 0.5, -2.0))})"


@spec("clamp_tensor", "clamp_min clamp_max clamp_between", law=True)
def _clamp_tensor(c: Builder, x: str) -> str | None:
    lo, hi = c.broadcastable(x), c.broadcastable(x)
    if lo is None or hi is None:
        return None
    return c.pick(
        (
            f"T.clamp({x}, min={lo})",
            f"{x}.clamp(max={hi})",
            f"T.clamp({x}, {lo}, {hi})",
            f"T.clamp_min({x}, {lo})",
            f"T.clamp_max({x}, {hi})",
            f"{x}.clamp(min={lo}, max={hi})",
        )
    )


@spec("where_ne", "where ne", law=True)
def _where_ne(c: Builder, x: str) -> str:
    other = c.operand_or_number(x)
    return f"T.where(T.ne({x}, {other}), {x}, {c.operand_or_number(x)})"


@spec("isnan", "isnan where", law=True)
def _isnan(c: Builder, x: str) -> str:
    fill = repr(c.number(x))
    return c.pick((f"T.where(T.isnan({x}), {fill}, {x})", f"T.where({x}.isnan(), {x}, {fill})"))


@spec("logical", "logical_and logical_or logical_xor logical_not where gt lt", law=True)
def _logical(c: Builder, x: str) -> str:
    """Masks combined as torch code combines them: logical functions, and ``&``, ``|``, ``^``, ``~`` of booleans."""
    a, b = f"({x} > {c.operand_or_number(x)})", f"({x} < {c.operand_or_number(x)})"
    mask = c.pick((
        f"T.logical_and({a}, {b})", f"({a} | {b})", f"T.logical_xor({x}, {b})", f"~{a}", f"{a}.logical_not()",
        f"({a} & {b})", f"T.logical_or({x}, {b})", f"({a} ^ {b})", f"T.logical_not({x})",
    ))  # fmt: skip
    return f"T.where({mask}, {x}, {c.operand_or_number(x)})"


@spec("masked_fill", "where", law=True)
def _masked_fill(c: Builder, x: str) -> str:
    other = c.operand_or_number(x)
    return f"{x}.masked_fill({x} > {other}, {c.number(x)})"


# ── more reductions ──────────────────────────────────────────────────────────
@spec("prod", "prod", law=True)
def _prod(c: Builder, x: str) -> str:
    d = dim_of(c, x)
    if d is None or c.flag():
        return c.pick((f"{x}.prod()", f"T.prod({x})"))
    return c.pick((f"{x}.prod({d}, keepdim={c.flag()})", f"T.prod({x}, {d})"))


spec("cumprod", "cumprod", law=True)(lambda c, x: None if dim_of(c, x) is None else f"{x}.cumprod({dim_of(c, x)})")


@spec("pnorm", "pnorm", law=True)
def _pnorm(c: Builder, x: str) -> str:
    p = c.pick((3, 0.5, 1.5, 4))
    d = dims_arg(c, x)
    if d is None or d == "None":
        return c.pick((f"{x}.norm(p={p})", f"T.linalg.vector_norm({x}, ord={p})"))
    return c.pick((f"T.norm({x}, p={p}, dim={d}, keepdim={c.flag()})", f"T.linalg.vector_norm({x}, ord={p}, dim={d})"))


@spec("amin", "amax max_all neg", law=True)
def _amin(c: Builder, x: str) -> str:
    d = dim_of(c, x)
    if d is None or c.flag():
        return c.pick((f"{x}.amin()", f"T.min({x})", f"{x}.min()"))
    return c.pick((f"T.amin({x}, {d}, keepdim={c.flag()})", f"T.min({x}, {d}).values", f"{x}.min(dim={d})[0]"))


@spec("argmax", "argmax", law=True)
def _argmax(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    if d is None:
        return None
    which = c.pick(("argmax", "argmin"))
    return c.pick((f"{x} * T.{which}({x}, dim={d}, keepdim=True)", f"{x} * {x}.{which}({d}, keepdim=True)"))


@spec("var_mean", "var std welford_mean", law=True)
def _var_mean(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    if d is None:
        return None
    return f"T.{c.pick(('var_mean', 'std_mean'))}({x}, {d}, correction={c.pick((0, 1))})[{c.pick((0, 1))}]"


def distinct_along(value: torch.Tensor | None, dim: int) -> bool:
    if value is None:
        return True
    moved = value.movedim(dim, -1).reshape(-1, value.shape[dim]) if value.ndim else value.reshape(1, 1)
    return all(len(set(row.tolist())) == len(row) for row in moved)


@spec("topk", "take_at")
def _topk(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    if d is None or not distinct_along(c.value(x), d):  # at ties torch's choice of entry is unspecified
        return None
    k = c.pick(range(1, int(c.shape(x)[d]) + 1))
    return c.pick((f"T.topk({x}, {k}, dim={d}).values", f"{x}.topk({k}, {d}, largest=False)[0]"))


# ── more layout ──────────────────────────────────────────────────────────────
@spec("cat", "cat", law=True)
def _cat(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    d = c.pick(range(-len(shape), len(shape)))
    sizes = (K, N) if c.symbolic else (1, 2)
    options = tuple(tuple(s if i != d % len(shape) else size for i, s in enumerate(shape)) for size in sizes)
    y = c.partner(lambda s: len(s) == len(shape) and all(a == b for i, (a, b) in enumerate(zip(s, shape))
                                                         if i != d % len(shape)), shape, options)  # fmt: skip
    if y is None:
        return None
    return c.pick((f"T.cat([{x}, {y}], dim={d})", f"T.cat(({y}, {x}, {y}), {d})", f"T.concat([{x}, {y}], {d})"))


@spec("stack", "", law=True)
def _stack(c: Builder, x: str) -> str | None:
    y = c.same_shape(x)
    if y is None:
        return None
    nd = len(c.shape(x))
    return f"T.stack([{x}, {y}], dim={c.pick(range(-nd - 1, nd + 1))})"


@spec("narrow", "narrow")
def _narrow(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    d = c.pick(range(len(shape)))
    start = c.pick(range(int(shape[d])))
    length = c.pick(range(1, int(shape[d]) - start + 1))
    return c.pick((f"T.narrow({x}, {d}, {start}, {length})", f"{x}.narrow({d}, {start}, {length})"))


@spec("select", "", law=True)
def _select(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    return c.pick((f"T.select({x}, {c.pick(range(nd))}, 0)", f"{x}.select({c.pick(range(nd))}, -1)"))


@spec("squeeze", "", law=True)
def _squeeze(c: Builder, x: str) -> str:
    ones = [i for i, s in enumerate(c.shape(x)) if s == 1]
    return f"{x}.squeeze({c.pick(ones)})" if ones and c.flag() else f"T.squeeze({x})"


@spec("pad", "pad")
def _pad(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    if len(shape) in (2, 3) and c.flag():
        mode = c.pick(("replicate", "reflect", "circular"))
        size = int(shape[-1])
        widths = [w for w in range(0, 3) if mode == "replicate" or w < size]
        return f"{F_}.pad({x}, ({c.pick(widths)}, {c.pick(widths)}), mode={mode!r})"
    count = c.pick(range(1, len(shape) + 1))
    widths = tuple(c.pick((0, 1, 2, -1)) for _ in range(2 * count))
    return f"{F_}.pad({x}, {widths}, value={c.pick(POOL)})"


@spec("triangle", "tril triu", law=True)
def _triangle(c: Builder, x: str) -> str | None:
    if len(c.shape(x)) < 2:
        return None
    k = c.pick((0, 1, -1))
    return c.pick((f"{x}.tril({k})", f"T.triu({x}, {k})", f"T.tril({x})", f"{x}.triu()"))


@spec("diagonal", "diagonal", law=True)
def _diagonal(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd < 2:
        return None
    d1, d2 = c.draw(st.permutations(range(nd)))[:2]
    k = c.pick((0, 1, -1))
    return c.pick((f"{x}.diagonal({k}, {d1}, {d2})", f"T.diagonal({x}, offset={k}, dim1={d1}, dim2={d2})",
                   f"T.diag({x}, {k})" if nd == 2 else f"{x}.diagonal()"))  # fmt: skip


@spec("diag_vector", "diagonal_backward", law=True)
def _diag_vector(c: Builder, x: str) -> str | None:
    return c.pick((f"T.diag({x})", f"T.diag({x}, {c.pick((1, -1))})")) if len(c.shape(x)) == 1 else None


def index_literal(c: Builder, shape: tuple, high: int, unique_along: int | None = None) -> str:
    """Integer indices in [0, high) of ``shape``, as a literal (distinct along ``unique_along`` when asked)."""
    if unique_along is None:
        flat = c.draw(st.lists(st.integers(0, high - 1), min_size=numel(shape), max_size=numel(shape)))
        return f"T.tensor({nest(flat, shape)!r})"
    moved = [*(s for i, s in enumerate(shape) if i != unique_along), shape[unique_along]]
    rows = [c.draw(st.permutations(range(high)))[: shape[unique_along]] for _ in range(numel(moved[:-1]))]
    value = torch.tensor(rows).reshape(moved).movedim(-1, unique_along)
    return f"T.tensor({value.tolist()!r})"


@spec("gather", "gather")
def _gather(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    d = c.pick(range(len(shape)))
    index_shape = tuple(c.pick(range(1, int(s) + 1)) if i != d else c.pick((1, 2, 3)) for i, s in enumerate(shape))
    index = index_literal(c, index_shape, int(shape[d]))
    options = [f"T.gather({x}, {d}, {index})", f"{x}.gather({d}, {index})"]
    if index_shape == tuple(s if i != d else index_shape[d] for i, s in enumerate(shape)):
        options.append(f"T.take_along_dim({x}, {index}, dim={d})")
    return c.pick(options)


@spec("gather_argmax", "gather argmax")
def _gather_argmax(c: Builder, x: str) -> str | None:
    d = dim_of(c, x)
    return None if d is None else f"T.gather({x}, {d}, {x}.argmax({d}, keepdim=True))"


@spec("index_select", "")
def _index_select(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    d = c.pick(range(len(shape)))
    index = index_literal(c, (c.pick((1, 2, 3)),), int(shape[d]))
    return f"T.index_select({x}, {d}, {index})"


@spec("scatter", "scatter scatter_add")
def _scatter(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    d = c.pick(range(len(shape)))
    add = c.flag()
    index_shape = tuple(c.pick(range(1, int(s) + 1)) for s in shape)
    index = index_literal(c, index_shape, int(shape[d]), None if add else d)
    if not add and c.flag():
        return f"{x}.scatter({d}, {index}, {c.number(x)})"
    src = c.partner(lambda s: s == index_shape, index_shape)
    if src is None:
        return None
    return f"T.scatter_add({x}, {d}, {index}, {src})" if add else f"T.scatter({x}, {d}, {index}, {src})"


@spec("embedding", "stop_gradient")
def _embedding(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    index = index_literal(c, (c.pick((1, 2, 3)),), int(shape[0]))
    return f"{F_}.embedding({index}, {x}, padding_idx={c.pick(range(int(shape[0])))})"


# ── more products and linalg ─────────────────────────────────────────────────
@spec("einsum_n", "einsum1 einsum3 einsum4 einsum5 einsum6 einsum7 einsum8")
def _einsum_n(c: Builder, x: str) -> str | None:
    """1 to 8 operands (earlier nodes reused), letters shared where sizes agree: each operand's first dim shares
    a letter when one of its size exists, so that the operands are connected (symgrad factors an einsum of
    unconnected groups into einsums of each group)."""
    count = c.pick((1, 3, 4, 5, 6, 7, 8))
    small = [v for v in c.order if numel(c.shape(v)) <= 4 and len(c.shape(v)) <= 2]
    if count > 1 and not small:
        return None
    operands = [x] + [c.pick(small) for _ in range(count - 1)]
    if numel(c.shape(x)) > 12:
        return None
    letters, size_of, terms = iter("abcdefghijklmnop"), {}, []
    for v in operands:
        term = ""
        for position, size in enumerate(c.shape(v)):
            shared = [k for k, s in size_of.items() if s == size and k not in term]
            if shared and (position == 0 or c.flag()):
                term += c.pick(shared)
            else:
                letter = next(letters)
                size_of[letter] = size
                term += letter
        terms.append(term)
    used = sorted(size_of)
    out = "".join(c.draw(st.lists(st.sampled_from(used), unique=True, max_size=min(3, len(used))))) if used else ""
    return f"T.einsum({','.join(terms) + '->' + out!r}, {', '.join(operands)})"


@spec("outer_op", "outer", law=True)
def _outer_op(c: Builder, x: str) -> str | None:
    if len(c.shape(x)) != 1:
        return None
    y = c.partner(lambda s: len(s) == 1, c.shape(x))
    return None if y is None else f"T.outer({y}, {x})"


@spec("mv", "", law=True)
def _mv(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 2:
        return None
    y = c.partner(lambda s: s == (shape[1],), shape, ((shape[1],),))
    return None if y is None else c.pick((f"T.mv({x}, {y})", f"{x}.mv({y})"))


@spec("tensordot", "")
def _tensordot(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    y = c.partner(lambda s: bool(s) and s[0] == shape[-1], shape, ((shape[-1],), (shape[-1], 2)))
    return None if y is None else f"T.tensordot({x}, {y}, dims=1)"


@spec("cholesky", "cholesky")
def _cholesky(c: Builder, x: str) -> str | None:
    a = square_operand(c, x, singular_ok=True)
    if a is None:
        return None
    c.linalg += 1
    n = int(c.shape(a)[0])
    code = f"T.linalg.cholesky({a} @ {a}.mT + T.eye({n}, dtype=T.float64))"
    return code if a == x else f"{x} * {code}.sum()"


@spec("solve", "")
def _solve(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape or len(shape) > 2:
        return None
    n = int(shape[0])
    p = c.partner(lambda s: s == (n, n) and (c.symbolic or True), shape, ((n, n),))
    if p is None or not linalg_ready(c.env[p], False) or c.linalg >= MAX_LINALG:
        return None
    c.linalg += 1
    return f"T.linalg.solve({p}, {x})"


# ── more nn ──────────────────────────────────────────────────────────────────
@spec("cosine_similarity", "clamp_min_nograd")
def _cosine_similarity(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if not shape:
        return None
    y = c.same_shape(x)
    if y is None:
        return None
    return f"{F_}.cosine_similarity({x}, {y}, dim={c.pick(range(-len(shape), len(shape)))})"


@spec("normalize", "", law=True)
def _normalize(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    return f"{F_}.normalize({x}, p={c.pick((2.0, 1.0))}, dim={c.pick(range(-nd, nd))})"


@spec("rms_norm", "", law=True)
def _rms_norm(c: Builder, x: str) -> str | None:
    nd = len(c.shape(x))
    if nd == 0:
        return None
    return f"{F_}.rms_norm({x}, {x}.shape[-1:], eps=1e-6)"


@spec("attention", "")
def _attention(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) < 2:
        return None
    k = c.partner(lambda s: len(s) == len(shape) and s[-1] == shape[-1] and s[:-2] == shape[:-2], shape)
    if k is None:
        return None
    v = c.partner(lambda s: len(s) == len(shape) and s[-2] == c.shape(k)[-2] and s[:-2] == shape[:-2], shape)
    if v is None:
        return None
    return f"{F_}.scaled_dot_product_attention({x}, {k}, {v}, is_causal={c.flag()})"


@spec("pool1d", "")
def _pool1d(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) not in (2, 3) or int(shape[-1]) < 2:
        return None
    return c.pick((f"{F_}.avg_pool1d({x}, 2)", f"{F_}.max_pool1d({x}, 2, stride=1)",
                   f"{F_}.adaptive_avg_pool1d({x}, 1)"))  # fmt: skip


def _concrete(d: Any) -> bool:
    return isinstance(d, int) or bool(getattr(d, "is_Integer", False))


@spec("max_pool2d", "max_pool", law=True)
def _max_pool2d(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) not in (3, 4) or not all(_concrete(d) and int(d) >= 2 for d in shape[-2:]):
        return None
    stride, padding = c.pick((1, 2)), c.pick((0, 1))
    return f"{F_}.max_pool2d({x}, 2, stride={stride}, padding={padding}, ceil_mode={c.flag()})"


@spec("batch_norm", "batch_norm", law=True)
def _batch_norm(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) < 2 or not all(map(_concrete, shape)) or math.prod(int(d) for d in shape) // int(shape[1]) < 2:
        return None
    return f"{F_}.batch_norm({x}, None, None, training=True)"


@spec("conv1d", "convolution")
def _conv1d(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 3:
        return None
    w = c.partner(lambda s: len(s) == 3 and s[1] == shape[1] and s[2] <= shape[2], shape, ((2, shape[1], 1),))
    return None if w is None else f"{F_}.conv1d({x}, {w}, padding={c.pick((0, 1))})"


@spec("conv_transpose1d", "convolution_input_grad")
def _conv_transpose1d(c: Builder, x: str) -> str | None:
    shape = c.shape(x)
    if len(shape) != 3:
        return None
    w = c.partner(lambda s: len(s) == 3 and s[0] == shape[1], shape, ((shape[1], 2, 2),))
    if w is None:
        return None
    return f"{F_}.conv_transpose1d({x}, {w}, stride={c.pick((1, 2))}, padding={c.pick((0, 1))})"


# Ops of sg.core.OPS no spec reaches, and why.
INTEGER_FUNCTIONS = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                     "bitwise_right_shift", "gcd", "lcm")  # fmt: skip
UNREACHABLE = {
    "frexp_step": "internal: 2^exponent in float32, in the VJP of frexp's mantissa; fuzzed through the frexp spec's "
    "laws",
    "logit_derivative": "internal: logit's derivative (nan outside [0, 1], as torch's); fuzzed through the logit "
    "spec's laws",
    **{
        name: "an integer function (no gradient): exact against torch in tests/ops/test_math_functions.py "
        "(test_integer_functions_match_torch); the fuzz's leaves are floating"
        for name in INTEGER_FUNCTIONS
    },
    "batch_norm_affine": "reached from BatchNorm modules (weight and bias are parameters): "
    "tests/ops/test_batch_norm.py "
    "and the ModuleInfo samples; the spec's batch_norm is the same law without them",
    "batch_norm_mean": "internal: batch norm's saved mean, which emitted code takes from native_batch_norm",
    "batch_norm_invstd": "internal: batch norm's saved 1/std, which emitted code takes from native_batch_norm",
    "batch_norm_backward": "internal: the VJP of batch_norm; fuzzed through the batch_norm spec's laws",
    "batch_norm_affine_backward": "internal: the VJP of batch_norm_affine in its input",
    "batch_norm_weight_grad": "internal: the VJP of batch_norm_affine in its weight",
    "batch_norm_bias_grad": "internal: the VJP of batch_norm_affine in its bias",
    "max_pool_indices": "internal: max_pool's indices (return_indices), which its VJP reads",
    "max_pool_backward": "internal: the VJP of max_pool; fuzzed through the max_pool2d spec's laws",
    "max_pool_gather": "internal: the VJP of max_pool_backward, reached by second-order laws",
    "layer_norm_backward": "internal: the VJP of layer_norm (torch's native_layer_norm_backward); fuzzed through "
    "the layer_norm spec's laws",
    "layer_norm_affine": "reached from LayerNorm modules and F.layer_norm with weight and bias: tests/ops/"
    "test_layer_norm.py, the ModuleInfo samples and the public models; the spec's layer_norm is the same law "
    "without them",
    "layer_norm_mean": "internal: layer norm's saved mean, which emitted code takes from native_layer_norm",
    "layer_norm_rstd": "internal: layer norm's saved 1/std, which emitted code takes from native_layer_norm",
    "layer_norm_affine_backward": "internal: the VJP of layer_norm_affine in its input",
    "layer_norm_weight_grad": "internal: the VJP of layer_norm_affine in its weight",
    "layer_norm_bias_grad": "internal: the VJP of layer_norm_affine in its bias",
    "gelu_derivative": "internal: the VJP of gelu (GELU'(x), which emitted code runs as gelu_backward); fuzzed "
    "through the gelu spec's laws",
    "gelu_tanh_derivative": "internal: the VJP of gelu with approximate='tanh'; fuzzed through the gelu spec's laws",
    "convolution_weight_grad": "internal: the VJP of a convolution in its kernel; fuzzed through the laws of the "
    "conv1d and conv_transpose1d specs",
    "to_like": "internal: the VJP of a dtype conversion (back to the input's dtype at run time); fuzzed through "
    "the to_float spec",
    "dropout_noise": "random: torch draws it from its own generator state; tests/emit/test_drop_in.py compares seeded "
    "runs through symgrad.torch, sg.trace and emitted modules",
    "index_backward": "internal: the VJP of index (scatters a gradient back into the indexed shape)",
    "first_max_mask": "internal: the VJP of max(dim) (the mask of the first maximal entry)",
    "step": "internal: derivatives of relu/maximum/clamp/abs (a Heaviside step with a value at 0)",
    "masked_div": "internal: VJPs of div and norm (0 where the divisor's gradient is 0, as torch)",
    "eye": "internal: the VJP of trace and the simplifier's identity matrices",
    "full": "internal: the simplifier's constant tensors (zeros of unreached inputs); full_like is a constant",
    "cumprod_grad": "internal: the VJP of cumprod",
    "prod_others": "internal: the VJP of prod (the product of the other entries, exact at zeros)",
    "put_at": "internal: the VJP of take_at (topk)",
    "softmax_backward": "internal: the VJP of softmax (torch's _softmax_backward_data); fuzzed through the softmax "
    "spec's laws, whose second order reaches its own VJP",
    "log_softmax_backward": "internal: the VJP of log_softmax (torch's _log_softmax_backward_data); fuzzed through "
    "the log_softmax spec's laws",
    **{
        name: "random: a draw from torch's generator (randn_like, bernoulli_, ...); tests/torch/test_model_stages.py "
        "compares seeded runs of traced models, emitted modules and their training steps with torch's"
        for name in sg.core.OPS
        if name.startswith("draw_")
    },
    "empty": "memory to fill (torch.empty): reading it is refused, and what fills it is fuzzed as itself",
    "empty_new": "memory to fill (x.new_empty): reading it is refused, and what fills it is fuzzed as itself",
    "lse_softmax": "internal: the VJP of logsumexp (the softmax as torch's logsumexp backward computes it)",
    "cross_entropy_grad": "internal: emitted code's backward of cross_entropy (emit/kernels.py); fuzzed through the "
    "emitted modules of the cross_entropy spec",
    "nll_total_weight": "internal: the total weight emitted cross_entropy's forward keeps for its backward "
    "(emit/kernels.py); fuzzed through the emitted modules of the cross_entropy spec",
}


# ── cases (concrete shapes and values) ───────────────────────────────────────
@dataclass
class Case:
    """A graph over float64 leaves with values, a grad_output, and its code."""

    leaves: list[str]
    values: dict[str, list[float]]
    shapes: dict[str, tuple]
    lines: list[tuple[str, str, str]]
    out: str
    v: list[float]

    @property
    def specs(self) -> list[str]:
        return [s for _, _, s in self.lines]

    @property
    def uses_f(self) -> bool:
        return any("f(T, " in code for _, code, _ in self.lines)

    def build_source(self) -> str:
        body = [f"    {var} = {code}" for var, code, _ in self.lines] or [f"    {self.out} = {self.out}"]
        return "\n".join([f"def build(T, {', '.join(self.leaves)}):", *body, f"    return {self.out}"])

    def literals(self) -> list[str]:
        return [f"{name} = {nest(self.values[name], self.shapes[name])!r}" for name in self.leaves]

    def grad_literal(self) -> Any:
        return nest(self.v, self.shapes[self.out])

    @property
    def code(self) -> str:
        """A script that runs the case in both namespaces and prints both answers."""
        names = ", ".join(self.leaves)
        return "\n".join(
            [
                "import torch",
                "import symgrad as sg",
                "import symgrad.torch as storch",
                *([USER_F_SOURCE] if self.uses_f else []),
                "",
                self.build_source(),
                "",
                *self.literals(),
                f"v = {self.grad_literal()!r}",
                f"ours = [storch.tensor(x, dtype=storch.float64, requires_grad=True, name=name) for x, name in "
                f"zip([{names}], {self.leaves!r})]",
                "out = build(storch, *ours)",
                'print("symgrad:", out.tolist(), [g.tolist() for g in sg.vjp(out, ours, v)])',
                f"ref = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in [{names}]]",
                "res = build(torch, *ref)",
                "grads = torch.autograd.grad(res, ref, torch.tensor(v, dtype=torch.float64), allow_unused=True)",
                'print("torch:  ", res.tolist(), [None if g is None else g.tolist() for g in grads])',
            ]
        )

    def __repr__(self) -> str:
        return "\n" + self.code + "\n"

    def trace(self) -> Trace | None:
        leaves = {n: torch.tensor(nest(self.values[n], self.shapes[n]), dtype=F64) for n in self.leaves}
        return trace_torch(self.lines, leaves, self.v)


def draw_steps(c: Builder, steps: int, first: str | None = None) -> None:
    names = sorted(SPECS) if c.symbolic is False else sorted(n for n, s in SPECS.items() if s.law)
    for i in range(steps):
        for _attempt in range(4):
            name = first if (i == 0 and first is not None) else c.pick(names)
            x = c.newest
            code = SPECS[name].make(c, x)
            if code is not None and c.add(code, name) is not None:
                break


@st.composite
def cases(draw: st.DrawFn, first: str | None = None, max_ops: int = 5) -> Case:
    c = Builder(draw)
    c.leaf(draw(st.sampled_from(CONCRETE_SHAPES)))
    draw_steps(c, draw(st.integers(1, max_ops)), first)
    out = c.newest
    return Case(
        leaves=list(c.leaves),
        values=dict(c.leaf_values),
        shapes=dict(c.shapes),
        lines=list(c.lines),
        out=out,
        v=grad_values(draw, c.shapes[out]),
    )


# ── comparison ───────────────────────────────────────────────────────────────
@dataclass
class Differences:
    """Where symgrad's numbers differ from torch's: a message, and whether every differing entry involves a nan
    or an infinity (on either side) — the known bugs are all of that kind."""

    messages: list[str] = field(default_factory=list)
    nonfinite_only: bool = True
    forward: bool = False

    def __bool__(self) -> bool:
        return bool(self.messages)


def compare(ours: Any, theirs: torch.Tensor, what: str, into: Differences) -> None:
    """Add to ``into`` unless symgrad's numbers equal torch's (nan == nan, equal infinities, rtol = atol = 1e-7)."""
    try:
        a = torch.tensor(ours, dtype=F64)
    except Exception as error:
        a, problem = None, f"{type(error).__name__}: {error}"
    else:
        problem = f"shape {tuple(a.shape)}"
    if a is None or a.shape != theirs.shape:  # exact shapes: a reshape would hide a transposed result
        into.messages.append(f"{what}: symgrad gave {ours!r} ({problem}), torch one of shape {tuple(theirs.shape)}")
        into.nonfinite_only = False
        into.forward = into.forward or what == "forward"
        return
    b = theirs.detach().to(F64)
    nan_a, nan_b = a.isnan(), b.isnan()
    inf_a, inf_b = a.isinf(), b.isinf()
    finite = ~(nan_a | nan_b | inf_a | inf_b)
    close = (a - b).abs() <= ATOL + RTOL * b.abs()
    bad = (nan_a != nan_b) | (inf_a | inf_b) & (a != b) | finite & ~close
    if bool(bad.any()):
        into.messages.append(f"{what}: symgrad {a.tolist()} vs torch {b.tolist()}")
        into.nonfinite_only = into.nonfinite_only and not bool((bad & finite).any())
        into.forward = into.forward or what == "forward"


@dataclass
class Outcome:
    kind: str  # ok, refusal, torch_error, mismatch, exception, timeout, known
    detail: str = ""
    warnings: list[str] = field(default_factory=list)
    differences: Differences | None = None
    known: str = ""  # the KNOWN_BUGS entry it matches

    @property
    def failed(self) -> bool:
        """A mismatch, an exception or a timeout (more than CASE_SECONDS on graphs this small is itself a bug)."""
        return self.kind in ("mismatch", "exception", "timeout")


class CaseTimeoutError(Exception):
    """symgrad took more than CASE_SECONDS of CPU time on one case."""


STRICT = os.environ.get("SYMGRAD_FUZZ_STRICT", "") not in ("", "0")
CASE_SECONDS = float(os.environ.get("SYMGRAD_FUZZ_CASE_SECONDS", "10"))
REFIRE_SECONDS = 0.25  # after the limit, the timer fires again every REFIRE_SECONDS of CPU time until cleared


@dataclass
class Limit:
    active: bool = True
    fired: int = 0


@contextlib.contextmanager
def cpu_limit(seconds: float):
    """Raise CaseTimeoutError in this (main) thread after ``seconds`` of CPU time; a no-op elsewhere.

    The timer repeats: code that swallows the first CaseTimeoutError (SymPy catches broad exceptions in places)
    gets another one every REFIRE_SECONDS of CPU time. If the block then returns, or raises something else, after
    the limit fired, the block raises CaseTimeoutError anyway: its result is not to be trusted."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGVTALRM"):
        yield
        return
    limit = Limit()

    def expire(signum: int, frame: Any) -> None:
        if frame is not None and frame.f_code.co_name == "gc_callback":
            return  # raised in a gc callback, it would be dropped (and fail the test); the timer fires again
        if limit.active:
            limit.fired += 1
            raise CaseTimeoutError(f"more than {seconds:g} s of CPU time")

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds, REFIRE_SECONDS)
    try:
        yield
    except CaseTimeoutError:
        raise
    except BaseException as error:
        if limit.fired:
            raise CaseTimeoutError(f"more than {seconds:g} s of CPU time (then {type(error).__name__})") from error
        raise
    finally:
        while True:  # a signal may still arrive while clearing: clear again until it sticks
            try:
                limit.active = False
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
                signal.signal(signal.SIGVTALRM, previous)
                break
            except CaseTimeoutError:
                continue
    if limit.fired:
        raise CaseTimeoutError(f"more than {seconds:g} s of CPU time (the timeout was caught {limit.fired} times)")


def symgrad_failure(error: BaseException) -> Outcome:
    if isinstance(error, CaseTimeoutError):
        return Outcome("timeout", str(error))
    # torch's own errors raised where torch raised none, and bugs caught in symgrad's last line of defence, are failures
    unexpected = isinstance(error, (sg.TorchError, sg.InternalError))
    if (
        isinstance(error, sg.SymgradError)
        and not unexpected
        and "the emitted module is not valid Python" not in str(error)
    ):
        return Outcome("refusal", f"{type(error).__name__}: {error}")  # the other is a bug of the emitter
    return Outcome("exception", "".join(traceback.format_exception(error, limit=-4)))


def torch_reference(case: Case) -> tuple[torch.Tensor, list[torch.Tensor]] | str:
    env: dict[str, Any] = {"f": f}
    exec(case.build_source(), env)
    leaves = [torch.tensor(nest(case.values[n], case.shapes[n]), dtype=F64, requires_grad=True) for n in case.leaves]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = env["build"](torch, *leaves)
            v = torch.tensor(case.grad_literal(), dtype=F64).reshape(out.shape)
            if out.requires_grad:
                grads = torch.autograd.grad(out, leaves, v, allow_unused=True)
            else:
                grads = [None] * len(leaves)
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return out.detach(), [torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]


def run_case(case: Case) -> Outcome:
    """The case in torch and in symgrad (forward and vjp), compared; failures matched against KNOWN_BUGS."""
    reference = torch_reference(case)
    if isinstance(reference, str):
        return Outcome("torch_error", reference)
    expected_out, expected_grads = reference
    env: dict[str, Any] = {"f": f}
    exec(case.build_source(), env)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with cpu_limit(CASE_SECONDS):
                ours = [
                    storch.tensor(nest(case.values[n], case.shapes[n]), dtype=storch.float64, requires_grad=True,
                                  name=n)
                    for n in case.leaves
                ]  # fmt: skip
                out = env["build"](storch, *ours)
                forward = out.tolist()
                grads = [g.tolist() for g in sg.vjp(out, ours, case.grad_literal())]
        except Exception as error:
            return classify(symgrad_failure(error), case.lines, case.trace)
    seen = [f"{w.category.__name__}: {w.message}" for w in caught]
    differences = Differences()
    compare(forward, expected_out, "forward", differences)
    for n, g, e in zip(case.leaves, grads, expected_grads):
        compare(g, e, f"vjp wrt {n}", differences)
    if differences:
        outcome = Outcome("mismatch", "\n".join(differences.messages), seen, differences)
        return classify(outcome, case.lines, case.trace)
    return Outcome("ok", "", seen)


# ── known bugs: a failure that matches one is counted as known, not failed ──
@dataclass
class Trace:
    """torch's value and gradient of every node of a case (the gradient None where none flows)."""

    values: dict[str, torch.Tensor]
    grads: dict[str, torch.Tensor | None]


def trace_torch(lines: list[tuple[str, str, str]], leaves: dict[str, torch.Tensor], v: list[float]) -> Trace | None:
    env: dict[str, Any] = {"T": torch, "f": f}
    made = {name: value.detach().clone().requires_grad_() for name, value in leaves.items()}
    env.update(made)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for var, code, _ in lines:
                env[var] = eval(code, env)
                if env[var].requires_grad:
                    env[var].retain_grad()
            out = env[lines[-1][0]] if lines else next(iter(made.values()))
            if out.requires_grad:
                out.backward(torch.tensor(v, dtype=F64).reshape(out.shape))
    except Exception:
        return None
    names = [*made, *(var for var, _, _ in lines)]
    return Trace({n: env[n].detach() for n in names}, {n: env[n].grad for n in names})


@dataclass(frozen=True)
class KnownBug:
    """A symgrad bug the fuzzer found (not fixed here): ``applies`` says whether a case's torch trace shows the
    bug's condition; a mismatch matches only if every differing entry is a nan or an infinity (on either side),
    unless the bug is ``finite``."""

    name: str
    repro: str
    applies: Callable[[list, Trace], bool]
    kinds: tuple[str, ...] = ("mismatch",)
    message: str = ""  # for exceptions: text the error must contain
    finite: bool = False  # whether a finite symgrad value may differ from a finite torch value
    emitted_only: bool = False  # a bug of emitted modules only (sg.vjp has it right)


KNOWN_BUGS: list[KnownBug] = []  # none open: the last, emitted laws simplified at singular points, is fixed


def classify(outcome: Outcome, lines: list, trace: Callable[[], Trace | None], *, emitted: bool = False) -> Outcome:
    """The outcome, as ``known`` when it matches an entry of KNOWN_BUGS (never with SYMGRAD_FUZZ_STRICT=1)."""
    if STRICT or outcome.kind not in ("mismatch", "exception", "timeout"):
        return outcome
    finite = outcome.kind == "mismatch" and outcome.differences is not None and not outcome.differences.nonfinite_only
    found = trace()
    if found is None:
        return outcome
    for bug in KNOWN_BUGS:
        if outcome.kind not in bug.kinds or bug.message not in outcome.detail or (finite and not bug.finite):
            continue
        if bug.emitted_only and not emitted:
            continue
        if outcome.kind == "exception" and not bug.message and "RecursionError" not in outcome.detail:
            continue
        if bug.applies(lines, found):
            return dataclasses.replace(outcome, kind="known", known=bug.name)
    return outcome


# ── programs with symbolic shapes, emitted with sg.compile ──────────────────
@dataclass
class Program:
    """A graph over leaves of symbolic shapes, built by ``build(T, ...)``, emitted and run at concrete sizes."""

    leaves: list[str]
    shapes: dict[str, tuple]
    lines: list[tuple[str, str, str]]
    out: str
    wrt: list[str]
    linalg_leaves: dict[str, bool]

    @property
    def specs(self) -> list[str]:
        return [s for _, _, s in self.lines]

    @property
    def uses_f(self) -> bool:
        return any("f(T, " in code for _, code, _ in self.lines)

    def build_source(self) -> str:
        body = [f"    {var} = {code}" for var, code, _ in self.lines]
        return "\n".join([f"def build(T, {', '.join(self.leaves)}):", *body, f"    return {self.out}"])

    def symbolic_graph(self) -> tuple[Any, list[Any], list[Any]]:
        env: dict[str, Any] = {"f": f}
        exec(self.build_source(), env)
        leaves = [sg.symbols(n, self.shapes[n], requires_grad=True) for n in self.leaves]
        out = env["build"](storch, *leaves)
        return out, [leaves[self.leaves.index(w)] for w in self.wrt], leaves

    def shape_text(self, name: str) -> str:
        shape = self.shapes[name]
        return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"

    def code(self, sizes: dict[str, int] | None = None, values: dict[str, Any] | None = None,
             v: Any = None) -> str:  # fmt: skip
        """A script that emits the module and compares it with torch.autograd at the given sizes and values."""
        lines = [
            "import torch",
            "import symgrad as sg",
            "import symgrad.torch as storch",
            *([USER_F_SOURCE] if self.uses_f else []),
            "",
            self.build_source(),
            "",
            'k, n, m = sg.dims("k n m")',
            *[f"S{name} = sg.symbols({name!r}, {self.shape_text(name)}, requires_grad=True)" for name in self.leaves],
            f"out = build(storch, {', '.join('S' + n for n in self.leaves)})",
            f"module = sg.compile(out, [{', '.join('S' + n for n in self.wrt)}], "
            f"inputs=[{', '.join('S' + n for n in self.leaves)}], style='autograd_function', name='Fuzz')",
        ]
        if sizes is not None and values is not None:
            lines += [f"# sizes: {sizes}"]
            lines += [f"{name} = torch.tensor({values[name]!r}, dtype=torch.float64)" for name in self.leaves]
            lines += [
                f"v = torch.tensor({v!r}, dtype=torch.float64)",
                f"ref = [x.clone().requires_grad_() for x in [{', '.join(self.leaves)}]]",
                "res = build(torch, *ref)",
                f"wrt = [ref[i] for i in {[self.leaves.index(w) for w in self.wrt]}]",
                "print('torch:  ', res.tolist(), [None if g is None else g.tolist() for g in "
                "torch.autograd.grad(res, wrt, v, allow_unused=True)])",
                f"print('emitted:', module.forward({', '.join(self.leaves)}).tolist(), "
                f"[g.tolist() for g in module.vjp({', '.join(self.leaves)}, v)])",
            ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return "\n" + self.code() + "\n"


@st.composite
def programs(draw: st.DrawFn, max_ops: int = 4) -> Program:
    c = Builder(draw, symbolic=True)
    c.leaf(draw(st.sampled_from(SYMBOLIC_SHAPES)))
    draw_steps(c, draw(st.integers(1, max_ops)))
    wrt = draw(st.lists(st.sampled_from(c.leaves), min_size=1, max_size=len(c.leaves), unique=True))
    return Program(list(c.leaves), dict(c.shapes), list(c.lines), c.newest, sorted(wrt), dict(c.linalg_leaves))


def instantiate(shape: tuple, sizes: dict[str, int]) -> tuple:
    """Concrete sizes of a shape whose entries are ints, dims, or expressions of dims (``2*n`` after a cat)."""
    symbols = {name: sympy.Symbol(name) for name in sizes}
    return tuple(
        int(d) if isinstance(d, int) else int(sympy.sympify(str(d), locals=symbols).subs(sizes)) for d in shape
    )


# ── tallies ──────────────────────────────────────────────────────────────────
@dataclass
class Tally:
    """What a property saw: outcome counts, refusal messages, and every failure with its repro."""

    counts: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    warnings: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, detail, repro)
    spec_counts: Counter = field(default_factory=Counter)
    known: Counter = field(default_factory=Counter)
    known_examples: dict[str, tuple[str, str]] = field(default_factory=dict)
    timeouts: list[str] = field(default_factory=list)

    def record(self, outcome: Outcome, repro: str, specs: list[str]) -> None:
        self.counts[outcome.kind] += 1
        self.counts["cases"] += 1
        self.spec_counts.update(specs)
        for w in outcome.warnings:
            self.warnings[w[:120]] += 1
        if outcome.kind == "refusal":
            self.refusals[outcome.detail.splitlines()[0][:100]] += 1
        if outcome.kind == "known":
            self.known[outcome.known] += 1
            self.known_examples.setdefault(outcome.known, (outcome.detail, repro))
        if outcome.kind == "timeout":
            self.timeouts.append(repro)
        if outcome.failed:
            self.failures.append((outcome.kind, outcome.detail, repro))

    def summary(self, title: str) -> str:
        keys = ("cases", "ok", "refusal", "torch_error", "mismatch", "exception", "known", "timeout")
        lines = [f"{title}: " + ", ".join(f"{k} {self.counts[k]}" for k in keys)]
        extra = sorted(set(self.counts) - set(keys))
        if extra:
            lines.append("  also: " + ", ".join(f"{k} {self.counts[k]}" for k in extra))
        lines += [f"  refusal x{n}: {text}" for text, n in self.refusals.most_common(8)]
        lines += [f"  known bug x{n}: {text}" for text, n in self.known.most_common()]
        lines += [f"  warning x{n}: {text}" for text, n in self.warnings.most_common(5)]
        return "\n".join(lines)


def all_spec_names() -> list[str]:
    return sorted(SPECS)


def spec_ops() -> set[str]:
    return set(itertools.chain.from_iterable(s.ops for s in SPECS.values()))


# ── running a program: emitted module vs torch.autograd ─────────────────────
GENERIC_RANGES = ((0.3, 1.5), (0.1, 0.9), (-1.5, -0.3), (-0.9, 0.9))  # tried in turn until torch's output is finite


@dataclass
class Emitted:
    module: Any = None
    outcome: Outcome | None = None  # set when emitting failed


def emit(program: Program) -> Emitted:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            with cpu_limit(CASE_SECONDS):
                out, wrt, leaves = program.symbolic_graph()
                module = sg.compile(out, wrt, inputs=leaves, style="autograd_function", name="Fuzz")
        except Exception as error:
            outcome = symgrad_failure(error)
            return Emitted(outcome=classify(outcome, program.lines, lambda: Trace({}, {}), emitted=True))
    return Emitted(module)


def program_values(draw: st.DrawFn, program: Program, sizes: dict[str, int]) -> dict[str, Any]:
    """Special values for each leaf at the concrete sizes (leaves of det/inv/...: singular or well conditioned)."""
    values = {}
    for name in program.leaves:
        shape = instantiate(program.shapes[name], sizes)
        if name in program.linalg_leaves:
            singular_ok = program.linalg_leaves[name]
            flat = leaf_values(draw, shape, draw(st.sampled_from(("conditioned", "singular"))))
            if not linalg_ready(torch.tensor(nest(flat, shape), dtype=F64), singular_ok):
                flat = leaf_values(draw, shape, "conditioned")
        else:
            flat = leaf_values(draw, shape)
        values[name] = nest(flat, shape)
    return values


def build_torch(program: Program) -> Callable[..., Any]:
    env: dict[str, Any] = {"f": f}
    exec(program.build_source(), env)
    return env["build"]


def run_program_at(program: Program, module: Any, values: dict[str, Any], v_flat: list[float]) -> Outcome:
    """forward, vjp and the autograd.Function's backward of the emitted module vs torch.autograd at ``values``."""
    build = build_torch(program)
    plain = [torch.tensor(values[n], dtype=F64) for n in program.leaves]
    ref = [x.clone().requires_grad_() for x in plain]
    wrt_index = [program.leaves.index(w) for w in program.wrt]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = build(torch, *ref)
            v = torch.tensor(v_flat, dtype=F64).reshape(res.shape)
            wrt = [ref[i] for i in wrt_index]
            grads = torch.autograd.grad(res, wrt, v, allow_unused=True) if res.requires_grad else [None] * len(wrt)
    except Exception as error:
        return Outcome("torch_error", f"{type(error).__name__}: {error}")
    expected = [torch.zeros_like(w) if g is None else g for w, g in zip(wrt, grads)]

    def trace() -> Trace | None:
        return trace_torch(program.lines, dict(zip(program.leaves, plain)), v_flat)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            forward = module.forward(*plain)
            ours = module.vjp(*plain, v)
            trial = [x.clone().requires_grad_(i in wrt_index) for i, x in enumerate(plain)]
            applied = module.apply(*trial)
            through = torch.autograd.grad(applied, [trial[i] for i in wrt_index], v, allow_unused=True)
    except Exception as error:
        return classify(Outcome("exception", "".join(traceback.format_exception(error, limit=-4))),
                        program.lines, trace, emitted=True)  # fmt: skip
    differences = Differences()
    compare(forward.tolist(), res, "forward", differences)
    compare(applied.tolist(), res, "forward", differences)
    for name, g, a, e in zip(program.wrt, ours, through, expected):
        if not isinstance(g, torch.Tensor) or g.dtype != e.dtype or tuple(g.shape) != tuple(e.shape):
            got = f"{type(g).__name__} {getattr(g, 'dtype', '')} {tuple(getattr(g, 'shape', ()))}"
            differences.messages.append(f"vjp wrt {name}: {got}, torch {e.dtype} {tuple(e.shape)}")
            differences.nonfinite_only = False
        compare(g.tolist(), e, f"vjp wrt {name}", differences)
        compare(torch.zeros_like(e).tolist() if a is None else a.tolist(), e, f"backward wrt {name}", differences)
    if differences:
        outcome = Outcome("mismatch", "\n".join(differences.messages), [], differences)
        return classify(outcome, program.lines, trace, emitted=True)
    return Outcome("ok")


def gradcheck_program(program: Program, module: Any, sizes: dict[str, int], seed: int) -> Outcome | None:
    """torch.autograd.gradcheck of the emitted autograd.Function at generic (continuous random) values;
    None when no range gives a finite output."""
    import random

    rng = random.Random(seed)
    build = build_torch(program)
    wrt_index = [program.leaves.index(w) for w in program.wrt]
    for low, high in GENERIC_RANGES:
        args = []
        for name in program.leaves:
            shape = instantiate(program.shapes[name], sizes)
            x = torch.tensor([rng.uniform(low, high) for _ in range(numel(shape))], dtype=F64).reshape(shape)
            if name in program.linalg_leaves:
                x = x + 5 * torch.eye(shape[0], dtype=F64)
            args.append(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = build(torch, *args)
            except Exception:
                return None
        if bool(torch.isfinite(res).all()):
            break
    else:
        return None
    trial = [x.clone().requires_grad_(i in wrt_index) for i, x in enumerate(args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = [x.clone().requires_grad_(i in wrt_index) for i, x in enumerate(args)]
        try:  # where torch's own autograd fails gradcheck (a kink, 0/0), the point says nothing about symgrad
            torch_ok = torch.autograd.gradcheck(
                lambda *xs: build(torch, *xs), reference, eps=1e-6, atol=1e-5, raise_exception=False
            )
        except Exception:
            torch_ok = False
    if not torch_ok:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ok = torch.autograd.gradcheck(module.apply, trial, eps=1e-6, atol=1e-5, raise_exception=False)
    except Exception as error:
        return Outcome("exception", "".join(traceback.format_exception(error, limit=-4)))
    values = {n: a.tolist() for n, a in zip(program.leaves, args)}
    return Outcome("ok") if ok else Outcome("mismatch", f"gradcheck failed at sizes {sizes}, values {values}")
