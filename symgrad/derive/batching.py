"""Batching a law: the same graph for a whole stack of inputs at once, as ``torch.func.vmap`` does.

A law such as the HVP ``A.T @ v + A @ v`` is linear in ``v``; stacking the basis vectors of ``v``
along new leading dims gives, in one graph, the law for every basis vector: the Jacobian (or the
Hessian) as a tensor law, without a loop and without SymPy. Each op says how it acts on operands
with extra leading dims in its row's ``batch`` column; nodes that do not depend on the stacked leaf
are kept as they are, so they are computed once.

>>> import symgrad as sg
>>> n = sg.dims("n")[0]
>>> A, v = sg.symbols("A", (n, n)), sg.symbols("v", (n,))
>>> batch([A @ v], v, sg.symbols("V", (n, n)), 1)[0].name
'V @ A.T'
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.dims import same_dim
from ..core.errors import TorchValueError, UnsupportedError
from ..core.graph import topological_all
from ..core.tensor import Tensor, apply
from ..ops.batched import lift, repeated, shift

DIM_ATTRS = ("dim", "dim0", "dim1", "dim2")


def batch(roots: Sequence[Tensor], leaf: Tensor, stacked: Tensor, nb: int) -> list[Tensor]:
    """``roots`` with ``leaf`` replaced by ``stacked`` (shape: ``nb`` batch dims, then ``leaf.shape``).

    Each result has the batch dims in front of the root's shape.
    """
    tail = stacked.shape[nb:]
    if len(tail) != len(leaf.shape) or not all(same_dim(a, b) for a, b in zip(tail, leaf.shape)):
        raise TorchValueError(f"the stacked tensor's shape {stacked.shape} does not end with {leaf.shape}")
    sizes = stacked.shape[:nb]
    rebuilt: dict[int, Tensor] = {id(leaf): stacked}
    for node in topological_all(list(roots)):
        if id(node) in rebuilt or node.op is None:
            continue
        flags = [id(part) in rebuilt for part in node.inputs]
        if not any(flags):
            continue
        inputs = [rebuilt.get(id(part), part) for part in node.inputs]
        rebuilt[id(node)] = batched_node(node, inputs, flags, nb, sizes)
    # a root that does not depend on the stacked leaf is the same for every batch entry
    return [rebuilt[id(root)] if id(root) in rebuilt else repeated(root, sizes) for root in roots]


def batched_node(node: Tensor, inputs: list[Tensor], flags: list[bool], nb: int, sizes: tuple) -> Tensor:
    """One node of the graph applied to batched inputs, by its op's ``batch`` rule."""
    op = node.op
    rule = op.batch
    if rule is None:
        raise UnsupportedError(
            f"{op.name} has no batching rule yet, so this Jacobian or Hessian has no tensor law; "
            "its vector products (sg.law with a grad_tensor, codegen --style hvp) work"
        )
    if callable(rule):
        return rule(inputs, flags, nb, **node.attrs)
    if rule == "pointwise" or rule == "trailing":
        return apply(op.name, *inputs, **node.attrs)
    if rule == "broadcast":
        out_ndim = len(node.shape)
        aligned = [lift(t, nb, out_ndim - (t.ndim - nb)) if f else t for t, f in zip(inputs, flags)]
        return apply(op.name, *aligned, **node.attrs)
    if rule == "dims":
        return _dims_rule(node, inputs, flags, nb, sizes)
    raise TorchValueError(f"op {op.name!r} has an unknown batching rule {rule!r}")


def _dims_rule(node: Tensor, inputs: list[Tensor], flags: list[bool], nb: int, sizes: tuple) -> Tensor:
    """An op acting along its ``dim`` attributes: the attributes shift, other inputs repeat along the batch."""
    inputs = [t if f or not isinstance(t, Tensor) else repeated(t, sizes) for t, f in zip(inputs, flags)]
    logical = node.inputs[0]
    if logical.ndim == 0:  # torch reduces a 0-d tensor over "dim 0": use a size-1 dim instead
        attrs = {
            k: (tuple(nb for _ in v) if isinstance(v, tuple) else nb) if k in DIM_ATTRS else v
            for k, v in node.attrs.items()
        }
        out = apply(node.op.name, inputs[0].unsqueeze(-1), *inputs[1:], **attrs)
        return out[..., 0] if out.ndim == nb + 1 else out
    attrs = {k: shift(v, nb) if k in DIM_ATTRS else v for k, v in node.attrs.items()}
    return apply(node.op.name, *inputs, **attrs)
