"""Printed laws are runnable torch: the text ``sg.law`` gives (``grad.name``), evaluated by torch at concrete
sizes, equals ``torch.autograd.backward`` on the same inputs, in float32 and in float64 (new tensors in a law
take the dtype of a tensor it reads: ``x.new_zeros(...)``, ``torch.where(c, 0, 1.0).to(x.dtype)``).

The cases are the spellings that once printed symgrad-only functions: the scatter of an indexing
(``select_scatter``/``slice_scatter``), relu's and maximum's selects, trace's identity.
"""

from __future__ import annotations

import math

import pytest
import torch

import symgrad as sg
import symgrad.torch as storch
from symgrad.core.printers import TorchPrinter

k, n, m = sg.dims("k n m")
SIZES = {"k": 4, "n": 5, "m": 3}

CASES = {
    "x[0]": lambda T, x: (x[0] ** 2).sum(),
    "x[:, 1:]": lambda T, x: (x[:, 1:] ** 2).sum(),
    "x[1:3, 0]": lambda T, x: (x[1:3, 0] ** 2).sum(),
    "x[2, :, 0:2]": lambda T, x: (x[2, :, 0:2] ** 2).sum(),
    "x[-1]": lambda T, x: x[-1].tanh().sum(),
    "relu": lambda T, x: T.relu(x).sum(),
    "maximum": lambda T, x: T.maximum(x, x[0:1] * 0.5).sum(),
    "max": lambda T, x: x.max(),
    "trace": lambda T, x: T.trace(x[0] @ x[1].T),
    "relu through a product": lambda T, x: (T.relu(x[0]) @ x[1].T).sum(),
    "maximum with a scalar": lambda T, x: T.maximum(x, T.zeros_like(x)).sum(),
    # constants such as sqrt(2) and pi print as math.sqrt(2) and math.pi (they printed as SymPy's sqrt(2))
    "gelu": lambda T, x: T.nn.functional.gelu(x).sum(),
    "gelu tanh": lambda T, x: T.nn.functional.gelu(x, approximate="tanh").sum(),
    "erf scaled": lambda T, x: T.erf(x / 2**0.5).sum(),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", CASES)
def test_the_printed_law_runs_in_torch_and_gives_its_gradient(name, dtype):
    build = CASES[name]
    x = sg.symbols("x", (k, n, m), requires_grad=True)
    (grad,) = sg.law(build(storch, x), [x])
    text = TorchPrinter().doprint(grad)  # what the docstrings, sg.law's display and the CLI print
    assert "index_backward" not in text and "heaviside" not in text, text
    torch.manual_seed(0)
    value = torch.randn(SIZES["k"], SIZES["n"], SIZES["m"], dtype=dtype, requires_grad=True)
    build(torch, value).backward()
    # the text symgrad printed (not user input), run as the user would run it
    got = eval(text, {"torch": torch, "math": math, "x": value.detach(), **SIZES})
    torch.testing.assert_close(got.expand_as(value), value.grad)


@pytest.mark.parametrize("name", ["relu", "max", "trace"])
def test_backward_at_symbolic_sizes_leaves_the_law_in_grad(name):
    """``loss.backward()`` at symbolic sizes raised SymbolicShapeError from deep inside (a scalar loss passed the
    shape check); it now leaves in ``x.grad`` the law sg.law gives, without a grad_fn as torch's ``.grad`` has
    none, accumulated as torch accumulates, and that law runs in torch and gives torch's gradient."""
    build = CASES[name]
    x = sg.symbols("x", (k, n, m), requires_grad=True)
    loss = build(storch, x)
    loss.backward(retain_graph=True)
    (law,) = sg.law(loss, [x])
    assert x.grad.name == law.name and not x.grad.requires_grad and x.grad.grad_fn is None
    loss.backward()
    torch.manual_seed(0)
    value = torch.randn(SIZES["k"], SIZES["n"], SIZES["m"], dtype=torch.float64, requires_grad=True)
    twice = build(torch, value)
    twice.backward(retain_graph=True)
    twice.backward()
    text = TorchPrinter().doprint(x.grad)
    got = eval(text, {"torch": torch, "math": math, "x": value.detach(), **SIZES})
    torch.testing.assert_close(got.expand_as(value), value.grad)


def test_a_mean_loss_prints_its_gradients_as_a_person_writes_them():
    """The bias of a mean is 1 (it printed ``torch.full((m, 1), 1/m).sum(dim=0)``), and the weight's is the mean of
    the features over the batch (it printed ``(A.T.sum(dim=1, keepdim=True) / m).T``); each still runs in torch and
    gives its gradient."""
    d, h = sg.dims("d h")
    X = sg.symbols("X", (m, d))
    W1, b1 = sg.symbols("W1", (h, d)), sg.symbols("b1", (h,))
    W2, b2 = sg.symbols("W2", (1, h), requires_grad=True), sg.symbols("b2", (1,), requires_grad=True)
    loss = (storch.tanh(X @ W1.T + b1) @ W2.T + b2).mean()
    grad_W2, grad_b2 = (TorchPrinter().doprint(g) for g in sg.law(loss, [W2, b2]))
    assert (grad_W2, grad_b2) == ("torch.tanh(X @ W1.T + b1).mean(dim=0, keepdim=True)", "1")
    torch.manual_seed(0)
    values = {"X": torch.randn(3, 4), "W1": torch.randn(5, 4), "b1": torch.randn(5)}
    w2 = torch.randn(1, 5, requires_grad=True)
    (torch.tanh(values["X"] @ values["W1"].T + values["b1"]) @ w2.T).mean().backward()
    torch.testing.assert_close(eval(grad_W2, {"torch": torch, **values}), w2.grad)
