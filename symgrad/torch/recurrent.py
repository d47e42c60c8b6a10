"""The recurrent cells torch's ``nn.RNNCell``, ``nn.GRUCell`` and ``nn.LSTMCell`` call, as compositions.

>>> import symgrad.torch as torch
>>> x, h = torch.tensor([[1.0, -1.0]], name="x"), torch.tensor([[0.5]], name="h")
>>> w_ih, w_hh = torch.tensor([[0.2, 0.3]], name="w_ih"), torch.tensor([[0.4]], name="w_hh")
>>> round(torch.rnn_tanh_cell(x, h, w_ih, w_hh).item(), 6)
0.099668
"""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor


def _affine(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = x @ weight.mT
    return out if bias is None else out + bias


def _parts(t: Tensor, count: int) -> list[Tensor]:
    """The ``count`` equal blocks of the last dimension (torch's gates are stacked along it)."""
    size = t.shape[-1] // count
    return [t[..., k * size : (k + 1) * size] for k in range(count)]


def rnn_tanh_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """h' = relu(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)."""
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).relu()


def gru_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """torch's GRU cell: reset r, update z, candidate n = tanh(x_n + r h_n), h' = (1 − z) n + z h."""
    i_r, i_z, i_n = _parts(_affine(input, w_ih, b_ih), 3)
    h_r, h_z, h_n = _parts(_affine(hx, w_hh, b_hh), 3)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


def lstm_cell(
    input: Tensor, hx: Any, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """torch's LSTM cell: gates i, f, g, o from x and h; c' = f c + i g, h' = o tanh(c')."""
    h, c = hx
    i, f, g, o = _parts(_affine(input, w_ih, b_ih) + _affine(h, w_hh, b_hh), 4)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


__all__ = ["gru_cell", "lstm_cell", "rnn_relu_cell", "rnn_tanh_cell"]
