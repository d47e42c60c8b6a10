"""Max pooling as four ops that close under differentiation, so that laws read ``maxpool`` and emitted code runs
torch's kernels (``max_pool2d(..., return_indices=True)`` forward, ``max_pool2d_with_indices_backward`` backward):

- ``max_pool(x)``: the largest in-bounds entry of each window (padding is never picked);
- ``max_pool_indices(x)``: the flat spatial index of the entry each window picks, torch's ``return_indices``
  (the first maximum in row-major window order, or the last nan);
- ``max_pool_backward(g, x, i)``: the VJP, each window's gradient added at the entry it picked;
- ``max_pool_gather(h, x, i)``: the adjoint of that in ``g``, each window reading ``h`` at its pick.

``i`` is always ``max_pool_indices(x)``: the backward ops read it so that emitted code saves the indices the
forward's kernel returns, as autograd does; their meanings read ``x``. Attributes: ``kernel``, ``stride``,
``padding``, ``dilation`` (one int per spatial dim), ``ceil_mode`` and ``pooled`` (the output's spatial sizes).
Any leading dims are allowed; torch's kernels see them merged into one.

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> x = sg.tensor([[[1.0, 3.0, 3.0, 2.0]]], name="x")
>>> geometry = dict(kernel=(2,), stride=(1,), padding=(0,), dilation=(1,), ceil_mode=False, pooled=(3,))
>>> apply("max_pool", x, **geometry).tolist(), max_pool_indices(x, geometry).tolist()
([[[3.0, 3.0, 3.0]]], [[[1, 1, 2]]])
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any

import numpy as np
import sympy

from ..core.dims import stood_in
from ..core.errors import TorchRuntimeError
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from .batched import batch_sizes, repeated
from .functions import first_max, first_max_indicator


@functools.lru_cache(maxsize=256)
def _windows(sizes: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple, out: tuple) -> tuple:
    """For each output position (row-major), the flat spatial indices of its in-bounds entries, in row-major order
    of the kernel offsets: the entries torch's kernel compares, in its order."""
    strides = [math.prod(sizes[d + 1 :]) for d in range(len(sizes))]
    windows = []
    for position in itertools.product(*(range(o) for o in out)):
        picks = []
        for offsets in itertools.product(*(range(k) for k in kernel)):
            q = [o * s - p + k * d for o, s, p, k, d in zip(position, stride, padding, offsets, dilation)]
            if all(0 <= c < size for c, size in zip(q, sizes)):
                picks.append(sum(c * st for c, st in zip(q, strides)))
        windows.append(tuple(picks))
    return tuple(windows)


def windows_out_length(size: int, kernel: int, stride: int, padding: int, dilation: int, ceil_mode: bool) -> int:
    """torch's ``pooling_output_shape``: how many windows fit, a partial last one counted with ``ceil_mode``
    when it starts inside the input or its left padding.

    >>> windows_out_length(5, kernel=3, stride=2, padding=1, dilation=1, ceil_mode=False)
    3
    """
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _stand_in_geometry(mapping: dict[int, int], *shapes: tuple, **attrs: Any) -> dict:
    """The pooled sizes of the input (the op's last input) at stand-in sizes: the windows that fit it."""
    n = len(attrs["kernel"])
    sizes = stood_in(shapes[-1][len(shapes[-1]) - n :], mapping)
    keys = ("kernel", "stride", "padding", "dilation")
    pooled = tuple(
        windows_out_length(size, *(attrs[k][d] for k in keys), attrs["ceil_mode"]) for d, size in enumerate(sizes)
    )
    return {**attrs, "pooled": pooled}


def _windows_of(shape: tuple, attrs: dict) -> tuple:
    """The windows (see :func:`_windows`) of an input of ``shape``."""
    n = len(attrs["kernel"])
    sizes = tuple(int(s) for s in shape[len(shape) - n :])
    keys = ("kernel", "stride", "padding", "dilation", "pooled")
    return _windows(sizes, *(tuple(attrs[k]) for k in keys))


def _flat(a: np.ndarray, n: int) -> np.ndarray:
    """Entries as (leading positions, flat spatial index)."""
    return a.reshape(-1, math.prod(a.shape[a.ndim - n :]))


def _pooled_shape(x: tuple, **attrs) -> tuple:
    n = len(attrs["kernel"])
    if len(x) < n + 1:
        raise TorchRuntimeError(f"max_pool{n}d: Expected {n + 1}D or {n + 2}D input, but got {len(x)}D input")
    return (*x[: len(x) - n], *attrs["pooled"])


def _picks(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, tuple]:
    n = len(attrs["kernel"])
    return _flat(x, n), _windows_of(x.shape, attrs)


def _max_pool_meaning(x: np.ndarray, **attrs) -> np.ndarray:
    flat, windows = _picks(x, attrs)
    out = np.array([[first_max([row[q] for q in w]) for w in windows] for row in flat], dtype=object)
    return out.reshape(_pooled_shape(x.shape, **attrs))


def _indices_meaning(x: np.ndarray, **attrs) -> np.ndarray:
    flat, windows = _picks(x, attrs)
    rows = []
    for row in flat:
        entries = [[row[q] for q in w] for w in windows]
        rows.append(
            [sympy.Add(*(q * first_max_indicator(e, i) for i, q in enumerate(w))) for w, e in zip(windows, entries)]
        )
    return np.array(rows, dtype=object).reshape(_pooled_shape(x.shape, **attrs))


def _backward_meaning(g: np.ndarray, x: np.ndarray, indices: np.ndarray, **attrs) -> np.ndarray:
    flat, windows = _picks(x, attrs)
    grads = _flat(g, len(attrs["kernel"]))
    out = np.full(flat.shape, sympy.S.Zero, dtype=object)
    for r, (row, grad) in enumerate(zip(flat, grads)):
        for o, w in enumerate(windows):
            entries = [row[q] for q in w]
            for i, q in enumerate(w):
                out[r, q] += grad[o] * first_max_indicator(entries, i)
    return out.reshape(x.shape)


def _gather_meaning(h: np.ndarray, x: np.ndarray, indices: np.ndarray, **attrs) -> np.ndarray:
    flat, windows = _picks(x, attrs)
    hs = _flat(h, len(attrs["kernel"]))
    out = [
        [sympy.Add(*(hrow[q] * first_max_indicator([row[p] for p in w], i) for i, q in enumerate(w))) for w in windows]
        for row, hrow in zip(flat, hs)
    ]
    return np.array(out, dtype=object).reshape(indices.shape)


def _picked(x: np.ndarray, attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(each window's picked flat index, its value) in float64, as torch's kernel picks: ``val > max || isnan``."""
    flat, windows = _picks(x, attrs)
    index = np.zeros((flat.shape[0], len(windows)), dtype=np.int64)
    value = np.zeros((flat.shape[0], len(windows)))
    for o, w in enumerate(windows):
        best, best_value = np.full(flat.shape[0], w[0]), flat[:, w[0]].astype(float)
        for q in w[1:]:
            v = flat[:, q].astype(float)
            better = (v > best_value) | np.isnan(v)
            best, best_value = np.where(better, q, best), np.where(better, v, best_value)
        index[:, o], value[:, o] = best, best_value
    return index, value


def _max_pool_float64(x: np.ndarray, **attrs) -> np.ndarray:
    return _picked(x, attrs)[1].reshape(_pooled_shape(x.shape, **attrs))


def _indices_float64(x: np.ndarray, **attrs) -> np.ndarray:
    return _picked(x, attrs)[0].reshape(_pooled_shape(x.shape, **attrs))


def _backward_float64(g: np.ndarray, x: np.ndarray, indices: np.ndarray, **attrs) -> np.ndarray:
    index = _picked(x, attrs)[0]
    out = np.zeros(_flat(x, len(attrs["kernel"])).shape)
    rows = np.arange(index.shape[0])[:, None].repeat(index.shape[1], 1)
    np.add.at(out, (rows, index), _flat(g, len(attrs["kernel"])))
    return out.reshape(x.shape)


def _gather_float64(h: np.ndarray, x: np.ndarray, indices: np.ndarray, **attrs) -> np.ndarray:
    index = _picked(x, attrs)[0]
    return np.take_along_axis(_flat(h, len(attrs["kernel"])), index, 1).reshape(indices.shape)


def _merged(pool: Any, x: Any, attrs: dict) -> Any:
    """torch's kernel on ``x`` with its leading dims merged into one (its kernels take one or two)."""
    n = len(attrs["kernel"])
    lead, out = tuple(x.shape[: x.dim() - n]), tuple(attrs["pooled"])
    return pool(x.reshape(-1, *x.shape[x.dim() - n :])).reshape(*lead, *out)


def _torch_pool(torch: Any, x: Any, *, indices: bool, **attrs) -> Any:
    pool = getattr(torch.nn.functional, f"max_pool{len(attrs['kernel'])}d")
    arguments = [attrs[k] for k in ("kernel", "stride", "padding", "dilation", "ceil_mode")]
    return _merged(lambda t: pool(t, *arguments, return_indices=True)[1 if indices else 0], x, attrs)


def _torch_backward(torch: Any, g: Any, x: Any, indices: Any, **attrs) -> Any:
    n = len(attrs["kernel"])
    lead = tuple(x.shape[: x.dim() - n])

    def merged(t: Any) -> Any:
        t = t.reshape(-1, *t.shape[t.dim() - n :])
        return t.unsqueeze(-2) if n == 1 else t

    geometry = _kernel_geometry(attrs)
    kernel = getattr(torch.ops.aten, f"max_pool{max(n, 2)}d_with_indices_backward")
    out = kernel(merged(g), merged(x), *geometry, merged(indices))
    return out.reshape(*lead, *x.shape[x.dim() - n :])


def _kernel_geometry(attrs: dict) -> list:
    """kernel, stride, padding, dilation and ceil_mode as torch's n-d kernels take them (1-D pools as 2-D)."""
    if len(attrs["kernel"]) == 1:
        return [(1, *attrs["kernel"]), (1, *attrs["stride"]), (0, *attrs["padding"]), (1, *attrs["dilation"]),
                attrs["ceil_mode"]]  # fmt: skip
    return [tuple(attrs[k]) for k in ("kernel", "stride", "padding", "dilation")] + [attrs["ceil_mode"]]


def _spelling(attrs: dict, inputs: tuple) -> dict:
    n = len(attrs["kernel"])
    keys = ("stride", "padding", "dilation", "ceil_mode")
    return {
        "pool": f"max_pool{n}d",
        "geometry": ", ".join(f"{k}={tuple(attrs[k]) if k != 'ceil_mode' else attrs[k]!r}" for k in keys),
        "kernel_size": tuple(attrs["kernel"]),
        "backward": f"max_pool{max(n, 2)}d_with_indices_backward",
        "backward_geometry": ", ".join(map(repr, _kernel_geometry(attrs))),
        "unsqueezed": ".unsqueeze(-2)" if n == 1 else "",
        "squeezed": ".squeeze(-2)" if n == 1 else "",
        "flat": -n,
    }


def _grad_fn(inputs: tuple, **attrs) -> str:
    n = len(attrs["kernel"])
    return "SqueezeBackward1" if n == 1 else f"MaxPool{n}DWithIndicesBackward0"


def max_pool_indices(x: Tensor, attrs: dict) -> Tensor:
    """torch's ``return_indices`` of a max pooling of ``x`` (int64)."""
    indices = apply("max_pool_indices", x, **attrs)
    indices.dtype = "int64"
    return indices


def _batched(name: str):
    """A batch rule: unbatched inputs repeated along the batch dims, then every leading dim merged into one, the
    op applied, and the dims split again."""

    def rule(inputs: list, flags: list, nb: int, **attrs) -> Tensor:
        sizes = batch_sizes(inputs, flags, nb)
        n = len(attrs["kernel"])
        full = [t if f else repeated(t, sizes) for t, f in zip(inputs, flags)]
        lead = full[0].shape[: full[0].ndim - n]
        merged = [t.reshape(math.prod(t.shape[: t.ndim - n]), *t.shape[t.ndim - n :]) for t in full]
        out = max_pool_indices(merged[0], attrs) if name == "max_pool_indices" else apply(name, *merged, **attrs)
        return out.reshape(*lead, *out.shape[1:])

    return rule


_LATEX = r"\operatorname{{maxpool}}\left({0}\right)"

register(
    Op(
        "max_pool",
        _pooled_shape,
        _max_pool_meaning,
        lambda torch, x, **attrs: _torch_pool(torch, x, indices=False, **attrs),
        "torch.nn.functional.{pool}({0}, {kernel_size}, {geometry})",
        _LATEX,
        _grad_fn,
        tuple_code="torch.nn.functional.{pool}({0}, {kernel_size}, {geometry}, return_indices=True)",
        vjp=lambda g, out, x, **attrs: (apply("max_pool_backward", g, x, max_pool_indices(x, attrs), **attrs),),
        spell=_spelling,
        float64=_max_pool_float64,
        stand_in_attrs=_stand_in_geometry,
        batch=_batched("max_pool"),
    )
)
register(
    Op(
        "max_pool_indices",
        _pooled_shape,
        _indices_meaning,
        lambda torch, x, **attrs: _torch_pool(torch, x, indices=True, **attrs),
        "torch.nn.functional.{pool}({0}, {kernel_size}, {geometry}, return_indices=True)[1]",
        r"\operatorname{{argmax}}\operatorname{{pool}}\left({0}\right)",
        "none",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, x, **attrs: (None,),
        companion_of=(("max_pool", 1),),
        spell=_spelling,
        float64=_indices_float64,
        stand_in_attrs=_stand_in_geometry,
        batch=_batched("max_pool_indices"),
    )
)
register(
    Op(
        "max_pool_backward",
        lambda g, x, indices, **attrs: x,
        _backward_meaning,
        _torch_backward,
        "torch.ops.aten.{backward}({0}{unsqueezed}, {1}{unsqueezed}, {backward_geometry}, {2}{unsqueezed}){squeezed}",
        r"\operatorname{{maxpool}}'_{{{1}}}\left({0}\right)",
        "MaxPool2DWithIndicesBackwardBackward0",
        vjp=lambda h, out, g, x, indices, **attrs: (apply("max_pool_gather", h, x, indices, **attrs), None, None),
        spell=_spelling,
        float64=_backward_float64,
        stand_in_attrs=_stand_in_geometry,
        batch=_batched("max_pool_backward"),
    )
)
register(
    Op(
        "max_pool_gather",
        lambda h, x, indices, **attrs: indices,
        _gather_meaning,
        lambda torch, h, x, indices, **attrs: (
            h.flatten(-len(attrs["kernel"])).gather(-1, indices.flatten(-len(attrs["kernel"]))).view_as(indices)
        ),
        "{0}.flatten({flat}).gather(-1, {2}.flatten({flat})).view_as({2})",
        r"\operatorname{{gather}}_{{{2}}}\left({0}\right)",
        "ViewBackward0",
        vjp=lambda g, out, h, x, indices, **attrs: (apply("max_pool_backward", g, x, indices, **attrs), None, None),
        spell=_spelling,
        float64=_gather_float64,
        stand_in_attrs=_stand_in_geometry,
        batch=_batched("max_pool_gather"),
    )
)
