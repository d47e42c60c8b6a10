"""Scalar SymPy functions for torch's special functions, with torch's values at poles and edges.

Each class gives its float64 value the way torch computes it (through ``float64``, which
:mod:`symgrad.core.ieee` reads; mpmath, SymPy's own arbitrary-precision library, supplies the
values torch's Cephes routines approximate), its derivative as torch's backward formula writes
it (``fdiff``), and its LaTeX. None rewrites itself into another function, so a derivative keeps
torch's form: ``log_ndtr'`` is ``exp(-x²/2 - log_ndtr(x)) / sqrt(2π)``, which stays finite far in
the tail where ``ndtr'(x) / ndtr(x)`` would be 0/0.

>>> x = sympy.Symbol("x", real=True)
>>> lgamma(x).diff(x), digamma(x).diff(x)
(digamma(x), polygamma(1, x))
>>> erfinv.float64(1.0), lgamma.float64(0.0), digamma.float64(-0.0)
(inf, inf, inf)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import sympy

from ..core.ieee import as_sympy_number

_DIGITS = 40  # mpmath's working precision: every float64 result below is correctly rounded at this precision


def _exact(compute: Callable[..., Any]) -> Callable[..., float]:
    """A float64 function from an mpmath one, run at :data:`_DIGITS` digits (a complex result is nan, as torch's
    real functions give outside their domain)."""

    def value(*xs: float) -> float:
        if any(math.isnan(x) for x in xs):
            return math.nan
        with mpmath.workdps(_DIGITS):
            try:
                result = compute(*(mpmath.mpf(x) for x in xs))
            except (ValueError, ZeroDivisionError):
                return math.nan
            if isinstance(result, mpmath.mpc):
                return math.nan if result.imag != 0 else float(result.real)
            return float(result)

    return value


def mp(compute: Callable[..., Any]) -> Any:
    """A class's ``mpmath`` value: ``compute`` on mpmath numbers at the caller's precision (nan where it raises or
    is complex), which the exact proofs evaluate where float64 would not tell equal formulas apart."""

    def value(*xs: Any) -> Any:
        try:
            result = compute(*xs)
        except (ValueError, ZeroDivisionError):
            return mpmath.nan
        if isinstance(result, mpmath.mpc):
            return result.real if result.imag == 0 else mpmath.nan
        return result

    return staticmethod(value)


class TorchFunction(sympy.Function):
    """A function of real arguments with a float64 value (``float64``) and a LaTeX name (``latex_name``): it
    evaluates on numbers only when one of them is a float (exact arguments keep the formula)."""

    latex_name = r"\operatorname{f}"
    float64: Callable[..., float]

    @classmethod
    def eval(cls, *args: Any) -> Any:
        if any(a is sympy.nan for a in args):
            return sympy.nan
        if all(a.is_Number for a in args) and any(a.is_Float for a in args):
            return as_sympy_number(cls.float64(*(float(a) for a in args)))
        return None

    def _eval_is_real(self) -> bool | None:
        return True if all(a.is_real for a in self.args) else None

    def _latex(self, printer: Any, exp: Any = None) -> str:
        inner = ", ".join(printer._print(a) for a in self.args)
        body = rf"{self.latex_name}\left({inner}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


# ── the gamma family ───────────────────────────────────────────────────────────────────────────────────
class lgamma(TorchFunction):  # noqa: N801 - spelled as in torch
    """log |Γ(x)|, +inf at the poles (0, -1, -2, …) and at ±inf, as C's lgamma."""

    mpmath = mp(lambda x: mpmath.log(abs(mpmath.gamma(x))))

    latex_name = r"\log\left|\Gamma\right|"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x):
            return math.nan
        if math.isinf(x) or (x <= 0 and x == math.floor(x)):
            return math.inf
        return math.lgamma(x)

    def fdiff(self, argindex: int = 1) -> Any:
        return digamma(self.args[0])

    def _latex(self, printer: Any, exp: Any = None) -> str:
        body = rf"\log\left|\Gamma\left({printer._print(self.args[0])}\right)\right|"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


class digamma(TorchFunction):  # noqa: N801 - spelled as in torch
    """ψ(x) = Γ'(x)/Γ(x); torch's values at the poles: -inf at +0, +inf at -0, nan at the negative integers."""

    mpmath = mp(mpmath.digamma)

    latex_name = r"\psi"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x) or x == -math.inf:
            return math.nan
        if x == 0:
            return math.copysign(math.inf, -x)
        if x < 0 and x == math.floor(x):
            return math.nan
        if x == math.inf:
            return math.inf
        return _exact(mpmath.digamma)(x)

    def fdiff(self, argindex: int = 1) -> Any:
        return polygamma(1, self.args[0])


class polygamma(TorchFunction):  # noqa: N801 - spelled as in torch
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function (n a non-negative integer, not differentiated)."""

    mpmath = mp(lambda n, x: mpmath.polygamma(int(n), x))

    @classmethod
    def eval(cls, n: Any, x: Any) -> Any:
        if n == 0:
            return digamma(x)
        return super().eval(n, x) if x.is_Float or x is sympy.nan else None

    @staticmethod
    def float64(n: float, x: float) -> float:
        order = int(n)
        if order == 0:
            return digamma.float64(x)
        if math.isnan(x) or x == -math.inf:
            return math.nan
        if x == math.inf:
            return 0.0
        if order == 1 and x < 0.5:  # torch's reflection: a huge finite number at -1, -2, … (sin(πx) is not 0 there)
            return _trigamma_reflected(x)
        if x <= 0 and x == math.floor(x):  # a pole: the sign of (-1)^(n+1) n! ζ(n+1, x) there
            return math.inf if order % 2 == 1 else -math.inf
        return _exact(lambda value: mpmath.polygamma(order, value))(x)

    def fdiff(self, argindex: int = 2) -> Any:
        n, x = self.args
        return sympy.S.Zero if argindex == 1 else polygamma(n + 1, x)

    def as_op(self) -> tuple[str, list, dict] | None:
        """The row that computes it: ``polygamma`` of x, with n as its attribute."""
        n, x = self.args
        return ("polygamma", [x], {"n": int(n)}) if n.is_Integer else None

    def _latex(self, printer: Any, exp: Any = None) -> str:
        n, x = self.args
        body = rf"\psi^{{({printer._print(n)})}}\left({printer._print(x)}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


def _trigamma_reflected(x: float) -> float:
    """ψ'(x) for x < 1/2 by the reflection formula ψ'(x) = π²/sin²(πx) - ψ'(1 - x), with sin(πx) in float64, as
    torch computes it: inf at 0, and π²/sin²(πx) (about 6.6e32) at the negative integers."""
    sine = math.sin(math.pi * x)
    if sine == 0:
        return math.inf
    return math.pi**2 / (sine * sine) - _exact(lambda value: mpmath.polygamma(1, value))(1 - x)


# ── error functions and the normal distribution ────────────────────────────────────────────────────────
class erfinv(TorchFunction):  # noqa: N801 - spelled as in torch
    """The inverse of erf on (-1, 1): ±inf at ±1, nan outside."""

    mpmath = mp(mpmath.erfinv)

    latex_name = r"\operatorname{erf}^{-1}"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x) or abs(x) > 1:
            return math.nan
        if abs(x) == 1:
            return math.copysign(math.inf, x)
        return _exact(mpmath.erfinv)(x)

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.sqrt(sympy.pi) / 2 * sympy.exp(self**2)


class ndtr(TorchFunction):  # noqa: N801 - spelled as in torch
    """Φ(x), the standard normal distribution function, computed as ``erfc(-x/√2)/2`` (exact in the left tail)."""

    mpmath = mp(mpmath.ncdf)

    latex_name = r"\Phi"

    @staticmethod
    def float64(x: float) -> float:
        return math.nan if math.isnan(x) else 0.5 * math.erfc(-x / math.sqrt(2.0))

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return sympy.exp(-(x**2) / 2) / sympy.sqrt(2 * sympy.pi)


class ndtri(TorchFunction):  # noqa: N801 - spelled as in torch
    """Φ⁻¹(p): -inf at 0, inf at 1, nan outside [0, 1]."""

    mpmath = mp(lambda p: mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1))

    latex_name = r"\Phi^{-1}"

    @staticmethod
    def float64(p: float) -> float:
        if math.isnan(p) or p < 0 or p > 1:
            return math.nan
        if p in (0.0, 1.0):
            return -math.inf if p == 0 else math.inf
        return _exact(lambda q: mpmath.sqrt(2) * mpmath.erfinv(2 * q - 1))(p)

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.sqrt(2 * sympy.pi) * sympy.exp(self**2 / 2)


class log_ndtr(TorchFunction):  # noqa: N801 - spelled as in torch
    """log Φ(x), finite far into the left tail."""

    mpmath = mp(lambda x: mpmath.log(mpmath.ncdf(x)))

    latex_name = r"\log\Phi"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x):
            return math.nan
        if x == math.inf:
            return 0.0
        if x == -math.inf:
            return -math.inf
        return _exact(lambda v: mpmath.log(mpmath.ncdf(v)))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return sympy.exp(-(x**2) / 2 - self) / sympy.sqrt(2 * sympy.pi)


class erfcx(TorchFunction):  # noqa: N801 - spelled as in torch
    """exp(x²)·erfc(x), the scaled complementary error function."""

    mpmath = mp(lambda x: mpmath.exp(x**2) * mpmath.erfc(x))

    latex_name = r"\operatorname{erfcx}"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x):
            return math.nan
        if x == math.inf:
            return 0.0
        if x == -math.inf:
            return math.inf
        return _exact(lambda v: mpmath.exp(v**2) * mpmath.erfc(v))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return 2 * x * self - 2 / sympy.sqrt(sympy.pi)


# ── modified Bessel functions (torch differentiates these) ─────────────────────────────────────────────
class i0(TorchFunction):  # noqa: N801 - spelled as in torch
    """I₀(x), the modified Bessel function of the first kind, order 0."""

    mpmath = mp(lambda x: mpmath.besseli(0, x))

    latex_name = "I_0"

    @staticmethod
    def float64(x: float) -> float:
        if math.isinf(x):
            return math.inf
        return _exact(lambda v: mpmath.besseli(0, v))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        return i1(self.args[0])


class i1(TorchFunction):  # noqa: N801 - spelled as in torch
    """I₁(x), the modified Bessel function of the first kind, order 1; its derivative is 1/2 at 0, as torch's."""

    mpmath = mp(lambda x: mpmath.besseli(1, x))

    latex_name = "I_1"

    @staticmethod
    def float64(x: float) -> float:
        if math.isinf(x):
            return x
        return _exact(lambda v: mpmath.besseli(1, v))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return sympy.Piecewise((sympy.Rational(1, 2), sympy.Eq(x, 0)), (i0(x) - self / x, True))


class i0e(TorchFunction):  # noqa: N801 - spelled as in torch
    """exp(-|x|)·I₀(x)."""

    mpmath = mp(lambda x: mpmath.exp(-abs(x)) * mpmath.besseli(0, x))

    latex_name = r"I_0^{e}"

    @staticmethod
    def float64(x: float) -> float:
        if math.isinf(x):
            return 0.0
        return _exact(lambda v: mpmath.exp(-abs(v)) * mpmath.besseli(0, v))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return i1e(x) - sympy.sign(x) * self


class i1e(TorchFunction):  # noqa: N801 - spelled as in torch
    """exp(-|x|)·I₁(x); its derivative is 1/2 at 0, as torch's."""

    mpmath = mp(lambda x: mpmath.exp(-abs(x)) * mpmath.besseli(1, x))

    latex_name = r"I_1^{e}"

    @staticmethod
    def float64(x: float) -> float:
        if math.isinf(x):
            return 0.0
        return _exact(lambda v: mpmath.exp(-abs(v)) * mpmath.besseli(1, v))(x)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return sympy.Piecewise((sympy.Rational(1, 2), sympy.Eq(x, 0)), (i0e(x) - self * (sympy.sign(x) + 1 / x), True))


# ── functions torch does not differentiate (its results do not require grad) ───────────────────────────
class Opaque(TorchFunction):
    """A function whose derivative torch does not define: its row is not differentiable, so its result does not
    require grad (``backward`` through it raises, as torch's does), and an entrywise derivative through it is 0,
    as ``torch.func.vjp`` gives."""

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.Integer(0)


def _bessel(compute: Callable[[Any], Any], *, zero: float | None = None, negative: bool = True) -> Callable:
    """A float64 Bessel function: ``zero`` at 0 (its pole), nan at x < 0 unless ``negative``."""

    def value(x: float) -> float:
        if math.isnan(x):
            return math.nan
        if x == 0 and zero is not None:
            return zero
        if x < 0 and not negative:
            return math.nan
        if math.isinf(x):
            return _at_infinity(compute, x)
        return _exact(compute)(x)

    return value


def _at_infinity(compute: Callable[[Any], Any], x: float) -> float:
    """A Bessel function's limit at ±inf, read off a large argument (0, or an overflow to inf)."""
    far = _exact(compute)(math.copysign(1e6, x))
    return 0.0 if abs(far) < 1 else math.copysign(math.inf, far)


def _opaque(name: str, latex: str, value: Callable[[float], float]) -> type:
    return type(name, (Opaque,), {"latex_name": latex, "float64": staticmethod(value), "__doc__": f"torch's {name}."})


bessel_j0 = _opaque("bessel_j0", "J_0", _bessel(lambda v: mpmath.besselj(0, v)))
bessel_j1 = _opaque("bessel_j1", "J_1", _bessel(lambda v: mpmath.besselj(1, v)))
bessel_y0 = _opaque("bessel_y0", "Y_0", _bessel(lambda v: mpmath.bessely(0, v), zero=-math.inf, negative=False))
bessel_y1 = _opaque("bessel_y1", "Y_1", _bessel(lambda v: mpmath.bessely(1, v), zero=-math.inf, negative=False))
modified_bessel_i0 = _opaque("modified_bessel_i0", "I_0", _bessel(lambda v: mpmath.besseli(0, v)))
modified_bessel_i1 = _opaque("modified_bessel_i1", "I_1", _bessel(lambda v: mpmath.besseli(1, v)))
modified_bessel_k0 = _opaque(
    "modified_bessel_k0", "K_0", _bessel(lambda v: mpmath.besselk(0, v), zero=math.inf, negative=False)
)
modified_bessel_k1 = _opaque(
    "modified_bessel_k1", "K_1", _bessel(lambda v: mpmath.besselk(1, v), zero=math.inf, negative=False)
)
scaled_modified_bessel_k0 = _opaque(
    "scaled_modified_bessel_k0",
    r"K_0^{e}",
    _bessel(lambda v: mpmath.exp(v) * mpmath.besselk(0, v), zero=math.inf, negative=False),
)
scaled_modified_bessel_k1 = _opaque(
    "scaled_modified_bessel_k1",
    r"K_1^{e}",
    _bessel(lambda v: mpmath.exp(v) * mpmath.besselk(1, v), zero=math.inf, negative=False),
)
spherical_bessel_j0 = _opaque(
    "spherical_bessel_j0", "j_0", lambda x: 1.0 if x == 0 else (0.0 if math.isinf(x) else math.sin(x) / x)
)
airy_ai = _opaque("airy_ai", r"\operatorname{Ai}", _bessel(mpmath.airyai))


# ── orthogonal polynomials of degree n (a tensor truncated to an integer), as torch evaluates them ──────────
def _recurrence(first: float, second: float, step: Callable[[int, float, float], float], n: int) -> float:
    p, q = first, second
    for k in range(2, n + 1):
        p, q = q, step(k, p, q)
    return q


def _chebyshev_t(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        return 1.0 if x > 0 or n % 2 == 0 else -1.0
    if n > 6 and abs(x) < 1:
        return math.cos(n * math.acos(x))
    if n == 0:
        return 1.0
    return _recurrence(1.0, x, lambda k, p, q: (x + x) * q - p, n)


def _chebyshev_u(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        return float(n + 1) if x > 0 or n % 2 == 0 else float(-(n + 1))
    if n > 8 and abs(x) < 1:
        angle = math.acos(x)
        if math.sin(angle) != 0:
            return math.sin((n + 1) * angle) / math.sin(angle)
        return (n + 1) * math.cos((n + 1) * angle) / x
    if n == 0:
        return 1.0
    return _recurrence(1.0, x + x, lambda k, p, q: (x + x) * q - p, n)


def _chebyshev_v(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        if x > 0:
            return 1.0
        return float(n + n + 1) if n % 2 == 0 else float(-(n + n + 1))
    if n > 8 and abs(x) < 1:
        angle = math.acos(x)
        if math.sin(angle / 2) != 1:
            return math.cos((n + 0.5) * angle) / math.cos(angle / 2)
        return float(n + n + 1) if n % 2 == 0 else float(-(n + n + 1))
    if n == 0:
        return 1.0
    return _recurrence(1.0, x + x - 1, lambda k, p, q: (x + x) * q - p, n)


def _chebyshev_w(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        if x > 0:
            return float(n + n + 1)
        return 1.0 if n % 2 == 0 else -1.0
    if n > 8 and abs(x) < 1:
        angle = math.acos(x)
        if math.cos(angle / 2) != 1:
            return math.sin((n + 0.5) * angle) / math.sin(angle / 2)
        if x > 0:
            return float(n + n + 1)
        return 1.0 if n % 2 == 0 else -1.0
    if n == 0:
        return 1.0
    return _recurrence(1.0, x + x + 1, lambda k, p, q: (x + x) * q - p, n)


def _shifted(polynomial: Callable[[float, int], float]) -> Callable[[float, int], float]:
    """The polynomial on [0, 1]: of ``2x - 1``."""
    return lambda x, n: polynomial(x + x - 1, n)


def _hermite_h(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p, q = 1.0, x + x
    for k in range(2, n + n, 2):
        p, q = q, (x + x) * q - k * p
    return q


def _hermite_he(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p, q = 1.0, x
    for k in range(1, n):
        p, q = q, x * q - k * p
    return q


def _laguerre_l(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 0 or n == 0:
        return 1.0
    p, q = 1.0, 1 - x
    for k in range(1, n):
        p, q = q, (((k + k) + (1 - x)) * q - k * p) / (k + 1)
    return q


def _legendre_p(x: float, n: int) -> float:
    if n < 0:
        return 0.0
    if abs(x) == 1:
        return 1.0 if x > 0 or n == 1 or n % 2 == 0 else -1.0
    if n == 0:
        return 1.0
    p, q = 1.0, x
    for k in range(1, n):
        p, q = q, ((k + k + 1) * x * q - k * p) / (k + 1)
    return q


def _polynomial(name: str, latex: str, evaluate: Callable[[float, int], float]) -> type:
    """A polynomial family P_n(x) as torch computes it: n truncated to an integer, nan for a nan x or n."""

    def value(x: float, n: float) -> float:
        # as torch: n truncated to an int64 (a nan degree reads as a negative one, whose polynomial is 0); a nan x
        # goes through the recurrence, so the degree-0 polynomial is 1 even there
        degree = -1 if math.isnan(n) or math.isinf(n) else int(n)
        with np.errstate(all="ignore"):
            return float(evaluate(x, degree))

    def latex_of(self: Any, printer: Any, exp: Any = None) -> str:
        x, n = self.args
        body = rf"{latex}_{{{printer._print(n)}}}\left({printer._print(x)}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body

    return type(
        name,
        (Opaque,),
        {"float64": staticmethod(value), "_latex": latex_of, "__doc__": f"torch's {name}(x, n)."},
    )


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", "T", _chebyshev_t)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", "U", _chebyshev_u)
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", "V", _chebyshev_v)
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", "W", _chebyshev_w)
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", "T^{*}", _shifted(_chebyshev_t))
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", "U^{*}", _shifted(_chebyshev_u))
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", "V^{*}", _shifted(_chebyshev_v))
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", "W^{*}", _shifted(_chebyshev_w))
hermite_polynomial_h = _polynomial("hermite_polynomial_h", "H", _hermite_h)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", r"\mathit{He}", _hermite_he)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", "L", _laguerre_l)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", "P", _legendre_p)


# ── functions of two arguments ─────────────────────────────────────────────────────────────────────────
class zeta(TorchFunction):  # noqa: N801 - spelled as in torch
    """The Hurwitz zeta function ζ(x, q) = Σₖ (k + q)^(-x), with Cephes' values where it diverges; torch
    differentiates it by q only."""

    mpmath = mp(mpmath.zeta)

    latex_name = r"\zeta"

    @staticmethod
    def float64(x: float, q: float) -> float:
        if math.isnan(x) or math.isnan(q):
            return math.nan
        if x == 1:
            return math.inf
        if x < 1:
            return math.nan
        if q <= 0:
            if q == math.floor(q):
                return math.inf
            if x != math.floor(x):
                return math.nan
        if math.isinf(x):
            return 1.0 if q == 1 else (0.0 if q > 1 else math.inf)
        if math.isinf(q):
            return 0.0
        return _exact(mpmath.zeta)(x, q)

    def fdiff(self, argindex: int = 2) -> Any:
        x, q = self.args
        return -x * zeta(x + 1, q) if argindex == 2 else sympy.nan


class igamma(TorchFunction):  # noqa: N801 - spelled as in torch
    """P(a, x), the regularized lower incomplete gamma function; torch differentiates it by x only."""

    mpmath = mp(lambda a, x: mpmath.gammainc(a, 0, x, regularized=True))

    latex_name = "P"

    @staticmethod
    def float64(a: float, x: float) -> float:
        if math.isnan(a) or math.isnan(x) or a < 0 or x < 0:
            return math.nan
        if a == 0:
            return 1.0 if x > 0 else math.nan
        if x == 0:
            return 0.0
        if math.isinf(a):
            return math.nan if math.isinf(x) else 0.0
        if math.isinf(x):
            return 1.0
        return _exact(lambda s, t: mpmath.gammainc(s, 0, t, regularized=True))(a, x)

    def fdiff(self, argindex: int = 2) -> Any:
        a, x = self.args
        return sympy.exp((a - 1) * sympy.log(x) - x - lgamma(a)) if argindex == 2 else sympy.nan


class igammac(TorchFunction):  # noqa: N801 - spelled as in torch
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function; torch differentiates it by x only."""

    mpmath = mp(lambda a, x: mpmath.gammainc(a, x, mpmath.inf, regularized=True))

    latex_name = "Q"

    @staticmethod
    def float64(a: float, x: float) -> float:
        if math.isnan(a) or math.isnan(x) or a < 0 or x < 0:
            return math.nan
        if a == 0:
            return 0.0 if x > 0 else math.nan
        if x == 0:
            return 1.0
        if math.isinf(a):
            return math.nan if math.isinf(x) else 1.0
        if math.isinf(x):
            return 0.0
        return _exact(lambda s, t: mpmath.gammainc(s, t, mpmath.inf, regularized=True))(a, x)

    def fdiff(self, argindex: int = 2) -> Any:
        a, x = self.args
        return -sympy.exp((a - 1) * sympy.log(x) - x - lgamma(a)) if argindex == 2 else sympy.nan
