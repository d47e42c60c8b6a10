"""Loss modules: each keeps its options (``reduction``, class ``weight``, …) and calls its function of
:mod:`symgrad.torch.nn.functional`. Class weights are buffers, as in torch.

>>> import symgrad.torch as torch
>>> loss = torch.nn.MSELoss(reduction="sum")
>>> loss(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 0.0])).item()
5.0
"""

from __future__ import annotations

from typing import Any

from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from ..losses import legacy_reduction
from .module import Module


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight: Any = None, size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """mean((input − target)²) (or its sum, or the squares with ``reduction="none"``)."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """mean(|input − target|); the gradient is 0 where they are equal, as torch's."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d² / beta where |d| < beta, else |d| − 0.5 beta."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d² where |d| < delta, else delta (|d| − 0.5 delta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """target · (log target − input), input being log-probabilities (``log_target``: so is the target)."""

    def __init__(
        self, size_average: Any = None, reduce: Any = None, reduction: str = "mean", log_target: bool = False
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class BCELoss(_WeightedLoss):
    """−(t log p + (1 − t) log(1 − p)), the logs clamped at −100 as torch's."""

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """BCELoss of sigmoid(input), computed stably; ``pos_weight`` weighs the positive term."""

    def __init__(
        self, weight: Any = None, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
        pos_weight: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Any) -> Tensor:
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class NLLLoss(_WeightedLoss):
    """−weight[t] · input[n, t] at each class target t, averaged by the weights (``ignore_index`` left out)."""

    def __init__(
        self, weight: Any = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
        reduction: str = "mean",
    ) -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax over the class dim then NLL (class targets) or −Σ target · log_softmax (probability targets)."""

    def __init__(
        self, weight: Any = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
        reduction: str = "mean", label_smoothing: float = 0.0,
    ) -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(
            input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )  # fmt: skip


__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
    "SmoothL1Loss",
]  # fmt: skip
