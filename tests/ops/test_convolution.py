"""Convolutions as three ops (the convolution, its input's gradient as conv_transpose, its kernel's gradient), each
the others' derivative: laws print as torch writes the backward, proofs hold one order up, and emitted code runs
torch's kernels with their own second derivatives."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F = storch.nn.functional

# (spatial dims, input shape after the batch, kernel shape, keyword arguments)
GEOMETRIES = [
    (1, (4, 7), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    (2, (2, 5, 6), (3, 2, 2, 3), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}),
    (3, (1, 3, 4, 3), (2, 1, 2, 2, 2), {"stride": (1, 2, 1), "padding": 1}),
]


def _conv(n: int, x, w, **options):
    return getattr(F, f"conv{n}d")(x, w, **options)


@pytest.mark.parametrize(("n", "shape", "kernel", "options"), GEOMETRIES, ids=["1d", "2d", "3d"])
def test_a_convolutions_law_is_its_transpose_and_its_weight_gradient_and_is_proved(n, shape, kernel, options):
    (b,) = sg.dims("b")
    x, w = sg.symbols("x", (b, *shape), requires_grad=True), sg.symbols("w", kernel, requires_grad=True)
    out = _conv(n, x, w, **options).tanh().sum()
    grad_x, grad_w = sg.law(out, [x, w])
    text = sg.listing([("grad_x", grad_x), ("grad_w", grad_w)]).text()
    assert f"conv_transpose{n}d(" in text and f"conv{n}d_weight(" in text
    assert "index_backward" not in text and "torch.cat" not in text  # never the unrolled windows
    assert sg.prove(out, [x, w]).held


@pytest.mark.parametrize(("n", "shape", "kernel", "options"), GEOMETRIES, ids=["1d", "2d", "3d"])
def test_the_gradients_laws_are_proved_one_order_up(n, shape, kernel, options):
    """The law of a law: the rules of conv_transpose and of the weight gradient, checked against their entries."""
    (b,) = sg.dims("b")
    x, w = sg.symbols("x", (b, *shape), requires_grad=True), sg.symbols("w", kernel, requires_grad=True)
    grad_x, grad_w = sg.law((_conv(n, x, w, **options) ** 2).sum(), [x, w])
    second = (grad_x * sg.symbols("u", grad_x.shape)).sum() + (grad_w * sg.symbols("v", grad_w.shape)).sum()
    assert sg.prove(second, [x, w]).held


@pytest.mark.parametrize(("n", "shape", "kernel", "options"), GEOMETRIES, ids=["1d", "2d", "3d"])
def test_the_emitted_backward_runs_torchs_kernels_and_differentiates_twice(n, shape, kernel, options):
    x, w = sg.symbols("x", (2, *shape)), sg.symbols("w", kernel)
    out = _conv(n, x, w, **options).tanh()
    module = sg.compile(out, [x, w], inputs=[x, w], style="autograd_function", name="Conv")
    source = module.__symgrad_source__
    assert f"torch.nn.functional.conv_transpose{n}d(" in source and f"torch.nn.grad.conv{n}d_weight(" in source
    generator = torch.Generator().manual_seed(n)
    args = [torch.randn(t.shape, dtype=torch.float64, generator=generator, requires_grad=True) for t in (x, w)]
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)
    reference = getattr(torch.nn.functional, f"conv{n}d")(*args, **options).tanh()
    torch.testing.assert_close(module.apply(*args), reference, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("wrt", ["x", "w"])
def test_the_emitted_hessian_through_a_convolution_is_torchs(wrt):
    """Hessian laws batch the convolution ops: a stack of inputs folds into the convolution's own batch, a stack
    of kernels is taken one at a time."""
    x, w = sg.symbols("x", (2, 4, 6)), sg.symbols("w", (4, 2, 2))
    out = F.conv1d(x, w, stride=2, groups=2).tanh().sum()
    module = sg.compile(out, [x if wrt == "x" else w], inputs=[x, w], style="hessian", name="Conv")
    generator = torch.Generator().manual_seed(0)
    X, W = (torch.randn(t.shape, dtype=torch.float64, generator=generator) for t in (x, w))
    ours = module.hessian(X, W)
    ours = ours[0] if isinstance(ours, tuple) else ours

    def loss(a, b):
        return torch.nn.functional.conv1d(a, b, stride=2, groups=2).tanh().sum()

    if wrt == "x":
        theirs = torch.autograd.functional.hessian(lambda a: loss(a, W), X)
    else:
        theirs = torch.autograd.functional.hessian(lambda b: loss(X, b), W)
    torch.testing.assert_close(ours.reshape(theirs.shape), theirs, rtol=1e-10, atol=1e-12)


def test_a_per_channel_bias_gradient_is_one_sum_over_the_other_dims():
    """A bias broadcast over the batch and the picture gets its gradient as torch's sum_to_size does: one sum (in
    low precision, two sums round twice), printed as a person writes it."""
    n, c, h = sg.dims("n c h")
    x, b = sg.symbols("x", (n, c, h, h)), sg.symbols("b", (c,))
    (law,) = sg.law(storch.tanh(x + b.reshape(c, 1, 1)).sum(), [b])
    assert law.name == "(1 - torch.tanh(x + b.reshape(c, 1, 1)) ** 2).sum(dim=(0, 2, 3))"
    assert sg.prove(storch.tanh(x + b.reshape(c, 1, 1)).sum(), [b], laws=[law]).held
