"""The rules that keep identities (a Hessian's basis) and leftover dims of size 1 out of laws and emitted code:
each rule shown on a law, then the classics in both spellings, a vector ``(d,)`` and a column ``(d, 1)``, whose
emitted Hessians contain no ``torch.eye`` and equal torch.func's in float64."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as st
from symgrad.core.tensor import apply
from symgrad.derive.identities import IDENTITY_PRODUCTS, identity_dims, identity_product
from symgrad.derive.unit_dims import UNIT_DIM_REWRITES, unit_dim_rewrite
from symgrad.emit import check_curvature_module

torch = pytest.importorskip("torch")
F64 = torch.float64


def text(t: sg.Tensor) -> str:
    return sg.TorchPrinter().doprint(t)


def _entries_equal(a: sg.Tensor, b: sg.Tensor) -> bool:
    """Entry by entry, at concrete sizes, as SymPy sees them."""
    return (a.entries() == b.entries()).all()


def test_each_identity_rule_on_a_law_and_entry_by_entry():
    r, n = 3, 4
    eye = apply("eye", n=n)
    M, N = sg.symbols("M", (r, n)), sg.symbols("N", (n, r))
    cases = {
        "eye(N) @ M -> M": (eye, N, "N"),
        "M @ eye(N) -> M": (M, eye, "M"),
        "M @ (columns e_i) -> M.T in place": (M, eye.reshape(n, 1, n, 1), "M.T.reshape(4, 1, 3, 1)"),
        "(rows e_i^T) @ M -> M in place": (eye.reshape(n, 1, n, 1).mT, N, "N.reshape(4, 1, 1, 3)"),
    }
    assert sorted(cases) == sorted(name for name, _ in IDENTITY_PRODUCTS)
    for name, (a, b, expected) in cases.items():
        product = apply("matmul", a, b)
        found = identity_product(a, b, product.shape)
        assert found is not None and text(found) == expected, name
        assert _entries_equal(found, product), name


def test_an_identity_is_recognised_only_with_dims_of_size_one_around_it():
    (n,) = sg.dims("n")
    eye = apply("eye", n=n)
    assert identity_dims(eye.reshape(n, 1, n, 1)) == (0, 2)
    assert identity_dims(eye.reshape(n, 1, n, 1).mT) == (0, 3)
    assert identity_dims(eye[:, None]) == (0, 2)
    assert identity_dims(eye.reshape(n * n)) is None  # flattened: no longer an identity of two dims
    assert identity_dims(sg.symbols("A", (n, n))) is None


def test_each_unit_dim_rule_on_a_law_and_entry_by_entry():
    k, n, d = 3, 4, 2
    A, B, D = sg.symbols("A", (k, 1, n)), sg.symbols("B", (k, n)), sg.symbols("D", (k, n))
    M, C = sg.symbols("M", (d, n)), sg.symbols("C", (k, n, 1))
    cases = {
        "t.transpose(a, b), a or b of size 1 -> t.reshape(...)": ("transpose", [A], {"dim0": 1, "dim1": 2}),
        "a.reshape(s) + b.reshape(s) -> (a + b).reshape(s)": ("add", [B.reshape(k, n, 1), D.reshape(k, n, 1)], {}),
        "M @ (columns, k×n×1) -> (B.reshape(k, n) @ M.T).reshape(k, d, 1)": ("matmul", [M, C], {}),
    }
    assert sorted(cases) == sorted(name for name, _ in UNIT_DIM_REWRITES)
    expected = {
        "transpose": "A.reshape(3, 4, 1)",
        "add": "(B + D).reshape(3, 4, 1)",
        "matmul": "(C.reshape(3, 4) @ M.T).reshape(3, 2, 1)",
    }
    for name, (op, inputs, attrs) in cases.items():
        node = apply(op, *inputs, **attrs)
        found = unit_dim_rewrite(op, inputs, attrs, node.shape)
        assert found is not None and text(found) == expected[op], name
        assert _entries_equal(found, node), name
    # a size-1 dim swapped over a larger one reorders the others: not a reshape
    jumping = sg.symbols("J", (k, n, 1))
    assert unit_dim_rewrite("transpose", [jumping], {"dim0": 0, "dim1": 2}, (1, n, k)) is None
    # a matrix keeps its transpose: x.T of a column reads better than a reshape
    column = sg.symbols("x", (n, 1))
    assert unit_dim_rewrite("transpose", [column], {"dim0": 0, "dim1": 1}, (1, n)) is None


def classics(column: bool):
    n, d = sg.dims("n d")
    A = sg.symbols("A", (n, n))
    x = sg.symbols("x", (n, 1) if column else (n,), requires_grad=True)
    X, y = sg.symbols("X", (n, d)), sg.symbols("y", (n, 1) if column else (n,))
    w = sg.symbols("w", (d, 1) if column else (d,), requires_grad=True)
    quadratic = (x.T @ A @ x).reshape(()) if column else x @ A @ x
    logistic = st.nn.functional.binary_cross_entropy_with_logits(X @ w, y)
    return {"quadratic": (quadratic, [x], [A, x]), "logistic": (logistic, [w], [X, y, w])}


@pytest.mark.parametrize("column", [False, True], ids=["vector", "column"])
@pytest.mark.parametrize("case", ["quadratic", "logistic"])
def test_the_classics_hessian_code_has_no_identity_and_matches_torch(case, column):
    f, wrt, inputs = classics(column)[case]
    source = sg.codegen(f, wrt, inputs=inputs, style="hessian", name="Classic")
    hessian = source.split("def hessian")[1]
    assert "torch.eye" not in source and "@ A" not in hessian  # A + A.T, not products with an identity
    module = sg.compile(f, wrt, inputs=inputs, style="hessian", name="Classic")
    for seed, numbers in enumerate([(5, 3), (7, 4)]):
        report = check_curvature_module(module, f, wrt, inputs, sizes=dict(zip(sg.dims("n d"), numbers)), seed=seed)
        assert report.ok, report


def test_a_column_gives_the_vectors_hessian_law_up_to_the_reshape():
    vector, column = (classics(c)["quadratic"] for c in (False, True))
    assert text(sg.hessian_law(vector[0], vector[1][0])) == "A + A.T"
    assert text(sg.hessian_law(column[0], column[1][0])) == "(A + A.T).reshape(n, 1, n, 1)"
    assert sg.prove_hessian(column[0], column[1][0]).held


def hidden_layer(per_sample: bool = True):
    m = sg.dims("m")[0]
    X, t = sg.symbols("X", (m, 5)), sg.symbols("t", (m,))
    W1, w2 = sg.symbols("W1", (5, 3), requires_grad=True), sg.symbols("w2", (3,))
    out = st.tanh(X @ W1) @ w2 - t
    # the second loss mixes the samples (a squared sum over the batch): its curvature is not per sample
    loss = (out**2).mean() if per_sample else out.sum() ** 2
    return loss, W1, [X, W1, w2, t]


@pytest.mark.parametrize("per_sample", [True, False], ids=["per sample", "mixing samples"])
def test_a_layers_hessian_is_one_einsum_over_the_batch_when_its_curvature_is_per_sample(per_sample):
    f, w, inputs = hidden_layer(per_sample)
    law = sg.hessian_law(f, w)
    assert (law.op.name == "einsum3" and law.attrs["equation"] == "sa,sb,jsi->aibj") == per_sample
    source = sg.codegen(f, [w], inputs=inputs, style="hessian", name="Layer")
    assert ("torch.eye(15" not in source) == per_sample  # the basis of all 15 weights, only where it must be
    module = sg.compile(f, [w], inputs=inputs, style="hessian", name="Layer")
    for seed, m in enumerate((6, 9)):
        report = check_curvature_module(module, f, [w], inputs, sizes={sg.dims("m")[0]: m}, seed=seed)
        assert report.ok, report


def test_a_layer_read_as_w_t_and_samples_along_columns_keeps_torchs_layout():
    m = sg.dims("m")[0]
    X, y = sg.symbols("X", (m, 4)), sg.symbols("y", (m,))
    W1, W2 = sg.symbols("W1", (3, 4), requires_grad=True), sg.symbols("W2", (1, 3))
    cases = [
        (((W2 @ st.tanh(W1 @ X.T)).reshape(-1) - y).pow(2).mean(), [X, y, W1, W2]),
        (((st.tanh(X @ W1.T) @ W2.T) ** 2).sum(), [X, W1, W2]),
    ]
    for f, inputs in cases:
        assert sg.hessian_law(f, W1).op.name == "einsum3"
        module = sg.compile(f, [W1], inputs=inputs, style="hessian", name="Layer")
        report = check_curvature_module(module, f, [W1], inputs, sizes={m: 5})
        assert report.ok, report


def _layer_losses():
    m = sg.dims("m")[0]
    X, W, b = sg.symbols("X", (m, 4)), sg.symbols("W", (4, 3), requires_grad=True), sg.symbols("b", (3,))
    y = sg.symbols("y", (m,), dtype="int64")
    z = X @ W
    return (
        {
            # softmax couples the classes of one sample, not two samples: per sample
            "cross-entropy with a bias": (st.nn.functional.cross_entropy(z + b, y), [X, W, b, y], True),
            # centring by the batch mean couples every sample with every other: the general route
            "centred by the batch": (((z - z.mean(0)) ** 2).sum(), [X, W], False),
        },
        W,
        m,
    )


@pytest.mark.parametrize("case", ["cross-entropy with a bias", "centred by the batch"])
def test_the_block_form_is_taken_only_where_the_curvature_is_per_sample(case):
    losses, w, m = _layer_losses()
    f, inputs, per_sample = losses[case]
    assert (sg.hessian_law(f, w).op.name == "einsum3") == per_sample
    module = sg.compile(f, [w], inputs=inputs, style="hessian", name="Layer")
    report = check_curvature_module(module, f, [w], inputs, sizes={m: 6})
    assert report.ok, report


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func's jvp rules
def test_a_layers_block_keeps_torchs_nans_where_its_hessians_agree():
    """The block form's per-sample curvature is built on the rows' h × h identity. An identity-free form
    (torch.diag_embed of the curvature's diagonal) has exact zeros off the diagonal where a target is nan, while
    torch.func.hessian and torch.autograd.functional.hessian agree on nan there; the identity keeps torch's values."""
    f, w, inputs = hidden_layer()
    module = sg.compile(f, [w], inputs=inputs, style="hessian", name="Layer")
    assert "torch.eye(3" in module.__symgrad_source__
    g = torch.Generator().manual_seed(0)
    X, W1, w2 = (torch.randn(*shape, dtype=F64, generator=g) for shape in ((4, 5), (5, 3), (3,)))
    t = torch.tensor([0.5, -1.0, float("nan"), 2.0], dtype=F64)

    def loss(W):
        return ((torch.tanh(X @ W) @ w2 - t) ** 2).mean()

    by_func, by_autograd = torch.func.hessian(loss)(W1), torch.autograd.functional.hessian(loss, W1)
    assert torch.equal(by_func.isnan(), by_autograd.isnan()) and by_func.isnan().all()
    assert module.hessian(X, W1, w2, t).isnan().all()
