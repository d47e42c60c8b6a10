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
from typing import Any

import numpy as np

from ..core.graph import dims_of, topological
from ..core.tensor import Tensor
from ..verify.instances import instantiate
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
    output_dtype: str = "float64"  # the forward's, by torch's rules: lower when the code computes in float32

    def __str__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "the declared sizes"
        grad = {None: "not run", True: "passed", False: "FAILED"}[self.gradcheck]
        lower = (
            f"; the output is {self.output_dtype} by torch's rules, so the forward is compared at its precision "
            "and gradcheck's finite differences are not run"
            if self.output_dtype != "float64"
            else ""
        )
        return (
            f"check against torch.autograd at {sizes} (float64): {'OK' if self.ok else 'MISMATCH'}; "
            f"forward max error {self.forward_error:.3g}, vjp max error {self.vjp_error:.3g}, gradcheck {grad}{lower}"
        )


def _inside_the_domain(torch: Any, output: Tensor, leaves: list[Tensor], wanted: set, rng: random.Random):
    """torch's graph on the first range of random inputs where its output is finite and no op refuses them:
    an op's domain (binary_cross_entropy takes probabilities, and raises outside (0, 1))."""
    for low, high in DRAWS:
        numbers = {}
        for leaf in leaves:
            if leaf.kind == "symbol":
                size = int(np.prod(leaf.shape, dtype=int))
                numbers[leaf] = np.array([rng.uniform(low, high) for _ in range(size)]).reshape(leaf.shape)
        try:
            graph = evaluate_graph(torch, [output], numbers, {}, wanted)
        except RuntimeError:
            if (low, high) == DRAWS[-1]:
                raise
            continue
        if bool(torch.isfinite(graph[id(output)]).all()):
            break
    return graph, graph[id(output)]


def _torch_run(torch: Any, output: Tensor, wrt: Sequence[Tensor], inputs: Sequence[Tensor], sizes, seed: int):
    """The graph at ``sizes`` (default 3, 4, … per dim), run by torch on random float64 inputs inside the ops'
    domain, the wrt leaves requiring grad: (sizes, the instantiated graph, torch's values by node, torch's
    output, the module's arguments)."""
    dims = dims_of([output, *inputs])
    sizes = sizes or dict(zip(dims, range(3, 3 + len(dims))))
    rng = random.Random(seed)
    made = instantiate([output, *inputs], sizes, rng=rng)
    wanted = {id(made[id(x)]) for x in wrt}
    graph, reference = _inside_the_domain(torch, made[id(output)], [made[id(t)] for t in inputs], wanted, rng)
    args = []
    for t in inputs:
        leaf = made[id(t)]
        if leaf.dtype.startswith("int"):  # class targets: the module gets them as torch.long, as users pass them
            args.append(torch.tensor([int(v) for v in leaf.entries().reshape(-1)]).reshape(leaf.shape))
        elif id(leaf) in graph:
            args.append(graph[id(leaf)])
        else:  # an input the output never reads (a running statistic the forward only updates): any positive values
            values = [rng.uniform(0.5, 1.5) for _ in range(int(np.prod(leaf.shape, dtype=int)))]
            args.append(torch.tensor(values, dtype=torch.float64).reshape(leaf.shape))
    return sizes, made, graph, reference, args


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

    sizes, made, graph, reference, args = _torch_run(torch, output, wrt, inputs, sizes, seed)
    if any(node.op is not None and node.op.has("random") for node in topological(output)):
        return _check_drawing_module(torch, module, args, [any(t is x for x in wrt) for t in inputs], sizes, seed,
                                     tolerance)  # fmt: skip
    grad_output = torch.randn(reference.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    torch.autograd.backward([reference], [grad_output])
    plain = [a.detach() for a in args]
    computed = module.forward(*plain)
    # torch computes some graphs in float32 from float64 inputs (torch.where(x > 0, 2.0, 0.5) is float32, and so is
    # its product with x.sum()): the emitted code does the same, and is compared at that precision
    lower = computed.dtype if computed.dtype != torch.float64 and computed.is_floating_point() else None
    forward_tolerance = (
        tolerance if lower is None else 8 * torch.finfo(lower).eps * (1 + float(reference.detach().abs().max()))
    )
    forward_error = float((computed - reference.detach()).abs().max()) if reference.numel() else 0.0
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
    if hasattr(module, "apply") and lower is None:
        wrt_ids = {id(made[id(x)]) for x in wrt}
        trial = [a.detach().clone().requires_grad_(id(made[id(t)]) in wrt_ids) for a, t in zip(args, inputs)]
        gradcheck = _gradcheck(torch, module.apply, trial)
    ok = forward_error <= forward_tolerance and vjp_error <= tolerance * 10 and gradcheck is not False
    dtype = str(computed.dtype).removeprefix("torch.")
    return ModuleCheck({str(k): v for k, v in sizes.items()}, forward_error, vjp_error, gradcheck, ok, dtype)


def _gradcheck(torch: Any, function: Any, trial: list) -> bool:
    """torch's gradcheck of ``function`` at ``trial``. Finite differences cost one forward per input entry: above a
    few hundred, gradcheck's fast mode checks random projections of the Jacobian instead."""
    fast = sum(t.numel() for t in trial if t.requires_grad) > GRADCHECK_FULL
    return bool(torch.autograd.gradcheck(function, trial, eps=1e-6, atol=1e-5, raise_exception=False, fast_mode=fast))


def _check_drawing_module(
    torch: Any, module: ModuleType, args: list, moving: list[bool], sizes: dict, seed: int, tolerance: float
) -> ModuleCheck:
    """A module that draws noise (dropout in training mode) draws it from torch's generator, where symgrad's own
    evaluation draws it elsewhere: its vjp, forward_and_vjp and Function are checked against torch.autograd through
    its own forward, every call at one seed (and torch's random state left as it was)."""

    def seeded(function, *arguments):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return function(*arguments)

    trial = [a.detach().clone().requires_grad_(wanted) for a, wanted in zip(args, moving)]
    reference = seeded(module.forward, *trial)
    grad_output = torch.randn(reference.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    theirs = torch.autograd.grad(reference, [a for a, wanted in zip(trial, moving) if wanted], grad_output)
    plain = [a.detach() for a in args]
    fused_output, fused = seeded(module.forward_and_vjp, *plain, grad_output)
    forward_error = float((fused_output - reference.detach()).abs().max()) if reference.numel() else 0.0
    vjp_error = max(
        (float((g - t).abs().max()) for ours in (seeded(module.vjp, *plain, grad_output), fused)
         for g, t in zip(ours, theirs) if g.numel()),
        default=0.0,
    )  # fmt: skip
    gradcheck = None
    if hasattr(module, "apply"):
        gradcheck = _gradcheck(torch, lambda *a: seeded(module.apply, *a), trial)
    ok = forward_error <= tolerance and vjp_error <= tolerance * 10 and gradcheck is not False
    return ModuleCheck({str(k): v for k, v in sizes.items()}, forward_error, vjp_error, gradcheck, ok)


@dataclass
class CurvatureCheck:
    """How an emitted ``hvp`` or ``hessian`` module compared with torch.autograd's double backward (float64)."""

    sizes: dict[str, int]
    forward_error: float
    gradient_error: float
    second_error: float
    ok: bool

    def __str__(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items()) or "the declared sizes"
        return (
            f"check against torch.autograd (create_graph=True) at {sizes} (float64): "
            f"{'OK' if self.ok else 'MISMATCH'}; forward max error {self.forward_error:.3g}, "
            f"gradient max error {self.gradient_error:.3g}, second-order max error {self.second_error:.3g}"
        )


def _largest(pairs) -> float:
    return max((float((a - b).abs().max()) for a, b in pairs if a.numel()), default=0.0)


def check_curvature_module(
    module: ModuleType,
    output: Tensor,
    wrt: Sequence[Tensor],
    inputs: Sequence[Tensor],
    *,
    sizes: dict | None = None,
    seed: int = 0,
    tolerance: float = 1e-10,
) -> CurvatureCheck:
    """Run an emitted second-order module's ``forward``, ``gradient`` and ``hvp`` (random tangents) or
    ``hessian`` against torch.autograd differentiated twice, on random float64 inputs."""
    import torch

    sizes, made, graph, reference, args = _torch_run(torch, output, wrt, inputs, sizes, seed)
    leaves = [graph[id(made[id(x)])] for x in wrt]
    grads = torch.autograd.grad(reference.sum(), leaves, create_graph=True, allow_unused=True, materialize_grads=True)
    plain = [a.detach() for a in args]
    forward_error = _largest([(module.forward(*plain), reference.detach())])
    gradient_error = _largest(zip(module.gradient(*plain), [g.detach() for g in grads]))
    generator = torch.Generator().manual_seed(seed)
    if hasattr(module, "hvp"):
        tangents = [torch.randn(x.shape, dtype=torch.float64, generator=generator) for x in leaves]
        expected = torch.autograd.grad(grads, leaves, tangents, allow_unused=True, materialize_grads=True)
        second_error = _largest(zip(module.hvp(*plain, *tangents), expected))
    else:
        blocks = []
        for g in grads:
            rows = [
                torch.autograd.grad(entry, leaves, retain_graph=True, allow_unused=True, materialize_grads=True)
                for entry in g.reshape(-1)
            ]
            blocks.append(
                [
                    torch.stack([row[j] for row in rows]).reshape(*g.shape, *x.shape)
                    if rows
                    else torch.zeros(*g.shape, *x.shape, dtype=torch.float64)
                    for j, x in enumerate(leaves)
                ]
            )
        ours = module.hessian(*plain)
        ours = [[ours]] if len(leaves) == 1 else ours
        second_error = _largest((a, b) for row_a, row_b in zip(ours, blocks) for a, b in zip(row_a, row_b))
    ok = max(forward_error, gradient_error, second_error) <= tolerance * 10
    return CurvatureCheck({str(k): v for k, v in sizes.items()}, forward_error, gradient_error, second_error, ok)
