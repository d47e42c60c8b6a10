"""The Function's own code run by torch at sizes larger than the example's, against torch's derivatives of its
forward: the check of a proof for every size that does not go through symgrad's trace at all.

A trace follows the example's control flow, so code that branches on a size (``if x.shape[0] > 4``) is proved for
the branch the example takes. Here ``Function.apply`` runs forward and backward as autograd runs them, at new sizes,
and its gradients are compared with autograd's through the forward's own ops, once and (``create_graph=True``)
twice; the jvp is compared with ``torch.func.jvp`` of the forward the same way. Integer inputs keep their values,
so one whose size is symbolic leaves the check out (said in the proof).
"""

from __future__ import annotations

import warnings
from typing import Any

from .functions import Context, as_tuple, run_forward

TOLERANCE = {"torch.float64": 1e-9, "torch.float32": 1e-4}  # relative to 1 + the largest true entry


def larger_sizes(dynamic_shapes: dict) -> dict[str, int]:
    """Distinct sizes past the ones an exact proof uses: 5, 6, 7, … by dimension name."""
    names = sorted({str(d) for axes in dynamic_shapes.values() for d in axes.values()})
    return {name: 5 + k for k, name in enumerate(names)}


def run_at_larger_sizes(run: Any, verdicts: list, differentiable: list[int], kind: str) -> None:
    """Run the Function's own code at :func:`larger_sizes` (at the example, without symbolic sizes) and add a line to
    each verdict's proof; a verdict fails when torch's numbers differ, or torch refuses (a saved tensor changed in
    place). ``kind``: ``gradient`` (input by input), ``second`` (by input, then by incoming
    gradient, of Σ ⟨gradient, u⟩ under ``create_graph=True``) or ``jvp`` (output by output)."""
    sizes = larger_sizes(run.dynamic_shapes or {})
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the given values"
    # no symbolic size: the example itself (its data inputs keep their meaning, a target row summing to 1)
    inputs = _resized_inputs(run, sizes) if sizes else tuple(x.detach() for x in run.tensor_inputs)
    if inputs is None:
        for verdict in verdicts:
            verdict.proof += "\nthe Function's own code at larger sizes: not run (an integer input has a symbolic size)"
        return
    try:
        with warnings.catch_warnings():  # torch.func's first use imports code that torch itself deprecates
            warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
            pairs = {"gradient": _gradient_numbers, "second": _second_numbers, "jvp": _jvp_numbers}[kind](
                run, inputs, differentiable
            )
    except Exception as error:  # the Function fails at these sizes: that is a finding, not symgrad's error
        said = str(error).split(" Hint: ")[0]  # torch's advice on its own debugging tools left out
        for verdict in verdicts:
            verdict.held = False
            verdict.torch_refused = said
            verdict.proof += f"\nthe Function's own code, run by torch at {shown}: FAILED ({type(error).__name__}: "
            verdict.proof += f"{said})"
        return
    for verdict, (mine, true) in zip(verdicts, pairs):
        error = _largest_difference(mine, true)
        held = error <= TOLERANCE.get(str(true.dtype), 1e-2) * (1.0 + (float(true.abs().max()) if true.numel() else 0))
        verdict.held = verdict.held and held
        verdict.proof += (
            f"\nthe Function's own code, run by torch at {shown}: {'held' if held else 'FAILED'} "
            f"(max abs error {error:.3g})"
        )


def _resized_inputs(run: Any, sizes: dict[str, int]) -> tuple | None:
    """The tensor inputs at ``sizes``: floating ones drawn at random, integer ones as given (None when an integer
    input's size would change)."""
    import torch

    generator = torch.Generator().manual_seed(2)
    out = []
    for name, x in zip(run.tensor_names, run.tensor_inputs):
        axes = run.dynamic_shapes.get(name) or {}
        shape = [sizes[str(axes[a])] if a in axes else n for a, n in enumerate(x.shape)]
        if not x.is_floating_point():
            if list(x.shape) != shape:
                return None
            out.append(x.detach())
        else:
            out.append(torch.randn(shape, dtype=x.dtype, generator=generator))
    return tuple(out)


def _needed(run: Any) -> list[bool]:
    return [need for k, need in enumerate(run.needs) if k not in run.constants]


def _gradient_numbers(run: Any, inputs: tuple, differentiable: list[int]) -> list[tuple]:
    """(what ``Function.apply``'s backward gives, autograd through the forward's ops) per input that needs one."""
    mine = _derivatives(run, inputs, differentiable, apply=True, second=False)
    return list(zip(mine, _derivatives(run, inputs, differentiable, apply=False, second=False)))


def _second_numbers(run: Any, inputs: tuple, differentiable: list[int]) -> list[tuple]:
    """The same for the derivatives of Σ ⟨gradient, u⟩ by each input, then by each incoming gradient."""
    mine = _derivatives(run, inputs, differentiable, apply=True, second=True)
    return list(zip(mine, _derivatives(run, inputs, differentiable, apply=False, second=True)))


def _derivatives(run: Any, inputs: tuple, differentiable: list[int], *, apply: bool, second: bool) -> list:
    """Gradients (or second derivatives) by autograd, through ``Function.apply`` or through the forward's own
    ops, for random incoming gradients (and directions u) drawn alike for both."""
    import torch

    generator = torch.Generator().manual_seed(3)
    xs = tuple(x.detach().requires_grad_(need) for x, need in zip(inputs, _needed(run)))
    wrt = [x for x, need in zip(xs, _needed(run)) if need]
    with torch.enable_grad():
        given = run.forward_inputs(xs)
        outs = run.user_code(
            lambda: run.cls.apply(*given) if apply else run_forward(run.cls, Context(run.needs), given)
        )
        outs = [o for k, o in enumerate(as_tuple(outs)) if k in differentiable]
        gs = [torch.randn(o.shape, dtype=o.dtype, generator=generator).requires_grad_(second) for o in outs]
        found = _filled(torch.autograd.grad(outs, wrt, gs, allow_unused=True, create_graph=second), wrt)
        if not second:
            return found
        us = [torch.randn(g.shape, dtype=g.dtype, generator=generator) for g in found]
        total = sum((g * u).sum() for g, u in zip(found, us))
        targets = [*wrt, *gs]
        if not total.requires_grad:  # nothing reads a target: every second derivative is 0
            return [torch.zeros_like(t) for t in targets]
        return _filled(torch.autograd.grad(total, targets, allow_unused=True), targets)


def _filled(found: tuple, like: list) -> list:
    import torch

    return [torch.zeros_like(x) if g is None else g for g, x in zip(found, like)]


def _jvp_numbers(run: Any, inputs: tuple, differentiable: list[int]) -> list[tuple]:
    """(the Function's jvp, ``torch.func.jvp`` of its forward's ops) per differentiable output, same tangents."""
    import torch

    needs = _needed(run)
    generator = torch.Generator().manual_seed(1)
    tangents = tuple(
        torch.randn(x.shape, dtype=x.dtype, generator=generator) if n else None for x, n in zip(inputs, needs)
    )
    moving = [k for k, need in enumerate(needs) if need]

    def forward(*moved: Any) -> tuple:
        xs = list(inputs)
        for k, x in zip(moving, moved):
            xs[k] = x
        out = run_forward(run.cls, Context(run.needs), run.forward_inputs(tuple(xs)))
        return as_tuple(out)

    primals = tuple(inputs[k] for k in moving)
    _, true = run.user_code(lambda: torch.func.jvp(forward, primals, tuple(tangents[k] for k in moving)))
    ctx = Context(run.needs)
    with torch.no_grad():
        run_forward(run.cls, ctx, run.forward_inputs(inputs))
        ctx.saved = getattr(ctx, "saved_for_forward", ctx.saved)
        mine = run.user_code(lambda: run.cls.jvp(ctx, *run.forward_inputs(tangents)))
    mine = as_tuple(mine)
    return [(mine[i] if i < len(mine) else None, true[i]) for i in differentiable]


def _largest_difference(mine: Any, true: Any) -> float:
    import torch

    if mine is None:
        mine = torch.zeros_like(true)
    if not isinstance(mine, torch.Tensor) or mine.shape != true.shape:
        return float("inf")
    return float((mine - true).abs().max()) if true.numel() else 0.0
