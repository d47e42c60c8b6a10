"""torch.func and torch.autograd.functional mirrors against the real ones, in float64."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.torch as st

torch = pytest.importorskip("torch")
F64 = torch.float64
# torch.func's forward mode scripts a helper with torch.jit, which warns about its own deprecation
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
X = [0.5, -1.25, 2.0]
W = [[0.3, 0.2, -0.1], [0.5, -0.4, 0.7]]
V = [0.7, -0.3]
U = [0.1, 0.9, -0.6]


def _pair():
    """(symgrad namespace, x, W), (torch namespace, x, W)."""
    ours = (st, st.tensor(X, name="x"), st.tensor(W, name="W"))
    theirs = (torch, torch.tensor(X, dtype=F64), torch.tensor(W, dtype=F64))
    return ours, theirs


def _close(ours, theirs) -> None:
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _close(a, b)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(np.asarray(ours.tolist(), dtype=float), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


def _loss(t, x, w):
    return t.tanh(w @ x).pow(2).sum() + (x**3).sum()


def _layer(t, x, w):
    return t.sigmoid(w @ x)


@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd", "hessian"])
def test_func_transforms_of_one_argument(transform):
    (s, x, w), (t, xt, wt) = _pair()
    make = lambda ns, name: getattr(ns.func, name)  # noqa: E731
    if transform in ("grad", "hessian"):
        ours = make(s, transform)(lambda x: _loss(s, x, w))(x)
        theirs = make(t, transform)(lambda x: _loss(t, x, wt))(xt)
    else:
        ours = make(s, transform)(lambda x: _layer(s, x, w))(x)
        theirs = make(t, transform)(lambda x: _layer(t, x, wt))(xt)
    _close(ours, theirs)


def test_func_argnums_has_aux_vjp_and_jvp():
    (s, x, w), (t, xt, wt) = _pair()
    ours = s.func.grad(lambda x, w: (_loss(s, x, w), w.sum()), argnums=(0, 1), has_aux=True)(x, w)
    theirs = t.func.grad(lambda x, w: (_loss(t, x, w), w.sum()), argnums=(0, 1), has_aux=True)(xt, wt)
    _close(ours[0], theirs[0])
    _close(ours[1], theirs[1])
    out, fn = s.func.vjp(lambda x, w: _layer(s, x, w), x, w)
    out_t, fn_t = t.func.vjp(lambda x, w: _layer(t, x, w), xt, wt)
    _close(out, out_t)
    _close(fn(s.tensor(V)), fn_t(torch.tensor(V, dtype=F64)))
    _close(
        s.func.jvp(lambda x: _layer(s, x, w), (x,), (s.tensor(U),)),
        t.func.jvp(lambda x: _layer(t, x, wt), (xt,), (torch.tensor(U, dtype=F64),)),
    )
    value = s.func.grad_and_value(lambda x: _loss(s, x, w))(x)
    value_t = t.func.grad_and_value(lambda x: _loss(t, x, wt))(xt)
    _close(value, value_t)


@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_autograd_functional(name):
    (s, x, w), (t, xt, wt) = _pair()
    ours_fn = getattr(s.autograd.functional, name)
    theirs_fn = getattr(t.autograd.functional, name)
    if name == "jacobian":
        _close(ours_fn(lambda x, w: _layer(s, x, w), (x, w)), theirs_fn(lambda x, w: _layer(t, x, w), (xt, wt)))
    elif name == "hessian":
        _close(ours_fn(lambda x, w: _loss(s, x, w), (x, w)), theirs_fn(lambda x, w: _loss(t, x, w), (xt, wt)))
    elif name == "vjp":
        _close(
            ours_fn(lambda x: _layer(s, x, w), x, s.tensor(V)),
            theirs_fn(lambda x: _layer(t, x, wt), xt, torch.tensor(V, dtype=F64)),
        )
    elif name == "jvp":
        _close(
            ours_fn(lambda x: _layer(s, x, w), x, s.tensor(U)),
            theirs_fn(lambda x: _layer(t, x, wt), xt, torch.tensor(U, dtype=F64)),
        )
    else:
        _close(
            ours_fn(lambda x: _loss(s, x, w), x, s.tensor(U)),
            theirs_fn(lambda x: _loss(t, x, wt), xt, torch.tensor(U, dtype=F64)),
        )


def test_a_hessian_is_labelled_by_what_it_is():
    """torch.func.hessian's blocks read d²f/dx² and d²f/dx dy, where the label was the gradient's graph with its
    cotangent's internal name (``d1[None].expand(2) * torch.cos(x)/dx``); their entries are torch's."""
    x, y = sg.symbols("x", (2,), requires_grad=True), sg.symbols("y", (2,), requires_grad=True)
    single = st.func.hessian(lambda x: st.sin(x).sum())(x)
    assert single.name == "d²(torch.sin(x).sum())/dx²"
    blocks = st.func.hessian(lambda x, y: (st.sin(x) * y).sum(), argnums=(0, 1))(x, y)
    names = [[block.name.split("/")[1] for block in row] for row in blocks]
    assert names == [["dx²", "dx dy"], ["dy dx", "dy²"]]
    point = {"x": [0.3, -1.2], "y": [0.7, 2.0]}
    theirs = torch.func.hessian(lambda x, y: (torch.sin(x) * y).sum(), argnums=(0, 1))(
        *(torch.tensor(point[n], dtype=torch.float64) for n in "xy")
    )
    for row_ours, row_theirs in zip(blocks, theirs, strict=True):
        for ours, expected in zip(row_ours, row_theirs, strict=True):
            values = {s: v for n in "xy" for s, v in zip(sg.symbols(n, (2,)).sympy(), point[n])}
            got = [[float(e.subs(values)) for e in r] for r in ours.sympy().tolist()]
            torch.testing.assert_close(torch.tensor(got, dtype=torch.float64), expected)
