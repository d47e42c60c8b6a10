"""sg.trace: real torch code and real nn.Modules, run symbolically, give exactly torch's gradients."""

from __future__ import annotations

import copy
import importlib

import numpy as np
import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64


def _gradients_match(model: torch.nn.Module, *inputs: torch.Tensor, law: bool = False) -> sg.Tensor:
    """Trace ``model`` on ``inputs`` and compare the loss and every parameter's gradient with torch's: entry by
    entry, or (``law=True``, for models whose entries are too large to derive one by one) from the VJP rules."""
    traced = sg.trace(model, *inputs)
    model.zero_grad()
    loss = model(*inputs)
    loss.backward()
    np.testing.assert_allclose(traced.output.tolist(), loss.item(), rtol=1e-12, atol=1e-12)
    names = list(traced.parameters)
    leaves = [traced.parameters[n] for n in names]
    ours = sg.law(traced.output, leaves) if law else sg.vjp(traced.output, leaves)
    for name, grad in zip(names, ours, strict=True):
        theirs = model.get_parameter(name).grad
        np.testing.assert_allclose(np.asarray(grad.tolist()), theirs.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    return traced


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc2(torch.tanh(self.fc1(x)))
        return torch.nn.functional.mse_loss(out, x[:, :2].sin())


class Unrolled(torch.nn.Module):
    """A recurrent cell unrolled over the time steps by a Python loop."""

    def __init__(self, cell: torch.nn.Module) -> None:
        super().__init__()
        self.cell = cell

    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        state = None
        for step in range(xs.shape[0]):
            state = self.cell(xs[step], state)
        hidden = state[0] if isinstance(state, tuple) else state
        return hidden.pow(2).sum()


class Attention(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(d, d, bias=False) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / x.shape[-1] ** 0.5
        return (torch.softmax(scores, dim=-1) @ self.v(x)).tanh().sum()


class SmallCnn(torch.nn.Module):
    """conv, batch norm (in training: the batch's statistics), max pooling and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, kernel_size=2, padding=1)
        self.norm = torch.nn.BatchNorm2d(3)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Linear(3 * 2 * 2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.pool(torch.relu(self.norm(self.conv(x))))
        return torch.nn.functional.cross_entropy(self.head(features.flatten(1)), torch.tensor([1, 0]))


class EmbeddingModel(torch.nn.Module):
    """Token embeddings, averaged, layer-normed and classified."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(7, 4, padding_idx=0)
        self.norm = torch.nn.LayerNorm(4)
        self.head = torch.nn.Linear(4, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pooled = self.norm(self.embed(tokens).mean(dim=1))
        return torch.nn.functional.log_softmax(self.head(pooled), dim=-1)[:, 0].sum()


def test_a_small_cnn_with_batch_norm_in_training_gives_torchs_gradients():
    torch.manual_seed(4)
    model = SmallCnn().double().train()
    _gradients_match(model, torch.randn(2, 2, 3, 3, dtype=F64), law=True)


def test_an_embedding_model_gives_torchs_gradients():
    torch.manual_seed(5)
    tokens = torch.tensor([[1, 3, 0], [6, 6, 2]])  # a padding index and a repeated token
    _gradients_match(EmbeddingModel().double(), tokens, law=True)


def test_an_mlp_gives_torchs_gradients():
    torch.manual_seed(0)
    _gradients_match(Mlp().double(), torch.randn(5, 3, dtype=F64))


@pytest.mark.parametrize("cell", [torch.nn.RNNCell, torch.nn.GRUCell, torch.nn.LSTMCell])
def test_a_recurrent_cell_unrolled_by_a_loop_gives_torchs_gradients(cell):
    torch.manual_seed(1)
    # GRU and LSTM entries nest three steps of gates: entry by entry they take minutes, so from the VJP rules
    _gradients_match(Unrolled(cell(3, 2)).double(), torch.randn(3, 2, 3, dtype=F64), law=cell is not torch.nn.RNNCell)


def test_attention_gives_torchs_gradients():
    torch.manual_seed(2)
    _gradients_match(Attention(3).double(), torch.randn(4, 3, dtype=F64))


def test_parameters_are_named_as_the_module_names_them():
    torch.manual_seed(0)
    traced = sg.trace(Mlp(), torch.randn(2, 3))
    assert list(traced.parameters) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(leaf.requires_grad for leaf in traced.parameters.values())
    assert [leaf.name for leaf in traced.inputs] == ["x"]


def test_an_unsupported_op_names_itself_and_the_line_that_called_it():
    def uses_fft(x):
        return torch.fft.fft(x).real.sum()

    with pytest.raises(sg.UnsupportedError, match=r"fft.*test_trace\.py, line \d+"):
        sg.trace(uses_fft, torch.randn(3))


def test_dynamic_shapes_give_a_law_for_every_batch_size():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    traced = sg.trace(lambda x: model(x).sum(), torch.randn(4, 3), dynamic_shapes={"x": {0: "m"}})
    assert str(traced.inputs[0].shape[0]) == "m"


def test_the_emitted_backward_trains_exactly_like_the_original():
    torch.manual_seed(3)
    original = Mlp().double()
    x = torch.randn(6, 3, dtype=F64)
    module = sg.compile(sg.trace(original, x, dynamic_shapes={"x": {0: "m"}}), name="Net")
    twin = copy.deepcopy(original)
    drop_in = module.NetModule(twin)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (original, twin)]
    for step in range(3):
        batch = torch.randn(6 + step, 3, dtype=F64)  # the batch size changes: the law holds for every m
        for model, optimizer in zip((original, drop_in), optimizers, strict=True):
            optimizer.zero_grad()
            model(batch).backward()
            optimizer.step()
        for (name, a), b in zip(original.named_parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)


def test_equality_operators_are_comparisons_of_the_traced_tensor():
    """``x == 0`` and ``x != 2`` follow x (not the example's values): the emitted module, run at other values and
    sizes, gives torch's numbers and gradients."""
    import torch

    def fn(x):
        return torch.where(x == 0, 1.0, x * x).sum() + (x != 2).sum()

    x = torch.tensor([0.0, 2.0, -1.0], dtype=torch.float64)
    traced = sg.trace(fn, x, dynamic_shapes={"x": {0: "n"}})
    emitted = sg.compile(traced, wrt=traced.inputs, name="Masked")
    other = torch.tensor([0.0, 3.0, 2.0, 0.5], dtype=torch.float64, requires_grad=True)
    value, (grad,) = emitted.forward_and_vjp(other.detach(), torch.tensor(1.0, dtype=torch.float64))
    (expected,) = torch.autograd.grad(fn(other), other)
    assert value.item() == fn(other).item() and grad.tolist() == expected.tolist()


def test_a_traced_parameter_keeps_the_values_it_had_and_its_float64_copy_is_made_only_when_read():
    """A leaf stands for its tensor as the trace found it, even after the model trains on (through .data too);
    the law and the emitted module never read its numbers, so no float64 copy of a model is made for them."""
    leaf_values = importlib.import_module("symgrad.torch.leaf_values")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    traced = sg.trace(lambda x: model(x).square().mean(), x, dynamic_shapes={"x": {0: "b"}}, modules={"m": model})
    weight = model[0].weight
    before = weight.detach().clone()
    sg.law(traced.output, list(traced.parameters.values()))
    sg.codegen(traced, name="Net")
    assert leaf_values.snapshot_of(weight)._float64 is None
    weight.data.mul_(2)  # no version counter sees this
    with torch.no_grad():
        model[2].bias.add_(1)
    leaf = traced.parameters["m.0.weight"]
    np.testing.assert_array_equal(np.array(leaf.tolist()), before.numpy())
    assert leaf_values.snapshot_of(weight).float64().tolist() == weight.tolist()  # a new snapshot: the new values
    assert traced.parameters["m.2.bias"].tolist() == (model[2].bias - 1).tolist()
