"""Shape and layout: transpose, permute, reshape, expand, flip, indexing, and filled tensors.

>>> import symgrad as sg
>>> x = sg.symbols("x", (2, 3))
>>> x.T.shape, x[0, 1:].shape
((3, 2), (2,))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ..core.dims import Shape, broadcast_shapes, format_shape, reshape_target
from ..core.errors import ShapeError
from ..core.indexing import apply_index, index_grad_fn, index_shape
from ..core.registry import Op, register
from ..core.tensor import apply
from .calculus import unbroadcast


# ── shape and layout ───────────────────────────────────────────────────────
def _transpose_shape(shape: Shape, dim0: int, dim1: int) -> Shape:
    if not shape:  # torch allows transpose(0, 0) and transpose(-1, 0) of a 0-d tensor
        return ()
    out = list(shape)
    out[dim0], out[dim1] = out[dim1], out[dim0]
    return tuple(out)


def _transpose(a: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    return np.swapaxes(a, dim0, dim1) if a.ndim else a


def _permute_shape(shape: Shape, dims: tuple[int, ...]) -> Shape:
    if len(dims) != len(shape):
        raise ShapeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {len(shape)} is not equal to len(dims) = {len(dims)} "
            f"(shape {format_shape(shape)}, dims {dims})"
        )
    if len(set(dims)) != len(dims):
        raise ShapeError(f"permute(): duplicate dims are not allowed. (shape {format_shape(shape)}, dims {dims})")
    return tuple(shape[d] for d in dims)


def _inverse(order: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(order)
    for position, d in enumerate(order):
        out[d] = position
    return tuple(out)


def _expand_shape(a: Shape, shape: tuple) -> Shape:
    target = tuple(shape)
    if len(target) < len(a):
        raise ShapeError(
            f"expand: the number of sizes provided ({len(target)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({len(a)}) (shape {format_shape(a)})"
        )
    broadcast = broadcast_shapes(a, target)
    if broadcast != target:
        raise ShapeError(
            f"The expanded size of the tensor must match the existing size (shapes {format_shape(a)} and "
            f"{format_shape(target)})"
        )
    return target


def _index_backward(g: np.ndarray, shape: tuple, index: tuple) -> np.ndarray:
    out = np.full(shape, sympy.S.Zero, dtype=object)
    out[index] = g.item() if g.ndim == 0 else g  # a 0-d object array would be stored as an element
    return out


def _torch_index_backward(torch: Any, g: Any, shape: tuple, index: tuple) -> Any:
    out = torch.zeros(shape, dtype=g.dtype)
    out[index] = g
    return out


def _transpose_text(attrs: dict, inputs: tuple) -> str:
    """``.T`` for a matrix, ``.mT`` for the last two dims of a batch, else ``.transpose(i, j)``."""
    ndim, pair = (len(inputs[0].shape) if inputs else 0), sorted((attrs["dim0"], attrs["dim1"]))
    if ndim == 2 and pair == [0, 1]:
        return ".T"
    if ndim >= 2 and pair == [ndim - 2, ndim - 1]:
        return ".mT"
    return f".transpose({attrs['dim0']}, {attrs['dim1']})"


def _permute_text(dims: tuple[int, ...]) -> str:
    return ".T" if dims == tuple(reversed(range(len(dims)))) and len(dims) == 2 else f".permute{dims}"


register(
    Op(
        "transpose",
        _transpose_shape,
        _transpose,
        lambda torch, a, dim0, dim1: a.transpose(dim0, dim1),
        "{0}{transpose_text}",
        "{0}^{{\\top}}",
        "TransposeBackward0",
        saves=False,
        vjp=lambda g, out, a, dim0, dim1: (g if dim0 == dim1 else g.transpose(dim0, dim1),),
        tags=frozenset({"layout", "linear"}),
        spell=lambda attrs, inputs: {"transpose_text": _transpose_text(attrs, inputs)},
        float64=lambda a, dim0, dim1: np.swapaxes(a, dim0, dim1) if a.ndim else a,
    )
)  # 0-d: dim0 == dim1
register(
    Op(
        "permute",
        _permute_shape,
        lambda a, dims: np.transpose(a, dims),
        lambda torch, a, dims: a.permute(tuple(dims)),  # a.permute() (no dims) fails for 0-d tensors
        "{0}{permute_text}",
        "{0}^{{\\top}}",
        "PermuteBackward0",
        saves=False,
        vjp=lambda g, out, a, dims: (g.permute(*_inverse(dims)),),
        tags=frozenset({"layout", "linear"}),
        spell=lambda attrs, inputs: {"permute_text": _permute_text(tuple(attrs["dims"]))},
        float64=lambda a, dims: np.transpose(a, dims),
    )
)
register(
    Op(
        "reshape",
        lambda a, shape: reshape_target(a, shape),
        lambda a, shape: a.reshape(shape),
        lambda torch, a, shape: a.reshape(shape),
        "{0}.reshape({shape_args})",
        "{0}",
        "ViewBackward0",
        saves=False,
        vjp=lambda g, out, a, shape: (g.reshape(*a.shape),),
        tags=frozenset({"layout", "linear"}),
        float64=lambda a, shape: a.reshape(shape),
    )
)
register(
    Op(
        "expand",
        _expand_shape,
        lambda a, shape: np.broadcast_to(a, shape).copy(),
        lambda torch, a, shape: a.expand(*shape),
        "{0}.expand({shape_args})",
        "{0}",
        "ExpandBackward0",
        saves=False,
        vjp=lambda g, out, a, shape: (unbroadcast(g, a.shape),),
        tags=frozenset({"layout", "linear"}),
        float64=lambda a, shape: np.broadcast_to(a, shape),
    )
)
register(
    Op(
        "flip",
        lambda a, dim: a,
        lambda a, dim: np.flip(a, dim).copy(),
        lambda torch, a, dim: a.flip(dim),
        "{0}.flip({dim})",
        r"\operatorname{{flip}}\left({0}\right)",
        "FlipBackward0",
        saves=False,
        vjp=lambda g, out, a, dim: (g.flip(dim),),
        tags=frozenset({"linear"}),
        float64=lambda a, dim: np.flip(a, dim),
    )
)
register(
    Op(
        "index",
        lambda a, index, via: index_shape(a, index),
        lambda a, index, via: apply_index(a, index),
        lambda torch, a, index, via: a[index],
        "{0}[{index_text}]",
        "{0}_{{{index_text}}}",
        lambda inputs, index, via: "UnbindBackward0" if via == "unbind" else index_grad_fn(index),
        saves=False,
        vjp=lambda g, out, a, index, via: (_index_vjp(g, a, index),),
        tags=frozenset({"layout", "linear"}),
        float64=lambda a, index, via: np.asarray(a[index]),
    )
)


def _index_vjp(g, a, index: tuple):
    """An unsqueeze (only ``None``, ``:`` and ``...``) is undone by indexing 0; anything else scatters into zeros."""
    if all(i is None or i is Ellipsis or i == slice(None) for i in index):
        return g[tuple(0 if i is None else i for i in index)]
    return apply("index_backward", g, shape=a.shape, index=index)


register(
    Op(
        "index_backward",
        lambda g, shape, index: tuple(shape),
        _index_backward,
        _torch_index_backward,
        "index_backward({0}, {shape}, [{index_text}])",
        r"\operatorname{{scatter}}\left({0}\right)",
        "none",
        saves=False,
        vjp=lambda g, out, x, shape, index: (x[index],),
        tags=frozenset({"linear"}),
    )
)
register(
    Op(
        "full",
        lambda shape, value: tuple(shape),
        lambda shape, value: np.full(shape, sympy.sympify(value), dtype=object),
        lambda torch, shape, value: torch.full(tuple(shape), float(value), dtype=torch.float64),
        "torch.full({shape}, {value})",
        r"{value}",
        "none",
        differentiable=False,
        vjp=lambda g, out, shape, value: (),
        tags=frozenset({"creation"}),
    )
)
