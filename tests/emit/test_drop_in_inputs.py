"""A drop-in gives its input's gradient where the input requires grad, as the model does: a compiled block inside
a larger model (after an embedding, after a convolution), saliency maps, and reentrant checkpointing."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (torch's own spelling)
from torch.utils.checkpoint import checkpoint

import symgrad as sg

F64 = torch.float64


class Block(nn.Module):
    """A pre-norm residual MLP block, as transformers stack them."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.fc1, self.fc2 = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(F.gelu(self.fc1(self.ln(h))))


def _block_drop_in(block: Block, example: torch.Tensor, dims: dict) -> nn.Module:
    traced = sg.trace(block, example, dynamic_shapes={"h": dims})
    return sg.compile(traced, name="Block").BlockModule(block)


def _assert_same_grads(ours: nn.Module, theirs: nn.Module) -> None:
    for (name, a), b in zip(theirs.named_parameters(), ours.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-12, atol=1e-14, msg=name)


def test_a_block_after_an_embedding_sends_the_embedding_its_gradient():
    torch.manual_seed(0)
    model = nn.ModuleDict({"emb": nn.Embedding(10, 8), "block": Block(), "head": nn.Linear(8, 3)}).double()
    twin = copy.deepcopy(model)
    drop_in = _block_drop_in(twin["block"], torch.randn(2, 5, 8, dtype=F64), {0: "b", 1: "t"})
    ids, y = torch.randint(0, 10, (3, 4)), torch.randint(0, 3, (3, 4))
    for net, block in ((model, model["block"]), (twin, drop_in)):
        F.cross_entropy(net["head"](block(net["emb"](ids))).flatten(0, 1), y.flatten()).backward()
    _assert_same_grads(twin, model)


def test_a_block_after_a_convolution_and_the_inputs_own_gradient():
    torch.manual_seed(1)
    model = nn.ModuleDict({"conv": nn.Conv2d(2, 8, 3), "block": Block()}).double()
    twin = copy.deepcopy(model)
    drop_in = _block_drop_in(twin["block"], torch.randn(3, 8, dtype=F64), {0: "n"})
    images = torch.randn(2, 2, 5, 5, dtype=F64)
    grads = []
    for net, block in ((model, model["block"]), (twin, drop_in)):
        x = images.clone().requires_grad_()  # a saliency map: the loss's gradient for the image
        features = net["conv"](x).permute(0, 2, 3, 1).reshape(-1, 8)
        block(features).tanh().sum().backward()
        grads.append(x.grad)
    _assert_same_grads(twin, model)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-14)


def test_reentrant_checkpointing_and_an_input_that_does_not_require_grad():
    torch.manual_seed(2)
    block = Block().double()
    twin = copy.deepcopy(block)
    drop_in = _block_drop_in(twin, torch.randn(3, 8, dtype=F64), {0: "n"})
    h = torch.randn(4, 8, dtype=F64)
    theirs, ours = h.clone().requires_grad_(), h.clone().requires_grad_()
    checkpoint(block, theirs, use_reentrant=True).square().sum().backward()
    checkpoint(drop_in, ours, use_reentrant=True).square().sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, rtol=1e-12, atol=1e-14)
    _assert_same_grads(twin, block)
    for module in (block, twin):
        module.zero_grad()
    block(h).sum().backward()  # h requires no grad: only the parameters get one, in both
    drop_in(h).sum().backward()
    _assert_same_grads(twin, block)
