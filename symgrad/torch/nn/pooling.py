"""Poolings of ``torch.nn.functional``: max, average, adaptive average and adaptive max pooling in 1-D, 2-D
and 3-D.

``max_pool`` is an op of the table (:mod:`symgrad.ops.pooling`): the largest entry of each window, whose
gradient goes to the first maximal entry in row-major order, the one torch picks (and reports in
``return_indices``). ``avg_pool`` sums the window slices of the padded input (see :mod:`.windows`), stacked along a
new last dim, and divides by torch's count.

>>> import symgrad.torch as torch
>>> x = torch.tensor([[[1.0, 3.0, 3.0, 2.0]]], requires_grad=True, name="x")
>>> y = torch.nn.functional.max_pool1d(x, 2, stride=1)
>>> y.sum().backward()
>>> x.grad.tolist()
[[[0.0, 2.0, 1.0, 0.0]]]
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ...core.constructors import tensor
from ...core.dims import is_concrete
from ...core.errors import TorchRuntimeError, UnsupportedError
from ...core.tensor import Tensor, apply, constant
from ...ops.pooling import max_pool_indices, windows_out_length
from .windows import as_tuple, pad_spatial, stack_last, window_slices


class _Windows:
    """The geometry of a pooling: kernel, stride, padding, dilation and output size per spatial dim."""

    def __init__(
        self, input: Tensor, n: int, what: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode
    ) -> None:
        if not is_concrete(input.shape[-n:]):
            raise UnsupportedError(
                f"{what} needs concrete spatial sizes (its windows are slices of the input); batch and channel "
                "sizes may be symbolic"
            )
        if input.ndim not in (n + 1, n + 2):
            raise TorchRuntimeError(f"{what}: Expected {n + 1}D or {n + 2}D input, but got {input.ndim}D input")
        self.n, self.what, self.ceil_mode = n, what, ceil_mode
        self.kernel = as_tuple(kernel_size, n, "kernel_size")
        self.stride = self.kernel if stride is None or stride == () else as_tuple(stride, n, "stride")
        self.padding = as_tuple(padding, n, "padding")
        self.dilation = as_tuple(dilation, n, "dilation")
        if any(k <= 0 for k in self.kernel):
            raise TorchRuntimeError(f"{what}() kernel_size must be greater than zero, but got {kernel_size}")
        if any(s <= 0 for s in self.stride):
            raise TorchRuntimeError("stride should not be zero")
        for p, k, d in zip(self.padding, self.kernel, self.dilation):
            if what == "max_pool1d" and (p < 0 or p > k // 2):
                raise TorchRuntimeError(
                    "max_pool1d() padding should be at most half of kernel size, but got "
                    f"padding={p} and kernel_size={k}"
                )
            if p < 0 or p > (d * (k - 1) + 1) // 2:
                raise TorchRuntimeError(
                    f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and "
                    f"dilation={d}"
                )
        self.sizes = tuple(input.shape[-n:])
        self.out = tuple(
            windows_out_length(size, k, s, p, d, ceil_mode)
            for size, k, s, p, d in zip(self.sizes, self.kernel, self.stride, self.padding, self.dilation)
        )
        if any(o <= 0 for o in self.out):
            if what == "max_pool1d":
                raise TorchRuntimeError(f"max_pool1d() Invalid computed output size: {self.out[0]}")
            channels = input.shape[-n - 1] if input.ndim == n + 2 else input.shape[0]
            plane = (1,) * (2 - n)  # torch pools 1-D inputs as 2-D ones of height 1
            size = "x".join(map(str, (channels, *plane, *self.sizes)))
            out = "x".join(map(str, (channels, *plane, *self.out)))
            raise TorchRuntimeError(
                f"Given input size: ({size}). Calculated output size: ({out}). Output size is too small"
            )

    def stacked(self, input: Tensor, fill: float) -> Tensor:
        """The windows along a new last dim: shape ``input.shape[:-n] + out + (window size,)``."""
        high = tuple(
            max(p, (o - 1) * s + d * (k - 1) + 1 - size - p)
            for size, k, s, p, d, o in zip(self.sizes, self.kernel, self.stride, self.padding, self.dilation, self.out)
        )
        padded = pad_spatial(input, self.padding, high, fill)
        return stack_last(window_slices(padded, self.kernel, self.stride, self.dilation, self.out))

    def attributes(self) -> dict:
        """The geometry as the max_pool ops of :mod:`symgrad.ops.pooling` take it."""
        return {"kernel": self.kernel, "stride": self.stride, "padding": self.padding, "dilation": self.dilation,
                "ceil_mode": bool(self.ceil_mode), "pooled": self.out}  # fmt: skip


def _max_pool(
    input: Tensor, n: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool, indices: bool
) -> Any:
    what = f"max_pool{n}d"
    windows = _Windows(input, n, what, kernel_size, stride, padding, dilation, ceil_mode)
    out = apply("max_pool", input, **windows.attributes())
    return (out, max_pool_indices(input, windows.attributes())) if indices else out


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """The maximum of each window (padding is −inf); the gradient goes to the first maximal entry, as torch's.
    With ``return_indices``, also the index of that entry along the input's last dim."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """The maximum of each 2-D window; the gradient goes to the window's first maximum in row-major order, and
    ``return_indices`` gives its flat index ``h · W + w``."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """The maximum of each 3-D window; the gradient goes to its first maximum in row-major order, and
    ``return_indices`` gives its flat index ``d · H · W + h · W + w``."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _avg_pool(
    input: Tensor,
    n: int,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> Tensor:
    windows = _Windows(input, n, f"avg_pool{n}d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise TorchRuntimeError("divisor must be not zero")
    total = windows.stacked(input, 0.0).sum(dim=-1)
    return total / _divisors(windows, count_include_pad, divisor_override)


def _divisors(windows: _Windows, count_include_pad: bool, divisor_override: Any) -> Any:
    """torch's divisor per output position: the window within the padded input (or within the input alone), as an
    integer, so that exact proofs divide by 3 and not by the float 3.0."""
    if divisor_override is not None:
        return divisor_override
    counts = np.ones(windows.out, dtype=int)
    for axis, (size, k, s, p, o) in enumerate(
        zip(windows.sizes, windows.kernel, windows.stride, windows.padding, windows.out)
    ):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, size + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size)
        shape = [1] * windows.n
        shape[axis] = o
        counts = counts * (end - start).reshape(shape)
    if np.all(counts == counts.reshape(-1)[0]):
        return int(counts.reshape(-1)[0])
    return constant(counts.tolist(), dtype="float64")


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """The mean of each window: its sum over the zero-padded input, divided by the window's size within the padded
    input (or within the input, ``count_include_pad=False``), as torch counts."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> Tensor:
    """The mean of each 2-D window (``divisor_override`` replaces torch's count)."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> Tensor:
    """The mean of each 3-D window (``divisor_override`` replaces torch's count)."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_bounds(input: Tensor, output_size: Any, n: int, what: str) -> list[list[tuple[int, int]]]:
    """torch's adaptive windows per spatial dim: output i covers floor(i·L/out) to ceil((i + 1)·L/out)."""
    if not is_concrete(input.shape[-n:]):
        raise UnsupportedError(f"{what} needs concrete spatial sizes; batch and channel sizes may be symbolic")
    if input.ndim not in (n + 1, n + 2):
        raise TorchRuntimeError(f"{what}(): Expected {n + 1}D or {n + 2}D tensor, but got {input.ndim}D tensor")
    sizes = (output_size,) * n if isinstance(output_size, int) or output_size is None else tuple(output_size)
    if len(sizes) == 1:
        sizes = sizes * n
    if len(sizes) != n:
        raise TorchRuntimeError(f"{what}: output_size must be {n}")
    bounds = []
    for size, target in zip(input.shape[-n:], sizes):
        target = size if target is None else target
        if target < 0 or (target == 0 and input.numel() != 0):
            raise TorchRuntimeError(f"{what}(): output_size must be positive, but got {target}")
        bounds.append([((i * size) // target, -((-(i + 1) * size) // target)) for i in range(target)])
    return bounds


def _adaptive_avg_pool(input: Tensor, output_size: Any, n: int) -> Tensor:
    bounds = _adaptive_bounds(input, output_size, n, f"adaptive_avg_pool{n}d")
    out = input
    for axis, windows in zip(range(input.ndim - n, input.ndim), bounds):  # a mean is separable: one dim at a time
        parts = [
            out[(slice(None),) * axis + (slice(start, end),)].sum(dim=axis, keepdim=True) / (end - start)
            for start, end in windows
        ]
        out = parts[0] if len(parts) == 1 else apply("cat", *parts, dim=axis)
    return out


def _adaptive_max_pool(input: Tensor, output_size: Any, return_indices: bool, n: int) -> Any:
    """Each adaptive window's maximum; its gradient goes to the window's first maximum in row-major order (a nan
    wins), the entry whose flat spatial index torch returns."""
    what = f"adaptive_max_pool{n}d"
    bounds = _adaptive_bounds(input, output_size, n, what)
    lead = input.shape[:-n]
    picked = []
    for windows in itertools.product(*bounds):
        window = input[(..., *(slice(start, end) for start, end in windows))]
        picked.append(window.reshape(*lead, -1).max(-1).values.unsqueeze(-1))
    out_shape = tuple(len(b) for b in bounds)
    if not picked:
        out = input.reshape(*lead, -1)[..., :0].reshape(*lead, *out_shape)
    else:
        out = (picked[0] if len(picked) == 1 else apply("cat", *picked, dim=len(lead))).reshape(*lead, *out_shape)
    if not return_indices:
        return out
    if not input.has_values():
        raise UnsupportedError(f"{what}(return_indices=True) needs the input's values")
    sizes = tuple(input.shape[-n:])
    values = np.array(input.tolist(), dtype=float).reshape(-1, *sizes)
    flat = np.arange(math.prod(sizes)).reshape(sizes)
    indices = np.zeros((values.shape[0], *out_shape), dtype=np.int64)
    for position in itertools.product(*(range(o) for o in out_shape)):
        region = tuple(slice(*bounds[axis][i]) for axis, i in enumerate(position))
        for row in range(values.shape[0]):
            window, numbers = flat[region].reshape(-1), values[(row, *region)].reshape(-1)
            nans = np.flatnonzero(np.isnan(numbers))
            indices[(row, *position)] = window[nans[0] if nans.size else int(np.argmax(numbers))]
    return out, tensor(indices.reshape(*lead, *out_shape).tolist(), dtype="int64")


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """The mean over torch's adaptive windows: output i averages entries floor(i·L/out) to ceil((i + 1)·L/out)."""
    return _adaptive_avg_pool(input, output_size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Adaptive means over both spatial dims (``None`` keeps a dim's size)."""
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Adaptive means over the three spatial dims."""
    return _adaptive_avg_pool(input, output_size, 3)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum over torch's adaptive windows (see adaptive_avg_pool1d); with ``return_indices``, also the index
    of the first maximum of each."""
    return _adaptive_max_pool(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum over 2-D adaptive windows, and the flat index ``h · W + w`` of the first maximum."""
    return _adaptive_max_pool(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The maximum over 3-D adaptive windows, and the flat index of the first maximum."""
    return _adaptive_max_pool(input, output_size, return_indices, 3)


__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d",
    "max_pool2d", "max_pool3d",
]  # fmt: skip
