"""Scalar SymPy functions for torch's elementary and floating-point functions, with torch's values and gradients.

The elementary ones (``log2``, ``sinc``, ``logit``, ``entr``) keep a name of their own, so that their
float64 values are the C library's (``log2(8)`` is exactly 3, where ``log(8)/log(2)`` is not) and their
derivatives keep torch's values at the singular points. The floating-point ones act on the representation
(``copysign`` reads the sign of -0.0, ``remainder`` follows the divisor's sign) and have torch's gradients.
Integer functions (bit operations, gcd) compute on exact integers and have no gradient.

>>> x = sympy.Symbol("x", real=True)
>>> sinc.float64(0.0), log2.float64(8.0), remainder.float64(-1.0, 3.0), copysign.float64(2.0, -0.0)
(1.0, 3.0, 2.0, -2.0)
>>> entr(x).diff(x)
-log(x) - 1
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
import sympy

from ..core.errors import UnsupportedError
from .functions import floor, isnan, masked_div, trunc
from .special_functions import TorchFunction, mp


class log2(TorchFunction):  # noqa: N801 - spelled as in torch
    """log₂(x)."""

    mpmath = mp(lambda x: mpmath.log(x, 2))

    latex_name = r"\log_2"

    @staticmethod
    def float64(x: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.log2(np.float64(x)))

    def fdiff(self, argindex: int = 1) -> Any:
        return 1 / (self.args[0] * sympy.log(2))


class log10(TorchFunction):  # noqa: N801 - spelled as in torch
    """log₁₀(x)."""

    mpmath = mp(lambda x: mpmath.log(x, 10))

    latex_name = r"\log_{10}"

    @staticmethod
    def float64(x: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.log10(np.float64(x)))

    def fdiff(self, argindex: int = 1) -> Any:
        return 1 / (self.args[0] * sympy.log(10))


class sinc(TorchFunction):  # noqa: N801 - spelled as in torch
    """sin(πx)/(πx), 1 at 0 (torch's normalized sinc; SymPy's ``sinc`` is sin(x)/x); its derivative is 0 at 0."""

    mpmath = mp(lambda x: mpmath.mpf(1) if x == 0 else mpmath.sinpi(x) / (mpmath.pi * x))

    latex_name = r"\operatorname{sinc}"

    @staticmethod
    def float64(x: float) -> float:
        if x == 0:
            return 1.0
        with np.errstate(all="ignore"):
            product = np.float64(math.pi) * np.float64(x)
            return float(np.sin(product) / product)

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        product = sympy.pi * x
        return sympy.Piecewise(
            (0, sympy.Eq(x, 0)), ((product * sympy.cos(product) - sympy.sin(product)) / (product * x), True)
        )


class entr(TorchFunction):  # noqa: N801 - spelled as in torch
    """-x·log(x): 0 at 0, -inf for x < 0."""

    mpmath = mp(lambda x: -mpmath.inf if x < 0 else (mpmath.mpf(0) if x == 0 else -x * mpmath.log(x)))

    latex_name = r"\operatorname{entr}"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x):
            return math.nan
        if x < 0:
            return -math.inf
        if x == 0:
            return 0.0
        with np.errstate(all="ignore"):
            return float(-np.float64(x) * np.log(np.float64(x)))

    def fdiff(self, argindex: int = 1) -> Any:
        return -(1 + sympy.log(self.args[0]))


class logit(TorchFunction):  # noqa: N801 - spelled as in torch
    """log(x/(1-x)); nan outside [0, 1], where torch's derivative is nan too."""

    mpmath = mp(lambda x: mpmath.log(x / (1 - x)))

    latex_name = r"\operatorname{logit}"

    @staticmethod
    def float64(x: float) -> float:
        with np.errstate(all="ignore"):
            z = np.float64(x)
            return float(np.log(z / (1 - z)))

    def fdiff(self, argindex: int = 1) -> Any:
        return logit_derivative(self.args[0])


class logit_derivative(TorchFunction):  # noqa: N801
    """logit'(x) = 1/(x(1-x)) on [0, 1], and nan outside it, as torch's logit backward."""

    mpmath = mp(lambda x: mpmath.nan if x < 0 or x > 1 else 1 / (x * (1 - x)))

    latex_name = r"\operatorname{logit}'"

    @staticmethod
    def float64(x: float) -> float:
        if math.isnan(x) or x < 0 or x > 1:
            return math.nan
        with np.errstate(all="ignore"):
            return float(1 / (np.float64(x) * (1 - np.float64(x))))

    def fdiff(self, argindex: int = 1) -> Any:
        x = self.args[0]
        return (2 * x - 1) * self**2


class clamped_logit(TorchFunction):  # noqa: N801
    """logit(x, eps): the logit of x clamped to [eps, 1 - eps]; torch's derivative is 0 outside that interval and
    1/(x(1-x)) inside it, bounds included."""

    mpmath = mp(lambda x, eps: mpmath.log(min(max(x, eps), 1 - eps) / (1 - min(max(x, eps), 1 - eps))))

    latex_name = r"\operatorname{logit}"

    @staticmethod
    def float64(x: float, eps: float) -> float:
        with np.errstate(all="ignore"):
            z = np.clip(np.float64(x), eps, 1 - eps)
            return float(np.log(z / (1 - z)))

    def fdiff(self, argindex: int = 1) -> Any:
        x, eps = self.args
        if argindex == 2:
            return sympy.S.Zero
        outside = sympy.Or(sympy.StrictLessThan(x, eps), sympy.StrictGreaterThan(x, 1 - eps))
        return sympy.Piecewise((0, outside), (1 / (x * (1 - x)), True))

    def as_op(self) -> tuple[str, list, dict] | None:
        x, eps = self.args
        return ("logit", [x], {"eps": float(eps)}) if eps.is_Number else None

    def _latex(self, printer: Any, exp: Any = None) -> str:
        x, eps = (printer._print(a) for a in self.args)
        body = rf"\operatorname{{logit}}_{{{eps}}}\left({x}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


class floor_divide(TorchFunction):  # noqa: N801 - spelled as in torch
    """floor(a / b) as torch.floor_divide (``//``) computes it; torch defines no derivative for it."""

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if a.is_Number and b.is_Number:
            return (
                sympy.Float(floor_divide.float64(float(a), float(b)))
                if not (a.is_Integer and b.is_Integer)
                else (sympy.Integer(int(a) // int(b)) if b != 0 else None)
            )
        return None

    @staticmethod
    def float64(a: float, b: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.floor_divide(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        raise UnsupportedError(
            "derivative for aten::floor_divide is not implemented (torch raises this at backward): detach the "
            "operands of //, or use torch.div(a, b, rounding_mode='floor'), whose gradient is 0"
        )

    def _latex(self, printer: Any, exp: Any = None) -> str:
        a, b = (printer._print(x) for x in self.args)
        body = rf"\left\lfloor\frac{{{a}}}{{{b}}}\right\rfloor"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


class xlog1py(TorchFunction):  # noqa: N801 - spelled as in torch
    """x·log(1 + y): 0 where x is 0 (unless y is nan), as torch.special.xlog1py."""

    mpmath = mp(lambda x, y: mpmath.mpf(0) if x == 0 else x * mpmath.log1p(y))

    @classmethod
    def eval(cls, x: Any, y: Any) -> Any:
        if x.is_zero and (y.is_finite or y.is_infinite):
            return sympy.S.Zero
        return super().eval(x, y)

    @staticmethod
    def float64(x: float, y: float) -> float:
        if math.isnan(y):
            return math.nan
        if x == 0:
            return 0.0
        with np.errstate(all="ignore"):
            return float(np.float64(x) * np.log1p(np.float64(y)))

    def fdiff(self, argindex: int = 1) -> Any:
        x, y = self.args
        if argindex == 2:
            return x / (1 + y)
        return sympy.Piecewise((0, sympy.Eq(x, 0)), (sympy.log(1 + y), True))

    def _latex(self, printer: Any, exp: Any = None) -> str:
        x, y = (printer._print(a) for a in self.args)
        body = rf"{x} \log\left(1 + {y}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


# ── floating-point functions ───────────────────────────────────────────────────────────────────────────
class copysign(TorchFunction):  # noqa: N801 - spelled as in torch
    """|a| with the sign bit of b (so -0.0 counts as negative); torch's gradient is sign(a)·copysign(1, b) in a
    (0 at a = 0) and 0 in b."""

    mpmath = mp(lambda a, b: abs(a) if b >= 0 else -abs(a))

    @staticmethod
    def float64(a: float, b: float) -> float:
        return math.copysign(a, b) if not math.isnan(a) else math.nan

    def fdiff(self, argindex: int = 1) -> Any:
        a = self.args[0]  # torch's: g · (result / a, 0 where a is 0), g outside the select (a nan g stays nan)
        return masked_div(self, a) if argindex == 1 else sympy.S.Zero

    def _latex(self, printer: Any, exp: Any = None) -> str:
        a, b = (printer._print(x) for x in self.args)
        body = rf"\left|{a}\right| \operatorname{{sgn}}\left({b}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


def sign_bits(values: np.ndarray, what: str) -> np.ndarray:
    """The sign bits of ``values``, refusing a nan: torch's kernels give the nans they make different signs
    (``sqrt(-1)`` a positive one, ``0 * inf`` a negative one here), so a result that reads one is not certain.

    >>> sign_bits(np.array([-0.0, 2.0]), "copysign").tolist()
    [True, False]
    """
    if np.isnan(values).any():
        raise UnsupportedError(
            f"{what} of a nan is not supported: its result is the nan's sign bit, which torch's kernels set "
            "differently for the nans they make"
        )
    return np.signbit(values)


def copysign_numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch.copysign on float64 arrays (see :func:`sign_bits` for a nan sign)."""
    return np.where(sign_bits(b, "copysign"), -np.abs(a), np.abs(a))


def signbit_numbers(x: np.ndarray) -> np.ndarray:
    """torch.signbit on float64 arrays (see :func:`sign_bits` for a nan)."""
    return sign_bits(x, "signbit")


class remainder(TorchFunction):  # noqa: N801 - spelled as in torch
    """a - b·floor(a/b): Python's ``%``, of the divisor's sign (torch.remainder); gradients g and -g·floor(a/b)."""

    mpmath = mp(lambda a, b: a - b * mpmath.floor(a / b))

    latex_name = r"\operatorname{mod}"

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if a.is_Integer and b.is_Integer and b != 0:  # integer tensors: exact
            return sympy.Integer(int(a) % int(b))
        return super().eval(a, b)

    @staticmethod
    def float64(a: float, b: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.remainder(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args
        return sympy.S.One if argindex == 1 else -floor(a / b)


class fmod(TorchFunction):  # noqa: N801 - spelled as in torch
    """a - b·trunc(a/b): C's fmod, of the dividend's sign; gradients g and -g·trunc(a/b)."""

    mpmath = mp(lambda a, b: mpmath.fmod(a, b))

    latex_name = r"\operatorname{fmod}"

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        if a.is_Integer and b.is_Integer and b != 0:  # integer tensors: exact, of the dividend's sign
            return sympy.Integer(int(math.fmod(int(a), int(b))))
        return super().eval(a, b)

    @staticmethod
    def float64(a: float, b: float) -> float:
        with np.errstate(all="ignore"):
            return float(np.fmod(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args
        return sympy.S.One if argindex == 1 else -trunc(a / b)


class nextafter(TorchFunction):  # noqa: N801 - spelled as in torch
    """The float64 after a in the direction of b."""

    @staticmethod
    def float64(a: float, b: float) -> float:
        return float(np.nextafter(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args  # torch's: the incoming gradient where a ≠ b (a nan b included), none to b
        return sympy.Piecewise((0, sympy.Eq(a, b)), (1, True)) if argindex == 1 else sympy.S.Zero


class fmax(TorchFunction):  # noqa: N801 - spelled as in torch
    """The larger of a and b, the number where one is nan; at a tie all the derivative goes to a (torch's)."""

    mpmath = mp(lambda a, b: b if mpmath.isnan(a) else (a if mpmath.isnan(b) else max(a, b)))

    latex_name = r"\max"

    @staticmethod
    def float64(a: float, b: float) -> float:
        return float(np.fmax(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args
        mine = sympy.Or(sympy.GreaterThan(a, b), isnan(b))
        return sympy.Piecewise((1, mine), (0, True)) if argindex == 1 else sympy.Piecewise((0, mine), (1, True))


class fmin(TorchFunction):  # noqa: N801 - spelled as in torch
    """The smaller of a and b, the number where one is nan; at a tie all the derivative goes to a (torch's)."""

    mpmath = mp(lambda a, b: b if mpmath.isnan(a) else (a if mpmath.isnan(b) else min(a, b)))

    latex_name = r"\min"

    @staticmethod
    def float64(a: float, b: float) -> float:
        return float(np.fmin(np.float64(a), np.float64(b)))

    def fdiff(self, argindex: int = 1) -> Any:
        a, b = self.args
        mine = sympy.Or(sympy.LessThan(a, b), isnan(b))
        return sympy.Piecewise((1, mine), (0, True)) if argindex == 1 else sympy.Piecewise((0, mine), (1, True))


class _Test(sympy.logic.boolalg.BooleanFunction):
    """A test of a float's class (finite, infinite, its sign bit), decided on numbers only."""

    test: Any

    @classmethod
    def eval(cls, arg: Any) -> Any:
        if arg.is_Number or arg in (sympy.oo, -sympy.oo, sympy.nan):
            return sympy.true if cls.test(_float(arg)) else sympy.false
        return None

    def _eval_as_set(self) -> Any:
        raise NotImplementedError("a float's class has no set over the reals")


def _float(value: Any) -> float:
    if value is sympy.nan:
        return math.nan
    if value is sympy.oo:
        return math.inf
    if value is -sympy.oo:
        return -math.inf
    return float(value)


def _test(name: str, test: Any) -> type:
    return type(
        name, (_Test,), {"test": staticmethod(test), "float64": staticmethod(test), "__doc__": f"torch.{name}."}
    )


isfinite = _test("isfinite", math.isfinite)
isinf = _test("isinf", math.isinf)
isposinf = _test("isposinf", lambda x: x == math.inf)
isneginf = _test("isneginf", lambda x: x == -math.inf)
signbit = _test("signbit", lambda x: math.copysign(1.0, x) < 0)


# ── integer functions (no gradient): exact on integers, and on booleans as torch's bit operations ───────────
class IntegerFunction(sympy.Function):
    """A function of integers, evaluated on integer (or boolean) arguments only."""

    compute: Any

    @classmethod
    def eval(cls, *args: Any) -> Any:
        if not all(a.is_Integer or a in (sympy.true, sympy.false) for a in args):
            return None
        booleans = all(a in (sympy.true, sympy.false) for a in args)
        result = cls.compute(*(int(bool(a)) if a in (sympy.true, sympy.false) else int(a) for a in args))
        if booleans:
            return sympy.true if result else sympy.false
        return sympy.Integer(result)


def _integer(name: str, compute: Any) -> type:
    return type(name, (IntegerFunction,), {"compute": staticmethod(compute), "__doc__": f"torch.{name}."})


def _shift_left(a: int, b: int) -> int:
    """torch's ``<<`` on int64: 0 for a shift of 64 or more (or a negative one), wrapped to 64 bits."""
    if b < 0 or b >= 64:
        return 0
    return _wrap64(a << b)


def _shift_right(a: int, b: int) -> int:
    """torch's arithmetic ``>>`` on int64: the sign bit for a shift of 64 or more (or a negative one)."""
    if b < 0 or b >= 64:
        return -1 if a < 0 else 0
    return a >> b


def _wrap64(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


bitwise_and = _integer("bitwise_and", lambda a, b: a & b)
bitwise_or = _integer("bitwise_or", lambda a, b: a | b)
bitwise_xor = _integer("bitwise_xor", lambda a, b: a ^ b)
bitwise_left_shift = _integer("bitwise_left_shift", _shift_left)
bitwise_right_shift = _integer("bitwise_right_shift", _shift_right)
gcd = _integer("gcd", math.gcd)
lcm = _integer("lcm", lambda a, b: _wrap64(abs(a * b) // math.gcd(a, b)) if a and b else 0)


class bitwise_not(IntegerFunction):  # noqa: N801 - spelled as in torch
    """~a on integers (two's complement), ``not`` on booleans."""

    @classmethod
    def eval(cls, a: Any) -> Any:
        if a in (sympy.true, sympy.false):
            return sympy.false if a is sympy.true else sympy.true
        return sympy.Integer(~int(a)) if a.is_Integer else None


class frexp_mantissa(TorchFunction):  # noqa: N801
    """The mantissa m of x = m·2^e with 0.5 ≤ |m| < 1 (torch.frexp's first result); its derivative is 2^-e."""

    @staticmethod
    def float64(x: float) -> float:
        return x if math.isnan(x) or math.isinf(x) else math.frexp(x)[0]

    def fdiff(self, argindex: int = 1) -> Any:
        return 1 / frexp_step(self.args[0])


class frexp_step(TorchFunction):  # noqa: N801
    """2^e for x's frexp exponent e, as torch's frexp backward computes it: ``exponent.exp2()`` of an int32, in
    float32 (so it overflows to inf above 2^127 and underflows to 0 below 2^-149); piecewise constant."""

    @staticmethod
    def float64(x: float) -> float:
        exponent = frexp_exponent.float64(x)
        with np.errstate(all="ignore"):
            return float(np.exp2(np.float32(exponent)))

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


class frexp_exponent(TorchFunction):  # noqa: N801
    """The exponent e of x = m·2^e (torch.frexp's second result, an int32); piecewise constant."""

    @staticmethod
    def float64(x: float) -> float:
        return 0.0 if math.isnan(x) or math.isinf(x) else float(math.frexp(x)[1])

    def fdiff(self, argindex: int = 1) -> Any:
        return sympy.S.Zero


# ── inverse trigonometric and hyperbolic functions with torch's derivative formulas ───────────────────────
# SymPy writes acosh' as 1/(sqrt(x - 1)·sqrt(x + 1)), which is nan at x = -1 where torch's (x² - 1)^(-1/2) is inf;
# these keep SymPy's values and take torch's derivatives (derivatives.yaml).
def _with_derivative(base: type, derivative: Any, numpy_function: Any) -> type:
    def fdiff(self: Any, argindex: int = 1) -> Any:
        return derivative(self.args[0], self)

    return type(
        base.__name__,
        (base,),
        {
            "fdiff": fdiff,
            "float64": staticmethod(lambda x: float(numpy_function(np.float64(x)))),
            "__doc__": f"SymPy's {base.__name__} with torch's derivative formula.",
            "__module__": __name__,
        },
    )


asin = _with_derivative(sympy.asin, lambda x, out: 1 / sympy.sqrt(1 - x * x), np.arcsin)
acos = _with_derivative(sympy.acos, lambda x, out: -1 / sympy.sqrt(1 - x * x), np.arccos)
atan = _with_derivative(sympy.atan, lambda x, out: 1 / (x * x + 1), np.arctan)
asinh = _with_derivative(sympy.asinh, lambda x, out: 1 / sympy.sqrt(x**2 + 1), np.arcsinh)
acosh = _with_derivative(sympy.acosh, lambda x, out: 1 / sympy.sqrt(x**2 - 1), np.arccosh)
atanh = _with_derivative(sympy.atanh, lambda x, out: 1 / (1 - x**2), np.arctanh)
tan = _with_derivative(sympy.tan, lambda x, out: 1 + out**2, np.tan)
