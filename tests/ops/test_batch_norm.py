"""Batch normalization in training mode as ops of the table: laws read ``BN``, proofs hold one order up, the
emitted forward runs one ``native_batch_norm`` that also updates the running statistics (once, whatever the
backward does), and the emitted backward runs ``native_batch_norm_backward`` for the input, weight and bias."""

from __future__ import annotations

import copy

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F64 = torch.float64


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_the_law_reads_bn_and_is_proved_one_order_up(affine):
    (b,) = sg.dims("b")
    x = sg.symbols("x", (b, 2, 3), requires_grad=True)
    w, bias = sg.symbols("w", (2,), requires_grad=True), sg.symbols("c", (2,), requires_grad=True)
    out = storch.nn.functional.batch_norm(x, None, None, w if affine else None, bias if affine else None, True)
    loss = (out.tanh() * sg.symbols("u", out.shape)).sum()
    wrt = [x, w, bias] if affine else [x]
    laws = sg.law(loss, wrt)
    text = sg.listing(list(zip(["x", "w", "c"], laws))).text()
    assert "native_batch_norm_backward" in text and "rsqrt" not in text
    assert sg.prove(loss, wrt).held


def test_the_gradients_laws_are_proved():
    """The law of a law, at small sizes: the rules of the backward ops (the plain backward's too, which the
    affine one's rules read) against their entries."""
    affine = True
    x = sg.symbols("x", (2, 2, 2), requires_grad=True)
    w, bias = sg.symbols("w", (2,), requires_grad=True), sg.symbols("c", (2,), requires_grad=True)
    out = storch.nn.functional.batch_norm(x, None, None, w if affine else None, bias if affine else None, True)
    wrt = [x, w, bias] if affine else [x]
    laws = sg.law((out.tanh() * sg.symbols("u", out.shape)).sum(), wrt)
    second = sum((g * sg.symbols(f"v{i}", g.shape)).sum() for i, g in enumerate(laws))
    assert sg.prove(second, wrt).held


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = torch.nn.Conv2d(2, 3, 2), torch.nn.BatchNorm2d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.relu(self.bn(self.conv(x))).square().mean()


def test_the_emitted_module_updates_running_statistics_once_with_one_kernel():
    torch.manual_seed(0)
    model = Net().double()
    traced = sg.trace(model, torch.randn(4, 2, 5, 5, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    module = sg.compile(traced, name="Net")
    source = module.__symgrad_source__.split('"""\n', 1)[1]
    assert "torch.batch_norm(" not in source  # the statistics come from the forward's own kernel
    assert "[True, True, True]" in source  # one backward kernel for the input, weight and bias
    ours, theirs = copy.deepcopy(model), copy.deepcopy(model)
    drop_in = module.NetModule(ours)
    for size in (3, 6):
        x = torch.randn(size, 2, 5, 5, dtype=F64)
        for net, params in ((drop_in, list(ours.parameters())), (theirs, list(theirs.parameters()))):
            loss = net(x)
            # create_graph=True recomputes the forward in the backward: that must not update the buffers again
            grads = torch.autograd.grad(loss, params, create_graph=True)
            sum(g.square().sum() for g in grads).backward()
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-10, atol=1e-12, msg=name)
    vjp_x = torch.randn(2, 2, 5, 5, dtype=F64)
    before = ours.bn.running_mean.clone()
    module.vjp(vjp_x, *[p.detach() for p in ours.parameters()], *ours.buffers(), torch.tensor(1.0, dtype=F64))
    assert torch.equal(ours.bn.running_mean, before)  # vjp(...) computes gradients only


def test_the_emitted_hessian_through_batch_norm_is_torchs():
    """Hessian laws batch the batch-norm ops: a stack of inputs folds into the channel dim."""
    x, w, c = sg.symbols("x", (3, 2, 2)), sg.symbols("w", (2,)), sg.symbols("c", (2,))
    out = (storch.nn.functional.batch_norm(x, None, None, w, c, True) ** 3).sum()
    module = sg.compile(out, [x], inputs=[x, w, c], style="hessian", name="Bn")
    generator = torch.Generator().manual_seed(0)
    X, W, C = (torch.randn(t.shape, dtype=F64, generator=generator) for t in (x, w, c))
    ours = module.hessian(X, W, C)
    ours = ours[0] if isinstance(ours, tuple) else ours
    theirs = torch.autograd.functional.hessian(
        lambda a: (torch.nn.functional.batch_norm(a, None, None, W, C, True) ** 3).sum(), X
    )
    torch.testing.assert_close(ours.reshape(theirs.shape), theirs, rtol=1e-9, atol=1e-10)
