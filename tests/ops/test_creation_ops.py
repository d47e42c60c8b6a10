"""Creation functions (zeros, ones, full, arange, linspace, rand…) give torch's numbers, dtypes and shapes;
argmax/argmin give torch's indices. Each is spelled ``w.torch.<name>(`` so that the coverage test sees it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch as real

import symgrad.torch as storch
from symgrad.core.errors import UnsupportedError

REAL = SimpleNamespace(torch=real)
MINE = SimpleNamespace(torch=storch)

CREATIONS = {
    "zeros": lambda w: w.torch.zeros(2, 3),
    "zeros_tuple_float64": lambda w: w.torch.zeros((3,), dtype=w.torch.float64),
    "ones": lambda w: w.torch.ones(2, 1, 2),
    "full_float": lambda w: w.torch.full((2, 2), 1.5),
    "full_int": lambda w: w.torch.full((3,), 7),
    "arange_int": lambda w: w.torch.arange(5),
    "arange_float_step": lambda w: w.torch.arange(0.0, 1.0, 0.1),
    "arange_negative_step": lambda w: w.torch.arange(3, -4, -2),
    "linspace": lambda w: w.torch.linspace(-1.0, 2.0, 7),
    "linspace_one_step": lambda w: w.torch.linspace(3.0, 5.0, 1),
    "randn": lambda w: (w.torch.manual_seed(3), w.torch.randn(2, 3))[1],
    "rand": lambda w: (w.torch.manual_seed(4), w.torch.rand(4))[1],
    "randint": lambda w: (w.torch.manual_seed(5), w.torch.randint(2, 9, (3, 2)))[1],
    "randn_like": lambda w: (w.torch.manual_seed(6), w.torch.randn_like(w.torch.zeros(2, 2)))[1],
    "rand_like": lambda w: (w.torch.manual_seed(7), w.torch.rand_like(w.torch.ones(3)))[1],
    "argmax_ties": lambda w: w.torch.argmax(w.torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]]), dim=1),
    "argmin_flat": lambda w: w.torch.argmin(w.torch.tensor([[1.0, -3.0], [-3.0, 0.5]])),
}


def as_numpy(t) -> np.ndarray:
    return t.detach().numpy() if isinstance(t, real.Tensor) else np.array(t.tolist())


@pytest.mark.parametrize("name", sorted(CREATIONS))
def test_creation_gives_torchs_numbers_dtype_and_shape(name: str) -> None:
    theirs, mine = CREATIONS[name](REAL), CREATIONS[name](MINE)
    assert tuple(mine.shape) == tuple(theirs.shape)
    assert str(mine.dtype).removeprefix("torch.") == str(theirs.dtype).removeprefix("torch.")
    # symgrad holds float32 numbers as float64 (exact decimals); torch rounds them to float32
    tolerance = 1e-7 if theirs.dtype == real.float32 else 0.0
    np.testing.assert_allclose(as_numpy(mine).astype(np.float64), as_numpy(theirs), rtol=tolerance, atol=tolerance)


def test_empty_memory_is_read_only_once_filled() -> None:
    """torch.empty, new_empty and empty_like: reading the memory is refused in one line; filling it first is the
    fill (a random draw, fill_, copy_), as in torch."""
    for empty in (lambda w: w.torch.empty(2, 2), lambda w: w.torch.ones(2, 2).new_empty((2, 2)),
                  lambda w: w.torch.empty_like(w.torch.ones(2, 2))):  # fmt: skip
        with pytest.raises(UnsupportedError) as caught:
            (empty(MINE) + 1).tolist()
        assert "\n" not in str(caught.value) and "uninitialised" in str(caught.value)
        filled = [as_numpy(empty(w).fill_(2.5) * 2) for w in (REAL, MINE)]
        np.testing.assert_array_equal(filled[0], filled[1])


def test_a_created_leaf_that_requires_grad_gets_torchs_gradient() -> None:
    grads = []
    for w in (REAL, MINE):
        x = w.torch.ones(2, 3, requires_grad=True)
        (x * w.torch.arange(3.0)).sum().backward()
        grads.append(as_numpy(x.grad))
    np.testing.assert_array_equal(*grads)
