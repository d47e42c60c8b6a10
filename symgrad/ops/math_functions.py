"""torch's elementwise mathematical functions beyond arithmetic: trigonometric and hyperbolic, logarithms,
the gamma and error families, Bessel functions, orthogonal polynomials, floating-point and integer functions.

Each row is one entry of :data:`UNARY` or :data:`BINARY`: its SymPy function (which gives the meaning, the
derivative and the float64 value), its LaTeX, and torch's names for it. The torch functions and Tensor methods
are made from these names (see :func:`symgrad.ops.rows.spell`), so an op here is one line.

>>> import symgrad as sg
>>> x = sg.tensor([0.5], name="x", requires_grad=True)
>>> sg.vjp(x.acos().sum(), x).sympy()
[-1/sqrt(1 - x_0**2)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ..core.tensor import Tensor, apply
from . import float_functions as ff
from . import special_functions as sf
from .calculus import NoDerivative, partial_vjp, unbroadcast
from .functions import trunc
from .rows import binary, unary


def vectorized(scalar: Callable[..., float]) -> Callable[..., np.ndarray]:
    """A float64 function of numbers, applied entry by entry to arrays (broadcast)."""
    return np.vectorize(scalar, otypes=[float])


@dataclass(frozen=True)
class Function:
    """One elementwise function of one tensor: ``names`` are torch's (``"torch.acos"``, ``"Tensor.acos"``)."""

    name: str
    scalar: Callable[..., Any]
    latex: str
    names: tuple[str, ...]
    float64: Callable[..., Any] | None = None
    differentiable: bool = True
    grad_fn: str | None = None
    code: str | None = None
    approximated: bool = False  # torch's kernel approximates it (to about 1e-8): a trace's numbers follow torch


def _torch_and_method(name: str, *aliases: str) -> tuple[str, ...]:
    return tuple(f"{space}.{n}" for n in (name, *aliases) for space in ("torch", "Tensor"))


def _xlog1py_grad(g: Any, x: Any, y: Any) -> Any:
    """torch's: xlog1py(g, y), and 0 where x is 0 and y ≤ -1 (the derivative along x = 0 there)."""
    grad = apply("xlog1py", g, y)
    return apply("where", apply("eq", x, 0), apply("where", apply("le", y, -1), 0, grad), grad)


def _xlog1py_jvp(tangents: Any, out: Any, x: Any, y: Any) -> Any:
    """torch's: xlog1py(x != 0, y) · ẋ + ẏ · x / (y + 1): 0 along x where x is 0, unlike the VJP."""
    tx, ty = tangents
    terms = []
    if tx is not None:
        terms.append(tx * apply("xlog1py", apply("where", apply("eq", x, 0), 0, 1.0), y))
    if ty is not None:
        terms.append(ty * x / (y + 1))
    return terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _special(name: str, *more: str) -> tuple[str, ...]:
    return (f"torch.special.{name}", *more)


_OF = r"\left({0}\right)"
UNARY = [
    # trigonometric and hyperbolic
    Function("tan", ff.tan, r"\tan" + _OF, _torch_and_method("tan"), np.tan),
    Function("asin", ff.asin, r"\arcsin" + _OF, _torch_and_method("asin", "arcsin"), np.arcsin),
    Function("acos", ff.acos, r"\arccos" + _OF, _torch_and_method("acos", "arccos"), np.arccos),
    Function("atan", ff.atan, r"\arctan" + _OF, _torch_and_method("atan", "arctan"), np.arctan),
    Function("sinh", sympy.sinh, r"\sinh" + _OF, _torch_and_method("sinh"), np.sinh),
    Function("cosh", sympy.cosh, r"\cosh" + _OF, _torch_and_method("cosh"), np.cosh),
    Function("asinh", ff.asinh, r"\operatorname{{arsinh}}" + _OF, _torch_and_method("asinh", "arcsinh"), np.arcsinh),
    Function("acosh", ff.acosh, r"\operatorname{{arcosh}}" + _OF, _torch_and_method("acosh", "arccosh"), np.arccosh),
    Function("atanh", ff.atanh, r"\operatorname{{artanh}}" + _OF, _torch_and_method("atanh", "arctanh"), np.arctanh),
    Function("sinc", ff.sinc, r"\operatorname{{sinc}}" + _OF, _torch_and_method("sinc") + _special("sinc")),
    Function(
        "deg2rad", lambda t: t * (sympy.pi / 180), r"\frac{{\pi}}{{180}} {0}", _torch_and_method("deg2rad"), np.deg2rad
    ),
    Function(
        "rad2deg", lambda t: t * (180 / sympy.pi), r"\frac{{180}}{{\pi}} {0}", _torch_and_method("rad2deg"), np.rad2deg
    ),
    # logarithms and entropies
    Function("log2", ff.log2, r"\log_2" + _OF, _torch_and_method("log2"), np.log2),
    Function("log10", ff.log10, r"\log_{{10}}" + _OF, _torch_and_method("log10"), np.log10),
    Function(
        "entr",
        ff.entr,
        r"\operatorname{{entr}}" + _OF,
        _special("entr"),
        grad_fn="SpecialEntrBackward0",
        code="torch.special.entr({0})",
    ),
    Function(
        "frac",
        lambda t: t - trunc(t),
        r"\operatorname{{frac}}" + _OF,
        _torch_and_method("frac"),
        lambda a: a - np.trunc(a),
    ),
    # gamma and error functions
    Function(
        "lgamma",
        sf.lgamma,
        r"\log\left|\Gamma\left({0}\right)\right|",
        _torch_and_method("lgamma") + _special("gammaln"),
        approximated=True,
    ),
    Function(
        "digamma",
        sf.digamma,
        r"\psi" + _OF,
        _torch_and_method("digamma") + _special("digamma", "torch.special.psi"),
        approximated=True,
    ),
    Function(
        "erfinv",
        sf.erfinv,
        r"\operatorname{{erf}}^{{-1}}" + _OF,
        _torch_and_method("erfinv") + _special("erfinv"),
        approximated=True,
    ),
    Function(
        "ndtr",
        sf.ndtr,
        r"\Phi" + _OF,
        _special("ndtr"),
        grad_fn="SpecialNdtrBackward0",
        code="torch.special.ndtr({0})",
        approximated=True,
    ),
    Function(
        "ndtri",
        sf.ndtri,
        r"\Phi^{{-1}}" + _OF,
        _special("ndtri"),
        grad_fn="SpecialNdtriBackward0",
        code="torch.special.ndtri({0})",
        approximated=True,
    ),
    Function(
        "log_ndtr",
        sf.log_ndtr,
        r"\log\Phi" + _OF,
        _special("log_ndtr"),
        grad_fn="SpecialLogNdtrBackward0",
        code="torch.special.log_ndtr({0})",
        approximated=True,
    ),
    Function(
        "erfcx",
        sf.erfcx,
        r"\operatorname{{erfcx}}" + _OF,
        _special("erfcx"),
        grad_fn="SpecialErfcxBackward0",
        code="torch.special.erfcx({0})",
        approximated=True,
    ),
    # modified Bessel functions torch differentiates
    Function("i0", sf.i0, r"I_0" + _OF, _torch_and_method("i0") + _special("i0"), approximated=True),
    Function(
        "i0e",
        sf.i0e,
        r"I_0^{{e}}" + _OF,
        _special("i0e"),
        grad_fn="SpecialI0EBackward0",
        code="torch.special.i0e({0})",
        approximated=True,
    ),
    Function(
        "i1",
        sf.i1,
        r"I_1" + _OF,
        _special("i1"),
        grad_fn="SpecialI1Backward0",
        code="torch.special.i1({0})",
        approximated=True,
    ),
    Function(
        "i1e",
        sf.i1e,
        r"I_1^{{e}}" + _OF,
        _special("i1e"),
        grad_fn="SpecialI1EBackward0",
        code="torch.special.i1e({0})",
        approximated=True,
    ),
]

# Bessel functions torch does not differentiate: their results never require grad
for _name, _function in (
    ("bessel_j0", sf.bessel_j0),
    ("bessel_j1", sf.bessel_j1),
    ("bessel_y0", sf.bessel_y0),
    ("bessel_y1", sf.bessel_y1),
    ("modified_bessel_i0", sf.modified_bessel_i0),
    ("modified_bessel_i1", sf.modified_bessel_i1),
    ("modified_bessel_k0", sf.modified_bessel_k0),
    ("modified_bessel_k1", sf.modified_bessel_k1),
    ("scaled_modified_bessel_k0", sf.scaled_modified_bessel_k0),
    ("scaled_modified_bessel_k1", sf.scaled_modified_bessel_k1),
    ("spherical_bessel_j0", sf.spherical_bessel_j0),
    ("airy_ai", sf.airy_ai),
):
    UNARY.append(
        Function(
            _name,
            _function,
            _function.latex_name.replace("{", "{{").replace("}", "}}") + _OF,
            _special(_name),
            differentiable=False,
            code=f"torch.special.{_name}({{0}})",
            approximated=True,
        )
    )


for _f in UNARY:
    unary(
        _f.name,
        _f.scalar,
        _f.latex,
        grad_fn=_f.grad_fn,
        code=_f.code,
        torch_fn=(lambda code: lambda torch, a: _call(torch, code, a))(_f.code or f"torch.{_f.name}({{0}})"),
        float_result=True,
        float64=_f.float64 or vectorized(_f.scalar.float64),
        differentiable=_f.differentiable,
        spellings=_f.names,
        tags=("kernel",) if _f.approximated else (),
    )


def _call(torch: Any, code: str, *tensors: Any) -> Any:
    """Call the torch function a row's code template names (``torch.special.i0e({0})``) on ``tensors``."""
    target: Any = torch
    for part in code.split("(")[0].split(".")[1:]:
        target = getattr(target, part)
    return target(*tensors)


# ── unary functions with an attribute ──────────────────────────────────────────────────────────────────
unary(
    "polygamma",
    lambda t, n: sf.polygamma(n, t),
    r"\psi^{{({n})}}\left({0}\right)",
    torch_fn=lambda torch, a, n: torch.polygamma(n, a),
    code="torch.polygamma({n}, {0})",
    grad_fn="PolygammaBackward0",
    float_result=True,
    tags=("kernel",),
    float64=lambda a, n: vectorized(sf.polygamma.float64)(n, a),
)


def _logit(t: Any, eps: Any) -> Any:
    """logit of x, or of x clamped to [eps, 1 - eps] when eps is given (torch's gradient is 0 outside it)."""
    return ff.logit(t) if eps is None else ff.clamped_logit(t, sympy.Float(eps))


def _logit_float64(a: np.ndarray, eps: Any) -> np.ndarray:
    z = a if eps is None else np.clip(a, eps, 1 - eps)
    with np.errstate(all="ignore"):
        return np.log(z / (1 - z))


unary(
    "logit_derivative",
    ff.logit_derivative,
    r"\operatorname{{logit}}'\left({0}\right)",
    torch_fn=lambda torch, a: torch.where((a < 0) | (a > 1), torch.nan, 1 / (a * (1 - a))),
    code="torch.where(({0} < 0) | ({0} > 1), torch.nan, 1 / ({0} * (1 - {0})))",
    grad_fn="LogitBackwardBackward0",
    float_result=True,
    float64=vectorized(ff.logit_derivative.float64),
)
unary(
    "logit",
    _logit,
    r"\operatorname{{logit}}\left({0}\right)",
    torch_fn=lambda torch, a, eps: torch.logit(a, eps=eps),
    code="torch.logit({0}, eps={eps})",
    grad_fn="LogitBackward0",
    float_result=True,
    float64=_logit_float64,
)


# ── functions of two tensors ───────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Binary:
    """One elementwise function of two tensors, broadcast as torch does; torch does not differentiate it by the
    inputs at ``undefined``, and not at all unless ``differentiable``."""

    name: str
    scalar: Callable[..., Any]
    latex: str
    names: tuple[str, ...]
    float64: Callable[..., Any] | None = None
    undefined: tuple[int, ...] = ()
    differentiable: bool = True
    vjp: Callable[..., Any] | None = None  # torch's backward formula, where it differs from g · ∂f
    jvp: Callable[..., Any] | None = None  # torch's forward-mode formula, where it is not the VJP's transpose
    approximated: bool = False  # torch's kernel approximates it: where torch is at hand, its numbers are torch's
    code: str | None = None
    grad_fn: str | None = None
    float_result: bool = True


def _remainder_vjp(g: Tensor, out: Tensor, a: Tensor, b: Tensor) -> tuple:
    """g and -g·floor(a/b); torch defines no derivative of ``number % tensor`` (remainder.Scalar_Tensor)."""
    if a.is_python_scalar:
        return None, NoDerivative(
            "derivative for aten::remainder is not implemented (torch raises this for a number % a tensor): detach "
            "the tensor"
        )
    return partial_vjp(ff.remainder)(g, out, a, b)


def _binary_names(name: str, *aliases: str) -> tuple[str, ...]:
    return _torch_and_method(name, *aliases)


BINARY = [
    Binary(
        "copysign",
        ff.copysign,
        r"\left|{0}\right| \operatorname{{sgn}}\left({1}\right)",
        _binary_names("copysign"),
        ff.copysign_numbers,
    ),
    Binary(
        "remainder",
        ff.remainder,
        r"{0} \bmod {1}",
        _binary_names("remainder"),
        np.remainder,
        grad_fn="RemainderBackward0",
        float_result=False,
        vjp=lambda g, out, a, b: _remainder_vjp(g, out, a, b),
    ),
    Binary(
        "fmod",
        ff.fmod,
        r"\operatorname{{fmod}}\left({0}, {1}\right)",
        _binary_names("fmod"),
        np.fmod,
        grad_fn="FmodBackward0",
        float_result=False,
    ),
    Binary(
        "nextafter",
        ff.nextafter,
        r"\operatorname{{nextafter}}\left({0}, {1}\right)",
        _binary_names("nextafter"),
        np.nextafter,
        float_result=False,
    ),
    Binary("fmax", ff.fmax, r"\max\left({0}, {1}\right)", _binary_names("fmax"), np.fmax, float_result=False),
    Binary("fmin", ff.fmin, r"\min\left({0}, {1}\right)", _binary_names("fmin"), np.fmin, float_result=False),
    Binary(
        "xlog1py",
        ff.xlog1py,
        r"{0} \log\left(1 + {1}\right)",
        _special("xlog1py"),
        lambda x, y: np.where(np.isnan(y), np.nan, np.where(x == 0, 0.0, x * np.log1p(y))),
        code="torch.special.xlog1py({0}, {1})",
        grad_fn="SpecialXlog1PyBackward0",
        vjp=lambda g, out, x, y: (
            unbroadcast(_xlog1py_grad(g, x, y), x.shape),
            unbroadcast(g * x / (y + 1), y.shape),
        ),
        jvp=_xlog1py_jvp,
    ),
    Binary(
        "zeta",
        sf.zeta,
        r"\zeta\left({0}, {1}\right)",
        _special("zeta"),
        vectorized(sf.zeta.float64),
        undefined=(0,),
        code="torch.special.zeta({0}, {1})",
        grad_fn="SpecialZetaBackward0",
        approximated=True,
    ),
    Binary(
        "igamma",
        sf.igamma,
        r"P\left({0}, {1}\right)",
        _binary_names("igamma") + _special("gammainc"),
        vectorized(sf.igamma.float64),
        undefined=(0,),
        approximated=True,
    ),
    Binary(
        "igammac",
        sf.igammac,
        r"Q\left({0}, {1}\right)",
        _binary_names("igammac") + _special("gammaincc"),
        vectorized(sf.igammac.float64),
        undefined=(0,),
        approximated=True,
    ),
]
for _name in (
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
):
    _polynomial = getattr(sf, _name)
    BINARY.append(
        Binary(
            _name,
            _polynomial,
            rf"\operatorname{{{{{_name}}}}}\left({{0}}, {{1}}\right)",
            _special(_name),
            vectorized(_polynomial.float64),
            differentiable=False,
            code=f"torch.special.{_name}({{0}}, {{1}})",
            approximated=True,
        )
    )


for _b in BINARY:
    binary(
        _b.name,
        _b.scalar,
        (lambda code: lambda torch, a, b: _call(torch, code, a, b))(_b.code or f"torch.{_b.name}({{0}}, {{1}})"),
        _b.code or f"torch.{_b.name}({{0}}, {{1}})",
        _b.latex,
        _b.grad_fn or f"{_b.name.capitalize()}Backward0",
        saves=_b.differentiable,
        precedence=9,
        vjp=_b.vjp
        or (partial_vjp(_b.scalar, _b.undefined) if _b.differentiable else lambda g, out, a, b: (None, None)),
        differentiable=_b.differentiable,
        float_result=_b.float_result,
        jvp=_b.jvp,
        float64=_b.float64 or vectorized(_b.scalar.float64),
        spellings=_b.names,
        tags=("kernel",) if _b.approximated else (),
    )

# ── tests of a float's class (booleans, no gradient) ───────────────────────────────────────────────────
for _name, _test, _ufunc in (
    ("isfinite", ff.isfinite, np.isfinite),
    ("isinf", ff.isinf, np.isinf),
    ("isposinf", ff.isposinf, np.isposinf),
    ("isneginf", ff.isneginf, np.isneginf),
    ("signbit", ff.signbit, ff.signbit_numbers),
):
    unary(
        _name,
        _test,
        rf"\operatorname{{{{{_name}}}}}\left({{0}}\right)",
        grad_fn="none",
        differentiable=False,
        tags=("comparison",),
        float64=_ufunc,
        spellings=_torch_and_method(_name),
    )

# ── integer functions (bit operations on integers and booleans, gcd, lcm): exact, no gradient ────────────
for _name, _function, _latex in (
    ("bitwise_and", ff.bitwise_and, r"{0} \mathbin{{\&}} {1}"),
    ("bitwise_or", ff.bitwise_or, r"{0} \mathbin{{|}} {1}"),
    ("bitwise_xor", ff.bitwise_xor, r"{0} \oplus {1}"),
    ("bitwise_left_shift", ff.bitwise_left_shift, r"{0} \ll {1}"),
    ("bitwise_right_shift", ff.bitwise_right_shift, r"{0} \gg {1}"),
    ("gcd", ff.gcd, r"\gcd\left({0}, {1}\right)"),
    ("lcm", ff.lcm, r"\operatorname{{lcm}}\left({0}, {1}\right)"),
):
    binary(
        _name,
        _function,
        (lambda name: lambda torch, a, b: getattr(torch, name)(a, b))(_name),
        f"torch.{_name}({{0}}, {{1}})",
        _latex,
        "none",
        saves=False,
        precedence=9,
        vjp=lambda g, out, a, b: (None, None),
        differentiable=False,
        spellings=_torch_and_method(_name),
    )
unary(
    "bitwise_not",
    ff.bitwise_not,
    r"\lnot {0}",
    grad_fn="none",
    differentiable=False,
    spellings=_torch_and_method("bitwise_not"),
)

# ── frexp's two results ─────────────────────────────────────────────────────────────────────────────────
unary(
    "frexp_mantissa",
    ff.frexp_mantissa,
    r"\operatorname{{mantissa}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.frexp(a).mantissa,
    code="torch.frexp({0}).mantissa",
    grad_fn="FrexpBackward0",
    float64=vectorized(ff.frexp_mantissa.float64),
)
unary(
    "frexp_step",
    ff.frexp_step,
    r"2^{{\operatorname{{exponent}}\left({0}\right)}}",
    torch_fn=lambda torch, a: torch.frexp(a).exponent.exp2(),
    code="torch.frexp({0}).exponent.exp2()",
    grad_fn="none",
    differentiable=False,
    float64=vectorized(ff.frexp_step.float64),
)
unary(
    "frexp_exponent",
    ff.frexp_exponent,
    r"\operatorname{{exponent}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.frexp(a).exponent,
    code="torch.frexp({0}).exponent",
    grad_fn="none",
    differentiable=False,
    float64=vectorized(ff.frexp_exponent.float64),
)
