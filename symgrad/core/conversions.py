"""Tensor methods that convert or copy: dtypes (``x.float()``, ``x.to(torch.float64)``, ``x.long()``), devices and
layouts (``x.cpu()``, ``x.contiguous()``: the same numbers), copies (``x.clone()``, ``x.data``) and new tensors
shaped by the call (``x.new_zeros(...)``).

>>> import symgrad as sg
>>> x = sg.tensor([1.5, -2.5], name="x")
>>> x.double().dtype, x.long().tolist(), x.to(x.double()).dtype, x.new_zeros((2, 3)).shape
('float64', [1, -2], 'float64', (2, 3))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dims import as_shape
from .dtypes import DEFAULT_FLOAT, is_floating
from .errors import TorchTypeError

if TYPE_CHECKING:
    from .tensor import Tensor

_DTYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
                "short": "int16"}  # fmt: skip
_TENSOR_TYPES = {"float64": "torch.DoubleTensor", "float32": "torch.FloatTensor", "float16": "torch.HalfTensor",
                 "bfloat16": "torch.BFloat16Tensor", "int64": "torch.LongTensor", "int32": "torch.IntTensor",
                 "bool": "torch.BoolTensor"}  # fmt: skip


def dtype_of(value: Any) -> str | None:
    """A dtype given as ``torch.float64``, ``"float64"`` or ``"double"``; None for anything else (a device)."""
    text = str(value).replace("torch.", "")
    text = _DTYPE_NAMES.get(text, text)
    known = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")
    return text if text in known else None


class ConversionMethods:
    """Conversions and copies (see the module docstring); mixed into :class:`symgrad.core.tensor.Tensor`."""

    dtype: str
    shape: tuple

    def _cast(self, dtype: str) -> Tensor:
        """Itself when it already has ``dtype``, else a conversion node labelled with it."""
        if self.dtype == dtype:
            return self  # type: ignore[return-value]
        node = self.apply_op("to_float" if is_floating(dtype) else "to_integer", self, dtype=dtype)  # type: ignore
        node.dtype = dtype  # a node of its own: labelled with the dtype it converts to
        return node

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """torch's ``to``: a dtype, another tensor's dtype, or a device (which keeps the numbers)."""
        wanted = kwargs.get("dtype")
        for arg in args:
            if hasattr(arg, "dtype") and hasattr(arg, "shape"):
                wanted = arg.dtype
            elif dtype_of(arg) is not None:
                wanted = arg
        return self._cast(dtype_of(wanted)) if wanted is not None else self  # type: ignore[return-value]

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        """The tensor type's name (``torch.FloatTensor``), or the tensor converted to ``dtype``."""
        if dtype is None:
            return _TENSOR_TYPES.get(self.dtype, f"torch.{self.dtype}")
        name = {v: k for k, v in _TENSOR_TYPES.items()}.get(str(dtype), dtype_of(dtype))
        if name is None:
            raise TorchTypeError(f"invalid type: {dtype!r}")
        return self._cast(name)

    def type_as(self, other: Any) -> Tensor:
        return self._cast(other.dtype)

    def float(self, memory_format: Any = None) -> Tensor:
        return self._cast("float32")

    def double(self, memory_format: Any = None) -> Tensor:
        return self._cast("float64")

    def half(self, memory_format: Any = None) -> Tensor:
        return self._cast("float16")

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        return self._cast("bfloat16")

    def long(self, memory_format: Any = None) -> Tensor:
        return self._cast("int64")

    def int(self, memory_format: Any = None) -> Tensor:
        return self._cast("int32")

    def bool(self, memory_format: Any = None) -> Tensor:
        return self._cast("bool")

    def short(self, memory_format: Any = None) -> Tensor:
        return self._cast("int16")

    def char(self, memory_format: Any = None) -> Tensor:
        return self._cast("int8")

    def byte(self, memory_format: Any = None) -> Tensor:
        return self._cast("uint8")

    def cpu(self, *args: Any, **kwargs: Any) -> Tensor:
        return self  # type: ignore[return-value]

    def cuda(self, *args: Any, **kwargs: Any) -> Tensor:
        return self  # type: ignore[return-value]

    def contiguous(self, *args: Any, **kwargs: Any) -> Tensor:
        return self  # type: ignore[return-value]

    def clone(self, *args: Any, **kwargs: Any) -> Tensor:
        return self.apply_op("clone", self)  # type: ignore[attr-defined]

    @property
    def data(self) -> Tensor:
        return self.detach()  # type: ignore[attr-defined]

    def new_zeros(self, *size: Any, dtype: Any = None, **placement: Any) -> Tensor:
        return self._new(size, 0, dtype)

    def new_ones(self, *size: Any, dtype: Any = None, **placement: Any) -> Tensor:
        return self._new(size, 1, dtype)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, **placement: Any) -> Tensor:
        return self._new((size,), fill_value, dtype)

    def new_empty(self, *size: Any, dtype: Any = None, **placement: Any) -> Tensor:
        """Memory not yet written, of ``size``: to be filled before it is read (reading it is refused)."""
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        node = self.apply_op("empty", self, shape=as_shape(size))  # type: ignore[attr-defined]
        node.dtype = (dtype_of(dtype) if dtype is not None else self.dtype) or DEFAULT_FLOAT
        return node

    def _new(self, size: tuple, value: Any, dtype: Any) -> Tensor:
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        node = self.apply_op("full", shape=as_shape(size), value=value)  # type: ignore[attr-defined]
        node.dtype = (dtype_of(dtype) if dtype is not None else self.dtype) or DEFAULT_FLOAT  # a node of its own
        return node
