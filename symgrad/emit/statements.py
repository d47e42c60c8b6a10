"""Statements of emitted code: which nodes get a name (``t_<n> = ...``), in what order, and how a long one is
split so that each line fits the project's line length.

>>> import symgrad as sg
>>> from symgrad.emit.code_text import CodePrinter
>>> x = sg.symbols("x", (3,))
>>> y = x.exp()
>>> names = {id(x): "x"}
>>> name_statements([y, (y * y).sum()], names, CodePrinter(names, "x"), count_uses([(y * y).sum()]), 0)[0]
[('t_1', 'torch.exp(x)')]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ..core.graph import topological, uniform_constant
from ..core.printers import TorchPrinter
from ..core.spelling import describe
from ..core.tensor import Tensor
from .code_text import LINE_LENGTH, MAX_INLINE, CodePrinter


def count_uses(roots: Sequence[Tensor]) -> Counter:
    uses: Counter = Counter()
    seen: set[int] = set()
    for root in roots:
        for node in topological(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for part in node.inputs:
                uses[id(part)] += 1
    return uses


def needs_name(node: Tensor, uses: Counter, text_of) -> bool:
    """Whether a node gets a statement of its own: it is used twice, or its text is too long to inline."""
    if node.op is None or (uniform_constant(node) is not None and not node.shape):
        return False
    if node.op.name in ("full",):
        return False
    if node.op.name == "binary_cross_entropy_with_logits" and uses[id(node)] == 1:
        return False  # long, but a mean or sum of it prints as one call (see _fused_loss); fit_statement splits it
    return uses[id(node)] > 1 or len(text_of(node)) > MAX_INLINE


def name_statements(
    nodes: Iterable[Tensor],
    names: dict[int, str],
    printer: TorchPrinter,
    uses: Counter,
    counter: int,
    skip: set[int] = frozenset(),
    tuples: Mapping[int, tuple[Tensor, dict[int, Tensor]]] | None = None,
) -> tuple[list[tuple[str, str]], int]:
    """``t_<n> = ...`` for the nodes that need a name (see :func:`needs_name`), in order; ``names`` is updated
    so that later statements read them. ``tuples`` maps each node of a kernel that returns several (its op's
    ``tuple_code``) to that kernel's first value and the others by position: one statement names them all,
    where the first of them comes. Returns the statements and the last number used."""
    lines: list[tuple[str, str]] = []
    for node in nodes:
        key = id(node)
        if key in names or node.op is None:
            continue
        if tuples and key in tuples:
            primary, group = tuples[key]
            labels, counter = tuple_labels(primary, group, names, counter)
            lines.append((", ".join(labels), tuple_call(primary, printer)))
            continue
        if key in skip:
            continue
        if needs_name(node, uses, printer.doprint):
            counter += 1
            label = f"t_{counter}"
            lines.append((label, printer.doprint(node)))
            names[key] = label
    return lines, counter


def tuple_labels(
    primary: Tensor, group: Mapping[int, Tensor], names: dict[int, str], counter: int
) -> tuple[list[str], int]:
    """The targets of a tuple call (see :func:`tuple_call`): ``t_<n>`` for the primary and each companion at its
    position, ``_`` for the positions nothing reads. ``names`` is updated; returns them and the last number used."""
    labels = ["_"] * (1 + max(group))
    for position, part in ((0, primary), *group.items()):
        counter += 1
        labels[position] = names[id(part)] = f"t_{counter}"
    return labels, counter


def tuple_call(primary: Tensor, printer: TorchPrinter, **fields: str) -> str:
    """The one kernel call that computes ``primary`` and its companions (its op's ``tuple_code``; ``fields``
    override the template's)."""
    parts = [printer.doprint(part) for part in primary.inputs]
    text = primary.op.tuple_code.format(*parts, **{**describe(primary.op, primary.attrs, primary.inputs), **fields})
    printer.aten_kernels.update(re.findall(r"torch\.ops\.aten\.(\w+)", text))
    return text


def fit_statement(
    root: Tensor, label: str, indent: int, names: dict[int, str], printer: CodePrinter, counter: int
) -> tuple[list[tuple[str, str]], int]:
    """``t_<n> = ...`` statements for parts of ``root`` until ``<label> = <root>`` fits in a line at ``indent``
    (ruff format would otherwise wrap it): the longest unnamed operand first (a fused kernel's own operands,
    so that the fusion stays), each fitted the same way. ``names`` is updated; returns the statements and the
    last number used."""
    lines: list[tuple[str, str]] = []
    while id(root) not in names:
        printer.fused_parts.pop(id(root), None)
        if len(printer.doprint(root)) <= LINE_LENGTH - indent - len(label) - len(" = "):
            break
        parts = [p for p in printer.fused_parts.get(id(root), root.inputs) if p.op is not None and id(p) not in names]
        if not parts:
            break
        longest = max(parts, key=lambda p: len(printer.doprint(p)))
        inner, counter = fit_statement(longest, f"t_{counter + 1}", indent, names, printer, counter)
        counter += 1
        lines += [*inner, (f"t_{counter}", printer.doprint(longest))]
        names[id(longest)] = f"t_{counter}"
    return lines, counter
