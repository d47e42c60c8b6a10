"""Sliding windows over the spatial dims of ``(N, C, *spatial)`` tensors, the shared part of convolution and pooling.

A window position is a strided basic slice of the (padded) input, ``x[..., k·d : k·d + (L − 1)·s + 1 : s]`` for kernel
offset ``k``, so convolutions and poolings are layout ops, products and reductions, whose gradients follow (how many
windows fit: :func:`symgrad.ops.pooling.windows_out_length`).
"""

from __future__ import annotations

import itertools
from typing import Any

from ...core.errors import TorchRuntimeError
from ...core.tensor import Tensor, apply


def as_tuple(value: Any, n: int, what: str) -> tuple[int, ...]:
    """An int or a sequence of 1 or ``n`` ints as ``n`` ints (torch's ``_single``/``_pair``)."""
    items = (value,) * n if isinstance(value, int) else tuple(value)
    if len(items) == 1:
        items = items * n
    if len(items) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise TorchRuntimeError(f"{what} must be an int or a tuple of {n} ints, not {value!r}")
    return items


def pad_spatial(x: Tensor, low: tuple[int, ...], high: tuple[int, ...], value: float) -> Tensor:
    """``x`` with ``low``/``high`` entries of ``value`` before/after each spatial dim (its trailing dims)."""
    if not any(low) and not any(high):
        return x
    lead = ((0, 0),) * (x.ndim - len(low))
    return apply("pad", x, widths=lead + tuple(zip(low, high)), value=value)


def window_slices(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    out: tuple[int, ...],
    after: int = 0,
) -> list[Tensor]:
    """One strided slice of the (padded) ``x`` per kernel offset, in row-major order of the offsets: entry ``o`` of
    the slice for offset ``k`` is ``x[..., o·s + k·d]`` along the spatial dims, which are the last ones but
    ``after`` (channels-last layouts have one after them)."""
    lead = (slice(None),) * (x.ndim - len(kernel) - after)
    parts = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        index = tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, s, o in zip(offsets, dilation, stride, out))
        parts.append(x[lead + index])
    return parts


def stack_last(parts: list[Tensor]) -> Tensor:
    """The parts side by side along a new last dim."""
    columns = [part.unsqueeze(-1) for part in parts]
    return columns[0] if len(columns) == 1 else apply("cat", *columns, dim=columns[0].ndim - 1)
