"""Emitted backwards run torch's own backward kernels where autograd does: one kernel for ``g * GELU'(x)``
(``gelu_backward``, both approximations), differentiable twice, with the law as a person writes it in the
docstring."""

from __future__ import annotations

import re

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
    backward = source[source.index("def _backward(") : source.index("def forward(")]
    assert "torch.ops.aten.gelu_backward(" in backward and "torch.erf" not in backward
    docstring = source[: source.index("def _forward(")]
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
    backward = source[source.index("def _backward(") : source.index("def forward(")]
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
    backward = module.__symgrad_source__.split("def _backward(")[1].split("def forward(")[0]
    assert ".reshape(-1, " in backward and ".sum(dim=0)" not in backward
    generator = torch.Generator().manual_seed(0)
    xs, ws = torch.randn(6, 5, 4, dtype=torch.float64, generator=generator), torch.randn(3, 4, dtype=torch.float64)
    ws.requires_grad_(True)
    theirs = torch.autograd.grad(torch.tanh(xs @ ws.T).sum(), ws)[0]
    torch.testing.assert_close(module.vjp(xs, ws.detach(), torch.tensor(1.0, dtype=torch.float64))[0], theirs)


def _code(module) -> str:
    """The emitted module without its docstring (which keeps the law a person writes)."""
    return module.__symgrad_source__.split('"""\n', 1)[1]


def _check_against_torch(module, args, reference) -> None:
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)
    wrt = [a for a in args if a.requires_grad]
    theirs = torch.autograd.grad(reference(*args), wrt)
    ours = torch.autograd.grad(module.apply(*args), wrt)
    for mine, real in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, real, rtol=1e-12, atol=1e-12)


def test_a_linear_layer_and_its_weight_gradient_run_as_nn_linear_does():
    """``x @ W.T + b`` runs F.linear (one addmm); the weight's gradient is ``G.T @ x``, made in its own layout."""
    x, w, b = sg.symbols("x", (5, 4)), sg.symbols("w", (3, 4)), sg.symbols("b", (3,))
    out = storch.tanh(storch.nn.functional.linear(x, w, b)).sum()
    module = sg.compile(out, [x, w, b], inputs=[x, w, b], style="autograd_function", name="Linear")
    code = _code(module)
    assert "torch.nn.functional.linear(x, w, b)" in code and ").T\n" not in code
    generator = torch.Generator().manual_seed(1)
    args = [torch.randn(t.shape, dtype=torch.float64, generator=generator, requires_grad=True) for t in (x, w, b)]
    _check_against_torch(module, args, lambda a, c, d: torch.tanh(torch.nn.functional.linear(a, c, d)).sum())


def test_a_convolution_adds_its_bias_in_its_own_kernel():
    x, w, b = sg.symbols("x", (2, 2, 5, 5)), sg.symbols("w", (3, 2, 3, 3)), sg.symbols("b", (3,))
    out = storch.tanh(storch.nn.functional.conv2d(x, w, b, padding=1)).sum()
    module = sg.compile(out, [w, b], inputs=[x, w, b], style="autograd_function", name="Conv")
    assert "torch.nn.functional.conv2d(x, w, b, padding=(1, 1))" in _code(module)
    generator = torch.Generator().manual_seed(2)
    args = [torch.randn(t.shape, dtype=torch.float64, generator=generator, requires_grad=t is not x) for t in (x, w, b)]
    _check_against_torch(module, args, lambda a, c, d: torch.tanh(torch.nn.functional.conv2d(a, c, d, padding=1)).sum())


def test_the_gradient_of_a_split_is_one_cat():
    """q, k, v cut out of one projection: their gradients are joined by torch.cat, as autograd's split backward
    does, never scattered into zeros and added."""
    x, w = sg.symbols("x", (4, 3)), sg.symbols("w", (3, 6))
    q, k, v = (x @ w).split(2, dim=1)
    out = (storch.tanh(q) * k.sigmoid() + v**2).sum()
    module = sg.compile(out, [x, w], inputs=[x, w], style="autograd_function", name="Split")
    code = _code(module)
    assert "torch.cat(" in code and "_index_backward(" not in code
    generator = torch.Generator().manual_seed(3)
    args = [torch.randn(t.shape, dtype=torch.float64, generator=generator, requires_grad=True) for t in (x, w)]

    def reference(a, c):
        q, k, v = (a @ c).split(2, dim=1)
        return (torch.tanh(q) * k.sigmoid() + v**2).sum()

    _check_against_torch(module, args, reference)


def test_a_deep_transformers_backward_runs_each_layers_kernels_once():
    """Each layer's q, k, v gradients are joined into one cat where their sum of scattered slices was, in every
    path of the backward: the replacement for one layer reads the next layer's gradient as rewritten too, so the
    backward runs one layer-norm kernel per layer norm (it had a second copy of every layer above the first)."""
    import public_models as pm

    torch.manual_seed(0)
    config = pm.GPTConfig(n_layer=3, n_head=2, n_embd=16, vocab_size=97, block_size=32)
    model = pm.GPT(config).double()
    idx, targets = torch.randint(0, 97, (2, 12)), torch.randint(0, 97, (2, 12))
    traced = sg.trace(
        lambda idx, targets: model(idx, targets)[1], idx, targets,
        dynamic_shapes={"idx": {0: "b"}, "targets": {0: "b"}}, modules={"model": model},
    )  # fmt: skip
    source = sg.codegen(traced, name="Loss")
    norms = sum(isinstance(m, torch.nn.LayerNorm) or type(m).__name__ == "LayerNorm" for m in model.modules())
    assert _runs(source, "_backward", "native_layer_norm_backward(") == norms == 2 * config.n_layer + 1
    assert _runs(source, "_backward", "_index_backward(") == 0
    assert _runs(source, "_backward", "torch.cat(") == config.n_layer


def _function(source: str, name: str) -> str:
    start = source.index(f"\ndef {name}(")
    ends = [source.find(end, start + 1) for end in ("\ndef ", "\nclass ")]
    return source[start : min(end for end in ends if end > 0)]


def _runs(source: str, name: str, call: str) -> int:
    """How many times a call runs in one call of the emitted function ``name``: its own, and those of the functions
    of repeated blocks it calls (``_backward_block_1``), once per call."""
    body = _function(source, name)
    inner = set(re.findall(r"\b(_\w+_block_\d+)\(", body)) - {name}
    return body.count(call) + sum(body.count(f"{block}(") * _runs(source, block, call) for block in inner)
