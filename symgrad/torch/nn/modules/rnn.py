"""Recurrent cells ``RNNCell``, ``GRUCell`` and ``LSTMCell``: one time step, over the compositions of
:mod:`symgrad.torch.recurrent`; unroll them with a Python loop, as in torch.

>>> import symgrad.torch as torch
>>> cell = torch.nn.GRUCell(2, 3)
>>> [name for name, _ in cell.named_parameters()]
['weight_ih', 'weight_hh', 'bias_ih', 'bias_hh']
>>> cell(torch.zeros(4, 2)).shape
(4, 3)
"""

from __future__ import annotations

from typing import Any

from ....core.errors import TorchRuntimeError, TorchValueError
from ....core.tensor import Tensor
from ... import creation, recurrent
from .initial import initial_parameters
from .module import Module
from .parameter import Parameter


class _CellBase(Module):
    gates = 1
    kind = ""

    def __init__(self, input_size: Any, hidden_size: Any, bias: bool, *extra: Any, device: Any, dtype: Any) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        rows = self.gates * hidden_size
        shapes = {
            "weight_ih": (rows, input_size),
            "weight_hh": (rows, hidden_size),
            "bias_ih": (rows,) if bias else None,
            "bias_hh": (rows,) if bias else None,
        }
        state = initial_parameters(self.kind, shapes, input_size, hidden_size, bias, *extra, device=device, dtype=dtype)
        for name, value in state.items():
            if value is None:
                self.register_parameter(name, None)
            else:
                setattr(self, name, Parameter(value))

    def _batched(self, input: Tensor, hx: Any) -> tuple[bool, Tensor, Any]:
        """torch's checks; an unbatched (1-D) step is run as a batch of one."""
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise TorchValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for h in hx if isinstance(hx, tuple) else (hx,):
            if h is not None and h.ndim not in (1, 2):
                raise TorchValueError(f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
            hx = tuple(h.unsqueeze(0) for h in hx) if isinstance(hx, tuple) else (hx if hx is None else hx.unsqueeze(0))
        return batched, input, hx

    def _zeros(self, input: Tensor) -> Tensor:
        return creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype)

    def _weights(self) -> tuple:
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text


class RNNCell(_CellBase):
    """h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (``nonlinearity="relu"``: relu); h starts at zeros."""

    kind = "RNNCell"

    def __init__(
        self, input_size: Any, hidden_size: Any, bias: bool = True, nonlinearity: str = "tanh", device: Any = None,
        dtype: Any = None,
    ) -> None:  # fmt: skip
        super().__init__(input_size, hidden_size, bias, nonlinearity, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched(input, hx)
        hx = self._zeros(input) if hx is None else hx
        if self.nonlinearity == "tanh":
            out = recurrent.rnn_tanh_cell(input, hx, *self._weights())
        elif self.nonlinearity == "relu":
            out = recurrent.rnn_relu_cell(input, hx, *self._weights())
        else:
            raise TorchRuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return out if batched else out.squeeze(0)


class GRUCell(_CellBase):
    """torch's GRU step: reset and update gates, candidate tanh(x_n + r ⊙ h_n), h' = (1 − z) ⊙ n + z ⊙ h."""

    gates, kind = 3, "GRUCell"

    def __init__(
        self, input_size: Any, hidden_size: Any, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched(input, hx)
        hx = self._zeros(input) if hx is None else hx
        out = recurrent.gru_cell(input, hx, *self._weights())
        return out if batched else out.squeeze(0)


class LSTMCell(_CellBase):
    """torch's LSTM step: ``forward(x, (h, c))`` gives ``(h', c')``; the state starts at zeros."""

    gates, kind = 4, "LSTMCell"

    def __init__(
        self, input_size: Any, hidden_size: Any, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__(input_size, hidden_size, bias, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        batched, input, hx = self._batched(input, hx)
        if hx is None:
            hx = (self._zeros(input), self._zeros(input))
        h, c = recurrent.lstm_cell(input, hx, *self._weights())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


__all__ = ["GRUCell", "LSTMCell", "RNNCell"]
