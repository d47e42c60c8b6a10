"""A loss written as a function that closes over a model: sg.trace finds the model's parameters, names them by
where it found them (``model.fc1.weight``), and gives torch's gradients for them."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
F64 = torch.float64


def _numbers(t: sg.Tensor) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=float).reshape(t.shape)


def _gradients_agree(loss, *inputs, owners):
    """Trace ``loss``; every parameter of ``owners`` ({name: module}) is found under its name, and its gradient
    is torch's (float64, 1e-10)."""
    torch.manual_seed(0)
    traced = sg.trace(loss, *inputs)
    expected = {
        f"{name}.{path}" if path else name: p
        for name, owner in owners.items()
        for path, p in (owner.named_parameters() if isinstance(owner, nn.Module) else [("", owner)])
    }
    assert sorted(traced.parameters) == sorted(expected)
    torch.manual_seed(0)
    value = loss(*inputs)
    theirs = torch.autograd.grad(value, list(expected.values()))
    ours = sg.vjp(traced.output, [traced.parameters[name] for name in expected], 1.0)
    np.testing.assert_allclose(float(_numbers(traced.output)), value.item(), rtol=1e-12)
    for name, mine, real in zip(expected, ours, theirs, strict=True):
        np.testing.assert_allclose(_numbers(mine), real.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    return traced


def _classes(m: int, k: int) -> torch.Tensor:
    return torch.arange(m) % k


class _Attention(nn.Module):
    """One head of self-attention with a causal mask."""

    def __init__(self, d: int):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)
        scores = q @ k.transpose(-2, -1) / x.shape[-1] ** 0.5
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
        return self.out(scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v)


def _seven():
    """The seven small models, each as (its loss closure, its inputs, the modules it closes over)."""
    torch.manual_seed(0)
    cases = {}

    mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 3)).double()
    cases["mlp, gelu, cross-entropy"] = (
        lambda x, y: F.cross_entropy(mlp(x), y),
        (torch.randn(5, 4, dtype=F64), _classes(5, 3)),
        {"mlp": mlp},
    )

    norm, proj = nn.LayerNorm(4).double(), nn.Linear(4, 4).double()
    cases["layer norm with a residual"] = (
        lambda x: (x + proj(norm(x))).pow(2).mean(),
        (torch.randn(3, 4, dtype=F64),),
        {"norm": norm, "proj": proj},
    )

    cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).double()
    cases["tiny cnn"] = (
        lambda x, y: F.cross_entropy(cnn(x), y),
        (torch.randn(2, 1, 6, 6, dtype=F64), _classes(2, 3)),
        {"cnn": cnn},
    )

    bag, head = nn.EmbeddingBag(7, 3, mode="mean").double(), nn.Linear(3, 2).double()
    cases["embedding bag"] = (
        lambda tokens, y: F.cross_entropy(head(bag(tokens)), y),
        (torch.tensor([[1, 2, 4], [6, 0, 3]]), _classes(2, 2)),
        {"bag": bag, "head": head},
    )

    attention = _Attention(4).double()
    cases["self-attention"] = (
        lambda x: attention(x).square().sum(),
        (torch.randn(2, 3, 4, dtype=F64),),
        {"attention": attention},
    )

    cell, readout = nn.RNNCell(2, 3).double(), nn.Linear(3, 1).double()

    def unrolled(x, t):
        h = torch.zeros(x.shape[0], 3, dtype=F64)
        for step in range(x.shape[1]):
            h = cell(x[:, step], h)
        return F.mse_loss(readout(h).squeeze(1), t)

    cases["unrolled rnn cell"] = (unrolled, (torch.randn(4, 3, 2, dtype=F64), torch.randn(4, dtype=F64)), {
        "cell": cell, "readout": readout})  # fmt: skip

    batch_norm, classifier = nn.BatchNorm1d(4).double(), nn.Linear(4, 3).double()
    cases["batch norm with softmax"] = (
        lambda x, y: -(classifier(batch_norm(x)).softmax(1) * F.one_hot(y, 3)).sum(),
        (torch.randn(6, 4, dtype=F64), _classes(6, 3)),
        {"batch_norm": batch_norm, "classifier": classifier},
    )
    return cases


_SEVEN = _seven()


@pytest.mark.parametrize("case", list(_SEVEN))
def test_seven_small_models_written_as_loss_closures(case):
    loss, inputs, owners = _SEVEN[case]
    _gradients_agree(loss, *inputs, owners=owners)


def test_parameters_are_named_as_the_user_names_them():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh()).double()
    x = torch.randn(4, 3, dtype=F64)
    traced = sg.trace(lambda x: model(x).sum(), x, modules={"net": model})
    assert sorted(traced.parameters) == ["net.0.bias", "net.0.weight"]
    with pytest.raises(sg.SymgradError, match=r"is a str, not an nn\.Module"):
        sg.trace(lambda x: model(x).sum(), x, modules={"net": "model"})
    with pytest.raises(sg.SymgradError, match="Python identifiers"):
        sg.trace(lambda x: model(x).sum(), x, modules={"my net": model})


def test_a_parameter_a_method_and_a_partial_are_followed():
    torch.manual_seed(0)
    scale = nn.Parameter(torch.tensor(1.5, dtype=F64))
    encoder = nn.Linear(3, 2).double()

    class Task:  # a plain object holding a module, with a method as its loss
        def __init__(self):
            self.encoder = encoder

        def loss(self, x, weight=2.0):
            return weight * (scale * self.encoder(x)).tanh().sum()

    x = torch.randn(4, 3, dtype=F64)
    _gradients_agree(Task().loss, x, owners={"self.encoder": encoder, "scale": scale})
    _gradients_agree(functools.partial(Task().loss, weight=0.5), x, owners={"self.encoder": encoder, "scale": scale})


def test_a_parameter_symgrad_did_not_find_is_refused_never_frozen():
    """An attribute of a plain object and a global of the same name are two parameters; one kept where symgrad
    does not look (a list) is refused in one line rather than traced as a constant."""
    torch.manual_seed(0)
    scale = nn.Parameter(torch.tensor(2.0, dtype=F64))

    class Task:
        def __init__(self):
            self.scale = nn.Parameter(torch.tensor(3.0, dtype=F64))

        def loss(self, x):
            return (self.scale * scale * x).pow(2).sum()

    task = Task()
    _gradients_agree(task.loss, torch.randn(3, dtype=F64), owners={"self.scale": task.scale, "scale": scale})
    heads = [nn.Linear(3, 1).double()]
    with pytest.raises(sg.UnsupportedError, match="neither an input nor a parameter symgrad found"):
        sg.trace(lambda x: heads[0](x).sum(), torch.randn(2, 3, dtype=F64))


def test_a_module_method_reading_another_module_names_it_self():
    torch.manual_seed(0)
    criterion_weights = nn.Linear(2, 2).double()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def loss(self, x):
            return criterion_weights(self.fc(x)).sum()

    net = Net().double()
    owners = {"self": net, "criterion_weights": criterion_weights}
    _gradients_agree(net.loss, torch.randn(4, 3, dtype=F64), owners=owners)


def test_a_closure_compiles_to_a_drop_in_that_trains_as_the_model():
    loss, (x, y), owners = _SEVEN["mlp, gelu, cross-entropy"]
    traced = sg.trace(loss, x, y, dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}})
    assert sorted(traced.model.state_dict()) == sorted(f"mlp.{name}" for name in owners["mlp"].state_dict())
    emitted = sg.compile(traced, name="Loss")
    twin = emitted.LossModule(traced.model)
    torch.manual_seed(1)
    for m in (3, 7):
        xs, ys = torch.randn(m, 4, dtype=F64), _classes(m, 3)
        theirs = torch.autograd.grad(loss(xs, ys), list(owners["mlp"].parameters()))
        ours = torch.autograd.grad(twin(xs, ys), list(owners["mlp"].parameters()))
        for a, b in zip(ours, theirs, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
