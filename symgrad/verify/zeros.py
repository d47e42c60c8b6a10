"""Whether a difference is 0: SymPy's cancellation where it is cheap, exact evaluation at rational points where it
is not, and 60-digit evaluation as the last resort (reported as such).

>>> x, y = sympy.symbols("x y", positive=True)
>>> zero_by((x + y) ** 2 - x**2 - 2 * x * y - y**2), zero_by(sympy.exp(x) - x)
('symbolic', None)
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import random
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import sympy

from ..ops import functions
from ..ops.nn import detached
from .evaluate import NotExact, atoms_of, has_any, symbols_of, to_fraction, to_mpmath

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
FOLDED_SPLITS = 6  # case splits in a difference above which SymPy's folding into cases is replaced by evaluation
SYMBOLIC_TRIES = 3  # entries of one check in a row that SymPy's cancellation did not show, before it is skipped


def differ_by(a: Any, b: Any, symbolic: bool = True) -> str | None:
    """:func:`zero_by` of ``a - b``, knowing the two sides: a decimal constant of either may then stand for a longer
    value (see :func:`_within_last_digits`), which their difference, where SymPy merges the constants, hides."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    return zero_by(a - b, sides=(a, b), symbolic=symbolic)


class EntryRun:
    """The entries of one check, shown 0 one after another: once :data:`SYMBOLIC_TRIES` in a row needed more than
    SymPy's cancellation (entries of one op share their form), the rest skip the attempt and go to evaluation.

    >>> run = EntryRun()
    >>> x = sympy.Symbol("x", positive=True)
    >>> [run.differ_by(x * (x + 1), x**2 + x) for _ in range(2)]
    ['symbolic', 'symbolic']
    """

    def __init__(self) -> None:
        self.unsimplified = 0  # entries in a row that SymPy's cancellation did not show

    def differ_by(self, a: Any, b: Any) -> str | None:
        return self._seen(differ_by(a, b, symbolic=self.unsimplified < SYMBOLIC_TRIES))

    def zero_by(self, expr: Any) -> str | None:
        return self._seen(zero_by(expr, symbolic=self.unsimplified < SYMBOLIC_TRIES))

    def _seen(self, method: str | None) -> str | None:
        self.unsimplified = 0 if method == "symbolic" else self.unsimplified + 1
        return method


def zero_by(expr: sympy.Expr, sides: tuple | None = None, symbolic: bool = True) -> str | None:
    """How ``expr`` was shown to be 0, or None when it was not.

    - ``"symbolic"``: SymPy reduced it to 0 (cancellation of a rational
      function, case splits folded branch by branch, or ``simplify``);
    - ``"exact evaluation"``: for differences too large to cancel, the
      rational function (function values treated as independent variables)
      evaluates to exactly 0, in rational arithmetic, at random rational points;
    - ``"60-digit evaluation"``: the last resort, when the others are out of
      reach (exponentials that SymPy merges, as in attention): |expr| < 10⁻⁴⁵
      at random points with 60 significant digits. Reported separately, since
      it is strong evidence rather than a symbolic proof;
    - ``"decimal rounding"``: a difference with decimal constants in it (0.044715, and 3 · 0.044715 written
      0.134145 elsewhere) that is below 10⁻¹³ of the size of its terms at random points: the two sides differ
      by how their constants were rounded, not by a term. Reported separately too.

    A numeric evaluation rules out non-zero differences first, so the slow
    steps only run on differences that vanish at those points. ``symbolic=False`` skips SymPy's cancellation
    (see :class:`EntryRun`).
    """
    expr = sympy.sympify(expr)
    if has_any(expr, detached):  # a value that only derivatives treat as a constant: as a value, itself
        expr = expr.replace(detached, lambda value: value)
    if expr == 0:
        return "symbolic"
    if _clearly_nonzero(expr):
        if sides is not None and _within_last_digits(*sides):
            return "decimal rounding"
        return "decimal rounding" if _rounding_only(expr) else None
    plain = _with_independent_functions(expr)
    budget = SYMBOLIC_BUDGET if symbolic else -1
    if plain is not None:
        splits = has_any(plain, *CASE_SPLITS)
        # folding large case splits takes minutes: cases multiply (a sum of 50 clamps has 2^50 of them)
        foldable = len(atoms_of(plain, *CASE_SPLITS)) <= FOLDED_SPLITS
        if splits and foldable and sympy.count_ops(plain) <= budget:
            try:
                folded = sympy.piecewise_fold(plain.rewrite(sympy.Piecewise))
            except (TypeError, RecursionError):  # SymPy cannot fold a comparison in a product (a mask times
                # ones), or a max of many entries nests too deep as cases: evaluate
                folded = None
            if folded is not None and (folded == 0 or sympy.expand(folded) == 0):
                return "symbolic"
        elif not splits and sympy.count_ops(plain) <= budget and sympy.cancel(sympy.together(plain)) == 0:
            return "symbolic"
        if _zero_at_rational_points(plain):
            return "exact evaluation"
    elif sympy.count_ops(expr) <= budget:
        for attempt in (
            lambda e: sympy.cancel(sympy.together(e)),
            sympy.simplify,
            lambda e: sympy.simplify(e.rewrite(sympy.exp)),
        ):
            if attempt(expr) == 0:
                return "symbolic"
    if _zero_to_digits(expr):
        return "60-digit evaluation"
    if sides is not None and _within_last_digits(*sides):
        return "decimal rounding"
    return "decimal rounding" if _rounding_only(expr) else None


# Decimal constants written with at least this many significant digits may stand for a longer exact value (0.7978845608
# for sqrt(2/pi)); shorter ones are read as exact (0.5 is one half).
ROUNDED_DIGITS = 4
_ACCEPTED: contextvars.ContextVar[list | None] = contextvars.ContextVar("rounded_constants", default=None)


@contextlib.contextmanager
def rounded_constants() -> Iterator[list[tuple[str, str]]]:
    """Collect, while the block runs, the decimal constants that proofs accepted as roundings (see
    :func:`_within_last_digits`): ``(as written, the value it stands for)``, each once."""
    found: list[tuple[str, str]] = []
    token = _ACCEPTED.set(found)
    try:
        yield found
    finally:
        _ACCEPTED.reset(token)


def float_spelling(r: sympy.Rational) -> tuple[str, int] | None:
    """A rational that is a float's exact value (a power of 2 below it) as Python writes the float, with its number
    of significant digits; None for another rational.

    >>> float_spelling(sympy.Rational(0.1070322243)), float_spelling(sympy.Rational(1, 3))
    (('0.1070322243', 10), None)
    """
    if r.is_Integer or (int(r.q) & (int(r.q) - 1)) != 0:
        return None
    text = repr(float(r))
    return text, len(text.split("e")[0].replace("-", "").replace(".", "").lstrip("0"))


def _written(r: sympy.Rational) -> tuple[str, int, float] | None:
    """A constant that is a float as Python wrote it: its shortest decimal spelling, its significant digits and one
    unit of its last digit, if it has at least :data:`ROUNDED_DIGITS` significant digits."""
    spelled = float_spelling(r)
    if spelled is None:
        return None
    text, digits = spelled
    if not ROUNDED_DIGITS <= digits <= 15 or float(r) == 0:  # 16 digits and more: float arithmetic's
        return None
    exponent = math.floor(math.log10(abs(float(r))))
    return text, digits, 10.0 ** (exponent - digits + 1)


def _within_last_digits(a: sympy.Expr, b: sympy.Expr, tries: int = 3) -> bool:
    """The stated rule for decimal constants: a constant written with k significant digits stands for any value
    less than one unit of its k-th digit away (rounded or cut off there). ``a - b`` is accepted when moving its
    constants within those bounds makes it 0 at random points, to first order (the difference is linear in a
    constant's rounding)."""
    written = {
        r: w for r in atoms_of(a, sympy.Rational) | atoms_of(b, sympy.Rational) if (w := _written(r)) is not None
    }
    if not written or len(written) > 12:
        return False
    standing = {r: sympy.Dummy(f"c{k}") for k, r in enumerate(written)}
    general = a.xreplace(standing) - b.xreplace(standing)
    expr = a - b
    exact_constants = {c: Fraction(int(r.p), int(r.q)) for r, c in standing.items()}
    rng = random.Random(5)
    symbols = symbols_of(expr)
    rows, values = [], []
    for kind, point in _points_of_each_kind(expr, symbols, rng, len(written) + tries):
        point = point | exact_constants
        try:
            value = float(to_mpmath(general, point, digits=40))
            row = [_slope(general, point, c) for c in standing.values()]
        except (KeyError, ArithmeticError, TypeError, ValueError):
            if kind == POSITIVE:
                return False
            continue
        if kind != POSITIVE and not (math.isfinite(value) and all(math.isfinite(v) for v in row)):
            continue
        values.append(value)
        rows.append(row)
    matrix, target = np.array(rows), -np.array(values)
    if not (np.isfinite(matrix).all() and np.isfinite(target).all()) or not target.any():
        return False
    shift, *_ = np.linalg.lstsq(matrix, target, rcond=None)
    if np.abs(matrix @ shift - target).max() > 1e-6 * np.abs(target).max():
        return False  # no rounding of the constants explains the difference
    units = np.array([unit for _, _, unit in written.values()])
    if (np.abs(shift) >= units * (1 - 1e-6)).any():  # a whole unit off is a different digit, not a rounding
        return False
    accepted = _ACCEPTED.get()
    if accepted is not None:
        for (text, digits, unit), move in zip(written.values(), shift):
            if abs(move) > 1e-6 * unit and not any(text == seen for seen, _ in accepted):
                accepted.append((text, f"{float(Fraction(text)) + move:.{digits + 3}g}"))
    return True


def _slope(expr: sympy.Expr, point: dict, constant: sympy.Symbol) -> float:
    """d expr / d constant at ``point``, by a central difference at 50 digits (exact to far below float64: the
    step is 10⁻¹⁵ of the constant, the error of the quotient about its square), where SymPy's symbolic derivative
    of a second-order backward took seconds per constant."""
    step = Fraction(1, 10**15) * max(abs(point[constant]), Fraction(1))
    above, below = dict(point), dict(point)
    above[constant], below[constant] = point[constant] + step, point[constant] - step
    with mpmath.workdps(50):
        rise = to_mpmath(expr, above, digits=50) - to_mpmath(expr, below, digits=50)
        return float(rise / (2 * mpmath.mpf(step.numerator) / step.denominator))


def _rounding_only(expr: sympy.Expr, tries: int = 4) -> bool:
    """Whether ``expr`` has decimal constants and is below 10⁻¹³ of the sum of its terms' sizes at random points."""
    if not has_any(expr, sympy.Float) and not any(_from_binary(r) for r in atoms_of(expr, sympy.Rational)):
        return False
    rng = random.Random(4)
    symbols = symbols_of(expr)
    terms = sympy.Add.make_args(expr)  # the two sides' terms, as they were written
    for kind, point in _points_of_each_kind(expr, symbols, rng, tries):
        try:
            value = abs(to_mpmath(expr, point, digits=40))
            scale = sum(abs(to_mpmath(term, point, digits=40)) for term in terms)
        except (KeyError, ArithmeticError):
            if kind == POSITIVE:
                return False
            continue
        if kind != POSITIVE and (mpmath.isnan(value) or mpmath.isnan(scale)):
            continue  # outside a function's domain there: torch's nan on both sides
        # below 10⁻¹³ of the terms' sizes, or, where the terms cancelled to the residue alone (1/6 against the float
        # 2.0 / 12), below 10⁻¹² at inputs of size about 1
        if not (value <= mpmath.mpf("1e-13") * scale or value <= mpmath.mpf("1e-12")):  # nan is not small either
            return False
    return True


def _from_binary(r: sympy.Rational) -> bool:
    """A float's exact value as a fraction, or a number made with one (a quotient by a float too): its denominator
    or its numerator a multiple of 2²⁴."""
    return int(r.q) % 2**24 == 0 or (int(r.p) != 0 and int(r.p) % 2**24 == 0)


def _zero_to_digits(expr: sympy.Expr, digits: int = 60, tries: int = 3) -> bool:
    """The last resort, reported as such: |expr| < 10^-45 at random points of each kind (:func:`point_kinds`),
    computed with 60 digits."""
    rng = random.Random(3)
    for kind, point in _points_of_each_kind(expr, symbols_of(expr), rng, tries):
        try:
            value = to_mpmath(expr, point, digits=digits)
        except (KeyError, ArithmeticError):
            if kind == POSITIVE:
                return False
            continue
        if isinstance(value, mpmath.mpc) and value.imag != 0:
            continue
        if kind != POSITIVE and mpmath.isnan(value):  # outside a function's domain there: torch's nan
            continue
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
    applications = [a for a in atoms_of(expr, sympy.Function) if not isinstance(a, CASE_SPLITS)]
    applications.sort(key=sympy.default_sort_key)
    values = {a: sympy.Dummy(f"f{i}") for i, a in enumerate(applications)}
    plain = expr.xreplace(values)
    leftover = [a for a in atoms_of(plain, sympy.Function) if not isinstance(a, CASE_SPLITS)]
    return None if leftover else plain


def _zero_at_rational_points(plain: sympy.Expr, tries: int = 3) -> bool:
    """``plain`` is exactly 0 at ``tries`` random rational points of each kind of :func:`sample_points` (a kind
    where it is undefined everywhere, a logarithm's negative half, is passed over)."""
    rng = random.Random(2)
    symbols = symbols_of(plain)
    near = thresholds(plain)
    seen = 0
    for kind in point_kinds(plain):
        done = 0
        for point in sample_points(kind, symbols, rng, 4 * tries, near):
            try:
                value = to_fraction(plain, point)
            except NotExact:  # irrational constants: SymPy's exact arithmetic
                exact = plain.xreplace({s: sympy.Rational(v.numerator, v.denominator) for s, v in point.items()})
                undefined = exact.has(sympy.zoo, sympy.nan, sympy.I)  # (torch's real arithmetic gives nan there)
                value = None if undefined else (0 if sympy.expand(exact) == 0 else 1)
            if value is None:
                continue
            if value != 0:
                return False
            done += 1
            if done == tries:
                break
        seen += done
    return seen >= tries


# The kinds of points a difference is evaluated at: positive ones of size about 1 (every function's domain), and,
# for a difference with case splits (a torch.where, a mask, abs, max), points of either sign over a wide range and
# points just beside each threshold its conditions compare with, so that every branch is evaluated.
POSITIVE, SIGNED, BESIDE_THRESHOLDS = "positive", "signed", "beside thresholds"
BRANCHING = (*CASE_SPLITS, sympy.floor, sympy.ceiling, functions.floor, functions.trunc, sympy.Rel)


def point_kinds(expr: sympy.Expr) -> tuple[str, ...]:
    """The kinds of points ``expr`` is evaluated at: an analytic difference that is 0 on an open set of positive
    points is 0 everywhere it is defined; one with case splits must be evaluated in each branch too."""
    return (POSITIVE, SIGNED, BESIDE_THRESHOLDS) if has_any(expr, *BRANCHING) else (POSITIVE,)


def thresholds(expr: sympy.Expr) -> list[Fraction]:
    """The numbers the conditions of ``expr`` compare with (0 among them), as fractions, in increasing order.

    >>> x = sympy.Symbol("x", real=True)
    >>> thresholds(sympy.Piecewise((x, x < -3), (0, True)))
    [Fraction(-3, 1), Fraction(0, 1)]
    """
    found = {Fraction(0)}
    for relation in sorted(atoms_of(expr, sympy.Rel), key=sympy.default_sort_key):
        difference = relation.lhs - relation.rhs
        variables = difference.free_symbols
        if len(variables) == 1 and difference.is_polynomial(*variables):
            (x,) = variables
            slope, offset = difference.diff(x), difference.subs(x, 0)
            if slope.is_Rational and slope != 0 and offset.is_number and difference.diff(x, 2) == 0:
                numbers = [-offset / slope]
            else:
                numbers = list(relation.atoms(sympy.Number))
        else:
            numbers = list(relation.atoms(sympy.Number))
        for number in numbers:
            if number.is_Rational:
                found.add(Fraction(int(number.p), int(number.q)))
            elif number.is_Float and number.is_finite:
                found.add(Fraction(str(number)))
    return sorted(found)


def _points_of_each_kind(expr: sympy.Expr, symbols: list, rng: random.Random, count: int) -> Iterator[tuple]:
    """``(kind, point)`` pairs: ``count`` positive points of size about 1, then, for a difference with case splits,
    ``count`` of each other kind (see :func:`point_kinds`)."""
    near = thresholds(expr)
    for kind in point_kinds(expr):
        if kind == POSITIVE:
            for _ in range(count):
                yield kind, {s: Fraction(rng.randint(300, 1700), 1000) for s in symbols}
        else:
            for point in sample_points(kind, symbols, rng, count, near):
                yield kind, point


def sample_points(
    kind: str, symbols: list, rng: random.Random, count: int, near: list[Fraction] | None = None
) -> Iterator[dict]:
    """``count`` random rational points of ``kind`` (see :func:`point_kinds`) for ``symbols``."""
    for _ in range(count):
        if kind == POSITIVE:
            yield {s: Fraction(rng.randint(1, 10**6), rng.randint(1, 10**6)) for s in symbols}
        elif kind == SIGNED:
            yield {s: Fraction(rng.randint(-8 * 10**4, 8 * 10**4), 10**4 + rng.randint(0, 999)) for s in symbols}
        else:
            yield {s: rng.choice(near or [Fraction(0)]) + Fraction(rng.randint(-999, 999) or 1, 1000) for s in symbols}


def _clearly_nonzero(expr: sympy.Expr, tries: int = 3) -> bool:
    """Whether ``expr`` is far from 0 at a random point of some kind of :func:`point_kinds` (complex values, where
    torch's real arithmetic gives nan, do not count)."""
    rng = random.Random(1)
    symbols = symbols_of(expr)
    near = thresholds(expr)
    for kind in point_kinds(expr):
        points = (
            ({s: rng.uniform(0.3, 1.7) for s in symbols} for _ in range(tries))
            if kind == POSITIVE
            else (
                {s: float(v) for s, v in point.items()} for point in sample_points(kind, symbols, rng, 2 * tries, near)
            )
        )
        for point in points:
            try:
                value = to_mpmath(expr, point, digits=30)
            except (KeyError, ArithmeticError):
                if kind == POSITIVE:
                    return False
                continue
            if isinstance(value, mpmath.mpc) and value.imag != 0:
                continue
            if abs(value) > 1e-20:  # False for nan
                return True
    return False
