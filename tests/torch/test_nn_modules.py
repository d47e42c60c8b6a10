"""symgrad.torch.nn modules against real torch.nn modules (float64): same constructor, same state, same numbers.

Each case builds the real module and symgrad's with the same constructor arguments, gives the real one random
parameters and buffers, loads the real ``state_dict()`` into symgrad's, runs both on the same inputs and
compares the outputs, the buffers after the forward (BatchNorm's running statistics) and, after ``backward``
with a random grad, the gradient of every input and parameter. A new module is one more row of ``CASES``.
"""

from __future__ import annotations

import inspect
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch as real

import symgrad as sg
import symgrad.torch as st
from symgrad.torch.nn import modules as sg_modules

TOL = 1e-9


# ── inputs ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Arg:
    """One input: ``kind`` "randn" (float, requires grad), "prob" (float in (0.05, 0.95), requires grad),
    "target" (randn without grad), "int" (int64 in [0, high)), "mask" (bool from ``values``), "values"."""

    kind: str
    shape: tuple = ()
    high: int = 0
    values: Any = None

    def numbers(self, rng: np.random.Generator) -> np.ndarray:
        if self.kind in ("randn", "target"):
            return rng.standard_normal(self.shape)
        if self.kind == "prob":
            return rng.uniform(0.05, 0.95, self.shape)
        if self.kind == "int":
            return rng.integers(0, self.high, self.shape)
        return np.asarray(self.values)

    @property
    def grad(self) -> bool:
        return self.kind in ("randn", "prob") or (self.kind == "values" and np.asarray(self.values).dtype.kind == "f")


def R(*shape: int) -> Arg:
    return Arg("randn", shape)


def P(*shape: int) -> Arg:
    return Arg("prob", shape)


def Y(*shape: int) -> Arg:
    return Arg("target", shape)


def I(high: int, *shape: int) -> Arg:  # noqa: E743 - I for integer, as R for randn
    return Arg("int", shape, high=high)


def M(values: list) -> Arg:
    return Arg("mask", values=values)


def V(values: list) -> Arg:
    return Arg("values", values=values)


KINKS = V([[-1.0, 0.0, 1.0, 6.0], [0.5, -0.5, 3.0, -3.0]])  # at ReLU's, Hardtanh's, ReLU6's, Hardswish's kinks


def make(t: Any, arg: Arg, values: np.ndarray) -> Any:
    """``values`` as an input of namespace ``t`` (torch or symgrad.torch)."""
    if arg.kind == "int" or values.dtype.kind in "iu":
        return t.tensor(values.tolist(), dtype=t.int64)
    if arg.kind == "mask":
        return t.tensor(values.astype(int).tolist()) > 0
    if t is real:
        return real.tensor(values, dtype=real.float64, requires_grad=arg.grad)
    return st.tensor(values.tolist(), dtype=st.float64, requires_grad=arg.grad)


def T(t: Any, values: list) -> Any:
    """A float64 tensor of namespace ``t``, for constructor arguments (class weights, pretrained tables)."""
    return t.tensor(values, dtype=t.float64)


# ── cases ─────────────────────────────────────────────────────────────────
@dataclass
class Case:
    id: str
    build: Callable  # build(t) -> module, with t = torch or symgrad.torch
    args: list[Arg]
    call: Callable | None = None  # call(module, t, *inputs) -> output; default module(*inputs)
    train: bool = True
    marks: list = field(default_factory=list)

    @property
    def param(self) -> Any:
        return pytest.param(self, id=self.id, marks=self.marks)


ACTIVATIONS = [
    ("ReLU", {}), ("ReLU6", {}), ("Tanh", {}), ("Sigmoid", {}), ("LogSigmoid", {}), ("Softsign", {}),
    ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Mish", {}), ("Hardswish", {}),
    ("Hardsigmoid", {}), ("SELU", {}), ("ELU", {}), ("ELU", {"alpha": 0.5}), ("CELU", {"alpha": 2.0}),
    ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("Hardtanh", {}),
    ("Hardtanh", {"min_val": -0.5, "max_val": 3.0}), ("Threshold", {"threshold": 0.5, "value": 20.0}),
    ("Softplus", {}), ("Softplus", {"beta": 2.0, "threshold": 1.0}), ("Softmax", {"dim": 1}),
    ("LogSoftmax", {"dim": -1}), ("Softmin", {"dim": 0}), ("Tanhshrink", {}), ("GLU", {}), ("GLU", {"dim": 0}),
    ("PReLU", {}),
]  # fmt: skip


PIECEWISE = {
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "Hardtanh",
    "Threshold",
    "Hardswish",
    "Hardsigmoid",
    "ELU",
    "CELU",
    "SELU",
    "Softplus",
}


def _activation_cases() -> list[Case]:
    """Each activation on random numbers; the piecewise ones also at their kinks (torch's one-sided choices)."""
    cases = []
    for name, options in ACTIVATIONS:
        label = name + "".join(f"-{k}={v}" for k, v in options.items())
        build = (lambda n, o: lambda t: getattr(t.nn, n)(**o))(name, options)
        cases.append(Case(label, build, [R(2, 4)]))
        if name in PIECEWISE:
            cases.append(Case(label + "-kinks", build, [KINKS]))
    return cases


EVEN_SAME = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel:UserWarning")
MHA_X = [R(2, 1, 2), R(2, 1, 2), R(2, 1, 2)]  # (L, N, E) query, key, value
PAD = M([[False, True], [False, False]])  # (N, S): the last key of the first sample is padding
CAUSAL = M([[False, True], [False, False]])

CASES = [
    # ── linear, shapes ──
    Case("Linear", lambda t: t.nn.Linear(3, 2), [R(4, 3)]),
    Case("Linear-nobias-3d", lambda t: t.nn.Linear(3, 2, bias=False), [R(2, 4, 3)]),
    Case("Linear-unbatched", lambda t: t.nn.Linear(3, 2), [R(3)]),
    Case("Identity", lambda t: t.nn.Identity(7, unused=True), [R(2, 3)]),
    Case("Flatten", lambda t: t.nn.Flatten(), [R(2, 3, 2)]),
    Case("Flatten-0", lambda t: t.nn.Flatten(0, -2), [R(2, 3, 2)]),
    Case("Unflatten", lambda t: t.nn.Unflatten(1, (2, 3)), [R(2, 6)]),
    Case("Sequential", lambda t: t.nn.Sequential(t.nn.Linear(3, 4), t.nn.Tanh(), t.nn.Linear(4, 2)), [R(5, 3)]),
    Case(
        "Sequential-nested",
        lambda t: t.nn.Sequential(t.nn.Sequential(t.nn.Linear(3, 3), t.nn.ReLU()), t.nn.LayerNorm(3)),
        [R(2, 3)],
    ),
    # ── convolutions ──
    Case("Conv1d", lambda t: t.nn.Conv1d(2, 3, 3), [R(2, 2, 6)]),
    Case("Conv1d-stride-pad-dil", lambda t: t.nn.Conv1d(2, 3, 3, stride=2, padding=2, dilation=2), [R(2, 2, 7)]),
    Case("Conv1d-groups-nobias", lambda t: t.nn.Conv1d(4, 2, 2, groups=2, bias=False), [R(2, 4, 5)]),
    Case("Conv1d-same-even", lambda t: t.nn.Conv1d(2, 2, 4, padding="same"), [R(1, 2, 6)], marks=[EVEN_SAME]),
    Case("Conv1d-valid", lambda t: t.nn.Conv1d(2, 2, 3, padding="valid"), [R(1, 2, 6)]),
    Case("Conv1d-circular", lambda t: t.nn.Conv1d(2, 3, 3, padding=1, padding_mode="circular"), [R(2, 2, 5)]),
    Case("Conv1d-reflect", lambda t: t.nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), [R(2, 2, 5)]),
    Case("Conv1d-replicate", lambda t: t.nn.Conv1d(1, 2, 3, padding=1, padding_mode="replicate"), [R(2, 1, 5)]),
    Case("Conv1d-same-reflect", lambda t: t.nn.Conv1d(1, 1, 4, padding="same", padding_mode="reflect"), [R(1, 1, 6)]),
    Case("Conv1d-unbatched", lambda t: t.nn.Conv1d(2, 3, 2), [R(2, 5)]),
    Case("Conv2d", lambda t: t.nn.Conv2d(2, 3, (2, 3), padding=1), [R(2, 2, 4, 4)]),
    Case("Conv2d-stride-groups", lambda t: t.nn.Conv2d(2, 4, 2, stride=(2, 1), groups=2), [R(1, 2, 4, 3)]),
    Case(
        "Conv2d-same",
        lambda t: t.nn.Conv2d(1, 2, (2, 3), padding="same", dilation=(1, 2)),
        [R(1, 1, 4, 5)],
        marks=[EVEN_SAME],
    ),
    Case("Conv2d-circular", lambda t: t.nn.Conv2d(1, 2, 3, padding=(1, 2), padding_mode="circular"), [R(1, 1, 3, 4)]),
    Case("Conv2d-reflect", lambda t: t.nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect"), [R(2, 1, 3, 3)]),
    # ── pooling ──
    Case("MaxPool1d", lambda t: t.nn.MaxPool1d(2), [R(2, 3, 6)]),
    Case("MaxPool1d-options", lambda t: t.nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True), [R(2, 2, 6)]),
    Case("MaxPool1d-dilation", lambda t: t.nn.MaxPool1d(2, dilation=2), [R(1, 2, 7)]),
    Case("MaxPool1d-ties", lambda t: t.nn.MaxPool1d(2, stride=1), [V([[[1.0, 3.0, 3.0, 2.0, 2.0]]])]),
    Case("MaxPool1d-indices", lambda t: t.nn.MaxPool1d(2, return_indices=True), [R(2, 2, 6)]),
    Case("MaxPool2d", lambda t: t.nn.MaxPool2d(2), [R(2, 2, 4, 4)]),
    Case("MaxPool2d-options", lambda t: t.nn.MaxPool2d((2, 3), stride=(1, 2), padding=1), [R(1, 2, 4, 5)]),
    Case("MaxPool2d-indices", lambda t: t.nn.MaxPool2d(2, return_indices=True), [R(1, 1, 4, 4)]),
    Case("AvgPool1d", lambda t: t.nn.AvgPool1d(2), [R(2, 3, 6)]),
    Case(
        "AvgPool1d-options",
        lambda t: t.nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        [R(2, 2, 6)],
    ),
    Case("AvgPool2d", lambda t: t.nn.AvgPool2d(2), [R(2, 2, 4, 4)]),
    Case("AvgPool2d-options", lambda t: t.nn.AvgPool2d(3, stride=2, padding=1, divisor_override=4), [R(1, 2, 5, 5)]),
    Case("AdaptiveAvgPool1d", lambda t: t.nn.AdaptiveAvgPool1d(3), [R(2, 2, 7)]),
    Case("AdaptiveAvgPool2d", lambda t: t.nn.AdaptiveAvgPool2d((2, 3)), [R(1, 2, 5, 4)]),
    Case("AdaptiveAvgPool2d-None", lambda t: t.nn.AdaptiveAvgPool2d((None, 2)), [R(1, 2, 3, 5)]),
    # ── embedding ──
    Case("Embedding", lambda t: t.nn.Embedding(5, 3), [I(5, 2, 4)]),
    Case("Embedding-padding", lambda t: t.nn.Embedding(5, 3, padding_idx=-1), [V([[4, 0, 4], [1, 4, 2]])]),
    Case(
        "Embedding-pretrained",
        lambda t: t.nn.Embedding.from_pretrained(T(t, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), freeze=False),
        [V([2, 0, 2])],
    ),
    Case("Embedding-frozen", lambda t: t.nn.Embedding.from_pretrained(T(t, [[1.0, 2.0], [3.0, 4.0]])), [V([1, 1])]),
    # ── normalisation ──
    Case("LayerNorm", lambda t: t.nn.LayerNorm(4), [R(2, 3, 4)]),
    Case("LayerNorm-2d-noaffine", lambda t: t.nn.LayerNorm((2, 3), elementwise_affine=False), [R(2, 2, 3)]),
    Case("LayerNorm-nobias", lambda t: t.nn.LayerNorm([4], eps=1e-3, bias=False), [R(3, 4)]),
    Case("RMSNorm", lambda t: t.nn.RMSNorm(4), [R(2, 3, 4)]),
    Case("RMSNorm-eps-2d", lambda t: t.nn.RMSNorm((3, 4), eps=1e-3), [R(2, 3, 4)]),
    Case("RMSNorm-noaffine", lambda t: t.nn.RMSNorm(4, elementwise_affine=False), [R(3, 4)]),
    Case("GroupNorm", lambda t: t.nn.GroupNorm(2, 4), [R(2, 4, 2)]),
    Case("GroupNorm-noaffine-2d", lambda t: t.nn.GroupNorm(1, 2, eps=1e-3, affine=False), [R(1, 2, 2, 2)]),
    Case("GroupNorm-nobias", lambda t: t.nn.GroupNorm(2, 4, bias=False), [R(2, 4, 2)]),
    Case("BatchNorm1d-train", lambda t: t.nn.BatchNorm1d(3), [R(4, 3)]),
    Case("BatchNorm1d-train-3d", lambda t: t.nn.BatchNorm1d(2, momentum=0.3), [R(2, 2, 3)]),
    Case("BatchNorm1d-train-cumulative", lambda t: t.nn.BatchNorm1d(3, momentum=None), [R(4, 3)]),
    Case("BatchNorm1d-train-untracked", lambda t: t.nn.BatchNorm1d(3, track_running_stats=False), [R(4, 3)]),
    Case("BatchNorm1d-eval", lambda t: t.nn.BatchNorm1d(3), [R(4, 3)], train=False),
    Case("BatchNorm1d-eval-noaffine", lambda t: t.nn.BatchNorm1d(2, affine=False), [R(3, 2, 4)], train=False),
    Case(
        "BatchNorm1d-eval-untracked", lambda t: t.nn.BatchNorm1d(3, track_running_stats=False), [R(4, 3)], train=False
    ),
    Case("BatchNorm2d-train", lambda t: t.nn.BatchNorm2d(2), [R(2, 2, 2, 2)]),
    Case("BatchNorm1d-train-nobias", lambda t: t.nn.BatchNorm1d(3, bias=False), [R(4, 3)]),
    Case("BatchNorm2d-eval", lambda t: t.nn.BatchNorm2d(2, eps=1e-3), [R(2, 2, 3, 2)], train=False),
    # ── dropout: the identity in eval mode or with p=0, zeros with p=1 ──
    Case("Dropout-eval", lambda t: t.nn.Dropout(0.5), [R(2, 3)], train=False),
    Case("Dropout-p0", lambda t: t.nn.Dropout(0.0), [R(2, 3)]),
    Case("Dropout-p1", lambda t: t.nn.Dropout(1.0), [R(2, 3)]),
    Case("Dropout1d-eval", lambda t: t.nn.Dropout1d(0.3), [R(2, 3, 4)], train=False),
    Case("Dropout1d-p0", lambda t: t.nn.Dropout1d(0.0), [R(2, 3, 4)]),
    Case("Dropout1d-p1", lambda t: t.nn.Dropout1d(1.0), [R(2, 3, 4)]),
    Case("Dropout2d-eval", lambda t: t.nn.Dropout2d(0.3), [R(2, 3, 2, 2)], train=False),
    Case("Dropout2d-p1", lambda t: t.nn.Dropout2d(1.0), [R(2, 3, 2, 2)]),
    Case("AlphaDropout-eval", lambda t: t.nn.AlphaDropout(0.3), [R(2, 3)], train=False),
    Case("AlphaDropout-p0", lambda t: t.nn.AlphaDropout(0.0), [R(2, 3)]),
    Case("AlphaDropout-p1", lambda t: t.nn.AlphaDropout(1.0), [R(2, 3)]),
    # ── activations with a learnt parameter ──
    Case("PReLU-channels", lambda t: t.nn.PReLU(3, init=0.1), [R(2, 3, 4)]),
    Case("PReLU-channels-kinks", lambda t: t.nn.PReLU(4), [KINKS]),
    Case("PReLU-unbatched", lambda t: t.nn.PReLU(), [R(5)]),
    # ── attention ──
    # (sizes are tiny: the entrywise VJP of attention grows fast, 0.8 s at E=2, L=S=2, N=1)
    Case("MultiheadAttention", lambda t: t.nn.MultiheadAttention(2, 2), MHA_X),
    Case(
        "MultiheadAttention-self",
        lambda t: t.nn.MultiheadAttention(2, 1),
        [R(2, 1, 2)],
        call=lambda m, t, x: m(x, x, x),
    ),
    Case(
        "MultiheadAttention-batch-first",
        lambda t: t.nn.MultiheadAttention(2, 2, batch_first=True),
        [R(2, 1, 2), R(2, 2, 2), R(2, 2, 2)],
    ),
    Case(
        "MultiheadAttention-kdim-vdim",
        lambda t: t.nn.MultiheadAttention(2, 2, kdim=3, vdim=1),
        [R(2, 1, 2), R(2, 1, 3), R(2, 1, 1)],
    ),
    Case(
        "MultiheadAttention-bias-kv-zero-attn",
        lambda t: t.nn.MultiheadAttention(2, 2, add_bias_kv=True, add_zero_attn=True),
        [R(1, 1, 2), R(2, 1, 2), R(2, 1, 2)],
    ),
    Case("MultiheadAttention-nobias", lambda t: t.nn.MultiheadAttention(2, 1, bias=False), MHA_X),
    Case(
        "MultiheadAttention-masks-per-head",
        lambda t: t.nn.MultiheadAttention(2, 2),
        [R(1, 2, 2), R(2, 2, 2), R(2, 2, 2), M([[False, True]]), PAD],
        call=lambda m, t, q, k, v, mask, pad: m(q, k, v, pad, attn_mask=mask, average_attn_weights=False),
    ),
    Case(
        "MultiheadAttention-float-mask-no-weights",
        lambda t: t.nn.MultiheadAttention(2, 2, add_bias_kv=True),
        [R(1, 2, 2), R(2, 2, 2), R(2, 2, 2), Y(1, 2), Y(2, 2)],  # float masks are added to the scores
        call=lambda m, t, q, k, v, mask, pad: m(q, k, v, pad, False, mask),
    ),
    Case(
        "MultiheadAttention-causal",
        lambda t: t.nn.MultiheadAttention(2, 2),
        [*MHA_X, CAUSAL],
        call=lambda m, t, q, k, v, mask: m(q, k, v, attn_mask=mask, is_causal=True, need_weights=False),
    ),
    Case("MultiheadAttention-unbatched", lambda t: t.nn.MultiheadAttention(2, 1), [R(2, 2), R(2, 2), R(2, 2)]),
    # ── recurrent cells ──
    Case("RNNCell", lambda t: t.nn.RNNCell(3, 4), [R(2, 3), R(2, 4)]),
    Case("RNNCell-relu-nobias", lambda t: t.nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), [R(2, 3), R(2, 4)]),
    Case("RNNCell-zero-state", lambda t: t.nn.RNNCell(3, 2), [R(2, 3)]),
    Case("RNNCell-unbatched", lambda t: t.nn.RNNCell(3, 2), [R(3), R(2)]),
    Case("GRUCell", lambda t: t.nn.GRUCell(3, 2), [R(2, 3), R(2, 2)]),
    Case("GRUCell-zero-state-nobias", lambda t: t.nn.GRUCell(3, 2, bias=False), [R(2, 3)]),
    Case(
        "LSTMCell", lambda t: t.nn.LSTMCell(3, 2), [R(2, 3), R(2, 2), R(2, 2)], call=lambda m, t, x, h, c: m(x, (h, c))
    ),
    Case("LSTMCell-zero-state", lambda t: t.nn.LSTMCell(3, 2), [R(2, 3)]),
    Case(
        "LSTMCell-unbatched",
        lambda t: t.nn.LSTMCell(2, 3, bias=False),
        [R(2), R(3), R(3)],
        call=lambda m, t, x, h, c: m(x, (h, c)),
    ),
    # ── losses ──
    Case("MSELoss", lambda t: t.nn.MSELoss(), [R(3, 4), R(3, 4)]),
    Case("MSELoss-none", lambda t: t.nn.MSELoss(reduction="none"), [R(3, 4), Y(3, 4)]),
    Case("L1Loss-sum", lambda t: t.nn.L1Loss(reduction="sum"), [R(3, 4), Y(3, 4)]),
    Case("L1Loss-ties", lambda t: t.nn.L1Loss(), [V([1.0, 2.0, 3.0]), V([1.0, 0.0, 3.0])]),
    Case("SmoothL1Loss", lambda t: t.nn.SmoothL1Loss(beta=0.5), [R(3, 4), Y(3, 4)]),
    Case("HuberLoss", lambda t: t.nn.HuberLoss(reduction="sum", delta=0.7), [R(3, 4), R(3, 4)]),
    Case("KLDivLoss-batchmean", lambda t: t.nn.KLDivLoss(reduction="batchmean"), [R(3, 4), P(3, 4)]),
    Case("KLDivLoss-log-target", lambda t: t.nn.KLDivLoss(reduction="sum", log_target=True), [R(3, 4), R(3, 4)]),
    Case("BCELoss", lambda t: t.nn.BCELoss(), [P(3, 2), P(3, 2)]),
    Case("BCELoss-weight", lambda t: t.nn.BCELoss(weight=T(t, [0.5, 2.0]), reduction="none"), [P(3, 2), P(3, 2)]),
    Case("BCEWithLogitsLoss", lambda t: t.nn.BCEWithLogitsLoss(), [R(3, 2), P(3, 2)]),
    Case(
        "BCEWithLogitsLoss-weights",
        lambda t: t.nn.BCEWithLogitsLoss(weight=T(t, [0.5, 2.0]), pos_weight=T(t, [3.0, 0.25]), reduction="sum"),
        [R(3, 2), P(3, 2)],
    ),
    Case("NLLLoss", lambda t: t.nn.NLLLoss(), [R(4, 3), I(3, 4)]),
    Case(
        "NLLLoss-weight-ignore",
        lambda t: t.nn.NLLLoss(weight=T(t, [0.2, 1.0, 3.0]), ignore_index=1),
        [R(4, 3), V([0, 1, 2, 2])],
    ),
    Case("NLLLoss-2d", lambda t: t.nn.NLLLoss(reduction="none"), [R(2, 3, 4), I(3, 2, 4)]),
    Case("CrossEntropyLoss", lambda t: t.nn.CrossEntropyLoss(), [R(4, 3), I(3, 4)]),
    Case(
        "CrossEntropyLoss-weight-smoothing",
        lambda t: t.nn.CrossEntropyLoss(weight=T(t, [0.2, 1.0, 3.0]), label_smoothing=0.1, reduction="sum"),
        [R(4, 3), I(3, 4)],
    ),
    Case("CrossEntropyLoss-ignore", lambda t: t.nn.CrossEntropyLoss(ignore_index=0), [R(4, 3), V([0, 1, 2, 0])]),
    Case("CrossEntropyLoss-probs", lambda t: t.nn.CrossEntropyLoss(label_smoothing=0.2), [R(4, 3), P(4, 3)]),
    *_activation_cases(),
]

# Classes of __all__ that are not layers with a forward of their own: tested by the API tests below.
NOT_LAYERS = {"Module", "Parameter", "Buffer", "ModuleList", "ModuleDict"}


def test_every_module_class_has_a_case() -> None:
    covered = {case.id.split("-")[0] for case in CASES}
    assert set(sg_modules.__all__) - NOT_LAYERS - covered == set()
    assert covered <= set(sg_modules.__all__)


# ── running both ──────────────────────────────────────────────────────────
def _randomised(module: real.nn.Module, rng: np.random.Generator) -> None:
    """Random float parameters and buffers (variances positive), so that loading them is what the test sees."""
    with real.no_grad():
        for name, value in module.state_dict(keep_vars=True).items():
            if value.dtype.is_floating_point:
                numbers = rng.uniform(0.5, 1.5, value.shape) if "var" in name else rng.standard_normal(value.shape)
                value.copy_(real.tensor(numbers))


def _outputs(out: Any) -> list[Any]:
    return [o for o in (out if isinstance(out, tuple) else (out,))]


def _numbers(t: Any) -> np.ndarray:
    if t is None:
        return None
    return t.detach().numpy() if isinstance(t, real.Tensor) else np.asarray(t.tolist(), dtype=float)


def _close(ours: Any, theirs: Any, what: str) -> None:
    if theirs is None:
        assert ours is None, what
        return
    assert ours is not None, what
    assert tuple(ours.shape) == tuple(theirs.shape), what
    np.testing.assert_allclose(_numbers(ours), _numbers(theirs).astype(float), rtol=TOL, atol=TOL, err_msg=what)


def _run(case: Case, t: Any, module: Any, values: list[np.ndarray]) -> tuple[list, Any]:
    inputs = [make(t, arg, v) for arg, v in zip(case.args, values)]
    module.train(case.train)
    out = (case.call or (lambda m, _t, *xs: m(*xs)))(module, t, *inputs)
    return inputs, out


@pytest.mark.parametrize("case", [c.param for c in CASES])
def test_module_matches_torch(case: Case) -> None:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    real.manual_seed(0)
    theirs = case.build(real).double()
    _randomised(theirs, rng)
    st.manual_seed(0)
    ours = case.build(st)
    assert repr(ours.load_state_dict(theirs.state_dict())) == "<All keys matched successfully>"
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)

    values = [arg.numbers(rng) for arg in case.args]
    their_inputs, their_out = _run(case, real, theirs, values)
    our_inputs, our_out = _run(case, st, ours, values)
    their_outs, our_outs = _outputs(their_out), _outputs(our_out)
    assert len(our_outs) == len(their_outs)
    for i, (o, r) in enumerate(zip(our_outs, their_outs)):
        _close(o, r, f"output {i}")

    # buffers after the forward: BatchNorm's running statistics and count in training mode
    their_state, our_state = theirs.state_dict(), ours.state_dict()
    assert list(our_state) == list(their_state)
    for key in their_state:
        _close(our_state[key], their_state[key], f"state_dict[{key!r}] after forward")

    differentiable = [i for i, r in enumerate(their_outs) if r is not None and r.requires_grad]
    if not differentiable:
        return
    grads = [rng.standard_normal(tuple(their_outs[i].shape)) for i in differentiable]
    real.autograd.backward([their_outs[i] for i in differentiable], [real.tensor(g) for g in grads])
    if len(differentiable) == 1:
        our_outs[differentiable[0]].backward(st.tensor(grads[0].tolist(), dtype=st.float64))
    else:
        st.autograd.backward(
            [our_outs[i] for i in differentiable], [st.tensor(g.tolist(), dtype=st.float64) for g in grads]
        )
    for i, (o, r) in enumerate(zip(our_inputs, their_inputs)):
        if r.requires_grad:
            _close(o.grad, r.grad, f"input {i} grad")
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert p.requires_grad == q.requires_grad, name
        _close(p.grad, q.grad, f"{name}.grad")


# ── the Module API, the same code run with torch and with symgrad.torch ───
def _tree(t: Any) -> Any:
    """A model with nested containers, a buffer-holding layer and a parameter of its own."""
    model = t.nn.Sequential(
        t.nn.Linear(3, 4),
        t.nn.BatchNorm1d(4),
        t.nn.Sequential(t.nn.Tanh(), t.nn.Linear(4, 4, bias=False)),
    )
    model.heads = t.nn.ModuleDict({"b": t.nn.Linear(4, 1), "a": t.nn.Linear(4, 2)})
    model.blocks = t.nn.ModuleList([t.nn.LayerNorm(4), t.nn.PReLU()])
    model.scale = t.nn.Parameter(t.ones(2, dtype=t.float64))
    model.register_buffer("offset", t.zeros(3, dtype=t.float64))
    model.register_buffer("scratch", t.zeros(1, dtype=t.float64), persistent=False)
    return model


def _view(module: Any) -> dict:
    """What the Module API tells of a model, as names, shapes and flags."""
    return {
        "parameters": [(n, tuple(p.shape), p.requires_grad) for n, p in module.named_parameters()],
        "buffers": [(n, tuple(b.shape)) for n, b in module.named_buffers()],
        "state": [(k, tuple(v.shape)) for k, v in module.state_dict().items()],
        "modules": [(n, type(m).__name__) for n, m in module.named_modules()],
        "children": [(n, type(m).__name__) for n, m in module.named_children()],
        "training": [m.training for m in module.modules()],
        "count": len(list(module.parameters())),
    }


def _pair(build: Callable = _tree) -> tuple[Any, Any]:
    real.manual_seed(0)
    theirs = build(real).double()
    st.manual_seed(0)
    return theirs, build(st)


def test_module_api_names_match_torch() -> None:
    theirs, ours = _pair()
    assert _view(ours) == _view(theirs)
    assert ours.get_submodule("2.1") is ours[2][1]
    assert ours.get_parameter("heads.a.weight") is ours.heads["a"].weight
    assert ours.get_buffer("1.running_var") is ours[1].running_var
    assert ours.get_parameter("2.1.weight").name == "p2_1_weight"  # leaves named by their paths
    assert ours.get_parameter("heads.a.bias").name == "heads_a_bias"
    assert [p.name for p in ours.parameters()] == [
        "scale", "p0_weight", "p0_bias", "p1_weight", "p1_bias", "p2_1_weight", "heads_b_weight", "heads_b_bias",
        "heads_a_weight", "heads_a_bias", "blocks_0_weight", "blocks_0_bias", "blocks_1_weight",
    ]  # fmt: skip
    assert "scratch" not in ours.state_dict() and "scratch" in dict(ours.named_buffers())


def test_default_parameters_are_torchs_for_the_same_seed() -> None:
    """symgrad's layers draw their initial parameters as torch does, from the seed given to manual_seed."""
    theirs, ours = _pair(
        lambda t: t.nn.ModuleList(
            [
                t.nn.Linear(3, 2),
                t.nn.Conv1d(2, 2, 3),
                t.nn.Embedding(4, 2),
                t.nn.GRUCell(2, 3),
                t.nn.PReLU(2),
                t.nn.MultiheadAttention(4, 2, add_bias_kv=True),
                t.nn.BatchNorm1d(2),
                t.nn.Linear(2, 2),
            ]
        )
    )
    their_state, our_state = theirs.state_dict(), ours.state_dict()
    assert list(our_state) == list(their_state)
    for key, value in their_state.items():
        np.testing.assert_allclose(_numbers(our_state[key]), value.numpy(), rtol=1e-7, atol=1e-7, err_msg=key)


def test_state_dict_round_trip_and_values() -> None:
    theirs, ours = _pair()
    _randomised(theirs, np.random.default_rng(1))
    ours.load_state_dict(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        _close(ours.state_dict()[key], value, key)
    twin = _tree(st)
    assert repr(twin.load_state_dict(ours.state_dict())) == "<All keys matched successfully>"  # symgrad's own
    assert twin.heads["a"].weight.tolist() == ours.heads["a"].weight.tolist()
    assert twin.heads["a"].weight.name == "heads_a_weight" and twin.heads["a"].weight.requires_grad
    assert twin[1].num_batches_tracked.dtype == "int64"


def test_load_state_dict_reports_keys_as_torch() -> None:
    theirs, ours = _pair(lambda t: t.nn.Sequential(t.nn.Linear(2, 3), t.nn.Linear(3, 1)))
    state = dict(theirs.state_dict())
    state.pop("1.bias")
    state["2.weight"] = state["0.weight"]
    their_keys, our_keys = theirs.load_state_dict(state, strict=False), ours.load_state_dict(state, strict=False)
    assert (our_keys.missing_keys, our_keys.unexpected_keys) == (["1.bias"], ["2.weight"])
    assert (our_keys.missing_keys, our_keys.unexpected_keys) == (their_keys.missing_keys, their_keys.unexpected_keys)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.bias"'):
        ours.load_state_dict(state)
    bad = dict(theirs.state_dict(), **{"0.weight": real.zeros(2, 2)})
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight"):
        ours.load_state_dict(bad)
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.weight"):
        theirs.load_state_dict(bad)


def test_train_eval_and_requires_grad() -> None:
    theirs, ours = _pair()
    for run in (lambda m: m.eval(), lambda m: m[2].train(), lambda m: m.train(False), lambda m: m.train()):
        assert run(ours) is not None
        run(theirs)
        assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    with pytest.raises(ValueError, match="boolean"):
        ours.train("yes")
    assert ours.requires_grad_(False) is ours
    assert not any(p.requires_grad for p in ours.parameters())


def test_dtype_casts() -> None:
    """``to``, ``double``, ``float`` relabel float parameters (float32 rounds them, as torch's cast)."""
    _, ours = _pair(lambda t: t.nn.Linear(2, 2))
    weight = ours.weight.tolist()
    for cast in (lambda m: m.to(st.float64), lambda m: m.to("cpu", real.float64), lambda m: m.double()):
        assert cast(ours) is ours and ours.weight.dtype == "float64" and ours.weight.tolist() == weight
    ours.load_state_dict({k: v + 1e-12 for k, v in real.nn.Linear(2, 2).double().state_dict().items()})
    precise = ours.weight.tolist()
    assert ours.to(dtype=real.float32).weight.dtype == "float32"
    assert ours.weight.tolist() == real.tensor(precise, dtype=real.float64).float().double().tolist()
    with pytest.raises(sg.UnsupportedError, match="CPU"):
        ours.to("cuda")


def test_zero_grad() -> None:
    _, ours = _pair(lambda t: t.nn.Sequential(t.nn.Linear(2, 3), t.nn.Tanh(), t.nn.Linear(3, 1)))
    ours(st.tensor([[0.5, -1.0]])).sum().backward()
    grads = [p.grad.tolist() for p in ours.parameters()]
    assert all(np.abs(np.asarray(g)).sum() > 0 for g in grads)
    ours(st.tensor([[0.5, -1.0]])).sum().backward()  # .grad accumulates
    assert [p.grad.tolist() for p in ours.parameters()] == [(2 * np.asarray(g)).tolist() for g in grads]
    ours.zero_grad(set_to_none=False)
    assert [p.grad.tolist() for p in ours.parameters()] == [np.zeros_like(g).tolist() for g in grads]
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def _container_story(t: Any) -> list:
    """The same container operations, recording what each shows."""
    seen = []
    seq = t.nn.Sequential(t.nn.Linear(2, 2), t.nn.ReLU(), t.nn.Linear(2, 3))
    seen += [len(seq), type(seq[-1]).__name__, type(seq[1:]).__name__, len(seq[1:]), [type(m).__name__ for m in seq]]
    seq.append(t.nn.Tanh())
    seq.insert(1, t.nn.Linear(2, 2))
    del seq[2]
    seen += [list(seq.state_dict()), [type(m).__name__ for m in seq]]
    seq[0] = t.nn.Linear(2, 2, bias=False)
    seen += [list(seq.state_dict()), type(seq.pop(0)).__name__, list(seq.state_dict())]
    layers = t.nn.ModuleList([t.nn.Linear(1, 1)])
    layers.append(t.nn.Linear(1, 2))
    layers.extend([t.nn.Linear(2, 1), t.nn.Sigmoid()])
    layers += [t.nn.Linear(1, 1)]
    seen += [len(layers), list(layers.state_dict()), type(layers[-2]).__name__, len(layers[1:3])]
    layers.insert(0, t.nn.Identity())
    seen += [list(layers.state_dict()), type(layers.pop(1)).__name__, list(layers.state_dict())]
    heads = t.nn.ModuleDict({"z": t.nn.Linear(1, 1)})
    heads["a"] = t.nn.Linear(1, 2)
    heads.update([("m", t.nn.Tanh()), ("z", t.nn.Linear(1, 3))])
    seen += [list(heads.keys()), list(heads), "a" in heads, "q" in heads, len(heads), list(heads.state_dict())]
    seen += [[(k, type(v).__name__) for k, v in heads.items()], [type(v).__name__ for v in heads.values()]]
    seen += [tuple(heads["z"].weight.shape), type(heads.pop("a")).__name__, list(heads.state_dict())]
    model = t.nn.Module()
    model.layers, model.heads = layers, heads
    seen += [[n for n, _ in model.named_parameters()]]
    return seen


def test_containers_as_torch() -> None:
    assert _container_story(st) == _container_story(real)


def test_slices_share_modules_without_renaming_them() -> None:
    """A slice or a sum of containers is a view: the model's parameters keep their names and their tensors."""
    model = st.nn.Module()
    model.layers = st.nn.ModuleList([st.nn.Linear(2, 2), st.nn.Linear(2, 1)])
    model.body = st.nn.Sequential(st.nn.Linear(2, 2), st.nn.Tanh())
    before = [(p.name, p) for p in model.parameters()]
    views = [model.layers[1:], model.layers + model.layers, model.body[:1], model.body[-1:]]
    assert [type(v).__name__ for v in views] == ["ModuleList", "ModuleList", "Sequential", "Sequential"]
    assert [len(v) for v in views] == [1, 4, 1, 1] and views[0][0] is model.layers[1]
    assert list(views[3].state_dict()) == []  # Sequential slices keep their keys: "1" holds the Tanh
    assert [n for n, _ in views[0].named_parameters()] == ["0.weight", "0.bias"]
    after = [(p.name, p) for p in model.parameters()]
    assert [n for n, _ in after] == [n for n, _ in before] and all(p is q for (_, p), (_, q) in zip(after, before))
    assert before[0][0] == "layers_0_weight"


def test_parameter_and_buffer_registration() -> None:
    model = st.nn.Module()
    model.w = st.nn.Parameter(st.tensor([1.0, 2.0]))
    model.stat = st.nn.Buffer(st.tensor([3.0]))
    model.tmp = st.nn.Buffer(st.tensor([4.0]), persistent=False)
    model.plain = st.tensor([5.0])
    assert isinstance(model.w, st.nn.Parameter) and model.w.requires_grad and model.w.name == "w"
    assert not isinstance(model.stat, st.nn.Parameter) and isinstance(model.stat, st.nn.Buffer)
    assert list(model.state_dict()) == ["w", "stat"]
    assert [n for n, _ in model.named_buffers()] == ["stat", "tmp"]
    assert [n for n, _ in model.named_parameters()] == ["w"]
    with pytest.raises(TypeError, match=r"torch\.nn\.Parameter or None expected"):
        model.w = st.tensor([0.0, 0.0])
    model.w = None
    assert list(model.parameters()) == []
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        model.missing  # noqa: B018


@pytest.mark.parametrize(
    "build",
    [lambda t: t.nn.Dropout1d(0.2), lambda t: t.nn.Dropout2d(0.2), lambda t: t.nn.AlphaDropout(0.5)],
    ids=["Dropout1d", "Dropout2d", "AlphaDropout"],
)
def test_channel_and_alpha_dropout_in_training_are_refused(build: Callable) -> None:
    """Their masks are not drawn yet: a SymgradError (UnsupportedError) naming the way out, .eval()."""
    module = build(st)
    x = st.tensor(np.ones((2, 3, 3)).tolist(), dtype=st.float64)
    with pytest.raises(sg.UnsupportedError, match=r"eval\(\)") as caught:
        module(x)
    assert isinstance(caught.value, sg.SymgradError)
    assert module.eval()(x).tolist() == x.tolist()


@pytest.mark.parametrize(
    "build",
    [lambda t: t.nn.Dropout(0.5), lambda t: t.nn.Sequential(t.nn.Identity(), t.nn.Dropout(0.1))],
    ids=["Dropout", "Sequential"],
)
def test_dropout_in_training_draws_what_torch_draws(build: Callable) -> None:
    values = np.arange(1.0, 19.0).reshape(2, 3, 3)
    real.manual_seed(7)
    expected = build(real)(real.tensor(values))
    st.manual_seed(7)
    ours = build(st)(st.tensor(values.tolist(), dtype=st.float64))
    np.testing.assert_array_equal(np.asarray(ours.tolist()), expected.numpy())


def test_attention_dropout_in_training_is_refused() -> None:
    attention = st.nn.MultiheadAttention(2, 1, dropout=0.1)
    x = st.tensor([[[1.0, 2.0]]])
    with pytest.raises(sg.SymgradError, match=r"eval\(\)"):
        attention(x, x, x)
    assert attention.eval()(x, x, x)[0].shape == (1, 1, 2)


def test_batch_norm_running_statistics_over_steps() -> None:
    """Two training steps (cumulative average), then eval with the running statistics: as torch."""
    theirs, ours = _pair(lambda t: t.nn.BatchNorm1d(2, momentum=None))
    rng = np.random.default_rng(2)
    for _ in range(2):
        x = rng.standard_normal((3, 2))
        theirs(real.tensor(x))
        ours(st.tensor(x.tolist(), dtype=st.float64))
    for key, value in theirs.state_dict().items():
        _close(ours.state_dict()[key], value, key)
    assert ours.num_batches_tracked.item() == 2
    x = rng.standard_normal((3, 2))
    _close(ours.eval()(st.tensor(x.tolist(), dtype=st.float64)), theirs.eval()(real.tensor(x)), "eval output")


# ── a user-defined model: the same source text with both namespaces ──────
NET = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)
        self.act = torch.nn.PReLU(4)

    def forward(self, x, y):
        hidden = self.act(torch.tanh(self.fc1(x)))
        return torch.nn.functional.mse_loss(self.fc2(hidden), y)
"""


def _net(t: Any) -> Any:
    namespace = {"torch": t}
    exec(NET, namespace)  # the same text defines the model with torch and with symgrad.torch
    t.manual_seed(0)
    net = namespace["Net"]()
    return net.double() if t is real else net


def test_user_defined_module_is_a_drop_in() -> None:
    theirs, ours = _net(real), _net(st)
    assert _view(ours) == _view(theirs)
    _randomised(theirs, np.random.default_rng(3))
    ours.load_state_dict(theirs.state_dict())
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((3, 3)), rng.standard_normal((3, 2))
    their_loss = theirs(real.tensor(x), real.tensor(y))
    our_loss = ours(
        st.tensor(x.tolist(), dtype=st.float64, name="x"), st.tensor(y.tolist(), dtype=st.float64, name="y")
    )
    _close(our_loss, their_loss, "loss")
    their_loss.backward()
    our_loss.backward()
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        _close(p.grad, q.grad, f"{name}.grad")

    # the formulas: a law per parameter, and emitted code whose forward and vjp give torch's numbers
    laws = sg.law(our_loss, list(ours.parameters()))
    for law, (name, q) in zip(laws, theirs.named_parameters(), strict=True):
        _close(law, q.grad, f"law of {name}")
    emitted = sg.compile(our_loss, [ours.fc2.weight, ours.fc1.bias])
    leaves = {p.name: q.detach() for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters())}
    arguments = dict(leaves, x=real.tensor(x), y=real.tensor(y))
    ordered = [arguments[name] for name in inspect.signature(emitted.forward).parameters]
    _close(emitted.forward(*ordered), their_loss, "emitted forward")
    grad_fc2_weight, grad_fc1_bias = emitted.vjp(*ordered, real.tensor(1.0, dtype=real.float64))
    _close(grad_fc2_weight, theirs.fc2.weight.grad, "emitted vjp fc2.weight")
    _close(grad_fc1_bias, theirs.fc1.bias.grad, "emitted vjp fc1.bias")


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func's import
def test_codegen_of_a_model_whose_target_slices_its_input() -> None:
    model = st.nn.Linear(3, 2, dtype=st.float64)
    x = st.tensor([[1.0, 2.0, 3.0]], dtype=st.float64, name="x")
    loss = st.nn.functional.mse_loss(model(x), x[:, :2])
    emitted = sg.compile(loss, [model.weight], style="autograd_function")
    weight = real.tensor(model.weight.tolist(), dtype=real.float64, requires_grad=True)
    bias = real.tensor(model.bias.tolist(), dtype=real.float64)
    data = real.tensor(x.tolist(), dtype=real.float64)
    expected = real.nn.functional.mse_loss(real.nn.functional.linear(data, weight, bias), data[:, :2])
    (want,) = real.autograd.grad(expected, [weight])
    (got,) = emitted.vjp(data, weight.detach(), bias, real.tensor(1.0, dtype=real.float64))
    real.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    # and forward mode through the Function, against torch's own
    tangent = real.ones_like(weight)
    _, mine = real.func.jvp(lambda w: emitted.apply(data, w, bias), (weight.detach(),), (tangent,))
    _, theirs = real.func.jvp(
        lambda w: real.nn.functional.mse_loss(real.nn.functional.linear(data, w, bias), data[:, :2]),
        (weight.detach(),),
        (tangent,),
    )
    real.testing.assert_close(mine, theirs, rtol=1e-12, atol=1e-12)
