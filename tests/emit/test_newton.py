"""``style="newton"``: ``newton_step`` solves with the Hessian once, for the convex classics in both spellings of
a weight (a vector and a column) and for a matrix of weights, against torch.func's Hessian and
``torch.linalg.solve`` in float64."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as st

torch = pytest.importorskip("torch")
F64 = torch.float64
SF = st.nn.functional


def _draw(shape: tuple, seed: int, unit: bool = False) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand if unit else torch.randn)(shape, dtype=F64, generator=generator)


def cases():
    n, d, c = sg.dims("n d c")
    X = sg.symbols("X", (n, d))
    out = {}
    for label, shape in (("vector", (d,)), ("column", (d, 1))):
        y = sg.symbols("y", (n,) + shape[1:])
        w = sg.symbols("w", shape, requires_grad=True)
        out[f"logistic {label}"] = (SF.binary_cross_entropy_with_logits(X @ w, y), w, [X, y, w], {"y": True}, _logistic)
        out[f"least squares {label}"] = (((X @ w - y) ** 2).mean(), w, [X, y, w], {}, _least_squares)
    labels = sg.symbols("t", (n,), dtype="int64")
    W = sg.symbols("W", (d, c), requires_grad=True)
    # softmax regression with an L2 term: without it the Hessian is singular (shifting every logit changes nothing)
    out["softmax regression"] = (SF.cross_entropy(X @ W, labels) + 0.1 * (W**2).sum(), W, [X, labels, W], {}, _softmax)
    return out


def _logistic(X, y, w):
    return torch.nn.functional.binary_cross_entropy_with_logits(X @ w, y)


def _least_squares(X, y, w):
    return ((X @ w - y) ** 2).mean()


def _softmax(X, t, W):
    return torch.nn.functional.cross_entropy(X @ W, t) + 0.1 * (W**2).sum()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func's import
@pytest.mark.parametrize("case", sorted(cases()))
def test_the_newton_step_is_torchs_hessian_solved(case):
    f, w, inputs, unit, torch_loss = cases()[case]
    module = sg.compile(f, [w], inputs=inputs, style="newton", name="Newton")
    sizes = {"n": 9, "d": 3, "c": 4}
    values = []
    for k, t in enumerate(inputs):
        shape = tuple(sizes.get(str(s), s) for s in t.shape)
        if t.dtype == "int64":
            values.append(torch.randint(0, sizes["c"], shape, generator=torch.Generator().manual_seed(k)))
        else:
            values.append(_draw(shape, k, unit.get(t.name, False)))
    *fixed, weights = values  # the weight is the last input

    def loss(weights):
        return torch_loss(*fixed, weights)

    k = weights.numel()
    expected = torch.linalg.solve(
        torch.func.hessian(loss)(weights).reshape(k, k), torch.func.grad(loss)(weights).reshape(k)
    ).reshape(weights.shape)
    step = module.newton_step(*values)
    assert step.shape == weights.shape and torch.allclose(step, expected, rtol=1e-9, atol=1e-12)
    assert "torch.eye" not in module.__symgrad_source__.split("def hessian")[1].split("def newton_step")[0] or (
        case == "softmax regression"  # its Hessian has a genuine identity, the L2 term's 0.2·I
    )


def test_newton_takes_one_input():
    n = sg.dims("n")[0]
    a, b = sg.symbols("a", (n,), requires_grad=True), sg.symbols("b", (n,), requires_grad=True)
    with pytest.raises(sg.SymgradError, match="--style newton takes one input"):
        sg.codegen((a * b).sum(), [a, b], inputs=[a, b], style="newton")
