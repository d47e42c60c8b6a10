"""Stand-in sizes: a rule checked at small sizes in place of the large ones an architecture fixes.

A VJP rule or a simplifier rewrite is written for every size, so checking it entry by entry at 3 channels
proves what checking it at 32 would, at a sliver of the cost (a convolution's entries at 32 channels and
28×28 pixels are millions of terms). Each large fixed size is replaced by a small one, the same size for every
dimension of that value, and distinct from every other size in the check (so that a transposition cannot
hide). Where the op's meaning ties a size to an attribute (GroupNorm's 32 groups need 32 channels, a reshape's
target shape), applying the op at the stand-in fails, and that size is kept: the check then says which sizes
it kept.

>>> shapes = [(2, 32, 14, 14), (32, 3, 3, 3)]
>>> large_sizes(shapes)
[14, 32]
>>> from symgrad.core.dims import stood_in  # how a shape takes its stand-ins
>>> stood_in(shapes[0], {32: 4, 14: 5})
(2, 4, 5, 5)
>>> def accepts(mapping):  # an op that needs 32 to stay: fails unless it does
...     if mapping.get(32, 32) != 32:
...         raise ValueError("32 channels for 32 groups")
...     return "built"
>>> stand_in(large_sizes(shapes), {2, 3}, accepts, (ValueError,))
('built', {14: 4}, [32])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import sympy

from ..core.errors import ShapeError, SymbolicShapeError, TorchError, UnsupportedError, ValuesUnknownError

STAND_IN_ABOVE = 5  # fixed sizes above this get a stand-in
CANDIDATES = 4  # stand-in sizes tried for each large size, smallest first

# what a stand-in size can make an op refuse (a size its attributes fix); running out of time is not one
REFUSALS = (ShapeError, SymbolicShapeError, TorchError, ValuesUnknownError, UnsupportedError, IndexError, ValueError)


def large_sizes(shapes: Iterable[Sequence[Any]]) -> list[int]:
    """The fixed (integer) sizes above :data:`STAND_IN_ABOVE` in ``shapes``, in increasing order; in a symbolic
    size (``64*b``, a sequence flattened with a symbolic batch), its integer factors."""
    found: set[int] = set()
    for shape in shapes:
        for d in shape:
            if isinstance(d, sympy.Expr) and not d.is_Integer:
                found |= {int(a) for a in d.atoms(sympy.Integer) if a > STAND_IN_ABOVE}
            elif isinstance(d, (int, sympy.Integer)) and d > STAND_IN_ABOVE:
                found.add(int(d))
    return sorted(found)


def stand_in(
    large: Sequence[int],
    taken: Iterable[int],
    build: Callable[[dict[int, int]], Any],
    refusals: tuple[type[BaseException], ...] = REFUSALS,
) -> tuple[Any, dict[int, int], list[int]]:
    """Build the check at stand-in sizes: ``build(mapping)`` with the ``large`` sizes (see :func:`large_sizes`)
    mapped to small ones that avoid ``taken`` (the sizes that stay), as many as the op accepts (``build`` raising
    one of ``refusals`` rejects a mapping). Returns what ``build`` returned, the mapping used, and the large sizes
    kept (an empty mapping, every large size kept, when none can be replaced; then ``build`` runs at the true
    sizes and its refusal propagates)."""
    large = sorted(large)
    used = {d for d in taken if d not in large}
    if large:
        everything = _distinct(large, used)
        try:
            return build(everything), everything, [d for d in large if d not in everything]
        except refusals:
            pass
    mapping: dict[int, int] = {}
    kept: list[int] = []
    built, built_at = None, None
    for size in reversed(large):  # the largest first: the most work saved
        for candidate in [c for c in range(2, size) if c not in used | set(mapping.values())][:CANDIDATES]:
            try:
                built, built_at = build({**mapping, size: candidate}), {**mapping, size: candidate}
            except refusals:
                continue
            mapping[size] = candidate
            break
        else:
            kept.append(size)
    if built_at != mapping:
        built = build(mapping)
    return built, mapping, sorted(kept)


def _distinct(large: list[int], used: set[int]) -> dict[int, int]:
    """The smallest stand-ins, one per large size, distinct from each other and from ``used``."""
    mapping: dict[int, int] = {}
    candidate = 2
    for size in large:
        while candidate in used:
            candidate += 1
        if candidate >= size:
            break
        mapping[size] = candidate
        candidate += 1
    return mapping


def described(shrunk: dict[int, set[int]], kept: dict[int, set[str]]) -> str:
    """How a proof's checks treated the sizes an architecture fixes, for its report.

    >>> for part in described({32: {3, 4}, 14: {2}}, {32: {"reshape"}}).split("; "):
    ...     print(part)
    fixed sizes at stand-ins, as each rule holds at every size: 14→2, 32→3 or 4
    kept where an op fixes them: 32 (reshape)
    """
    parts = []
    if shrunk:
        shown = ", ".join(f"{size}→{' or '.join(str(s) for s in sorted(shrunk[size]))}" for size in sorted(shrunk))
        parts.append(f"fixed sizes at stand-ins, as each rule holds at every size: {shown}")
    if kept:
        shown = ", ".join(f"{size} ({', '.join(sorted(kept[size]))})" for size in sorted(kept))
        parts.append(f"kept where an op fixes them: {shown}")
    return "; ".join(parts)
