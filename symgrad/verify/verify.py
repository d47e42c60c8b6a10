"""Cross-check symbolic results against torch.autograd on the same inputs.

torch is imported only when a check runs, never at ``import symgrad``.

>>> import symgrad.derive
>>> from symgrad.core import tensor
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
>>> check(w @ x, grad_tensors=[[1.0, 1.0]]).ok
True
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from ..core.errors import CheckError, SymgradError
from ..core.tensor import Tensor, constant
from ..derive.entrywise import as_grad_tensor, vjp_entries
from .torch_eval import evaluate_graph, leaf_assignment, substitute


@dataclass
class Comparison:
    """One compared quantity (a forward output or a gradient)."""

    label: str
    max_abs_error: float
    max_rel_error: float
    entries: int
    ok: bool


@dataclass
class CheckReport:
    """What :func:`check` compared and how far apart symgrad and torch were."""

    comparisons: list[Comparison] = field(default_factory=list)
    values: dict[str, list] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons)

    @property
    def max_abs_error(self) -> float:
        return max((c.max_abs_error for c in self.comparisons), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((c.max_rel_error for c in self.comparisons), default=0.0)

    def __str__(self) -> str:
        verdict = "OK" if self.ok else "MISMATCH"
        lines = [
            f"torch.autograd cross-check (float64): {verdict}, max abs error {self.max_abs_error:.3g}, "
            f"max rel error {self.max_rel_error:.3g}"
        ]
        for c in self.comparisons:
            lines.append(
                f"  {c.label}: {c.entries} entries, max abs error {c.max_abs_error:.3g}"
                f"{'' if c.ok else '  <-- MISMATCH'}"
            )
        return "\n".join(lines)


def _compare(label: str, ours: np.ndarray, theirs: np.ndarray, rtol: float, atol: float) -> Comparison:
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    agree = (np.isnan(ours) & np.isnan(theirs)) | (np.isinf(ours) & (ours == theirs))  # nan or the same infinity
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(agree, 0.0, np.abs(ours - theirs))
    diff = np.where(np.isnan(diff), math.inf, diff)
    with np.errstate(invalid="ignore"):
        rel = diff / np.maximum(np.abs(theirs), 1e-300)
    ok = bool(np.all(diff <= atol + rtol * np.abs(np.nan_to_num(theirs))))
    return Comparison(
        label, float(diff.max(initial=0.0)), float(np.where(diff == 0, 0.0, rel).max(initial=0.0)), int(ours.size), ok
    )


def check(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | None = None,
    grad_tensors: Any = None,
    *,
    seed: int = 0,
    rtol: float = 1e-10,
    atol: float = 1e-10,
    raise_on_mismatch: bool = True,
) -> CheckReport:
    """Compare symgrad's formulas, with numbers substituted, against torch.autograd.backward.

    Entries without values get random values (seeded). ``inputs`` are the
    leaves whose gradients are compared (default: those that require grad, or
    every leaf when none does). Raises :class:`CheckError` on a mismatch.
    """
    import torch

    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if grad_tensors is None:
        grads_given: list[Any] = [None] * len(outs)
    elif isinstance(outputs, Tensor):
        grads_given = [grad_tensors]
    else:
        grads_given = list(grad_tensors)
    grads: list[Tensor] = []
    for position, (out, g) in enumerate(zip(outs, grads_given)):
        if g is None:
            if out.numel() != 1:
                raise SymgradError("grad can be implicitly created only for scalar outputs")
            g = constant(1, shape=out.shape)
        grads.append(as_grad_tensor(g, out, position))

    leaves: dict[int, Tensor] = {}
    for t in outs + grads:
        for leaf in t.leaves().values():
            leaves.setdefault(id(leaf), leaf)
    if inputs is None:
        targets = [leaf for leaf in leaves.values() if leaf.requires_grad] or [
            leaf for leaf in leaves.values() if any(leaf in o.leaves().values() for o in outs)
        ]
    else:
        targets = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    rng = random.Random(seed)
    report = CheckReport()
    for low, high in ((-1.5, 1.5), (0.25, 1.5)):
        numbers = leaf_assignment(list(leaves.values()), rng, low, high)
        subs = {}
        for leaf, arr in numbers.items():
            subs.update(zip(leaf.entries().reshape(-1), (sympy.Float(v) for v in arr.reshape(-1))))
        made = evaluate_graph(torch, outs + grads, numbers, subs, {id(t) for t in targets})
        if all(bool(torch.isfinite(made[id(o)]).all()) for o in outs):
            break  # otherwise retry with positive values (log, sqrt, pow of negatives)
    torch_outs = [made[id(o)] for o in outs]
    torch_grads = [made[id(g)].to(torch.float64) for g in grads]
    for out, value in zip(outs, torch_outs):
        ours = substitute(out.entries(), subs)
        report.comparisons.append(_compare(f"forward {out.name}", ours, value.detach().numpy(), rtol, atol))
    torch_leaves = [made[id(t)] for t in targets]
    torch.autograd.backward(torch_outs, torch_grads, inputs=torch_leaves)
    for target, leaf_t in zip(targets, torch_leaves):
        ours = substitute(vjp_entries(outs, target, grads), subs)
        theirs = leaf_t.grad.numpy() if leaf_t.grad is not None else np.zeros(ours.shape)
        report.comparisons.append(_compare(f"grad {target.name}", ours, theirs, rtol, atol))
        report.values[target.name] = theirs.tolist()
    if raise_on_mismatch and not report.ok:
        raise CheckError(str(report))
    return report
