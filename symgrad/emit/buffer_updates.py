"""What a traced model's forward does to its buffers, as emitted statements: running statistics updated by torch's
batch-norm kernel (folded into the forward's own kernel call where nothing else reads them), and other buffers
written with their new values, each computed from the old ones first.

>>> import symgrad as sg
>>> count = sg.symbols("count", ())
>>> in_place_spelling("count", count + 1, CodePrinter({id(count): "count"}, "count"))
'count.add_(1)'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.graph import uniform_constant
from ..core.tensor import Tensor
from ..torch.trace_effects import BatchNormUpdate
from .code_text import CodePrinter


def buffer_statements(
    updates: Sequence[Any], printer: CodePrinter, buffer_names: Mapping[str, str], counter: int
) -> tuple[list[str], int]:
    """What the forward does to the model's buffers, as statements: each new value computed first from the old
    ones (as the model computed it), then torch's batch_norm kernel for running statistics (with no weight and
    bias it only updates them, bit for bit as the model's own call does), then the other buffers written."""
    assigns = [u for u in updates if not isinstance(u, BatchNormUpdate)]
    by_kernel = {p for u in updates if isinstance(u, BatchNormUpdate) for p in (u.running_mean, u.running_var)}
    values, kernels, writes = [], [], []
    for update in updates:
        if isinstance(update, BatchNormUpdate):
            stats = [buffer_names[p] if p is not None else "None" for p in (update.running_mean, update.running_var)]
            kernels.append(
                f"torch.batch_norm({printer.doprint(update.input)}, None, None, {stats[0]}, {stats[1]}, True, "
                f"{update.momentum!r}, {update.eps!r}, False)"
            )
            continue
        name = buffer_names[update.buffer]
        read_elsewhere = update.buffer in by_kernel or any(
            name in other.value.leaves() for other in assigns if other is not update
        )
        in_place = None if read_elsewhere else in_place_spelling(name, update.value, printer)
        if in_place is not None:
            writes.append(in_place)
            continue
        counter += 1
        values.append(f"t_{counter} = {printer.doprint(update.value)}")
        writes.append(f"{name}.copy_(t_{counter})")
    return values + kernels + writes, counter


def folded_update(
    node: Tensor, updates: Sequence[Any], buffer_names: Mapping[str, str], output: Tensor
) -> BatchNormUpdate | None:
    """The running-statistics update that the forward's batch-norm kernel ``node`` can do itself (torch's
    native_batch_norm updates them in place from the same batch): one with the same input and eps, whose buffers
    nothing else reads."""
    if node.op.name not in ("batch_norm", "batch_norm_affine"):
        return None
    leaves = output.leaves()
    for update in updates:
        if not isinstance(update, BatchNormUpdate) or update.input is not node.inputs[0]:
            continue
        if update.eps != node.attrs["eps"]:
            continue
        names = {buffer_names[p] for p in (update.running_mean, update.running_var) if p is not None}
        others = [u for u in updates if u is not update and not isinstance(u, BatchNormUpdate)]
        if names & set(leaves) or any(names & set(u.value.leaves()) for u in others):
            continue
        return update
    return None


def running_fields(update: BatchNormUpdate, buffer_names: Mapping[str, str]) -> dict[str, str]:
    stats = [buffer_names[p] if p is not None else "None" for p in (update.running_mean, update.running_var)]
    return {"running": f"{stats[0]}, {stats[1]}, True", "momentum": repr(update.momentum)}


def in_place_spelling(name: str, value: Tensor, printer: CodePrinter) -> str | None:
    """``buffer.add_(c)`` or ``buffer.mul_(c)`` for ``buffer + c`` and ``buffer * c`` (torch's own spelling)."""
    if value.op is not None and value.op.name in ("add", "mul") and value.inputs[0].name == name:
        step = value.inputs[1]
        if step.op is None and not step.shape and uniform_constant(step) is not None:
            return f"{name}.{value.op.name}_({printer.doprint(step)})"
    return None
