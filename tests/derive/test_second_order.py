"""create_graph and torch.autograd.grad: gradients that are graphs, differentiated again, against real torch."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.torch as st

torch = pytest.importorskip("torch")
F64 = torch.float64


def _close(ours, theirs) -> None:
    np.testing.assert_allclose(np.asarray(ours, dtype=float), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_the_seed_one_order_up():
    """backward with a grad_tensor and create_graph, then the derivative of w.grad with respect to x."""
    v, u = [[1.0, 3.0]], [[2.0, -1.0]]
    w = st.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = st.tensor([[1.0, 1.0], [2.0, 2.0]], requires_grad=True, name="x")
    loss = st.mm(w, x)
    loss.backward(st.tensor(v), create_graph=True)
    (dx,) = st.autograd.grad(w.grad, x, st.tensor(u))

    wt = torch.tensor([[1.0, 2.0]], dtype=F64, requires_grad=True)
    xt = torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=F64, requires_grad=True)
    torch.mm(wt, xt).backward(torch.tensor(v, dtype=F64), create_graph=True)
    (dxt,) = torch.autograd.grad(wt.grad, xt, torch.tensor(u, dtype=F64))
    _close(w.grad.tolist(), wt.grad)
    _close(dx.tolist(), dxt)
    # the gradient is a formula in x, whose derivative with respect to x is v·u summed as SymPy says
    assert w.grad.requires_grad and not w.grad.is_leaf


def test_hessian_vector_product_of_a_tanh_layer():
    values = {"W": [[0.3, -0.5, 0.8], [0.1, 0.4, -0.2]], "x": [0.5, -1.0, 2.0]}
    vector = [[0.2, -0.1, 0.4], [1.0, 0.5, -0.3]]
    W = st.tensor(values["W"], requires_grad=True, name="W")
    x = st.tensor(values["x"], name="x")
    (g,) = st.autograd.grad(st.tanh(W @ x).pow(2).sum(), W, create_graph=True)
    (hv,) = st.autograd.grad((g * st.tensor(vector)).sum(), W)

    Wt = torch.tensor(values["W"], dtype=F64, requires_grad=True)
    xt = torch.tensor(values["x"], dtype=F64)
    (gt,) = torch.autograd.grad(torch.tanh(Wt @ xt).pow(2).sum(), Wt, create_graph=True)
    (hvt,) = torch.autograd.grad((gt * torch.tensor(vector, dtype=F64)).sum(), Wt)
    _close(g.tolist(), gt)
    _close(hv.tolist(), hvt)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
def test_grad_accumulates_as_a_graph_and_retains_the_graph():
    x = st.tensor([1.0, -2.0], requires_grad=True, name="x")
    y = (x**3).sum()
    y.backward(create_graph=True)
    y.backward(create_graph=True)  # retain_graph defaults to create_graph: a second pass is allowed
    xt = torch.tensor([1.0, -2.0], dtype=F64, requires_grad=True)
    yt = (xt**3).sum()
    yt.backward(create_graph=True)
    yt.backward(create_graph=True)
    _close(x.grad.tolist(), xt.grad)
    (second,) = st.autograd.grad(x.grad.sum(), x)
    (second_t,) = torch.autograd.grad(xt.grad.sum(), xt)
    _close(second.tolist(), second_t)


def test_grad_with_respect_to_an_intermediate():
    x = st.tensor([0.5, 1.5], requires_grad=True, name="x")
    h = x.exp()
    (g,) = st.autograd.grad((h * h).sum(), h)
    xt = torch.tensor([0.5, 1.5], dtype=F64, requires_grad=True)
    ht = xt.exp()
    (gt,) = torch.autograd.grad((ht * ht).sum(), ht)
    _close(g.tolist(), gt)


def _torch_message(call) -> str:
    with pytest.raises(RuntimeError) as caught:
        call()
    return str(caught.value)


def test_grad_errors_are_torchs():
    x = st.tensor([1.0], requires_grad=True, name="x")
    z = st.tensor([1.0], requires_grad=True, name="z")
    c = st.tensor([1.0], name="c")
    xt = torch.tensor([1.0], requires_grad=True)
    zt = torch.tensor([1.0], requires_grad=True)
    ct = torch.tensor([1.0])
    for ours, theirs in (
        (lambda: st.autograd.grad((x * 2).sum(), z), lambda: torch.autograd.grad((xt * 2).sum(), zt)),
        (lambda: st.autograd.grad((x * 2).sum(), c), lambda: torch.autograd.grad((xt * 2).sum(), ct)),
        (lambda: st.autograd.grad(x.expand(2) * 2, x), lambda: torch.autograd.grad(xt.expand(2) * 2, xt)),
    ):
        with pytest.raises(RuntimeError) as caught:
            ours()
        assert str(caught.value) == _torch_message(theirs)
    assert st.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None
    assert st.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)[1].tolist() == [0.0]


def test_a_second_order_law_is_the_matrix_of_the_quadratic_form():
    n = sg.dims("n")[0]
    x, A = sg.symbols("x", (n,), requires_grad=True), sg.symbols("A", (n, n))
    u = sg.symbols("u", (n,))
    (g,) = sg.law(x @ A @ x, [x])
    (hv,) = sg.law(g, [x], [u])
    assert sg.prove(g, [x], [u], laws=[hv]).held
