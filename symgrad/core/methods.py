"""torch's tensor methods, as a mixin of :class:`symgrad.core.tensor.Tensor`.

Each method checks and normalises its arguments as torch does, then builds a
node with ``self.apply_op(op_name, *inputs, **attrs)``; the op itself (shape
rule, meaning, gradient) is a row of the op table.

>>> import symgrad as sg
>>> x = sg.symbols("x", (2, 3))
>>> x.sum(dim=1, keepdim=True).shape
(2, 1)
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import assignment, indexing
from .arrays import object_array, topk_positions
from .conversions import ConversionMethods
from .dims import as_shape, format_shape, normalize_dim, normalize_dims, numel, reshape_target
from .dtypes import is_floating
from .errors import ShapeError, TorchRuntimeError, TorchTypeError, TorchValueError, UnsupportedError
from .operators import OperatorMethods

if TYPE_CHECKING:
    from .tensor import Tensor

max_result = namedtuple("max", ["values", "indices"])  # torch.return_types.max's fields
min_result = namedtuple("min", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
_ROUNDING = {"trunc": "div_trunc", "floor": "div_floor"}


def dtype_label(dtype: Any) -> str:
    """``torch.float64``, ``"double"`` or ``"float64"`` as ``"float64"``."""
    text = str(dtype).replace("torch.", "")
    return {"float": "float32", "double": "float64", "long": "int64", "int": "int32"}.get(text, text)


def relabel(t: Any, dtype: Any) -> Any:
    """The node with another dtype label (a ``dtype=`` argument); numbers are float64 whatever the label."""
    if dtype is not None:
        t.dtype = dtype_label(dtype)
    return t


def _numpy_spellings(name: str, dim: Any, keepdim: Any, aliases: dict) -> tuple[Any, Any]:
    """``dim`` and ``keepdim`` from torch's NumPy-style keywords ``axis`` and ``keepdims``, which it also accepts."""
    unknown = set(aliases) - {"axis", "keepdims"}
    if unknown:
        raise TorchTypeError(f"{name}() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    return aliases.get("axis", dim), aliases.get("keepdims", keepdim)


class TensorMethods(OperatorMethods, ConversionMethods):
    """The torch methods of a symbolic tensor (arithmetic, reductions, layout, functions)."""

    shape: tuple
    ndim: int
    dtype: str

    def add(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self + (other if alpha == 1 else alpha * other)

    def sub(self, other: Any, *, alpha: Any = 1) -> Tensor:
        return self - (other if alpha == 1 else alpha * other)

    def mul(self, other: Any) -> Tensor:
        return self * other

    def div(self, other: Any, *, rounding_mode: str | None = None) -> Tensor:
        if rounding_mode is None:
            return self / other
        if rounding_mode not in _ROUNDING:
            raise TorchValueError(
                f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
            )
        return self.apply_op(_ROUNDING[rounding_mode], self, other)

    def true_divide(self, other: Any) -> Tensor:
        return self / other

    def pow(self, exponent: Any) -> Tensor:
        return self**exponent

    def neg(self) -> Tensor:
        return -self

    def mm(self, other: Tensor) -> Tensor:
        return self.apply_op("mm", self, other)

    def matmul(self, other: Tensor) -> Tensor:
        return self.apply_op("matmul", self, other)

    def mv(self, vec: Tensor) -> Tensor:
        """The product of this matrix and a vector, as torch.Tensor.mv."""
        if self.ndim != 2 or vec.ndim != 1:
            raise ShapeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim}")
        return self.apply_op("matmul", self, vec)

    def exp(self) -> Tensor:
        return self.apply_op("exp", self)

    def log(self) -> Tensor:
        return self.apply_op("log", self)

    def sin(self) -> Tensor:
        return self.apply_op("sin", self)

    def cos(self) -> Tensor:
        return self.apply_op("cos", self)

    def tanh(self) -> Tensor:
        return self.apply_op("tanh", self)

    def sigmoid(self) -> Tensor:
        return self.apply_op("sigmoid", self)

    def relu(self) -> Tensor:
        return self.apply_op("relu", self)

    def abs(self) -> Tensor:
        return self.apply_op("abs", self)

    def sqrt(self) -> Tensor:
        return self.apply_op("sqrt", self)

    # ── reductions ────────────────────────────────────────────────────────
    def sum(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None, **aliases: Any
    ) -> Tensor:
        """The sum over ``dim`` (all by default); ``dtype`` converts first, as torch's (``axis`` and ``keepdims``
        are torch's NumPy spellings of ``dim`` and ``keepdim``)."""
        dim, keepdim = _numpy_spellings("sum", dim, keepdim, aliases)
        source = self if dtype is None else self.to(dtype)
        return self.apply_op("sum", source, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def mean(
        self, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: Any = None, **aliases: Any
    ) -> Tensor:
        dim, keepdim = _numpy_spellings("mean", dim, keepdim, aliases)
        source = self if dtype is None else self.to(dtype)
        if not is_floating(source.dtype):
            raise TorchRuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                f"Got: {source.dtype.capitalize()}"
            )
        return self.apply_op("mean", source, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    # ── shape and layout ──────────────────────────────────────────────────
    @property
    def T(self) -> Tensor:
        return self.apply_op("permute", self, dims=tuple(reversed(range(self.ndim))))

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix: its transpose, for a real one."""
        if self.ndim not in (0, 2):
            raise TorchRuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return self.T

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of the last two dims: ``mT``, for a real tensor."""
        return self.mT

    @property
    def mT(self) -> Tensor:
        if self.ndim < 2:
            raise TorchRuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
            )
        return self.transpose(-2, -1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise TorchRuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        ndim = self.ndim
        return self.apply_op("transpose", self, dim0=normalize_dim(dim0, ndim), dim1=normalize_dim(dim1, ndim))

    def permute(self, *dims: int) -> Tensor:
        order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return self.apply_op("permute", self, dims=tuple(normalize_dim(d, self.ndim) for d in order))

    def reshape(self, *shape: Any) -> Tensor:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self.apply_op("reshape", self, shape=reshape_target(self.shape, target))

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if not self.shape:
            return self.reshape(1)
        start, end = normalize_dim(start_dim, self.ndim), normalize_dim(end_dim, self.ndim)
        if start > end:
            raise TorchRuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        return self.reshape(*self.shape[:start], numel(self.shape[start : end + 1]), *self.shape[end + 1 :])

    def ravel(self) -> Tensor:
        """The entries in one row, in order: ``reshape(-1)``."""
        return self.reshape(-1)

    def __getitem__(self, index: Any) -> Tensor:
        """Basic indexing (ints, slices, None, ``...``) and torch's advanced indexing (integer tensors,
        lists, boolean masks), see :mod:`symgrad.core.indexing`."""
        return indexing.getitem(self, index)

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TorchTypeError("iteration over a 0-d tensor")
        for i in range(len(self)):
            yield self.apply_op("index", self, index=(i,), via="unbind")

    def unsqueeze(self, dim: int) -> Tensor:
        dim = normalize_dim(dim, self.ndim + 1)
        return self[(slice(None),) * dim + (None,)]

    def expand(self, *shape: Any) -> Tensor:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        lead = len(target) - self.ndim
        resolved = tuple(self.shape[i - lead] if isinstance(d, int) and d == -1 else d for i, d in enumerate(target))
        return self.apply_op("expand", self, shape=as_shape(resolved))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(*other.shape)

    def flip(self, *dims: Any) -> Tensor:
        order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        out = self
        for d in order:
            out = self.apply_op("flip", out, dim=normalize_dim(d, self.ndim))
        return out

    def roll(self, shifts: Any, dims: Any = None) -> Tensor:
        """Entries shifted along ``dims``, wrapping round: ``x.roll(1, 0)[i] = x[i − 1 mod n]``; without dims, the
        flattened tensor is rolled and reshaped back, as torch does."""
        steps = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
        axes = () if dims is None else tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
        if dims is None:
            if len(steps) != 1:
                raise TorchRuntimeError(f"shifts and dimensions must align. shifts: {len(steps)}, dims:0")
            return self if self.ndim == 0 else self.reshape(-1).roll(steps[0], 0).reshape(self.shape)
        if not steps:
            raise TorchRuntimeError("`shifts` required")
        if len(steps) != len(axes):
            raise TorchRuntimeError(f"shifts and dimensions must align. shifts: {len(steps)}, dims:{len(axes)}")
        out = self
        for step, axis in zip(steps, axes):
            axis = normalize_dim(axis, self.ndim)
            size = self.shape[axis]
            if not isinstance(size, int):
                raise UnsupportedError(f"roll along the symbolic dimension {size}: where entries wrap depends on it")
            if size == 0 or step % size == 0:
                continue
            k = step % size
            out = self.apply_op("cat", out.narrow(axis, size - k, k), out.narrow(axis, 0, size - k), dim=axis)
        return out

    def diff(self, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Tensor:
        """``n``-th forward differences along ``dim``: ``out[i] = x[i + 1] − x[i]``, after joining ``prepend`` and
        ``append`` (torch's order); for booleans, torch's "changed": their xor. As torch, ``n=0`` gives the input
        itself, without what would be joined."""
        if self.ndim == 0:
            raise TorchRuntimeError("diff expects input to be at least one-dimensional")
        if n < 0:
            raise TorchRuntimeError(f"order must be non-negative but got {n}")
        axis = normalize_dim(dim, self.ndim)
        if n == 0:
            return self
        parts = [p for p in (prepend, self, append) if p is not None]
        out = self.apply_op("cat", *parts, dim=axis) if len(parts) > 1 else self
        for _ in range(n):
            size = out.shape[axis]
            if not isinstance(size, int):
                raise UnsupportedError(f"diff along the symbolic dimension {size}: slice it at fixed bounds")
            if size == 0:
                break
            later, earlier = out.narrow(axis, 1, size - 1), out.narrow(axis, 0, size - 1)
            out = self.apply_op("logical_xor", later, earlier) if out.dtype == "bool" else later - earlier
        return out

    # ── squeezing, splitting, repeating; triangles and diagonals ─────────
    def squeeze(self, dim: int | Sequence[int] | None = None) -> Tensor:
        empty = isinstance(dim, (tuple, list)) and not dim  # squeeze(()) squeezes nothing
        axes = () if empty else normalize_dims(dim, self.ndim)
        symbolic = [self.shape[a] for a in axes if a < len(self.shape) and not isinstance(self.shape[a], int)]
        if symbolic:  # torch drops such a dim exactly when it is 1: the result's shape would depend on the size
            raise UnsupportedError(
                f"squeeze of the symbolic dimension {symbolic[0]} (shape {format_shape(self.shape)}): it may be 1; "
                "name the dims of size 1 to squeeze, e.g. x.squeeze(1)"
            )
        kept = tuple(d for axis, d in enumerate(self.shape) if not (axis in axes and d == 1))
        return self.apply_op("reshape", self, shape=kept)

    def unflatten(self, dim: int, sizes: Sequence[Any]) -> Tensor:
        axis, sizes = normalize_dim(dim, self.ndim), tuple(sizes)
        if not sizes:
            raise TorchRuntimeError("unflatten: sizes must be non-empty")
        try:
            middle = reshape_target(self.shape[axis : axis + 1], sizes)
        except ShapeError:
            raise ShapeError(
                f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                f"({self.shape[axis]}) in the input tensor"
            ) from None
        return self.reshape(*self.shape[:axis], *middle, *self.shape[axis + 1 :])

    def repeat(self, *sizes: Any) -> Tensor:
        """Tiles of the tensor: a reshape that spreads its dims, an expand, and a reshape back (no copies)."""
        repeats = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
        if len(repeats) < self.ndim:
            raise TorchRuntimeError(
                "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
            )
        shape = (1,) * (len(repeats) - self.ndim) + tuple(self.shape)
        as_shape(tuple(r * s for r, s in zip(repeats, shape)))  # torch's error for a negative repeat
        spread = self.reshape(*(d for s in shape for d in (1, s)))
        tiled = spread.expand(*(d for r, s in zip(repeats, shape) for d in (r, s)))
        return tiled.reshape(*(r * s for r, s in zip(repeats, shape)))

    def narrow(self, dim: int, start: Any, length: int) -> Tensor:
        return indexing.narrow(self, dim, start, length)

    def select(self, dim: int, index: Any) -> Tensor:
        return indexing.select(self, dim, index)

    def split(self, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
        return indexing.split(self, split_size, dim)

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
        return indexing.chunk(self, chunks, dim)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        return indexing.unbind(self, dim)

    def index_select(self, dim: int, index: Any) -> Tensor:
        return indexing.index_select(self, dim, index)

    def gather(self, dim: int, index: Any, *, sparse_grad: bool = False) -> Tensor:
        return indexing.gather(self, dim, index)

    def scatter(self, dim: int, index: Any, src: Any = None, value: Any = None, *, reduce: str | None = None) -> Tensor:
        return indexing.scatter(self, dim, index, src if src is not None else value, reduce)

    def scatter_add(self, dim: int, index: Any, src: Any) -> Tensor:
        return indexing.scatter_add(self, dim, index, src)

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Tensor:
        return indexing.take_along_dim(self, indices, dim)

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
        """``self[indices] = values`` out of place (``+=`` with ``accumulate``): see :mod:`symgrad.core.assignment`."""
        return assignment.index_put(self, indices, values, accumulate)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        if getattr(mask, "dtype", None) != "bool":
            kind = getattr(mask, "dtype", type(mask).__name__)
            kind = {"int64": "long int", "int32": "int", "uint8": "unsigned char", "float32": "float"}.get(kind, kind)
            raise TorchRuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {kind}")
        if hasattr(value, "apply_op") and value.ndim != 0:
            raise TorchRuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s)."
            )
        return self.apply_op("where", mask, value, self)

    def tril(self, diagonal: int = 0) -> Tensor:
        return self.apply_op("tril", self, diagonal=int(diagonal))

    def triu(self, diagonal: int = 0) -> Tensor:
        return self.apply_op("triu", self, diagonal=int(diagonal))

    def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
        first, second = normalize_dim(dim1, self.ndim), normalize_dim(dim2, self.ndim)
        if first == second:
            raise TorchRuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
        return self.apply_op("diagonal", self, offset=int(offset), dim1=first, dim2=second)

    def diag(self, diagonal: int = 0) -> Tensor:
        """The ``diagonal``-th diagonal of a matrix, or the square matrix with a vector on it."""
        if self.ndim == 1:
            size = self.shape[0] + abs(int(diagonal))
            return self.apply_op("diagonal_backward", self, shape=(size, size), offset=int(diagonal), dim1=0, dim2=1)
        if self.ndim == 2:
            return self.diagonal(diagonal)
        raise TorchRuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")

    # ── more functions, as Tensor methods in torch ───────────────────────
    def softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return relabel(self.apply_op("softmax", self, dim=normalize_dim(dim, self.ndim)), dtype)

    def log_softmax(self, dim: int, dtype: Any = None) -> Tensor:
        return relabel(self.apply_op("log_softmax", self, dim=normalize_dim(dim, self.ndim)), dtype)

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        return self.apply_op("logsumexp", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def amax(self, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
        return self.apply_op("amax", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def max(self, dim: Any = None, keepdim: bool = False) -> Any:
        """``x.max()`` (ties share the gradient), ``x.max(dim)`` (values, int64 indices; the first max gets the
        gradient) or ``x.max(other)`` (``maximum``)."""
        if isinstance(dim, TensorMethods):
            return self.apply_op("maximum", self, dim)
        if dim is None:
            if self.numel() == 0:
                raise TorchRuntimeError(
                    "max(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            return self.apply_op("max_all", self)
        axis = normalize_dim(dim, self.ndim)
        values = self.apply_op("max_dim", self, dim=axis, keepdim=bool(keepdim))
        return max_result(values, relabel(self.apply_op("argmax", self, dim=axis, keepdim=bool(keepdim)), "int64"))

    def min(self, dim: Any = None, keepdim: bool = False) -> Any:
        """``max`` of ``-x``, negated: the smallest entries, ties and indices as torch."""
        if isinstance(dim, TensorMethods):
            return -self.apply_op("maximum", -self, -dim)
        if dim is None:
            return -(-self).max()
        values, indices = (-self).max(dim, keepdim)
        return min_result(-values, indices)

    def amin(self, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
        return -(-self).amax(dim, keepdim)

    def argmax(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        """The index of the first maximum (int64; of the flattened tensor when ``dim`` is None)."""
        if dim is None:
            index = self.reshape(-1).argmax(0)
            return relabel(index.reshape(*([1] * self.ndim)), "int64") if keepdim else index
        axis = normalize_dim(dim, self.ndim)
        return relabel(self.apply_op("argmax", self, dim=axis, keepdim=bool(keepdim)), "int64")

    def argmin(self, dim: int | None = None, keepdim: bool = False) -> Tensor:
        return (-self).argmax(dim, keepdim)

    def prod(self, dim: int | None = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        """The product over ``dim`` (all entries by default); its gradient is exact at zeros, as torch's."""
        axes = tuple(range(self.ndim)) if dim is None else (normalize_dim(dim, self.ndim),)
        source = self if dtype is None else self.to(dtype)
        return self.apply_op("prod", source, dim=axes, keepdim=bool(keepdim) and dim is not None)

    def cumprod(self, dim: int, dtype: Any = None) -> Tensor:
        return relabel(self.apply_op("cumprod", self, dim=normalize_dim(dim, self.ndim)), dtype)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
        """The k largest (or smallest) entries along ``dim`` and their int64 indices. Which entries they are
        depends on the values, so the input needs values; the gradient goes to the picked entries."""
        axis = normalize_dim(dim, self.ndim)
        size = self.shape[axis] if self.ndim else 1
        if not isinstance(k, int) or not 0 <= k <= size:
            raise TorchRuntimeError("selected index k out of range")
        if not self.has_values():
            raise UnsupportedError(
                "topk needs its input's values: which entries are the largest depends on them (give values)"
            )
        if not sorted and k > 1:
            raise UnsupportedError("topk(sorted=False) is not supported: torch's order is unspecified; use sorted=True")
        numbers = np.array([float(v) for v in self.values().reshape(-1)], dtype=float).reshape(self.shape)
        positions = topk_positions(numbers, k, axis, bool(largest))
        values = self.apply_op("take_at", self, dim=axis, positions=positions.tolist())
        entries = object_array([int(i) for i in positions.reshape(-1)], positions.shape)
        return topk_result(values, type(self)(shape=positions.shape, entries=entries, dtype="int64"))

    def norm(
        self, p: Any = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False, dtype: Any = None
    ) -> Tensor:
        """The p-norm over ``dim`` (all entries by default): any number p, ±inf, or "fro"; torch's gradients
        (0 at a zero norm, ties of ±inf shared evenly). ``dtype`` computes in that dtype, as torch."""
        if dtype is not None:
            return self.to(dtype).norm(p, dim, keepdim)
        axes = normalize_dims(dim, self.ndim)
        if p in (2, "fro", None):
            return self.apply_op("norm", self, dim=axes, keepdim=bool(keepdim))
        if p == 1:
            return self.abs().sum(dim=axes, keepdim=keepdim)
        if p in (float("inf"), float("-inf")):
            return self.apply_op("inf_norm", self, largest=p > 0, dim=axes, keepdim=bool(keepdim))
        if isinstance(p, (int, float)) and not isinstance(p, bool):
            return self.apply_op("pnorm", self, p=p, dim=axes, keepdim=bool(keepdim))
        raise UnsupportedError(f"norm with p={p!r} is not supported (use a number, inf, -inf or 'fro')")

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        if min is None and max is None:
            raise TorchRuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        if isinstance(min, TensorMethods) or isinstance(max, TensorMethods):  # tensor bounds: their own ops
            if max is None:
                return self.apply_op("clamp_min", self, min)
            if min is None:
                return self.apply_op("clamp_max", self, max)
            return self.apply_op("clamp_between", self, min, max)
        source = self
        if not is_floating(self.dtype) and any(isinstance(b, float) for b in (min, max)):
            source = self.float()  # torch promotes an integer tensor clamped by a float to its default float dtype
        return self.apply_op("clamp", source, min=min, max=max)

    def clamp_min(self, min: Any) -> Tensor:  # noqa: A002 - torch's spelling
        return self.clamp(min=min)

    def clamp_max(self, max: Any) -> Tensor:  # noqa: A002 - torch's spelling
        return self.clamp(max=max)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        return self.clamp(min, max)

    def cumsum(self, dim: int, dtype: Any = None) -> Tensor:
        if self.dtype == "bool":  # torch counts: a running sum of booleans is int64 (or the dtype asked for)
            return self.to("int64" if dtype is None else dtype).cumsum(dim)
        return relabel(self.apply_op("cumsum", self, dim=normalize_dim(dim, self.ndim)), dtype)

    def var(
        self,
        dim: int | Sequence[int] | None = None,
        *,
        correction: float = 1,
        keepdim: bool = False,
        unbiased: bool | None = None,
    ) -> Tensor:
        """Σ (x − mean)² / (N − correction), as torch.var (the correction may be a float)."""
        return self._spread("var", dim, correction, keepdim, unbiased)

    def std(
        self,
        dim: int | Sequence[int] | None = None,
        *,
        correction: float = 1,
        keepdim: bool = False,
        unbiased: bool | None = None,
    ) -> Tensor:
        """The square root of :meth:`var`; its gradient is 0 where it is 0, as torch's."""
        return self._spread("std", dim, correction, keepdim, unbiased)

    def _spread(self, op: str, dim: Any, correction: Any, keepdim: bool, unbiased: bool | None) -> Tensor:
        if unbiased is not None:
            correction = int(bool(unbiased))
        if isinstance(correction, bool) or not isinstance(correction, (int, float)):
            raise TorchTypeError(f"{op}(): correction must be a number, not {type(correction).__name__}")
        correction = int(correction) if float(correction).is_integer() else float(correction)
        dims = normalize_dims(dim, self.ndim)
        return self.apply_op(
            op, self, dim=dims, keepdim=bool(keepdim), correction=correction, whole=dim is None
        )  # whole: torch's backward without a dim differs when N - correction <= 0

    def erf(self) -> Tensor:
        return self.apply_op("erf", self)

    def square(self) -> Tensor:
        """x ** 2, as torch.square."""
        return self**2

    def log1p(self) -> Tensor:
        return self.apply_op("log1p", self)

    def expm1(self) -> Tensor:
        return self.apply_op("expm1", self)

    def exp2(self) -> Tensor:
        return self.apply_op("exp2", self)

    def erfc(self) -> Tensor:
        return self.apply_op("erfc", self)

    def reciprocal(self) -> Tensor:
        return self.apply_op("reciprocal", self)

    def rsqrt(self) -> Tensor:
        return self.apply_op("rsqrt", self)

    def trace(self) -> Tensor:
        return self.apply_op("trace", self)

    def sign(self) -> Tensor:
        return self.apply_op("sign", self)

    def floor(self) -> Tensor:
        return self.apply_op("floor", self)

    def ceil(self) -> Tensor:
        return self.apply_op("ceil", self)

    def trunc(self) -> Tensor:
        return self.apply_op("trunc", self)

    def round(self) -> Tensor:
        return self.apply_op("round", self)

    def isnan(self) -> Tensor:
        return self.apply_op("isnan", self)

    def hypot(self, other: Any) -> Tensor:
        return self.apply_op("hypot", self, other)

    def logaddexp(self, other: Any) -> Tensor:
        return self.apply_op("logaddexp", self, other)

    def xlogy(self, other: Any) -> Tensor:
        return self.apply_op("xlogy", self, other)

    def eq(self, other: Any) -> Tensor:
        return self.apply_op("eq", self, other)

    def ne(self, other: Any) -> Tensor:
        return self.apply_op("ne", self, other)

    def logical_and(self, other: Any) -> Tensor:
        return self.apply_op("logical_and", self, other)

    def logical_or(self, other: Any) -> Tensor:
        return self.apply_op("logical_or", self, other)

    def logical_xor(self, other: Any) -> Tensor:
        return self.apply_op("logical_xor", self, other)

    def logical_not(self) -> Tensor:
        return self.apply_op("logical_not", self)
