"""torch's elementwise mathematical functions (``symgrad.ops.math_functions``), each against real torch.

Each case is written once for a *world* ``w`` (``w.torch`` is symgrad's namespace or real torch) on inputs drawn
inside the function's domain (``between``). The values, and the gradient of a weighted sum after ``backward``,
must equal torch's in float64; where torch's result does not require grad (Bessel functions, polynomials),
symgrad's must not either. A law at a symbolic size is proved for every differentiable function.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import symgrad as sg
import symgrad.torch as storch

SYMGRAD = SimpleNamespace(torch=storch, F=storch.nn.functional)
TORCH = SimpleNamespace(torch=torch, F=torch.nn.functional)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[..., Any]  # (world, *tensors) -> tensor
    between: tuple[float, float] = (-2.0, 2.0)  # the inputs' range
    inputs: int = 1
    law: bool = True  # a law at a symbolic size is proved (differentiable functions)
    close: float = 1e-9  # relative and absolute tolerance


CASES = [
    Case("tan", lambda w, a: w.torch.tan(a) + a.tan(), (-1.2, 1.2)),
    Case("asin", lambda w, a: w.torch.asin(a) * w.torch.arcsin(a) + a.asin(), (-0.95, 0.95)),
    Case("acos", lambda w, a: w.torch.acos(a) + w.torch.arccos(a) * a.arccos(), (-0.95, 0.95)),
    Case("atan", lambda w, a: w.torch.atan(a) - w.torch.arctan(a) * a.atan()),
    Case("sinh_cosh", lambda w, a: w.torch.sinh(a) * w.torch.cosh(a) + a.sinh() - a.cosh()),
    Case("asinh", lambda w, a: w.torch.asinh(a) + w.torch.arcsinh(a) * a.asinh()),
    Case("acosh", lambda w, a: w.torch.acosh(a) + w.torch.arccosh(a) * a.acosh(), (1.1, 4.0)),
    Case("atanh", lambda w, a: w.torch.atanh(a) + w.torch.arctanh(a) * a.atanh(), (-0.9, 0.9)),
    Case("sinc", lambda w, a: w.torch.sinc(a) + w.torch.special.sinc(a) * a.sinc()),
    Case("deg2rad_rad2deg", lambda w, a: w.torch.deg2rad(a) * w.torch.rad2deg(a) + a.deg2rad()),
    Case("log2_log10", lambda w, a: w.torch.log2(a) * w.torch.log10(a) + a.log2() - a.log10(), (0.1, 5.0)),
    Case("entr", lambda w, a: w.torch.special.entr(a), (0.05, 3.0)),
    Case("frac", lambda w, a: w.torch.frac(a * 3) * a + a.frac()),
    Case("lgamma", lambda w, a: w.torch.lgamma(a) + w.torch.special.gammaln(a) * a.lgamma(), (0.2, 6.0)),
    Case("digamma", lambda w, a: w.torch.digamma(a) + w.torch.special.psi(a) * w.torch.special.digamma(a), (0.2, 6.0)),
    Case(
        "polygamma", lambda w, a: w.torch.polygamma(2, a) + a.polygamma(1) * w.torch.special.polygamma(3, a), (0.3, 5.0)
    ),
    Case("mvlgamma", lambda w, a: w.torch.mvlgamma(a, 3) + w.torch.special.multigammaln(a, 2), (1.2, 5.0)),
    Case("erfinv", lambda w, a: w.torch.erfinv(a) + a.erfinv() * w.torch.special.erfinv(a), (-0.9, 0.9)),
    Case("ndtr", lambda w, a: w.torch.special.ndtr(a) * a),
    Case("ndtri", lambda w, a: w.torch.special.ndtri(a), (0.05, 0.95)),
    Case("log_ndtr", lambda w, a: w.torch.special.log_ndtr(a * 10), (-4.0, 2.0)),
    Case("erfcx", lambda w, a: w.torch.special.erfcx(a)),
    Case("i0", lambda w, a: w.torch.i0(a) + a.i0() * w.torch.special.i0(a)),
    Case("i0e_i1_i1e", lambda w, a: w.torch.special.i0e(a) + w.torch.special.i1(a) * w.torch.special.i1e(a)),
    Case("logit", lambda w, a: w.torch.logit(a) + a.logit(0.2) + w.torch.special.logit(a, eps=0.3), (0.05, 0.95)),
    Case("copysign", lambda w, a, b: w.torch.copysign(a, b) * a + a.copysign(b), inputs=2),
    Case("remainder", lambda w, a, b: w.torch.remainder(a, b + 3) + a.remainder(1.5) + (a % 0.7), inputs=2),
    Case("fmod", lambda w, a, b: w.torch.fmod(a, b + 3) * a.fmod(-1.5), inputs=2),
    Case("floor_divide", lambda w, a, b: (a.detach() // 0.3) * a + w.torch.floor_divide(b.detach(), 0.7) * b, inputs=2),
    Case("nextafter", lambda w, a, b: w.torch.nextafter(a, b) * 2 + a.nextafter(b), inputs=2),
    Case("fmax_fmin", lambda w, a, b: w.torch.fmax(a, b) * w.torch.fmin(a, b) + a.fmax(b), inputs=2),
    Case("xlog1py", lambda w, a, b: w.torch.special.xlog1py(a, b), (0.0, 3.0), inputs=2),
    Case("zeta", lambda w, a, b: w.torch.special.zeta(a.detach() + 2, b), (0.5, 3.0), inputs=2),
    Case(
        "igamma",
        lambda w, a, b: w.torch.igamma(a.detach(), b) + w.torch.igammac(a.detach(), b) * b,
        (0.5, 3.0),
        inputs=2,
    ),
    Case(
        "special_gammainc",
        lambda w, a, b: w.torch.special.gammainc(a.detach(), b) * w.torch.special.gammaincc(a.detach(), b),
        (0.5, 3.0),
        inputs=2,
    ),
    Case("ldexp", lambda w, a, b: w.torch.ldexp(a, b.detach()), inputs=2, close=1e-12),
    Case("frexp", lambda w, a: w.torch.frexp(a * 5).mantissa * w.torch.frexp(a).exponent),
    Case(
        "bessel",
        lambda w, a: (
            w.torch.special.bessel_j0(a)
            + w.torch.special.bessel_j1(a) * w.torch.special.bessel_y0(a)
            + w.torch.special.bessel_y1(a)
        ),
        (0.5, 2.0),
        law=False,
        close=1e-6,
    ),
    Case(
        "modified_bessel",
        lambda w, a: (
            w.torch.special.modified_bessel_i0(a)
            + w.torch.special.modified_bessel_i1(a) * w.torch.special.modified_bessel_k0(a)
            - w.torch.special.modified_bessel_k1(a)
        ),
        (0.5, 3.0),
        law=False,
        close=1e-7,
    ),
    Case(
        "scaled_bessel",
        lambda w, a: (
            w.torch.special.scaled_modified_bessel_k0(a) * w.torch.special.scaled_modified_bessel_k1(a)
            + w.torch.special.spherical_bessel_j0(a)
            + w.torch.special.airy_ai(a)
        ),
        (0.5, 3.0),
        law=False,
        close=1e-7,
    ),
    Case(
        "chebyshev",
        lambda w, a, n: (
            w.torch.special.chebyshev_polynomial_t(a, 3)
            + w.torch.special.chebyshev_polynomial_u(a, 4) * w.torch.special.chebyshev_polynomial_v(a, 2)
            + w.torch.special.chebyshev_polynomial_w(a, 5)
        ),
        (-1.0, 1.0),
        inputs=2,
        law=False,
    ),
    Case(
        "shifted_chebyshev",
        lambda w, a, n: (
            w.torch.special.shifted_chebyshev_polynomial_t(a, 3)
            + w.torch.special.shifted_chebyshev_polynomial_u(a, 4)
            * w.torch.special.shifted_chebyshev_polynomial_v(a, 2)
            + w.torch.special.shifted_chebyshev_polynomial_w(a, 5)
        ),
        (0.0, 1.0),
        inputs=2,
        law=False,
    ),
    Case(
        "other_polynomials",
        lambda w, a, n: (
            w.torch.special.hermite_polynomial_h(a, 3)
            + w.torch.special.hermite_polynomial_he(a, 4) * w.torch.special.laguerre_polynomial_l(a, 2)
            + w.torch.special.legendre_polynomial_p(a, 5)
        ),
        inputs=2,
        law=False,
    ),
    Case(
        "float_class",
        lambda w, a: (
            w.torch.where(w.torch.isfinite(a) & ~w.torch.isinf(a), a, 0)
            * (w.torch.isposinf(a) | w.torch.isneginf(a) | w.torch.signbit(a))
        ),
    ),
    Case(
        "aliases",
        lambda w, a, b: (
            w.torch.subtract(a, b) * w.torch.multiply(a, 2)
            + w.torch.absolute(a)
            + w.torch.arctan2(a, b)
            - w.torch.negative(b) * w.torch.fix(b * 3)
            + a.swapaxes(0, -1).sum()
        ),
        inputs=2,
    ),
    Case(
        "fill",
        lambda w, a, b: (
            w.torch.fill(a, b.sum()) * a + a.new_empty(a.shape).fill_(2.5) * w.torch.empty_like(a).fill_(-1.0)
        ),
        inputs=2,
        law=False,  # an in-place fill_ of symgrad.torch needs concrete sizes (a trace follows it at any)
    ),
    Case(
        "real_identities",
        lambda w, a: (
            w.torch.positive(a) * w.torch.conj(a)
            + w.torch.sgn(a) * w.torch.angle(a)
            + w.torch.conj_physical(a) * w.torch.resolve_conj(a)
            - w.torch.resolve_neg(a) * w.torch.isreal(a)
        ),
    ),
    Case(
        "comparison_aliases",
        lambda w, a, b: (
            a * (w.torch.greater(a, b) | w.torch.less_equal(a, b))
            + b * (w.torch.greater_equal(a, b) & w.torch.less(b, a) & w.torch.not_equal(a, 0))
        ),
        inputs=2,
    ),
    Case(
        "layout_aliases",
        lambda w, a: w.torch.swapdims(a, 0, 1).T * 2 + w.torch.swapaxes(a, 1, 0).mT * a + w.torch.adjoint(a.T),
    ),
]
CASE_IDS = [case.name for case in CASES]


INTEGER = [
    (
        "bitwise",
        lambda w, a, b: (
            w.torch.bitwise_and(a, b)
            + w.torch.bitwise_or(a, 3) * w.torch.bitwise_xor(a, b)
            - w.torch.bitwise_not(b)
            + (a & b)
            - (a | 5)
            + (a ^ b)
            + ~a
        ),
    ),
    (
        "shifts",
        lambda w, a, b: (
            w.torch.bitwise_left_shift(a, b.abs() % 8) + w.torch.bitwise_right_shift(a, 2) + (a << 3) + (a >> 1)
        ),
    ),
    ("gcd_lcm", lambda w, a, b: w.torch.gcd(a, b) + w.torch.lcm(a, b + 1) * 2),
    ("integer_division", lambda w, a, b: a // 3 + a % 4 + w.torch.remainder(a, -3) + w.torch.fmod(a, 3)),
]


@pytest.mark.parametrize(("label", "build"), INTEGER, ids=[i[0] for i in INTEGER])
def test_integer_functions_match_torch(label: str, build: Callable) -> None:
    """Bit operations, gcd and integer division of int64 tensors: exact, int64, as torch's."""
    data = [[13, -7, 0, 255], [6, 3, -12, 9]]
    expected = build(TORCH, *(torch.tensor(d) for d in data))
    got = build(SYMGRAD, *(storch.tensor(d, name=f"i{k}") for k, d in enumerate(data)))
    assert got.dtype == "int64" and got.tolist() == expected.tolist()


def test_floor_divide_has_no_gradient_as_in_torch() -> None:
    """``//`` (torch.floor_divide) has no derivative in torch: its backward raises, and symgrad refuses."""
    x = torch.tensor([1.5, -2.5], dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floor_divide is not implemented"):
        (x // 0.5).sum().backward()
    y = storch.tensor([1.5, -2.5], dtype=storch.float64, requires_grad=True, name="y")
    with pytest.raises(sg.UnsupportedError, match="floor_divide is not implemented"):
        (y // 0.5).sum().backward()
    assert storch.div(y, 0.5, rounding_mode="floor").tolist() == [3.0, -5.0]


def _draw(case: Case, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    low, high = case.between
    shape = (2, 3)
    return [[[rng.uniform(low, high) for _ in range(shape[1])] for _ in range(shape[0])] for _ in range(case.inputs)]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_values_and_gradients_match_torch(case: Case, seed: int) -> None:
    data = _draw(case, seed)
    theirs = [torch.tensor(d, dtype=torch.float64, requires_grad=True) for d in data]
    ours = [storch.tensor(d, dtype=storch.float64, requires_grad=True, name=f"x{k}") for k, d in enumerate(data)]
    expected, got = case.build(TORCH, *theirs), case.build(SYMGRAD, *ours)
    assert got.shape == tuple(expected.shape)
    _assert_close(got.tolist(), expected.tolist(), case.close)
    assert got.requires_grad == expected.requires_grad
    if not expected.requires_grad:
        return
    weights = [[math.sin(1 + i + 3 * j) for j in range(3)] for i in range(2)]
    (expected * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    (got * storch.tensor(weights, dtype=storch.float64)).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        want = torch.zeros_like(reference) if reference.grad is None else reference.grad
        have = [[0.0] * 3] * 2 if mine.grad is None else mine.grad.tolist()
        _assert_close(have, want.tolist(), case.close)


@pytest.mark.parametrize("case", [c for c in CASES if c.law], ids=[c.name for c in CASES if c.law])
def test_the_law_at_a_symbolic_size_is_proved(case: Case) -> None:
    (n,) = sg.dims("n")
    leaves = [sg.symbols(f"x{k}", (2, n), requires_grad=True) for k in range(case.inputs)]
    out = case.build(SYMGRAD, *leaves)
    wrt = [leaf for leaf in leaves if out.requires_grad]
    proof = sg.prove(out.sum(), wrt, sizes=[{n: 2}], numeric=False)
    assert proof.held, str(proof)


def _assert_close(got: Any, want: Any, tolerance: float) -> None:
    flat_got, flat_want = _flat(got), _flat(want)
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want, strict=True):
        if math.isnan(w):
            assert math.isnan(g), (g, w)
        else:
            assert g == pytest.approx(w, rel=tolerance, abs=tolerance), (flat_got, flat_want)


def _flat(value: Any) -> list[float]:
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [float(value)]


NN_ALIASES = [
    ("conv1d", lambda w, x, k: w.torch.conv1d(x.reshape(1, 2, 3), k.reshape(3, 2, 1))),
    ("conv2d", lambda w, x, k: w.torch.conv2d(x.reshape(1, 1, 2, 3), k.reshape(1, 1, 2, 3)[:, :, :, :2])),
    ("conv3d", lambda w, x, k: w.torch.conv3d(x.reshape(1, 1, 1, 2, 3), k.reshape(1, 1, 1, 2, 3))),
    ("conv_transpose1d", lambda w, x, k: w.torch.conv_transpose1d(x.reshape(1, 2, 3), k.reshape(2, 3, 1))),
    ("conv_transpose2d", lambda w, x, k: w.torch.conv_transpose2d(x.reshape(1, 1, 2, 3), k.reshape(1, 1, 2, 3))),
    ("conv_transpose3d", lambda w, x, k: w.torch.conv_transpose3d(x.reshape(1, 1, 1, 2, 3), k.reshape(1, 1, 1, 2, 3))),
    (
        "norms",
        lambda w, x, k: (
            w.torch.layer_norm(x, (3,)) * w.torch.group_norm(x.reshape(1, 2, 3), 2).reshape(2, 3)
            + w.torch.rms_norm(k, (3,))
        ),
    ),
]


@pytest.mark.parametrize(("label", "build"), NN_ALIASES, ids=[n[0] for n in NN_ALIASES])
def test_torch_spellings_of_nn_functions_match_torch(label: str, build: Callable) -> None:
    """torch.conv2d, torch.layer_norm, …: the torch namespace's names for torch.nn.functional's functions."""
    data = _draw(Case(label, build, inputs=2), 0)
    theirs = [torch.tensor(d, dtype=torch.float64, requires_grad=True) for d in data]
    ours = [storch.tensor(d, dtype=storch.float64, requires_grad=True, name=f"x{k}") for k, d in enumerate(data)]
    expected, got = build(TORCH, *theirs), build(SYMGRAD, *ours)
    _assert_close(got.tolist(), expected.tolist(), 1e-9)
    expected.sum().backward()
    got.sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        _assert_close(mine.grad.tolist(), reference.grad.tolist(), 1e-9)


# ── every elementwise function of the table at torch's special points ─────────────────────────────────────
SPECIAL_POINTS = [-math.inf, -1e300, -30.0, -2.5, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.5, 30.0, 1e300, math.inf]
SPECIAL_POINTS += [math.nan]


def _unary_rows() -> list[str]:
    from symgrad.ops import math_functions

    return [f.name for f in math_functions.UNARY] + ["logit", "polygamma"]


@pytest.mark.parametrize("name", _unary_rows())
def test_values_at_special_points_are_torchs(name: str) -> None:
    """Each function of one tensor at ±inf, nan, ±0, huge and tiny numbers, poles and branch points: torch's
    value exactly, nan for nan (torch's approximations of the Bessel functions to 1e-6)."""
    from symgrad.core.registry import OPS

    row = OPS[name]
    attrs = {"polygamma": {"n": 2}, "logit": {"eps": None}}.get(name, {})
    x = torch.tensor(SPECIAL_POINTS, dtype=torch.float64)
    with torch.no_grad():
        expected = row.torch(torch, x, **attrs).tolist()
    got = sg.core.apply(name, storch.tensor(SPECIAL_POINTS, dtype=storch.float64), **attrs).tolist()
    tolerance = 1e-6 if row.has("kernel") else 1e-12
    for point, g, e in zip(SPECIAL_POINTS, got, expected, strict=True):
        same = (math.isnan(g) and math.isnan(e)) or g == e or g == pytest.approx(e, rel=tolerance, abs=1e-300)
        assert same, f"{name}({point}): symgrad {g}, torch {e}"


def test_signed_zeros_are_read_as_torch_reads_them_and_a_nan_sign_is_refused():
    """sqrt(-0.0) is -0.0 and copysign reads a -0.0's sign (seen through signbit); the sign bit of a nan an op made
    is the kernel's choice (sqrt(-1) gives a positive one, 0 * inf a negative one), so copysign by it refuses."""
    seen = {}
    for T in (torch, storch):
        y = T.tensor([4.0, -0.0, 0.0], dtype=T.float64)
        x = T.tensor([-2.0, 0.0, -3.0], dtype=T.float64)
        results = [T.sqrt(y), T.copysign(x, y), T.copysign(x, T.sqrt(y)), y]
        seen[T] = [T.signbit(r).tolist() for r in results]
    assert seen[storch] == seen[torch]
    with pytest.raises(sg.UnsupportedError, match="copysign of a nan"):
        storch.copysign(storch.tensor([1.0], dtype=storch.float64), storch.sqrt(storch.tensor([-1.0]))).tolist()
