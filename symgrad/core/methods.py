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

from .dims import as_shape, normalize_dim, normalize_dims, reshape_target
from .errors import UnsupportedError
from .indexing import normalize_index

if TYPE_CHECKING:
    from .tensor import Tensor

max_result = namedtuple("max", ["values", "indices"])  # torch.return_types.max's fields


class TensorMethods:
    """The torch methods of a symbolic tensor (arithmetic, reductions, layout, functions)."""

    shape: tuple
    ndim: int
    dtype: str

    @staticmethod
    def apply_op(op_name: str, *args: Any, **attrs: Any) -> Tensor:  # replaced by the tensor module's apply
        raise NotImplementedError

    # ── arithmetic ────────────────────────────────────────────────────────
    def __add__(self, other: Any) -> Tensor:
        return self.apply_op("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return self.apply_op("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return self.apply_op("sub", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self.apply_op("sub", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return self.apply_op("mul", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self.apply_op("mul", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return self.apply_op("div", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self.apply_op("div", other, self)

    def __pow__(self, other: Any) -> Tensor:
        return self.apply_op("pow", self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return self.apply_op("pow", other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return self.apply_op("matmul", self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return self.apply_op("matmul", other, self)

    def __neg__(self) -> Tensor:
        return self.apply_op("neg", self)

    def __pos__(self) -> Tensor:
        return self

    def add(self, other: Any) -> Tensor:
        return self + other

    def sub(self, other: Any) -> Tensor:
        return self - other

    def mul(self, other: Any) -> Tensor:
        return self * other

    def div(self, other: Any) -> Tensor:
        return self / other

    def pow(self, exponent: Any) -> Tensor:
        return self**exponent

    def neg(self) -> Tensor:
        return -self

    def mm(self, other: Tensor) -> Tensor:
        return self.apply_op("mm", self, other)

    def matmul(self, other: Tensor) -> Tensor:
        return self.apply_op("matmul", self, other)

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
    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return self.apply_op("sum", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        if not self.dtype.startswith("float"):
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                f"Got: {self.dtype.capitalize()}"
            )
        return self.apply_op("mean", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    # ── shape and layout ──────────────────────────────────────────────────
    @property
    def T(self) -> Tensor:
        return self.apply_op("permute", self, dims=tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
            )
        return self.transpose(-2, -1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
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

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    def __getitem__(self, index: Any) -> Tensor:
        return self.apply_op("index", self, index=normalize_index(index), via="index")

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
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

    # ── more functions, as Tensor methods in torch ───────────────────────
    def softmax(self, dim: int) -> Tensor:
        return self.apply_op("softmax", self, dim=normalize_dim(dim, self.ndim))

    def log_softmax(self, dim: int) -> Tensor:
        return self.apply_op("log_softmax", self, dim=normalize_dim(dim, self.ndim))

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        return self.apply_op("logsumexp", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def amax(self, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
        return self.apply_op("amax", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """``x.max()`` (ties share the gradient) or ``x.max(dim)`` (values, indices; the first max gets it)."""
        if dim is None:
            return self.amax()
        values = self.apply_op("max_dim", self, dim=normalize_dim(dim, self.ndim), keepdim=bool(keepdim))
        return max_result(values, None)

    def norm(self, p: Any = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        if p in (2, "fro", None):
            return self.apply_op("norm", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))
        if p == 1:
            return self.abs().sum(dim=dim, keepdim=keepdim)
        raise UnsupportedError(f"norm with p={p!r} is not supported (use 1 or 2)")

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        return self.apply_op("clamp", self, min=min, max=max)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        return self.clamp(min, max)

    def cumsum(self, dim: int) -> Tensor:
        return self.apply_op("cumsum", self, dim=normalize_dim(dim, self.ndim))

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
            raise TypeError(f"{op}(): correction must be a number, not {type(correction).__name__}")
        correction = int(correction) if float(correction).is_integer() else float(correction)
        return self.apply_op(op, self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim), correction=correction)

    def erf(self) -> Tensor:
        return self.apply_op("erf", self)

    def log1p(self) -> Tensor:
        return self.apply_op("log1p", self)

    def reciprocal(self) -> Tensor:
        return self.apply_op("reciprocal", self)

    def rsqrt(self) -> Tensor:
        return self.apply_op("rsqrt", self)

    def trace(self) -> Tensor:
        return self.apply_op("trace", self)

    def sign(self) -> Tensor:
        return self.apply_op("sign", self)

    def __gt__(self, other: Any) -> Tensor:
        return self.apply_op("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return self.apply_op("ge", self, other)

    def __lt__(self, other: Any) -> Tensor:
        return self.apply_op("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return self.apply_op("le", self, other)
