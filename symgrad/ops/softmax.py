"""Exponentials normalised along a dim: softmax, log-softmax and their backward kernels, logsumexp.

>>> import symgrad as sg
>>> x = sg.tensor([[0.0, 0.0]], name="x")
>>> x.softmax(1).tolist(), x.logsumexp(1).tolist()
([[0.5, 0.5]], [0.6931471805599453])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ..core.arrays import groups, object_array
from ..core.registry import Op, register
from ..core.tensor import apply
from .calculus import expand_back
from .reductions import dim_spelled_out, present_axes, reduce_entries, reduced_shape, slices_along


def _softmax(values: list) -> list:
    exps = [sympy.exp(v) for v in values]
    total = sympy.Add(*exps)
    return [e / total for e in exps]


def _log_softmax(values: list) -> list:
    lse = sympy.log(sympy.Add(*[sympy.exp(v) for v in values]))
    return [v - lse for v in values]


register(
    Op(
        "softmax",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, _softmax),
        lambda torch, a, dim: torch.softmax(a, dim=dim),
        "torch.softmax({0}, dim={dim})",
        r"\operatorname{{softmax}}\left({0}\right)",
        "SoftmaxBackward0",
        vjp=lambda g, out, a, dim: (apply("softmax_backward", g, out, dim=dim),),
        float64=lambda a, dim: softmax_float64(a, dim, log=False),
        batch="dims",
    )
)
register(
    Op(
        "log_softmax",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, _log_softmax),
        lambda torch, a, dim: torch.log_softmax(a, dim=dim),
        "torch.log_softmax({0}, dim={dim})",
        r"\log\operatorname{{softmax}}\left({0}\right)",
        "LogSoftmaxBackward0",
        vjp=lambda g, out, a, dim: (apply("log_softmax_backward", g, out, dim=dim),),
        float64=lambda a, dim: softmax_float64(a, dim, log=True),
        batch="dims",
    )
)


def _along(dim: int, ndim: int) -> int | None:
    return dim if ndim else None  # a 0-d tensor is one slice of one entry


def _rows_of(g: np.ndarray, y: np.ndarray, dim: int, fn: Callable) -> np.ndarray:
    """``fn(g_row, y_row) -> row`` along ``dim`` of two arrays of one shape."""
    if y.ndim == 0:
        return object_array(fn([g.item()], [y.item()]), ())
    if y.size == 0:  # no entries (a size 0 somewhere): nothing to compute, and no row length to infer
        return np.empty(y.shape, dtype=object)
    rows = [np.moveaxis(a, dim, -1).reshape(-1, a.shape[dim]) for a in (g, y)]
    out = object_array([v for a, b in zip(*rows) for v in fn(list(a), list(b))], np.moveaxis(y, dim, -1).shape)
    return np.moveaxis(out, -1, dim)


def _softmax_backward_row(g: list, y: list) -> list:
    total = sympy.Add(*(a * b for a, b in zip(g, y)))
    return [b * (a - total) for a, b in zip(g, y)]


def _log_softmax_backward_row(g: list, y: list) -> list:
    total = sympy.Add(*g)
    return [a - sympy.exp(b) * total for a, b in zip(g, y)]


def _softmax_backward_vjp(h: Any, out: Any, g: Any, y: Any, dim: int) -> tuple:
    """d(y ⊙ (g − Σ g⊙y)): by g, softmax's backward of h; by y, h ⊙ (g − Σ g⊙y) − g · Σ h⊙y."""
    total = (g * y).sum(dim=dim, keepdim=True)
    return apply("softmax_backward", h, y, dim=dim), h * (g - total) - g * (h * y).sum(dim=dim, keepdim=True)


def _log_softmax_backward_vjp(h: Any, out: Any, g: Any, y: Any, dim: int) -> tuple:
    """d(g − e^y · Σ g): by g, h − Σ h⊙e^y; by y, −h ⊙ e^y · Σ g."""
    power = apply("exp", y)
    return h - (h * power).sum(dim=dim, keepdim=True), -(h * power) * g.sum(dim=dim, keepdim=True)


# Softmax's and log-softmax's backward as torch's kernels compute them, reading the saved output y: one kernel
# each (and torch's rounding, in float32), where the formula would be four. The kernels do not promote: emitted
# code casts g to y's dtype first, as torch's autograd does
register(
    Op(
        "softmax_backward",
        lambda g, y, dim: y,
        lambda g, y, dim: _rows_of(g, y, dim, _softmax_backward_row),
        lambda torch, g, y, dim: torch._softmax_backward_data(g, y, dim, y.dtype),
        "torch.ops.aten._softmax_backward_data({0}.to({1}.dtype), {1}, {dim}, {1}.dtype)",
        r"{1} \odot \left({0} - \textstyle\sum_{{{dim}}} {0} \odot {1}\right)",
        "SoftmaxBackwardDataBackward0",
        vjp=_softmax_backward_vjp,
        readable=lambda g, y, dim: y * (g - (g * y).sum(dim=dim, keepdim=True)),
        float64=lambda g, y, dim: y * (g - (g * y).sum(axis=_along(dim, y.ndim), keepdims=True)),
        batch="dims",
    )
)
register(
    Op(
        "log_softmax_backward",
        lambda g, y, dim: y,
        lambda g, y, dim: _rows_of(g, y, dim, _log_softmax_backward_row),
        lambda torch, g, y, dim: torch._log_softmax_backward_data(g, y, dim, y.dtype),
        "torch.ops.aten._log_softmax_backward_data({0}.to({1}.dtype), {1}, {dim}, {1}.dtype)",
        r"{0} - e^{{{1}}} \textstyle\sum_{{{dim}}} {0}",
        "LogSoftmaxBackwardDataBackward0",
        vjp=_log_softmax_backward_vjp,
        readable=lambda g, y, dim: g - apply("exp", y) * g.sum(dim=dim, keepdim=True),
        float64=lambda g, y, dim: g - np.exp(y) * g.sum(axis=_along(dim, y.ndim), keepdims=True),
        batch="dims",
    )
)


def softmax_float64(a: np.ndarray, dim: int, log: bool) -> np.ndarray:
    """torch's softmax and log_softmax: the maximum is subtracted first, so large inputs do not overflow."""
    if a.size == 0:
        return a.copy()
    axis = dim if a.ndim else None
    shifted = a - np.max(a, axis=axis, keepdims=True)
    total = np.sum(np.exp(shifted), axis=axis, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


def _log_sum_exp(values: list) -> sympy.Expr:
    return sympy.log(sympy.Add(*[sympy.exp(v) for v in values]))


register(
    Op(
        "logsumexp",
        reduced_shape,
        lambda a, dim, keepdim: reduce_entries(a, dim, keepdim, _log_sum_exp),
        lambda torch, a, dim, keepdim: torch.logsumexp(a, dim=list(dim), keepdim=keepdim),
        "torch.logsumexp({0}{reduce_kwargs})",
        r"\operatorname{{logsumexp}}_{{{dims_text}}} {0}",
        "LogsumexpBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_logsumexp_vjp(g, out, a, dim, keepdim),),
        spell=lambda attrs, inputs: dim_spelled_out(attrs, inputs),
        float64=lambda a, dim, keepdim: _logsumexp_float64(a, present_axes(a, dim), keepdim),
        batch="dims",
    )
)


def _logsumexp_float64(a: np.ndarray, axes: tuple[int, ...], keepdim: bool) -> np.ndarray:
    """torch's logsumexp: log Σ exp(x − m) + m with m the maximum (taken as 0 where it is infinite)."""
    if a.size == 0:
        return np.log(np.sum(np.exp(a), axis=axes, keepdims=keepdim))
    peak = np.max(a, axis=axes, keepdims=True)
    peak = np.where(np.isinf(peak), 0.0, peak)
    total = np.log(np.sum(np.exp(a - peak), axis=axes, keepdims=keepdim))
    return total + (peak if keepdim else np.squeeze(peak, axis=axes))


def _logsumexp_vjp(g, out, a, dim: tuple, keepdim: bool):
    """g times the softmax over ``dim``, as torch's logsumexp backward computes it (see ``lse_softmax``)."""
    return expand_back(g, a.shape, dim, keepdim) * apply("lse_softmax", a, dim=dim)


def _lse_softmax_float64(a: np.ndarray, dim: tuple) -> np.ndarray:
    """exp(x − logsumexp(x)): torch's logsumexp backward, which differs from torch.softmax where an entry is
    infinite (softmax gives nan everywhere, this gives 0 where the entry is finite)."""
    return np.exp(a - _logsumexp_float64(a, present_axes(a, dim), keepdim=True)) if a.size else a.copy()


def _grouped(a: np.ndarray, dim: tuple, fn: Callable) -> np.ndarray:
    """``fn(list) -> list`` over the entries of each group reduced together over ``dim``, in place."""
    axes = present_axes(a, dim)
    keep = [d for d in range(a.ndim) if d not in axes]
    rows = groups(a, axes)
    moved = object_array([v for r in rows for v in fn(list(r))], tuple(a.shape[d] for d in keep + list(axes)))
    return np.transpose(moved, np.argsort(keep + list(axes)))


register(
    Op(
        "lse_softmax",
        lambda a, dim: a,
        lambda a, dim: _grouped(a, dim, _softmax),
        lambda torch, a, dim: torch.exp(a - torch.logsumexp(a, dim=list(dim), keepdim=True)),
        "torch.exp({0} - torch.logsumexp({0}, {dim_arg}, keepdim=True))",
        r"\operatorname{{softmax}}\left({0}\right)",
        "none",
        vjp=lambda g, out, a, dim: (out * (g - (g * out).sum(dim=dim, keepdim=True)),),
        spell=lambda attrs, inputs: {"dim_arg": attrs["dim"][0] if len(attrs["dim"]) == 1 else attrs["dim"]},
        float64=_lse_softmax_float64,
    )
)
