"""Listings: laws printed with their shared subexpressions named once.

>>> from symgrad.core import symbols
>>> import symgrad.ops  # the op table
>>> x = symbols("x", (2,))
>>> y = (x * 2).exp()
>>> print(listing([("a", y + 1), ("b", y - 1)]).text())
t1 = torch.exp(x * 2)
a = t1 + 1
b = t1 - 1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .graph import topological
from .printers import Printer, TorchPrinter

if TYPE_CHECKING:
    from .tensor import Tensor


@dataclass
class Listing:
    """Laws with their shared subexpressions: ``definitions`` first, then one line per result."""

    definitions: list[tuple[str, str]]
    results: list[tuple[str, str]]

    def text(self, sep: str = " = ") -> str:
        lines = [f"{name}{sep}{body}" for name, body in self.definitions + self.results]
        return "\n".join(lines)


def shared_nodes(roots: Sequence[Tensor]) -> list[Tensor]:
    """Op nodes used more than once across ``roots`` (in dependency order), worth naming."""
    uses: Counter[int] = Counter()
    nodes: dict[int, Tensor] = {}
    for root in roots:
        for node in topological(root):
            if id(node) in nodes:
                continue
            nodes[id(node)] = node
            for part in node.inputs:
                uses[id(part)] += 1
    cheap = {"transpose", "permute", "neg", "full"}
    return [n for i, n in nodes.items() if uses[i] > 1 and n.op is not None and n.op.name not in cheap]


def listing(
    results: Sequence[tuple[str, Tensor]],
    *,
    printer: type[Printer] = TorchPrinter,
    forward: Sequence[tuple[str, Tensor]] = (),
    prefix: str = "t",
) -> Listing:
    """Name shared subexpressions once (forward outputs keep their own names) and print everything."""
    names: dict[int, str] = {}
    definitions: list[tuple[str, str]] = []
    roots = [t for _, t in results]
    forward_names = {id(t): name for name, t in forward}
    order: dict[int, Tensor] = {}
    for root in roots:
        for node in topological(root):
            order.setdefault(id(node), node)
    to_name = {id(n) for n in shared_nodes(roots)} | (forward_names.keys() & order.keys())
    p = printer(names)
    counter = 0
    for key, node in order.items():
        if key not in to_name or node.op is None:
            continue
        if key in forward_names:
            name = forward_names[key]
        else:
            counter += 1
            name = f"{prefix}{counter}"
        label = p.label(name)
        definitions.append((label, p.doprint(node)))
        names[key] = label
    return Listing(definitions, [(p.label(name), p.doprint(t)) for name, t in results])
