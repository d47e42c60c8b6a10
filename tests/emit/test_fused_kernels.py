"""Emitted backwards run torch's own backward kernels where autograd does: one kernel for ``g * GELU'(x)``
(``gelu_backward``, both approximations), differentiable twice, with the law as a person writes it in the
docstring."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_runs_torchs_kernel_and_differentiates_twice(approximate):
    x, w1, w2 = sg.symbols("x", (5, 4)), sg.symbols("w1", (4, 6)), sg.symbols("w2", (6, 3))
    out = (storch.nn.functional.gelu(x @ w1, approximate=approximate) @ w2).square().mean()
    module = sg.compile(out, [w1, w2], inputs=[x, w1, w2], style="autograd_function", name="Mlp")
    source = module.__symgrad_source__
    backward = source[source.index("def vjp(") : source.index("def forward_and_vjp(")]
    assert "torch.ops.aten.gelu_backward(" in backward and "torch.erf" not in backward
    docstring = source[: source.index("def vjp(")]
    assert ("torch.erf(" if approximate == "none" else "torch.tanh(") in docstring  # the law as a formula
    generator = torch.Generator().manual_seed(0)
    args = [
        torch.randn(t.shape, dtype=torch.float64, generator=generator, requires_grad=t is not x) for t in (x, w1, w2)
    ]
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)
    loss = (torch.nn.functional.gelu(args[0] @ args[1], approximate=approximate) @ args[2]).square().mean()
    theirs = torch.autograd.grad(loss, args[1:])
    ours = torch.autograd.grad(module.apply(*args), args[1:])
    for mine, real in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, real, rtol=1e-12, atol=1e-12)


def test_layer_norm_runs_torchs_kernels_forward_and_backward_and_differentiates_twice():
    """LayerNorm is one op of the table: the law reads layer_norm and its backward, the emitted code runs
    native_layer_norm's kernels (not thirteen products and sums), and gradgradcheck holds through them."""
    (b,) = sg.dims("b")
    x, w, bias = sg.symbols("x", (b, 3, 4)), sg.symbols("w", (4,)), sg.symbols("bias", (4,))
    out = storch.nn.functional.gelu(storch.nn.functional.layer_norm(x, (4,), w, bias)).square().mean()
    text = str(sg.law(out, [x, w]))
    assert "torch.nn.functional.layer_norm(x, (4,)" in text and "native_layer_norm_backward(" in text
    module = sg.compile(out, [x, w, bias], inputs=[x, w, bias], style="autograd_function", name="Norm")
    source = module.__symgrad_source__
    backward = source[source.index("def vjp(") : source.index("def forward_and_vjp(")]
    assert "torch.ops.aten.native_layer_norm_backward(" in backward and "rsqrt" not in backward
    generator = torch.Generator().manual_seed(0)
    args = [
        torch.randn(s, dtype=torch.float64, generator=generator, requires_grad=True) for s in ((2, 3, 4), (4,), (4,))
    ]
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)
    loss = torch.nn.functional.gelu(torch.nn.functional.layer_norm(args[0], (4,), args[1], args[2])).square().mean()
    for mine, real in zip(torch.autograd.grad(module.apply(*args), args), torch.autograd.grad(loss, args), strict=True):
        torch.testing.assert_close(mine, real, rtol=1e-12, atol=1e-12)


def test_a_weight_gradient_over_a_batch_of_sequences_is_one_matrix_product():
    """``(g.mT @ x).sum(dim=0)`` (a linear layer's weight gradient when its input is (batch, sequence, width)) is
    emitted as one GEMM of the batch laid side by side, not a batched product and a sum; the numbers are
    autograd's."""
    (b,) = sg.dims("b")
    x, w = sg.symbols("x", (b, 5, 4)), sg.symbols("w", (3, 4))
    out = storch.tanh(x @ w.T).sum()
    module = sg.compile(out, [w], inputs=[x, w], style="autograd_function", name="Linear")
    backward = module.__symgrad_source__.split("def vjp(")[1].split("def forward_and_vjp(")[0]
    assert ".reshape(-1, " in backward and ".sum(dim=0)" not in backward
    generator = torch.Generator().manual_seed(0)
    xs, ws = torch.randn(6, 5, 4, dtype=torch.float64, generator=generator), torch.randn(3, 4, dtype=torch.float64)
    ws.requires_grad_(True)
    theirs = torch.autograd.grad(torch.tanh(xs @ ws.T).sum(), ws)[0]
    torch.testing.assert_close(module.vjp(xs, ws.detach(), torch.tensor(1.0, dtype=torch.float64))[0], theirs)
