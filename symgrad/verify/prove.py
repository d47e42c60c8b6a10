"""Proofs of gradient laws, two ways.

1. **Exactly**: instantiate the symbolic dimensions at small, distinct sizes
   (so a transposition error cannot hide), derive the VJP entry by entry and
   show that SymPy simplifies the difference to 0.
2. **Numerically**: at larger sizes, evaluate the law with torch and compare
   with ``torch.autograd.backward`` on the same random inputs (float64).

>>> import symgrad.derive
>>> from symgrad.core import dims, symbols
>>> k, n, m = dims("k n m")
>>> W, X, V = symbols("W", (k, n)), symbols("X", (n, m)), symbols("V", (k, m))
>>> prove(W @ X, [W], [V]).held
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.budget import tick
from ..core.budget import time_limit as bounded_time
from ..core.errors import CheckError, SymgradError, UnsupportedError, ValuesUnknownError, WorkBudgetError
from ..core.graph import dims_of, topological
from ..core.tensor import Tensor, constant
from ..derive.entrywise import as_grad_tensor, vjp_entries
from ..derive.reverse import law
from .instances import Sizes, above_floors, instantiate, size_assignments, size_floors
from .rewrites import check_rewrites, rewrites_of
from .rules import chain_equals, check_rules, rule_nodes
from .stand_ins import described
from .torch_eval import ROUNDING_TOLERANCE, evaluate_graph, imported_torch, mixed_dtypes, narrowest_rounding
from .zeros import differ_by

DEFAULT_PROOF_SECONDS = 120.0  # sg.prove's time limit unless given


@dataclass
class Proof:
    """Which proofs held for each law."""

    laws: list[Tensor]
    exact: list[dict[str, Any]] = field(default_factory=list)
    numeric: list[dict[str, Any]] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(e["held"] for e in self.exact) and all(n["held"] for n in self.numeric)

    def _repr_markdown_(self) -> str:
        """In a notebook: the verdict, then one line per proof."""
        lines = str(self).split("\n")
        return f"**proof {'held' if self.held else 'FAILED'}**\n\n" + "\n".join(f"- `{line}`" for line in lines)

    def __str__(self) -> str:
        lines = []
        for e in self.exact:
            sizes = ", ".join(f"{k}={v}" for k, v in e["sizes"].items())
            how = ", ".join(f"{n} {m}" for m, n in sorted(e.get("methods", {}).items()))
            rules = f"rule by rule, {e['rules']} rules; " if "rules" in e else ""
            if e.get("applications", 0) > e.get("rules", 0):  # the layers of a stack share their rules' checks
                rules = f"rule by rule, {e['rules']} rules for {e['applications']} ops, each structure checked once; "
            if "rewrites" in e:
                rules += f"the simplifier rewrite by rewrite, {e['rewrites']} rewrites; "
            if e.get("stand_ins"):
                rules += f"{e['stand_ins']}; "
            failed = (
                f"; the rule of {e['failed_rule']} does not hold on fresh symbols, so the whole graph's entries decided"
                if e.get("failed_rule")
                else ""
            )
            lines.append(
                f"exact at {sizes or 'the given sizes'}: {'held' if e['held'] else 'FAILED'}"
                f" ({rules}{e['entries']} entries{'; ' + how if how else ''}{failed})"
            )
        for n in self.numeric:
            sizes = ", ".join(f"{k}={v}" for k, v in n["sizes"].items())
            rounding = f"; the graph rounds through {n['rounding']}" if "rounding" in n else ""
            lines.append(
                f"torch at {sizes or 'the given sizes'}: {'held' if n['held'] else 'FAILED'}"
                f" (max abs error {n['max_abs_error']:.3g}{rounding})"
            )
        return "\n".join(lines)


def prove(
    outputs: Tensor | Sequence[Tensor],
    wrt: Tensor | Sequence[Tensor],
    grads: Any = None,
    *,
    laws: Sequence[Tensor] | None = None,
    sizes: Sequence[Sizes] | None = None,
    torch_sizes: Sizes | None = None,
    numeric: bool = True,
    raise_on_failure: bool = False,
    time_limit: float | None = DEFAULT_PROOF_SECONDS,
) -> Proof:
    """Prove the laws for ``outputs`` (derived with :func:`law` unless given) both ways.

    The exact proof goes rule by rule (:mod:`.rules`): at each small size assignment, each VJP rule of the
    chain reverse mode builds is checked against its op's entrywise VJP, and each law (derived, or given in
    ``laws``) against that chain, entry by entry. Where an op has no rule, or a rule cannot be checked on fresh
    symbols, the laws' entries are compared with the entrywise VJP of the whole graph instead. The work runs
    against ``time_limit`` seconds (None: no limit; see :func:`symgrad.core.budget.time_limit`)."""
    way_out = "prove at smaller sizes (sizes=[{n: 2}]), numerically only (sizes=[]), or with time_limit=None"
    with bounded_time(time_limit, "the proof", way_out):
        return _prove(outputs, wrt, grads, laws, sizes, torch_sizes, numeric, raise_on_failure)


def _prove(outputs, wrt, grads, laws, sizes, torch_sizes, numeric, raise_on_failure) -> Proof:
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    targets = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    vs = [grads] if isinstance(grads, Tensor) else (list(grads) if grads is not None else [None] * len(outs))
    try:  # the chain of VJP rules: the laws are proved against it, and it rule by rule
        chain = list(law(outs, targets, vs if grads is not None else None, simplified=False))
    except SymgradError as error:  # an op without a rule: the whole graph's entries are compared instead
        if isinstance(error, WorkBudgetError):
            raise
        chain = []
    laws = list(laws) if laws is not None else list(law(outs, targets, vs if grads is not None else None))
    if len(laws) != len(targets):
        raise SymgradError(f"prove() got {len(laws)} laws for {len(targets)} tensors to differentiate by")
    vs_given = [v for v in vs if v is not None]
    roots = outs + vs_given + laws + chain
    dims = dims_of(roots + targets)
    proof = Proof(laws)
    floors = size_floors(roots + targets)
    nodes = rule_nodes(outs, targets) if chain else []
    rewrites = rewrites_of(chain, outs, laws) if chain else None
    for assignment in size_assignments(dims, floors=floors) if sizes is None else sizes:
        made = instantiate(roots + targets, assignment)
        result = _by_rules(nodes, laws, chain, made, rewrites, assignment) if chain else None
        if result is None or "failed_rule" in result:  # the whole graph's entries decide
            result = {**_by_entries(outs, targets, vs, laws, made, assignment), **(result or {})}
        proof.exact.append({"sizes": {str(k): v for k, v in assignment.items()}, **result})
    if numeric:
        big = torch_sizes or above_floors(dict(zip(dims, range(5, 5 + len(dims)))), floors, 3)
        proof.numeric.append(check_numerically(outs, targets, vs, laws, big))
    if raise_on_failure and not proof.held:
        raise CheckError(str(proof))
    return proof


def _by_rules(
    nodes: list[Tensor],
    laws: list[Tensor],
    chain: list[Tensor],
    made: dict,
    rewrites: list | None,
    assignment: Sizes,
) -> dict[str, Any] | None:
    """The exact proof at one size assignment, rule by rule (None when a rule cannot be checked on fresh symbols,
    as an op that needs the values of an index tensor: the whole graph's entries are compared then). The laws
    equal the chain when each of the simplifier's rewrites holds; where one cannot be shown on its own, or the
    laws did not come from simplifying the chain, their entries are compared with the chain's."""
    try:
        rules = check_rules(nodes, made)
    except (ValuesUnknownError, UnsupportedError, ValueError):  # ValueError: SymPy's own refusal on fresh symbols
        return None  # (a Cholesky factor of a matrix that is not symmetric)
    if not rules.held:  # on fresh symbols, outside the values the graph gives it (BCE's probabilities, say)
        return {"failed_rule": rules.failed}
    steps = check_rewrites(rewrites, assignment, dict(made)) if rewrites is not None else None
    shown = steps is not None and steps.held
    held, count, methods = (True, steps.entries, dict(steps.methods)) if shown else chain_equals(laws, chain, made)
    for method, n in rules.methods.items():
        methods[method] = methods.get(method, 0) + n
    out = {"held": held, "entries": count + rules.entries, "methods": methods, "rules": rules.rules}
    out["applications"] = rules.applications
    if shown:
        rules.take_stand_ins(steps)
    if rules.shrunk or rules.kept:
        out["stand_ins"] = described(rules.shrunk, rules.kept)
    if shown:
        out["rewrites"] = steps.rules
    return out


def _by_entries(outs, targets, vs, laws, made, assignment) -> dict[str, Any]:
    """The exact proof at one size assignment: each law's entries against the entrywise VJP of the whole graph."""
    concrete_grads = [made[id(v)] if v is not None else None for v in vs]
    grads_here = [
        as_grad_tensor(
            g if g is not None else constant(1, shape=made[id(o)].shape, dtype=made[id(o)].dtype), made[id(o)], p
        )
        for p, (o, g) in enumerate(zip(outs, concrete_grads))
    ]
    held, count, methods = True, 0, {}
    where = ", ".join(f"{k}={v}" for k, v in assignment.items()) or "the given sizes"
    for x, rule in zip(targets, laws):
        expected = vjp_entries([made[id(o)] for o in outs], made[id(x)], grads_here)
        actual = made[id(rule)].entries()
        if actual.shape != expected.shape:
            held = False
            continue
        for position, (a, e) in enumerate(zip(actual.reshape(-1), expected.reshape(-1))):
            count += 1
            tick("the exact proof at {}, entry {} of {} of {}'s law", where, position + 1, actual.size, x.name)
            method = differ_by(a, e)
            held = held and method is not None
            if method is not None:
                methods[method] = methods.get(method, 0) + 1
    return {"held": held, "entries": count, "methods": methods}


def check_numerically(
    outs: list[Tensor], targets: list[Tensor], vs: list[Tensor | None], laws: list[Tensor], sizes: Sizes, seed: int = 0
) -> dict[str, Any]:
    """Evaluate the laws with torch and compare with torch.autograd.backward at ``sizes``."""
    torch = imported_torch()

    rng = random.Random(seed)
    roots = outs + [v for v in vs if v is not None] + laws
    made = instantiate(roots + targets, sizes, rng=rng)
    numbers: dict[Tensor, np.ndarray] = {}
    draws = np.random.default_rng(seed)  # a model's millions of parameters: drawn at once
    for root in roots + targets:
        for node in topological(made[id(root)]):
            if node.kind == "symbol" and node not in numbers:
                numbers[node] = draws.uniform(0.25, 1.5, size=tuple(int(d) for d in node.shape))
    wanted = {id(made[id(x)]) for x in targets}
    mixed = mixed_dtypes([made[id(r)] for r in roots])
    # Targets as roots too: a target the outputs do not depend on still gets a (zero) gradient.
    forward = evaluate_graph(
        torch, [made[id(o)] for o in outs + targets], numbers, {}, wanted, mixed, outputs_only=True
    )
    grads = []
    for o, v in zip(outs, vs):
        if v is None:
            grads.append(torch.ones_like(forward[id(made[id(o)])]))
        else:
            graph = evaluate_graph(torch, [made[id(v)]], numbers, {}, set(), mixed)
            grads.append(graph[id(made[id(v)])].to(torch.float64))
    leaves = [forward[id(made[id(x)])] for x in targets]
    # an output that is a constant (a linear f's gradient) adds nothing: torch's backward would refuse it
    flowing = [(forward[id(made[id(o)])], g) for o, g in zip(outs, grads) if forward[id(made[id(o)])].requires_grad]
    if flowing:
        torch.autograd.backward([o for o, _ in flowing], [g for _, g in flowing], inputs=leaves)
    law_values = evaluate_graph(torch, [made[id(r)] for r in laws], numbers, {}, set(), mixed, outputs_only=True)
    worst = 0.0
    for leaf, rule in zip(leaves, laws):
        ours = law_values[id(made[id(rule)])].detach()
        theirs = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        if tuple(ours.shape) != tuple(theirs.shape):
            raise SymgradError(f"law has shape {tuple(ours.shape)}, torch's gradient {tuple(theirs.shape)}")
        worst = max(worst, float((ours - theirs).abs().max()) if ours.numel() else 0.0)
    scale = max(float(leaf.grad.abs().max()) if leaf.grad is not None and leaf.grad.numel() else 0.0 for leaf in leaves)
    narrowest = narrowest_rounding([made[id(r)] for r in roots], leaves=mixed)
    out = {
        "sizes": {str(k): v for k, v in sizes.items()},
        "held": worst <= ROUNDING_TOLERANCE[narrowest] * max(1.0, scale),
        "max_abs_error": worst,
    }
    if narrowest != "float64":  # the graph rounds through a narrower dtype, as torch's does, in its own order
        out["rounding"] = narrowest
    return out
