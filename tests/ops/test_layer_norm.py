"""Layer normalization with its weight and bias as one op of the table: laws read ``LN``, proofs hold one order
up, emitted code saves the mean and 1/std its forward kernel returns and runs one ``native_layer_norm_backward``
for the input, weight and bias, and Hessians reach the weight too."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F64 = torch.float64


def _symbols(lead: tuple):
    x = sg.symbols("x", (*lead, 3), requires_grad=True)
    w, b = sg.symbols("w", (3,), requires_grad=True), sg.symbols("c", (3,), requires_grad=True)
    return x, w, b


def test_the_law_reads_ln_and_is_proved_one_order_up():
    (m,) = sg.dims("m")
    x, w, b = _symbols((m,))
    out = storch.nn.functional.layer_norm(x, (3,), w, b)
    loss = (out.tanh() * sg.symbols("u", out.shape)).sum()
    laws = sg.law(loss, [x, w, b])
    text = sg.listing(list(zip(["x", "w", "c"], laws))).text()
    assert "native_layer_norm_backward" in text and "rsqrt" not in text
    assert sg.prove(loss, [x, w, b]).held
    x, w, b = _symbols((2,))
    laws = sg.law((storch.nn.functional.layer_norm(x, (3,), w, b).tanh()).sum(), [x, w, b])
    second = sum((g * sg.symbols(f"v{i}", g.shape)).sum() for i, g in enumerate(laws))
    assert sg.prove(second, [x, w, b]).held


def test_the_emitted_backward_reads_the_saved_statistics_and_differentiates_twice():
    x, w, b = _symbols((2, 2))
    out = storch.nn.functional.layer_norm(x, (3,), w, b).tanh()
    module = sg.compile(out, [x, w, b], inputs=[x, w, b], style="autograd_function", name="Ln")
    source = module.__symgrad_source__.split('"""\n', 1)[1]
    assert "[True, True, True]" in source  # one backward kernel for the input, weight and bias
    assert "native_layer_norm(" in source and "None, None, 1e-05)[1:]" not in source  # no recomputed statistics
    generator = torch.Generator().manual_seed(0)
    args = [torch.randn(t.shape, dtype=F64, generator=generator, requires_grad=True) for t in (x, w, b)]
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)


@pytest.mark.parametrize("wrt", ["x", "w"])
def test_the_emitted_hessian_through_layer_norm_is_torchs(wrt):
    """Hessian laws batch the layer-norm ops; a stack of weights is applied after the normalization."""
    x, w, b = _symbols((2,))
    out = (storch.nn.functional.layer_norm(x, (3,), w, b) ** 3).sum()
    module = sg.compile(out, [x if wrt == "x" else w], inputs=[x, w, b], style="hessian", name="Ln")
    generator = torch.Generator().manual_seed(1)
    X, W, B = (torch.randn(t.shape, dtype=F64, generator=generator) for t in (x, w, b))
    ours = module.hessian(X, W, B)
    ours = ours[0] if isinstance(ours, tuple) else ours

    def loss(a, v):
        return (torch.nn.functional.layer_norm(a, (3,), v, B) ** 3).sum()

    if wrt == "x":
        theirs = torch.autograd.functional.hessian(lambda a: loss(a, W), X)
    else:
        theirs = torch.autograd.functional.hessian(lambda v: loss(X, v), W)
    torch.testing.assert_close(ours.reshape(theirs.shape), theirs, rtol=1e-9, atol=1e-10)
