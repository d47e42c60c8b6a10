"""``torch.nn.functional`` on symbolic tensors against real torch (float64, computed here).

Each case builds the same graph in both worlds (``w.F`` is symgrad's or torch's ``torch.nn.functional``) and
compares the forward values, the gradient numbers (reverse mode over the op rows' VJP rules, as
``loss.backward(v)`` gives them) and the gradient formulas (SymPy's derivative of the entries, evaluated at the
same point) with ``torch.autograd.grad``, at the kinks, ties and zeros where torch picks a subgradient. Then the
laws of the nn op rows at symbolic sizes, torch's errors, the refusals, and one emitted module.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
import symgrad.torch as storch
from symgrad.core import apply
from symgrad.core.ieee import float64_values
from symgrad.emit import check_module

SG = SimpleNamespace(name="symgrad", torch=storch, F=storch.nn.functional)
PT = SimpleNamespace(name="torch", torch=torch, F=torch.nn.functional)
RNG = np.random.default_rng(7)

KINKS = np.array([-4.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 25.0])  # at hardswish's ±3, relu6's 6, ...
SPECIAL = np.array([math.nan, math.inf, -math.inf, 0.0, -2.0])  # nan and infinities in, as torch passes them


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def uniform(low: float, high: float, *shape: int) -> np.ndarray:
    return RNG.uniform(low, high, shape)


def ints(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def bools(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=bool)


def fixed(values: Any) -> SimpleNamespace:
    """A float input that does not require grad (running statistics, class weights, masks)."""
    return SimpleNamespace(values=np.asarray(values, dtype=float))


def _leaf(w: SimpleNamespace, value: Any, name: str) -> Any:
    grad = not isinstance(value, SimpleNamespace)
    array = value if grad else value.values
    if array.dtype == bool:
        return storch.tensor(array.astype(int).tolist(), dtype="bool") if w is SG else torch.tensor(array)
    if array.dtype.kind in "iu":
        return storch.tensor(array.tolist(), dtype="int64", name=name) if w is SG else torch.tensor(array)
    if w is SG:
        return storch.tensor(array.tolist(), dtype=storch.float64, requires_grad=grad, name=name)
    return torch.tensor(array, dtype=torch.float64, requires_grad=grad)


@dataclass
class Case:
    id: str
    build: Callable
    inputs: tuple
    tol: float = 1e-9
    formulas: bool = True  # also compare the gradient formulas (SymPy's derivative) at the point


def _close(actual: Any, expected: Any, tol: float, what: str) -> None:
    a, e = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert a.shape == e.shape, f"{what}: shape {a.shape}, torch {e.shape}"
    assert np.allclose(a, e, rtol=tol, atol=tol, equal_nan=True), f"{what}:\n{a}\ntorch:\n{e}"


def _outputs(out: Any) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def run_case(case: Case) -> None:
    names = [f"x{i}" for i in range(len(case.inputs))]
    mine = [_leaf(SG, value, name) for value, name in zip(case.inputs, names)]
    theirs = [_leaf(PT, value, name) for value, name in zip(case.inputs, names)]
    outs, expected = _outputs(case.build(SG, *mine)), _outputs(case.build(PT, *theirs))
    assert len(outs) == len(expected)
    for position, (o, e) in enumerate(zip(outs, expected)):
        assert o.dtype == str(e.dtype).replace("torch.", ""), f"output {position}: {o.dtype}, torch {e.dtype}"
        _close(o.tolist(), e.detach().tolist(), case.tol, f"output {position}")
    leaves = [(m, t) for m, t in zip(mine, theirs) if isinstance(t, torch.Tensor) and t.requires_grad]
    picked = [(o, e) for o, e in zip(outs, expected) if e.requires_grad]
    if not leaves or not picked:
        return
    vs = [RNG.standard_normal(tuple(e.shape)) for _, e in picked]
    torch_grads = torch.autograd.grad(
        [e for _, e in picked], [t for _, t in leaves], [torch.tensor(v) for v in vs], allow_unused=True
    )
    v_tensors = [storch.tensor(v.tolist(), dtype=storch.float64, name=f"v{i}") for i, v in enumerate(vs)]
    grads = sg.vjp([o for o, _ in picked], [m for m, _ in leaves], v_tensors)
    point = {}
    for leaf in [m for m, _ in leaves] + v_tensors + [m for m in mine if getattr(m, "kind", "") == "symbol"]:
        point.update(zip(leaf.entries().reshape(-1), (float(v) for v in np.asarray(leaf.tolist()).reshape(-1))))
    for k, ((_, reference), grad, want) in enumerate(zip(leaves, grads, torch_grads)):
        want = np.zeros(tuple(reference.shape)) if want is None else want.numpy()
        _close(grad.tolist(), want, case.tol, f"gradient {k}")
        if case.formulas:
            numbers = float64_values(grad.entries().reshape(-1), point)
            _close(np.array(numbers).reshape(want.shape), want, case.tol, f"gradient formula {k}")


def _case(label: str, build: Callable, *inputs: Any, tol: float = 1e-9, formulas: bool = True) -> Case:
    return Case(label, build, inputs, tol, formulas)


CASES: list[Case] = [
    # ── activations at their kinks (torch's subgradients) ──
    _case("relu_relu6_at_kinks", lambda w, a: w.F.relu(a) + w.F.relu6(a) * 2, KINKS),
    _case("sigmoid_tanh", lambda w, a: w.F.sigmoid(a) * w.F.tanh(a), KINKS),
    _case(
        "softmax_family",
        lambda w, a: w.F.softmax(a, dim=0) + w.F.log_softmax(a, dim=1) * w.F.softmin(a, dim=0),
        randn(2, 3),
    ),
    _case("gelu_both", lambda w, a: w.F.gelu(a) + w.F.gelu(a, approximate="tanh") * 3, KINKS),
    _case("silu_mish", lambda w, a: w.F.silu(a) + w.F.mish(a) * 3, KINKS),
    _case(
        "elu_selu_celu_at_zero",
        lambda w, a: w.F.elu(a) + w.F.elu(a, 0.5) * 2 + w.F.selu(a) * 3 + w.F.celu(a, 2.0),
        KINKS,
    ),
    _case("hardswish_at_pm3", lambda w, a: w.F.hardswish(a), KINKS),
    _case("hardsigmoid_at_pm3", lambda w, a: w.F.hardsigmoid(a), KINKS),
    _case(
        "softplus_beta_threshold",
        lambda w, a: w.F.softplus(a) + w.F.softplus(a, 2.0, 1.0) * w.F.softplus(a, 0.5),
        KINKS,
    ),
    _case("logsigmoid_softsign_at_zero", lambda w, a: w.F.logsigmoid(a) + w.F.softsign(a) * 2, KINKS),
    _case("hardtanh_at_bounds", lambda w, a: w.F.hardtanh(a) + w.F.hardtanh(a, -0.5, 3.0) * 2, KINKS),
    _case("leaky_relu_threshold", lambda w, a: w.F.leaky_relu(a, 0.2) + w.F.threshold(a, 0.5, -2.0) * 2, KINKS),
    _case(
        "activations_of_nan_and_inf",
        lambda w, a: w.torch.stack(
            [
                w.F.hardswish(a),
                w.F.hardtanh(a),
                w.F.relu6(a),
                w.F.elu(a),
                w.F.selu(a),
                w.F.threshold(a, 0.5, -2.0),
                w.F.mish(a),
                w.F.softsign(a),
            ]
        ),
        SPECIAL,
        formulas=False,
    ),
    _case(
        "dropout_deterministic",
        lambda w, a: w.F.dropout(a, 0.3, training=False) + w.F.dropout(a, 0.0) * 2 + w.F.dropout(a, 1.0) * 3,
        randn(3),
    ),
    # ── normalisation ──
    _case(
        "layer_norm_affine", lambda w, x, g, b: w.F.layer_norm(x, (3,), g, b, eps=1e-5), randn(2, 3), randn(3), randn(3)
    ),
    _case("layer_norm_two_dims", lambda w, x: w.F.layer_norm(x, x.shape[1:], eps=0.1), randn(2, 2, 2)),
    _case(
        "rms_norm",
        lambda w, x, g: w.F.rms_norm(x, (3,), g) + w.F.rms_norm(x, [2, 3], eps=0.5),
        randn(2, 2, 3),
        randn(3),
    ),
    _case(
        "batch_norm_eval",
        lambda w, x, m, v, g, b: w.F.batch_norm(x, m, v, g, b, eps=0.1),
        randn(3, 2, 2),
        fixed([0.5, -1.0]),
        fixed([2.0, 0.5]),
        randn(2),
        randn(2),
    ),
    _case("group_norm", lambda w, x, g, b: w.F.group_norm(x, 2, g, b), randn(2, 4, 2), randn(4), randn(4)),
    _case(
        "normalize_with_zero_rows",
        lambda w, x: w.F.normalize(x) + w.F.normalize(x, p=1.0, dim=0) + w.F.normalize(x, p=3.0, eps=0.5),
        np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [1e-13, 0.0, -1e-13]]),
    ),
    _case(
        "cosine_similarity_small_and_zero_norms",
        lambda w, a, b: w.F.cosine_similarity(a, b, dim=1, eps=1e-8),
        np.array([[0.0, 0.0], [1e-10, 2e-10], [1.0, 2.0]]),
        np.array([[1.0, 2.0], [3.0, 1.0], [0.5, -1.0]]),
    ),
    _case(
        "cosine_similarity_broadcast", lambda w, a, b: w.F.cosine_similarity(a, b, dim=-1), randn(2, 3), randn(2, 1, 3)
    ),
    _case("linear", lambda w, x, a, b: w.F.linear(x, a, b), randn(2, 3), randn(4, 3), randn(4)),
    _case(
        "embedding_padding_idx",
        lambda w, e, i: w.F.embedding(i, e, padding_idx=2) * 2,
        randn(4, 3),
        ints([[0, 2, 2], [3, 0, 1]]),
    ),
    _case(
        "embedding_bag_modes_padding_and_empty_bags",
        lambda w, e, i, b, p: (
            w.F.embedding_bag(b, e, mode="sum", per_sample_weights=p)
            + w.F.embedding_bag(b, e, mode="max", padding_idx=2)
            + w.F.embedding_bag(
                i, e, w.torch.tensor([0, 4, 4, 7]), mode="mean", padding_idx=1, include_last_offset=True
            )
        ),
        randn(5, 3),
        ints([1, 2, 2, 4, 0, 3, 1, 1]),
        ints([[1, 2, 4], [2, 2, 2], [3, 3, 0]]),
        randn(3, 3),
    ),
    # ── convolution and pooling ──
    _case(
        "conv1d_stride_padding",
        lambda w, x, a, b: w.F.conv1d(x, a, b, stride=2, padding=1),
        randn(1, 2, 5),
        randn(3, 2, 2),
        randn(3),
    ),
    _case(
        "conv3d_strided_padded",
        lambda w, x, a, b: w.F.conv3d(x, a, b, stride=(1, 2, 1), padding=1),
        randn(1, 2, 3, 4, 3),
        randn(2, 2, 2, 2, 2),
        randn(2),
    ),
    _case(
        "conv_transpose1d_stride_output_padding_groups",
        lambda w, x, a, b: w.F.conv_transpose1d(x, a, b, stride=3, padding=2, output_padding=1, groups=2),
        randn(2, 4, 3),
        randn(4, 2, 3),
        randn(4),
    ),
    _case(
        "conv_transpose2d_dilation_cropped",  # more padding than the dilated kernel spans: the output is cropped
        lambda w, x, a: w.F.conv_transpose2d(x, a, stride=(2, 1), padding=(3, 1), dilation=(1, 2)),
        randn(1, 2, 4, 3),
        randn(2, 3, 2, 2),
    ),
    _case(
        "conv_transpose3d_unbatched",
        lambda w, x, a: w.F.conv_transpose3d(x, a, stride=2, output_padding=(1, 0, 0)),
        randn(1, 2, 2, 2),
        randn(1, 2, 2, 1, 2),
    ),
    _case(
        "conv1d_groups_dilation_same",
        lambda w, x, a: w.F.conv1d(x, a, padding="same", dilation=2, groups=2),
        randn(4, 5),
        randn(2, 2, 2),
    ),
    _case(
        "conv2d",
        lambda w, x, a, b: w.F.conv2d(x, a, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
        randn(1, 2, 3, 4),
        randn(2, 2, 2, 2),
        randn(2),
    ),
    _case(
        "max_pool1d_ties_first_index",
        lambda w, x: (
            w.F.max_pool1d(x, 2, stride=1, return_indices=True)[0].sum()
            + w.F.max_pool1d(x, 3, 2, 1, ceil_mode=True).sum()
        ),
        np.array([[[1.0, 3.0, 3.0, 2.0, 2.0]]]),
    ),
    _case(
        "max_pool1d_indices",
        lambda w, x: w.F.max_pool1d(x, 2, stride=1, dilation=2, return_indices=True),
        np.array([[[1.0, 3.0, 3.0, 3.0, 2.0]]]),
    ),
    _case(
        "max_pool2d_ties_padding",
        lambda w, x: w.F.max_pool2d(x, 2, stride=1, padding=1, return_indices=True),
        np.array([[[1.0, 1.0, 0.0], [1.0, 0.5, 1.0]]]),
    ),
    _case(
        "avg_pool1d_counts",
        lambda w, x: (
            w.F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False).sum() + w.F.avg_pool1d(x, 3, 2, 1).sum()
        ),
        randn(1, 2, 6),
    ),
    _case("avg_pool2d_divisor", lambda w, x: w.F.avg_pool2d(x, 2, 1, 1, divisor_override=3) * 2, randn(1, 2, 3)),
    _case(
        "adaptive_avg_pool",
        lambda w, x: w.F.adaptive_avg_pool1d(x, 3).sum() + w.F.adaptive_avg_pool2d(x, (2, None)).sum() * 2,
        randn(2, 3, 5),
    ),
    _case(
        "pool3d_with_ties",
        lambda w, x: (
            w.F.max_pool3d(x, 2, stride=1, padding=1, return_indices=True)[0].sum()
            + w.F.avg_pool3d(x, 2, 1, 1, count_include_pad=False).sum() * 2
            + w.F.adaptive_avg_pool3d(x, (1, 2, None)).sum() * 3
        ),
        np.array([[[[1.0, 1.0, 0.0], [1.0, 0.5, 1.0]], [[1.0, 2.0, 2.0], [0.0, 2.0, 1.0]]]]),
    ),
    _case(
        "adaptive_max_pools_ties",
        lambda w, x: (
            w.F.adaptive_max_pool1d(x, 2).sum()
            + w.F.adaptive_max_pool2d(x, (2, 2), return_indices=True)[0].sum() * 2
            + w.F.adaptive_max_pool3d(x.unsqueeze(0), (1, 2, 2)).sum() * 3
        ),
        np.array([[[1.0, 3.0, 3.0], [2.0, 2.0, -1.0], [0.0, 4.0, 4.0]]]),
    ),
    _case(
        "adaptive_max_pool_indices",
        lambda w, x: w.F.adaptive_max_pool2d(x, 2, return_indices=True),
        np.array([[[1.0, 3.0, 3.0], [2.0, 3.0, -1.0], [0.0, 4.0, 4.0]]]),
    ),
    _case(
        "bilinear",
        lambda w, a, b, W, c: w.F.bilinear(a, b, W, c) + w.F.bilinear(a[0], b[0], W).sum(),
        randn(2, 3),
        randn(2, 4),
        randn(5, 3, 4),
        randn(5),
    ),
    # ── losses ──
    _case(
        "gaussian_nll_clamped_and_broadcast",
        lambda w, a, b, v: (
            w.F.gaussian_nll_loss(a, b, v, eps=0.1)
            + w.F.gaussian_nll_loss(a, b, v[:, :1], full=True, reduction="sum")
            + w.F.gaussian_nll_loss(a, b, v[:, 0], reduction="none").sum()
        ),
        randn(3, 2),
        randn(3, 2),
        np.array([[0.05, 1.0], [0.1, 2.0], [0.5, 0.0]]),
    ),
    _case(
        "mse_l1_with_ties_and_weight",
        lambda w, a, b, c: (
            w.F.mse_loss(a, b)
            + w.F.l1_loss(a, b, reduction="sum")
            + w.F.l1_loss(a, b, weight=c)
            + w.F.mse_loss(a, b, reduction="none", weight=c).sum()
        ),
        np.array([1.0, 2.0, -1.0, 0.5]),
        np.array([1.0, 0.0, -1.0, 2.0]),
        uniform(0.5, 1.5, 4),
    ),
    _case(
        "smooth_l1_huber_at_beta_and_delta",
        lambda w, a, b: (
            w.F.smooth_l1_loss(a, b, reduction="none", beta=0.5)
            + w.F.smooth_l1_loss(a, b, beta=0.0)
            + w.F.huber_loss(a, b, reduction="none", delta=0.5) * 2
        ),
        np.array([1.0, 0.5, -0.5, 0.0, 3.0]),
        np.array([0.5, 0.0, 0.0, 0.0, 1.0]),
    ),
    _case(
        "huber_weighted",
        lambda w, a, b, c: w.F.huber_loss(a, b, delta=1.5, weight=c),
        randn(4),
        randn(4),
        uniform(0.5, 1.5, 4),
    ),
    _case(
        "kl_div_reductions",
        lambda w, a, t: (
            w.F.kl_div(a, t, reduction="batchmean")
            + w.F.kl_div(a, t, reduction="sum", log_target=True)
            + w.F.kl_div(a, t, reduction="none").sum()
        ),
        randn(2, 3),
        np.array([[0.0, 0.25, 0.75], [0.5, 0.5, 0.0]]),
        formulas=False,
    ),
    _case(
        "binary_cross_entropy_clamped_at_0_and_1",
        lambda w, p, t, c: w.F.binary_cross_entropy(p, t, weight=c, reduction="none"),
        np.array([0.0, 1.0, 0.3, 1e-14, 0.9]),
        fixed([0.5, 0.5, 1.0, 0.0, 0.25]),
        fixed(uniform(0.5, 1.5, 5)),
        tol=1e-7,
    ),
    _case(
        "binary_cross_entropy_target_grad",
        lambda w, p, t: w.F.binary_cross_entropy(p, t),
        uniform(0.05, 0.95, 2, 3),
        uniform(0, 1, 2, 3),
    ),
    _case(
        "bce_with_logits_pos_weight",
        lambda w, x, t, c, p: (
            w.F.binary_cross_entropy_with_logits(x, t, weight=c, pos_weight=p)
            + w.F.binary_cross_entropy_with_logits(x, t, reduction="sum")
        ),
        randn(2, 3) * 3,
        uniform(0, 1, 2, 3),
        fixed(uniform(0.5, 1.5, 3)),
        fixed([0.5, 2.0, 3.0]),
    ),
    _case(
        "cross_entropy_fast_path",
        lambda w, z, y: w.F.cross_entropy(z, y) + w.F.cross_entropy(z, y, reduction="sum"),
        randn(3, 4),
        ints([3, 0, 1]),
    ),
    _case(
        "cross_entropy_options",
        lambda w, z, y, c: w.F.cross_entropy(z, y, weight=c, ignore_index=1, label_smoothing=0.2, reduction="none"),
        randn(2, 3, 2),
        ints([[0, 1], [2, 2]]),
        fixed([0.5, 1.0, 2.0]),
    ),
    _case(
        "cross_entropy_mean_weighted_smoothing",
        lambda w, z, y, c: (
            w.F.cross_entropy(z, y, weight=c, ignore_index=-1, label_smoothing=0.1)
            + w.F.cross_entropy(z, y, ignore_index=-1, label_smoothing=0.3)
            + w.F.cross_entropy(z[0], y[0])
        ),
        randn(3, 4),
        ints([3, -1, 1]),
        fixed([0.5, 1.0, 2.0, 1.5]),
    ),
    _case(
        "cross_entropy_probabilities",
        lambda w, z, t: w.F.cross_entropy(z, t, label_smoothing=0.25) + w.F.cross_entropy(z, t, reduction="sum"),
        randn(2, 3, 2),
        uniform(0, 1, 2, 3, 2),
    ),
    _case(
        "cross_entropy_all_ignored_is_nan",
        lambda w, z, y: w.F.cross_entropy(z, y),
        randn(2, 3),
        ints([-100, -100]),
        formulas=False,
    ),
    _case(
        "nll_loss_options",
        lambda w, z, y, c: (
            w.F.nll_loss(z, y, weight=c, ignore_index=-1)
            + w.F.nll_loss(z, y, ignore_index=-1, reduction="sum")
            + w.F.nll_loss(z[0], y[0], reduction="none")
        ),
        randn(3, 4),
        ints([3, -1, 1]),
        fixed([0.5, 1.0, 2.0, 1.5]),
    ),
    _case(
        "nll_loss_spatial", lambda w, z, y: w.F.nll_loss(z, y, reduction="none"), randn(2, 3, 2), ints([[0, 1], [2, 2]])
    ),
    _case("one_hot", lambda w, y: w.F.one_hot(y, 4) * 2 + w.F.one_hot(y).sum(), ints([[1, 0], [3, 2]])),
    # ── attention ──
    _case(
        "attention_causal_and_scale",
        lambda w, q, k, v: (
            w.F.scaled_dot_product_attention(q, k, v, is_causal=True)
            + w.F.scaled_dot_product_attention(q, k, v, scale=0.3)
        ),
        randn(1, 2, 2),
        randn(1, 3, 2),
        randn(1, 3, 2),
        formulas=False,
    ),
    _case(
        "attention_masked_rows_give_zero",
        lambda w, q, k, v, m: w.F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        randn(2, 2),
        randn(3, 2),
        randn(3, 2),
        bools([[True, False, True], [False, False, False]]),
        formulas=False,
    ),
    _case(
        "attention_float_mask_and_gqa",
        lambda w, q, k, v, m: w.F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
        randn(2, 1, 2),
        randn(1, 2, 2),
        randn(1, 2, 2),
        fixed([[0.5, -math.inf]]),
        formulas=False,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_matches_torch(case: Case) -> None:
    run_case(case)


def test_batch_norm_training_updates_running_statistics_as_torch() -> None:
    x, g, b = randn(3, 2, 2), randn(2), randn(2)
    stats = {"mean": np.array([0.5, -1.0]), "var": np.array([2.0, 0.5])}

    def build(w: SimpleNamespace, x: Any, g: Any, b: Any) -> Any:
        build.mean = _leaf(w, fixed(stats["mean"]), "running_mean")
        build.var = _leaf(w, fixed(stats["var"]), "running_var")
        return w.F.batch_norm(x, build.mean, build.var, g, b, training=True, momentum=0.3, eps=0.01)

    run_case(Case("batch_norm_training", build, (x, g, b)))
    mine_mean, mine_var = build.mean, build.var  # the symgrad run came first
    build(PT, *[torch.tensor(a, requires_grad=True) for a in (x, g, b)])
    _close(mine_mean.tolist(), build.mean.tolist(), 1e-12, "running_mean")
    _close(mine_var.tolist(), build.var.tolist(), 1e-12, "running_var")


def test_embedding_padding_row_has_no_gradient_formula() -> None:
    weight = storch.tensor(randn(3, 2).tolist(), dtype=storch.float64, requires_grad=True, name="E")
    out = storch.nn.functional.embedding(storch.tensor([0, 1, 1], dtype="int64"), weight, padding_idx=1)
    grad = sg.vjp(out, weight, storch.tensor(np.ones((3, 2)).tolist(), dtype=storch.float64, name="g"))
    assert grad.sympy()[1, 0] == 0 and grad.sympy()[2, 1] == 0
    assert grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


# ── laws at symbolic sizes: each new op row's VJP rule, proved against the entrywise derivative and torch ──
n, d = sg.dims("n d")


def _symbols(name: str, *shape: Any) -> sg.Tensor:
    return sg.symbols(name, shape)


LAWS: list[tuple[str, Callable]] = [
    ("gelu_tanh", lambda X: storch.nn.functional.gelu(X, approximate="tanh")),
    (
        "elu_selu_celu",
        lambda X: storch.nn.functional.elu(X, 0.5) * storch.nn.functional.selu(X) + storch.nn.functional.celu(X, 2.0),
    ),
    ("mish", lambda X: storch.nn.functional.mish(X)),
    ("hardswish_hardsigmoid", lambda X: storch.nn.functional.hardswish(X) * storch.nn.functional.hardsigmoid(X)),
    ("hardtanh", lambda X: storch.nn.functional.hardtanh(X, -0.5, 0.5)),
    ("stop_gradient", lambda X: apply("stop_gradient", X) * X),
    ("layer_norm_symbolic_shape", lambda X: storch.nn.functional.layer_norm(X, (d,))),
    (
        "cosine_similarity",
        lambda X: storch.nn.functional.cosine_similarity(X, X * X + 1, dim=1).reshape(n, 1).expand(n, d),
    ),
    (
        "binary_cross_entropy",
        lambda X: storch.nn.functional.binary_cross_entropy(X.sigmoid(), (X * 0.5).sigmoid(), reduction="none"),
    ),
]


@pytest.mark.parametrize(("label", "build"), LAWS, ids=[law[0] for law in LAWS])
def test_law_holds_at_symbolic_sizes(label: str, build: Callable) -> None:
    X, V = _symbols("X", n, d), _symbols("V", n, d)
    assert sg.prove(build(X), [X], [V]).held


# convolution and pooling: their windows slice the spatial dims, so those stay concrete; batch (and, for pooling,
# channel) sizes are symbolic
c = sg.dims("c")[0]
WINDOW_LAWS: list[tuple[str, Callable, tuple]] = [
    (
        "conv1d_padding_bias",
        lambda Z: storch.nn.functional.conv1d(
            Z, _symbols("K", 3, 2, 2), _symbols("B", 3), padding=1, dilation=2
        ).tanh(),
        (n, 2, 6),
    ),
    (
        "conv2d_stride_groups",
        lambda Z: storch.nn.functional.conv2d(Z, _symbols("K", 4, 1, 2, 2), stride=2, groups=2),
        (n, 2, 4, 5),
    ),
    ("max_pool2d_overlapping", lambda Z: storch.nn.functional.max_pool2d(Z, 2, stride=1), (n, c, 3, 3)),
    ("avg_pool1d_padding", lambda Z: storch.nn.functional.avg_pool1d(Z, 2, stride=2, padding=1) ** 2, (n, c, 6)),
    ("adaptive_avg_pool2d", lambda Z: storch.nn.functional.adaptive_avg_pool2d(Z, (2, 3)).exp(), (n, c, 5, 4)),
]


@pytest.mark.parametrize(("label", "build", "shape"), WINDOW_LAWS, ids=[law[0] for law in WINDOW_LAWS])
def test_window_laws_hold_for_every_batch_size(label: str, build: Callable, shape: tuple) -> None:
    Z = _symbols("Z", *shape)
    out = build(Z)
    leaves = [t for name, t in sorted(out.leaves().items()) if name in ("Z", "K", "B")]
    assert sg.prove(out, leaves, [_symbols("V", *out.shape)]).held


def test_emitted_module_matches_autograd() -> None:
    W, X, Y = _symbols("W", n, d), _symbols("X", d, n), _symbols("Y", n, n)
    F = storch.nn.functional
    out = F.binary_cross_entropy((W @ X).sigmoid(), Y.sigmoid()) + F.hardswish(W @ X).mean()
    module = sg.compile(out, [W], inputs=[W, X, Y], style="autograd_function", name="NnLayer")
    assert check_module(module, out, [W], [W, X, Y]).ok


# ── torch's errors and symgrad's refusals ──
def _z(w: SimpleNamespace, *shape: int) -> Any:
    return _leaf(w, np.zeros(shape), "z")


ERRORS: list[tuple[str, Callable]] = [
    ("conv_channels", lambda w: w.F.conv1d(_z(w, 1, 2, 5), _z(w, 3, 3, 2))),
    ("conv_kernel_too_large", lambda w: w.F.conv1d(_z(w, 1, 2, 5), _z(w, 3, 2, 7))),
    ("conv_same_strided", lambda w: w.F.conv1d(_z(w, 1, 2, 5), _z(w, 3, 2, 2), stride=2, padding="same")),
    ("pool_padding", lambda w: w.F.avg_pool1d(_z(w, 1, 2, 5), 3, padding=2)),
    ("pool_output_size", lambda w: w.F.max_pool2d(_z(w, 1, 1, 2, 2), 3)),
    ("group_norm_groups", lambda w: w.F.group_norm(_z(w, 1, 6, 3), 4)),
    ("layer_norm_shape", lambda w: w.F.layer_norm(_z(w, 2, 3), (2,))),
    ("batch_norm_single_value", lambda w: w.F.batch_norm(_z(w, 1, 3), None, None, training=True)),
    ("batch_norm_eval_needs_stats", lambda w: w.F.batch_norm(_z(w, 2, 3), None, None)),
    ("nll_target_out_of_bounds", lambda w: w.F.nll_loss(_z(w, 2, 3), _leaf(w, ints([0, 5]), "y"))),
    ("embedding_bag_weights_need_sum", lambda w: w.F.embedding_bag(
        _leaf(w, ints([[0, 1]]), "i"), _z(w, 2, 3), per_sample_weights=_z(w, 1, 2), mode="mean")),
    ("embedding_bag_first_offset", lambda w: w.F.embedding_bag(
        _leaf(w, ints([0, 1]), "i"), _z(w, 2, 3), _leaf(w, ints([1]), "o"))),
    ("cross_entropy_batch", lambda w: w.F.cross_entropy(_z(w, 2, 3), _leaf(w, ints([0, 1, 2]), "y"))),
    ("bce_outside_unit_interval", lambda w: w.F.binary_cross_entropy(_leaf(w, np.array([1.5]), "p"), _z(w, 1))),
    ("bce_sizes", lambda w: w.F.binary_cross_entropy_with_logits(_z(w, 2), _z(w, 3))),
    ("dropout_probability", lambda w: w.F.dropout(_z(w, 2), 1.5)),
    ("gelu_approximate", lambda w: w.F.gelu(_z(w, 2), approximate="erf")),
    ("attention_mask_and_causal", lambda w: w.F.scaled_dot_product_attention(
        _z(w, 2, 2), _z(w, 2, 2), _z(w, 2, 2), attn_mask=_leaf(w, bools([[True, True]] * 2), "m"), is_causal=True)),
]  # fmt: skip


@pytest.mark.parametrize(("label", "call"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_torchs(label: str, call: Callable) -> None:
    with pytest.raises(Exception) as theirs:
        call(PT)
    with pytest.raises(type(theirs.value)) as mine:
        call(SG)
    assert str(theirs.value).split(" (")[0][:60] in str(mine.value), (str(mine.value), str(theirs.value))


def test_attention_dropout_draws_what_torch_draws() -> None:
    """scaled_dot_product_attention(dropout_p > 0): the same dropped weights as torch's under the same seed, and the
    same gradients (the backward reads the drawn noise)."""
    data = [[[0.5, -1.0], [2.0, 0.25], [1.5, -0.5]]]
    real = torch.tensor(data, dtype=torch.float64, requires_grad=True)
    mine = storch.tensor(data, dtype=storch.float64, requires_grad=True, name="q")
    outs = []
    for F, x in ((torch.nn.functional, real), (storch.nn.functional, mine)):
        torch.manual_seed(3)
        outs.append(F.scaled_dot_product_attention(x, x * 2, x.exp(), dropout_p=0.4))
        (outs[-1] * outs[-1]).sum().backward()
    np.testing.assert_allclose(np.asarray(outs[1].tolist()), outs[0].detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(mine.grad.tolist()), real.grad.numpy(), rtol=1e-10)


REFUSALS: list[tuple[str, Callable]] = [
    ("embedding_max_norm", lambda F, x: F.embedding(storch.tensor([0]), x, max_norm=1.0)),
    ("conv_symbolic_sizes", lambda F, x: F.conv1d(sg.symbols("s", (1, 2, n)), x.reshape(1, 2, 2))),
    (
        "batch_norm_running_stats_symbolic",
        lambda F, x: F.batch_norm(sg.symbols("s", (n, 2)), storch.tensor([0.0, 0.0]), None, training=True),
    ),
]


@pytest.mark.parametrize(("label", "call"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_are_one_clear_line(label: str, call: Callable) -> None:
    with pytest.raises(sg.UnsupportedError) as refused:
        call(storch.nn.functional, storch.tensor([[1.0, 2.0], [3.0, 4.0]], name="x"))
    assert "\n" not in str(refused.value)


def test_reader_accepts_the_new_functions() -> None:
    out = sg.parse('F.conv1d(x, k, padding="same") + F.hardswish(x)', shapes={"x": (1, 2, 4), "k": (2, 2, 3)})
    assert out.shape == (1, 2, 4)
    loss = sg.parse('F.kl_div(a, b, reduction="batchmean")', shapes={"a": (2, 3), "b": (2, 3)})
    assert loss.shape == ()


def test_formulas_read_as_torch() -> None:
    x = sg.symbols("x", (2,))
    assert storch.nn.functional.hardtanh(x, -0.5, 0.5).name == "torch.nn.functional.hardtanh(x, -0.5, 0.5)"
    assert str(storch.nn.functional.hardswish(x).sympy()[0]) == "hardswish(x_0)"
    assert sympy.latex(storch.nn.functional.hardswish(x).sympy()[0]) == r"\operatorname{hardswish}\left(x_{0}\right)"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_causal_attention_in_low_precision_keeps_the_querys_dtype(dtype):
    """The causal mask's -inf bias is made in the scores' dtype, as torch's kernel makes it: a bfloat16 attention
    stays bfloat16 (its float32 bias promoted the scores, and the product with the values then refused)."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 4, 8, generator=generator).to(dtype) for _ in range(3))

    def attention(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    traced = sg.trace(attention, q, k, v)
    expected = attention(q, k, v)
    assert traced.output.dtype == str(expected.dtype).removeprefix("torch.")
    ours = np.asarray(traced.output.tolist(), dtype=float)
    np.testing.assert_allclose(ours, expected.float().numpy(), rtol=0.05, atol=0.02)  # rounded at each step
