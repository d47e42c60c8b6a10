"""Pooling modules: max, average and adaptive average pooling in 1-D and 2-D, over
:mod:`symgrad.torch.nn.functional`.

>>> import symgrad.torch as torch
>>> pool = torch.nn.MaxPool1d(2)
>>> pool(torch.tensor([[[1.0, 3.0, 2.0, 2.0]]])).tolist()
[[[3.0, 2.0]]]
"""

from __future__ import annotations

from typing import Any

from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from .module import Module


class _MaxPoolNd(Module):
    n = 0

    def __init__(
        self,
        kernel_size: Any,
        stride: Any = None,
        padding: Any = 0,
        dilation: Any = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        pool = F.max_pool1d if self.n == 1 else F.max_pool2d
        return pool(
            input, self.kernel_size, self.stride, self.padding, self.dilation,
            ceil_mode=self.ceil_mode, return_indices=self.return_indices,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """The maximum of each window along the last dim; the gradient goes to the first maximum, as torch's."""

    n = 1


class MaxPool2d(_MaxPoolNd):
    """The maximum of each 2-D window; the gradient goes to the first maximum, as torch's."""

    n = 2


def _single(size: Any) -> tuple:
    """A 1-D size as torch's AvgPool1d keeps it: a tuple of one."""
    return tuple(size) if isinstance(size, (tuple, list)) else (size,)


class AvgPool1d(Module):
    """The mean of each window along the last dim (sizes kept as tuples of one, as torch's)."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride = _single(kernel_size), _single(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = _single(padding), ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean of each 2-D window (``divisor_override`` replaces the window size)."""

    def __init__(
        self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
        count_include_pad: bool = True, divisor_override: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
            self.divisor_override,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """The mean over ``output_size`` windows spanning the last dim, as torch splits it."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """The mean over an ``output_size`` grid of windows spanning the last two dims (None keeps a size)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d"]
