"""Dropout modules: the input itself in eval mode or with ``p=0``, zeros with ``p=1`` in training (as torch).
In training, Dropout multiplies by noise drawn as torch draws it (see F.dropout); the channel and alpha
dropouts' masks are not drawn yet, and are refused.

>>> import symgrad.torch as torch
>>> drop = torch.nn.Dropout(0.5).eval()
>>> drop(torch.tensor([1.0, 2.0])).tolist()
[1.0, 2.0]
"""

from __future__ import annotations

from ....core.errors import TorchValueError, UnsupportedError
from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from .module import Module


class Dropout(Module):
    """Zeroes entries with probability ``p`` in training and scales the rest by 1 / (1 - p), drawing from the
    generator of symgrad.torch.manual_seed as torch draws; the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise TorchValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def _refuse_random_mask(self) -> None:
        if self.training and 0 < self.p < 1:
            raise UnsupportedError(
                f"{type(self).__name__}(p={self.p}) in training mode draws a random mask that symgrad cannot "
                "reproduce yet; call .eval(), or multiply by a mask of your own: input * mask / (1 - p)"
            )

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class _ChannelDropout(Dropout):
    def forward(self, input: Tensor) -> Tensor:
        self._refuse_random_mask()
        if not self.training or self.p == 0:
            return input
        return input * 0.0  # p == 1: every channel dropped


class Dropout1d(_ChannelDropout):
    """Zeroes whole channels in training (refused unless p is 0 or 1); the identity in eval mode."""


class Dropout2d(_ChannelDropout):
    """Zeroes whole channels in training (refused unless p is 0 or 1); the identity in eval mode."""


class AlphaDropout(_ChannelDropout):
    """SELU-preserving dropout in training (refused unless p is 0 or 1); the identity in eval mode."""


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d"]
