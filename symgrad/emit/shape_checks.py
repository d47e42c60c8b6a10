"""Where an emitted module reads its symbolic sizes and how it rejects inputs of the wrong shape: the ``if``
statements of ``_check_shapes``, their messages (folded as ruff lays out long strings), and the ``k = W.shape[0]``
lines the functions start with.

>>> import symgrad as sg
>>> (n,) = sg.dims("n")
>>> checks, sources = shape_checks([sg.symbols("x", (n, 3))])
>>> sources
{n: 'x.shape[0]'}
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import sympy

from ..core.dims import format_shape
from ..core.errors import SymgradError
from ..core.printers import size_source, tuple_text
from ..core.tensor import Tensor
from .code_text import docstring_safe


def shape_checks(inputs: Sequence[Tensor], guards: Sequence = ()) -> tuple[list[str], dict]:
    """``if`` statements that reject inputs of the wrong shape, and where each symbolic size is read; ``guards``
    (a traced graph's decisions on sizes, see :class:`symgrad.torch.sizes.Guard`) are checked too."""
    checks, sources, compound = [], {}, []
    for t in inputs:
        expected = format_shape(t.shape)
        checks.append(
            (f"{t.name}.dim() != {len(t.shape)}", f"{t.name} has shape {{tuple({t.name}.shape)}}, expected {expected}")
        )
        for axis, d in enumerate(t.shape):
            here = f"{t.name}.shape[{axis}]"
            if isinstance(d, int):
                checks.append((f"{here} != {d}", f"{t.name} has shape {{tuple({t.name}.shape)}}, expected {expected}"))
            elif not d.is_Symbol:  # a size such as 2*n: checked once every name in it has a source, never bound
                compound.append((t, here, d, expected))
            elif d in sources:
                other = sources[d].split(".")[0]
                checks.append(
                    (
                        f"{here} != {sources[d]}",
                        f"{t.name} has shape {{tuple({t.name}.shape)}} and {other} has shape "
                        f"{{tuple({other}.shape)}}: their sizes {d} differ",
                    )
                )
            else:
                sources[d] = here
    for t, here, d, expected in compound:
        unread = sorted(str(name) for name in d.free_symbols if name not in sources)
        if unread:
            raise SymgradError(
                f"the size {d} of {t.name} reads {unread[0]}, which no input has as a size of its own; "
                f"give an input of size {unread[0]}"
            )
        source = size_source(d.xreplace({name: sympy.Symbol(sources[name]) for name in d.free_symbols}))
        checks.append((f"{here} != {source}", f"{t.name} has shape {{tuple({t.name}.shape)}}, expected {expected}"))
    checks += [_guard_check(guard, inputs, sources) for guard in guards]
    opening = "        raise ValueError("
    lines = [f"if {cond}:\n{opening}{message_literal(msg, opening)})" for cond, msg in checks]
    return lines, sources


def message_literal(text: str, opening: str, width: int = 120) -> str:
    """An f-string body as the argument of ``opening`` (``"        raise ValueError("``): one literal, or, when
    the line would pass ``width``, literals split at spaces (never inside a ``{...}``), one per line, as ruff
    format lays them out."""
    if len(opening) + len(_literal(text)) + 1 <= width:
        return _literal(text)
    indent = len(opening) - len(opening.lstrip()) + 4
    pieces, start, depth, position, limit = [], 0, 0, 0, width - indent - 4
    last_space = None
    while position < len(text):
        pair = text[position : position + 2]
        if depth == 0 and pair in ("{{", "}}"):
            position += 2
            continue
        char = text[position]
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == " " and depth == 0:
            last_space = position
        if position - start >= limit and last_space is not None and last_space > start:
            pieces.append(text[start : last_space + 1])
            start, last_space = last_space + 1, None
        position += 1
    pieces.append(text[start:])
    inner = "\n".join(" " * indent + _literal(piece) for piece in pieces if piece)
    return f"\n{inner}\n{' ' * (indent - 4)}"


def _literal(text: str) -> str:
    """``text`` (an f-string body) as an f-string, or as a plain string when it has no ``{...}`` to fill."""
    if "{" in text.replace("{{", "").replace("}}", ""):
        return f'f"{text}"'
    return '"' + text.replace("{{", "{").replace("}}", "}") + '"'


def dims_in(t: Tensor) -> set:
    """The dimension symbols in ``t``'s shape."""
    return {s for d in t.shape if not isinstance(d, int) for s in d.free_symbols}


def dim_lines(sources: dict, statements: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``k = W.shape[0]`` for the symbolic sizes the statements use."""
    text = " ".join(body for _, body in statements)
    return [
        (str(d), where)
        for d, where in sorted(sources.items(), key=lambda item: str(item[0]))
        if re.search(rf"\b{d}\b", text)
    ]


@dataclass
class ShapeTable:
    """An emitted module's shape check as one comparison: ``binds`` read each symbolic size where it first appears
    (``m = x.shape[0] if x.dim() > 0 else -1``; -1, no size, where the rank is wrong), ``actual`` and ``expected``
    are the two tuples compared (``x.shape`` against ``(m, 6)``), ``rows`` the table ``_shape_error`` reads to
    name the first input that differs, and ``guards`` the ``if`` statements of the traced code's decisions."""

    binds: list[tuple[str, str]]
    actual: list[str]
    expected: list[str]
    rows: list[str]
    guards: list[str]


def shape_table(inputs: Sequence[Tensor], guards: Sequence = ()) -> ShapeTable:
    """The compact form of :func:`shape_checks` (see :class:`ShapeTable`).

    >>> import symgrad as sg
    >>> (n,) = sg.dims("n")
    >>> table = shape_table([sg.symbols("x", (n, 3)), sg.symbols("w", (3,))])
    >>> table.binds, table.expected, table.rows
    ([('n', 'x.shape[0] if x.dim() > 0 else -1')], ['(n, 3)', '(3,)'], ["('x', 'n×3', ('n', 3))", "('w', '3', (3,))"])
    """
    binds, actual, expected, rows, known = [], [], [], [], set()
    for t in inputs:
        for axis, d in enumerate(t.shape):
            if not isinstance(d, int) and d.is_Symbol and d not in known:
                known.add(d)
                binds.append((str(d), f"{t.name}.shape[{axis}] if {t.name}.dim() > {axis} else -1"))
    for t in inputs:
        unread = sorted(str(s) for d in t.shape if not isinstance(d, int) for s in d.free_symbols if s not in known)
        if unread:
            raise SymgradError(
                f"the size {format_shape(t.shape)} of {t.name} reads {unread[0]}, which no input has as a size of its "
                f"own; give an input of size {unread[0]}"
            )
        sizes = [str(d) if isinstance(d, int) else size_source(d) for d in t.shape]
        spec = [str(d) if isinstance(d, int) else repr(str(d)) for d in t.shape]
        actual.append(f"{t.name}.shape")
        expected.append(tuple_text(sizes))
        rows.append(f"({t.name!r}, {format_shape(t.shape)!r}, {tuple_text(spec)})")
    opening = "        raise ValueError("
    guard_lines = []
    for guard in guards:  # the sizes are bound by their own names
        condition, message = _guard_check(guard, inputs, {d: str(d) for d in known})
        guard_lines.append(f"if {condition}:\n{opening}{message_literal(message, opening)})")
    return ShapeTable(binds, actual, expected, rows, guard_lines)


def _guard_check(guard, inputs: Sequence[Tensor], sources: dict) -> tuple[str, str]:
    """The condition under which a traced decision on sizes fails, with each size read from ``sources``
    (``x.shape[0]``, or a name the function binds), and its message naming the user's line."""
    relation = guard.relation
    unread = sorted(str(name) for name in relation.free_symbols if name not in sources)
    if unread:
        raise SymgradError(f"the traced code decides on the size {unread[0]}, which no input has")
    here = {name: sympy.Symbol(sources[name]) for name in relation.free_symbols}
    left, right = (size_source(side.xreplace(here)) for side in (relation.lhs, relation.rhs))
    shapes = ", ".join(f"{{tuple({t.name}.shape)}}" for t in inputs if relation.free_symbols & set(dims_in(t)))
    path, _, line = guard.site.partition(", line ")
    site = f"{os.path.basename(path)}, line {line}" if line else guard.site  # no folders of this machine
    why = docstring_safe(site).replace("{", "{{").replace("}", "}}").replace('"', "'")
    message = f"shapes {shapes}: the traced code holds only where {relation} (it decides so at {why})"
    return f"not {left} {relation.rel_op} {right}", message
