"""Normalisations of ``torch.nn.functional``: layer, batch, group and RMS norms, ``normalize``, cosine similarity.

Each is a composite of ops (means, variances, norms), so its gradient is what torch's autograd
gives, at symbolic sizes too: ``layer_norm(X, (d,))`` of an ``n×d`` ``X`` has a law.

>>> import symgrad as sg
>>> import symgrad.torch as torch
>>> n, d = sg.dims("n d")
>>> X = sg.symbols("X", (n, d))
>>> torch.nn.functional.layer_norm(X, (d,)).shape
(n, d)
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

from ...core.dims import broadcast_shapes, is_concrete, normalize_dim, same_dim
from ...core.dtypes import is_floating
from ...core.errors import ShapeError, TorchIndexError, TorchRuntimeError, TorchValueError, UnsupportedError
from ...core.tensor import Tensor, apply

_FLOAT_EPS = {  # torch.finfo(dtype).eps
    "float64": 2.220446049250313e-16,
    "float32": 1.1920928955078125e-07,
    "bfloat16": 0.0078125,
    "float16": 0.0009765625,
}
_LOW_PRECISION = ("bfloat16", "float16")


def _at_parameters_precision(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """torch's mixed-precision normalisations: a bfloat16 or float16 input with parameters (or running
    statistics) of another floating dtype is normalised at theirs, and the result given in the input's dtype,
    rounded once (the kernel computes in float32 and writes the input's dtype)."""

    @functools.wraps(fn)
    def normalised(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor) or input.dtype not in _LOW_PRECISION:
            return fn(input, *args, **kwargs)
        wider = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and is_floating(a.dtype)]
        wider = [dtype for dtype in wider if dtype != input.dtype]
        if wider:
            return fn(input.to(wider[0]), *args, **kwargs).to(input.dtype)
        return fn(input, *args, **kwargs)

    return normalised


def _listed(shape: Any) -> str:
    return f"[{', '.join(map(str, shape))}]"


def _normalized_dims(input: Tensor, normalized_shape: Any, what: str) -> tuple[tuple, tuple[int, ...]]:
    """The normalised shape as a tuple and the trailing dims of ``input`` it covers, with torch's error."""
    shape = (normalized_shape,) if not isinstance(normalized_shape, (tuple, list)) else tuple(normalized_shape)
    k = len(shape)
    trailing = tuple(input.shape[input.ndim - k :]) if 0 < k <= input.ndim else None
    if trailing is None or not all(same_dim(a, b) for a, b in zip(trailing, shape)):
        listed = ", ".join(map(str, shape))
        raise ShapeError(
            f"Given normalized_shape=[{listed}], expected input with shape [*, {listed}], but got input of "
            f"size{_listed(input.shape)}"
        )
    return shape, tuple(range(input.ndim - k, input.ndim))


def _affine_parameter(parameter: Any, shape: tuple, name: str) -> None:
    if parameter is not None and (
        len(parameter.shape) != len(shape) or not all(same_dim(a, b) for a, b in zip(parameter.shape, shape))
    ):
        raise ShapeError(
            f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
            f"{_listed(parameter.shape)} and normalized_shape = {_listed(shape)}"
        )


def _affine(out: Tensor, weight: Any, bias: Any) -> Tensor:
    if weight is not None:
        out = out * weight
    return out + bias if bias is not None else out


def layer_norm(input: Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Tensor:
    """(x − mean) / sqrt(var + eps) · weight + bias over the trailing ``normalized_shape`` dims (var biased);
    the sizes may be dimension symbols."""
    shape, dims = _normalized_dims(input, normalized_shape, "layer_norm")
    _affine_parameter(weight, shape, "weight")
    _affine_parameter(bias, shape, "bias")
    # one op (torch's native_layer_norm, forward and backward); with a weight alone, it is applied after it
    if weight is not None and bias is not None:
        return apply("layer_norm_affine", input, weight, bias, n=len(dims), eps=eps)
    return _affine(apply("layer_norm", input, n=len(dims), eps=eps), weight, bias)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x²) + eps) · weight over the trailing dims; eps defaults to the dtype's machine epsilon."""
    shape, dims = _normalized_dims(input, normalized_shape, "rms_norm")
    _affine_parameter(weight, shape, "weight")
    if eps is None:
        eps = _FLOAT_EPS.get(input.dtype, _FLOAT_EPS["float32"])
    if input.dtype in _LOW_PRECISION and weight is not None and weight.dtype != input.dtype:  # as torch's kernel
        return rms_norm(input.to(weight.dtype), normalized_shape, weight, eps).to(input.dtype)
    out = input * apply("rsqrt", (input * input).mean(dim=dims, keepdim=True) + eps)
    return _affine(out, weight, None)


def _channel_view(parameter: Tensor, ndim: int) -> Tensor:
    """A per-channel (C,) tensor shaped (1, C, 1, ...) to broadcast against (N, C, *)."""
    return parameter.reshape(1, parameter.shape[0], *([1] * (ndim - 2))) if ndim > 2 else parameter


def _check_channels(parameter: Any, channels: Any, name: str) -> None:
    if parameter is not None and (parameter.ndim != 1 or not same_dim(parameter.shape[0], channels)):
        raise ShapeError(f"{name} should contain {channels} elements not {parameter.shape[0] if parameter.ndim else 1}")


@_at_parameters_precision
def batch_norm(
    input: Tensor,
    running_mean: Any,
    running_var: Any,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float | None = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over every dim but the channel dim 1: with the batch's mean and biased variance when
    ``training`` (and, as torch, update ``running_mean``/``running_var`` in place with ``momentum``, the variance
    unbiased), else with the running statistics. Then ``· weight + bias`` per channel."""
    if input.ndim < 2:
        if input.numel() == 0:
            return input * 1.0
        raise TorchIndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    channels = input.shape[1]
    parameters = ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"), (bias, "bias"))
    for parameter, name in parameters:
        _check_channels(parameter, channels, name)
    dims = (0, *range(2, input.ndim))
    if training:
        count = math.prod(input.shape[d] for d in dims) if is_concrete(input.shape) else None
        if count == 1:
            size = ", ".join(map(str, input.shape))
            raise TorchValueError(
                f"Expected more than 1 value per channel when training, got input size torch.Size([{size}])"
            )
        mean = input.mean(dim=dims, keepdim=True)
        centered = input - mean
        variance = (centered * centered).mean(dim=dims, keepdim=True)
        _update_running(running_mean, running_var, mean, variance, count, momentum)
        if count == 0:  # no entries: the pieces give torch's empty result without a kernel's statistics
            out = centered * apply("rsqrt", variance + eps)
        elif weight is not None and bias is not None:  # torch's one kernel, whose backward gives all three gradients
            return apply("batch_norm_affine", input, weight, bias, eps=eps)
        else:
            out = apply("batch_norm", input, eps=eps)
    else:
        if running_mean is None:
            raise TorchRuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise TorchRuntimeError("running_var must be defined in evaluation mode")
        out = (input - _channel_view(running_mean, input.ndim)) * apply(
            "rsqrt", _channel_view(running_var, input.ndim) + eps
        )
    return _affine(
        out,
        None if weight is None else _channel_view(weight, input.ndim),
        None if bias is None else _channel_view(bias, input.ndim),
    )


def _update_running(running_mean: Any, running_var: Any, mean: Tensor, variance: Tensor, count: Any, momentum) -> None:
    """torch's side effect in training mode: running = (1 − momentum) · running + momentum · batch statistic."""
    if running_mean is None and running_var is None:
        return
    if momentum is None:
        raise UnsupportedError("batch_norm(momentum=None) (a cumulative average) is not supported; give a momentum")
    if count is None:
        raise UnsupportedError(
            "batch_norm(training=True) cannot update running statistics in place at symbolic sizes; "
            "pass running_mean=None and running_var=None"
        )
    channels = mean.numel()
    if running_mean is not None:
        running_mean.mul_(1 - momentum).add_(mean.reshape(channels) * momentum)
    if running_var is not None:
        unbiased = variance.reshape(channels) * (count / (count - 1))
        running_var.mul_(1 - momentum).add_(unbiased * momentum)


def running_statistics(
    input: Tensor, running_mean: Any, running_var: Any, momentum: float
) -> tuple[Tensor | None, Tensor | None]:
    """What batch_norm in training mode makes of its running statistics, as new tensors (at any size, symbolic
    ones included): (1 − momentum) · running + momentum · the batch's mean and its unbiased variance."""
    dims = (0, *range(2, input.ndim))
    mean = input.mean(dim=dims, keepdim=True)
    centered = input - mean
    variance = (centered * centered).mean(dim=dims, keepdim=True)
    count = functools.reduce(operator.mul, (input.shape[d] for d in dims), 1)
    return _running_values(running_mean, running_var, mean, variance, count, momentum)


def _running_values(running_mean: Any, running_var: Any, mean: Tensor, variance: Tensor, count: Any, momentum) -> tuple:
    channels = mean.numel()
    new_mean = new_var = None
    if running_mean is not None:
        new_mean = running_mean * (1 - momentum) + mean.reshape(channels) * momentum
    if running_var is not None:
        unbiased = variance.reshape(channels) * (count / (count - 1))
        new_var = running_var * (1 - momentum) + unbiased * momentum
    return new_mean, new_var


@_at_parameters_precision
def group_norm(input: Tensor, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Tensor:
    """Normalise each sample over groups of ``C / num_groups`` channels (and all spatial dims), then
    ``· weight + bias`` per channel."""
    if input.ndim < 2:
        raise TorchRuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    batch, channels, *spatial = input.shape
    if not is_concrete((channels,)) or channels % num_groups != 0:
        raise ShapeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{_listed(input.shape)} and num_groups={num_groups}"
        )
    _check_channels(weight, channels, "weight")
    _check_channels(bias, channels, "bias")
    per_group = channels // num_groups
    for d in spatial:
        per_group = per_group * d
    grouped = input.reshape(batch, num_groups, per_group)
    centered = grouped - grouped.mean(dim=2, keepdim=True)
    variance = (centered * centered).mean(dim=2, keepdim=True)
    out = (centered * apply("rsqrt", variance + eps)).reshape(*input.shape)
    return _affine(
        out,
        None if weight is None else _channel_view(weight, input.ndim),
        None if bias is None else _channel_view(bias, input.ndim),
    )


def _broadcast_pair(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    shape = broadcast_shapes(x1.shape, x2.shape)
    return tuple(t if tuple(t.shape) == tuple(shape) else t.expand(*shape) for t in (x1, x2))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Σ (x1 / ‖x1‖) (x2 / ‖x2‖) along ``dim``, each norm at least ``eps``. As torch, the norms are clamped
    without a gradient of their own: the gradient is the unclamped one's."""
    x1, x2 = _broadcast_pair(x1, x2)
    axis = normalize_dim(dim, x1.ndim)
    n1 = apply("clamp_min_nograd", apply("norm", x1, dim=(axis,), keepdim=True), min=eps)
    n2 = apply("clamp_min_nograd", apply("norm", x2, dim=(axis,), keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim=axis)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Any = None) -> Tensor:
    """x / max(‖x‖_p, eps) along ``dim``, as torch: the clamp blocks the gradient below eps, and the norm's own
    gradient is torch's (0 where the norm is 0)."""
    if out is not None:
        raise UnsupportedError("normalize(out=...) is not supported; use the returned tensor")
    norm = input.norm(p, normalize_dim(dim, input.ndim), keepdim=True)
    return input / apply("clamp", norm, min=eps, max=None)


__all__ = ["batch_norm", "cosine_similarity", "group_norm", "layer_norm", "normalize", "rms_norm"]
