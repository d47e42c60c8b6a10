"""Jacobians and Hessians as tensors, with torch's result layout: shape ``y.shape + x.shape``.

The entries are SymPy's derivatives (sparse: only the entries that contain a symbol are
differentiated). The numbers are computed the way torch's ``jacrev`` computes them: one backward
pass through the VJP rules per entry of ``y`` (a one-hot grad_output), so that at singular points
they follow torch's conventions rather than the simplified formula's value.

>>> import symgrad as sg
>>> x = sg.tensor([1.0, 2.0], name="x")
>>> hessian((x**3).sum(), x).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

import numpy as np
import sympy

from ..core.arrays import object_array
from ..core.constructors import formula, symbols_like
from ..core.dims import require_concrete
from ..core.errors import UnsupportedError
from ..core.numbers import numbers_at
from ..core.tensor import Tensor, constant
from .entrywise import sparse_jacobian
from .reverse import law


def _numbers(y: Tensor, x: Tensor, y_shape: tuple, x_shape: tuple) -> Tensor | None:
    """The Jacobian's numbers, row by row, from one backward pass per entry of y (None without values)."""
    if not y.has_values() or not x.has_values():
        return None
    cotangent = symbols_like(y, "onehot", distinct=True)
    (graph,) = law(y, [x], [cotangent], simplified=False)
    size = int(np.prod(y_shape, dtype=int))
    rows = []
    for position in range(size):
        unit = np.zeros(size)
        unit[position] = 1.0
        (values,) = numbers_at([graph], {id(cotangent): unit.reshape(y_shape)})
        rows.append(values.reshape(-1))
    flat = [value for row in rows for value in row]
    return constant(object_array(flat, y_shape + x_shape), dtype=x.dtype)


def jacobian_tensor(y: Tensor, x: Tensor, name: str | None = None) -> Tensor:
    """d y / d x as a tensor of shape ``y.shape + x.shape`` (x must be a leaf), labelled ``name`` if given."""
    if x.kind != "symbol":
        raise UnsupportedError(f"a Jacobian is taken with respect to a leaf tensor; {x.name} is computed")
    y_shape = require_concrete(y.shape, "a Jacobian")
    x_shape = require_concrete(x.shape, "a Jacobian")
    n_in = int(np.prod(x_shape, dtype=int))
    flat = [sympy.S.Zero] * (int(np.prod(y_shape, dtype=int)) * n_in)
    for o, i, derivative in sparse_jacobian(y, x):
        flat[o * n_in + i] = derivative
    entries = object_array(flat, y_shape + x_shape)
    return formula(
        entries,
        sources=[y],
        name=name or f"d{y.name}/d{x.name}",
        dtype=x.dtype,
        numeric=_numbers(y, x, y_shape, x_shape),
    )


def hessian(y: Tensor, x: Tensor) -> Tensor:
    """d² y / d x² for a one-element ``y``, shape ``x.shape + x.shape``: the Jacobian of the gradient."""
    if y.numel() != 1:
        raise UnsupportedError(f"a Hessian needs a one-element output; {y.name} has {y.numel()} entries")
    (gradient,) = law(y.reshape(()) if y.shape else y, [x], simplified=False)
    return jacobian_tensor(gradient, x)
