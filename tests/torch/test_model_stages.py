"""torch's own modules and the idioms of public model code, through the five stages of :mod:`model_stages`:
recurrent networks at a symbolic batch (with dropout between layers), attention and transformer layers in
training mode with their default dropout, DropPath, a reparameterization's ``randn_like``.

CI runs a spread of the recurrent configurations; ``SYMGRAD_MODELS_FULL=1`` runs them all.
"""

from __future__ import annotations

import itertools
import math
import os

import pytest
import torch
from model_stages import five_stages

F64 = torch.float64
FULL = os.environ.get("SYMGRAD_MODELS_FULL", "") == "1"


def _sequence(batch_first: bool):
    def data(b: int, seed: int) -> tuple:
        generator = torch.Generator().manual_seed(seed)
        return (torch.randn((b, 5, 3) if batch_first else (5, b, 3), dtype=F64, generator=generator),)

    return data


RECURRENT = [
    (cls, batch_first, bidirectional, dropout)
    for cls, (batch_first, bidirectional), dropout in itertools.product(
        (torch.nn.RNN, torch.nn.GRU, torch.nn.LSTM),
        ((False, False), (True, False), (False, True), (True, True)),
        (0.0, 0.25),
    )
]
# in CI: each class, each layout, bidirectional and dropout once each (the cheapest cell for the costliest options)
IN_CI = {(torch.nn.GRU, True, False, 0.25), (torch.nn.RNN, True, True, 0.25), (torch.nn.LSTM, False, False, 0.0)}


@pytest.mark.parametrize(
    "config",
    [c for c in RECURRENT if FULL or c in IN_CI],
    ids=lambda c: f"{c[0].__name__}-{'batch_first' if c[1] else 'time_first'}-{'bi' if c[2] else 'uni'}-p{c[3]}",
)
def test_recurrent_networks_pass_the_five_stages_at_a_symbolic_batch(config) -> None:
    """nn.RNN, GRU and LSTM of two layers, with and without an initial state: a symbolic batch, torch's gradients,
    and a drop-in that trains as the module does (the same dropout masks under the same seed)."""
    cls, batch_first, bidirectional, dropout = config

    def make() -> torch.nn.Module:
        return cls(3, 4, num_layers=2, batch_first=batch_first, bidirectional=bidirectional, dropout=dropout).double()

    def with_state(model: torch.nn.Module):
        def loss(x: torch.Tensor) -> torch.Tensor:
            h = torch.zeros(2 * (2 if bidirectional else 1), x.shape[0 if batch_first else 1], 4, dtype=x.dtype)
            state = (h, h + 0.5) if isinstance(model, torch.nn.LSTM) else h
            return model(x, state)[0].square().mean()

        return loss

    data = _sequence(batch_first)
    five_stages(make, data, [0 if batch_first else 1], seeded=dropout > 0, prove=not FULL or dropout == 0)
    five_stages(make, data, [0 if batch_first else 1], loss_of=with_state, seeded=dropout > 0, prove=False)


class DropPath(torch.nn.Module):
    """Stochastic depth as timm writes it: a per-sample keep mask drawn into ``new_empty``."""

    def __init__(self, p: float = 0.3) -> None:
        super().__init__()
        self.p, self.fc = p, torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = 1 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x + self.fc(x) * mask.div_(keep)


class Reparameterized(torch.nn.Module):
    """A VAE's sample: mean + noise · std, the noise ``randn_like``."""

    def __init__(self) -> None:
        super().__init__()
        self.mean, self.log_var = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean, log_var = self.mean(x), self.log_var(x)
        return mean + torch.randn_like(mean) * (0.5 * log_var).exp()


def _rows(b: int, seed: int) -> tuple:
    return (torch.randn((b, 3), dtype=F64, generator=torch.Generator().manual_seed(seed)),)


def _tokens(b: int, seed: int) -> tuple:
    return (torch.randn((b, 3, 4), dtype=F64, generator=torch.Generator().manual_seed(seed)),)


RANDOM = {
    "DropPath": (lambda: DropPath().double(), _rows, None),
    "randn_like": (lambda: Reparameterized().double(), _rows, None),
    "TransformerEncoderLayer": (
        lambda: torch.nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, batch_first=True).double(),
        _tokens,
        None,
    ),
    "MultiheadAttention": (
        lambda: torch.nn.MultiheadAttention(4, 2, dropout=0.2, batch_first=True).double(),
        _tokens,
        lambda m: lambda x: m(x, x, x)[0].square().mean(),
    ),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_modules_that_draw_random_numbers_train_as_torch_under_the_same_seed(name: str) -> None:
    """Training mode with random draws (a transformer layer's default dropout in attention and MLP, DropPath's
    bernoulli_ into new_empty, randn_like): the drop-in draws what the model draws, and its backward reads them."""
    make, data, loss_of = RANDOM[name]
    kwargs = {"loss_of": loss_of} if loss_of is not None else {}
    five_stages(make, data, [0], seeded=True, **kwargs)


class FixedPositions(torch.nn.Module):
    """A sinusoidal positional embedding computed in ``__init__`` and kept as a plain attribute (not a buffer)."""

    def __init__(self, length: int = 5, width: int = 4) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(width, width)
        position = torch.arange(length).unsqueeze(1)
        frequency = torch.exp(torch.arange(0, width, 2) * (-math.log(10000.0) / width))
        table = torch.zeros(length, width, dtype=F64)
        table[:, 0::2], table[:, 1::2] = torch.sin(position * frequency), torch.cos(position * frequency)
        self.table = table

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x + self.table[: x.shape[1]])


class Float32Region(torch.nn.Module):
    """A float64 model with llama-style RMSNorm in float32 (``x.float()`` … ``type_as``) and an einsum of a float64
    and a float32 operand, which torch promotes."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.scale = torch.nn.Linear(4, 4), torch.nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        norm = h.float() * torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + 1e-6)
        return torch.einsum("bi,bj->bij", norm.type_as(h) * self.scale, x.float()).tanh()


class Float32Layer(torch.nn.Module):
    """A float64 model with one layer kept in float32 (its parameters too): the input cast down, the output up."""

    def __init__(self) -> None:
        super().__init__()
        self.inner, self.outer = torch.nn.Linear(4, 5), torch.nn.Linear(5, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.inner(x.float()).relu().double()).tanh()


def _float32_layer() -> torch.nn.Module:
    model = Float32Layer().double()
    model.inner.float()
    return model


def _rows4(b: int, seed: int) -> tuple:
    return (torch.randn((b, 4), dtype=F64, generator=torch.Generator().manual_seed(seed)),)


def test_a_plain_tensor_attribute_is_state_the_drop_in_reads() -> None:
    """The attribute is no parameter and no buffer: the drop-in reads it from the model (state_dict keys unchanged)."""
    traced = five_stages(lambda: FixedPositions().double(), _tokens5, [0])
    assert list(traced.attributes) == ["model.table"]


def test_a_float32_region_in_a_float64_model_gives_torchs_float32_numbers() -> None:
    """torch computes the float32 region in float32: symgrad's numbers, laws and drop-in too (rtol 1e-9)."""
    five_stages(lambda: Float32Region().double(), _rows4, [0])


def test_a_float32_layer_in_a_float64_model_proves_and_trains_as_torch() -> None:
    """Its parameters are float32: the proof's torch check makes them float32 too, and the drop-in's steps give
    torch's float32 parameters."""
    five_stages(_float32_layer, _rows4, [0])


def _tokens5(b: int, seed: int) -> tuple:
    return (torch.randn((b, 5, 4), dtype=F64, generator=torch.Generator().manual_seed(seed)),)
