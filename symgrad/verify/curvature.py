"""Proofs of Jacobian and Hessian laws, the two ways first-order laws are proved.

1. **Exactly**: at small distinct sizes, the law's entries minus SymPy's derivatives of each entry
   simplify to 0.
2. **Numerically**: at larger sizes, the law evaluated with torch equals torch's own Jacobian (rows by
   ``torch.autograd.grad``), or torch's own Hessian (``create_graph=True``, then the gradient's rows).

>>> import symgrad as sg
>>> n = sg.dims("n")[0]
>>> A, x = sg.symbols("A", (n, n)), sg.symbols("x", (n,))
>>> prove_hessian(x @ A @ x, x).held
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.errors import CheckError
from ..core.graph import dims_of, topological
from ..core.tensor import Tensor
from ..derive.jacobians import jacobian_tensor
from ..derive.reverse import law
from ..derive.second_order import hessian_law, jacobian_law
from .instances import Sizes, instantiate, size_assignments
from .prove import Proof
from .torch_eval import evaluate_graph, imported_torch
from .zeros import differ_by


def prove_jacobian(
    y: Tensor,
    x: Tensor,
    rule: Tensor | None = None,
    *,
    sizes: Sequence[Sizes] | None = None,
    torch_sizes: Sizes | None = None,
    numeric: bool = True,
    raise_on_failure: bool = False,
) -> Proof:
    """Prove the Jacobian law of ``y`` with respect to ``x`` (derived unless ``rule`` is given)."""
    rule = rule if rule is not None else jacobian_law(y, x)
    return _prove(y, x, rule, order=1, sizes=sizes, torch_sizes=torch_sizes, numeric=numeric, strict=raise_on_failure)


def prove_hessian(
    f: Tensor,
    x: Tensor,
    rule: Tensor | None = None,
    *,
    sizes: Sequence[Sizes] | None = None,
    torch_sizes: Sizes | None = None,
    numeric: bool = True,
    raise_on_failure: bool = False,
) -> Proof:
    """Prove the Hessian law of the one-element ``f`` with respect to ``x`` (derived unless ``rule`` is given)."""
    rule = rule if rule is not None else hessian_law(f, x)
    return _prove(f, x, rule, order=2, sizes=sizes, torch_sizes=torch_sizes, numeric=numeric, strict=raise_on_failure)


def _prove(y: Tensor, x: Tensor, rule: Tensor, *, order: int, sizes, torch_sizes, numeric: bool, strict: bool) -> Proof:
    dims = dims_of([y, x, rule])
    proof = Proof([rule])
    for assignment in sizes or size_assignments(dims):
        made = instantiate([y, x, rule], assignment)
        target = made[id(y)]
        if order == 2:
            (target,) = law(target.reshape(()) if target.shape else target, [made[id(x)]], simplified=False)
        expected = jacobian_tensor(target, made[id(x)]).entries()
        actual = made[id(rule)].entries()
        held, count, methods = actual.shape == expected.shape, 0, {}
        if held:
            for a, e in zip(actual.reshape(-1), expected.reshape(-1)):
                count += 1
                method = differ_by(a, e)
                held = held and method is not None
                if method is not None:
                    methods[method] = methods.get(method, 0) + 1
        proof.exact.append(
            {"sizes": {str(k): v for k, v in assignment.items()}, "held": held, "entries": count, "methods": methods}
        )
    if numeric:
        big = torch_sizes or dict(zip(dims, range(5, 5 + len(dims))))
        proof.numeric.append(_check_with_torch(y, x, rule, order, big))
    if strict and not proof.held:
        raise CheckError(str(proof))
    return proof


def _check_with_torch(y: Tensor, x: Tensor, rule: Tensor, order: int, sizes: Sizes, seed: int = 0) -> dict[str, Any]:
    """The law evaluated with torch against torch's own Jacobian (order 1) or Hessian (order 2)."""
    torch = imported_torch()

    rng = random.Random(seed)
    made = instantiate([y, x, rule], sizes, rng=rng)
    numbers: dict[Tensor, np.ndarray] = {}
    for root in (y, x, rule):
        for node in topological(made[id(root)]):
            if node.kind == "symbol" and node not in numbers:
                size = int(np.prod(node.shape, dtype=int))
                numbers[node] = np.array([rng.uniform(0.25, 1.5) for _ in range(size)]).reshape(node.shape)
    leaf = made[id(x)]
    forward = evaluate_graph(torch, [made[id(y)], leaf], numbers, {}, {id(leaf)})
    x_t = forward[id(leaf)]
    out = forward[id(made[id(y)])]
    if order == 2:
        (out,) = torch.autograd.grad(out.sum(), x_t, create_graph=True)
    rows = []
    for entry in out.reshape(-1) if out.requires_grad else ():  # a constant (a linear f's gradient): zero rows
        (row,) = torch.autograd.grad(entry, x_t, retain_graph=True, allow_unused=True, materialize_grads=True)
        rows.append(row)
    theirs = torch.stack(rows).reshape(*out.shape, *x_t.shape) if rows else torch.zeros(*out.shape, *x_t.shape)
    ours = evaluate_graph(torch, [made[id(rule)]], numbers, {}, set())[id(made[id(rule)])].detach()
    if tuple(ours.shape) != tuple(theirs.shape):
        worst = float("inf")
    else:
        worst = float((ours - theirs).abs().max()) if ours.numel() else 0.0
    scale = float(theirs.abs().max()) if theirs.numel() else 0.0
    return {
        "sizes": {str(k): v for k, v in sizes.items()},
        "held": worst <= 1e-9 * max(1.0, scale),
        "max_abs_error": worst,
    }
