"""Shape-generic second-order laws: the classics come out as a person writes them, each is proved exactly at
small sizes (against SymPy's entrywise Hessian) and numerically against torch's double backward."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as st
from symgrad.emit import check_curvature_module
from symgrad.verify import evaluate_graph, instantiate

torch = pytest.importorskip("torch")
F64 = torch.float64


def logistic_regression():
    n, d = sg.dims("n d")
    X, y = sg.symbols("X", (n, d)), sg.symbols("y", (n,))
    w = sg.symbols("w", (d,), requires_grad=True)
    return st.nn.functional.binary_cross_entropy_with_logits(X @ w, y), w, [X, y, w]


def text(t: sg.Tensor) -> str:
    return sg.TorchPrinter().doprint(t)


def quadratic_form():
    (n,) = sg.dims("n")
    A, x = sg.symbols("A", (n, n)), sg.symbols("x", (n,), requires_grad=True)
    return x @ A @ x, x, [A, x]


def cross_entropy_row():
    (c,) = sg.dims("c")
    z, p = sg.symbols("z", (c,), requires_grad=True), sg.symbols("p", (c,))
    return -(p * st.log_softmax(z, dim=0)).sum(), z, [z, p]


def mlp():
    n, d, k = sg.dims("n d k")
    X, y = sg.symbols("X", (n, d)), sg.symbols("y", (n,))
    W1, W2 = sg.symbols("W1", (k, d), requires_grad=True), sg.symbols("W2", (1, k), requires_grad=True)
    return ((W2 @ st.tanh(W1 @ X.T)).reshape(-1) - y).pow(2).mean(), [W1, W2], [X, y, W1, W2]


def test_quadratic_form_hessian_is_a_plus_a_transpose():
    f, x, _ = quadratic_form()
    assert text(sg.hessian_law(f, x)) == "A + A.T"
    assert sg.prove_hessian(f, x).held


def test_logistic_regression_hessian_scales_rows_and_never_builds_a_diagonal():
    f, w, _ = logistic_regression()
    H = sg.hessian_law(f, w)
    law = text(H)
    assert law.endswith("@ X") and "X.T" in law and "sigmoid" in law
    assert "diag" not in law and "eye" not in law  # X.T scaled column by column, no n×n matrix
    assert sg.prove_hessian(f, w).held


def test_softmax_cross_entropy_hessian_is_diag_p_minus_p_p_transpose():
    f, z, _ = cross_entropy_row()
    H = sg.hessian_law(f, z)
    assert "softmax" in text(H) and "torch.eye(c)" in text(H)
    # diag(p) - p pᵀ, scaled by the total target mass (1 for a probability target)
    zs = torch.tensor([0.3, -1.2, 0.8, 0.1], dtype=F64)
    ps = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64)
    expected = torch.autograd.functional.hessian(lambda t: -(ps * torch.log_softmax(t, 0)).sum(), zs)
    module = sg.compile(f, [z], inputs=[z, ps_symbol := f.leaves()["p"]], style="hessian", name="Ce")
    assert ps_symbol.name == "p"
    assert torch.allclose(module.hessian(zs, ps), expected, rtol=1e-12, atol=1e-14)
    sm = torch.softmax(zs, 0)
    assert torch.allclose(expected, torch.diag(sm) - torch.outer(sm, sm), rtol=1e-12, atol=1e-14)
    assert sg.prove_hessian(f, z).held


def test_log_det_hvp_is_minus_inverse_transpose_sandwich():
    (n,) = sg.dims("n")
    M, U = sg.symbols("M", (n, n), requires_grad=True), sg.symbols("U", (n, n))
    (hv,) = sg.hvp_law(st.logdet(M), M, U)
    # torch's logdet is nan where det M < 0, and no gradient flows there: the where is that guard
    assert text(hv).replace("(torch.linalg.inv(M)).T", "torch.linalg.inv(M).T") == (
        "-(torch.linalg.inv(M).T @ (U * torch.where(torch.linalg.det(M) < 0, 0, 1).to(M.dtype)).T"
        " @ torch.linalg.inv(M).T)"
    )
    m = torch.tensor([[2.0, 0.3, 0.1], [0.2, 1.5, -0.4], [0.0, 0.6, 1.8]], dtype=F64)
    u = torch.tensor([[0.5, -1.0, 0.2], [0.3, 0.7, -0.6], [1.1, 0.0, 0.4]], dtype=F64)
    _, expected = torch.autograd.functional.hvp(torch.logdet, m, u)
    inverse = torch.linalg.inv(m)
    assert torch.allclose(expected, -(inverse.T @ u.T @ inverse.T), rtol=1e-12, atol=1e-14)
    module = sg.compile(st.logdet(M), [M], inputs=[M], style="hvp", name="LogDet")
    (ours,) = module.hvp(m, u)
    assert torch.allclose(ours, expected, rtol=1e-12, atol=1e-14)
    negative = m[[1, 0, 2]]  # rows swapped: det < 0, logdet nan, and torch's HVP is 0
    _, expected = torch.autograd.functional.hvp(torch.logdet, negative, u)
    (ours,) = module.hvp(negative, u)
    assert torch.equal(expected, torch.zeros_like(expected)) and torch.equal(ours, expected)


def test_mlp_hvp_and_hessian_blocks_against_torch():
    f, wrt, inputs = mlp()
    assert sg.prove_hessian(f, wrt[0]).held
    for style in ("hvp", "hessian"):
        module = sg.compile(f, wrt, inputs=inputs, style=style, name="Mlp")
        for seed, numbers in enumerate([(5, 3, 4), (2, 4, 3)]):
            sizes = dict(zip(sg.dims("n d k"), numbers))
            report = check_curvature_module(module, f, wrt, inputs, sizes=sizes, seed=seed)
            assert report.ok, report


def test_gauss_newton_product_against_torch():
    """Jᵀ H_L J v for an MLP with a squared loss: the model's own curvature is dropped."""
    n, d, k = sg.dims("n d k")
    X, y = sg.symbols("X", (n, d)), sg.symbols("y", (n,))
    W1, W2 = sg.symbols("W1", (k, d), requires_grad=True), sg.symbols("W2", (1, k), requires_grad=True)
    out = (W2 @ st.tanh(W1 @ X.T)).reshape(-1)
    V1, V2 = sg.symbols("V1", (k, d)), sg.symbols("V2", (1, k))
    gn = sg.gauss_newton_law(out, (out - y).pow(2).mean(), [W1, W2], [V1, V2])

    g = torch.Generator().manual_seed(0)
    sizes = {n: 5, d: 3, k: 4}
    xs, ys = torch.randn(5, 3, dtype=F64, generator=g), torch.randn(5, dtype=F64, generator=g)
    w1, w2 = torch.randn(4, 3, dtype=F64, generator=g), torch.randn(1, 4, dtype=F64, generator=g)
    v1, v2 = torch.randn(4, 3, dtype=F64, generator=g), torch.randn(1, 4, dtype=F64, generator=g)

    def model(a, b):
        return (b @ torch.tanh(a @ xs.T)).reshape(-1)

    _, jv = torch.autograd.functional.jvp(model, (w1, w2), (v1, v2))
    hjv = 2 * jv / 5  # the squared loss's Hessian with respect to the model's output, times Jv
    _, expected = torch.autograd.functional.vjp(model, (w1, w2), hjv)
    values = {X: xs, y: ys, W1: w1, W2: w2, V1: v1, V2: v2}
    for ours, theirs in zip(gn, expected):
        concrete = instantiate([ours, *values], sizes)
        numbers = {concrete[id(t)]: value.numpy() for t, value in values.items()}
        graph = evaluate_graph(torch, [concrete[id(ours)]], numbers, {}, set())
        assert torch.allclose(graph[id(concrete[id(ours)])], theirs, rtol=1e-10, atol=1e-12)


def test_hessian_of_several_inputs_has_torchs_nested_layout():
    f, wrt, _ = mlp()
    blocks = sg.hessian_law(f, wrt)
    assert len(blocks) == 2 and all(len(row) == 2 for row in blocks)
    k, d = wrt[0].shape
    assert tuple(blocks[0][1].shape) == (k, d, 1, k)


def test_a_hessian_needs_a_one_element_output():
    f, x, _ = quadratic_form()
    with pytest.raises(sg.SymgradError, match="one-element"):
        sg.hessian_law(x * x, x)
    with pytest.raises(sg.SymgradError, match="one-element"):
        sg.codegen(x * x, [x], style="hvp")
    with pytest.raises(sg.SymgradError, match="2 inputs and 1 tangents"):
        sg.hvp_law(f, [x, f.leaves()["A"]], [x])


def test_emitted_hvp_module_is_ruff_clean_and_works_on_float32():
    f, w, inputs = logistic_regression()
    source = sg.codegen(f, [w], inputs=inputs, style="hvp", name="LogReg")
    assert "def hvp(X, y, w, v_w):" in source and "import torch" in source
    namespace: dict = {}
    exec(compile(source, "<hvp>", "exec"), namespace)
    g = torch.Generator().manual_seed(1)
    xs, ys = torch.randn(6, 3, generator=g), torch.rand(6, generator=g)
    ws, vs = torch.randn(3, generator=g), torch.randn(3, generator=g)
    (hv,) = namespace["hvp"](xs, ys, ws, vs)
    assert hv.dtype == torch.float32
    _, expected = torch.autograd.functional.hvp(
        lambda t: torch.nn.functional.binary_cross_entropy_with_logits(xs @ t, ys), ws, vs
    )
    assert torch.allclose(hv, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="v_w has shape"):
        namespace["hvp"](xs, ys, ws, vs[:2])


def test_prod_one_order_up_refuses_as_a_law_and_matches_torch_entrywise():
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    (grad,) = sg.law(x.prod(), [x])
    with pytest.raises(sg.UnsupportedError, match="second derivative of prod"):
        sg.law(grad.sum(), [x])
    values = [1.5, -2.0, 0.0, 3.0]  # a zero: the entrywise rule must not divide by it
    mine = st.tensor(values, requires_grad=True)
    (g,) = st.autograd.grad(mine.prod(), [mine], create_graph=True)
    (h,) = st.autograd.grad(g.sum(), [mine])
    real = torch.tensor(values, dtype=F64, requires_grad=True)
    (rg,) = torch.autograd.grad(real.prod(), [real], create_graph=True)
    (rh,) = torch.autograd.grad(rg.sum(), [real])
    torch.testing.assert_close(torch.tensor(h.tolist(), dtype=F64), rh, rtol=1e-12, atol=1e-12)
