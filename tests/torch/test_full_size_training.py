"""The drop-ins of GPT-2 small and ResNet-18 train three SGD steps exactly as the models do: in float64 at a reduced
width (every CI run), and in float32 at their real sizes (marked slow: SYMGRAD_FULL=1)."""

from __future__ import annotations

import copy

import public_models as pm
import pytest
import torch
from torch.nn import functional as F  # noqa: N812 (torch's own spelling)

import symgrad as sg


def _gpt(config: pm.GPTConfig, dtype: torch.dtype, tokens: int):
    model = pm.GPT(config).to(dtype)

    def loss(idx, targets):
        return model(idx, targets)[1]

    def data(batch: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        return tuple(torch.randint(0, config.vocab_size, (batch, tokens), generator=generator) for _ in range(2))

    return model, loss, data, {"idx": {0: "b"}, "targets": {0: "b"}}


def _resnet(width: int, dtype: torch.dtype, side: int, classes: int):
    model = pm.ResNet(width=width, num_classes=classes).to(dtype)

    def loss(x, y):
        return F.cross_entropy(model(x), y)

    def data(batch: int, seed: int):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(batch, 3, side, side, generator=generator, dtype=dtype)
        return x, torch.randint(0, classes, (batch,), generator=generator)

    return model, loss, data, {"x": {0: "b"}, "y": {0: "b"}}


def _three_steps_agree(build, rtol: float, lr: float = 0.05) -> None:
    torch.manual_seed(0)
    model, loss, data, dynamic = build()
    twin = copy.deepcopy(model)
    traced = sg.trace(loss, *data(2, 1), dynamic_shapes=dynamic, modules={"model": model})
    drop_in = sg.compile(traced, name="Loss").LossModule(torch.nn.ModuleDict({"model": twin}))  # as traced.model
    optimisers = [torch.optim.SGD(m.parameters(), lr=lr) for m in (model, twin)]
    for step in range(3):
        batch = data(2 + step % 2, 10 + step)  # a batch size of its own each step
        for call, optimiser in ((loss, optimisers[0]), (drop_in, optimisers[1])):
            optimiser.zero_grad()
            call(*batch).backward()
            optimiser.step()
    theirs, ours = [*model.named_parameters(), *model.named_buffers()], [*twin.parameters(), *twin.buffers()]
    if rtol >= 1e-6:
        # float32: kernels that add the same terms in other orders (a convolution's weight gradient) differ in the
        # last bits, and training amplifies that (autograd itself, its gradients changed by 2e-6, moves ResNet-18's
        # parameters as far in three steps): the parameters, as one vector, agree to rtol
        difference = sum(
            float((a.detach().double() - b.detach().double()).square().sum()) for (_, a), b in zip(theirs, ours)
        )
        size = sum(float(a.detach().double().square().sum()) for _, a in theirs)
        assert (difference / size) ** 0.5 <= rtol
        return
    for (name, a), b in zip(theirs, ours, strict=True):
        torch.testing.assert_close(b, a, rtol=rtol, atol=rtol * 1e-3, msg=name)


def test_a_gpt_of_reduced_width_trains_three_steps_as_the_model_in_float64():
    config = pm.GPTConfig(n_layer=2, n_head=2, n_embd=16, vocab_size=97, block_size=32)
    _three_steps_agree(lambda: _gpt(config, torch.float64, 12), rtol=1e-9)


def test_a_resnet18_of_reduced_width_trains_three_steps_as_the_model_in_float64():
    _three_steps_agree(lambda: _resnet(4, torch.float64, 32, 10), rtol=1e-9)


@pytest.mark.slow
def test_gpt2_small_trains_three_steps_as_the_model_in_float32():
    config = pm.GPTConfig(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, block_size=1024)
    _three_steps_agree(lambda: _gpt(config, torch.float32, 64), rtol=1e-5, lr=1e-3)


@pytest.mark.slow
def test_resnet18_trains_three_steps_as_the_model_in_float32():
    _three_steps_agree(lambda: _resnet(64, torch.float32, 224, 1000), rtol=1e-5, lr=1e-3)
