"""Shape and layout: transpose, permute, reshape, expand, flip, basic indexing, joining (``cat``, any number of
inputs), ``narrow``, constant padding, triangles and diagonals, and filled tensors.

``cat``'s VJP narrows the gradient back into pieces, ``narrow``'s pads it with zeros and ``pad``'s crops it (a
negative width), so their laws hold for symbolic sizes and offsets.

>>> import symgrad as sg
>>> x = sg.symbols("x", (2, 3))
>>> x.T.shape, x[0, 1:].shape, sg.law(x.narrow(1, 1, 2), [x], [sg.symbols("g", (2, 2))])[0].name
((3, 2), (2,), 'torch.nn.functional.pad(g, (1, 0), value=0)')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from ..core.arrays import elementwise
from ..core.dims import (
    Dim,
    Shape,
    as_dim,
    broadcast_shapes,
    format_shape,
    reshape_at_stand_ins,
    reshape_target,
    same_dim,
    stood_in,
)
from ..core.dtypes import is_floating
from ..core.errors import ShapeError, UnsupportedError
from ..core.ieee import rounded_to
from ..core.indexing import apply_index, index_grad_fn, index_shape
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from . import functions
from .batched import lift, shift, shift_index
from .calculus import unbroadcast
from .rows import same_shape


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


def _layout_latex(name: str, dims: tuple, ndim: int) -> dict:
    """A transpose or permute as LaTeX around its input: a matrix's is ``X^{\\top}``; any other names its dims,
    ``\\operatorname{transpose}_{1,2}(X)``, ``\\operatorname{permute}_{2,0,1}(X)``, so different ones differ."""
    if ndim == 2 and tuple(dims) in ((0, 1), (1, 0)):
        return {f"{name}_open": "", f"{name}_close": "^{\\top}"}
    return {
        f"{name}_open": rf"\operatorname{{{name}}}_{{{','.join(map(str, dims))}}}\left(",
        f"{name}_close": r"\right)",
    }


def _reshape_latex(shape: tuple) -> str:
    """The target shape as a subscript: ``(m,6)``."""
    return "(" + ",".join(sympy.latex(sympy.sympify(d)) for d in shape) + ")"


# ── batching rules (see symgrad.ops.batched) ──────────────────────────────
def _permute_batch(inputs: list, flags: list, nb: int, dims: tuple) -> Any:
    return inputs[0].permute(*range(nb), *shift(dims, nb))


def _reshape_batch(inputs: list, flags: list, nb: int, shape: tuple) -> Any:
    return apply("reshape", inputs[0], shape=tuple(inputs[0].shape[:nb]) + tuple(shape))


def _expand_batch(inputs: list, flags: list, nb: int, shape: tuple) -> Any:
    x = inputs[0]
    lifted = lift(x, nb, len(shape) - (x.ndim - nb))
    return apply("expand", lifted, shape=tuple(x.shape[:nb]) + tuple(shape))


def _index_batch(inputs: list, flags: list, nb: int, index: tuple, via: str) -> Any:
    return apply("index", inputs[0], index=shift_index(index, nb), via=via)


def _index_backward_batch(inputs: list, flags: list, nb: int, shape: tuple, index: tuple) -> Any:
    g = inputs[0]
    return apply("index_backward", g, shape=tuple(g.shape[:nb]) + tuple(shape), index=shift_index(index, nb))


def _pad_batch(inputs: list, flags: list, nb: int, widths: tuple, value: Any) -> Any:
    return apply("pad", inputs[0], widths=((0, 0),) * nb + tuple(widths), value=value)


register(
    Op(
        "transpose",
        _transpose_shape,
        _transpose,
        lambda torch, a, dim0, dim1: a.transpose(dim0, dim1),
        "{0}{transpose_text}",
        "{transpose_open}{0}{transpose_close}",
        "TransposeBackward0",
        saves=False,
        vjp=lambda g, out, a, dim0, dim1: (g if dim0 == dim1 else g.transpose(dim0, dim1),),
        tags=frozenset({"layout", "linear"}),
        spell=lambda attrs, inputs: {
            "transpose_text": _transpose_text(attrs, inputs),
            **_layout_latex("transpose", sorted((attrs["dim0"], attrs["dim1"])), len(inputs[0].shape) if inputs else 0),
        },
        float64=lambda a, dim0, dim1: np.swapaxes(a, dim0, dim1) if a.ndim else a,
        batch="dims",
    )
)  # 0-d: dim0 == dim1
register(
    Op(
        "permute",
        _permute_shape,
        lambda a, dims: np.transpose(a, dims),
        lambda torch, a, dims: a.permute(tuple(dims)),  # a.permute() (no dims) fails for 0-d tensors
        "{0}{permute_text}",
        "{permute_open}{0}{permute_close}",
        "PermuteBackward0",
        saves=False,
        vjp=lambda g, out, a, dims: (g.permute(*_inverse(dims)),),
        tags=frozenset({"layout", "linear"}),
        spell=lambda attrs, inputs: {
            "permute_text": _permute_text(tuple(attrs["dims"])),
            **_layout_latex("permute", tuple(attrs["dims"]), len(attrs["dims"])),
        },
        float64=lambda a, dims: np.transpose(a, dims),
        batch=_permute_batch,
    )
)
register(
    Op(
        "reshape",
        lambda a, shape: reshape_target(a, shape),
        lambda a, shape: a.reshape(shape),
        lambda torch, a, shape: a.reshape(shape),
        "{0}.reshape({shape_args})",
        r"\operatorname{{reshape}}_{{{reshape_latex}}}\left({0}\right)",
        "ViewBackward0",
        saves=False,
        vjp=lambda g, out, a, shape: (g.reshape(*a.shape),),
        tags=frozenset({"layout", "linear"}),
        spell=lambda attrs, inputs: {"reshape_latex": _reshape_latex(tuple(attrs["shape"]))},
        float64=lambda a, shape: a.reshape(shape),
        batch=_reshape_batch,
        stand_in_attrs=lambda mapping, source, shape: {"shape": reshape_at_stand_ins(mapping, source, shape)},
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
        batch=_expand_batch,
        stand_in_attrs=lambda mapping, a, shape: {"shape": stood_in(shape, mapping)},
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
        batch="dims",
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
        tags=frozenset({"layout", "linear", "positions"}),
        float64=lambda a, index, via: np.asarray(a[index]),
        batch=_index_batch,
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
        vjp=lambda g, out, x, shape, index: (g[index],),  # the adjoint of a scatter is the gather
        tags=frozenset({"linear", "positions"}),
        batch=_index_backward_batch,
    )
)


# ── joining, narrowing and padding ─────────────────────────────────────────
def _total(sizes: list) -> Dim:
    out: Dim = 0
    for size in sizes:
        out = out + size
    return as_dim(out) if isinstance(out, sympy.Expr) else out


def _cat_shape(*shapes: Shape, dim: int) -> Shape:
    first = shapes[0]
    for number, shape in enumerate(shapes[1:], start=1):
        if len(shape) != len(first):
            raise ShapeError(f"Tensors must have same number of dimensions: got {len(first)} and {len(shape)}")
        for axis, (want, got) in enumerate(zip(first, shape)):
            if axis != dim and not same_dim(want, got):
                raise ShapeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {want} but got size "
                    f"{got} for tensor number {number} in the list."
                )
    return (*first[:dim], _total([shape[dim] for shape in shapes]), *first[dim + 1 :])


def _cat_vjp(g, out, *parts, dim: int) -> tuple:
    """Each input's gradient is its stretch of ``g`` along ``dim`` (a narrow, so offsets may be symbolic)."""
    if len(parts) == 1:
        return (g,)
    grads, start = [], 0
    for part in parts:
        grads.append(apply("narrow", g, dim=dim, start=start, length=part.shape[dim]))
        start = _total([start, part.shape[dim]])
    return tuple(grads)


def _narrow_shape(a: Shape, dim: int, start: Dim, length: Dim) -> Shape:
    return (*a[:dim], length, *a[dim + 1 :])


def _narrow(a: np.ndarray, dim: int, start: int, length: int) -> np.ndarray:
    return a[(slice(None),) * dim + (slice(start, start + length),)]


def _narrow_latex(attrs: dict, inputs: tuple) -> dict:
    ndim = len(inputs[0].shape) if inputs else attrs["dim"] + 1
    start, length = attrs["start"], attrs["length"]
    stop = sympy.sympify(start) + length
    parts = [r"\cdot"] * ndim
    parts[attrs["dim"]] = f"{sympy.latex(sympy.sympify(start))}{{:}}{sympy.latex(stop)}"
    return {"narrow_latex": ",".join(parts)}


def _pad_shape(a: Shape, widths: tuple, value: object) -> Shape:
    out = []
    for axis, (size, (low, high)) in enumerate(zip(a, widths)):
        new = size + low + high
        if all(isinstance(v, int) for v in (size, low, high)) and size + min(low, 0) + min(high, 0) < 0:
            raise ShapeError("narrow(): length must be non-negative.")  # torch crops first
        if isinstance(new, int) and new < 0:
            raise ShapeError(
                f"The input size {size}, plus negative padding {low} and {high} resulted in a negative output "
                f"size, which is invalid. Check dimension {axis} of your input."
            )
        out.append(as_dim(new))
    return tuple(out)


def _pad_places(shape: tuple, widths: tuple) -> tuple[tuple, tuple]:
    """Where the (cropped) input lands in the output, and which part of the input that is."""
    source, target = [], []
    for size, (low, high) in zip(shape, widths):
        begin, end = max(-low, 0), size - max(-high, 0)
        if end < begin:
            raise ShapeError("narrow(): length must be non-negative.")
        source.append(slice(begin, end))
        target.append(slice(max(low, 0), max(low, 0) + end - begin))
    return tuple(source), tuple(target)


def _pad(a: np.ndarray, widths: tuple, value: object, fill: object) -> np.ndarray:
    shape = _pad_shape(a.shape, widths, value)
    out = np.full(shape, fill, dtype=a.dtype if a.dtype != object else object)
    source, target = _pad_places(a.shape, widths)
    out[target] = a[source]
    return out


def _number(value: object) -> str:
    """A fill value as Python code (``float('nan')`` and ``float('inf')`` are not literals)."""
    number = float(value)
    return repr(value) if math.isfinite(number) else f"float('{number}')"


def pad_args(widths: tuple) -> tuple:
    """torch's flat ``pad`` argument: (left, right) of the last dim first, trailing all-zero pairs dropped."""
    flat = [w for low_high in reversed(widths) for w in low_high]
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    return tuple(flat)


register(
    Op(
        "cat",
        _cat_shape,
        lambda *parts, dim: np.concatenate(parts, axis=dim),
        lambda torch, *parts, dim: torch.cat(parts, dim),
        "torch.cat([{inputs}], {dim})",
        r"\operatorname{{cat}}_{{{dim}}}\left({inputs}\right)",
        "CatBackward0",
        saves=False,
        vjp=_cat_vjp,
        tags=frozenset({"linear"}),
        float64=lambda *parts, dim: np.concatenate(parts, axis=dim),
        batch="dims",
    )
)
register(
    Op(
        "narrow",
        _narrow_shape,
        _narrow,
        lambda torch, a, dim, start, length: a.narrow(dim, int(start), int(length)),
        "{0}.narrow({dim}, {start}, {length})",
        "{0}_{{{narrow_latex}}}",
        "SliceBackward0",
        saves=False,
        vjp=lambda g, out, a, dim, start, length: (
            apply(
                "pad",
                g,
                widths=tuple(
                    (start, a.shape[dim] - start - length) if axis == dim else (0, 0) for axis in range(len(a.shape))
                ),
                value=0,
            ),
        ),
        tags=frozenset({"layout", "linear", "positions"}),
        spell=_narrow_latex,
        float64=_narrow,
        batch="dims",
    )
)
register(
    Op(
        "pad",
        _pad_shape,
        lambda a, widths, value: _pad(a, widths, value, sympy.sympify(value)),
        lambda torch, a, widths, value: torch.nn.functional.pad(a, [int(w) for w in pad_args(widths)], value=value),
        "torch.nn.functional.pad({0}, {pad_text}, value={pad_value})",
        r"\operatorname{{pad}}\left({0}\right)",
        "ConstantPadNdBackward0",
        saves=False,
        vjp=lambda g, out, a, widths, value: (
            apply("pad", g, widths=tuple((-low, -high) for low, high in widths), value=0),
        ),
        spell=lambda attrs, inputs: {"pad_text": str(pad_args(attrs["widths"])), "pad_value": _number(attrs["value"])},
        float64=lambda a, widths, value: _pad(a, widths, value, float(value)),
        batch=_pad_batch,
    )
)


# ── triangles and diagonals ────────────────────────────────────────────────
def _triangle(name: str, keep) -> None:
    def shape(a: Shape, diagonal: int) -> Shape:
        if len(a) < 2:
            raise ShapeError(f"{name}: input tensor must have at least 2 dimensions")
        return a

    def meaning(a: np.ndarray, diagonal: int) -> np.ndarray:
        rows, cols = np.indices(a.shape[-2:])
        return np.where(keep(cols - rows, diagonal), a, sympy.S.Zero)

    register(
        Op(
            name,
            shape,
            meaning,
            lambda torch, a, diagonal: getattr(torch, name)(a, diagonal),
            f"{{0}}.{name}({{diagonal_arg}})",
            r"\operatorname{{" + name + r"}}_{{{diagonal}}}\left({0}\right)",
            f"{name.capitalize()}Backward0",
            saves=False,
            vjp=lambda g, out, a, diagonal: (apply(name, g, diagonal=diagonal),),
            tags=frozenset({"linear"}),
            spell=lambda attrs, inputs: {"diagonal_arg": str(attrs["diagonal"]) if attrs["diagonal"] else ""},
            batch="trailing",
            float64=lambda a, diagonal: getattr(np, name)(a, diagonal),
        )
    )


_triangle("tril", lambda offset, k: offset <= k)
_triangle("triu", lambda offset, k: offset >= k)


def diagonal_length(rows: Dim, cols: Dim, offset: int) -> Dim:
    """The length of the ``offset`` diagonal of a rows × cols matrix (0 when it misses the matrix)."""
    length = sympy.Min(rows, cols - offset) if offset >= 0 else sympy.Min(rows + offset, cols)
    length = sympy.Max(length, 0)
    if length.has(sympy.Min, sympy.Max):
        raise UnsupportedError(
            f"the diagonal {offset} of a {rows}×{cols} matrix has a length symgrad cannot tell for every size "
            "(which side is shorter?); give concrete sizes"
        )
    return as_dim(length)


def _diagonal_shape(a: Shape, offset: int, dim1: int, dim2: int) -> Shape:
    rest = tuple(d for axis, d in enumerate(a) if axis not in (dim1, dim2))
    return (*rest, diagonal_length(a[dim1], a[dim2], offset))


def _diagonal_backward(g: np.ndarray, shape: tuple, offset: int, dim1: int, dim2: int, fill: object) -> np.ndarray:
    out = np.full(tuple(shape), fill, dtype=object if g.dtype == object else g.dtype)
    moved = np.moveaxis(out, (dim1, dim2), (-2, -1))  # a view: writing to it writes ``out``
    length = g.shape[-1] if g.ndim else 0
    rows, cols = np.arange(length) + max(-offset, 0), np.arange(length) + max(offset, 0)
    moved[..., rows, cols] = g
    return out


def _diagonal_args(attrs: dict) -> str:
    """``torch.diagonal``'s arguments after the input, left out where they are the defaults."""
    offset, dim1, dim2 = attrs["offset"], attrs["dim1"], attrs["dim2"]
    return "" if (offset, dim1, dim2) == (0, 0, 1) else f", {offset}, {dim1}, {dim2}"


def _diagonal_backward_text(attrs: dict, inputs: tuple) -> dict:
    """A vector on a diagonal of a square matrix is ``torch.diag(v, offset)``; any other is aten's diagonal_backward."""
    shape, offset = tuple(attrs["shape"]), attrs["offset"]
    vector = bool(inputs) and len(inputs[0].shape) == 1
    side = inputs[0].shape[0] + abs(offset) if vector else None
    square = vector and len(shape) == 2 and same_dim(shape[0], side) and same_dim(shape[1], side)
    if square and (attrs["dim1"], attrs["dim2"]) == (0, 1):
        return {"diagonal_call": "torch.diag", "diagonal_args": f", {offset}" if offset else ""}
    dim1, dim2 = sorted(d % len(shape) for d in (attrs["dim1"], attrs["dim2"])) if shape else (0, 0)
    if inputs and offset == 0 and dim1 != dim2 and _embeds(inputs[0].shape, shape, dim1, dim2):
        placed = "" if (dim1, dim2) == (len(shape) - 2, len(shape) - 1) else f", dim1={dim1}, dim2={dim2}"
        return {"diagonal_call": "torch.diag_embed", "diagonal_args": placed}
    listed = ", ".join(str(d) for d in shape)
    arguments = f", [{listed}], {offset}, {attrs['dim1']}, {attrs['dim2']}"
    return {"diagonal_call": "torch.ops.aten.diagonal_backward", "diagonal_args": arguments}


def _embeds(given: tuple, shape: tuple, dim1: int, dim2: int) -> bool:
    """Whether ``torch.diag_embed(g, 0, dim1, dim2)`` makes ``shape`` from ``g`` of shape ``given``: the diagonal's
    dims both of g's last size, the others g's leading dims in order (what aten's diagonal_backward does then)."""
    rest = [d for k, d in enumerate(shape) if k not in (dim1, dim2)]
    return (
        len(given) == len(shape) - 1
        and same_dim(shape[dim1], given[-1])
        and same_dim(shape[dim2], given[-1])
        and all(same_dim(a, b) for a, b in zip(rest, given[:-1]))
    )


register(
    Op(
        "diagonal",
        _diagonal_shape,
        lambda a, offset, dim1, dim2: np.diagonal(a, offset, dim1, dim2).copy(),
        lambda torch, a, offset, dim1, dim2: torch.diagonal(a, offset, dim1, dim2),
        "torch.diagonal({0}{diagonal_args})",
        r"\operatorname{{diag}}\left({0}\right)",
        "DiagonalBackward0",
        saves=False,
        vjp=lambda g, out, a, offset, dim1, dim2: (
            apply("diagonal_backward", g, shape=a.shape, offset=offset, dim1=dim1, dim2=dim2),
        ),
        tags=frozenset({"layout", "linear", "positions"}),
        spell=lambda attrs, inputs: {"diagonal_args": _diagonal_args(attrs)},
        float64=lambda a, offset, dim1, dim2: np.diagonal(a, offset, dim1, dim2),
        batch="dims",
    )
)
register(
    Op(
        "diagonal_backward",
        lambda g, shape, offset, dim1, dim2: tuple(shape),
        lambda g, shape, offset, dim1, dim2: _diagonal_backward(g, shape, offset, dim1, dim2, sympy.S.Zero),
        lambda torch, g, shape, offset, dim1, dim2: torch.ops.aten.diagonal_backward(
            g, [int(d) for d in shape], offset, dim1, dim2
        ),
        "{diagonal_call}({0}{diagonal_args})",
        r"\operatorname{{diag}}\left({0}\right)",
        "DiagEmbedBackward0",
        saves=False,
        vjp=lambda g, out, x, shape, offset, dim1, dim2: (apply("diagonal", g, offset=offset, dim1=dim1, dim2=dim2),),
        tags=frozenset({"linear", "positions"}),
        spell=_diagonal_backward_text,
        float64=lambda g, shape, offset, dim1, dim2: _diagonal_backward(g, shape, offset, dim1, dim2, 0.0),
    )
)


# ── dtype conversions (x.float(), x.double(), x.to(torch.float32), x.long()) ──────────────────────────────────
def _as_number(entry: Any) -> Any:
    """A bool entry as the integer torch gives it (True is 1); anything else as it is."""
    if entry in (sympy.true, True):
        return sympy.S.One
    if entry in (sympy.false, False):
        return sympy.S.Zero
    return entry


def _to_integer(entry: Any, dtype: str) -> Any:
    entry = _as_number(entry)
    if dtype == "bool":
        return functions.compare(sympy.Ne, entry, sympy.S.Zero)
    return functions.trunc(entry)  # torch truncates toward zero


register(
    Op(
        name="to_float",
        shape=same_shape,
        meaning=lambda a, dtype: elementwise(_as_number, a),
        torch=lambda torch, a, dtype: a.to(getattr(torch, dtype)),
        code="{0}.to(torch.{dtype})",
        latex="{0}",
        grad_fn="ToCopyBackward0",
        saves=False,
        vjp=lambda g, out, a, dtype: (cast_like(g, a) if is_floating(a.dtype) else None,),
        tags=frozenset({"linear"}),
        float64=lambda a, dtype: rounded_to(np.asarray(a, dtype=float), dtype),
        batch="pointwise",
    )
)
register(
    Op(
        name="to_like",
        shape=lambda a, like, dtype: a,
        meaning=lambda a, like, dtype: a.copy(),
        torch=lambda torch, a, like, dtype: a.to(like.dtype),
        code="{0}.to({1}.dtype)",
        latex="{0}",
        grad_fn="ToCopyBackward0",
        saves=False,
        vjp=lambda g, out, a, like, dtype: (cast_like(g, a), None),
        tags=frozenset({"linear"}),
        # ``dtype`` is the traced one: the numbers round through it as torch's do (a float16 input's gradient
        # is a float16); the emitted code reads ``like.dtype`` at run time
        float64=lambda a, like, dtype: rounded_to(np.asarray(a, dtype=float), dtype),
        batch="pointwise",
    )
)


def cast_like(g: Tensor, like: Tensor) -> Tensor:
    """``g.to(like.dtype)``: a gradient goes back to its input's dtype (torch's autograd engine casts every
    gradient so), whatever it is when the emitted code runs (a literal dtype would hold only for the traced one)."""
    node = apply("to_like", g, like, dtype=like.dtype)
    node.dtype = like.dtype
    return node


register(
    Op(
        name="to_integer",
        shape=same_shape,
        meaning=lambda a, dtype: elementwise(lambda e: _to_integer(e, dtype), a),
        torch=lambda torch, a, dtype: a.to(getattr(torch, dtype)),
        code="{0}.to(torch.{dtype})",
        latex=r"\operatorname{{{dtype}}}\left({0}\right)",
        grad_fn="none",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, a, dtype: (None,),
        batch="pointwise",
    )
)


register(
    Op(
        name="clone",
        shape=same_shape,
        meaning=lambda a: a.copy(),
        torch=lambda torch, a: a.clone(),
        code="{0}.clone()",
        latex="{0}",
        grad_fn="CloneBackward0",
        saves=False,
        vjp=lambda g, out, a: (g,),
        tags=frozenset({"linear", "layout"}),
        float64=lambda a: np.array(a, copy=True),
        batch="pointwise",
    )
)
