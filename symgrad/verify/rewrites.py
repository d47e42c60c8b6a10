"""Proofs of the simplifier, rewrite by rewrite: a simplified law equals the chain of VJP rules it came from when
each rewrite the simplifier applied (:class:`~symgrad.derive.rewrite_log.Rewrite`) replaced a node by an equal one.

Each rewrite is checked on its own at the proof's sizes, entry by entry. The existing nodes it reads are cut
to fresh symbols (one symbol per node, the same on both sides), which is sound: an identity in free variables
holds at the values the graph gives them. A rewrite that looks below its inputs (``x.T.T`` → ``x``) needs the
nodes just below its op spelled out, so the side before the rewrite is expanded a few levels, more when that is
not enough. Rewrites of the same structure are checked once. The work grows with the number of distinct
rewrites, where comparing a deep network's entries grows with its depth.

>>> import symgrad as sg
>>> from symgrad.derive.simplify import simplify
>>> (n,) = sg.dims("n")
>>> x = sg.symbols("x", (n, 3))
>>> log = []
>>> simplify([(x.T.T * 1) + 0], log=log)[0] is x
True
>>> check_rewrites(log, {n: 2}, {}).held
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import sympy

from ..core.budget import tick
from ..core.dims import stood_in
from ..core.dtypes import is_floating
from ..core.errors import ShapeError, SymgradError
from ..core.graph import uniform_constant
from ..core.tensor import Tensor, with_inputs
from ..derive.rewrite_log import Rewrite
from ..derive.simplify import simplify
from .instances import Sizes, at_sizes, instantiate_leaf
from .rules import RuleCheck
from .stand_ins import REFUSALS, large_sizes, stand_in
from .zeros import EntryRun

__all__ = ["check_rewrites", "rewrites_of"]

DEPTHS = (2, 4, 8)  # levels of the side before a rewrite spelled out, tried in turn


def rewrites_of(chain: Sequence[Tensor], context: Sequence[Tensor], laws: Sequence[Tensor]) -> list[Rewrite] | None:
    """The rewrites that simplify ``chain`` (the unsimplified laws) into ``laws``, or None when simplifying
    ``chain`` again does not give ``laws`` (laws derived elsewhere, or edited by hand)."""
    for exact in (False, True):
        log: list[Rewrite] = []
        again = simplify(list(chain), context=context, exact=exact, log=log)
        if all(same_graph(a, b) for a, b in zip(again, laws, strict=True)):
            return log
    return None


def same_graph(a: Tensor, b: Tensor) -> bool:
    """Whether two expression graphs are the same: the same ops, attributes and shapes over the same leaves (or
    constants with the same entries)."""
    seen: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y or (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        tick("comparing the law with the simplified chain of rules")
        if x.shape != y.shape or x.dtype != y.dtype or (x.op is None) != (y.op is None):
            return False
        if x.op is None:
            if not _same_constant(x, y):
                return False
            continue
        if x.op.name != y.op.name or _attrs(x) != _attrs(y) or len(x.inputs) != len(y.inputs):
            return False
        stack.extend(zip(x.inputs, y.inputs))
    return True


def _same_constant(x: Tensor, y: Tensor) -> bool:
    if x.kind != "formula" or y.kind != "formula" or x.given_name or y.given_name:
        return False
    if x.is_python_scalar != y.is_python_scalar:
        return False
    return [sympy.sympify(e) for e in x.entries().reshape(-1)] == [sympy.sympify(e) for e in y.entries().reshape(-1)]


def _attrs(t: Tensor) -> str:
    return repr(sorted(t.attrs.items()))


def check_rewrites(log: Sequence[Rewrite], sizes: Sizes, leaves: dict[int, Tensor]) -> RuleCheck:
    """Check each rewrite of ``log`` at ``sizes`` (see the module docstring); ``leaves`` maps leaves of the graph
    to their instances at these sizes (others are instantiated here). ``failed`` names the first op whose rewrite
    could not be shown to keep its value."""
    result = RuleCheck()
    seen: set[tuple] = set()
    not_shown: set[tuple] = set()  # too little spelled out: the next depth is tried
    rng = random.Random(0)
    for position, rewrite in enumerate(log):
        tick("checking the simplifier's rewrite {} of {}", position + 1, len(log))
        for depth in (None,) if rewrite.closed else DEPTHS:
            local = _Local(rewrite, depth)
            key = local.signature()
            if key in seen:
                break
            if key in not_shown:
                continue
            held, count, mapping, kept = local.holds(sizes, leaves, rng, result.methods)
            if held:
                result.stood_in(f"a rewrite of {getattr(rewrite.before.op, 'name', 'a leaf')}", mapping, kept)
            if not held:
                not_shown.add(key)
            else:
                seen.add(key)
                result.rules += 1
                result.entries += count
                break
        else:
            result.held, result.failed = False, rewrite.before.op.name if rewrite.before.op else "a leaf"
            return result
    return result


class _Local:
    """One rewrite with its cut: the nodes spelled out on either side, and the nodes that become fresh symbols."""

    def __init__(self, rewrite: Rewrite, depth: int | None) -> None:
        self.before, self.after = rewrite.before, rewrite.after
        self.frontier = rewrite.frontier
        self.spelled: set[int] = set()  # nodes whose op is applied in the check; the rest are leaves or cut
        level, seen = [self.before], {id(self.before)}
        while level and (depth is None or depth > 0):  # depth None: down to the frontier
            depth = None if depth is None else depth - 1
            following = []
            for node in level:
                if node.op is None or (id(node) in self.frontier and node is not self.before):
                    continue
                self.spelled.add(id(node))
                for part in node.inputs:
                    if id(part) not in seen:
                        seen.add(id(part))
                        following.append(part)
            level = following
        stack = [self.after]
        while stack:  # the new part of the replacement
            node = stack.pop()
            if node.op is None or id(node) in self.spelled or id(node) in self.frontier:
                continue
            self.spelled.add(id(node))
            stack.extend(node.inputs)

    def cut(self, node: Tensor) -> bool:
        """Whether ``node`` becomes fresh symbols: a floating tensor computed outside the spelled-out part.
        Integer and bool tensors (indices, masks) and Python numbers keep their meaning, so they are spelled out
        whatever their depth."""
        return (
            node.op is not None
            and id(node) not in self.spelled
            and is_floating(node.dtype)
            and not node.is_python_scalar
            and uniform_constant(node) is None
        )

    def _order(self) -> list[Tensor]:
        """The nodes of the check, inputs before their users."""
        order: list[Tensor] = []
        done: set[int] = set()
        stack: list[tuple[Tensor, bool]] = [(self.after, False), (self.before, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if expanded or node.op is None or self.cut(node):
                done.add(id(node))
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((part, False) for part in reversed(node.inputs) if id(part) not in done)
        return order

    def signature(self) -> tuple:
        """The check's structure, with fresh symbols and the graph's symbol leaves numbered: equal signatures,
        equal checks."""
        numbers: dict[int, int] = {}
        parts: list[Any] = []
        for node in self._order():
            numbers[id(node)] = len(numbers)
            shape = tuple(str(d) for d in node.shape)
            if node.op is None:
                if node.kind == "symbol" and is_floating(node.dtype):
                    parts.append(("free", shape, node.dtype))
                elif node.kind == "symbol":
                    parts.append(("leaf", id(node)))
                else:
                    parts.append(("constant", shape, node.dtype, str(node.entries().tolist())))
            elif self.cut(node):
                parts.append(("cut", shape, node.dtype))
            else:
                inputs = tuple(numbers[id(i)] for i in node.inputs)
                parts.append((node.op.name, _attrs(node), inputs, shape, node.dtype, node.is_python_scalar))
        return (tuple(parts), numbers[id(self.before)], numbers[id(self.after)])

    def holds(self, sizes: Sizes, leaves: dict[int, Tensor], rng: random.Random, methods: dict) -> tuple:
        """Whether the two sides agree entry by entry at ``sizes``: (held, entries compared, the stand-in sizes
        used, the large sizes kept). Large sizes the architecture fixes are checked at small ones where the ops
        accept them (see :mod:`.stand_ins`)."""
        order = self._order()
        fixed: list[int] = []  # sizes a constant or an index's values tie the check to
        for n in order:
            if n.op is None and not self._free(n) and not self._redrawn(n):
                fixed += [d for d in at_sizes(tuple(n.shape), sizes) if isinstance(d, int)]
            if n.op is not None and n.op.indexes is not None and id(n) in self.spelled:
                pairs = n.op.indexes(*n.inputs, **n.attrs)
                fixed += [size for size, index in pairs if isinstance(size, int) and not self._redrawn(index)]
        present = large_sizes([n.shape for n in order])
        large, held_fixed = [d for d in present if d not in fixed], [d for d in present if d in fixed]
        if large:
            try:
                sides, mapping, kept = stand_in(
                    large, [*fixed, *sizes.values()], lambda m: self._sides(order, sizes, leaves, rng, m)
                )
                return (*self._agree(*sides, methods), mapping, sorted({*kept, *held_fixed}))
            except REFUSALS:
                pass
        try:
            sides = self._sides(order, sizes, leaves, rng, {})
        except SymgradError:  # an op that needs the values of a cut tensor: spell out more
            return False, 0, {}, []
        return (*self._agree(*sides, methods), {}, sorted({*large, *held_fixed}))

    def _free(self, node: Tensor) -> bool:
        """Whether the check gives ``node`` fresh symbols: a cut, or a floating symbol leaf of the graph."""
        if node.op is None:
            return node.kind == "symbol" and is_floating(node.dtype) and getattr(node, "classes", None) is None
        return self.cut(node)

    def _redrawn(self, index: Tensor) -> bool:
        """Whether ``index`` comes, through the check's own nodes, from class indices alone (leaves the check draws
        anew, below their class count at the stand-in sizes): no constant's values tie it to a size."""
        stack, leaves = [index], 0
        while stack:
            node = stack.pop()
            if node.op is None:
                if getattr(node, "classes", None) is None and not (node.is_python_scalar or node.shape == ()):
                    return False
                leaves += getattr(node, "classes", None) is not None
            elif self.cut(node):
                return False
            else:
                stack.extend(node.inputs)
        return leaves > 0

    def _sides(self, order: list[Tensor], sizes: Sizes, leaves: dict, rng: random.Random, mapping: dict) -> tuple:
        """The entries of both sides at ``sizes``, their fixed sizes replaced as ``mapping`` says: fresh symbols
        and class indices at the stand-ins, and ops with the attributes their rows give at them."""
        made: dict[int, Tensor] = {}
        fresh = 0
        for node in order:
            if node.op is None and mapping and self._redrawn(node):
                made[id(node)] = instantiate_leaf(node, sizes, rng, mapping)
            elif node.op is None and not (mapping and self._free(node)):
                if id(node) not in leaves:
                    leaves[id(node)] = instantiate_leaf(node, sizes, rng)
                made[id(node)] = leaves[id(node)]
            elif node.op is None or self.cut(node):
                shape = at_sizes(stood_in(tuple(node.shape), mapping), sizes)
                made[id(node)] = Tensor(shape=shape, name=f"cut{fresh}", dtype=node.dtype, distinct=True)
                fresh += 1
            else:
                attrs = node.attrs
                if mapping and node.op.stand_in_attrs is not None:
                    attrs = node.op.stand_in_attrs(mapping, *(part.shape for part in node.inputs), **attrs)
                attrs = {k: at_sizes(v, sizes) for k, v in attrs.items()}
                made[id(node)] = with_inputs(node, [made[id(i)] for i in node.inputs], attrs)
                if mapping and 0 in made[id(node)].shape and 0 not in at_sizes(tuple(node.shape), sizes):
                    raise ShapeError("a stand-in size empties a node")
                if mapping and node.op.has("positions"):
                    _follows(made[id(node)], at_sizes(stood_in(tuple(node.shape), mapping), sizes))
        before, after = made[id(self.before)], made[id(self.after)]
        if mapping and before.shape != after.shape:  # an op whose row has no stand-in for a size it names
            raise ShapeError("the stand-in sizes change one side's shape only")
        return before.entries(), after.entries()

    @staticmethod
    def _agree(before: Any, after: Any, methods: dict) -> tuple[bool, int]:
        if before.shape != after.shape:
            return False, 0
        count = 0
        run = EntryRun()
        for a, b in zip(before.reshape(-1), after.reshape(-1)):
            count += 1
            try:
                method = run.zero_by(_difference(sympy.sympify(a), sympy.sympify(b)))
            except (TypeError, ValueError):  # SymPy cannot evaluate it (a condition on a mask's symbols)
                method = None
            if method is None:
                return False, count
            methods[method] = methods.get(method, 0) + 1
        return True, count


def _follows(made: Tensor, expected: tuple) -> None:
    """Refuse a stand-in under which a positions op's shape is not its own with the sizes replaced: an attribute that
    names a position (a slice's bound) would make the check one of another op, which could hold where the true one
    does not."""
    if tuple(made.shape) != tuple(expected):
        raise ShapeError(f"at the stand-in sizes a {made.op.name} has shape {made.shape}, not {expected}")


def _difference(a: Any, b: Any) -> sympy.Expr:
    """``a - b``, with conditions (a mask's entries) as 1 where they hold and 0 where not."""
    if isinstance(a, sympy.logic.boolalg.Boolean) or isinstance(b, sympy.logic.boolalg.Boolean):
        a, b = (sympy.Piecewise((1, e), (0, True)) if isinstance(e, sympy.logic.boolalg.Boolean) else e for e in (a, b))
    return a - b
