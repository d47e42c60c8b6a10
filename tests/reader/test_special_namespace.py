"""``torch.special.*`` as users spell it: every function of symgrad.torch.special is read from text, with torch's
values and gradients; a misspelt one gets torch's nearest names; a function torch does not differentiate gives
no gradient, as torch's does (backward refuses, torch.func's VJP is zero)."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.torch as storch
from symgrad.core.errors import AutogradError, UnsupportedError
from symgrad.reader import parse

torch = pytest.importorskip("torch")

VALUES = [0.3, 0.8, 1.7]


@pytest.mark.parametrize(
    "text", ["torch.special.expit(x)", "torch.special.xlogy(x, x)", "torch.special.erfcx(x)", "torch.special.i1e(x)"]
)
def test_special_functions_read_from_text_give_torchs_values_and_gradients(text):
    ours = parse(f"{text}.sum()", values={"x": VALUES})
    x = ours.leaves()["x"]
    real = torch.tensor(VALUES, requires_grad=True)  # float32, as the text's values are
    theirs = eval(f"{text}.sum()", {"torch": torch, "x": real})  # our own test text, not user input
    (grad,) = torch.autograd.grad(theirs, real)
    np.testing.assert_allclose(float(ours.tolist()), theirs.item(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(sg.vjp(ours, [x])[0].tolist(), dtype=float), grad.numpy(), rtol=1e-5)


def test_a_misspelt_special_function_gets_torchs_nearest_names():
    with pytest.raises(
        UnsupportedError, match=r"unknown torch\.special\.expitt\(\).*did you mean torch\.special\.expit"
    ):
        parse("torch.special.expitt(x)", shapes={"x": (2,)})


def test_a_function_torch_does_not_differentiate_gives_no_gradient_as_torchs():
    x = storch.tensor(VALUES, requires_grad=True, name="x")
    out = storch.special.bessel_j0(x).sum()
    real = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    assert out.requires_grad == torch.special.bessel_j0(real).requires_grad == False  # noqa: E712
    with pytest.raises(AutogradError, match="does not require grad"):
        out.backward()
    _, vjp_fn = torch.func.vjp(lambda t: torch.special.bessel_j0(t).sum(), real.detach())
    np.testing.assert_array_equal(
        np.asarray(sg.vjp(out, [x])[0].tolist()), vjp_fn(torch.tensor(1.0, dtype=torch.float64))[0].numpy()
    )
