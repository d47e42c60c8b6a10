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
from .evaluate import NotExact, symbols_of, to_fraction, to_mpmath

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


def differ_by(a: Any, b: Any) -> str | None:
    """:func:`zero_by` of ``a - b``, knowing the two sides: a decimal constant of either may then stand for a longer
    value (see :func:`_within_last_digits`), which their difference, where SymPy merges the constants, hides."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    return zero_by(a - b, sides=(a, b))


def zero_by(expr: sympy.Expr, sides: tuple | None = None) -> str | None:
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
    steps only run on differences that vanish at those points.
    """
    expr = sympy.sympify(expr)
    if expr.has(detached):  # a value that only derivatives treat as a constant: as a value, itself
        expr = expr.replace(detached, lambda value: value)
    if expr == 0:
        return "symbolic"
    if _clearly_nonzero(expr):
        if sides is not None and _within_last_digits(*sides):
            return "decimal rounding"
        return "decimal rounding" if _rounding_only(expr) else None
    plain = _with_independent_functions(expr)
    if plain is not None:
        splits = plain.has(*CASE_SPLITS)
        if splits and sympy.count_ops(plain) <= SYMBOLIC_BUDGET:  # folding large case splits takes minutes
            try:
                folded = sympy.piecewise_fold(plain.rewrite(sympy.Piecewise))
            except TypeError:  # SymPy cannot fold a comparison that sits in a product (a mask times ones): evaluate
                folded = None
            if folded is not None and (folded == 0 or sympy.expand(folded) == 0):
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
    written = {r: w for r in (a.atoms(sympy.Rational) | b.atoms(sympy.Rational)) if (w := _written(r)) is not None}
    if not written or len(written) > 12:
        return False
    standing = {r: sympy.Dummy(f"c{k}") for k, r in enumerate(written)}
    general = a.xreplace(standing) - b.xreplace(standing)
    expr = a - b
    slopes = [sympy.diff(general, c) for c in standing.values()]
    exact_constants = {c: Fraction(int(r.p), int(r.q)) for r, c in standing.items()}
    rng = random.Random(5)
    symbols = symbols_of(expr)
    rows, values = [], []
    for _ in range(len(written) + tries):
        point = {s: Fraction(rng.randint(300, 1700), 1000) for s in symbols} | exact_constants
        try:
            values.append(float(to_mpmath(general, point, digits=40)))
            rows.append([float(to_mpmath(slope, point, digits=40)) for slope in slopes])
        except (KeyError, ArithmeticError, TypeError, ValueError):
            return False
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


def _rounding_only(expr: sympy.Expr, tries: int = 4) -> bool:
    """Whether ``expr`` has decimal constants and is below 10⁻¹³ of the sum of its terms' sizes at random points."""
    if not expr.atoms(sympy.Float) and not any(_from_binary(r) for r in expr.atoms(sympy.Rational)):
        return False
    rng = random.Random(4)
    symbols = symbols_of(expr)
    terms = sympy.Add.make_args(expr)  # the two sides' terms, as they were written
    for _ in range(tries):
        point = {s: Fraction(rng.randint(300, 1700), 1000) for s in symbols}
        try:
            value = abs(to_mpmath(expr, point, digits=40))
            scale = sum(abs(to_mpmath(term, point, digits=40)) for term in terms)
        except (KeyError, ArithmeticError):
            return False
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
    """The last resort, reported as such: |expr| < 10^-45 at random points, computed with 60 digits."""
    rng = random.Random(3)
    symbols = symbols_of(expr)
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
    symbols = symbols_of(plain)
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
    symbols = symbols_of(expr)
    for _ in range(tries):
        point = {s: rng.uniform(0.3, 1.7) for s in symbols}
        try:
            value = to_mpmath(expr, point, digits=30)
        except (KeyError, ArithmeticError):
            return False
        if abs(value) > 1e-20:  # False for nan
            return True
    return False
