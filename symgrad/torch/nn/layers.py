"""Layers of ``torch.nn.functional`` that combine inputs with parameters: ``linear``, ``embedding``, attention.

>>> import symgrad.torch as torch
>>> x = torch.tensor([[1.0, 2.0]], name="x")
>>> w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], requires_grad=True, name="w")
>>> torch.nn.functional.linear(x, w).tolist()
[[1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from ...core.constructors import tensor
from ...core.dtypes import is_floating
from ...core.errors import TorchAssertionError, TorchRuntimeError, UnsupportedError
from ...core.tensor import Tensor, apply


def linear(input: Tensor, weight: Tensor, bias: Any = None) -> Tensor:
    """``input @ weight.mT + bias`` (a 1-D weight gives ``input @ weight``)."""
    out = input @ (weight.mT if weight.ndim >= 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Any = None) -> Tensor:
    """Σ_ij input1[..., i] · weight[o, i, j] · input2[..., j] (+ bias[o]) for every output feature o."""
    from ..products import einsum

    if input1.ndim != input2.ndim:
        raise TorchRuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for axis, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise TorchRuntimeError(f"bilinear(): input batch dimensions do not match at dim {axis}: got {a} and {b}")
    if weight.ndim != 3:
        raise TorchRuntimeError(f"bilinear(): weight must be three-dimensional, but got {weight.ndim}-dimensional")
    if input1.shape[-1] != weight.shape[1]:
        raise TorchRuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected {weight.shape[1]}"
        )
    if input2.shape[-1] != weight.shape[2]:
        raise TorchRuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected {weight.shape[2]}"
        )
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    if bias is None:
        return out
    if bias.ndim != 1 or bias.shape[0] != weight.shape[0]:
        raise TorchRuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[-1]} but expected {weight.shape[0]}"
        )
    return out + bias


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """The rows of ``weight`` at the indices ``input``: shape ``input.shape + (embedding_dim,)``. The gradient adds
    each position's gradient into its row, except the ``padding_idx`` row, whose gradient is 0 (as torch's).
    ``sparse=True`` gives the same numbers (torch's gradient is then a sparse tensor)."""
    if max_norm is not None:
        raise UnsupportedError(
            "embedding(max_norm=...) renormalises rows of weight in place; renormalise the weight yourself first"
        )
    if scale_grad_by_freq:
        raise UnsupportedError("embedding(scale_grad_by_freq=True) is not supported; scale the gradient yourself")
    if weight.ndim != 2:
        raise TorchRuntimeError("'weight' must be 2-D")
    if is_floating(input.dtype) or input.dtype == "bool":
        raise TorchRuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
            f"torch.{'DoubleTensor' if input.dtype == 'float64' else 'FloatTensor'} instead (while checking "
            "arguments for embedding)"
        )
    rows, width = weight.shape
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise TorchAssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
        is_padding = tensor([[int(r == padding_idx)] for r in range(rows)], dtype="bool")
        weight = apply("where", is_padding, apply("stop_gradient", weight), weight)
    picked = weight.index_select(0, input.reshape(-1))
    return picked.reshape(*input.shape, width)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: Any = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(Q Kᵀ · scale + mask) V, scale 1/√E by default. A boolean mask (or ``is_causal``) keeps the scores
    where it is True (−inf elsewhere), a float mask is added; a row with every score masked gives 0, as torch's.
    ``dropout_p > 0`` draws a random mask, which symgrad cannot reproduce (refused)."""
    if dropout_p:
        raise UnsupportedError(
            f"scaled_dot_product_attention(dropout_p={dropout_p}) draws a random mask that symgrad cannot "
            "reproduce; use dropout_p=0.0"
        )
    if is_causal and attn_mask is not None:
        raise TorchRuntimeError(
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
        )
    if enable_gqa:
        key, value = _repeat_heads(key, query, "key"), _repeat_heads(value, query, "value")
    width = query.shape[-1]
    if scale is None:  # a float, as torch's 1 / sqrt(E); a symbolic E keeps 1 / sqrt(E) exact
        scale = 1 / math.sqrt(width) if isinstance(width, int) else 1 / sympy.sqrt(width)
    scores = (query @ key.mT) * scale
    keep = _causal_mask(query.shape[-2], key.shape[-2]) if is_causal else None
    if attn_mask is not None and attn_mask.dtype == "bool":
        keep = attn_mask
    elif attn_mask is not None:
        scores = scores + attn_mask
    if keep is not None:
        scores = apply("where", keep, scores, -math.inf)
    empty = _masked_rows(keep, attn_mask, scores.shape)
    if empty is None:
        return scores.softmax(-1) @ value
    weights = apply("where", empty, 0.0, apply("where", empty, 0.0, scores).softmax(-1))
    return weights @ value


def _repeat_heads(t: Tensor, query: Tensor, what: str) -> Tensor:
    """``t.repeat_interleave(H / H_t, dim=-3)``: each of the key's (value's) heads serves H / H_t query heads."""
    heads, own = query.shape[-3], t.shape[-3]
    if not isinstance(heads, int) or not isinstance(own, int) or heads % own:
        raise TorchRuntimeError(f"number of heads in {what} must divide the number of heads in query ({own}, {heads})")
    if heads == own:
        return t
    *batch, _, rows, width = t.shape
    spread = t.unsqueeze(-3).expand(*batch, own, heads // own, rows, width)
    return spread.reshape(*batch, heads, rows, width)


def _causal_mask(rows: Any, cols: Any) -> Tensor:
    if not isinstance(rows, int) or not isinstance(cols, int):
        raise UnsupportedError("is_causal=True needs concrete sizes L and S; give a boolean attn_mask")
    return tensor(np.tril(np.ones((rows, cols), dtype=int)).tolist(), dtype="bool")


def _masked_rows(keep: Any, attn_mask: Any, shape: tuple) -> Tensor | None:
    """A boolean constant, True on the rows whose every score is masked (−inf), or None when there is none."""
    mask = keep if keep is not None else attn_mask
    if mask is None or not mask.has_values() or not all(isinstance(d, int) for d in shape):
        return None
    values = np.broadcast_to(np.array(mask.tolist(), dtype=float), tuple(shape[-mask.ndim :]) if mask.ndim else ())
    blocked = values == 0 if mask.dtype == "bool" else values == -math.inf
    rows = blocked.all(axis=-1, keepdims=True) if blocked.ndim else blocked
    if not rows.any():
        return None
    return tensor(rows.astype(int).tolist(), dtype="bool")


__all__ = ["bilinear", "embedding", "linear", "scaled_dot_product_attention"]
