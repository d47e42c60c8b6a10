"""``nn.Embedding``: rows of a learnt table picked by integer indices.

>>> import symgrad.torch as torch
>>> table = torch.nn.Embedding.from_pretrained(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
>>> table(torch.tensor([1, 1, 0])).tolist()
[[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]]
"""

from __future__ import annotations

from typing import Any

from ....core.errors import TorchAssertionError
from ....core.tensor import Tensor
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import torch_layer
from .module import Module
from .parameter import Parameter


def _padding_index(padding_idx: int | None, rows: int) -> int | None:
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise TorchAssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % rows


class Embedding(Module):
    """A table of ``num_embeddings`` rows of width ``embedding_dim`` (torch's N(0, 1) start, the ``padding_idx``
    row zero); ``forward(indices)`` picks rows, and the padding row gets no gradient."""

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None, max_norm: float | None = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False, _weight: Any = None,
        _freeze: bool = False, device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            real = torch_layer("Embedding", num_embeddings, embedding_dim, padding_idx, device=device, dtype=dtype)
            self.weight = Parameter(real.weight, requires_grad=not _freeze)
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise TorchAssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    @classmethod
    def from_pretrained(
        cls, embeddings: Any, freeze: bool = True, padding_idx: int | None = None, max_norm: float | None = None,
        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
    ) -> Embedding:  # fmt: skip
        """An embedding whose table is ``embeddings`` (frozen, without gradient, unless ``freeze=False``)."""
        if len(embeddings.shape) != 2:
            raise TorchAssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
            _freeze=freeze,
        )  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


__all__ = ["Embedding"]
