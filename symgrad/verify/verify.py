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

from ..core.display import to_number
from ..core.errors import CheckError, SymgradError
from ..core.numbers import numbers_at
from ..core.tensor import Tensor, constant
from ..derive.entrywise import as_grad_tensor, backward_graphs, vjp_entries
from .torch_eval import (
    ROUNDING_TOLERANCE,
    casts,
    evaluate_graph,
    imported_torch,
    leaf_assignment,
    narrowest_rounding,
    substitute,
)


@dataclass
class Comparison:
    """One compared quantity (a forward output or a gradient)."""

    label: str
    max_abs_error: float
    max_rel_error: float
    entries: int
    ok: bool
    overflowed: int = 0  # entries where torch's own arithmetic overflowed and symgrad's did not, left out


@dataclass
class CheckReport:
    """What :func:`check` compared and how far apart symgrad and torch were."""

    comparisons: list[Comparison] = field(default_factory=list)
    values: dict[str, list] = field(default_factory=dict)
    rounding: str = ""  # the narrowest dtype the graph rounds through, where it casts (then the tolerance is its)

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
            f"torch.autograd cross-check ({self._precision()}): {verdict}, max abs error {self.max_abs_error:.3g}, "
            f"max rel error {self.max_rel_error:.3g}"
        ]
        for c in self.comparisons:
            overflow = f" (torch's own arithmetic overflows at {c.overflowed}: left out)" if c.overflowed else ""
            lines.append(
                f"  {c.label}: {c.entries} entries, max abs error {c.max_abs_error:.3g}{overflow}"
                f"{'' if c.ok else '  <-- MISMATCH'}"
            )
        return "\n".join(lines)

    def _precision(self) -> str:
        if not self.rounding:
            return "float64"
        return f"each input in its dtype, to {self.rounding}'s rounding"


# inputs from this magnitude on make products that overflow float64 (1e154 squared): torch's backward may overflow
# in its own intermediate values where the formula stays in range
_HUGE = 1e150


def _compare(
    label: str, ours: np.ndarray, theirs: np.ndarray, rtol: float, atol: float, huge: bool = False
) -> Comparison:
    """``ours`` against torch's ``theirs``; with ``huge`` (inputs near the square root of float64's range), an entry
    torch makes infinite where symgrad's finite formula stays in range is torch's intermediate overflowing (the
    gradient of det at entries of 1e154), left out and counted."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    overflowed = np.isinf(theirs) & np.isfinite(ours) if huge else np.zeros(theirs.shape, dtype=bool)
    theirs = np.where(overflowed, ours, theirs)
    agree = (np.isnan(ours) & np.isnan(theirs)) | (np.isinf(ours) & (ours == theirs))  # nan or the same infinity
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(agree, 0.0, np.abs(ours - theirs))
    diff = np.where(np.isnan(diff), math.inf, diff)
    # relative to entries larger than atol: an entry near 0 is judged by atol, and its ratio says nothing
    # (a layer_norm output summing to 1e-300 gave "max rel error 2.22e+284" for an error of 2e-16)
    scale = np.abs(np.nan_to_num(theirs))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where((diff == 0) | (scale <= atol), 0.0, diff / np.where(scale > atol, scale, 1.0))
    ok = bool(np.all(diff <= atol + rtol * scale))
    worst, relative = float(diff.max(initial=0.0)), float(rel.max(initial=0.0))
    return Comparison(label, worst, relative, int(ours.size), ok, int(overflowed.sum()))


def check(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | None = None,
    grad_tensors: Any = None,
    *,
    seed: int = 0,
    rtol: float = 1e-10,
    atol: float = 1e-10,
    raise_on_mismatch: bool = True,
    formulas: dict[int, np.ndarray] | None = None,
) -> CheckReport:
    """Compare symgrad's formulas, with numbers substituted, against torch.autograd.backward.

    Entries without values get random values (seeded). ``inputs`` are the
    leaves whose gradients are compared (default: those that require grad, or
    every leaf when none does). Raises :class:`CheckError` on a mismatch. ``formulas`` (by ``id`` of
    the input) are gradient formulas already derived, so that they are not derived again.
    """
    torch = imported_torch()

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
            g = constant(1, shape=out.shape, dtype=out.dtype)
        grads.append(as_grad_tensor(g, out, position))

    leaves: dict[int, Tensor] = {}
    for t in outs + grads:
        for leaf in t.leaves().values():
            if leaf.kind == "symbol":  # named integer tensors (class targets) keep their values
                leaves.setdefault(id(leaf), leaf)
    if inputs is None:
        targets = [leaf for leaf in leaves.values() if leaf.requires_grad] or [
            leaf for leaf in leaves.values() if any(leaf in o.leaves().values() for o in outs)
        ]
    else:
        targets = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    rng = random.Random(seed)
    report = CheckReport()
    leaf_list = list(leaves.values())
    wanted = {id(t) for t in targets}
    keep = casts(outs + grads)  # x.half(): torch computes as the user's code would, from leaves of their dtypes
    if keep:  # and rounds where symgrad's float64 arithmetic does not, in its own order: a tolerance of that dtype
        report.rounding = narrowest_rounding(outs + grads, leaves=True)
        rtol = atol = max(rtol, ROUNDING_TOLERANCE[report.rounding])
    for low, high in ((-1.5, 1.5), (0.25, 1.5)):
        numbers = leaf_assignment(leaf_list, rng, low, high)
        made = _torch_backward(torch, outs, grads, targets, numbers, wanted, keep)
        if all(bool(torch.isfinite(made[id(o)]).all()) for o in outs):
            break  # otherwise retry with positive values (log, sqrt, pow of negatives)
    # The numbers symgrad reports, at this point: computed node by node, as torch does.
    point = {id(leaf): arr for leaf, arr in numbers.items()}
    huge = any(np.abs(arr).max(initial=0.0) >= _HUGE for arr in numbers.values())
    for out, ours in zip(outs, numbers_at(outs, point), strict=True):
        theirs = made[id(out)].detach().double().numpy()  # bfloat16 has no NumPy dtype
        report.comparisons.append(_compare(f"forward {out.name}", _floats(ours), theirs, rtol, atol, huge))
    laws = backward_graphs(outs, targets, grads)
    for target, rule in zip(targets, laws, strict=True):
        theirs = _torch_grad(made[id(target)])
        report.values[target.name] = theirs.tolist()
        if rule is not None:
            (ours,) = numbers_at([rule], point)
            ours = _floats(ours)
        else:  # no VJP rule: the numbers come from the formula
            ours = substitute(vjp_entries(outs, target, grads), _symbol_values(numbers))
        report.comparisons.append(_compare(f"grad {target.name}", ours, theirs, rtol, atol, huge))
    # The formulas, at a point where every leaf is drawn at random: a formula holds there or it is
    # wrong, while at a given point torch's conventions for singular values (a nan passed by where,
    # a zero gradient at a singular matrix) may differ from the formula's value.
    if any(leaf.symbol_values is not None for leaf in leaf_list):
        numbers = {leaf: _nearby(arr, rng) for leaf, arr in numbers.items()}
        made = _torch_backward(torch, outs, grads, targets, numbers, wanted, keep)
    subs = _symbol_values(numbers)
    for target in targets:
        formula = formulas.get(id(target)) if formulas is not None else None
        ours = substitute(formula if formula is not None else vjp_entries(outs, target, grads), subs)
        report.comparisons.append(
            _compare(f"formula of grad {target.name}", ours, _torch_grad(made[id(target)]), rtol, atol, huge)
        )
    if raise_on_mismatch and not report.ok:
        raise CheckError(str(report))
    return report


def _nearby(values: np.ndarray, rng: random.Random) -> np.ndarray:
    """Values moved a little off the given ones (off a tie, a kink or a singular matrix), staying in
    their domain: each is scaled by 1 ± 5% and moved by up to 0.01."""
    moved = [v * (1 + rng.uniform(-0.05, 0.05)) + rng.uniform(-0.01, 0.01) for v in values.reshape(-1)]
    return np.array(moved, dtype=float).reshape(values.shape)


def _symbol_values(numbers: dict) -> dict:
    subs = {}
    for leaf, arr in numbers.items():
        subs.update(zip(leaf.entries().reshape(-1), (float(v) for v in arr.reshape(-1))))
    return subs


def _torch_backward(
    torch: Any, outs: list, grads: list, targets: list, numbers: dict, wanted: set, keep_dtypes: bool = False
) -> dict:
    """The graph evaluated by torch at ``numbers``, with ``torch.autograd.backward`` run on it."""
    made = evaluate_graph(torch, outs + grads, numbers, _symbol_values(numbers), wanted, keep_dtypes)
    torch.autograd.backward(
        [made[id(o)] for o in outs],
        [made[id(g)].to(made[id(o)].dtype) for o, g in zip(outs, grads)],
        inputs=[made[id(t)] for t in targets],
    )
    return made


def _torch_grad(leaf: Any) -> np.ndarray:
    return leaf.grad.double().numpy() if leaf.grad is not None else np.zeros(tuple(leaf.shape))


def _floats(values: np.ndarray) -> np.ndarray:
    return np.array([to_number(v) for v in values.reshape(-1)], dtype=float).reshape(values.shape)
