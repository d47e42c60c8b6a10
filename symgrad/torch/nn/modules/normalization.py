"""Normalisation modules: ``LayerNorm``, ``RMSNorm``, ``GroupNorm`` and ``BatchNorm1d``/``BatchNorm2d``.

Batch norm in training mode normalises with the batch's statistics and, when the numbers are known, updates its
running statistics as torch does (``momentum``, or a cumulative average with ``momentum=None``); in eval mode
it normalises with them, and they appear in the formulas as the buffers' symbols (``bn_running_mean_0``).

>>> import symgrad.torch as torch
>>> bn = torch.nn.BatchNorm1d(1)
>>> out = bn(torch.tensor([[1.0], [3.0]]))
>>> bn.running_mean.tolist(), bn.running_var.tolist(), bn.num_batches_tracked.item()
([0.2], [1.1], 1)
"""

from __future__ import annotations

from typing import Any

from ....core.dims import is_concrete
from ....core.errors import TorchNotImplementedError, TorchValueError, UnsupportedError
from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import initial_parameters
from .module import Module
from .parameter import Parameter, leaf_of


def _shape(normalized_shape: Any) -> tuple:
    return tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else (normalized_shape,)


class LayerNorm(Module):
    """(x − mean) / sqrt(var + eps) · weight + bias over the trailing ``normalized_shape`` dims."""

    def __init__(
        self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.normalized_shape, self.eps, self.elementwise_affine = _shape(normalized_shape), eps, elementwise_affine
        shape = self.normalized_shape
        shapes = {
            "weight": shape if elementwise_affine else None,
            "bias": shape if elementwise_affine and bias else None,
        }
        state = initial_parameters(
            "LayerNorm", shapes, shape, eps, elementwise_affine=elementwise_affine, bias=bias, device=device,
            dtype=dtype,
        )  # fmt: skip
        for name, value in state.items():
            if value is None:
                self.register_parameter(name, None)
            else:
                setattr(self, name, Parameter(value))

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class RMSNorm(Module):
    """x / sqrt(mean(x²) + eps) · weight over the trailing dims (eps: the dtype's machine epsilon by default)."""

    def __init__(
        self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True, device: Any = None,
        dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.normalized_shape, self.eps, self.elementwise_affine = _shape(normalized_shape), eps, elementwise_affine
        shapes = {"weight": self.normalized_shape if elementwise_affine else None}
        state = initial_parameters(
            "RMSNorm", shapes, self.normalized_shape, eps, elementwise_affine, device=device, dtype=dtype
        )
        if elementwise_affine:
            self.weight = Parameter(state["weight"])
        else:
            self.register_parameter("weight", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalises each sample over groups of ``num_channels / num_groups`` channels, then ``· weight + bias``."""

    def __init__(
        self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device: Any = None,
        dtype: Any = None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        if isinstance(num_channels, int) and num_channels % num_groups != 0:
            raise TorchValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        shapes = {"weight": (num_channels,) if affine else None, "bias": (num_channels,) if affine and bias else None}
        state = initial_parameters(
            "GroupNorm", shapes, num_groups, num_channels, eps, affine, device=device, dtype=dtype, bias=bias
        )
        for name, value in state.items():
            if value is None:
                self.register_parameter(name, None)
            else:
                setattr(self, name, Parameter(value))

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _BatchNorm(Module):
    kind = ""

    def __init__(
        self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
        track_running_stats: bool = True, device: Any = None, dtype: Any = None, *, bias: bool = True,
    ) -> None:  # fmt: skip
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        channels = (num_features,)
        shapes = {
            "weight": channels if affine else None,
            "bias": channels if affine and bias else None,
            "running_mean": channels if track_running_stats else None,
            "running_var": channels if track_running_stats else None,
        }
        state = initial_parameters(
            self.kind, shapes, num_features, eps, momentum, affine, track_running_stats, device=device, dtype=dtype,
            bias=bias,
        )  # fmt: skip
        for name in ("weight", "bias"):
            if state[name] is None:
                self.register_parameter(name, None)
            else:
                setattr(self, name, Parameter(state[name]))
        for name in ("running_mean", "running_var"):
            self.register_buffer(name, None if state[name] is None else leaf_of(state[name], name, False))
        count = leaf_of(0, "num_batches_tracked", False, dtype="int64") if track_running_stats else None
        self.register_buffer("num_batches_tracked", count)

    def _check_input_dim(self, input: Tensor) -> None:
        raise TorchNotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        updating = self.training and self.track_running_stats
        if updating:
            if not is_concrete(input.shape):
                raise UnsupportedError(
                    f"{type(self).__name__} in training mode cannot update its running statistics at symbolic sizes; "
                    "use track_running_stats=False, or eval()"
                )
            if self.num_batches_tracked is not None:
                count = int(self.num_batches_tracked.item()) + 1
                self.num_batches_tracked = leaf_of(count, "num_batches_tracked", False, dtype="int64")
                if self.momentum is None:
                    factor = 1.0 / count
        batch_statistics = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        out = F.batch_norm(
            input, self.running_mean if keep else None, self.running_var if keep else None, self.weight, self.bias,
            batch_statistics, factor, self.eps,
        )  # fmt: skip
        if updating:
            self._settle()
        return out

    def _settle(self) -> None:
        """The updated running statistics as leaves of their numbers (formulas of the batch when it is symbolic)."""
        for name in ("running_mean", "running_var"):
            updated = self._buffers[name]
            if updated is not None and updated.has_values():
                setattr(self, name, leaf_of(updated, name, False))

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs, per channel C."""

    kind = "BatchNorm1d"

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in (2, 3):
            raise TorchValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs, per channel C."""

    kind = "BatchNorm2d"

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim != 4:
            raise TorchValueError(f"expected 4D input (got {input.ndim}D input)")


__all__ = ["BatchNorm1d", "BatchNorm2d", "GroupNorm", "LayerNorm", "RMSNorm"]
