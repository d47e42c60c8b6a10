"""Max pooling as ops of the table (the pooling, its indices, its backward and that backward's adjoint): laws read
``maxpool``, proofs hold one order up, ties and nans go where torch's kernel sends them, and emitted code runs
``max_pool2d(..., return_indices=True)`` and ``max_pool2d_with_indices_backward`` with the indices the forward
returned."""

from __future__ import annotations

import math

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F = storch.nn.functional

# (spatial dims, input shape after the batch, keyword arguments)
GEOMETRIES = [
    (1, (2, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": True}),
    (2, (1, 4, 6), {"kernel_size": (2, 3), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}),
    (3, (1, 2, 3, 2), {"kernel_size": 2, "stride": (1, 2, 1), "padding": 1}),
]
IDS = ["1d", "2d", "3d"]


def _pool(module, n: int, x, **options):
    return getattr(module.nn.functional, f"max_pool{n}d")(x, **options)


@pytest.mark.parametrize(("n", "shape", "options"), GEOMETRIES, ids=IDS)
def test_values_indices_and_gradient_are_torchs_with_ties_and_nans(n, shape, options):
    """Integer entries make ties in most windows; a nan and an -inf sit in some."""
    generator = torch.Generator().manual_seed(n)
    values = torch.randint(-2, 3, (2, *shape), generator=generator).double()
    values.view(-1)[3], values.view(-1)[-2] = math.nan, -math.inf
    weights = torch.randn(_pool(torch, n, values, **options).shape, dtype=torch.float64, generator=generator)
    x = storch.tensor(values.tolist(), requires_grad=True, name="x")
    out, indices = _pool(storch, n, x, return_indices=True, **options)
    (out * storch.tensor(weights.tolist())).sum().backward()
    reference = values.clone().requires_grad_()
    theirs, their_indices = _pool(torch, n, reference, return_indices=True, **options)
    (theirs * weights).sum().backward()
    torch.testing.assert_close(torch.tensor(out.tolist(), dtype=torch.float64), theirs, equal_nan=True)
    assert indices.tolist() == their_indices.tolist()
    torch.testing.assert_close(torch.tensor(x.grad.tolist(), dtype=torch.float64), reference.grad, equal_nan=True)


@pytest.mark.parametrize(("n", "shape", "options"), GEOMETRIES, ids=IDS)
def test_the_law_reads_maxpool_and_is_proved_one_order_up(n, shape, options):
    (b,) = sg.dims("b")
    x = sg.symbols("x", (b, *shape), requires_grad=True)
    out = (_pool(storch, n, x, **options) ** 2).sum()
    (grad_x,) = sg.law(out, [x])
    text = sg.listing([("grad_x", grad_x)]).text()
    assert f"max_pool{max(n, 2)}d_with_indices_backward" in text and "torch.cat" not in text
    assert sg.prove(out, [x]).held
    second = (grad_x * sg.symbols("u", grad_x.shape)).sum()
    assert sg.prove(second, [x]).held


@pytest.mark.parametrize(("n", "shape", "options"), GEOMETRIES, ids=IDS)
def test_the_emitted_backward_reads_the_forwards_indices_and_differentiates_twice(n, shape, options):
    x = sg.symbols("x", (2, *shape))
    out = _pool(storch, n, x.tanh(), **options) ** 2
    module = sg.compile(out, [x], inputs=[x], style="autograd_function", name="Pool")
    source = module.__symgrad_source__.split('"""\n', 1)[1]  # the code, without the docstring's law
    assert "return_indices=True" in source and f"max_pool{max(n, 2)}d_with_indices_backward(" in source
    assert "return_indices=True)[1]" not in source  # one forward kernel gives both
    generator = torch.Generator().manual_seed(n)
    args = [torch.randn(x.shape, dtype=torch.float64, generator=generator, requires_grad=True)]
    assert torch.autograd.gradcheck(module.apply, args)
    assert torch.autograd.gradgradcheck(module.apply, args)
    reference = _pool(torch, n, args[0].tanh(), **options) ** 2
    torch.testing.assert_close(module.apply(*args), reference, rtol=1e-12, atol=1e-12)


def test_the_emitted_hessian_through_a_max_pool_is_torchs():
    """Hessian laws batch the pooling ops: a stack of cotangents merges into the pooling's leading dim."""
    x = sg.symbols("x", (2, 3, 6))
    out = (F.max_pool1d(x.tanh(), 2, stride=1) ** 3).sum()
    module = sg.compile(out, [x], inputs=[x], style="hessian", name="Pool")
    X = torch.randn(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    ours = module.hessian(X)
    ours = ours[0] if isinstance(ours, tuple) else ours
    theirs = torch.autograd.functional.hessian(
        lambda a: (torch.nn.functional.max_pool1d(a.tanh(), 2, stride=1) ** 3).sum(), X
    )
    torch.testing.assert_close(ours.reshape(theirs.shape), theirs, rtol=1e-10, atol=1e-12)
