"""The emitted module's layout: the statements :func:`symgrad.emit.codegen.plan` decides (:class:`Plan`), and how
the module's entry points (``forward``, ``vjp``, ``forward_and_vjp``, the Function's methods, the drop-in) share one
``_forward`` and one ``_backward``: what each saves, recomputes and passes on.

>>> dims_for(Plan(["x"], [("m", "x.shape[0]")], [], [], [], "x.sum()", [], [], [], []), [("t_1", "x / m")])
[('m', 'x.shape[0]')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.printers import tuple_text
from ..core.tensor import Tensor


@dataclass
class Plan:
    """Statements of the emitted functions, as (name, expression) pairs."""

    inputs: list[str]
    forward_dims: list[tuple[str, str]]
    backward_dims: list[tuple[str, str]]
    checks: list[str]
    forward: list[tuple[str, str]]
    forward_result: str
    backward: list[tuple[str, str]]
    results: list[str]
    saved_inputs: list[str]
    saved_intermediates: list[str]
    jvp_dims: list[tuple[str, str]] = field(default_factory=list)
    jvp: list[tuple[str, str]] = field(default_factory=list)
    tangents: list[str] = field(default_factory=list)
    uses_math: bool = False
    helpers: list[str] = field(default_factory=list)  # the module's helper functions its code calls
    aten_kernels: list[str] = field(default_factory=list)
    stateless: dict[str, str] = field(default_factory=dict)  # forward statements that update buffers, without it
    gradients_text: list[tuple[str, str, str]] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)  # what the forward does to the model's buffers, in order
    sources: dict = field(default_factory=dict)  # where each symbolic size is read (``x.shape[0]``)


def step_grads(steps: list[tuple[str, int]], count: int) -> str:
    """The gradients ``forward_and_backward`` adds, out of the ``grads`` of ``forward_and_vjp``."""
    positions = [index for _, index in steps]
    if positions == list(range(count)):
        return "grads"
    return f"[grads[i] for i in {tuple_text([str(i) for i in positions])}]"


def step_arguments(steps: list[tuple[str, int]], module_args: list[str]) -> str:
    """The parameters ``forward_and_backward`` adds gradients to, out of the Function's ``arguments``."""
    positions = [module_args.index(path) for path, _ in steps]
    if not positions:
        return "()"
    start = positions[0]
    if positions == list(range(start, len(module_args))):
        return f"arguments[{start}:]"
    if positions == list(range(start, positions[-1] + 1)):
        return f"arguments[{start}:{positions[-1] + 1}]"
    return f"[arguments[i] for i in {tuple_text([str(i) for i in positions])}]"


def layout(p: Plan, needed: list[tuple[str, str]]) -> dict[str, Any]:
    """How the emitted entry points reach the forward values the backward reads, the forward being written once
    (``_forward``): a backward under ``create_graph=True`` and the ``vjp`` call ``_forward`` again, unless it
    updates buffers or draws noise; then ``_recompute`` computes them without updating (and from the saved noise),
    and a ``vjp`` that draws noise keeps its own statements (``vjp_forward``)."""
    recompute = [(label, body) for label, body in needed if not draws(body)]
    read = {part for label, _ in needed for part in label.split(", ") if part != "_"}
    targets = [name for name in ["output", *p.saved_intermediates] if name in read]
    targets = list(dict.fromkeys(targets))
    layout: dict[str, Any] = {
        "recompute": recompute,
        "recompute_targets": targets,
        "recompute_call": "",
        "recompute_function": None,
        "vjp_forward": [],
    }
    if not recompute:
        return layout
    if not p.updates and not p.stateless and not any(draws(body) for _, body in p.forward):
        intermediates = [t for t in p.saved_intermediates if t != "output"]
        layout["recompute_targets"] = ["output" if "output" in targets else "_", *intermediates]
        layout["recompute_call"] = f"_forward({', '.join(p.inputs)})"
        return layout
    text = " ".join(body for _, body in recompute)
    produced = {part for label, _ in recompute for part in label.split(", ")}
    noise = [name for name in p.saved_intermediates if name not in produced and re.search(rf"\b{name}\b", text)]
    arguments = [name for name in p.inputs if re.search(rf"\b{name}\b", text)] + noise
    dims = dims_for(p, recompute)
    arguments += [where.split(".")[0] for _, where in dims if where.split(".")[0] not in arguments]
    layout["recompute_targets"] = [name for name in targets if name in produced]
    layout["recompute_call"] = f"_recompute({', '.join(arguments)})"
    layout["recompute_function"] = {"arguments": arguments, "dims": dims, "noise": noise}
    if any(draws(body) for _, body in needed):
        layout["vjp_forward"] = needed
    return layout


def read(names: list[str], statements: list[tuple[str, str]]) -> list[str]:
    """The names the statements read, in the order given."""
    text = " ".join(body for _, body in statements)
    return [name for name in names if re.search(rf"\b{name}\b", text)]


def function_saved_inputs(p: Plan, needed: list[tuple[str, str]]) -> list[str]:
    """The inputs the Function saves: those its backward reads, those from which a backward under
    ``create_graph=True`` recomputes the forward values it needs (``needed``, so that autograd can
    differentiate it), and those its jvp reads (forward mode reads the same saved tensors)."""
    text = " ".join(body for _, body in [*needed, *p.backward])  # a gradient cast to its input's dtype reads it
    text += " " + " ".join([body for _, body in p.jvp] + [where for _, where in p.jvp_dims])
    if p.jvp:  # a missing tangent becomes zeros_like(<input>)
        text += " " + " ".join(p.tangents)
    return [name for name in p.inputs if name in p.saved_inputs or re.search(rf"\b{name}\b", text)]


def unpacked(saved: list[str], statements: list[tuple[str, str]]) -> list[str]:
    """``ctx.saved_tensors`` unpacked for one method: the names its statements read, ``_`` for the rest
    (empty when it reads none)."""
    text = " ".join(body for _, body in statements)
    names = [name if re.search(rf"\b{name}\b", text) else "_" for name in saved]
    return names if any(name != "_" for name in names) else []


def unpack_targets(inputs: list[str], saved_inputs: list[str], dims: list[tuple[str, str]]) -> list[str]:
    """``_, X, _ = inputs``: the inputs setup_context saves or reads sizes from, the rest as ``_``."""
    wanted = set(saved_inputs) | {where.split(".")[0] for _, where in dims}
    if not wanted:
        return []
    return [name if name in wanted else "_" for name in inputs]


def dims_for(p: Plan, statements: list[tuple[str, str]]) -> list[tuple[str, str]]:
    known = dict(p.forward_dims + p.backward_dims)
    text = " ".join(body for _, body in statements)
    return [(d, where) for d, where in sorted(known.items()) if re.search(rf"\b{d}\b", text)]


def is_draw(node: Tensor) -> bool:
    return node.op is not None and node.op.has("random")


# how a statement that draws random numbers reads (a dropout's noise, the draws of ops.draws.KINDS)
DRAWS = frozenset({".bernoulli_(", ".normal_(", ".uniform_(", ".random_(", ".exponential_(", ".geometric_(",
                   ".cauchy_(", ".log_normal_(", "torch.bernoulli("})  # fmt: skip


def draws(body: str) -> bool:
    """Whether a statement draws random numbers (a dropout's noise)."""
    return any(word in body for word in DRAWS)


def needed_forward(p: Plan) -> list[tuple[str, str]]:
    """The forward statements the backward statements read (directly or through each other)."""
    text = " ".join(body for _, body in p.backward)
    lines = [(label, p.stateless.get(label, body)) for label, body in p.forward]  # no buffer updated again
    lines += [("output", p.forward_result)] if "output" in p.saved_intermediates else []
    kept: list[tuple[str, str]] = []
    for label, body in reversed(lines):
        if any(re.search(rf"\b{part}\b", text) for part in label.split(", ")):  # t_2, t_3 = ...: two results
            kept.append((label, body))
            text += " " + body
    return list(reversed(kept))


def guarded_backward(
    lines: list[tuple[str, str]], results: list[str], wanted: dict[str, int]
) -> list[tuple[str, list[tuple[str, str]]]]:
    """The backward's statements in blocks, each with the condition it runs under: a statement that serves only
    gradients of ``wanted`` (an input's gradient, by its position in the backward's ``wanted`` flags) runs where one
    of them is wanted, as autograd computes an input's gradient only where the input requires grad.

    >>> guarded_backward([("t_1", "g @ w"), ("grad_w", "t_1.T"), ("grad_x", "t_1 @ w")], ["grad_w", "grad_x"],
    ...                  {"grad_x": 0})
    [('', [('t_1', 'g @ w'), ('grad_w', 't_1.T')]), ('wanted[0]', [('grad_x', 't_1 @ w')])]
    """
    serves: dict[str, set[str]] = {}  # each name: the results whose statements read it
    conditions = []
    for label, body in reversed(lines):
        parts = [part for part in label.split(", ") if part != "_"]
        mine = {part for part in parts if part in results}.union(*(serves.get(part, set()) for part in parts))
        for name in set(re.findall(r"\b[A-Za-z_]\w*\b", body)):
            serves.setdefault(name, set()).update(mine)
        optional = bool(mine) and all(result in wanted for result in mine)
        conditions.append(" or ".join(f"wanted[{wanted[r]}]" for r in sorted(mine, key=wanted.get)) if optional else "")
    blocks: list[tuple[str, list[tuple[str, str]]]] = []
    for (label, body), condition in zip(lines, reversed(conditions)):
        if blocks and blocks[-1][0] == condition:
            blocks[-1][1].append((label, body))
        else:
            blocks.append((condition, [(label, body)]))
    return blocks


def gradients_by_input(positions: list[int | None]) -> str:
    """What the Function's backward returns: for each input, its gradient out of ``grads`` (by its position there)
    or None, runs of consecutive gradients as one slice.

    >>> gradients_by_input([6, None, 0, 1, 2, 3, 4, 5])
    'grads[6], None, *grads[0:6]'
    >>> gradients_by_input([0, 1])
    'grads'
    """
    if positions == list(range(len(positions))):
        return "grads"
    parts: list[str] = []
    run: list[int] = []
    for position in [*positions, None]:
        if position is not None and run and position == run[-1] + 1:
            run.append(position)
            continue
        if len(run) > 1:
            parts.append(f"*grads[{run[0]}:{run[-1] + 1}]")
        elif run:
            parts.append(f"grads[{run[0]}]")
        run = [position] if position is not None else []
        if position is None:
            parts.append("None")
    return ", ".join(parts[:-1])
