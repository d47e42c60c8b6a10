"""Making tensors: ``*_like`` constants."""

from __future__ import annotations

from typing import Any

from ..core.dims import require_concrete as _require_concrete
from ..core.tensor import Tensor, constant


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None) -> Tensor:
    """Known numbers shaped like ``input`` (no symbols of their own)."""
    shape = _require_concrete(input.shape, "full_like")
    return constant(fill_value, shape=shape, dtype=str(dtype or input.dtype))


def ones_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 1, dtype=dtype)


def zeros_like(input: Tensor, *, dtype: Any = None) -> Tensor:
    return full_like(input, 0, dtype=dtype)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


__all__ = ["full_like", "is_tensor", "ones_like", "zeros_like"]
