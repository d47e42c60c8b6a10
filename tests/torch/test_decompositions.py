"""sg.trace through torch's own decompositions: a torch function symgrad has no rule for is followed through its
Python body, its ``torch._decomp`` or ``torch._refs`` decomposition, or ATen's C++ composition written out; the
decomposition must agree with torch's kernel, or the call is refused in one line naming the chain of calls."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.torch as storch
from symgrad.torch import decompositions

torch = pytest.importorskip("torch")
F = torch.nn.functional
F64 = torch.float64


def _numbers(t: sg.Tensor) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=float).reshape(t.shape)


def _agrees_with_torch(fn, *inputs, module=None):
    """Trace ``fn``; its output and the VJP of every input and parameter equal torch's (float64, 1e-10)."""
    torch.manual_seed(0)
    traced = sg.trace(fn, *inputs)
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    torch.manual_seed(0)
    out = fn(*leaves)
    v = torch.randn(out.shape, dtype=F64, generator=torch.Generator().manual_seed(1))
    wrt = [*(module.parameters() if module is not None else []), *(x for x in leaves if x.requires_grad)]
    theirs = torch.autograd.grad(out, wrt, v)
    ours = sg.vjp(
        traced.output,
        [*traced.parameters.values(), *(s for s, x in zip(traced.inputs, leaves) if x.requires_grad)],
        sg.tensor(v.numpy()),
    )
    np.testing.assert_allclose(_numbers(traced.output), out.detach().numpy(), rtol=1e-10, atol=1e-10)
    for mine, real in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(_numbers(mine), real.numpy(), rtol=1e-10, atol=1e-10)
    return traced


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("its Python body", lambda x: F.tanhshrink(x) + F.softsign(x)),
        ("torch._refs", lambda x: F.softshrink(x, 0.5) + F.hardshrink(x, 0.3)),
        ("torch._refs", lambda x: F.glu(x, dim=-1).repeat(1, 2)),
        ("torch._decomp", lambda x: F.prelu(x, torch.tensor([0.25], dtype=F64))),
        ("its Python body", lambda x: F.local_response_norm(x.unsqueeze(0), 2)),
        ("ATen's composition", lambda x: F.cosine_embedding_loss(x, x.flip(0), torch.tensor([1.0, -1.0, 1.0]))),
    ],
)
def test_functions_symgrad_has_no_rule_for_follow_torchs_decomposition(name, fn):
    x = torch.tensor([[0.5, -0.3, 2.0, -1.5], [0.3, 0.0, -0.5, 1.0], [-2.0, 0.25, 0.7, 3.0]], dtype=F64)
    _agrees_with_torch(fn, x)


def test_where_each_decomposition_comes_from():
    assert decompositions.source(F.tanhshrink) == "its Python body"
    assert decompositions.source(torch.hardshrink) == "torch._refs"
    assert decompositions.source(torch.rnn_tanh) == "torch._decomp"
    assert decompositions.source(torch.instance_norm) == "ATen's composition"
    assert decompositions.source(torch.conv_tbc) is None


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_the_full_recurrent_modules_two_layers_bidirectional_batch_first(kind):
    torch.manual_seed(0)
    module = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    x = torch.randn(2, 5, 3, dtype=F64)
    _agrees_with_torch(lambda x: module(x)[0], x, module=module)


def test_multihead_attention_with_a_mask_and_its_weights():
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = torch.randn(2, 3, 4, dtype=F64)
    mask = torch.triu(torch.ones(3, 3, dtype=torch.bool), 1)

    def fn(x):
        out, weights = module(x, x, x, attn_mask=mask, need_weights=True)
        return out + weights.sum(-1, keepdim=True)

    _agrees_with_torch(fn, x, module=module)


def test_instance_norm_updates_its_running_statistics_as_torch():
    torch.manual_seed(0)
    module = torch.nn.InstanceNorm1d(3, affine=True, track_running_stats=True).double()
    x = torch.randn(4, 3, 6, dtype=F64)
    traced = sg.trace(module, x)
    assert module.running_mean.abs().sum() == 0  # the trace leaves the model as it was
    module(x)
    updated = {u.buffer: u.value for u in traced.updates}
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(_numbers(updated[name]), getattr(module, name).numpy(), rtol=1e-12)


def test_torchs_builtin_batch_norm_takes_its_arguments_in_its_own_order():
    """torch.batch_norm(input, weight, bias, mean, var, ...) against F.batch_norm(input, mean, var, weight, ...)."""
    w, b = torch.tensor([2.0, 3.0], dtype=F64), torch.tensor([0.5, -1.0], dtype=F64)
    mean, var = torch.tensor([0.1, 0.2], dtype=F64), torch.tensor([1.5, 0.5], dtype=F64)
    x = torch.randn(4, 2, dtype=F64)
    _agrees_with_torch(lambda x: torch.batch_norm(x, w, b, mean, var, False, 0.1, 1e-5, False), x)
    _agrees_with_torch(lambda x: torch.softmax(x, 1, F64) + torch.log_softmax(x, 0, None), x)


def test_a_decomposition_that_disagrees_with_torchs_kernel_is_refused(monkeypatch):
    def wrong(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
        return x * 2

    monkeypatch.setitem(decompositions.COMPOSITES, "instance_norm", wrong)
    with pytest.raises(sg.UnsupportedError, match="disagrees with its kernel here"):
        sg.trace(lambda x: F.instance_norm(x), torch.randn(2, 3, 4, dtype=F64))


def test_a_function_without_rule_or_decomposition_is_refused_naming_the_chain():
    pool = torch.nn.FractionalMaxPool2d(2, output_size=2).double()
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.trace(pool, torch.randn(1, 2, 5, 5, dtype=F64))
    message = str(caught.value)
    assert "fractional_max_pool2d → fractional_max_pool2d_with_indices → fractional_max_pool2d" in message
    assert "test_decompositions.py" in message and "\n" not in message


def test_a_detached_entry_is_a_constant_to_the_formulas_too():
    """x * x.detach(): torch's gradient is x, and so is the formula's (not 2x)."""
    x = storch.tensor([1.0, -2.0], requires_grad=True, name="x")
    out = (x * x.detach()).sum()
    (formula,) = sg.law(out, [x])
    (numbers,) = sg.vjp(out, [x], 1.0)
    assert formula.tolist() == numbers.tolist() == [1.0, -2.0]


def test_copy_into_a_buffer_is_an_update_of_it():
    class Average(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3, dtype=F64))

        def forward(self, x):
            self.mean.copy_(0.9 * self.mean + 0.1 * x.detach().mean(0))
            return x - self.mean

    module = Average()
    x = torch.randn(4, 3, dtype=F64)
    traced = sg.trace(module, x)
    assert module.mean.abs().sum() == 0
    (update,) = traced.updates
    module(x)
    np.testing.assert_allclose(_numbers(update.value), module.mean.numpy(), rtol=1e-12)


_T = torch.tensor([1.0, -1.0, 1.0], dtype=F64)
_LABELS = torch.tensor([[0, 3, -1, 0], [1, -1, 0, 0], [2, 1, 0, -1]])
_OTHER = torch.tensor([[0.3, -0.7, 1.1, 0.2], [-1.2, 0.4, 0.9, -0.1], [0.5, 2.0, -0.6, 0.8]], dtype=F64)
SAMPLES = {
    "F.alpha_dropout": lambda x: F.alpha_dropout(x, 0.5, training=False),
    "F.cosine_embedding_loss": lambda x: F.cosine_embedding_loss(x, _OTHER, _T),
    "F.glu": lambda x: F.glu(x, -1),
    "F.hardshrink": lambda x: F.hardshrink(x, 0.3),
    "F.hinge_embedding_loss": lambda x: F.hinge_embedding_loss(x, torch.sign(_OTHER)),
    "F.instance_norm": lambda x: F.instance_norm(x.unsqueeze(0)),
    "F.local_response_norm": lambda x: F.local_response_norm(x.unsqueeze(0), 2),
    "F.lp_pool1d": lambda x: F.lp_pool1d(x.unsqueeze(0).abs() + 0.1, 2, 2),
    "F.lp_pool2d": lambda x: F.lp_pool2d(x.reshape(1, 1, 3, 4).abs() + 0.1, 2, 2),
    "F.margin_ranking_loss": lambda x: F.margin_ranking_loss(x[0], x[1], torch.sign(_OTHER[2])),
    "F.multi_margin_loss": lambda x: F.multi_margin_loss(x, torch.tensor([0, 3, 1])),
    "F.multilabel_margin_loss": lambda x: F.multilabel_margin_loss(x, _LABELS),
    "F.multilabel_soft_margin_loss": lambda x: F.multilabel_soft_margin_loss(x, (_OTHER > 0).double()),
    "F.pairwise_distance": lambda x: F.pairwise_distance(x, _OTHER),
    "F.poisson_nll_loss": lambda x: F.poisson_nll_loss(x, _OTHER.abs()),
    "F.prelu": lambda x: F.prelu(x, torch.tensor([0.25], dtype=F64)),
    "F.soft_margin_loss": lambda x: F.soft_margin_loss(x, torch.sign(_OTHER)),
    "F.softshrink": lambda x: F.softshrink(x, 0.5),
    "F.tanhshrink": lambda x: F.tanhshrink(x),
    "F.triplet_margin_loss": lambda x: F.triplet_margin_loss(x, _OTHER, _OTHER.flip(0)),
    "torch.deg2rad": lambda x: torch.deg2rad(x),
    "torch.frac": lambda x: torch.frac(x * 3),
    "torch.logaddexp2": lambda x: torch.logaddexp2(x, _OTHER),
    "torch.logit": lambda x: torch.logit(x.sigmoid()),
    "torch.nan_to_num": lambda x: torch.nan_to_num(x.log()),
    "torch.sinc": lambda x: torch.sinc(x),
    "torch.square": lambda x: torch.square(x),
}  # fmt: skip
# followed inside the modules that call them: nn.RNN, nn.GRU, nn.LSTM and nn.MultiheadAttention, tested above
IN_MODULES = {"torch.rnn_tanh", "torch.rnn_relu", "torch.gru", "torch.lstm", "F.multi_head_attention_forward"}


def test_every_function_the_catalogue_lists_as_decomposed_has_a_sample():
    assert set(decompositions.FOLLOWED) == set(SAMPLES) | IN_MODULES


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_functions_followed_through_decompositions_give_torchs_values_and_gradients(name):
    x = torch.tensor([[0.5, -0.3, 2.0, -1.5], [0.3, 0.1, -0.5, 1.0], [-2.0, 0.25, 0.7, 3.0]], dtype=F64)
    _agrees_with_torch(SAMPLES[name], x)


def test_a_decomposition_with_another_gradient_than_the_kernel_is_refused():
    """torch's reference of pdist agrees with its kernel in values, but takes the square root of the zero
    diagonal too, whose gradient is nan: followed, it would give nan where torch's kernel gives numbers."""
    with pytest.raises(sg.UnsupportedError, match="the gradient of argument 0 differs"):
        sg.trace(lambda x: F.pdist(x), torch.randn(3, 4, dtype=F64))


def test_a_decomposition_that_decides_on_a_larger_size_is_caught_by_the_probe(monkeypatch):
    """What torch's decompositions decide on sizes records no guard (their shape checks compare sizes with plain
    numbers): where one ran, the probe also traces at larger sizes, and a graph that changes there is refused."""
    plain = decompositions.COMPOSITES["instance_norm"]

    def deciding(x, *args):
        out = plain(x, *args)
        return out * 1.0 if x.shape[0] > 4 else out  # another graph from 5 samples on

    monkeypatch.setitem(decompositions.COMPOSITES, "instance_norm", deciding)
    x = torch.randn(3, 2, 5, dtype=F64)
    with pytest.raises(sg.UnsupportedError, match="makes other calls at b = 6"):
        sg.trace(lambda x: F.instance_norm(x).sum(), x, dynamic_shapes={"x": {0: "b"}})
