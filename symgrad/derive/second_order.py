"""Second-order laws: Hessian-vector products, Gauss–Newton products, and Jacobians and Hessians as tensors.

The gradient law is itself a graph of VJP rules, so it can be differentiated again: contracting it with
a tangent ``v`` gives the HVP (about the cost of one more gradient, never the Hessian). Contracting it
with every basis vector at once (the basis stacked along leading dims, see :mod:`.batching`) gives the
Jacobian or Hessian as a tensor law, with torch's layout ``y.shape + x.shape``.

>>> import symgrad as sg
>>> n = sg.dims("n")[0]
>>> A, x = sg.symbols("A", (n, n)), sg.symbols("x", (n,))
>>> hessian_law(x @ A @ x, x).name
'A + A.T'
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.constructors import symbols, symbols_like
from ..core.dims import sized_axes
from ..core.errors import SymgradError, UnsupportedError
from ..core.tensor import Tensor, apply
from .batching import batch
from .forward import jvp
from .layer_curvature import layer_hessian
from .replacing import replaced
from .reverse import law
from .simplify import simplify


def identity(shape: tuple) -> Tensor:
    """The basis of a tensor of ``shape``, stacked in front: ``eye(n)``, or ``eye(n·m).reshape(n, m, n, m)``."""
    if not shape:
        return apply("full", shape=(), value=1)
    if len(shape) == 1:
        return apply("eye", n=shape[0])
    size = math.prod(shape) if all(isinstance(d, int) for d in shape) else _product(shape)
    return apply("eye", n=size).reshape(*shape, *shape)


def _product(shape: tuple):
    out = 1
    for d in shape:
        out = out * d
    return out


def _gradient(f: Tensor, wrt: Sequence[Tensor]) -> tuple[Tensor, ...]:
    if not all(isinstance(d, int) and d == 1 for d in f.shape):
        raise UnsupportedError(f"a Hessian needs a one-element output; {f.name} has shape {f.shape}")
    return law(f.reshape(()) if f.shape else f, list(wrt), simplified=False)


def jacobian_law(y: Tensor, x: Tensor, *, simplified: bool = True, context: Sequence[Tensor] = ()) -> Tensor:
    """dy/dx as a tensor law of shape ``y.shape + x.shape`` (row ``i`` is the VJP with the basis vector ``e_i``).

    >>> import symgrad as sg
    >>> n = sg.dims("n")[0]
    >>> W, x = sg.symbols("W", (n, n)), sg.symbols("x", (n,))
    >>> jacobian_law(W @ x, x).name
    'W'
    """
    cotangent = symbols_like(y, "basis", distinct=True)
    (rows,) = law(y, [x], [cotangent], simplified=False)
    (stacked,) = batch([rows], cotangent, identity(y.shape), len(y.shape))
    return simplify([stacked], context=list(context) or [y])[0] if simplified else stacked


def hessian_law(
    f: Tensor, wrt: Tensor | Sequence[Tensor], *, simplified: bool = True
) -> Tensor | tuple[tuple[Tensor, ...], ...]:
    """d²f/dx² as a tensor law of shape ``x.shape + x.shape``; for several inputs, the nested tuple
    ``H[i][j] = d/dx_j (df/dx_i)`` that ``torch.autograd.functional.hessian`` returns.

    An input with dims of size 1 (a column ``(d, 1)``) is differentiated as the input without them (a vector
    ``(d,)``), and its blocks reshaped into torch's layout: the same law as the vector's, not a basis of the
    column multiplied through."""
    single = isinstance(wrt, Tensor)
    inputs = [wrt] if single else list(wrt)
    flat = [_without_unit_dims(x) for x in inputs]
    if all(s is x for s, x in zip(flat, inputs)):
        gradients = _gradient(f, inputs)
        layers = {id(x): layer_hessian(f, x) for x in inputs}  # a weight's own block in block form, or None
        blocks = tuple(
            tuple(
                _simplified_block(layers[id(x)], f, simplified)
                if a is x and layers[id(x)] is not None
                else jacobian_law(g, x, simplified=simplified, context=[f])
                for x in inputs
            )
            for a, g in zip(inputs, gradients)
        )
    else:
        (g,) = replaced([f], {id(x): s.reshape(*x.shape) for x, s in zip(inputs, flat) if s is not x})
        found = hessian_law(g, flat, simplified=False)
        back = {id(s): x.reshape(*s.shape) for x, s in zip(inputs, flat) if s is not x}
        blocks = tuple(
            tuple(replaced([found[i][j]], back)[0].reshape(*a.shape, *b.shape) for j, b in enumerate(inputs))
            for i, a in enumerate(inputs)
        )
        if simplified:
            blocks = tuple(tuple(simplify([block], context=[f])[0] for block in row) for row in blocks)
    return blocks[0][0] if single else blocks


def _simplified_block(block: Tensor, f: Tensor, simplified: bool) -> Tensor:
    """A weight matrix's own block in the layer's block form (see :mod:`.layer_curvature`), simplified if asked."""
    return simplify([block], context=[f])[0] if simplified else block


def _without_unit_dims(x: Tensor) -> Tensor:
    """A fresh leaf of ``x``'s shape without its dims of size 1, or ``x`` itself when it has none (or is no leaf)."""
    shape = tuple(d for _, d in sized_axes(x.shape))
    if x.op is not None or len(shape) == len(x.shape):
        return x
    return symbols(x.name, shape, distinct=True, dtype=x.dtype)


def hvp_law(
    f: Tensor, wrt: Tensor | Sequence[Tensor], tangents: Tensor | Sequence[Tensor], *, simplified: bool = True
) -> tuple[Tensor, ...]:
    """H·v, one tensor per input: the gradient's VJP with ``v`` (H is symmetric), at the cost of a gradient.

    >>> import symgrad as sg
    >>> n = sg.dims("n")[0]
    >>> A, x, v = sg.symbols("A", (n, n)), sg.symbols("x", (n,)), sg.symbols("v", (n,))
    >>> hvp_law(x @ A @ x, x, v)[0].name
    '(A + A.T) @ v'
    """
    inputs = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    vs = [tangents] if isinstance(tangents, Tensor) else list(tangents)
    if len(vs) != len(inputs):
        raise SymgradError(f"got {len(inputs)} inputs and {len(vs)} tangents")
    gradients = _gradient(f, inputs)
    hv = law(list(gradients), inputs, vs, simplified=False)
    return tuple(simplify(list(hv), context=[f])) if simplified else hv


def gauss_newton_law(
    output: Tensor,
    loss: Tensor,
    wrt: Tensor | Sequence[Tensor],
    tangents: Tensor | Sequence[Tensor],
    *,
    simplified: bool = True,
) -> tuple[Tensor, ...]:
    """The Gauss–Newton product Jᵀ H_L J v: J the Jacobian of the model ``output`` with respect to ``wrt``,
    H_L the Hessian of ``loss`` with respect to ``output`` (the model's curvature is dropped)."""
    inputs = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    vs = [tangents] if isinstance(tangents, Tensor) else list(tangents)
    moved = jvp([output], inputs, vs, simplified=False)[0]
    (loss_gradient,) = _gradient(loss, [output])
    (curvature,) = law(loss_gradient, [output], [moved], simplified=False)
    return law(output, inputs, [curvature], simplified=simplified)
