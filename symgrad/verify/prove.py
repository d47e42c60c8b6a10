"""Proofs of gradient laws, two ways.

1. **Exactly**: instantiate the symbolic dimensions at small, distinct sizes
   (so a transposition error cannot hide), derive the VJP entry by entry and
   show that SymPy simplifies the difference to 0.
2. **Numerically**: at larger sizes, evaluate the law with torch and compare
   with ``torch.autograd.backward`` on the same random inputs (float64).

>>> import symgrad.derive
>>> from symgrad.core import dims, symbols
>>> k, n, m = dims("k n m")
>>> W, X, V = symbols("W", (k, n)), symbols("X", (n, m)), symbols("V", (k, m))
>>> prove(W @ X, [W], [V]).held
True
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy

from ..core.constructors import tensor
from ..core.dims import is_concrete
from ..core.errors import CheckError, SymgradError
from ..core.graph import dims_of, topological, topological_all
from ..core.tensor import Tensor, apply, constant
from ..derive.entrywise import as_grad_tensor, vjp_entries
from ..derive.reverse import law
from ..ops import functions
from .evaluate import NotExact, to_fraction, to_mpmath
from .torch_eval import evaluate_graph

Sizes = dict[sympy.Symbol, int]


def size_assignments(
    dims: Sequence[sympy.Symbol], count: int = 2, start: int = 2, floors: Mapping[sympy.Symbol, int] | None = None
) -> list[Sizes]:
    """Distinct sizes per dimension (2, 3, 4, …), rotated for each further assignment; a dimension with a floor
    (see :func:`size_floors`) is at least that large, and the sizes stay distinct."""
    base = list(range(start, start + len(dims)))
    out = []
    for shift in range(count):
        if len(dims) > 1:
            sizes = base[shift % len(base) :] + base[: shift % len(base)]
        else:  # one dimension: try another size instead of the same rotation
            sizes = [b + shift for b in base]
        out.append(_above_floors(dict(zip(dims, sizes)), floors or {}, shift))
    return out


def _above_floors(sizes: dict, floors: Mapping[sympy.Symbol, int], shift: int = 0) -> dict:
    """``sizes`` with each dimension raised to its floor (plus ``shift``), then nudged until no two are equal."""
    out = {d: max(n, floors[d] + shift) if d in floors else n for d, n in sizes.items()}
    taken: set[int] = set()
    for d in sorted(out, key=lambda d: (d not in floors, str(d))):  # the floored ones keep their sizes
        while out[d] in taken:
            out[d] += 1
        taken.add(out[d])
    return out


def size_floors(roots: Sequence[Tensor]) -> dict[sympy.Symbol, int]:
    """The smallest size each dimension can take in a proof: larger than every index value the user gave along
    it (cross-entropy's targets along the class count, a gather's indices along its dim)."""
    floors: dict[sympy.Symbol, int] = {}
    for node in topological_all(roots):
        if node.op is None or node.op.indexes is None:
            continue
        for size, index in node.op.indexes(*node.inputs, **node.attrs):
            if not isinstance(size, sympy.Symbol) or not is_concrete(index.shape) or not index.has_values():
                continue
            picked = [int(v) for v in np.asarray(index.values(), dtype=object).reshape(-1) if int(v) >= 0]
            if picked:  # negative values: torch's ignore_index, or an error torch reports
                floors[size] = max(floors.get(size, 1), max(picked) + 1)
    return floors


def _concrete(value: Any, sizes: Sizes) -> Any:
    if isinstance(value, sympy.Expr):
        result = sympy.sympify(value.xreplace(sizes))
        return int(result) if result.is_Integer else result
    if isinstance(value, tuple):
        return tuple(_concrete(v, sizes) for v in value)
    return value


def instantiate(roots: Sequence[Tensor], sizes: Sizes, *, rng: random.Random | None = None) -> dict[int, Tensor]:
    """Rebuild the graphs below ``roots`` with dimensions replaced by ``sizes``.

    Leaves become concrete symbol tensors of the same name; integer leaves that
    declare a number of classes get random class indices.
    """
    rng = rng or random.Random(0)
    made: dict[int, Tensor] = {}
    for node in topological_all(roots):
        if node.op is None:
            made[id(node)] = _instantiate_leaf(node, sizes, rng)
        else:
            attrs = {k: _concrete(v, sizes) for k, v in node.attrs.items()}
            made[id(node)] = apply(node.op.name, *(made[id(i)] for i in node.inputs), **attrs)
    return made


def _instantiate_leaf(node: Tensor, sizes: Sizes, rng: random.Random) -> Tensor:
    shape = _concrete(tuple(node.shape), sizes)
    if node.kind != "symbol":
        entries = node.entries()
        flat = [sympy.sympify(e) for e in entries.reshape(-1)]
        if not any(e.free_symbols & sizes.keys() or e.has(sympy.Float) for e in flat):
            return node
        # Float literals become the exact binary fractions they stand for: SymPy's float arithmetic
        # would leave rounding residues (~1e-17) in the entrywise side that look like differences.
        values = np.array([_exact(e).xreplace(sizes) for e in flat], dtype=object)
        return Tensor(
            shape=entries.shape,
            entries=values.reshape(entries.shape),
            dtype=node.dtype,
            is_python_scalar=node.is_python_scalar,
        )
    classes = getattr(node, "classes", None)
    if classes is not None:
        bound = int(_concrete(classes, sizes))
        count = int(np.prod(shape, dtype=int))
        values = np.array([rng.randrange(bound) for _ in range(count)], dtype=object).reshape(shape)
        return tensor(values.tolist(), name=node.name, dtype="int64")
    return Tensor(shape=shape, name=node.name, dtype=node.dtype, requires_grad=node.requires_grad)


def _exact(expr: sympy.Expr) -> sympy.Expr:
    expr = sympy.sympify(expr)
    return expr.xreplace({f: sympy.Rational(f) for f in expr.atoms(sympy.Float)})


# Functions that split into cases: exact on rational arguments, so they stay in the rational form.
CASE_SPLITS = (
    sympy.Piecewise,
    sympy.Heaviside,
    sympy.sign,
    sympy.Abs,
    sympy.Max,
    sympy.Min,
    functions.relu,
    functions.amax,
    functions.maximum,
    functions.masked_div,
)
SYMBOLIC_BUDGET = 400  # operations above which SymPy's cancellation is replaced by exact evaluation


def zero_by(expr: sympy.Expr) -> str | None:
    """How ``expr`` was shown to be 0, or None when it was not.

    - ``"symbolic"``: SymPy reduced it to 0 (cancellation of a rational
      function, case splits folded branch by branch, or ``simplify``);
    - ``"exact evaluation"``: for differences too large to cancel, the
      rational function (function values treated as independent variables)
      evaluates to exactly 0, in rational arithmetic, at random rational points;
    - ``"60-digit evaluation"``: the last resort, when the others are out of
      reach (exponentials that SymPy merges, as in attention): |expr| < 10⁻⁴⁵
      at random points with 60 significant digits. Reported separately, since
      it is strong evidence rather than a symbolic proof.

    A numeric evaluation rules out non-zero differences first, so the slow
    steps only run on differences that vanish at those points.
    """
    expr = sympy.sympify(expr)
    if expr == 0:
        return "symbolic"
    if _clearly_nonzero(expr):
        return None
    plain = _with_independent_functions(expr)
    if plain is not None:
        splits = plain.has(*CASE_SPLITS)
        if splits and sympy.count_ops(plain) <= SYMBOLIC_BUDGET:  # folding large case splits takes minutes
            folded = sympy.piecewise_fold(plain.rewrite(sympy.Piecewise))
            if folded == 0 or sympy.expand(folded) == 0:
                return "symbolic"
        elif sympy.count_ops(plain) <= SYMBOLIC_BUDGET and sympy.cancel(sympy.together(plain)) == 0:
            return "symbolic"
        if _zero_at_rational_points(plain):
            return "exact evaluation"
    elif sympy.count_ops(expr) <= SYMBOLIC_BUDGET:
        for attempt in (
            lambda e: sympy.cancel(sympy.together(e)),
            sympy.simplify,
            lambda e: sympy.simplify(e.rewrite(sympy.exp)),
        ):
            if attempt(expr) == 0:
                return "symbolic"
    if _zero_to_digits(expr):
        return "60-digit evaluation"
    return None


def _zero_to_digits(expr: sympy.Expr, digits: int = 60, tries: int = 3) -> bool:
    """The last resort, reported as such: |expr| < 10^-45 at random points, computed with 60 digits."""
    rng = random.Random(3)
    symbols = sorted(expr.free_symbols, key=str)
    for _ in range(tries):
        point = {s: Fraction(rng.randint(300, 1700), 1000) for s in symbols}
        try:
            value = to_mpmath(expr, point, digits=digits)
        except (KeyError, ArithmeticError):
            return False
        if not abs(value) < mpmath.mpf("1e-45"):  # nan is not small either
            return False
    return True


def is_zero(expr: sympy.Expr) -> bool:
    return zero_by(expr) is not None


def _with_independent_functions(expr: sympy.Expr) -> sympy.Expr | None:
    """``expr`` with each function value (exp(a), tanh(b), …) replaced by its own variable.

    If that form is identically 0, so is ``expr`` (the replacement only forgets
    relations between the values). Rational-function arithmetic on it is fast,
    where expanding exponentials of sums (softmax, attention) is not.
    """
    applications = [a for a in expr.atoms(sympy.Function) if not isinstance(a, CASE_SPLITS)]
    applications.sort(key=sympy.default_sort_key)
    values = {a: sympy.Dummy(f"f{i}") for i, a in enumerate(applications)}
    plain = expr.xreplace(values)
    leftover = [a for a in plain.atoms(sympy.Function) if not isinstance(a, CASE_SPLITS)]
    return None if leftover else plain


def _zero_at_rational_points(plain: sympy.Expr, tries: int = 3) -> bool:
    rng = random.Random(2)
    symbols = sorted(plain.free_symbols, key=str)
    done = 0
    for _ in range(4 * tries):
        point = {s: Fraction(rng.randint(1, 10**6), rng.randint(1, 10**6)) for s in symbols}
        try:
            value = to_fraction(plain, point)
        except NotExact:  # irrational constants: SymPy's exact arithmetic
            exact = plain.xreplace({s: sympy.Rational(v.numerator, v.denominator) for s, v in point.items()})
            value = None if exact.has(sympy.zoo, sympy.nan) else (0 if sympy.expand(exact) == 0 else 1)
        if value is None:
            continue
        if value != 0:
            return False
        done += 1
        if done == tries:
            return True
    return False


def _clearly_nonzero(expr: sympy.Expr, tries: int = 3) -> bool:
    rng = random.Random(1)
    symbols = sorted(expr.free_symbols, key=str)
    for _ in range(tries):
        point = {s: rng.uniform(0.3, 1.7) for s in symbols}
        try:
            value = to_mpmath(expr, point, digits=30)
        except (KeyError, ArithmeticError):
            return False
        if abs(value) > 1e-20:  # False for nan
            return True
    return False


@dataclass
class Proof:
    """Which proofs held for each law."""

    laws: list[Tensor]
    exact: list[dict[str, Any]] = field(default_factory=list)
    numeric: list[dict[str, Any]] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(e["held"] for e in self.exact) and all(n["held"] for n in self.numeric)

    def _repr_markdown_(self) -> str:
        """In a notebook: the verdict, then one line per proof."""
        lines = str(self).split("\n")
        return f"**proof {'held' if self.held else 'FAILED'}**\n\n" + "\n".join(f"- `{line}`" for line in lines)

    def __str__(self) -> str:
        lines = []
        for e in self.exact:
            sizes = ", ".join(f"{k}={v}" for k, v in e["sizes"].items())
            how = ", ".join(f"{n} {m}" for m, n in sorted(e.get("methods", {}).items()))
            lines.append(
                f"exact at {sizes or 'the given sizes'}: {'held' if e['held'] else 'FAILED'}"
                f" ({e['entries']} entries{'; ' + how if how else ''})"
            )
        for n in self.numeric:
            sizes = ", ".join(f"{k}={v}" for k, v in n["sizes"].items())
            lines.append(
                f"torch at {sizes or 'the given sizes'}: {'held' if n['held'] else 'FAILED'}"
                f" (max abs error {n['max_abs_error']:.3g})"
            )
        return "\n".join(lines)


def prove(
    outputs: Tensor | Sequence[Tensor],
    wrt: Tensor | Sequence[Tensor],
    grads: Any = None,
    *,
    laws: Sequence[Tensor] | None = None,
    sizes: Sequence[Sizes] | None = None,
    torch_sizes: Sizes | None = None,
    numeric: bool = True,
    raise_on_failure: bool = False,
) -> Proof:
    """Prove the laws for ``outputs`` (derived with :func:`law` unless given) both ways."""
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    targets = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    vs = [grads] if isinstance(grads, Tensor) else (list(grads) if grads is not None else [None] * len(outs))
    laws = list(laws) if laws is not None else list(law(outs, targets, vs if grads is not None else None))
    vs_given = [v for v in vs if v is not None]
    roots = outs + vs_given + laws
    dims = dims_of(roots + targets)
    proof = Proof(laws)
    floors = size_floors(roots + targets)
    for assignment in sizes or size_assignments(dims, floors=floors):
        made = instantiate(roots + targets, assignment)
        concrete_grads = [made[id(v)] if v is not None else None for v in vs]
        grads_here = [
            as_grad_tensor(g if g is not None else constant(1, shape=made[id(o)].shape), made[id(o)], p)
            for p, (o, g) in enumerate(zip(outs, concrete_grads))
        ]
        held, count, methods = True, 0, {}
        for x, rule in zip(targets, laws):
            expected = vjp_entries([made[id(o)] for o in outs], made[id(x)], grads_here)
            actual = made[id(rule)].entries()
            if actual.shape != expected.shape:
                held = False
                continue
            for a, e in zip(actual.reshape(-1), expected.reshape(-1)):
                count += 1
                method = zero_by(sympy.sympify(a) - e)
                held = held and method is not None
                if method is not None:
                    methods[method] = methods.get(method, 0) + 1
        proof.exact.append(
            {"sizes": {str(k): v for k, v in assignment.items()}, "held": held, "entries": count, "methods": methods}
        )
    if numeric:
        big = torch_sizes or _above_floors(dict(zip(dims, range(5, 5 + len(dims)))), floors, 3)
        proof.numeric.append(check_numerically(outs, targets, vs, laws, big))
    if raise_on_failure and not proof.held:
        raise CheckError(str(proof))
    return proof


def check_numerically(
    outs: list[Tensor], targets: list[Tensor], vs: list[Tensor | None], laws: list[Tensor], sizes: Sizes, seed: int = 0
) -> dict[str, Any]:
    """Evaluate the laws with torch and compare with torch.autograd.backward at ``sizes``."""
    import torch

    rng = random.Random(seed)
    roots = outs + [v for v in vs if v is not None] + laws
    made = instantiate(roots + targets, sizes, rng=rng)
    numbers: dict[Tensor, np.ndarray] = {}
    for root in roots + targets:
        for node in topological(made[id(root)]):
            if node.kind == "symbol" and node not in numbers:
                size = int(np.prod(node.shape, dtype=int))
                numbers[node] = np.array([rng.uniform(0.25, 1.5) for _ in range(size)]).reshape(node.shape)
    wanted = {id(made[id(x)]) for x in targets}
    # Targets as roots too: a target the outputs do not depend on still gets a (zero) gradient.
    forward = evaluate_graph(torch, [made[id(o)] for o in outs + targets], numbers, {}, wanted)
    grads = []
    for o, v in zip(outs, vs):
        if v is None:
            grads.append(torch.ones_like(forward[id(made[id(o)])]))
        else:
            graph = evaluate_graph(torch, [made[id(v)]], numbers, {}, set())
            grads.append(graph[id(made[id(v)])].to(torch.float64))
    leaves = [forward[id(made[id(x)])] for x in targets]
    torch.autograd.backward([forward[id(made[id(o)])] for o in outs], grads, inputs=leaves)
    law_values = evaluate_graph(torch, [made[id(r)] for r in laws], numbers, {}, set())
    worst = 0.0
    for leaf, rule in zip(leaves, laws):
        ours = law_values[id(made[id(rule)])].detach()
        theirs = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        if tuple(ours.shape) != tuple(theirs.shape):
            raise SymgradError(f"law has shape {tuple(ours.shape)}, torch's gradient {tuple(theirs.shape)}")
        worst = max(worst, float((ours - theirs).abs().max()) if ours.numel() else 0.0)
    scale = max(float(leaf.grad.abs().max()) if leaf.grad is not None and leaf.grad.numel() else 0.0 for leaf in leaves)
    return {
        "sizes": {str(k): v for k, v in sizes.items()},
        "held": worst <= 1e-9 * max(1.0, scale),
        "max_abs_error": worst,
    }
