"""Mixed precision: a model traced under torch.autocast holds autocast's casts in its graph (read off torch's own
results, not off a list of ops), so its drop-in computes at autocast's precisions, forward and backward, and
gives torch's autocast loss and gradients whether the backward runs inside the autocast block or after it. A
drop-in traced without autocast refuses to run under it, in one line that says what to do."""

from __future__ import annotations

import copy

import public_models as pm
import pytest
import torch
from torch import nn

import symgrad as sg

BF16 = torch.bfloat16


class TinyGPT(nn.Module):
    """The nanoGPT of the public-model tests, two layers of width 16: attention with its causal mask,
    GELU, layer norms and a tied head, under autocast."""

    def __init__(self) -> None:
        super().__init__()
        self.gpt = pm.GPT(pm.GPTConfig(block_size=16, vocab_size=32, n_layer=2, n_head=2, n_embd=16))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.gpt(x, y)[1]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.fc2(nn.functional.gelu(self.norm(self.fc1(x)))), y)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.drop, self.fc = nn.Dropout(0.25), nn.Linear(4 * 6 * 6, 5)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        hidden = self.drop(torch.relu(self.norm(self.conv(x))))
        return nn.functional.cross_entropy(self.fc(hidden.flatten(1)), y)


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _compare_steps(make, data, modes=("train",)) -> None:
    """A drop-in traced under autocast against the model under autocast: the same loss (dtype and value), and
    gradients and buffers within 2e-3 of torch's (relative, by norm), with the backward inside the block and
    after it, in each of ``modes``."""
    torch.manual_seed(0)
    model = make()
    reference = copy.deepcopy(model)
    with torch.autocast("cpu", dtype=BF16):
        traced = sg.trace(model, *data(2, 1), dynamic_shapes={"x": {0: "b"}, "y": {0: "b"}})
    drop_in = sg.compile(traced, name="Mixed").MixedModule(model)
    for step, (mode, inside) in enumerate((m, i) for m in modes for i in (False, True)):
        drop_in.train(mode == "train")
        reference.train(mode == "train")
        for p in [*model.parameters(), *reference.parameters()]:
            p.grad = None
        inputs = data(3 + step, 10 + step)
        with torch.autocast("cpu", dtype=BF16):
            torch.manual_seed(step)
            ours = drop_in(*inputs)
            torch.manual_seed(step)
            theirs = reference(*inputs)
            if inside:
                ours.backward()
                theirs.backward()
        if not inside:
            ours.backward()
            theirs.backward()
        assert ours.dtype == theirs.dtype == torch.float32  # autocast computes cross-entropy in float32
        torch.testing.assert_close(ours, theirs, rtol=2e-3, atol=0)
        for (name, mine), real in zip(model.named_parameters(), reference.parameters(), strict=True):
            assert mine.grad.dtype == real.grad.dtype
            assert _relative(mine.grad, real.grad) <= 2e-3, (name, mode, inside)
        for (name, mine), real in zip(model.named_buffers(), reference.buffers(), strict=True):
            assert _relative(mine.double(), real.double()) <= 2e-3, name


def _rows(b: int, seed: int) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(b, 6, generator=generator), torch.randint(0, 4, (b,), generator=generator)


def _pictures(b: int, seed: int) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(b, 3, 6, 6, generator=generator), torch.randint(0, 5, (b,), generator=generator)


def test_a_drop_in_traced_under_autocast_trains_as_the_model_under_autocast():
    _compare_steps(Net, _rows)


def test_a_convolution_with_batch_norm_and_dropout_under_autocast_in_both_modes():
    _compare_steps(ConvNet, _pictures, modes=("train", "eval"))


def _tokens(b: int, seed: int) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 32, (b, 8), generator=generator), torch.randint(0, 32, (b, 8), generator=generator)


def test_a_small_gpt_under_autocast_trains_as_the_model_does():
    _compare_steps(TinyGPT, _tokens, modes=("train", "eval"))


def test_the_trace_holds_autocasts_casts_and_its_loss_dtype():
    torch.manual_seed(0)
    model = Net()
    x, y = _rows(5, 0)
    with torch.autocast("cpu", dtype=BF16):
        expected = model(x, y).detach()
        traced = sg.trace(model, x, y)
    assert traced.autocast == (("cpu", "bfloat16"),)
    assert traced.output.dtype == "float32"
    code = sg.codegen(traced, name="Net")
    assert "fc1_weight.to(torch.bfloat16)" in code and "norm_weight.to(torch.bfloat16)" not in code  # LN keeps float32
    assert abs(float(traced.output.tolist()) - expected.item()) <= 1e-2 * abs(expected.item())


def test_a_drop_in_runs_only_under_the_autocast_it_was_traced_under():
    torch.manual_seed(0)
    model = Net()
    x, y = _rows(5, 0)
    plain = sg.compile(sg.trace(model, x, y), name="Net").NetModule(model)
    with torch.autocast("cpu", dtype=BF16):
        with pytest.raises(RuntimeError, match=r"traced without torch.autocast.*trace the model under the autocast"):
            plain(x, y)
        mixed = sg.compile(sg.trace(model, x, y), name="Net").NetModule(model)
        with torch.autocast("cpu", enabled=False):  # the plain one runs where autocast is off
            torch.testing.assert_close(plain(x, y), model(x, y), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match=r"traced under torch.autocast\('cpu', dtype=torch.bfloat16\)"):
        mixed(x, y)
    with torch.autocast("cpu", dtype=torch.float16):
        with pytest.raises(RuntimeError, match=r"call it under that autocast"):
            mixed(x, y)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # rms_norm's, on mixed dtypes
def test_mixed_precision_normalisations_keep_the_inputs_dtype_as_torchs_kernels_do():
    low = torch.randn(2, 4, 3).to(BF16)
    weight, bias = torch.randn(4), torch.randn(4)
    cases = {
        "layer_norm": lambda x, w, b: nn.functional.layer_norm(x, (3,), w[:3], b[:3]),
        "group_norm": lambda x, w, b: nn.functional.group_norm(x, 2, w, b),
        "batch_norm": lambda x, w, b: nn.functional.batch_norm(x, torch.zeros(4), torch.ones(4), w, b, training=False),
        "rms_norm": lambda x, w, b: nn.functional.rms_norm(x, (3,), w[:3]),
    }
    for name, fn in cases.items():
        traced = sg.trace(fn, low, weight, bias)
        real = fn(low, weight, bias)
        assert traced.output.dtype == str(real.dtype).removeprefix("torch."), name
