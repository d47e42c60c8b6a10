"""Products along a dim: ``prod``, each entry's product of the others, ``cumprod`` and its gradient.

Gradients of products are exact at zeros, as torch's are: the product of the *other* entries
is built from prefix and suffix products, never by dividing by the entry itself.

>>> import symgrad as sg
>>> x = sg.tensor([2.0, 0.0, 3.0], requires_grad=True, name="x")
>>> x.prod().backward()
>>> x.grad.tolist()
[0.0, 6.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import sympy

from ..core.errors import UnsupportedError
from ..core.registry import Op, register
from ..core.tensor import apply, constant
from .calculus import expand_back
from .reductions import (
    present_axes,
    reduce_entries,
    reduced_shape,
    reduced_without_dim,
    reduction_grad_fn,
    slices_along,
)


def _groupwise(a: np.ndarray, dim: int, fn: Callable) -> np.ndarray:
    """``fn(rows) -> rows`` on the 2-D array of slices along ``dim`` (a 0-d tensor is one slice of one entry)."""
    if a.ndim == 0:
        return fn(a.reshape(1, 1)).reshape(())
    moved = np.moveaxis(a, dim, -1)
    rows = moved.reshape(int(np.prod(moved.shape[:-1], dtype=int)), moved.shape[-1])
    return np.moveaxis(np.asarray(fn(rows)).reshape(moved.shape), -1, dim)


def _exclusive_products(rows: np.ndarray) -> np.ndarray:
    """Each entry's product of the other entries of its row, without dividing (exact at zeros, as torch's
    prod backward): the product of the entries before it times the product of those after it."""
    ones = np.ones_like(rows[:, :1])
    before = np.cumprod(np.concatenate([ones, rows[:, :-1]], axis=1), axis=1)
    after = np.cumprod(np.concatenate([ones, rows[:, :0:-1]], axis=1), axis=1)[:, ::-1]
    return before * after


def _torch_prod(torch, a, dim: tuple, keepdim: bool):
    if not dim or (len(dim) == a.ndim and not keepdim):
        return torch.prod(a)
    return torch.prod(a, dim=dim[0], keepdim=keepdim)


register(
    Op(
        "prod",
        reduced_shape,
        lambda a, dim, keepdim: reduce_entries(a, dim, keepdim, lambda r: sympy.Mul(*r)),
        _torch_prod,
        "{0}.prod({reduce_args})",
        r"\prod_{{{dims_text}}} {0}",
        reduction_grad_fn("Prod"),
        vjp=lambda g, out, a, dim, keepdim: (_prod_vjp(g, a, dim, keepdim),),
        float64=lambda a, dim, keepdim: np.prod(a, axis=present_axes(a, dim), keepdims=keepdim),
        batch="dims",
    )
)


def _prod_vjp(g, a, dim: tuple, keepdim: bool):
    """As torch's prod backward: where the input holds no zero at all, g · prod / x (so an infinite entry gets
    ∞/∞ = nan, as torch's); where it holds one, g times each entry's product of the others; and for ``x.prod()``
    of a tensor with two or more zeros, zeros outright (every product of others holds a zero), so a nan or
    infinite g does not reach them."""
    spread = expand_back(g, a.shape, dim, keepdim)
    if not a.shape:
        return spread
    share = spread * _others(a, dim)
    zeros = apply("eq", a, 0).sum()
    out = expand_back(apply("prod", a, dim=dim, keepdim=keepdim), a.shape, dim, keepdim)
    share = apply("where", apply("gt", zeros, 0), share, spread * (out / a))
    whole = reduced_without_dim(a.shape, dim, keepdim)
    if not whole or (all(isinstance(d, int) for d in a.shape) and math.prod(a.shape) < 2):
        return share
    return apply("where", apply("gt", zeros, 1), 0, share)


def _others(a, dim: tuple):
    """Each entry's product of the others it is multiplied with (over one dim, or over all of them)."""
    if not a.shape:  # a 0-d tensor is its own product: no others
        return constant(1.0, dtype=a.dtype, python_scalar=True)
    if len(dim) <= 1:
        return apply("prod_others", a, dim=dim[0] if dim else 0)
    return apply("prod_others", a.reshape(-1), dim=0).reshape(*a.shape)


def no_law_for_second_order(op: str) -> Callable:
    """The VJP rule of a gradient op whose own law symgrad lacks: a law one order up refuses in one line
    (entrywise derivation still differentiates it, through its SymPy meaning)."""

    def refuse(g, out, *inputs, **attrs):
        raise UnsupportedError(f"no law for the second derivative of {op} yet; use concrete shapes")

    return refuse


def _torch_prod_others(torch, a, dim: int):
    if a.ndim == 0:
        return torch.ones_like(a)
    n = a.shape[dim]  # an empty dim: its products are empty too (min and max keep the slices in range)
    ones = torch.ones_like(a.narrow(dim, 0, min(1, n)))
    before = torch.cat([ones, a.narrow(dim, 0, max(n - 1, 0))], dim).cumprod(dim)
    after = torch.cat([ones, a.flip(dim).narrow(dim, 0, max(n - 1, 0))], dim).cumprod(dim).flip(dim)
    return before * after


register(
    Op(
        "prod_others",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, lambda r: [sympy.Mul(*r[:i], *r[i + 1 :]) for i in range(len(r))]),
        _torch_prod_others,
        "torch.cat([torch.ones_like({0}.narrow({dim}, 0, min(1, {0}.shape[{dim}]))), {0}.narrow({dim}, 0, "
        "max({0}.shape[{dim}] - 1, 0))], {dim}).cumprod({dim}) * torch.cat([torch.ones_like({0}.narrow({dim}, 0, "
        "min(1, {0}.shape[{dim}]))), {0}.flip({dim}).narrow({dim}, 0, max({0}.shape[{dim}] - 1, 0))], {dim})"
        ".cumprod({dim}).flip({dim})",
        r"\prod_{{j \neq i}} {0}_j",
        "none",
        vjp=no_law_for_second_order("prod"),
        float64=lambda a, dim: _groupwise(a, dim, _exclusive_products),
        batch="dims",
    )
)


def _cumprod(values: list) -> list:
    out, running = [], sympy.S.One
    for v in values:
        running = running * v
        out.append(running)
    return out


register(
    Op(
        "cumprod",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, _cumprod),
        lambda torch, a, dim: torch.cumprod(a, dim=dim),
        "torch.cumprod({0}, dim={dim})",
        r"\operatorname{{cumprod}}_{{{dim}}} {0}",
        "CumprodBackward0",
        vjp=lambda g, out, a, dim: (apply("cumprod_grad", g, a, dim=dim),),
        float64=lambda a, dim: np.cumprod(a, axis=dim) if a.ndim else a,
        batch="dims",
    )
)


def _cumprod_grad(g: np.ndarray, a: np.ndarray, dim: int) -> np.ndarray:
    """Σ_{k ≥ i} g_k Π_{j ≤ k, j ≠ i} a_j along ``dim``: the VJP of cumprod, exact at zeros."""
    if a.ndim == 0:
        return g.copy()
    gs, xs = (np.moveaxis(t, dim, -1) for t in (g, a))
    out = np.empty(xs.shape, dtype=object)
    n = xs.shape[-1]
    for index in np.ndindex(xs.shape[:-1]):
        row, weights = list(xs[index]), list(gs[index])
        for i in range(n):
            others = [sympy.Mul(*row[:i], *row[i + 1 : k + 1]) for k in range(i, n)]
            out[index + (i,)] = sympy.Add(*[w * p for w, p in zip(weights[i:], others)])
    return np.moveaxis(out, -1, dim)


def _reversed_cumsum(w: np.ndarray) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(w, -1), -1), -1)


def _cumprod_grad_float64(g: np.ndarray, a: np.ndarray, dim: int) -> np.ndarray:
    """torch's cumprod backward (its O(n) form, which runs when no second derivative is recorded), step by
    step, so that zeros, nans and infinities give torch's numbers: ``reversed_cumsum(y * g) / x`` when no
    entry is 0; otherwise that sum over the entries before each row's first zero, the derivative itself at
    the first zero (the products up to the second zero), and 0 after it."""
    if a.size <= 1 or a.ndim == 0 or a.shape[dim] == 1:
        return g
    gs, xs = (np.moveaxis(np.broadcast_to(t, a.shape), dim, -1) for t in (g, a))
    out = np.cumprod(xs, -1)
    w = out * gs
    is_zero = xs == 0
    if not is_zero.any():
        return np.moveaxis(_reversed_cumsum(w) / xs, -1, dim)
    zeros_so_far = np.cumsum(is_zero, -1)
    before = zeros_so_far == 0
    grad = np.where(before, _reversed_cumsum(np.where(before, w, 0.0)) / xs, 0.0)
    first_run = zeros_so_far == 1
    first = np.argmax(first_run, -1)[..., None]
    at_first = (np.arange(xs.shape[-1]) == first) & first_run
    between = first_run & ~at_first
    products = np.cumprod(np.where(between, xs, 1.0), -1) * np.where(first_run, gs, 0.0)
    prefix = np.where(first == 0, 1.0, np.take_along_axis(out, np.maximum(first - 1, 0), -1))
    grad = np.where(at_first, products.sum(-1, keepdims=True) * prefix, grad)
    return np.moveaxis(grad, -1, dim)


def _torch_cumprod_grad(torch, g, a, dim: int):
    if not a.ndim:
        return g
    # as autograd runs it: without grad mode unless differentiated (the kernel's other path differs at infinities)
    with torch.set_grad_enabled(torch.is_grad_enabled() and (g.requires_grad or a.requires_grad)):
        return torch.ops.aten.cumprod_backward(g, a, dim, torch.cumprod(a, dim))


register(
    Op(
        "cumprod_grad",
        lambda g, a, dim: a,
        _cumprod_grad,
        _torch_cumprod_grad,
        "_cumprod_backward({0}, {1}, {dim})",
        r"\operatorname{{cumprod}}'_{{{dim}}}\left({0}, {1}\right)",
        "none",
        vjp=no_law_for_second_order("cumprod"),
        float64=_cumprod_grad_float64,
        cost=lambda g, a, dim: math.prod(a or (1,)) * (a[dim] if a else 1) ** 2,
        batch="dims",
    )
)
