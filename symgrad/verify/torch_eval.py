"""Evaluate a symgrad graph with torch: the same ops, node by node, on numbers (float64).

torch is passed in by the caller (imported only when a check runs).

>>> import torch
>>> import symgrad as sg
>>> x = sg.tensor([[1.0, 2.0]], name="x")
>>> out = (x * x).sum()
>>> made = evaluate_graph(torch, [out], {x: np.array([[1.0, 2.0]])}, {}, set())
>>> float(made[id(out)])
5.0
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.budget import tick
from ..core.dtypes import is_floating
from ..core.graph import topological_all
from ..core.ieee import float64_values
from ..core.tensor import Tensor


def imported_torch() -> Any:
    """torch, for a check: the progress line says so while it is imported (a second, where it read "deriving the
    law")."""
    if "torch" not in sys.modules:
        tick("importing torch for the check")
    import torch

    return torch


def leaf_assignment(
    leaves: Sequence[Tensor], rng: random.Random, low: float, high: float, *, keep_values: bool = True
) -> dict[Tensor, np.ndarray]:
    """Numbers for each leaf: its own values (unless ``keep_values`` is False), or uniform random ones
    in [low, high]."""
    out = {}
    for leaf in leaves:
        if keep_values and leaf.symbol_values is not None:
            out[leaf] = np.array([float(v) for v in leaf.symbol_values.reshape(-1)], dtype=float).reshape(leaf.shape)
        else:
            size = int(np.prod(leaf.shape, dtype=int))
            out[leaf] = np.array([rng.uniform(low, high) for _ in range(size)], dtype=float).reshape(leaf.shape)
    return out


def substitute(entries: np.ndarray, subs: dict) -> np.ndarray:
    """Entry formulas evaluated in IEEE float64 at ``subs`` (symbol → number), as torch would."""
    flat = float64_values(entries.reshape(-1), {symbol: float(value) for symbol, value in subs.items()})
    return np.array(flat, dtype=float).reshape(entries.shape)


NARROWER = ("float32", "float16", "bfloat16")


def _floating_dtypes(roots: Sequence[Tensor], leaves_only: bool) -> set[str]:
    return {n.dtype for n in topological_all(roots) if (n.kind == "symbol" or not leaves_only) and is_floating(n.dtype)}


def mixed_dtypes(roots: Sequence[Tensor]) -> bool:
    """Whether the symbol leaves of ``roots`` (inputs, parameters) are of more than one floating dtype."""
    return len(_floating_dtypes(roots, leaves_only=True)) > 1


# the numeric check's tolerance, relative to the largest gradient entry, by the narrowest dtype the graph rounds
# through (``x.float()`` in a float64 model): a thousand times its machine epsilon, where float64 keeps 1e-9
ROUNDING_TOLERANCE = {"float64": 1e-9, "float32": 1e3 * 2.0**-23, "bfloat16": 1e3 * 2.0**-7, "float16": 1e3 * 2.0**-10}


def narrowest_rounding(roots: list[Tensor], leaves: bool = False) -> str:
    """The narrowest floating dtype a conversion in the graph rounds to (``float64`` when none does); with
    ``leaves``, a leaf's dtype counts too (leaves of mixed dtypes keep theirs in the torch check)."""
    order = ["float64", "float32", "float16", "bfloat16"]
    narrowest = 0
    for node in topological_all(roots):
        if leaves and node.kind == "symbol" and node.dtype in order:
            narrowest = max(narrowest, order.index(node.dtype))
        wanted = node.attrs.get("dtype") if node.op is not None else None
        if isinstance(wanted, str) and wanted in order:
            narrowest = max(narrowest, order.index(wanted))
    return order[narrowest]


def casts(roots: Sequence[Tensor]) -> bool:
    """Whether the graph computes in more than one floating dtype (``x.half()``, ``x.double()`` on a float32 leaf,
    leaves of two dtypes): then torch's check keeps each leaf's dtype, as the user's torch code would."""
    return len(_floating_dtypes(roots, leaves_only=False)) > 1


def evaluate_graph(
    torch: Any,
    outputs: Sequence[Tensor],
    numbers: dict[Tensor, np.ndarray],
    subs: dict,
    wanted: set[int],
    keep_dtypes: bool = False,
    outputs_only: bool = False,
) -> dict[int, Any]:
    """Evaluate the symgrad graph node by node with torch (float64; with ``keep_dtypes``, leaves of a narrower
    float dtype keep it, for a graph whose leaves mix dtypes: a float32 layer in a float64 model). With
    ``outputs_only``, each other value is let go once its last user has run (a model's activations at its true
    size), and the result holds ``outputs`` and the ``wanted`` leaves alone."""
    order = topological_all(outputs)
    users: dict[int, int] = {}
    if outputs_only:
        for node in order:
            for part in node.inputs if node.op is not None else ():
                users[id(part)] = users.get(id(part), 0) + 1
    keep = {id(o) for o in outputs} | set(wanted)
    made: dict[int, Any] = {}
    for node in order:
        if id(node) in made:
            continue
        # a float32 leaf of a float64 graph stays float32, as in the model: its ops then run in float32
        narrow = keep_dtypes and node.kind == "symbol" and node.dtype in NARROWER
        dtype = getattr(torch, node.dtype) if narrow else torch.float64
        if node.kind == "symbol":
            value = numbers[node]
            shared = isinstance(value, np.ndarray) and value.dtype == np.float64 and dtype == torch.float64
            leaf = torch.from_numpy(value) if shared else torch.tensor(value, dtype=dtype)  # no copy of parameters
            made[id(node)] = leaf.requires_grad_(id(node) in wanted)
        elif node.kind == "formula":
            made[id(node)] = torch.tensor(substitute(node.entries(), subs), dtype=dtype)
        else:
            args = [made[id(i)] for i in node.inputs]
            made[id(node)] = node.op.torch(torch, *args, **node.attrs)
            for part in node.inputs if outputs_only else ():
                users[id(part)] -= 1
                if users[id(part)] == 0 and id(part) not in keep:
                    del made[id(part)]
    return made
