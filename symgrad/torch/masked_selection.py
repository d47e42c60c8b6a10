"""Entries picked by a mask whose values are formulas: ``x[x > 3]``, as hand-written backwards use them.

``x[mask]`` has as many entries as the mask has true ones, which a formula cannot say when the mask depends on
the inputs. The pattern people write never needs that count: elementwise arithmetic on the picked entries,
assigned back through the same mask (``grad[mid] = g[mid] * (2 * x[mid] + 3) / 6``). So a selection is kept as
the whole tensor with its mask attached; elementwise arithmetic on selections of one mask (and Python numbers)
gives another; assigning one through its own mask is ``torch.where(mask, value, out)``. Anything else that reads
a selection (a sum, a reshape, a tensor of another shape) needs the count and is refused in one line.

>>> import symgrad as sg
>>> x = sg.symbols("x", (2, 2))
>>> picked = selection(x, x > 0)
>>> picked.shape, picked.selected_by.name
((2, 2), 'x > 0')
"""

from __future__ import annotations

from typing import Any

from ..core.dims import is_concrete
from ..core.errors import UnsupportedError
from ..core.graph import topological
from ..core.tensor import Tensor

ELEMENTWISE = ("pointwise", "broadcast")  # the rows' batching kinds of ops that act entry by entry


def selection(x: Tensor, mask: Any) -> Tensor | None:
    """``x[mask]`` as a selection (see the module docstring), for a boolean mask of ``x``'s shape whose values
    are formulas; None otherwise (the general indexing decides)."""
    if not isinstance(mask, Tensor) or mask.dtype != "bool" or tuple(map(str, mask.shape)) != tuple(map(str, x.shape)):
        return None
    if is_concrete(mask.shape) and mask.has_values():  # its values are known: the general indexing picks them
        return None
    picked = x.clone()
    picked.selected_by = mask
    return picked


def mask_of(t: Any) -> Tensor | None:
    """The mask of a selection, None for any other value."""
    return getattr(t, "selected_by", None) if isinstance(t, Tensor) else None


def same_mask(a: Tensor, b: Tensor) -> bool:
    """Whether two masks are the same formula (``x > 3`` built twice is one mask): the same expression, or, at
    concrete sizes, the same entries (a mask made under no_grad is a detached copy of its own name)."""
    if a is b or (a.shape == b.shape and a.name == b.name):
        return True
    if a.shape != b.shape or not is_concrete(a.shape):
        return False
    return all(x == y for x, y in zip(a.entries().reshape(-1), b.entries().reshape(-1)))


def carried(result: Any, inputs: list[Any]) -> None:
    """After a call that read selections: tag its result as a selection, or refuse a call that needs the count."""
    masks = [m for m in map(mask_of, inputs) if m is not None]
    if not masks:
        return
    mask = masks[0]
    others = [t for t in inputs if isinstance(t, Tensor) and mask_of(t) is None and t.shape]
    elementwise = (
        isinstance(result, Tensor)
        and all(same_mask(mask, m) for m in masks)
        and not others
        and tuple(map(str, result.shape)) == tuple(map(str, mask.shape))
        and _entry_by_entry(result, inputs)
    )
    if not elementwise:
        raise UnsupportedError(count_refusal())
    result.selected_by = mask


# what reads a selection's number of entries
COUNTS = frozenset({"numel", "nelement", "size", "shape", "__len__"})


def count_refusal() -> str:
    """The refusal of a use of x[mask] that needs its number of entries."""
    return (
        "it reads x[mask] for a mask computed from the inputs, whose number of entries a formula cannot say; "
        "symgrad follows elementwise arithmetic on such entries assigned back through the same mask "
        "(out[mask] = f(x[mask])), as torch.where(mask, f(x), out)"
    )


def _entry_by_entry(result: Tensor, inputs: list[Any]) -> bool:
    """Whether every node the call made acts entry by entry."""
    stop = {id(t) for t in inputs if isinstance(t, Tensor)}
    for node in topological(result):
        if id(node) in stop or node.op is None:
            continue
        if node.op.batch not in ELEMENTWISE and node.op.name not in ("clone", "to"):
            return False
    return True


def assigned_selection(t: Tensor, index: Any, value: Any) -> Tensor | None:
    """``t[mask] = value`` where ``value`` is a selection by the same mask: ``where(mask, value, t)``."""
    mask = mask_of(value)
    if mask is None or not isinstance(index, Tensor) or not same_mask(mask, index):
        return None
    return t.apply_op("where", index, value.to(t.dtype) if value.dtype != t.dtype else value, t)
