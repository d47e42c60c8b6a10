"""Functions ATen composes in C++ (symgrad.torch.compositions), traced: torch's values and gradients."""

from __future__ import annotations

import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64


def _x(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(shape, dtype=F64, generator=torch.Generator().manual_seed(seed))


CASES = {
    "tile": (lambda a: torch.tile(a, (2, 1, 2)), [(2, 3)]),
    "inner": (lambda a, b: torch.inner(a, b), [(2, 3), (4, 3)]),
    "inner of vectors": (lambda a, b: torch.inner(a[0], b[0]), [(2, 3), (4, 3)]),
    "trapezoid": (lambda a: torch.trapezoid(a, dx=0.3, dim=0), [(4, 3)]),
    "trapz with x": (lambda a, b: torch.trapz(a, b[0], dim=1), [(2, 4), (1, 4)]),
    "nanmean": (lambda a: torch.nanmean(torch.where(a > 1.0, float("nan"), a), dim=1), [(3, 4)]),
    "diagflat": (lambda a: torch.diagflat(a, 1), [(2, 2)]),
    "linalg.vecdot": (lambda a, b: torch.linalg.vecdot(a, b), [(3, 4), (3, 4)]),
    "addbmm": (lambda a, b, c: torch.addbmm(a, b, c, beta=0.5, alpha=2.0), [(2, 4), (3, 2, 5), (3, 5, 4)]),
    "unsafe_chunk": (lambda a: torch.stack(torch.unsafe_chunk(a, 2, 1)), [(3, 4)]),
    "fliplr, flipud": (lambda a: torch.fliplr(a) * torch.flipud(a), [(3, 3)]),
    # torch decomposes these down to aten.index, which symgrad takes as x[indices]
    "interpolate, nearest": (lambda a: torch.nn.functional.interpolate(a, scale_factor=2), [(1, 2, 3, 3)]),
    "interpolate, bilinear": (
        lambda a: torch.nn.functional.interpolate(a, size=(4, 5), mode="bilinear", align_corners=False),
        [(2, 1, 3, 3)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_composed_function_gives_torchs_values_and_gradients(name):
    fn, shapes = CASES[name]
    inputs = [_x(*shape, seed=k) for k, shape in enumerate(shapes)]
    traced = sg.trace(fn, *(x.clone() for x in inputs))
    leaves = [x.clone().requires_grad_() for x in inputs]
    expected = fn(*leaves)
    got = torch.tensor(traced.output.tolist(), dtype=F64)
    torch.testing.assert_close(got, expected.detach(), rtol=1e-14, atol=1e-14)
    v = _x(*expected.shape, seed=9)
    theirs = torch.autograd.grad(expected, leaves, v)
    ours = sg.vjp([traced.output], list(traced.inputs), [sg.tensor(v.tolist(), dtype="float64")])
    for mine, torchs in zip(ours, theirs, strict=True):
        torch.testing.assert_close(torch.tensor(mine.tolist(), dtype=F64), torchs, rtol=1e-13, atol=1e-13)
