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
from ...core.errors import (
    TorchAssertionError,
    TorchNotImplementedError,
    TorchRuntimeError,
    TorchValueError,
    UnsupportedError,
    ValuesUnknownError,
)
from ...core.indexing import note_index_range
from ...core.tensor import Tensor, apply
from ..creation import zeros
from ..pointwise import eq, ne
from ..shape import cat
from .activations import dropout


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
    note_index_range(input, rows)
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise TorchAssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
        is_padding = tensor([[int(r == padding_idx)] for r in range(rows)], dtype="bool")
        weight = apply("where", is_padding, apply("stop_gradient", weight), weight)
    picked = weight.index_select(0, input.reshape(-1))
    return picked.reshape(*input.shape, width)


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Each bag's rows of ``weight`` summed (times ``per_sample_weights``), averaged, or their entrywise max: a bag
    is a row of a 2-D ``input``, or a run of a 1-D one between ``offsets``. Entries equal to ``padding_idx`` are
    left out of their bag (and of its count); an empty bag gives zeros, as torch's kernel."""
    if max_norm is not None:
        raise UnsupportedError("embedding_bag(max_norm=...) renormalises rows of weight in place; renormalise first")
    if scale_grad_by_freq:
        raise UnsupportedError("embedding_bag(scale_grad_by_freq=True) is not supported; scale the gradient yourself")
    if mode not in ("sum", "mean", "max"):
        raise TorchValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise TorchNotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
                f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."
            )
        if per_sample_weights.shape != input.shape:
            raise TorchValueError(
                f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, then it must "
                f"have the same shape as the input ({tuple(input.shape)})"
            )
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise TorchRuntimeError(
                f"padding_idx must be within the number of embeddings, -{rows} through {rows - 1}, "
                f"but got {padding_idx}"
            )
        padding_idx %= rows
    if input.ndim == 2:
        if offsets is not None:
            raise TorchValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                "sequences. However, found offsets of type <class 'torch.Tensor'>"
            )
        return _bags(input, weight, per_sample_weights, mode, padding_idx)  # include_last_offset is ignored
    elif input.ndim != 1:
        raise TorchValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None or offsets.ndim != 1:
        raise TorchValueError("offsets has to be a 1D Tensor" + (" but got None" if offsets is None else ""))
    if not offsets.has_values() or not isinstance(input.shape[0], int):
        raise ValuesUnknownError(
            "embedding_bag of a 1-D input needs the values of offsets and the input's length: its bags' bounds"
        )
    bounds = [int(o) for o in offsets.tolist()]
    if bounds and bounds[0] != 0:
        raise TorchRuntimeError(
            "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
            f"However, got {bounds[0]}"
        )
    if bounds and bounds[-1] > input.shape[0]:
        raise TorchRuntimeError(
            f"offsets[-1] can not be greater than input's length {input.shape[0]} but got offsets[-1] of {bounds[-1]}"
        )
    if any(b > a for a, b in zip(bounds[1:], bounds)):
        raise UnsupportedError(f"embedding_bag with decreasing offsets {bounds}: torch does not define its bags")
    if include_last_offset and mode == "sum" and bounds and bounds[-1] != input.shape[0]:
        # torch's kernels disagree here: sum runs the last bag to the input's end, mean and max stop at offsets[-1]
        raise UnsupportedError(
            f"embedding_bag(mode='sum', include_last_offset=True) with offsets[-1] = {bounds[-1]} short of the "
            f"input's length {input.shape[0]}: end the offsets at the input's length"
        )
    ends = bounds[1:] if include_last_offset else [*bounds[1:], input.shape[0]]
    bags = []
    for start, end in zip(bounds, ends):
        if end <= start:
            bags.append(zeros(1, weight.shape[1], dtype=weight.dtype))
            continue
        weights = None if per_sample_weights is None else per_sample_weights[start:end].unsqueeze(0)
        bags.append(_bags(input[start:end].unsqueeze(0), weight, weights, mode, padding_idx))
    return cat(bags, 0) if bags else zeros(0, weight.shape[1], dtype=weight.dtype)


def _bags(input: Tensor, weight: Tensor, weights: Tensor | None, mode: str, padding_idx: int | None) -> Tensor:
    """embedding_bag of a (bags, n) input: each row's embeddings reduced over the row."""
    picked = embedding(input, weight)
    if weights is not None:
        picked = picked * weights.unsqueeze(-1)
    if padding_idx is None:
        return picked.sum(1) if mode == "sum" else picked.mean(1) if mode == "mean" else picked.max(1).values
    kept = ne(input, padding_idx).unsqueeze(-1)
    fill = float("-inf") if mode == "max" else 0.0
    picked = picked.masked_fill(~kept, fill)
    if mode == "sum":
        return picked.sum(1)
    counts = kept.sum(1)
    if mode == "mean":
        return picked.sum(1) / counts.clamp_min(1).to(picked.dtype)
    return picked.max(1).values.masked_fill(eq(counts, 0), 0.0)


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
    ``dropout_p > 0`` drops attention weights as torch's kernel does (its noise drawn from torch's generator)."""
    weights, value = attention_weights(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    if dropout_p:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


def attention_weights(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Any = None,
    is_causal: bool = False,
    scale: Any = None,
    enable_gqa: bool = False,
) -> tuple[Tensor, Tensor]:
    """scaled_dot_product_attention's weights, softmax(Q Kᵀ · scale + mask), and the values they weigh (repeated
    over the query's heads with ``enable_gqa``): the attention is ``dropout(weights) @ value``."""
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
    if keep is not None:  # added as a bias of -inf, as torch's kernel does: a nan or inf score still propagates
        bias = apply("where", keep, 0.0, -math.inf)  # in the scores' dtype, as torch's kernel makes it
        scores = scores + (bias if bias.dtype == scores.dtype else bias.to(scores.dtype))
    empty = _masked_rows(keep, attn_mask, scores.shape)
    if empty is None:
        return scores.softmax(-1), value
    return apply("where", empty, 0.0, apply("where", empty, 0.0, scores).softmax(-1)), value


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
