"""Convolutions of ``torch.nn.functional`` (``conv1d``, ``conv2d``) as patches times the kernel.

The padded input's window slices (one per kernel offset, see :mod:`.windows`) are laid side by side, channels last,
and multiplied by the kernel reshaped to ``(out_channels, kernel offsets × in_channels)``: each output entry is one
sum of products, and the gradient is that of slicing, padding and a matrix product.

>>> import symgrad.torch as torch
>>> x = torch.tensor([[[1.0, 2.0, 3.0]]], name="x")
>>> w = torch.tensor([[[1.0, -1.0]]], requires_grad=True, name="w")
>>> torch.nn.functional.conv1d(x, w).tolist()
[[[-1.0, -1.0]]]
"""

from __future__ import annotations

from typing import Any

from ...core.dims import is_concrete
from ...core.errors import TorchRuntimeError, UnsupportedError
from ...core.tensor import Tensor, apply
from ...ops.convolution import convolution_input_grad
from .windows import as_tuple, pad_spatial


def _listed(shape: tuple) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _padding(padding: Any, n: int, kernel: tuple, stride: tuple, dilation: tuple) -> tuple[tuple, tuple]:
    """(before, after) zero padding per spatial dim; 'same' puts the odd one after, as torch."""
    if padding == "valid":
        return (0,) * n, (0,) * n
    if padding == "same":
        if any(s != 1 for s in stride):
            raise TorchRuntimeError("padding='same' is not supported for strided convolutions")
        total = tuple(d * (k - 1) for k, d in zip(kernel, dilation))
        return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)
    if isinstance(padding, str):
        raise TorchRuntimeError(f"Invalid padding string: '{padding}'")
    both = as_tuple(padding, n, "padding")
    if any(p < 0 for p in both):
        raise TorchRuntimeError("negative padding is not supported")
    return both, both


def _conv(
    input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int, n: int
) -> Tensor:
    if not is_concrete(weight.shape) or not is_concrete(input.shape[-n - 1 :]):
        raise UnsupportedError(
            f"conv{n}d needs concrete channel, kernel and spatial sizes (its windows are slices of the input); "
            "the batch size may be symbolic"
        )
    if input.ndim not in (n + 1, n + 2):
        raise TorchRuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to conv{n}d, but got input of size: "
            f"{_listed(input.shape)}"
        )
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    if weight.ndim != n + 2:
        raise TorchRuntimeError(
            f"weight should have at least three dimensions (got weight of size {_listed(weight.shape)}) for conv{n}d"
        )
    out_channels, group_channels, *kernel = weight.shape
    kernel = tuple(kernel)
    stride, dilation = as_tuple(stride, n, "stride"), as_tuple(dilation, n, "dilation")
    if groups <= 0:
        raise TorchRuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise TorchRuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise TorchRuntimeError("dilation should be greater than zero")
    if x.shape[1] != group_channels * groups or out_channels % groups:
        raise TorchRuntimeError(
            f"Given groups={groups}, weight of size {_listed(weight.shape)}, expected input{_listed(x.shape)} to "
            f"have {group_channels * groups} channels, but got {x.shape[1]} channels instead"
        )
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        raise TorchRuntimeError(
            f"Given weight of size {_listed(weight.shape)}, expected bias to be 1-dimensional with {out_channels} "
            f"elements, but got bias of size {_listed(bias.shape)} instead"
        )
    low, high = _padding(padding, n, kernel, stride, dilation)
    sizes = tuple(size + lo + hi for size, lo, hi in zip(x.shape[2:], low, high))
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(span > size for span, size in zip(spans, sizes)):
        raise TorchRuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, sizes))}). Kernel size: "
            f"({' x '.join(map(str, spans))}). Kernel size can't be greater than actual input size"
        )
    if low != high:  # 'same' with an odd total: the extra row after, as torch pads it
        x = pad_spatial(x, (0,) * n, tuple(h - lo for lo, h in zip(low, high)), 0.0)
    y = apply("convolution", x, weight, stride=stride, padding=low, dilation=dilation, groups=groups)
    if bias is not None:
        y = y + bias.reshape(out_channels, *([1] * n))
    return y if batched else y[0]


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """Σ_c,k weight[o, c, k] · x[n, g·C/groups + c, l·stride + k·dilation] (+ bias[o]), over the zero-padded input;
    ``padding`` may be an int, a tuple, 'valid' or 'same'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """The 2-D convolution (torch's cross-correlation) with ``stride``, ``padding``, ``dilation`` and ``groups``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """The 3-D convolution (torch's cross-correlation) with ``stride``, ``padding``, ``dilation`` and ``groups``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(
    input: Tensor,
    weight: Tensor,
    bias: Any,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
    n: int,
) -> Tensor:
    """The adjoint of conv{n}d in its input, as a convolution: zeros between the input's entries (stride − 1 of
    them), d·(k − 1) − padding entries of padding (+ output_padding after), and the kernel flipped with its
    channels swapped per group, at stride 1."""
    if not is_concrete(weight.shape) or not is_concrete(input.shape[-n - 1 :]):
        raise UnsupportedError(
            f"conv_transpose{n}d needs concrete channel, kernel and spatial sizes; the batch size may be symbolic"
        )
    if input.ndim not in (n + 1, n + 2):
        raise TorchRuntimeError(
            f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to conv_transpose{n}d, but got input of "
            f"size: {_listed(input.shape)}"
        )
    if weight.ndim != n + 2:
        raise TorchRuntimeError(f"weight should have {n + 2} dimensions for conv_transpose{n}d")
    batched = input.ndim == n + 2
    x = input if batched else input.unsqueeze(0)
    in_channels, _, *kernel = weight.shape
    if groups <= 0 or in_channels % groups or x.shape[1] != in_channels:
        raise TorchRuntimeError(
            f"Given transposed=1, weight of size {_listed(weight.shape)}, expected input{_listed(x.shape)} to have "
            f"{in_channels} channels, but got {x.shape[1]} channels instead"
        )
    stride, dilation = as_tuple(stride, n, "stride"), as_tuple(dilation, n, "dilation")
    padding, extra = as_tuple(padding, n, "padding"), as_tuple(output_padding, n, "output_padding")
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
        raise TorchRuntimeError("output padding must be smaller than either stride or dilation")
    kernel = tuple(kernel)
    size = tuple(
        (i - 1) * s - 2 * p + d * (k - 1) + e + 1
        for i, s, p, d, k, e in zip(x.shape[2:], stride, padding, dilation, kernel, extra)
    )
    if any(s <= 0 for s in size):
        raise TorchRuntimeError(f"conv_transpose{n}d of an input of size {_listed(x.shape)} has no output")
    y = convolution_input_grad(x, weight, size, stride=stride, padding=padding, dilation=dilation, groups=groups)
    if bias is not None:
        y = y + bias.reshape(weight.shape[1] * groups, *([1] * n))
    return y if batched else y[0]


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """The transposed 1-D convolution (the gradient of conv1d in its input), with torch's arguments."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """The transposed 2-D convolution (the gradient of conv2d in its input), with torch's arguments."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """The transposed 3-D convolution (the gradient of conv3d in its input), with torch's arguments."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
