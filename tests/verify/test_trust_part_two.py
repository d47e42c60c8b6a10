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
