"""``nn.Conv1d`` and ``nn.Conv2d``, with torch's initial kernels and its padding modes.

>>> import symgrad.torch as torch
>>> conv = torch.nn.Conv1d(1, 2, kernel_size=3, padding=1, padding_mode="circular")
>>> conv.weight.shape, conv(torch.zeros(4, 1, 5)).shape
((2, 1, 3), (4, 2, 5))
"""

from __future__ import annotations

from typing import Any

from ....core.tensor import Tensor
from ... import shape
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import torch_layer
from .module import Module
from .parameter import Parameter


class _ConvNd(Module):
    n = 0

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        real = torch_layer(
            f"Conv{self.n}d", in_channels, out_channels, kernel_size, stride=stride, padding=padding,
            dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype,
        )  # fmt: skip
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.dilation = real.kernel_size, real.stride, real.dilation
        self.padding, self.padding_mode = real.padding, padding_mode
        self.weight = Parameter(real.weight)
        if bias:
            self.bias = Parameter(real.bias)
        else:
            self.register_parameter("bias", None)

    def _edge_padding(self) -> list[int]:
        """F.pad's widths (last dim first) for a non-zero padding mode: 'same' puts the odd one after, as torch."""
        widths: list[int] = []
        for k, d, p in reversed(list(zip(self.kernel_size, self.dilation, self._padding_per_dim()))):
            if p is None:
                total = d * (k - 1)
                widths += [total // 2, total - total // 2]
            else:
                widths += [p, p]
        return widths

    def _padding_per_dim(self) -> list[Any]:
        if self.padding == "same":
            return [None] * self.n
        if self.padding == "valid":
            return [0] * self.n
        return list(self.padding)

    def forward(self, input: Tensor) -> Tensor:
        conv = F.conv1d if self.n == 1 else F.conv2d
        if self.padding_mode != "zeros":
            padded = shape.pad(input, self._edge_padding(), mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.n:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """A 1-D convolution over (N, C_in, L) (or unbatched (C_in, L)) inputs."""

    n = 1


class Conv2d(_ConvNd):
    """A 2-D convolution over (N, C_in, H, W) (or unbatched (C_in, H, W)) inputs."""

    n = 2


__all__ = ["Conv1d", "Conv2d"]
