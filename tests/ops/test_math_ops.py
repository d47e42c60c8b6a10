"""Elementwise math, reductions and linear algebra of ``symgrad.torch`` against real torch (float64).

Each case is written once as a function of a *world* ``w`` (``w.torch`` is symgrad.torch or torch) and run on
the same numbers in both: forward values, dtype and shape, and every input's VJP for a random ``v``. The data
sits on the points where torch picks a convention: ties, clamp bounds, zeros (rounding, prod, norms, pow),
infinities and large inputs (logsumexp, softmax), singular and empty matrices. Each new op row also gets its
gradient law proved at symbolic sizes, and one emitted module is checked against torch.autograd.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
import torch as real

import symgrad as sg
import symgrad.torch as storch
from symgrad.emit import check_module

SG = SimpleNamespace(torch=storch)
PT = SimpleNamespace(torch=real)
NAN, INF = math.nan, math.inf


def leaf(w: SimpleNamespace, data: object) -> object:
    array = np.asarray(data, dtype=float)
    if w is SG:
        return storch.tensor(array, requires_grad=True, dtype=storch.float64)
    return real.tensor(array, dtype=real.float64, requires_grad=True)


def numbers(t: object) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=float).reshape(tuple(t.shape))


def assert_same(ours: np.ndarray, theirs: np.ndarray) -> None:
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12, equal_nan=True)


def compare(build: Callable, *data: object, seed: int = 0) -> None:
    """Forward values, shape and dtype, and the VJP for every input, symgrad against torch."""
    ours_in, theirs_in = [leaf(SG, d) for d in data], [leaf(PT, d) for d in data]
    out = build(SG, *ours_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cholesky is deprecated
        ref = build(PT, *theirs_in)
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == str(ref.dtype).removeprefix("torch.")
    assert_same(numbers(out), ref.detach().numpy())
    v = np.random.default_rng(seed).standard_normal(tuple(ref.shape))
    grads = sg.vjp(out, ours_in, storch.tensor(v, dtype=storch.float64))
    refs = real.autograd.grad(ref, theirs_in, real.tensor(v), allow_unused=True)
    for ours, theirs, x in zip(grads, refs, theirs_in, strict=True):
        assert_same(numbers(ours), np.zeros(tuple(x.shape)) if theirs is None else theirs.numpy())


TIES = [[1.0, 3.0, 3.0, -1.0], [0.5, -2.0, 0.5, -2.0]]
HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.7, -0.7, 0.0]
ZEROS = [[0.0, 2.0, 3.0], [0.0, 0.0, 1.5], [1.0, -2.0, 0.5]]
LARGE = [[1000.0, 1001.0, 999.0], [-1000.0, 0.0, 1000.0]]
SPD = [[[2.0, 0.5, 0.1], [0.5, 1.5, -0.3], [0.1, -0.3, 1.0]], [[1.0, 0.2, 0.0], [0.2, 3.0, 0.4], [0.0, 0.4, 2.0]]]
SINGULAR = [[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [0.5, 3.0]]]  # det 0 (torch's gradient there: 0), det 5.5

CASES: list[tuple[str, Callable, list]] = [
    # ── elementwise ──
    (
        "div_rounding_modes",
        lambda w, a, b: (
            w.torch.div(a, b, rounding_mode="trunc")
            + w.torch.div(a, b, rounding_mode="floor") * a
            + w.torch.floor_divide(a.detach(), b.detach()) * b  # torch has no derivative for floor_divide
            + a.div(b, rounding_mode="floor")
        ),
        [[-7.5, 7.5, 3.0, -0.0, 1.0, 5.0], [2.0, -2.0, 3.0, 2.0, 0.0, -3.0]],
    ),
    (
        "true_divide_float_power",
        lambda w, a, b: w.torch.true_divide(a, b) + w.torch.divide(a, b) * w.torch.float_power(a.abs() + 0.5, b),
        [[1.5, -2.0, 0.5], [0.5, 3.0, -1.5]],
    ),
    (
        "rounding_ties_to_even",
        lambda w, a: (
            w.torch.floor(a)
            + w.torch.ceil(a) * 2
            + w.torch.trunc(a) * 3
            + w.torch.round(a) * a
            + w.torch.round(a * 0.37, decimals=1)
            + a.round() * a.floor()
        ),
        [HALVES],
    ),
    (
        "hypot_at_zero",  # the gradient is nan at (0, 0) in torch too
        lambda w, a, b: w.torch.hypot(a, b) * a,
        [[0.0, 3.0, -1.0, 1e200], [0.0, 4.0, 2.0, 1e200]],
    ),
    (
        "logaddexp_large",
        lambda w, a, b: w.torch.logaddexp(a, b),
        [[1000.0, -1000.0, 0.5, -INF], [1000.0, 3.0, 0.5, 2.0]],
    ),
    (
        "xlogy_zeros_and_nan",
        lambda w, a, b: w.torch.xlogy(a, b),
        [[0.0, 2.0, 0.0, 1.5, 0.0], [0.0, 3.0, 2.0, NAN, NAN]],
    ),
    (
        "ne_isnan_where",
        lambda w, a, b: w.torch.where(w.torch.ne(a, b), a, b * 2) + w.torch.where(w.torch.isnan(a.log()), 0.0, a),
        [[1.0, -2.0, 3.0, 0.0], [1.0, 2.0, -3.0, 0.0]],
    ),
    (
        "logical_masks",  # numbers read as != 0, nan as true; the masks select, with no gradient of their own
        lambda w, a, b: (
            w.torch.where(w.torch.logical_and(a, b), a, b)
            + w.torch.where(w.torch.logical_or(a > 1, b), a * 2, b)
            + w.torch.where(w.torch.logical_xor(a, b > 0), a, 0.5)
            + w.torch.where(w.torch.logical_not(a), b, a * 3)
            + w.torch.where((a > 0) & ~(b > 0) | (a < -1) ^ (b < 0), a, b * 4)
        ),
        [[1.0, 0.0, -2.0, 0.0, NAN], [0.0, 0.0, 3.0, -1.0, 2.0]],
    ),
    (
        "roll_and_differences",  # wrapping shifts along dims and flattened; n-th differences with prepend
        lambda w, a: (
            w.torch.roll(a, (1, -3), (0, 1)) * a
            + a.roll(4) * 2
            + w.torch.diff(a, n=2, dim=1, prepend=a[:, :1] * 3, append=a[:, -1:]).sum(1, keepdim=True)
        ),
        [[[1.0, 0.5, -2.0, 0.25, 3.0], [0.0, 1.5, 3.0, -1.0, 2.0]]],
    ),
    (
        "expm1_exp2_erfc",
        lambda w, a: w.torch.expm1(a) * a.exp2() + w.torch.erfc(a) - a.norm(dim=1, dtype=w.torch.float64).sum(),
        [[[1.0, 0.5, -2.0, 0.0, 3.0], [0.0, 1.5, 3.0, -1.0, 2.0]]],
    ),
    (
        "clamp_tensor_bounds",  # at the bounds, nan, low > high, low == high
        lambda w, x, low, high: (
            w.torch.clamp(x, low, high)
            + w.torch.clamp(x, min=low) * 2
            + w.torch.clamp(x, max=high) * 3
            + w.torch.clamp_min(x, low) * w.torch.clamp_max(x, high)
            + x.clamp(low, high) * x.clamp_min(0.25)
            - x.clamp_max(high)
        ),
        [
            [-1.0, 0.0, 0.5, 1.0, 2.0, 0.3, NAN, 0.7],
            [0.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.0, 0.9],
            [1, 1, 0.2, 1, 0.5, 0.5, 1, 0.4],
        ],
    ),
    (
        "clamp_broadcast_bounds",
        lambda w, x, low, high: w.torch.clamp(x, low, high) * x,
        [[[-1.0, 0.2], [0.5, 3.0]], [0.0], [[0.5, 1.0]]],
    ),
    ("clamp_scalar_bounds_at_nan", lambda w, x: w.torch.clamp(x, 0.0, 1.0) + x.clamp(min=0.5), [[NAN, 0.5, 1.0, 0.0]]),
    (
        "lerp_addcmul_addcdiv",
        lambda w, a, b, c: (
            w.torch.lerp(a, b, 0.3)
            + w.torch.lerp(a, b, 0.7) * w.torch.lerp(a, b, c)
            + w.torch.addcmul(a, b, c, value=0.5)
            - w.torch.addcdiv(a, b, c)
            + w.torch.addcdiv(a, b, c, value=2)
        ),
        [[0.5, -1.0, 2.0, 0.0], [1.5, 0.25, -0.75, 1.0], [0.2, 0.6, -0.7, 0.5]],
    ),
    (
        "pow_at_zero",  # torch gives no gradient to the base where the exponent is 0, nor to the exponent at base 0
        lambda w, a, b: w.torch.pow(a, b) + a**0 + w.torch.pow(0.0, b) * 2,
        [[0.0, 0.0, 2.0, 0.0, 1.5], [0.0, 2.0, 0.5, -1.0, 0.0]],
    ),
    ("min_of_two_ties", lambda w, a, b: w.torch.min(a, b) + a.min(b) * 2, [[1.0, 2.0, -1.0], [1.0, -2.0, 3.0]]),
    # ── reductions ──
    (
        "prod_with_zeros",
        lambda w, a: (
            w.torch.prod(a, 1)
            + w.torch.prod(a)
            + w.torch.prod(a, 0, keepdim=True).sum(0)
            + a.prod(dim=1, dtype=real.float64 if w is PT else storch.float64)
        ),
        [ZEROS],
    ),
    ("prod_single_zero", lambda w, a: w.torch.prod(a) * 2 + w.torch.prod(a[0]), [[[0.0, 2.0], [3.0, -1.5]]]),
    ("cumprod_with_zeros", lambda w, a: w.torch.cumprod(a, 1) + w.torch.cumprod(a, 0) * 2 + a.cumprod(-1), [ZEROS]),
    (
        "cumsum_cumprod_0d",
        lambda w, a: w.torch.cumsum(a, 0, dtype=real.float64 if w is PT else "float64") * w.torch.cumprod(a, 0),
        [2.5],
    ),
    (
        "amin_min_ties",
        lambda w, a: w.torch.amin(a, 1) + w.torch.min(a) + w.torch.amin(a, (0, 1), keepdim=True).sum() + a.amin(),
        [TIES],
    ),
    (
        "max_min_dim_values",  # the first maximum (minimum) gets the gradient
        lambda w, a: w.torch.max(a, 1).values + w.torch.min(a, 1)[0] * 2 + a.min(0, keepdim=True).values.sum(),
        [TIES],
    ),
    (
        "var_mean",
        lambda w, a: (
            w.torch.var_mean(a, 1)[0]
            + w.torch.var_mean(a, dim=0, correction=0, keepdim=True)[1].sum()
            + w.torch.std_mean(a, 1)[0] * w.torch.std_mean(a, dim=1, keepdim=False)[1]
        ),
        [[[0.5, 1.5, -2.0], [3.0, 3.0, 3.0]]],
    ),
    (
        "p_norms_with_zeros",  # torch's gradient: 0 at x = 0 for p < 1, 0 where the norm is 0 for p > 1
        lambda w, a: (
            w.torch.norm(a, 0, dim=1)
            + w.torch.norm(a, 0.5, dim=1)
            + w.torch.norm(a, 1.5, dim=1)
            + w.torch.norm(a, 3, 1)
            + w.torch.norm(a, -1, dim=1)
            + w.torch.norm(a, -INF, dim=1)
            + w.torch.norm(a, INF, dim=1)
            + a.norm(p=2.5, dim=1)
        ),
        [[[0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [0.0, 3.0, -3.0]]],
    ),
    (
        "vector_norm_ords",
        lambda w, a: (
            w.torch.linalg.vector_norm(a, 3)
            + w.torch.linalg.vector_norm(a, 0, dim=0)
            + w.torch.linalg.vector_norm(a, -INF, dim=(0, 1), keepdim=True).sum()
        ),
        [[[0.0, 1.0], [-2.0, 2.0]]],
    ),
    (
        "logsumexp_softmax_large",
        lambda w, a: (
            w.torch.logsumexp(a, 1).sum()
            + w.torch.logsumexp(a, (0, 1))
            + w.torch.softmax(a, 1) * 3
            + w.torch.log_softmax(a, 0)
            + w.torch.log_softmax(a, 1, dtype=real.float64 if w is PT else "float64")
        ),
        [LARGE],
    ),
    ("logsumexp_infinities", lambda w, a: w.torch.logsumexp(a, 1), [[[1.0, INF, 2.0], [-INF, -INF, 1.0]]]),
    (
        "topk_values",
        lambda w, a: (
            w.torch.topk(a, 2).values + w.torch.topk(a, 2, dim=1, largest=False)[0] * 3 + a.topk(1, 0)[0].sum()
        ),
        [[[1.0, 5.0, 2.0, 4.0], [4.0, 0.0, 3.0, -1.0]]],
    ),
    # ── products and linear algebra ──
    (
        "einsum_three_operands",
        lambda w, a, b, c: w.torch.einsum("ij,jk,kl->il", a, b, c) + w.torch.einsum("ij,jk,kl", a, b, c),
        [[[1.0, 2.0], [0.5, -1.0]], [[0.3, 1.0, -1.0], [2.0, 0.0, 1.0]], [[1.0], [-0.5], [2.0]]],
    ),
    (
        "einsum_diagonal_ellipsis",
        lambda w, a, b: (
            w.torch.einsum("ii->i", a)
            + w.torch.einsum("...j,j->...", a, b)
            + w.torch.einsum("ij->j", a)
            + w.torch.einsum("ii", a)
        ),
        [[[1.0, 2.0, 3.0], [0.5, -1.0, 4.0], [2.0, 1.5, -0.5]], [1.0, -2.0, 0.5]],
    ),
    (
        "mv_tensordot_baddbmm",
        lambda w, m, v, b: (
            w.torch.mv(m, v).sum()
            + w.torch.tensordot(b, b, dims=2).sum()
            + w.torch.tensordot(b, m, dims=([2], [1])).sum()
            + w.torch.baddbmm(b, b, b, beta=0.5, alpha=2).sum()
            + w.torch.baddbmm(b[0, 0], b, b, beta=0).sum()
        ),
        [[[1.0, 2.0], [3.0, -1.0]], [0.5, -1.5], [[[1.0, 0.5], [-1.0, 2.0]], [[0.0, 1.0], [1.5, -0.5]]]],
    ),
    (
        "det_slogdet_batched_singular",
        lambda w, a: (
            w.torch.linalg.det(a)
            + w.torch.linalg.slogdet(a).logabsdet[1:] * 2
            + w.torch.det(a[1]) * w.torch.logdet(a[1:])
        ),
        [SINGULAR],
    ),
    (
        "inv_solve_batched",
        lambda w, a, b: (
            w.torch.linalg.inv(a).sum(0)
            + w.torch.linalg.solve(a, b).sum(0)[:, None]
            + w.torch.linalg.solve(a, a.mT, left=False).sum(0)
            + w.torch.inverse(a[0])
        ),
        [SPD, [[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]],
    ),
    (
        "cholesky_batched",
        lambda w, a: (
            w.torch.linalg.cholesky(a @ a.mT)
            + w.torch.linalg.cholesky(a @ a.mT, upper=True) * 2
            + w.torch.cholesky(a[0] @ a[0].mT)
        ),
        [SPD],
    ),
    (
        "matrix_norms",  # ties of the largest column and row sums share the gradient, as torch's amax
        lambda w, a: (
            w.torch.linalg.matrix_norm(a, 1)
            + w.torch.linalg.matrix_norm(a, -1) * 2
            + w.torch.linalg.matrix_norm(a, INF, dim=(1, 0))
            + w.torch.linalg.matrix_norm(a, -INF, keepdim=True).sum()
            + w.torch.linalg.norm(a, "fro")
            + w.torch.linalg.norm(a, INF)
            + w.torch.linalg.norm(a[0], 3)
            + w.torch.linalg.norm(a, -1, dim=(0, 1))
        ),
        [[[1.0, -2.0, 0.5], [2.0, 1.0, -0.5], [0.5, 1.5, 0.0]]],
    ),
    (
        "empty_tensors",  # a VJP through a broadcast with a 0 in the shape; det of 0×0 is 1; prod of nothing is 1
        lambda w, a, b, m: (a + b).sum() + w.torch.linalg.det(m) + w.torch.prod(a) + w.torch.logsumexp(a, (0, 1, 2)),
        [np.zeros((0, 1, 3)), np.zeros((0, 4, 3)), np.zeros((0, 0))],
    ),
]


@pytest.mark.parametrize(("label", "build", "data"), CASES, ids=[c[0] for c in CASES])
def test_matches_torch(label: str, build: Callable, data: list) -> None:
    compare(build, *data)


# ── integer and boolean results: indices, dtypes ───────────────────────────
def test_indices_and_dtypes_match_torch() -> None:
    data = [[1.0, 3.0, 3.0, NAN], [0.5, -2.0, 0.5, -2.0]]  # ties: max/min/argmax/argmin give the first one
    ours, theirs = storch.tensor(data, dtype=storch.float64), real.tensor(data, dtype=real.float64)
    distinct = [[1.0, 3.0, 2.5, NAN], [0.5, -2.0, 0.25, -1.0]]
    ours_distinct, theirs_distinct = storch.tensor(distinct, dtype="float64"), real.tensor(distinct, dtype=real.float64)
    pairs = [
        (storch.max(ours, 1).indices, real.max(theirs, 1).indices),
        (storch.min(ours, 1, keepdim=True)[1], real.min(theirs, 1, keepdim=True)[1]),
        (storch.argmax(ours), real.argmax(theirs)),
        (storch.argmax(ours, 1, keepdim=True), real.argmax(theirs, 1, keepdim=True)),
        (storch.argmin(ours, 0), real.argmin(theirs, 0)),
        (storch.argmin(ours, keepdim=True), real.argmin(theirs, keepdim=True)),
        (storch.topk(ours_distinct, 2).indices, real.topk(theirs_distinct, 2).indices),
        (storch.topk(ours_distinct, 3, 1, largest=False)[1], real.topk(theirs_distinct, 3, 1, largest=False)[1]),
        (storch.isnan(ours), real.isnan(theirs)),
        (storch.ne(ours, 0.5), real.ne(theirs, 0.5)),
        (storch.where(ours > 1, 2, -1), real.where(theirs > 1, 2, -1)),
        (storch.where(ours > 1, 2.0, -1), real.where(theirs > 1, 2.0, -1)),
        (
            storch.div(storch.tensor([7, -7]), 2, rounding_mode="floor"),
            real.div(real.tensor([7, -7]), 2, rounding_mode="floor"),
        ),
    ]
    for got, want in pairs:
        assert got.dtype == str(want.dtype).removeprefix("torch.")
        assert [bool(v) if want.dtype == real.bool else int(v) for v in got.values().reshape(-1)] == want.reshape(
            -1
        ).tolist()


def test_errors_and_refusals() -> None:
    x = storch.tensor([[1.0, 2.0], [3.0, 4.0]], name="x")
    with pytest.raises(ValueError, match="rounding_mode"):
        storch.div(x, x, rounding_mode="round")
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        storch.clamp(x)
    with pytest.raises(sg.UnsupportedError, match="values"):
        storch.topk(sg.symbols("s", (2, 3)), 2)
    with pytest.raises(sg.UnsupportedError, match="tied"):
        storch.topk(storch.tensor([1.0, 3.0, 3.0, 0.0]), 2)
    with pytest.raises(sg.UnsupportedError, match="sorted"):
        storch.topk(x, 2, sorted=False)
    for refused in (
        lambda: storch.linalg.qr(x),
        lambda: storch.linalg.eigh(x),
        lambda: storch.linalg.svd(x),
        lambda: storch.linalg.svdvals(x),
        lambda: storch.linalg.eigvalsh(x),
        lambda: storch.linalg.eig(x),
        lambda: storch.linalg.eigvals(x),
        lambda: storch.svd(x),
        lambda: storch.linalg.matrix_norm(x, "nuc"),
        lambda: storch.linalg.matrix_norm(x, 2),
        lambda: storch.norm(x, "nuc"),
    ):
        with pytest.raises(sg.UnsupportedError):
            refused()
    with pytest.raises(sg.SymgradError, match="singular"):
        storch.linalg.inv(storch.tensor([[1.0, 2.0], [2.0, 4.0]], name="s")).tolist()


def test_refusals_are_spelled_in_the_namespace() -> None:
    """The refused decompositions are functions of the namespace (so the reader sees them), each one line."""
    w = SG
    for call in (
        lambda: w.torch.linalg.qr(w.torch.eye(2)),
        lambda: w.torch.linalg.eigh(w.torch.eye(2)),
        lambda: w.torch.linalg.eigvalsh(w.torch.eye(2)),
        lambda: w.torch.linalg.eig(w.torch.eye(2)),
        lambda: w.torch.linalg.eigvals(w.torch.eye(2)),
        lambda: w.torch.linalg.svd(w.torch.eye(2)),
        lambda: w.torch.linalg.svdvals(w.torch.eye(2)),
        lambda: w.torch.svd(w.torch.eye(2)),
    ):
        with pytest.raises(sg.UnsupportedError) as caught:
            call()
        assert "\n" not in str(caught.value)


# ── laws at symbolic sizes, proved exactly and against torch ──────────────
k, n = sg.dims("k n")


def S(name: str, *shape: object) -> sg.Tensor:
    return sg.symbols(name, shape)


LAWS: list[tuple[str, Callable]] = [
    ("clamp_between", lambda x, y, z, q: (storch.clamp(x, y, z), [x, y, z])),
    ("clamp_min", lambda x, y, z, q: (storch.clamp_min(x, y), [x, y])),
    ("clamp_max", lambda x, y, z, q: (storch.clamp_max(x, y), [x, y])),
    (
        "rounding",
        lambda x, y, z, q: (storch.floor(x) * x + storch.round(x) * storch.ceil(y) + storch.trunc(x) * z, [x, y, z]),
    ),
    (
        "div_modes",
        lambda x, y, z, q: (
            storch.div(x, y, rounding_mode="floor") * x + storch.div(x, y, rounding_mode="trunc") * y,
            [x, y],
        ),
    ),
    (
        "hypot_logaddexp_xlogy",
        lambda x, y, z, q: (storch.hypot(x, y) + storch.logaddexp(x, z) + storch.xlogy(x, y), [x, y, z]),
    ),
    ("pow_tensor_exponent", lambda x, y, z, q: (x**y, [x, y])),
    (
        "prod_cumprod",
        lambda x, y, z, q: (storch.prod(x, 1) + storch.cumprod(y, 1).sum(1) + storch.prod(z).expand(k), [x, y, z]),
    ),
    ("p_norm", lambda x, y, z, q: (storch.norm(x, 3, dim=1), [x])),
    (
        "einsum_three_and_diagonal",
        lambda x, y, z, q: (
            storch.einsum("ij,jk,kl->il", x, q, q)
            + storch.einsum("ij->i", x)[:, None] * storch.einsum("ii->i", q)[None, :],
            [x, q],
        ),
    ),
    ("det_inv_logdet", lambda x, y, z, q: (storch.linalg.det(q) * storch.linalg.inv(q) + storch.logdet(q.mT @ q), [q])),
]


SLOW_LAWS = {"prod_cumprod", "p_norm"}  # their proofs take 5-15 s each: SYMGRAD_FULL=1


@pytest.mark.parametrize(
    ("label", "build"),
    [pytest.param(*c, marks=pytest.mark.slow) if c[0] in SLOW_LAWS else c for c in LAWS],
    ids=[c[0] for c in LAWS],
)
def test_law_is_proved(label: str, build: Callable) -> None:
    out, wrt = build(S("x", k, n), S("y", k, n), S("z", k, n), S("q", n, n))
    assert sg.prove(out, wrt, [S("V", *out.shape)]).held


def test_topk_law_at_the_picked_entries() -> None:
    """topk picks its entries from the values: the law is the gradient at those entries, proved as well."""
    x = storch.tensor([[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]], name="x")
    out = storch.topk(x, 2).values * 2
    assert sg.prove(out, [x], [S("V", 2, 2)]).held


# ── emitted code ───────────────────────────────────────────────────────────
def test_emitted_module_matches_torch() -> None:
    x, y, low = S("x", k, n), S("y", k, n), S("low", k, n)
    out = storch.clamp(x, low, low + 1).cumprod(1).prod(1) + storch.logaddexp(x, y).norm(3, dim=1)
    module = sg.compile(out, [x, y], inputs=[x, y, low], name="MathOps", style="autograd_function")
    assert check_module(module, out, [x, y], [x, y, low]).ok
