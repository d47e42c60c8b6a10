"""``nn.MultiheadAttention``, computed as torch's ``multi_head_attention_forward`` computes it.

Query, key and value are projected, split into heads, attended (softmax(Q Kᵀ / √d + mask) V), merged and
projected out. Boolean masks (``attn_mask``, ``key_padding_mask``) mark with True what may *not* be attended, as
torch's; float masks are added to the scores. ``need_weights=True`` (the default) also returns the attention
weights, averaged over the heads unless ``average_attn_weights=False``.

>>> import symgrad.torch as torch
>>> attention = torch.nn.MultiheadAttention(4, 2, batch_first=True)
>>> x = torch.zeros(3, 5, 4)
>>> out, weights = attention(x, x, x)
>>> out.shape, weights.shape
((3, 5, 4), (3, 5, 5))
"""

from __future__ import annotations

import math
from typing import Any

from ....core.dtypes import is_floating
from ....core.errors import TorchAssertionError, TorchRuntimeError, UnsupportedError
from ....core.tensor import Tensor
from ... import creation, pointwise, shape
from .. import functional as F  # noqa: N812 - torch spells it F
from .initial import torch_layer
from .linear import NonDynamicallyQuantizableLinear, linear_layer
from .module import Module
from .parameter import Parameter


def _float_mask(mask: Any, name: str) -> Any:
    """torch's ``_canonical_mask``: a boolean mask as 0 / −inf (True: blocked), a float mask as it is."""
    if mask is None or is_floating(mask.dtype):
        return mask
    if mask.dtype != "bool":
        raise TorchAssertionError(f"only bool and floating types of {name} are supported")
    return pointwise.where(mask, -math.inf, 0.0)


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads of width ``embed_dim / num_heads``; inputs are (L, N, E), or (N, L, E)
    with ``batch_first=True``, or unbatched (L, E). ``dropout`` applies in training only, where it is refused."""

    def __init__(
        self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, add_bias_kv: bool = False,
        add_zero_attn: bool = False, kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
        device: Any = None, dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__()
        real = torch_layer(
            "MultiheadAttention", embed_dim, num_heads, dropout, bias, add_bias_kv, add_zero_attn, kdim, vdim,
            batch_first, device=device, dtype=dtype,
        )  # fmt: skip
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim, self.vdim, self.head_dim = real.kdim, real.vdim, real.head_dim
        self.add_zero_attn = add_zero_attn
        names = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias")
        for name in names:
            value = getattr(real, name)
            if value is None:
                self.register_parameter(name, None)
            else:
                setattr(self, name, Parameter(value))
        self.out_proj = linear_layer(real.out_proj.weight, real.out_proj.bias, NonDynamicallyQuantizableLinear)
        for name in ("bias_k", "bias_v"):
            value = getattr(real, name)
            if value is None:
                object.__setattr__(self, name, None)
            else:
                setattr(self, name, Parameter(value))

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None, need_weights: bool = True,
        attn_mask: Any = None, average_attn_weights: bool = True, is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        if self.training and self.dropout > 0:
            raise UnsupportedError(
                f"MultiheadAttention(dropout={self.dropout}) in training mode: symgrad.torch's own attention has no "
                "dropout; call .eval(), use dropout=0.0, or sg.trace torch's module, which draws torch's mask"
            )
        batched = query.ndim == 3
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        out, weights = self._attend(
            query, key, value, _float_mask(key_padding_mask, "key_padding_mask"), need_weights,
            attn_mask, average_attn_weights, is_causal,
        )  # fmt: skip
        if not batched:
            return out.squeeze(1), None if weights is None else weights.squeeze(0)
        return (out.transpose(0, 1) if self.batch_first else out), weights

    def _projections(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        E = self.embed_dim
        biases = (None, None, None) if self.in_proj_bias is None else self.in_proj_bias.chunk(3)
        if self.in_proj_weight is not None:
            weights = tuple(self.in_proj_weight[i * E : (i + 1) * E] for i in range(3))
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))  # type: ignore

    def _attend(
        self, query: Tensor, key: Tensor, value: Tensor, padding: Any, need_weights: bool, attn_mask: Any,
        average: bool, is_causal: bool,
    ) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        tgt_len, bsz, embed_dim = query.shape
        heads, head_dim = self.num_heads, self.head_dim
        if is_causal and attn_mask is None:
            raise TorchRuntimeError(
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask."
            )
        causal = is_causal and padding is None and not need_weights
        attn_mask = None if causal else _float_mask(attn_mask, "attn_mask")
        q, k, v = self._projections(query, key, value)
        if attn_mask is not None:
            attn_mask = self._checked_mask(attn_mask, tgt_len, key.shape[0], bsz)
        if self.bias_k is not None and self.bias_v is not None:
            k = shape.cat([k, self.bias_k.repeat(1, bsz, 1)])
            v = shape.cat([v, self.bias_v.repeat(1, bsz, 1)])
            attn_mask = None if attn_mask is None else shape.pad(attn_mask, (0, 1))
            padding = None if padding is None else shape.pad(padding, (0, 1))
        q = q.reshape(tgt_len, bsz * heads, head_dim).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * heads, head_dim).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * heads, head_dim).transpose(0, 1)
        if self.add_zero_attn:
            zeros = creation.zeros(bsz * heads, 1, head_dim)
            k, v = shape.cat([k, zeros], dim=1), shape.cat([v, zeros], dim=1)
            attn_mask = None if attn_mask is None else shape.pad(attn_mask, (0, 1))
            padding = None if padding is None else shape.pad(padding, (0, 1))
        src_len = k.shape[1]
        if padding is not None:
            padding = (
                padding.reshape(bsz, 1, 1, src_len).expand(bsz, heads, 1, src_len).reshape(bsz * heads, 1, src_len)
            )
            attn_mask = padding if attn_mask is None else attn_mask + padding
        if need_weights:
            scores = (q * math.sqrt(1.0 / float(head_dim))) @ k.transpose(-2, -1)
            weights = (scores if attn_mask is None else attn_mask + scores).softmax(-1)
            out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
            out = self.out_proj(out).reshape(tgt_len, bsz, embed_dim)
            weights = weights.reshape(bsz, heads, tgt_len, src_len)
            return out, (weights.mean(dim=1) if average else weights)
        if attn_mask is not None:
            attn_mask = (
                attn_mask.unsqueeze(0)
                if attn_mask.shape[0] == 1 and attn_mask.ndim == 3
                else attn_mask.reshape(bsz, heads, -1, src_len)
            )
        q, k, v = (t.reshape(bsz, heads, t.shape[1], head_dim) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask, 0.0, causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        return self.out_proj(out).reshape(tgt_len, bsz, embed_dim), None

    def _checked_mask(self, mask: Tensor, tgt_len: int, src_len: int, bsz: int) -> Tensor:
        if mask.ndim == 2:
            if tuple(mask.shape) != (tgt_len, src_len):
                raise TorchRuntimeError(
                    f"The shape of the 2D attn_mask is torch.Size({list(mask.shape)}), but should be "
                    f"{(tgt_len, src_len)}."
                )
            return mask.unsqueeze(0)
        if mask.ndim == 3:
            expected = (bsz * self.num_heads, tgt_len, src_len)
            if tuple(mask.shape) != expected:
                raise TorchRuntimeError(
                    f"The shape of the 3D attn_mask is torch.Size({list(mask.shape)}), but should be {expected}."
                )
            return mask
        raise TorchRuntimeError(f"attn_mask's dimension {mask.ndim} is not supported")

    def extra_repr(self) -> str:
        return ""


__all__ = ["MultiheadAttention"]
