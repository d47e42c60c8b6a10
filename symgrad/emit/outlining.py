"""Repeated blocks of emitted statements, written once: a run of statements that repeats with other names (a
transformer's layers, the blocks of a ResNet stage) becomes one function, called once per repeat, so that the
emitted module grows with a model's depth by a call per layer, not by a copy of the layer.

>>> lines = [("t_1", "torch.tanh(x @ w_0) * 2"), ("t_2", "t_1 + b_0"),
...          ("t_3", "torch.tanh(t_2 @ w_1) * 2"), ("t_4", "t_3 + b_1"),
...          ("t_5", "torch.tanh(t_4 @ w_2) * 2"), ("t_6", "t_5 + b_2"), ("out", "t_6.sum()")]
>>> names = {"x", "w_0", "w_1", "w_2", "b_0", "b_1", "b_2"}
>>> blocks, calls = outline(lines, names, outside={"out"}, prefix="_block", min_saving=2, min_period=2)
>>> first, docstring, *body = blocks[0].splitlines()  # the docstring says what it repeats
>>> for line in [first, *body]:
...     print(line)
def _block_1(x, w_0, b_0):
    t_1 = torch.tanh(x @ w_0) * 2
    t_2 = t_1 + b_0
    return t_2
>>> for label, body in calls:
...     print(label, "=", body)
t_2 = _block_1(x, w_0, b_0)
t_4 = _block_1(t_2, w_1, b_1)
t_6 = _block_1(t_4, w_2, b_2)
out = t_6.sum()
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from .layout import Plan, draws

_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class _Shape:
    """A statement with its variables taken out: its text with a hole for each, and the variables in order."""

    template: tuple[str, ...]
    labels: tuple[str, ...]  # the names it defines
    reads: tuple[str, ...]  # the variables its body reads, in order (repeats included)


def _shape(label: str, body: str, variables: Collection[str]) -> _Shape:
    """Split a statement into its shape and its variables: a name is a variable if it is one of ``variables`` or
    a statement's target, and it is neither an attribute (``x.shape``) nor a keyword argument (``dim=1``)."""
    template: list[str] = []
    reads: list[str] = []
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(body).readline) if t.string]
    for k, token in enumerate(tokens):
        text = token.string
        after_dot = k > 0 and tokens[k - 1].string == "."
        keyword = k + 1 < len(tokens) and tokens[k + 1].string == "="
        if token.type == tokenize.NAME and text in variables and not after_dot and not keyword:
            template.append("\0")
            reads.append(text)
        else:
            template.append(text)
    labels = tuple(label.split(", "))
    shape_of_label = tuple("\0" if part != "_" else "_" for part in labels)
    return _Shape((*shape_of_label, "=", *template), labels, tuple(reads))


def _renaming(shapes: Sequence[_Shape], start: int, other: int, length: int) -> dict[str, str] | None:
    """The one-to-one renaming that makes the window at ``other`` the window at ``start`` (each ``length``
    statements long), or None when there is none."""
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for a, b in zip(shapes[start : start + length], shapes[other : other + length]):
        if a.template != b.template:
            return None
        for mine, theirs in zip((*a.labels, *a.reads), (*b.labels, *b.reads)):
            if forward.setdefault(theirs, mine) != mine or backward.setdefault(mine, theirs) != theirs:
                return None
    return forward


def _candidates(shapes: Sequence[_Shape], min_period: int) -> list[tuple[int, int, int, int]]:
    """(saving, start, period, repeats) of the runs of windows whose statements have the same templates, best first."""
    ids: dict[tuple[str, ...], int] = {}
    signature = [ids.setdefault(s.template, len(ids)) for s in shapes]
    n = len(signature)
    found = []
    for period in range(min_period, n // 2 + 1):
        run = 0
        for i in range(n - period - 1, -2, -1):  # from the end, so that each run is met at its start
            if i >= 0 and signature[i] == signature[i + period]:
                run += 1
                continue
            if run >= period:
                start, repeats = i + 1, run // period + 1
                found.append(((repeats - 1) * period, start, period, repeats))
            run = 0
    found.sort(key=lambda c: (-c[0], c[1], c[2]))
    return found


def outline(
    lines: Sequence[tuple[str, str]],
    variables: Collection[str],
    outside: Collection[str],
    prefix: str,
    min_saving: int = 12,
    min_period: int = 4,
) -> tuple[list[str], list[tuple[str, str]]]:
    """The functions (their source) that repeated windows of ``lines`` become, and ``lines`` with each window a
    call of its function. ``variables`` are the names a statement may read that are not statements' targets
    (inputs, sizes); ``outside`` the names read after ``lines`` (what a function returns). A window becomes a
    function where that saves at least ``min_saving`` statements."""
    lines = list(lines)
    blocks: list[str] = []
    while True:
        variables = set(variables) | {part for label, _ in lines for part in label.split(", ") if part != "_"}
        found = _outlined_once(lines, variables, set(outside), f"{prefix}_{len(blocks) + 1}", min_saving, min_period)
        if found is None:
            return blocks, lines
        block, lines = found
        blocks.append(block)


def _outlined_once(
    lines: list[tuple[str, str]], variables: set[str], outside: set[str], name: str, min_saving: int, min_period: int
) -> tuple[str, list[tuple[str, str]]] | None:
    shapes = [_shape(label, body, variables) for label, body in lines]
    for saving, start, period, repeats in _candidates(shapes, min_period):
        if saving < min_saving:
            return None
        renamings = [{}]
        for k in range(1, repeats):
            renaming = _renaming(shapes, start, start + k * period, period)
            if renaming is None:
                break
            renamings.append(renaming)
        if len(renamings) < 2 or (len(renamings) - 1) * period < min_saving:
            continue
        if any(draws(body) for _, body in lines[start : start + len(renamings) * period]):
            continue  # the layout finds a draw by its text: it stays where it is
        return _written(lines, shapes, start, period, renamings, outside, name)
    return None


def _written(
    lines: list[tuple[str, str]],
    shapes: list[_Shape],
    start: int,
    period: int,
    renamings: list[dict[str, str]],
    outside: set[str],
    name: str,
) -> tuple[str, list[tuple[str, str]]]:
    """The function of the window at ``start`` and the lines with each of its repeats a call."""
    window = shapes[start : start + period]
    defined = [part for s in window for part in s.labels if part != "_"]
    arguments: list[str] = []
    for s in window:
        for read in s.reads:
            if read not in defined and read not in arguments:
                arguments.append(read)
    end = start + len(renamings) * period
    later = " ".join(body for _, body in lines[end:]) + " " + " ".join(outside)
    later_names = set(_NAME.findall(later))
    backs = [{mine: theirs for theirs, mine in renaming.items()} for renaming in renamings]  # the first's: {}
    returned: list[str] = []
    for k, back in enumerate(backs):
        after = set(later_names)
        for _, body in lines[start + (k + 1) * period : end]:
            after.update(_NAME.findall(body))
        for mine in defined:
            if back.get(mine, mine) in after and mine not in returned:
                returned.append(mine)
    returned.sort(key=defined.index)
    body = [f"    {label} = {text}" for label, text in lines[start : start + period]]
    result = ", ".join(returned) if returned else "None"
    note = f'    """Statements repeated {len(renamings)} times (once per layer), with the first repeat\'s names."""'
    source = "\n".join([f"def {name}({', '.join(arguments)}):", note, *body, f"    return {result}"])
    calls = []
    for back in backs:
        targets = ", ".join(back.get(n, n) for n in returned) or "_"
        calls.append((targets, f"{name}({', '.join(back.get(a, a) for a in arguments)})"))
    return source, [*lines[:start], *calls, *lines[end:]]


def outlined(p: Plan) -> tuple[Plan, list[str]]:
    """``p`` with the repeated blocks of its forward, backward and forward-mode statements written once (see
    :func:`outline`), and the functions they became: ``_forward_block_1``, ``_backward_block_1``, ..."""
    variables = {*p.inputs, *p.saved_intermediates, *p.results, "grad_output", "output_tangent", *p.tangents}
    variables |= {f"tangent_{x}" for x in p.tangents}
    variables |= {label for label, _ in [*p.forward_dims, *p.backward_dims, *p.jvp_dims]}
    forward_reads = " ".join([p.forward_result, *p.updates, *p.saved_intermediates])
    blocks: list[str] = []
    forward = p.forward
    if not p.stateless:  # a forward that updates buffers is left whole: the layout finds those statements by label
        made, forward = outline(p.forward, variables, set(_NAME.findall(forward_reads)), "_forward_block")
        blocks += made
    made, backward = outline(p.backward, variables, set(p.results), "_backward_block")
    blocks += made
    made, jvp = outline(p.jvp, variables, {"output_tangent"}, "_jvp_block")
    blocks += made
    return replace(p, forward=forward, backward=backward, jvp=jvp), blocks
