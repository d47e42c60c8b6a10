"""Arithmetic regions of a law simplified as one SymPy expression.

Reverse mode writes a chain of ``+ − × ÷`` nodes per op, and a second derivative doubles it, so
``X.T * (s * (1 - s))`` can come out as a dozen nodes. A connected region of arithmetic nodes
(each used once) is a rational function of the tensors it reads; SymPy cancels and factors it, and the
shorter form is rebuilt as tensor ops when it has fewer operations. Tensors broadcast entry by entry,
so the algebra of scalars holds for them unchanged.

>>> import symgrad as sg
>>> x, y = sg.symbols("x", (3,)), sg.symbols("y", (3,))
>>> fuse([(x * y + x * y) / x - y])[0].name
'y'
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import sympy

from ..core.dims import same_dim
from ..core.graph import topological, uniform_constant
from ..core.tensor import Tensor, with_inputs
from ..ops.calculus import to_tensor
from .rewrite_log import Rewrite

ARITHMETIC = frozenset({"add", "sub", "mul", "div", "neg"})
MAX_OPS = 120  # SymPy's factor gets slow on large rational functions
MAX_ATOMS = 10


def _is_arithmetic(t: Tensor) -> bool:
    if t.op is None:
        return False
    if t.op.name == "pow":  # integer powers are arithmetic; others stay whole
        exponent = uniform_constant(t.inputs[1])
        return exponent is not None and exponent.is_Integer and not t.inputs[1].shape
    return t.op.name in ARITHMETIC


def fuse(results: Sequence[Tensor], log: list[Rewrite] | None = None) -> list[Tensor]:
    """``results`` with each arithmetic region replaced by a shorter equal one, where SymPy finds it; each
    replacement is appended to ``log`` when one is given."""
    order: dict[int, Tensor] = {}
    consumers: dict[int, list[Tensor]] = {}
    for root in results:
        for node in topological(root):
            if id(node) not in order:
                order[id(node)] = node
                for part in node.inputs:
                    consumers.setdefault(id(part), []).append(node)
    roots = {id(r) for r in results}

    def inner(t: Tensor) -> bool:
        """An arithmetic node read only by arithmetic nodes: part of their regions."""
        users = consumers.get(id(t), [])
        return _is_arithmetic(t) and id(t) not in roots and bool(users) and all(_is_arithmetic(u) for u in users)

    done: dict[int, Tensor] = {}
    for key, node in order.items():
        if node.op is None or inner(node):
            done[key] = node
        elif _is_arithmetic(node):
            done[key] = _Region(node, inner, done).shortest(log)
        else:
            done[key] = with_inputs(node, [done[id(i)] for i in node.inputs])
    return [done[id(r)] for r in results]


@functools.lru_cache(maxsize=4096)
def _shortest_form(expr: sympy.Expr) -> sympy.Expr:
    """The shortest of ``expr``, its factored and its cancelled form. Cached: a model's repeated layers give
    regions of one expression (their atoms are numbered in the order they are met), and factoring is the costly
    part of fusing."""
    return min([_positive_factors(sympy.factor(expr)), sympy.cancel(expr), expr], key=sympy.count_ops)


class _Region:
    """A region root with the arithmetic nodes below it, its atoms already rebuilt in ``done``."""

    def __init__(self, root: Tensor, inner, done: dict[int, Tensor]) -> None:
        self.root, self.inner, self.done = root, inner, done
        self.atoms: dict[int, sympy.Symbol] = {}
        self.bindings: dict[sympy.Symbol, Tensor] = {}
        self.size = 0
        self.memo: dict[int, sympy.Expr] = {}

    def shortest(self, log: list[Rewrite] | None = None) -> Tensor:
        expr = self.expression(self.root)
        if self.size >= 2 and len(self.atoms) <= MAX_ATOMS and sympy.count_ops(expr) <= MAX_OPS:
            best = _shortest_form(expr)
            if sympy.count_ops(best) < self.size:
                replacement = self.rebuild(best)
                if _same_shape(replacement.shape, self.root.shape):  # else a cancelled term carried a broadcast
                    if log is not None:
                        atoms = frozenset(id(t) for t in self.bindings.values())
                        log.append(Rewrite(self.copy(self.root), replacement, atoms, closed=True))
                    return replacement
        return self.copy(self.root)

    def expression(self, t: Tensor) -> sympy.Expr:
        if t is self.root or self.inner(t):
            if id(t) not in self.memo:
                self.size += 1
                self.memo[id(t)] = _SYMPY[t.op.name](*(self.expression(i) for i in t.inputs))
            return self.memo[id(t)]
        value = uniform_constant(t)
        if value is not None and not t.shape:
            return value
        if id(t) not in self.atoms:
            symbol = sympy.Symbol(f"_a{len(self.atoms)}")
            self.atoms[id(t)] = symbol
            self.bindings[symbol] = self.done[id(t)]
        return self.atoms[id(t)]

    def rebuild(self, expr: sympy.Expr) -> Tensor:
        """Tensor ops for ``expr``; in a product the small (broadcast) factors are combined first."""
        if expr in self.bindings or not (expr.is_Add or expr.is_Mul):
            return to_tensor(expr, self.bindings, self.root)
        if expr.is_Add:
            terms = sorted(expr.args, key=lambda a: a.could_extract_minus_sign())
            out = self.rebuild(terms[0])
            for term in terms[1:]:
                out = out - self.rebuild(-term) if term.could_extract_minus_sign() else out + self.rebuild(term)
            return out
        coefficient, rest = expr.as_coeff_Mul()
        if coefficient == -1:
            return -self.rebuild(rest)
        numerator, denominator = [], []
        for factor in sympy.Mul.make_args(expr):
            if factor.is_Pow and factor.exp.is_Integer and factor.exp < 0:
                denominator.append(self.rebuild(factor.base**-factor.exp))
            else:
                numerator.append(self.rebuild(factor))
        full = max(len(t.shape) for t in numerator + denominator)
        small = _product([t for t in numerator if len(t.shape) < full], [t for t in denominator if len(t.shape) < full])
        large = [t for t in numerator if len(t.shape) == full]
        out = _product(large + ([small] if small is not None else []), [t for t in denominator if len(t.shape) == full])
        return out

    def copy(self, t: Tensor) -> Tensor:
        """The region as it was, reading the rebuilt atoms."""
        if t is self.root or self.inner(t):
            return with_inputs(t, [self.copy(i) for i in t.inputs])
        return self.done[id(t)]


def _product(numerator: list[Tensor], denominator: list[Tensor]) -> Tensor | None:
    out = None
    for t in numerator:
        out = t if out is None else out * t
    for t in denominator:
        out = (1 / t) if out is None else out / t
    return out


def _positive_factors(expr: sympy.Expr) -> sympy.Expr:
    """``-x (s - 1)`` → ``x (1 - s)``: a factored minus sign goes into a difference, as a person writes it."""
    coefficient, rest = expr.as_coeff_Mul()
    if coefficient != -1:
        return expr
    factors = list(sympy.Mul.make_args(rest))
    for position, factor in enumerate(factors):
        if factor.is_Add:
            factors[position] = -factor
            return sympy.Mul(*factors)
    return expr


_SYMPY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "neg": lambda a: -a,
    "pow": lambda a, b: a**b,
}


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))
