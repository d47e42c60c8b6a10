"""Check an emitted module against torch.autograd: forward, vjp, forward_and_vjp and gradcheck.

>>> import symgrad as sg
>>> k, n = sg.dims("k n")
>>> W, x = sg.symbols("W", (k, n), requires_grad=True), sg.symbols("x", (n,))
>>> out = (W @ x).tanh()
>>> module = sg.compile(out, [W], inputs=[W, x], name="Layer", style="autograd_function")
>>> check_module(module, out, [W], [W, x]).ok
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from ..core.graph import dims_of
from ..core.tensor import Tensor
from ..verify.prove import instantiate
from ..verify.torch_eval import evaluate_graph

DRAWS = ((0.3, 1.5), (0.1, 0.9), (-1.5, -0.3), (-0.9, 0.9))  # input ranges tried in turn
GRADCHECK_FULL = 400  # input entries up to which gradcheck compares the whole Jacobian


@dataclass
class ModuleCheck:
    """How an emitted module compared with torch.autograd (float64, random inputs)."""

    sizes: dict[str, int]
    forward_error: float
    vjp_error: float
    gradcheck: bool | None
    ok: bool

    def __str__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "the declared sizes"
        grad = {None: "not run", True: "passed", False: "FAILED"}[self.gradcheck]
        return (
            f"check against torch.autograd at {sizes} (float64): {'OK' if self.ok else 'MISMATCH'}; "
            f"forward max error {self.forward_error:.3g}, vjp max error {self.vjp_error:.3g}, gradcheck {grad}"
        )


def check_module(
    module: ModuleType,
    output: Tensor,
    wrt: Sequence[Tensor],
    inputs: Sequence[Tensor],
    *,
    sizes: dict | None = None,
    seed: int = 0,
    tolerance: float = 1e-10,
) -> ModuleCheck:
    """Run the emitted forward, vjp and autograd.Function against torch.autograd on random float64 inputs."""
    import torch

    dims = dims_of([output, *inputs])
    sizes = sizes or dict(zip(dims, range(3, 3 + len(dims))))
    rng = random.Random(seed)
    made = instantiate([output, *inputs], sizes, rng=rng)
    wanted = {id(made[id(x)]) for x in wrt}
    for low, high in DRAWS:  # the first range where torch's output is finite: an op's domain (BCE takes (0, 1))
        numbers = {}
        for t in inputs:
            leaf = made[id(t)]
            if leaf.kind == "symbol":
                size = int(np.prod(leaf.shape, dtype=int))
                numbers[leaf] = np.array([rng.uniform(low, high) for _ in range(size)]).reshape(leaf.shape)
        graph = evaluate_graph(torch, [made[id(output)]], numbers, {}, wanted)
        reference = graph[id(made[id(output)])]
        if bool(torch.isfinite(reference).all()):
            break
    args = []
    for t in inputs:
        leaf = made[id(t)]
        if leaf.dtype.startswith("int"):  # class targets: the module gets them as torch.long, as users pass them
            args.append(torch.tensor([int(v) for v in leaf.entries().reshape(-1)]).reshape(leaf.shape))
        else:
            args.append(graph[id(leaf)])
    grad_output = torch.randn(reference.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    torch.autograd.backward([reference], [grad_output])
    plain = [a.detach() for a in args]
    forward_error = float((module.forward(*plain) - reference.detach()).abs().max()) if reference.numel() else 0.0
    ours = module.vjp(*plain, grad_output)
    vjp_error = 0.0
    for x, g in zip(wrt, ours):
        theirs = graph[id(made[id(x)])].grad
        vjp_error = max(vjp_error, float((g - theirs).abs().max()) if g.numel() else 0.0)
    if hasattr(module, "forward_and_vjp"):
        fused_out, fused = module.forward_and_vjp(*plain, grad_output)
        forward_error = max(forward_error, float((fused_out - reference.detach()).abs().max()))
        for x, g in zip(wrt, fused):
            vjp_error = max(vjp_error, float((g - graph[id(made[id(x)])].grad).abs().max()) if g.numel() else 0.0)
    gradcheck = None
    if hasattr(module, "apply"):
        wrt_ids = {id(made[id(x)]) for x in wrt}
        trial = [a.detach().clone().requires_grad_(id(made[id(t)]) in wrt_ids) for a, t in zip(args, inputs)]
        # Finite differences cost one forward per input entry: above a few hundred, gradcheck's fast mode
        # checks random projections of the Jacobian instead.
        fast = sum(t.numel() for t in trial if t.requires_grad) > GRADCHECK_FULL
        gradcheck = bool(
            torch.autograd.gradcheck(module.apply, trial, eps=1e-6, atol=1e-5, raise_exception=False, fast_mode=fast)
        )
    ok = forward_error <= tolerance and vjp_error <= tolerance * 10 and gradcheck is not False
    return ModuleCheck({str(k): v for k, v in sizes.items()}, forward_error, vjp_error, gradcheck, ok)
