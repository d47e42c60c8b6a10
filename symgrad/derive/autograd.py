"""torch.autograd.backward, mirrored: implicit grads, grad_tensors, accumulation, retain_graph.

Each gradient is derived entrywise (vᵀJ, see :mod:`symgrad.derive`) and
accumulated into ``.grad`` of the leaves that require grad, as torch does.

>>> import symgrad.ops
>>> from symgrad.core import tensor
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0], [1.0]], name="x")
>>> backward(w @ x)
>>> w.grad.sympy(), w.grad.tolist()
([[x_0_0, x_1_0]], [[1.0, 1.0]])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ..core.constructors import formula
from ..core.dims import is_concrete
from ..core.errors import AutogradError, SymbolicShapeError, UnsupportedError
from ..core.graph import topological
from ..core.registry import ENGINES
from ..core.tensor import Tensor, constant
from .entrywise import as_grad_tensor, backward_graphs, vjp_entries

_calls = itertools.count(1)

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


def _as_list(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _make_grads(outputs: list[Tensor], grads: list[Any]) -> list[Tensor]:
    """torch's ``_make_grads``: implicit ones for one-element outputs, shape checks otherwise."""
    made = []
    for position, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if out.requires_grad and out.numel() != 1:
                raise AutogradError("grad can be implicitly created only for scalar outputs")
            made.append(constant(1, shape=out.shape, dtype=out.dtype))
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        made.append(as_grad_tensor(g, out, position))
    return made


def _graph_nodes(outputs: Sequence[Tensor]) -> list[Tensor]:
    """The op nodes that backward runs through (those on a path to a leaf that requires grad)."""
    seen: dict[int, Tensor] = {}
    for out in outputs:
        for node in topological(out):
            if node.grad_fn is not None:
                seen.setdefault(id(node), node)
    return list(seen.values())


def _grad_leaves(outputs: Sequence[Tensor]) -> list[Tensor]:
    seen: dict[int, Tensor] = {}
    for out in outputs:
        for node in topological(out):
            if node.is_leaf and node.requires_grad:
                seen.setdefault(id(node), node)
    return list(seen.values())


def _call_text(outputs: Sequence[Tensor], grads: Sequence[Any], retain_graph: bool | None) -> str:
    names = ", ".join(out.name for out in outputs)
    target = f"[{names}]" if len(outputs) > 1 else names
    extra = ", grad_tensors" if any(g is not None for g in grads) else ""
    keep = ", retain_graph=True" if retain_graph else ""
    return f"torch.autograd.backward({target}{extra}{keep})"


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
    *,
    call: str | None = None,
) -> None:
    """Accumulate vᵀJ into ``.grad`` of every leaf that requires grad, as torch.autograd.backward does."""
    if create_graph:
        raise UnsupportedError("create_graph=True (higher-order gradients) is not supported yet")
    outputs = _as_list(tensors)
    grads = [None] * len(outputs) if grad_tensors is None else _as_list(grad_tensors)
    if len(grads) < len(outputs):
        raise AutogradError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    grads = grads[: len(outputs)]
    made = _make_grads(outputs, grads)
    for position, out in enumerate(outputs):
        if not out.requires_grad:
            raise AutogradError(f"element {position} of tensors does not require grad and does not have a grad_fn")
        if not is_concrete(out.shape):
            raise SymbolicShapeError("backward() needs concrete shapes; use sg.vjp for symbolic dimensions")
    described = f"backward call #{next(_calls)}, {call or _call_text(outputs, grads, retain_graph)}"

    nodes = _graph_nodes(outputs)
    for node in nodes:
        if node.grad_fn.saves_tensors and node.grad_fn.freed_by:
            raise AutogradError(
                f"{FREED_MESSAGE} [symgrad: the saved tensors of {node.grad_fn.name} (which computed "
                f"{node.name}) were freed by {node.grad_fn.freed_by}]"
            )

    leaves = _grad_leaves(outputs)
    if inputs is not None:
        wanted = _as_list(inputs)
        for t in wanted:
            if not t.is_leaf:
                raise UnsupportedError(f"inputs= must be leaf tensors; {t.name} is computed")
        leaves = [leaf for leaf in leaves if any(leaf is t for t in wanted)]

    for leaf, numeric in zip(leaves, backward_graphs(outputs, leaves, made), strict=True):
        entries = vjp_entries(outputs, leaf, made)
        contribution = formula(
            entries, sources=[*outputs, *made], name=f"{leaf.name}.grad", dtype=leaf.dtype, numeric=numeric
        )
        if leaf.grad is None:
            leaf.grad = contribution
        else:
            leaf.grad.add_(contribution)

    if not retain_graph:
        for node in nodes:
            node.grad_fn.freed_by = node.grad_fn.freed_by or described


ENGINES["backward"] = backward
