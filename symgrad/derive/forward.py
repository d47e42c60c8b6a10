"""Forward mode: Jacobian-vector products J·t, pushed through the graph op by op.

An op's row may carry a JVP rule (``jvp(tangents, out, *inputs, **attrs)``, one tangent or None per
input); elementwise functions get theirs from SymPy. An op without one gets its JVP from its VJP rule,
which is linear in the cotangent g: the JVP is the gradient, with respect to g, of the sum of the
pieces ⟨vjp_i(g), t_i⟩, so every op with a VJP rule works in forward mode too.

>>> import symgrad as sg
>>> n = sg.dims("n")[0]
>>> x, t = sg.symbols("x", (n,)), sg.symbols("t", (n,))
>>> jvp([x.tanh()], [x], [t])[0].name
't * (1 - torch.tanh(x) ** 2)'
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.constructors import symbols
from ..core.dims import format_shape, same_dim
from ..core.dtypes import is_floating
from ..core.errors import NoDerivativeError, SymgradError
from ..core.graph import topological_all
from ..core.tensor import Tensor, apply, with_inputs
from ..ops.calculus import NoDerivative
from .replacing import replaced
from .reverse import law
from .simplify import simplify


def _shaped(t: Tensor, shape: tuple) -> Tensor:
    """A tangent broadcast to the node's shape (``ta + 0`` of a broadcasting add keeps ``a``'s shape)."""
    if len(t.shape) == len(shape) and all(same_dim(a, b) for a, b in zip(t.shape, shape, strict=True)):
        return t
    return t.expand(*shape)


def _node_jvp(node: Tensor, tangents: list[Tensor | None], position: int) -> Tensor:
    if node.op.jvp is not None:
        return node.op.jvp(tangents, node, *node.inputs, **node.attrs)
    # transpose the VJP: it is linear in g, so d/dg Σ ⟨vjp_i(g), t_i⟩ is J t
    # a name of its own per node: printers and code generation tell tensors apart by name
    g = symbols(f"g_tangent_{position}", node.shape, distinct=True, dtype=node.dtype)
    # The rule runs on stand-in leaves for the computed inputs and the tangents, put back afterwards: the law by
    # g then walks a graph the size of the rule, where the real inputs would make it walk the network below
    # (for every node: quadratic in the depth).
    standing: dict[int, Tensor] = {}
    inputs = [_stand_in(part, f"jvp_input_{position}_{k}", standing) for k, part in enumerate(node.inputs)]
    out = node
    if standing:
        out = with_inputs(node, inputs)
        standing[id(out)] = node
    pieces = node.op.vjp(g, out, *inputs, **node.attrs)
    pairing = None
    for k, (piece, tangent) in enumerate(zip(pieces, tangents, strict=False)):
        if piece is None or tangent is None:
            continue
        if isinstance(piece, NoDerivative):  # torch has no derivative by this input, which moves here
            raise NoDerivativeError(piece.message)
        term = (piece * _stand_in(tangent, f"jvp_tangent_{position}_{k}", standing)).sum()
        pairing = term if pairing is None else pairing + term
    if pairing is None:
        return apply("full", shape=node.shape, value=0)
    (found,) = law(pairing, [g], simplified=False)
    return replaced([found], standing)[0] if standing else found


def _stand_in(t: Tensor, name: str, standing: dict[int, Tensor]) -> Tensor:
    """A leaf standing for the computed floating tensor ``t`` (recorded in ``standing``), or ``t`` itself."""
    if t.op is None or t.is_python_scalar or not is_floating(t.dtype):
        return t
    leaf = symbols(name, t.shape, distinct=True, dtype=t.dtype)
    standing[id(leaf)] = t
    return leaf


def jvp(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    tangents: Tensor | Sequence[Tensor],
    *,
    simplified: bool = True,
    exact: bool = False,
) -> Tensor | list[Tensor]:
    """J·t for each output: how the outputs move when ``inputs`` move along ``tangents`` (one tensor
    for one output, a list for a list).

    Works for symbolic sizes (the result is a law, such as ``t * (1 - tanh(x)**2)``) and concrete ones.
    ``exact`` simplifies only where every IEEE value stays the same (for emitted code).
    """
    if isinstance(outputs, Tensor):
        return jvp([outputs], inputs, tangents, simplified=simplified, exact=exact)[0]
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    tangents = [tangents] if isinstance(tangents, Tensor) else list(tangents)
    if len(inputs) != len(tangents):
        raise SymgradError(f"got {len(inputs)} inputs and {len(tangents)} tangents")
    tangent: dict[int, Tensor] = {}
    for x, t in zip(inputs, tangents, strict=True):
        if len(x.shape) != len(t.shape) or not all(same_dim(a, b) for a, b in zip(x.shape, t.shape, strict=True)):
            raise SymgradError(
                f"the tangent of {x.name} has shape {format_shape(t.shape)}, but {x.name} has shape "
                f"{format_shape(x.shape)}"
            )
        tangent[id(x)] = t
    for position, node in enumerate(topological_all(list(outputs))):
        if node.op is None or id(node) in tangent or not node.op.differentiable:
            continue
        parts = [tangent.get(id(part)) for part in node.inputs]
        if any(p is not None for p in parts):
            if node.op.vjp is None and node.op.jvp is None:
                raise SymgradError(f"no gradient rule for {node.op.name} yet")
            tangent[id(node)] = _shaped(_node_jvp(node, parts, position), node.shape)
    results = [tangent[id(o)] if id(o) in tangent else apply("full", shape=o.shape, value=0) for o in outputs]
    return simplify(results, context=list(outputs), exact=exact) if simplified else results
