"""Reverse mode over the tensor graph: gradient laws that hold for every size.

Each op's row carries a VJP rule written with symgrad ops, so the gradient
is itself a tensor expression with a (possibly symbolic) shape:

>>> import symgrad.ops
>>> from symgrad.core import dims, symbols
>>> k, n, m = dims("k n m")
>>> W, X, V = symbols("W", (k, n)), symbols("X", (n, m)), symbols("V", (k, m))
>>> law(W @ X, [W], [V])[0].name
'V @ X.T'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.budget import tick
from ..core.dims import format_shape, is_concrete, same_dim
from ..core.dtypes import is_floating
from ..core.errors import NoDerivativeError, SymgradError
from ..core.graph import topological
from ..core.latex import latex_name
from ..core.listing import Listing, listing
from ..core.printers import LatexPrinter
from ..core.tensor import Tensor, apply, constant, wrap
from ..ops.calculus import NoDerivative
from ..ops.shape import cast_like
from .simplify import simplify


def implicit_grad(out: Tensor) -> Tensor:
    """The grad_tensor torch makes up for a one-element output (1), or torch's error for any other."""
    if not all(isinstance(d, int) and d == 1 for d in out.shape):
        raise SymgradError("grad can be implicitly created only for scalar outputs")
    return constant(1, shape=out.shape, dtype=out.dtype)


def needed_nodes(outputs: Sequence[Tensor], wrt: Sequence[Tensor]) -> set[int]:
    """Nodes through which some ``wrt`` leaf influences an output."""
    targets = {id(x) for x in wrt}
    needed: set[int] = set()
    for out in outputs:
        for node in topological(out):
            differentiable = node.op is None or node.op.differentiable  # a detach() ends the way back
            if id(node) in targets or (differentiable and any(id(i) in needed for i in node.inputs)):
                needed.add(id(node))
    return needed


def _zeros_like(x: Tensor) -> Tensor:
    return apply("full", shape=x.shape, value=0)


class Law(tuple):
    """The gradients a law gives, one tensor expression per ``wrt`` tensor, in order.

    A tuple (``grad_W, grad_b = sg.law(...)`` unpacks it) that notebooks show as equations.

    >>> import symgrad as sg
    >>> import symgrad.torch as torch
    >>> k, n = sg.dims("k n")
    >>> W, x = sg.symbols("W", (k, n), requires_grad=True), sg.symbols("x", (n,))
    >>> tanh_law = sg.law(torch.tanh(W @ x).sum(), [W])
    >>> (grad_W,) = tanh_law
    >>> print(tanh_law._repr_markdown_())
    - `grad_W = torch.outer(1 - torch.tanh(W @ x) ** 2, x)`
    """

    names: tuple[str, ...]

    def __new__(cls, gradients: Sequence[Tensor], names: Sequence[str]) -> Law:
        law = super().__new__(cls, gradients)
        law.names = tuple(names)
        return law

    def __getnewargs__(self) -> tuple:
        return (tuple(self), self.names)

    def _repr_latex_(self) -> str:
        rows = [
            rf"\nabla_{{{latex_name(name)}}} &= {LatexPrinter().doprint(g) if g.op else latex_name(g.name)}"
            for name, g in zip(self.names, self)
        ]
        return r"$\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}$"

    def _repr_markdown_(self) -> str:
        return "\n".join(f"- `{line}`" for line in self._listing().text().split("\n"))

    def __repr__(self) -> str:
        """The laws as a listing: the parts they share named once (``t1 = ...``), then one line per gradient."""
        return self._listing().text()

    def _listing(self) -> Listing:
        return listing([(f"grad_{name}", g) for name, g in zip(self.names, self)])


def law(
    outputs: Tensor | Sequence[Tensor],
    wrt: Tensor | Sequence[Tensor],
    grads: Any = None,
    *,
    simplified: bool = True,
    exact: bool = False,
) -> Law:
    """The gradient of ``outputs`` contracted with ``grads`` (vᵀJ), one tensor expression per ``wrt``.

    Works for symbolic dimensions; ``grads`` may be symbolic tensors such as ``V``. ``exact`` simplifies
    only as far as every value stays torch's, at infinities and nans too (for emitted code).
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    targets = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    if grads is None:
        vs = [implicit_grad(o) for o in outs]
    else:
        vs = [grads] if isinstance(grads, Tensor) or not isinstance(grads, (list, tuple)) else list(grads)
        vs = [implicit_grad(o) if v is None else wrap(v) for o, v in zip(outs, vs)]
    if len(vs) != len(outs):
        raise SymgradError(f"got {len(outs)} outputs and {len(vs)} grad_tensors")
    for position, (o, v) in enumerate(zip(outs, vs)):
        if len(v.shape) != len(o.shape) or not all(same_dim(a, b) for a, b in zip(v.shape, o.shape)):
            raise SymgradError(
                f"grad_tensor {position} has shape {format_shape(v.shape)} but output {position} has shape "
                f"{format_shape(o.shape)}"
            )
    needed = needed_nodes(outs, targets)
    cotangents: dict[int, Tensor] = {}
    for o, v in zip(outs, vs):
        cotangents[id(o)] = cotangents[id(o)] + v if id(o) in cotangents else v
    order: list[Tensor] = []
    seen: set[int] = set()
    for o in outs:
        for node in topological(o):
            if id(node) not in seen:
                seen.add(id(node))
                order.append(node)
    for node in reversed(order):
        tick("deriving the backward")
        g = cotangents.get(id(node))
        if g is None or node.op is None or id(node) not in needed:
            continue
        if node.op.vjp is None:
            raise SymgradError(f"no gradient rule for {node.op.name} yet")
        pieces = node.op.vjp(g, node, *node.inputs, **node.attrs)
        for part, piece in zip(node.inputs, pieces):
            if piece is None or id(part) not in needed:
                continue
            if isinstance(piece, NoDerivative):  # torch has no derivative here, and this input is differentiated
                raise NoDerivativeError(piece.message)
            if is_floating(part.dtype) and is_floating(piece.dtype) and piece.dtype != part.dtype and piece.leaves():
                piece = cast_like(piece, part)  # torch's engine casts each gradient to its input's dtype
            cotangents[id(part)] = cotangents[id(part)] + piece if id(part) in cotangents else piece
    results = tuple(cotangents[id(x)] if id(x) in cotangents else _zeros_like(x) for x in targets)
    if simplified:
        results = simplify(list(results), context=outs, exact=exact)
    return Law(results, [x.name for x in targets])


def entrywise_possible(*tensors: Tensor) -> bool:
    return all(is_concrete(t.shape) for t in tensors)
