"""Proofs rule by rule: a law symgrad derives is a chain of VJP rules, one per forward node, so it holds when each
rule holds for its op and the simplified law equals the chain.

Each rule is checked on its own, entry by entry at the proof's sizes: the op applied to fresh symbols (``in0``,
``in1``, …), its rule's result against the entrywise vector-Jacobian product of that one op with a symbolic
cotangent ``g``. Rules of the same op, attributes and shapes are checked once. The simplified law is then compared
entry by entry with the unsimplified chain (no differentiation there). The work grows with the number of distinct
ops, where differentiating a network's entries grows with its depth (an entry of a deep network is a formula
of the whole network).

>>> import symgrad as sg
>>> (n,) = sg.dims("n")
>>> W, x = sg.symbols("W", (n, n), requires_grad=True), sg.symbols("x", (n,))
>>> out = (W @ x).tanh().sum()
>>> chain, (grad,) = sg.law(out, [W], simplified=False), sg.law(out, [W])
>>> made = instantiate([out, chain[0], grad, W], {n: 2})
>>> result = check_rules(rule_nodes([out], [W]), made)
>>> result.held, result.rules
(True, 3)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.budget import tick
from ..core.constructors import symbols, symbols_like, tensor
from ..core.dims import is_concrete, stood_in
from ..core.dtypes import is_floating
from ..core.errors import ShapeError
from ..core.graph import topological_all
from ..core.tensor import Tensor, apply
from ..derive.entrywise import vjp_entries
from ..derive.reverse import needed_nodes
from ..ops.calculus import NoDerivative
from .instances import instantiate
from .stand_ins import REFUSALS, large_sizes, stand_in
from .zeros import EntryRun

__all__ = ["RuleCheck", "check_rules", "instantiate", "rule_nodes"]


@dataclass
class RuleCheck:
    """What checking the rules found: whether all held, how many distinct rules and entries were compared, the
    methods that showed each difference to be 0, the op whose rule failed (None when all held), and the sizes
    the architecture fixes that checks replaced by stand-ins or kept (:mod:`.stand_ins`)."""

    held: bool = True
    rules: int = 0
    applications: int = 0  # the nodes those rules stand for: a repeated block's are checked once, by structure
    entries: int = 0
    methods: dict[str, int] = field(default_factory=dict)
    failed: str | None = None
    shrunk: dict[int, set[int]] = field(default_factory=dict)  # a fixed size -> the stand-ins checked in its place
    kept: dict[int, set[str]] = field(default_factory=dict)  # a fixed size kept -> the ops that kept it

    def stood_in(self, op: str, mapping: dict[int, int], kept: Sequence[int]) -> None:
        """Record that a check of ``op`` replaced fixed sizes as ``mapping`` says and kept those in ``kept``."""
        for size, small in mapping.items():
            self.shrunk.setdefault(size, set()).add(small)
        for size in kept:
            self.kept.setdefault(size, set()).add(op)

    def take_stand_ins(self, other: RuleCheck) -> None:
        """Add the sizes ``other``'s checks replaced or kept to this one's."""
        for size, small in other.shrunk.items():
            self.shrunk.setdefault(size, set()).update(small)
        for size, ops in other.kept.items():
            self.kept.setdefault(size, set()).update(ops)


def rule_nodes(outputs: Sequence[Tensor], targets: Sequence[Tensor]) -> list[Tensor]:
    """The forward nodes whose VJP rules a law of ``outputs`` with respect to ``targets`` chains, in graph order."""
    needed = needed_nodes(list(outputs), list(targets))
    return [
        node
        for node in topological_all(outputs)
        if node.op is not None and id(node) in needed and any(id(i) in needed for i in node.inputs)
    ]


def check_rules(nodes: Sequence[Tensor], made: dict[int, Tensor]) -> RuleCheck:
    """Check the VJP rule of each node in ``nodes`` at the sizes ``made`` has them (see the module docstring);
    ``made`` maps each node to its instance at concrete sizes (:func:`instantiate`)."""
    result = RuleCheck(applications=len(nodes))
    seen: set[tuple] = set()
    for position, node in enumerate(nodes):
        concrete = made[id(node)]
        key = _signature(concrete)
        if key in seen:
            continue
        seen.add(key)
        tick("checking the rule of {} ({} of {} nodes)", node.op.name, position + 1, len(nodes))
        held, count, mapping, kept = _rule_holds(concrete, result.methods)
        result.stood_in(node.op.name, mapping, kept)
        result.rules += 1
        result.entries += count
        if not held:
            result.held, result.failed = False, node.op.name
            return result
    return result


def _fresh(part: Tensor) -> bool:
    """Whether a rule check gives this input fresh symbols (a floating tensor), or keeps it as it is (integer
    targets and indices, and Python numbers, whose values the op reads)."""
    return is_floating(part.dtype) and not part.is_python_scalar


def _signature(node: Tensor) -> tuple:
    """What a rule check depends on: the op, its attributes, its inputs' shapes and dtypes, and the inputs it keeps
    as they are (the very tensor, or the Python number's value); masks and indices it draws anew are alike (the
    causal masks of a transformer's layers)."""
    picks = _picks(node)
    parts = tuple(
        (tuple(str(d) for d in part.shape), part.dtype)
        if _fresh(part)
        else (tuple(str(d) for d in part.shape), part.dtype, "drawn")
        if _drawable(part, is_index=id(part) in picks)
        else (tuple(str(d) for d in part.shape), part.dtype, part.is_python_scalar, _kept(part))
        for part in node.inputs
    )
    return (node.op.name, tuple(sorted((k, repr(v)) for k, v in node.attrs.items())), parts)


def _picks(node: Tensor) -> dict[int, int]:
    """The fixed size each index input of ``node`` picks entries along (see the ``indexes`` field of an op's row),
    by the index's id."""
    pairs = node.op.indexes(*node.inputs, **node.attrs) if node.op.indexes is not None else []
    return {id(index): size for size, index in pairs if isinstance(size, int)}


def _kept(part: Tensor) -> Any:
    return str(part.entries().tolist()) if part.is_python_scalar else id(part)


def _rule_holds(node: Tensor, methods: dict[str, int]) -> tuple[bool, int, dict, list]:
    """One op's rule on fresh symbols against the entrywise VJP of that op alone: (held, entries compared, the
    stand-in sizes used, the large sizes kept). Large sizes (those an architecture fixes, and a symbolic size's
    multiples, a flattened batch of sequences) are checked at small stand-ins where the op accepts them (see
    :mod:`.stand_ins`)."""
    shapes = [part.shape for part in node.inputs]
    if node.op.rule_shapes is not None and all(_fresh(part) for part in node.inputs):
        shapes = node.op.rule_shapes(*shapes, **node.attrs)
    fixed = large_sizes(part.shape for part in node.inputs)
    # an index (gather's, cross-entropy's targets) is drawn anew at the stand-in sizes, its values below the size
    # it picks along: a rule holds for every index, so it need not be the graph's
    picks = _picks(node)
    # so is a mask (a causal mask) or another integer tensor (a one-hot encoding): a rule holds for every value
    drawn = {id(part) for part in node.inputs if _drawable(part, is_index=id(part) in picks)}
    keep = {
        d
        for part in node.inputs
        if not _fresh(part) and id(part) not in drawn
        for d in part.shape
        if isinstance(d, int)
    }
    keep |= {d for shape in shapes for d in shape if isinstance(d, int) and d not in fixed}
    keep |= {size for part_id, size in picks.items() if part_id not in drawn}
    present = [d for d in fixed if any(d in shape for shape in shapes)]
    large, held_fixed = [d for d in present if d not in keep], [d for d in present if d in keep]

    def build(mapping: dict[int, int]) -> tuple[list[Tensor], Tensor, Tensor, list]:
        fresh = [
            symbols(f"in{k}", stood_in(shape, mapping), requires_grad=True, dtype=part.dtype)
            if _fresh(part)
            else _drawn(part, mapping, picks.get(id(part)))
            if mapping and id(part) in drawn
            else part
            for k, (part, shape) in enumerate(zip(node.inputs, shapes))
        ]
        attrs = node.attrs
        if mapping and node.op.stand_in_attrs is not None:
            attrs = node.op.stand_in_attrs(mapping, *(part.shape for part in node.inputs), **node.attrs)
        out = apply(node.op.name, *fresh, **attrs)
        if 0 in out.shape and 0 not in node.shape:
            raise ShapeError("a stand-in size empties the output")
        if mapping and node.op.has("positions") and tuple(out.shape) != stood_in(node.shape, mapping):
            # an attribute names a position (a slice's bound) the stand-in moves: the check would be one of another
            # op, which could hold where the true one does not
            raise ShapeError(f"at the stand-in sizes the output has shape {out.shape}, not {node.shape} replaced")
        g = symbols_like(out, "g", distinct=True)
        return fresh, out, g, list(node.op.vjp(g, out, *fresh, **attrs))

    if large:
        try:
            (fresh, out, g, pieces), mapping, kept = stand_in(large, keep, build)
            return (*_pieces_hold(node, fresh, out, g, pieces, methods), mapping, sorted({*kept, *held_fixed}))
        except REFUSALS:  # the op reads a stand-in's entries it cannot: the true sizes instead
            pass
    fresh, out, g, pieces = build({})
    return (*_pieces_hold(node, fresh, out, g, pieces, methods), {}, sorted({*large, *held_fixed}))


def _drawable(part: Tensor, is_index: bool) -> bool:
    """Whether a proof draws a stand-in for this input: a mask or another integer tensor of a fixed shape (a one-hot
    encoding; the rule holds for every value), or an index whose values are known numbers (drawn below the size it
    picks along, its ignored values kept among the draws)."""
    if part.is_python_scalar or not is_concrete(part.shape) or is_floating(part.dtype):
        return False
    return not is_index or part.has_values()


def _drawn(part: Tensor, mapping: dict[int, int], size: int | None) -> Tensor:
    """A stand-in for ``part`` at the stand-in sizes. An index: values drawn below ``size``'s stand-in, and its
    negative values (an ignore_index) kept among them where it has any. A mask: 0 or 1. Another integer tensor: 0, 1
    or 2 (its own values may take millions of terms to read, a one-hot encoding of a vocabulary)."""
    shape = stood_in(part.shape, mapping)
    rng = random.Random(7)
    count = int(np.prod(shape, dtype=np.int64))
    if size is not None:
        ignored = sorted({int(v) for v in np.asarray(part.numbers()).reshape(-1) if v < 0})
        bound = mapping.get(size, size)
        values = [ignored[0] if ignored and k % 4 == 3 else rng.randrange(bound) for k in range(count)]
    else:
        values = [rng.randrange(2 if part.dtype == "bool" else 3) for _ in range(count)]
    drawn = np.array(values, dtype=np.int64).reshape(shape)
    return tensor((drawn.astype(bool) if part.dtype == "bool" else drawn).tolist(), dtype=part.dtype)


def _pieces_hold(
    node: Tensor, fresh: list[Tensor], out: Tensor, g: Tensor, pieces: list, methods: dict[str, int]
) -> tuple[bool, int]:
    """Whether each piece of the rule equals the entrywise VJP of ``out`` with cotangent ``g``: (held, entries)."""
    pieces = pieces + [None] * (len(fresh) - len(pieces))  # a rule that gives fewer pieces says nothing of the rest
    count = 0
    for piece, part, original in zip(pieces, fresh, node.inputs):
        if part is original or not _fresh(original) or isinstance(piece, NoDerivative):  # nothing to hold
            continue
        expected = vjp_entries([out], part, [g])
        run = EntryRun()
        # no piece: the rule says this input gets no gradient, which must then be 0
        actual = np.zeros(expected.shape, dtype=object) if piece is None else piece.entries()
        if actual.shape != expected.shape:
            return False, count
        for a, e in zip(actual.reshape(-1), expected.reshape(-1)):
            count += 1
            method = run.differ_by(a, e)
            if method is None:
                return False, count
            methods[method] = methods.get(method, 0) + 1
    return True, count


def chain_equals(laws: Sequence[Tensor], chain: Sequence[Tensor], made: dict[int, Tensor]) -> tuple[bool, int, Any]:
    """Whether each simplified law equals the unsimplified chain of rules, entry by entry at ``made``'s sizes:
    (held, entries compared, methods)."""
    methods: dict[str, int] = {}
    count = 0
    for simplified, raw in zip(laws, chain, strict=True):
        a_entries, b_entries = made[id(simplified)].entries(), made[id(raw)].entries()
        run = EntryRun()
        if a_entries.shape != b_entries.shape:
            return False, count, methods
        for position, (a, b) in enumerate(zip(a_entries.reshape(-1), b_entries.reshape(-1))):
            count += 1
            tick("comparing the simplified law with the chain of rules, entry {} of {}", position + 1, a_entries.size)
            method = run.differ_by(a, b)
            if method is None:
                return False, count, methods
            methods[method] = methods.get(method, 0) + 1
    return True, count, methods
