"""Under torch.autocast the model runs its ops at autocast's precisions, which the emitted backward does not follow
yet: the drop-in refuses in one line, inside and outside the backward, rather than mix dtypes or differ from torch."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import symgrad as sg


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.fc2(nn.functional.gelu(self.norm(self.fc1(x)))), y)


def test_autocast_is_refused_in_one_line_and_its_off_switch_runs():
    torch.manual_seed(0)
    model = Net()
    x, y = torch.randn(5, 6), torch.randint(0, 4, (5,))
    traced = sg.trace(model, x, y, dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}})
    drop_in = sg.compile(traced, name="Net").NetModule(model)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        refusal = r"does not follow torch.autocast.*torch.autocast\('cpu', enabled=False\)"
        with pytest.raises(RuntimeError, match=refusal):
            drop_in(x, y)
        with torch.autocast("cpu", enabled=False):
            loss = drop_in(x, y)
    loss.backward()
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, model(x, y), rtol=0, atol=0)
