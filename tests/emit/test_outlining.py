"""Repeated layers are written once in the emitted module: a transformer's blocks and a loop of residual blocks
become functions called once per layer, forward, backward and forward mode, with torch's numbers."""

from __future__ import annotations

import copy

import public_models as pm
import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64


class ResidualStack(torch.nn.Module):
    """Five residual tanh blocks, each with its own layer norm, run by a Python loop."""

    def __init__(self, width: int = 6, depth: int = 5) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for block, norm in zip(self.blocks, self.norms):
            x = x + torch.tanh(block(norm(x))) * torch.sigmoid(x)
        return torch.nn.functional.cross_entropy(self.head(x), y)


def _emitted_and_checked(model: torch.nn.Module, inputs: tuple, dynamic: dict, calls: int) -> None:
    traced = sg.trace(model, *inputs, dynamic_shapes=dynamic)
    source = sg.codegen(traced, name="Stack")
    assert source.count("_forward_block_1(") == calls + 1  # its definition, and a call per layer
    assert "def _backward_block_1(" in source
    twin = copy.deepcopy(model)
    drop_in = sg.emit.load_source(source, "Stack").StackModule(twin)
    for k, batch in enumerate((3, 5, 2)):  # at other batch sizes than the trace's, the last in eval mode
        if k == 2:
            model.eval(), drop_in.eval()
            model.zero_grad(), twin.zero_grad()
        generator = torch.Generator().manual_seed(k)
        data = tuple(_resized(x, batch, generator) for x in inputs)
        theirs = model(*data)
        ours = drop_in(*data)
        theirs.backward()
        ours.backward()
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=0)
        for (name, a), b in zip(model.named_parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-10, atol=1e-13, msg=name)


def _resized(x: torch.Tensor, batch: int, generator: torch.Generator) -> torch.Tensor:
    if x.dtype.is_floating_point:
        return torch.randn(batch, *x.shape[1:], dtype=x.dtype, generator=generator)
    return torch.randint(0, int(x.max()) + 1, (batch, *x.shape[1:]), generator=generator)


def test_a_loop_of_residual_blocks_is_one_function_called_per_block():
    torch.manual_seed(0)
    model = ResidualStack().double()
    x, y = torch.randn(4, 6, dtype=F64), torch.tensor([0, 2, 1, 2])
    _emitted_and_checked(model, (x, y), {"x": {0: "b"}, "y": {0: "b"}}, calls=5)


def test_a_transformers_layers_are_one_function_called_per_layer():
    torch.manual_seed(0)
    config = pm.GPTConfig(n_layer=4, n_head=2, n_embd=8, vocab_size=19, block_size=8)
    model = pm.GPT(config).double()

    class Loss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return self.model(idx, targets)[1]

    generator = torch.Generator().manual_seed(1)
    idx, targets = (torch.randint(0, 19, (2, 8), generator=generator) for _ in range(2))
    _emitted_and_checked(Loss(), (idx, targets), {"idx": {0: "b"}, "targets": {0: "b"}}, calls=4)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward_ad's import
def test_forward_mode_through_the_outlined_blocks_gives_torchs_tangent():
    torch.manual_seed(0)
    model = ResidualStack(width=4, depth=6).double()
    x, y = torch.randn(3, 4, dtype=F64), torch.tensor([0, 2, 1])
    traced = sg.trace(model, x, y, dynamic_shapes={"x": {0: "b"}, "y": {0: "b"}})
    source = sg.codegen(traced, name="Stack")
    assert "def _jvp_block_1(" in source
    emitted = sg.emit.load_source(source, "Stack")
    parameters = dict(model.named_parameters())
    arguments = emitted.StackModule(model)._arguments(x, y)
    tangent_x = torch.randn_like(x)

    def ours(x):
        return emitted.apply(x, *arguments[1:])

    def theirs(x):
        return torch.func.functional_call(model, parameters, (x, y))

    _, got = torch.func.jvp(ours, (x,), (tangent_x,))
    _, expected = torch.func.jvp(theirs, (x,), (tangent_x,))
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-13)
