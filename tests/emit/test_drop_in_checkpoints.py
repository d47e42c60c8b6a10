"""A drop-in lives in a real training setup's checkpoints: its state_dict has the model's own keys, so either
loads the other's checkpoint unchanged, and a whole drop-in saved with torch.save loads in another process."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import symgrad as sg

F64 = torch.float64
NET = """\
import torch
from torch import nn


class NormedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.norm = nn.BatchNorm1d(6)
        self.fc2 = nn.Linear(6, 3)
        self.register_buffer("steps", torch.zeros((), dtype=torch.float64), persistent=False)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.fc2(torch.tanh(self.norm(self.fc1(x)))), y)
"""


@pytest.fixture
def net_module(tmp_path: Path, monkeypatch):
    (tmp_path / "checkpoint_net.py").write_text(NET, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("checkpoint_net", None)
    import checkpoint_net

    yield checkpoint_net
    sys.modules.pop("checkpoint_net", None)


def _drop_in(net_module):
    torch.manual_seed(0)
    model = net_module.NormedNet().double()
    x, y = torch.randn(5, 4, dtype=F64), torch.randint(0, 3, (5,))
    traced = sg.trace(model, x, y, dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}})
    return model, sg.compile(traced, name="Net").NetModule(copy.deepcopy(model))


def test_state_dict_keys_are_the_models_own_both_ways(net_module):
    model, drop_in = _drop_in(net_module)
    assert list(drop_in.state_dict()) == list(model.state_dict())
    assert [n for n, _ in drop_in.named_parameters()] == [n for n, _ in model.named_parameters()]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    drop_in.load_state_dict(model.state_dict())  # strict: the same keys, no prefix
    for a, b in zip(model.state_dict().values(), drop_in.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    fresh = net_module.NormedNet().double()
    fresh.load_state_dict(drop_in.state_dict())
    for a, b in zip(fresh.state_dict().values(), model.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_mode_and_device_moves_reach_the_model(net_module):
    _, drop_in = _drop_in(net_module)
    drop_in.eval()
    assert not drop_in.model.training and not drop_in.model.norm.training
    drop_in.train()
    assert drop_in.model.training and drop_in.model.norm.training
    drop_in.float()
    assert drop_in.model.fc1.weight.dtype == torch.float32
    assert drop_in.fc1 is drop_in.model.fc1


def test_a_whole_drop_in_saved_with_torch_save_trains_in_a_fresh_process(net_module, tmp_path):
    model, drop_in = _drop_in(net_module)
    path = tmp_path / "drop_in.pt"
    torch.save(drop_in, path)
    x = torch.randn(7, 4, dtype=F64, generator=torch.Generator().manual_seed(1))
    y = torch.randint(0, 3, (7,), generator=torch.Generator().manual_seed(2))
    torch.save((x, y), tmp_path / "batch.pt")
    script = textwrap.dedent(
        f"""
        import sys
        import torch
        sys.path.insert(0, {str(tmp_path)!r})
        drop_in = torch.load({str(path)!r}, weights_only=False)
        x, y = torch.load({str(tmp_path / "batch.pt")!r})
        drop_in(x, y).backward()
        torch.save(([p.grad for p in drop_in.parameters()], list(drop_in.buffers())), {str(tmp_path / "out.pt")!r})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    grads, buffers = torch.load(tmp_path / "out.pt")
    model(x, y).backward()
    for (name, p), g in zip(model.named_parameters(), grads, strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-12, atol=1e-14, msg=name)
    for (name, b), theirs in zip(model.named_buffers(), buffers, strict=True):
        torch.testing.assert_close(theirs, b, rtol=1e-12, atol=0, msg=name)
