"""Linear algebra: matrix products, einsum, trace, and inverse and determinants of square matrices.

>>> import symgrad as sg
>>> A = sg.tensor([[2.0, 1.0], [0.0, 4.0]], name="A")
>>> import symgrad.torch as torch
>>> torch.linalg.det(A).tolist()
8.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from ..core.arrays import matmul
from ..core.dims import Shape, format_shape, matmul_shape
from ..core.errors import ShapeError, UnsupportedError
from ..core.registry import Op, register
from ..core.tensor import apply
from .calculus import unbroadcast


# ── products ───────────────────────────────────────────────────────────────
def _determinant_cost(a: tuple) -> int:
    """A determinant of n×n symbols has n! terms of n factors."""
    n = a[-1] if a else 1
    return math.factorial(n) * n


def _product_cost(a: tuple, b: tuple) -> int:
    """A matrix product has (rows × inner × columns) terms per batch."""
    return math.prod(a or (1,)) * (b[-1] if len(b) > 1 else 1) + math.prod(b or (1,))


def _matmul_vjp(g, out, a, b) -> tuple:
    """G Bᵀ and Aᵀ G, with 1-D operands promoted and batch broadcasting undone."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if b.ndim == 1:  # restore the trailing dim first: g is 0-d for a 1-D @ 1-D product
        g2 = g2.unsqueeze(-1)
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    ga = unbroadcast(g2 @ b2.mT, a2.shape)
    gb = unbroadcast(a2.mT @ g2, b2.shape)
    if a.ndim == 1:
        ga = ga[0]
    if b.ndim == 1:
        gb = gb[..., 0]
    return ga, gb


register(
    Op(
        "mm",
        lambda a, b: matmul_shape(a, b, strict_2d=True),
        matmul,
        lambda torch, a, b: torch.mm(a, b),
        "{0} @ {1}",
        "{0} {1}",
        "MmBackward0",
        precedence=5,
        vjp=_matmul_vjp,
        tags=frozenset({"bilinear"}),
        float64=np.matmul,
        cost=_product_cost,
    )
)
register(
    Op(
        "matmul",
        lambda a, b: matmul_shape(a, b),
        matmul,
        lambda torch, a, b: torch.matmul(a, b),
        "{0} @ {1}",
        "{0} {1}",
        lambda inputs: "MmBackward0" if all(len(t.shape) == 2 for t in inputs) else "MatmulBackward",
        precedence=5,
        vjp=_matmul_vjp,
        tags=frozenset({"bilinear"}),
        float64=np.matmul,
        cost=_product_cost,
    )
)


def _einsum_parts(equation: str) -> tuple[str, str, str]:
    inputs, _, output = equation.replace(" ", "").partition("->")
    left, _, right = inputs.partition(",")
    return left, right, output


def _einsum_sizes(a: Shape, b: Shape, equation: str) -> dict[str, Any]:
    """The size of each subscript, with torch's rules and messages (a size-1 dim broadcasts, as in torch)."""
    left, right, _ = _einsum_parts(equation)
    sizes: dict[str, Any] = {}
    for position, (letters, shape) in enumerate(((left, a), (right, b))):
        if len(letters) != len(shape):
            raise ShapeError(
                f"einsum(): the number of subscripts in the equation ({len(letters)}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {position} and no ellipsis was given"
            )
        own: dict[str, Any] = {}
        for letter, d in zip(letters, shape, strict=True):
            if letter in own and own[letter] != d:
                raise ShapeError(
                    f"einsum(): subscript {letter} is repeated for operand {position} but the sizes don't match, "
                    f"{d} != {own[letter]}"
                )
            own[letter] = d
            seen = sizes.get(letter)
            if seen is None or seen == 1:
                sizes[letter] = d
            elif d != 1 and d != seen:
                raise ShapeError(
                    f"einsum(): subscript {letter} has size {d} for operand {position} which does not broadcast with "
                    f"previously seen size {seen} (shapes {format_shape(a)} and {format_shape(b)})"
                )
    return sizes


def _einsum_shape(a: Shape, b: Shape, equation: str) -> Shape:
    sizes = _einsum_sizes(a, b, equation)
    return tuple(sizes[letter] for letter in _einsum_parts(equation)[2])


def _einsum(a: np.ndarray, b: np.ndarray, equation: str) -> np.ndarray:
    """np.einsum after broadcasting size-1 dims to their subscript's size (torch broadcasts them)."""
    left, right, _ = _einsum_parts(equation)
    sizes = _einsum_sizes(a.shape, b.shape, equation)
    a = np.broadcast_to(a, tuple(sizes[c] for c in left))
    b = np.broadcast_to(b, tuple(sizes[c] for c in right))
    return np.array(np.einsum(equation, a, b), dtype=object)


def _einsum_vjp(g, out, a, b, equation: str) -> tuple:
    left, right, output = _einsum_parts(equation)
    sizes = _einsum_sizes(a.shape, b.shape, equation)
    return (
        _einsum_operand_grad(g, b, output, right, left, sizes, a.shape),
        _einsum_operand_grad(g, a, output, left, right, sizes, b.shape),
    )


def _einsum_operand_grad(g, other, output: str, theirs: str, mine: str, sizes: dict, shape: Shape):
    """The gradient for the operand with subscripts ``mine``: g contracted with the other operand.

    A subscript summed in this operand only gets the gradient broadcast along it; a broadcast (size-1)
    dim of this operand gets it summed over that dim.
    """
    if len(set(mine)) != len(mine):
        raise UnsupportedError(f"no einsum gradient rule for a repeated subscript (diagonal) in {mine}")
    reached = "".join(c for c in mine if c in output or c in theirs)
    grad = apply("einsum", g, other, equation=f"{output},{theirs}->{reached}")
    for axis, letter in enumerate(mine):
        if letter not in reached:
            grad = grad.unsqueeze(axis)
    full = tuple(sizes[c] for c in mine)
    if tuple(grad.shape) != full:
        grad = grad.expand(*full)
    return unbroadcast(grad, shape)


register(
    Op(
        "einsum",
        _einsum_shape,
        _einsum,
        lambda torch, a, b, equation: torch.einsum(equation, a, b),
        'torch.einsum("{equation}", {0}, {1})',
        r"\operatorname{{einsum}}_{{\mathtt{{{equation}}}}}\left({0}, {1}\right)",
        "EinsumBackward",
        vjp=_einsum_vjp,
        tags=frozenset({"bilinear"}),
    )
)


# ── linear algebra (square matrices) ───────────────────────────────────────
def _square(a: Shape, what: str) -> Shape:
    """One square matrix, with torch's messages (``what`` is torch's name of the op, e.g. ``linalg.det``)."""
    if len(a) < 2:
        raise ShapeError(f"{what}: The input tensor A must have at least 2 dimensions.")
    if a[-2] != a[-1] and isinstance(a[-2], int) and isinstance(a[-1], int):
        raise ShapeError(f"{what}: A must be batches of square matrices, but they are {a[-2]} by {a[-1]} matrices")
    if len(a) > 2:
        raise UnsupportedError(f"{what} of a batch of matrices (shape {format_shape(a)}) is not supported yet")
    return a


def _as_matrix(a: np.ndarray) -> sympy.Matrix:
    return sympy.Matrix(a.tolist())


def _trace_shape(a: Shape) -> Shape:
    """torch.trace takes any 2-D tensor (the diagonal of a non-square one is min(n, m) long)."""
    if len(a) != 2:
        raise ShapeError(f"trace: expected a matrix, but got tensor with dim {len(a)}")
    return ()


def _trace_vjp(g, out, a):
    """g times the n×m matrix with ones on its diagonal."""
    n, m = a.shape
    if n == m:
        return (g * apply("eye", n=n),)
    if not (isinstance(n, int) and isinstance(m, int)):
        raise UnsupportedError(f"the trace law of a non-square {format_shape(a.shape)} matrix needs concrete sizes")
    diagonal = apply("index", apply("eye", n=max(n, m)), index=(slice(0, n), slice(0, m)), via="index")
    return (g * diagonal,)


register(
    Op(
        "trace",
        _trace_shape,
        lambda a: np.array(sympy.Add(*np.diagonal(a)), dtype=object),
        lambda torch, a: torch.trace(a),
        "torch.trace({0})",
        r"\operatorname{{tr}}\left({0}\right)",
        "TraceBackward0",
        saves=False,
        vjp=_trace_vjp,
    )
)
register(
    Op(
        "eye",
        lambda n: (n, n),
        lambda n: np.array(sympy.eye(n).tolist(), dtype=object),
        lambda torch, n: torch.eye(n, dtype=torch.float64),
        "torch.eye({n})",
        "I",
        "none",
        differentiable=False,
        vjp=lambda g, out, n: (),
        tags=frozenset({"creation"}),
    )
)
register(
    Op(
        "det",
        lambda a: (_square(a, "linalg.det"), ())[1],
        lambda a: np.array(_as_matrix(a).det(), dtype=object),
        lambda torch, a: torch.linalg.det(a),
        "torch.linalg.det({0})",
        r"\det\left({0}\right)",
        "LinalgDetBackward0",
        # det(A) A⁻ᵀ, and 0 at a singular A, where torch's backward gives 0 too
        vjp=lambda g, out, a: (apply("where", apply("eq", out, 0), 0, g * out * apply("inv", a).mT),),
        cost=_determinant_cost,
    )
)
register(
    Op(
        "logdet",
        lambda a: (_square(a, "logdet"), ())[1],
        lambda a: np.array(sympy.log(_as_matrix(a).det()), dtype=object),
        lambda torch, a: torch.logdet(a),
        "torch.logdet({0})",
        r"\log\det\left({0}\right)",
        "LogdetBackward0",
        vjp=lambda g, out, a: (g * apply("inv", a).mT,),
        cost=_determinant_cost,
    )
)
register(
    Op(
        "logabsdet",
        lambda a: (_square(a, "linalg.slogdet"), ())[1],
        lambda a: np.array(sympy.log(sympy.Abs(_as_matrix(a).det())), dtype=object),
        lambda torch, a: torch.linalg.slogdet(a)[1],
        "torch.linalg.slogdet({0}).logabsdet",
        r"\log\left|\det\left({0}\right)\right|",
        "LinalgSlogdetBackward0",
        vjp=lambda g, out, a: (g * apply("inv", a).mT,),
        cost=_determinant_cost,
    )
)
register(
    Op(
        "inv",
        lambda a: _square(a, "linalg.inv"),
        lambda a: np.array(_as_matrix(a).inv().tolist(), dtype=object),
        lambda torch, a: torch.linalg.inv(a),
        "torch.linalg.inv({0})",
        "{0}^{{-1}}",
        "LinalgInvExBackward0",
        precedence=8,
        vjp=lambda g, out, a: (-(out.mT @ g @ out.mT),),
        cost=lambda a: _determinant_cost(a) * a[-1],
    )
)
