"""Trust, part two: differences from torch found by trying symgrad as a user would and on torch's own samples,
each fixed at its cause and checked here against real torch in float64."""

from __future__ import annotations

import pytest

import symgrad as sg
import symgrad.torch as st

torch = pytest.importorskip("torch")

F64 = torch.float64


@pytest.mark.parametrize(
    "build",
    [
        lambda T, x: (T.nn.functional.avg_pool1d(x, 3, stride=1) ** 2).sum(),
        lambda T, x: T.nn.functional.avg_pool1d(x, 3, padding=1, count_include_pad=False).tanh().sum(),
        lambda T, x: (T.nn.functional.avg_pool1d(x, 2) ** 3).sum(),
    ],
    ids=["window 3 squared", "window 3 padded, pad not counted", "window 2 cubed"],
)
def test_a_pooling_laws_exact_proof_divides_by_integers(build):
    """The window size divided as the float 3.0, and SymPy's Float arithmetic then left 1e-17 where the exact
    difference is 0: the exact proof FAILED while torch agreed. Divisors are integers now."""
    (b,) = sg.dims("b")
    x = sg.symbols("x", (b, 2, 7), requires_grad=True)
    proof = sg.prove(build(st, x), [x])
    assert proof.held, str(proof)
    assert all(e["held"] for e in proof.exact) and proof.exact


def test_a_proof_picks_class_counts_above_the_targets_the_user_fixed():
    """F.cross_entropy(X @ W, y) with y = [0, 2, 1] and a symbolic class count c: the proof took c = 2 and
    stopped on 'index 2 is out of bounds'. Proof sizes now respect every index value given."""
    (n, c) = sg.dims("n c")
    X, W = sg.symbols("X", (3, n)), sg.symbols("W", (n, c), requires_grad=True)
    y = sg.tensor([0, 2, 1], name="y", dtype="int64")
    proof = sg.prove(st.nn.functional.cross_entropy(X @ W, y), [W])
    assert proof.held, str(proof)
    assert all(e["sizes"]["c"] >= 3 for e in proof.exact) and proof.numeric[0]["sizes"]["c"] >= 3


def test_a_proof_picks_sizes_above_a_gathers_indices():
    (n,) = sg.dims("n")
    x = sg.symbols("x", (2, n), requires_grad=True)
    index = sg.tensor([[4, 0], [1, 3]], name="i", dtype="int64")
    proof = sg.prove((st.gather(x, 1, index) ** 2).sum(), [x])
    assert proof.held and all(e["sizes"]["n"] >= 5 for e in proof.exact)


@pytest.mark.parametrize(("m", "n"), [(1, 1), (1, 3), (3, 1), (2, 2), (3, 3)])
def test_a_one_term_matrix_products_signed_zero_is_torchs(m, n):
    """-1 · 0 over one term: torch's outer product gives -0.0 when both sides have several rows and columns,
    its BLAS sums +0.0 otherwise; 1 / (A @ B) shows which."""
    a, b = torch.full((m, 1), -1.0, dtype=F64), torch.zeros(1, n, dtype=F64)
    expected = (1 / (a @ b)).tolist()
    ours = (1 / (st.tensor(a.tolist(), dtype="float64") @ st.tensor(b.tolist(), dtype="float64"))).tolist()
    assert ours == expected


@pytest.mark.parametrize(
    ("left", "right"),
    [("int32", "int64"), ("uint8", "int8"), ("bool", "int32"), ("int16", "int32")],
)
def test_integer_promotion_is_torchs(left, right):
    a = torch.tensor([1, 0], dtype=getattr(torch, left))
    b = torch.tensor([1, 1], dtype=getattr(torch, right))
    ours = st.tensor([1, 0], dtype=left) + st.tensor([1, 1], dtype=right)
    assert ours.dtype == str((a + b).dtype).removeprefix("torch.")


def test_an_integer_tensor_clamped_by_floats_is_promoted():
    ours = st.tensor([0, 3], dtype="int64").clamp(0.5, 1.5)
    expected = torch.tensor([0, 3]).clamp(0.5, 1.5)
    assert ours.dtype == "float32" == str(expected.dtype).removeprefix("torch.")
    assert ours.tolist() == expected.tolist()


def test_a_time_limit_belongs_to_its_thread():
    """A worker thread's expired limit does not stop the main thread's work."""
    import threading

    from symgrad.core.budget import tick, time_limit

    errors = []

    def worker():
        try:
            with time_limit(0.0, "the worker's proof", "none", report=None):
                tick()
        except sg.WorkBudgetError as error:
            errors.append(error)

    with time_limit(60, "the main work", "none", report=None):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        tick()  # the main thread's clock has not run out
    assert len(errors) == 1 and "worker" in str(errors[0])
