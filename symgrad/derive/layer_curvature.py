"""The Hessian of a loss with respect to a layer's weight matrix, in block form: the layer's inputs, outer-multiplied
with themselves, against the loss's curvature in the layer's output, sample by sample.

When a weight ``W`` enters the loss ``f`` only through one product ``Z = P @ W`` (or ``W @ Q``, or with ``W.T``)
with a matrix ``P`` that does not depend on ``W``, the chain rule gives
``H_W[a, i, b, j] = Σ_{s, t} P[s, a] P[t, b] H_Z[(s, i), (t, j)]``. When ``f``'s curvature in ``Z`` is moreover per
sample (``H_Z`` block diagonal over the rows of ``Z``: each sample's loss reads its own row only, as in an MLP
with a mean or sum over the batch), this is ``Σ_s P[s, a] P[s, b] C[s, i, j]`` with ``C[s]`` the (h, h) curvature
of sample s: one ``einsum`` over the batch, never anything larger than the Hessian (``C`` holds batch · h² numbers).
``C`` itself is h Hessian-vector products in ``Z``, one per column, computed together.

"Per sample" is decided on the graph of the HVP ``H_Z V`` for a symbolic ``V``: it holds when every node that reads
``V`` keeps the rows apart (elementwise ops, products that do not sum over the rows, reductions over other dims).
Anything else (a reshape, a sum over the batch inside the loss, batch statistics) returns None, and the caller
builds the Hessian by the general route.

>>> import symgrad as sg, symgrad.torch as st
>>> m = sg.dims("m")[0]
>>> X, w2, t = sg.symbols("X", (m, 4)), sg.symbols("w2", (3,)), sg.symbols("t", (m,))
>>> W1 = sg.symbols("W1", (4, 3))
>>> H = layer_hessian(((st.tanh(X @ W1) @ w2 - t) ** 2).mean(), W1)
>>> H.op.name, H.attrs["equation"], tuple(H.shape)
('einsum3', 'sa,sb,jsi->aibj', (4, 3, 4, 3))
"""

from __future__ import annotations

from ..core.constructors import symbols
from ..core.dims import sized_axes
from ..core.graph import is_matrix_transpose, topological_all
from ..core.registry import lookup
from ..core.tensor import Tensor, apply
from ..ops.linalg import einsum_op
from .batching import batch
from .replacing import replaced
from .reverse import law


def layer_hessian(f: Tensor, w: Tensor) -> Tensor | None:
    """``H_W`` in block form (see the module docstring), or None when ``w`` is not such a layer's weight."""
    if len(w.shape) != 2 or w.op is not None:
        return None
    found = _the_product(f, w)
    if found is None:
        return None
    z, other, transposed, samples_first = found
    standing = symbols("z_layer", z.shape, distinct=True, dtype=z.dtype)
    (loss,) = replaced([f], {id(z): standing})
    if _reads(loss, w):  # w is used elsewhere too
        return None
    tangent = symbols("v_layer", z.shape, distinct=True, dtype=z.dtype)
    scalar = loss.reshape(()) if loss.shape else loss
    (gradient,) = law(scalar, [standing], simplified=False)
    (hv,) = law(gradient, [standing], [tangent], simplified=False)
    axis = 0 if samples_first else 1
    if _sample_axis(hv, tangent, axis) != axis:
        return None
    h = z.shape[1 - axis]
    eye = apply("eye", n=h)
    basis = eye.reshape(h, 1, h) if samples_first else eye.reshape(h, h, 1)
    (curvature,) = batch([hv], tangent, basis.expand(h, *z.shape), 1)  # [j, s, i] or [j, i, s]: C[s, i, j]
    (curvature,) = replaced([curvature], {id(standing): z})
    # H of the operand that multiplies (w or w.T); its layout [a, i, b, j] (samples first) or [i, a, j, b]
    if samples_first:
        equation = "sa,sb,jsi->" + ("iajb" if transposed else "aibj")
        return einsum_op(other, other, curvature, equation=equation)
    equation = "as,bs,jis->" + ("aibj" if transposed else "iajb")
    return einsum_op(other, other, curvature, equation=equation)


def _the_product(f: Tensor, w: Tensor) -> tuple[Tensor, Tensor, bool, bool] | None:
    """``(Z, the other operand, whether w enters as w.T, whether Z's rows are the samples)`` for the one matrix
    product that reads ``w``, or None."""
    nodes = topological_all([f])
    consumers = [node for node in nodes if any(i is w for i in node.inputs)]
    if len(consumers) != 1:
        return None
    operand, transposed = consumers[0], False
    if is_matrix_transpose(operand):
        users = [node for node in nodes if any(i is operand for i in node.inputs)]
        if len(users) != 1:
            return None
        operand, transposed = users[0], True
    product = operand
    if product.op.name not in ("matmul", "mm") or len(product.shape) != 2:
        return None
    left, right = product.inputs
    if len(left.shape) != 2 or len(right.shape) != 2:
        return None
    if _is(right, w, transposed) and not _reads(left, w):
        return product, left, transposed, True
    if _is(left, w, transposed) and not _reads(right, w):
        return product, right, transposed, False
    return None


def _is(t: Tensor, w: Tensor, transposed: bool) -> bool:
    return t.inputs[0] is w if transposed and is_matrix_transpose(t) else t is w and not transposed


def _reads(t: Tensor, leaf: Tensor) -> bool:
    return any(node is leaf for node in topological_all([t]))


def _sample_axis(root: Tensor, tangent: Tensor, axis: int) -> int | None:
    """The axis of ``root`` that runs over the samples, if every node between ``tangent`` (whose samples run along
    ``axis``) and ``root`` keeps the samples apart; else None."""
    axes: dict[int, int | None] = {id(tangent): axis}
    for node in topological_all([root]):
        if id(node) in axes or node.op is None:
            continue
        moved = [(k, axes[id(i)]) for k, i in enumerate(node.inputs) if id(i) in axes]
        if not moved:
            continue
        axes[id(node)] = None if any(a is None for _, a in moved) else _axis_after(node, moved)
    return axes.get(id(root))


def _axis_after(node: Tensor, moved: list[tuple[int, int]]) -> int | None:
    """Where the samples' axis is in ``node``, given where it is in the inputs that carry it (``(position, axis)``),
    or None when ``node`` mixes samples."""
    name, ndim = node.op.name, len(node.shape)
    rule = lookup(name).batch
    if rule in ("pointwise", "broadcast"):
        found = {a + ndim - len(node.inputs[k].shape) for k, a in moved}
        return found.pop() if len(found) == 1 else None
    if rule == "dims" and "dim" in node.attrs and all(tuple(i.shape) == tuple(node.shape) for i in node.inputs):
        # along one dim, shape kept (the softmax family and its backward): the samples stay apart on the others
        found = {a for _, a in moved}
        along = node.attrs["dim"]
        along = {d % ndim for d in (along if isinstance(along, (tuple, list)) else (along,))} if ndim else set()
        return found.pop() if len(found) == 1 and not found & along else None
    if len(moved) != 1:
        return None
    (k, a), x = moved[0], node.inputs[moved[0][0]]
    if name in ("sum", "mean"):
        dims = {d % len(x.shape) for d in node.attrs["dim"]} if node.attrs["dim"] else set(range(len(x.shape)))
        if a in dims:
            return None
        return a if node.attrs["keepdim"] else a - sum(1 for d in dims if d < a)
    if name in ("matmul", "mm") and len(x.shape) == 2 and len(node.shape) == 2:
        if k == 0 and a == 0:
            return 0  # rows of the left operand are rows of the product
        if k == 1 and a == 1:
            return 1  # columns of the right operand are columns of the product
        return None
    if name in ("matmul", "mv") and k == 0 and len(x.shape) == 2 and a == 0 and len(node.shape) == 1:
        return 0  # a matrix's rows times a vector
    if name == "outer":
        return k  # a vector of samples, as the rows (left) or the columns (right)
    if name in ("transpose", "permute") and len(x.shape) == 2:
        return 1 - a
    if name == "index" and all(i is None or i == slice(None) for i in node.attrs["index"]):
        kept = 0
        for position, entry in enumerate(node.attrs["index"]):
            if entry is None:
                continue
            if kept == a:
                return position
            kept += 1
        return len(node.attrs["index"]) - kept + a  # past the index: the trailing dims keep their order
    if name == "expand" and len(node.shape) == len(x.shape):
        return a
    if name == "reshape":  # only dims of size 1 come or go: the samples' axis keeps its place among the others
        before, after = sized_axes(x.shape), sized_axes(node.shape)
        if [str(d) for _, d in before] != [str(d) for _, d in after] or a not in [k for k, _ in before]:
            return None
        return after[[k for k, _ in before].index(a)][0]
    return None
