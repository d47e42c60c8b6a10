"""Reverse mode over the tensor graph: gradient laws that hold for every size.

Each op's row carries a VJP rule written with symgrad ops, so the gradient
is itself a tensor expression with a (possibly symbolic) shape:

>>> from symgrad.dims import dims
>>> from symgrad.tensor import symbols
>>> k, n, m = dims("k n m")
>>> W, X, V = symbols("W", (k, n)), symbols("X", (n, m)), symbols("V", (k, m))
>>> law(W @ X, [W], [V])[0].name
'V @ X.T'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .dims import format_shape, is_concrete, same_dim
from .errors import SymgradError
from .simplify import simplify
from .tensor import Tensor, _topological, constant, wrap


def _implicit_grad(out: Tensor) -> Tensor:
    if not all(isinstance(d, int) and d == 1 for d in out.shape):
        raise SymgradError("grad can be implicitly created only for scalar outputs")
    return constant(1, shape=out.shape, dtype=out.dtype)


def _needed(outputs: Sequence[Tensor], wrt: Sequence[Tensor]) -> set[int]:
    """Nodes through which some ``wrt`` leaf influences an output."""
    targets = {id(x) for x in wrt}
    needed: set[int] = set()
    for out in outputs:
        for node in _topological(out):
            if id(node) in targets or any(id(i) in needed for i in node.inputs):
                needed.add(id(node))
    return needed


def _zeros_like(x: Tensor) -> Tensor:
    from .tensor import apply

    return apply("full", shape=x.shape, value=0)


def law(
    outputs: Tensor | Sequence[Tensor], wrt: Tensor | Sequence[Tensor], grads: Any = None, *, simplified: bool = True
) -> tuple[Tensor, ...]:
    """The gradient of ``outputs`` contracted with ``grads`` (vᵀJ), one tensor expression per ``wrt``.

    Works for symbolic dimensions; ``grads`` may be symbolic tensors such as ``V``.
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    targets = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    if grads is None:
        vs = [_implicit_grad(o) for o in outs]
    else:
        vs = [grads] if isinstance(grads, Tensor) or not isinstance(grads, (list, tuple)) else list(grads)
        vs = [_implicit_grad(o) if v is None else wrap(v) for o, v in zip(outs, vs)]
    if len(vs) != len(outs):
        raise SymgradError(f"got {len(outs)} outputs and {len(vs)} grad_tensors")
    for position, (o, v) in enumerate(zip(outs, vs)):
        if len(v.shape) != len(o.shape) or not all(same_dim(a, b) for a, b in zip(v.shape, o.shape)):
            raise SymgradError(
                f"grad_tensor {position} has shape {format_shape(v.shape)} but output {position} has shape "
                f"{format_shape(o.shape)}"
            )
    needed = _needed(outs, targets)
    cotangents: dict[int, Tensor] = {}
    for o, v in zip(outs, vs):
        cotangents[id(o)] = cotangents[id(o)] + v if id(o) in cotangents else v
    order: list[Tensor] = []
    seen: set[int] = set()
    for o in outs:
        for node in _topological(o):
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
    for node in reversed(order):
        g = cotangents.get(id(node))
        if g is None or node.op is None or id(node) not in needed:
            continue
        if node.op.vjp is None:
            raise SymgradError(f"no gradient rule for {node.op.name} yet")
        pieces = node.op.vjp(g, node, *node.inputs, **node.attrs)
        for part, piece in zip(node.inputs, pieces):
            if piece is None or id(part) not in needed:
                continue
            cotangents[id(part)] = cotangents[id(part)] + piece if id(part) in cotangents else piece
    results = tuple(cotangents[id(x)] if id(x) in cotangents else _zeros_like(x) for x in targets)
    if simplified:
        results = simplify(list(results), context=outs)
    return tuple(results)


def entrywise_possible(*tensors: Tensor) -> bool:
    return all(is_concrete(t.shape) for t in tensors)
