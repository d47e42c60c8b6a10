"""The five stages a model must pass, as users run them: trace, torch's gradients, a law at a symbolic batch,
``sg.prove``, and ``sg.compile`` with SGD steps at other batch sizes that leave parameters and buffers equal to
torch's (float64, rtol 1e-9). Shared by the model tests."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

import symgrad as sg

RTOL = 1e-9


def mean_square(model: torch.nn.Module) -> Callable[..., torch.Tensor]:
    """The loss of a model of one input: the mean square of its output (of its first output, for a tuple)."""

    def loss(x: torch.Tensor) -> torch.Tensor:
        out = model(x)
        return (out[0] if isinstance(out, tuple) else out).square().mean()

    return loss


def five_stages(
    make: Callable[[], torch.nn.Module],
    data: Callable[[int, int], tuple],
    batch_dims: Sequence[int | None],
    loss_of: Callable[[torch.nn.Module], Callable[..., torch.Tensor]] = mean_square,
    *,
    prove: bool = True,
    seeded: bool = False,
    rtol: float = RTOL,
    batches: Sequence[int] = (2, 5, 4),
) -> Any:
    """Run the five stages for the model ``make()`` on ``data(batch, seed)``, whose inputs have their batch in
    ``batch_dims`` (None: no batch); ``seeded``: the model draws random numbers (each step seeds torch, the same
    for the model and its drop-in). Returns the trace at a symbolic batch."""
    torch.manual_seed(0)
    model, reference = make(), make()
    reference.load_state_dict(model.state_dict())
    inputs = data(3, 1)
    loss = loss_of(model)
    names = list(inspect.signature(loss).parameters)
    dynamic = {n: {d: "b"} for n, d in zip(names, batch_dims) if d is not None}
    torch.manual_seed(7)
    traced = sg.trace(loss, *inputs, dynamic_shapes=dynamic, modules={"model": model})
    torch.manual_seed(7)
    fixed = sg.trace(loss, *inputs, modules={"model": model})
    parameters = dict(model.named_parameters())
    ours = sg.vjp(fixed.output, [fixed.parameters[f"model.{p}"] for p in parameters], 1.0)
    torch.manual_seed(7)
    theirs = torch.autograd.grad(loss(*inputs), list(parameters.values()), allow_unused=True)
    for p, mine, real in zip(parameters, ours, theirs, strict=True):
        real = torch.zeros_like(parameters[p]) if real is None else real
        np.testing.assert_allclose(np.asarray(mine.tolist()), real.detach().numpy(), rtol=rtol, atol=1e-12, err_msg=p)
    wrt = [traced.parameters[f"model.{p}"] for p in parameters]
    laws = sg.law(traced.output, wrt)
    if prove:
        proof = sg.prove(traced.output, wrt, laws=laws)
        assert proof.held, str(proof)
    twin = sg.compile(traced, name="Loss").LossModule(traced.model)
    ours_step = torch.optim.SGD(model.parameters(), lr=0.1)
    theirs_step = torch.optim.SGD(reference.parameters(), lr=0.1)
    reference_loss = loss_of(reference)
    for step, batch in enumerate(batches):
        step_inputs = data(batch, 10 + step)
        for optimizer, fn in ((ours_step, twin), (theirs_step, reference_loss)):
            if seeded:
                torch.manual_seed(100 + step)
            optimizer.zero_grad()
            fn(*step_inputs).backward()
            optimizer.step()
        for (p, mine), real in zip(model.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(mine, real, rtol=rtol, atol=1e-12, msg=f"{p} after step {step}")
        for (p, mine), real in zip(model.named_buffers(), reference.buffers(), strict=True):
            torch.testing.assert_close(mine, real, rtol=rtol, atol=1e-12, msg=f"{p} after step {step}")
    return traced
