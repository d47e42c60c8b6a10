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
from ..core.errors import AutogradError, TorchTypeError, UnsupportedError
from ..core.graph import topological, topological_all
from ..core.registry import ENGINES
from ..core.tensor import Tensor, constant
from .entrywise import as_grad_tensor, backward_graphs, gradient_formula
from .reverse import law

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
            raise TorchTypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
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


def _check_outputs(outputs: list[Tensor]) -> None:
    for position, out in enumerate(outputs):
        if not out.requires_grad:
            raise AutogradError(f"element {position} of tensors does not require grad and does not have a grad_fn")


def _check_not_freed(nodes: list[Tensor]) -> None:
    for node in nodes:
        if node.grad_fn.saves_tensors and node.grad_fn.freed_by:
            raise AutogradError(
                f"{FREED_MESSAGE} [symgrad: the saved tensors of {node.grad_fn.name} (which computed "
                f"{node.name}) were freed by {node.grad_fn.freed_by}]"
            )


def _gradients(outputs: list[Tensor], targets: list[Tensor], made: list[Tensor], create_graph: bool) -> list[Tensor]:
    """vᵀJ for each target. With ``create_graph``, the gradient is a graph of ops (the VJP rules applied
    to the forward graph), which can itself be differentiated; otherwise it is a formula tensor whose
    entries SymPy derived and whose numbers come from that graph."""
    graphs = backward_graphs(outputs, targets, made)
    if create_graph:
        missing = [t.name for t, g in zip(targets, graphs, strict=True) if g is None]
        if missing:
            raise UnsupportedError(f"create_graph=True needs a VJP rule for every op on the way to {missing[0]}")
        return graphs
    if not all(is_concrete(t.shape) for t in [*outputs, *targets]):  # no entries: the laws, as sg.vjp gives them
        missing = [t.name for t, g in zip(targets, graphs, strict=True) if g is None]
        if missing:
            raise UnsupportedError(
                f"a gradient at symbolic sizes needs a VJP rule for every op on the way to {missing[0]}"
            )
        return [_without_graph(g) for g in law(outputs, targets, made)]
    for output in outputs:
        output.check_budget()  # refused now, not when the formulas are first shown
    out = []
    for target, numeric in zip(targets, graphs, strict=True):
        if target.kind == "symbol":
            out.append(gradient_formula(outputs, target, made, numeric))
        elif numeric is not None:  # a computed tensor: its gradient's formulas are the graph's entries
            out.append(
                formula(
                    numeric.entries(),
                    sources=[*outputs, *made],
                    name=f"{target.name}.grad",
                    dtype=target.dtype,
                    numeric=numeric,
                )
            )
        else:
            raise UnsupportedError(f"no VJP rule leads to {target.name}; differentiate with respect to a leaf")
    return out


def _without_graph(t: Tensor) -> Tensor:
    """The law ``t`` as ``.grad`` holds it without create_graph: no grad_fn, as torch's ``.grad`` does not require
    grad (its inputs still may: the law reads W)."""
    if t.op is None or not t.requires_grad:
        return t
    return Tensor(shape=t.shape, op=t.op, inputs=t.inputs, attrs=t.attrs, dtype=t.dtype)


def _free(nodes: list[Tensor], described: str) -> None:
    for node in nodes:
        node.grad_fn.freed_by = node.grad_fn.freed_by or described


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
    *,
    call: str | None = None,
) -> None:
    """Accumulate vᵀJ into ``.grad`` of every leaf that requires grad, as torch.autograd.backward does.

    With ``create_graph=True`` the gradient is itself a graph that requires grad (``.grad`` then
    accumulates out of place, as a graph), and ``retain_graph`` defaults to True, as in torch.
    """
    if retain_graph is None:
        retain_graph = create_graph
    outputs = _as_list(tensors)
    grads = [None] * len(outputs) if grad_tensors is None else _as_list(grad_tensors)
    if len(grads) < len(outputs):
        raise AutogradError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    grads = grads[: len(outputs)]
    made = _make_grads(outputs, grads)
    _check_outputs(outputs)
    described = f"backward call #{next(_calls)}, {call or _call_text(outputs, grads, retain_graph)}"
    nodes = _graph_nodes(outputs)
    _check_not_freed(nodes)
    leaves = _grad_leaves(outputs)
    if inputs is not None:
        wanted = _as_list(inputs)
        for t in wanted:
            if not t.is_leaf:
                raise UnsupportedError(f"inputs= must be leaf tensors; {t.name} is computed")
        leaves = [leaf for leaf in leaves if any(leaf is t for t in wanted)]
    for leaf, contribution in zip(leaves, _gradients(outputs, leaves, made, create_graph), strict=True):
        if leaf.grad is None:
            leaf.grad = contribution
        elif create_graph or leaf.grad.requires_grad or not is_concrete(leaf.shape):
            leaf.grad = leaf.grad + contribution  # out of place: the old gradient's graph (or law) stays intact
        else:
            leaf.grad.add_(contribution)
    if not retain_graph:
        _free(nodes, described)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs`` (vᵀJ), as torch.autograd.grad returns them.

    >>> import symgrad as sg
    >>> x = sg.tensor([1.0, 2.0], requires_grad=True, name="x")
    >>> (g,) = grad((x * x).sum(), x, create_graph=True)
    >>> g.tolist(), grad(g.sum(), x)[0].tolist()
    ([2.0, 4.0], [2.0, 2.0])
    """
    if is_grads_batched:
        raise UnsupportedError("is_grads_batched=True is not supported; call grad once per grad_output")
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    outs = _as_list(outputs)
    targets = _as_list(inputs)
    grads = [None] * len(outs) if grad_outputs is None else _as_list(grad_outputs)
    if len(grads) != len(outs):
        raise AutogradError(f"grad requires one grad_output per output: got {len(outs)} outputs and {len(grads)}")
    made = _make_grads(outs, grads)
    _check_outputs(outs)
    for target in targets:
        if not isinstance(target, Tensor):
            raise TorchTypeError(f"inputs must be Tensors, not {type(target).__name__}")
        if not target.requires_grad:
            raise AutogradError("One of the differentiated Tensors does not require grad")
    nodes = _graph_nodes(outs)
    _check_not_freed(nodes)
    reached = {id(node) for node in topological_all(outs)}
    used = [t for t in targets if id(t) in reached]
    unused = [position for position, t in enumerate(targets) if id(t) not in reached]
    if unused and not allow_unused:
        raise AutogradError(
            f"The differentiated Tensor at index {unused[0]} appears to not have been used in the graph. "
            "Set allow_unused=True if this is the desired behavior."
        )
    found = dict(zip(map(id, used), _gradients(outs, used, made, create_graph), strict=True))
    results: list[Tensor | None] = []
    for target in targets:
        g = found.get(id(target))
        if g is None and materialize_grads:
            g = constant(0, shape=target.shape, dtype=target.dtype)
        results.append(g)
    if not retain_graph:
        _free(nodes, f"backward call #{next(_calls)}, torch.autograd.grad(...)")
    return tuple(results)


ENGINES["backward"] = backward
