"""Values the emitted backward computes again instead of saving: those made from data alone that are larger than it.

A language model's loss reads a one-hot of its targets, ``batch × vocabulary`` floats: saved for the backward it
would hold a float per class per token, where autograd's ``nll_loss`` saves the targets, an integer per token. A value
whose leaves are all integer or boolean inputs and constants (no parameter, no floating input, no random draw) costs
the backward a pass to make again, and nothing to keep; where it has more entries than the inputs it is made from,
the backward makes it again from those inputs, which the Function saves instead.

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> y = sg.symbols("y", (4,), dtype="int64")
>>> hot = apply("one_hot", y, num_classes=1000)
>>> [node is hot for node in remade([hot], {id(node): node for node in topological(hot)})]
[True]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core.dims import is_concrete, numel
from ..core.dtypes import is_floating
from ..core.graph import topological
from ..core.tensor import Tensor


def remade(saved: Iterable[Tensor], forward: Mapping[int, Tensor]) -> list[Tensor]:
    """Of the forward values the backward reads (``saved``), those it makes again (see the module docstring), with
    the forward nodes they are made from that would otherwise need saving too, inputs before their users.
    ``forward`` maps the ids of the forward's nodes to them, inputs before their users."""
    from_data = _from_data(forward)
    chosen: dict[int, Tensor] = {}
    for node in saved:
        if node.op is None or not from_data.get(id(node), False):
            continue
        leaves = [leaf for leaf in topological(node) if leaf.op is None and leaf.kind == "symbol"]
        if _larger(numel(node.shape), sum((numel(leaf.shape) for leaf in leaves), 0)):
            for part in topological(node):
                if part.op is not None and id(part) in forward:
                    chosen.setdefault(id(part), part)
    return list(chosen.values())


def _from_data(forward: Mapping[int, Tensor]) -> dict[int, bool]:
    """Whether each forward node is made from integer or boolean inputs and constants alone, in one pass (inputs
    come before their users)."""
    made: dict[int, bool] = {}
    for key, node in forward.items():
        if node.op is None:
            made[key] = not (node.kind == "symbol" and is_floating(node.dtype))
        else:
            made[key] = not node.op.has("random") and all(made.get(id(part), False) for part in node.inputs)
    return made


def _larger(entries: object, made_from: object) -> bool:
    """``entries`` > ``made_from``, for sizes that may be symbolic (a symbolic batch times a vocabulary): False
    where SymPy cannot tell."""
    if is_concrete((entries, made_from)):
        return int(entries) > int(made_from)
    return bool((entries - made_from).is_positive)
