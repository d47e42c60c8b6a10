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

from ..core.arrays import matmul, object_array
from ..core.dims import Shape, format_shape, matmul_shape
from ..core.dtypes import is_floating, same_dtype_message, scalar_type_message
from ..core.errors import ShapeError, SymgradError, UnsupportedError
from ..core.registry import Op, register
from ..core.tensor import apply, constant
from . import functions
from .batched import lift
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
    """G Bᵀ and Aᵀ G, with 1-D operands promoted and batch broadcasting undone.

    Products of vectors and matrices get the rules a person writes (``g * b``, ``B @ g``, ``Aᵀ g``, ``torch.outer``)
    instead of promoted matrices, so that their laws, and laws of laws, stay readable.
    """
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    if a.ndim == 1 and b.ndim == 2:
        return b @ g, apply("outer", a, g)
    if a.ndim == 2 and b.ndim == 1:  # Aᵀ g, torch's mv backward: faster inside a backward than g @ A
        return apply("outer", g, b), a.T @ g
    return _promoted_matmul_vjp(g, a, b)


def _promoted_matmul_vjp(g, a, b) -> tuple:
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


def matmul_batch(inputs: list, flags: list, nb: int) -> Any:
    """``matmul`` with ``nb`` leading batch dims on some operands (vectors kept as vectors)."""
    a, b = inputs
    batched_a, batched_b = flags
    la, lb = a.ndim - nb * batched_a, b.ndim - nb * batched_b
    if la == 1 and lb == 1:
        if batched_a and batched_b:
            return (a * b).sum(dim=-1)
        return a @ b if batched_a else b @ a
    if lb == 1 and batched_b:
        if not batched_a and la == 2:
            return b @ a.T  # each batch entry's a @ v, as rows
        return (a @ lift(b, nb, la - 2).unsqueeze(-1))[..., 0]
    if la == 1 and batched_a and lb > 2:
        return (lift(a, nb, lb - 2).unsqueeze(-2) @ b)[..., 0, :]
    if la == 1 or lb == 1:
        return a @ b  # torch's vector rules already keep the leading dims of the batched operand
    out = max(la, lb)  # batched operands get the size-1 dims that broadcasting would have put in front
    left = lift(a, nb, out - la) if batched_a else a
    right = lift(b, nb, out - lb) if batched_b else b
    return left @ right


def _outer_batch(inputs: list, flags: list, nb: int) -> Any:
    a, b = inputs
    column = a.unsqueeze(-1) if flags[0] else a[:, None]
    row = b.unsqueeze(-2) if flags[1] else b
    return column * row


def blas_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` with torch's signed zeros: its BLAS sums start from +0.0, so a sum of zeros is +0.0, except in a
    matrix product over one term with more than one row and column, which torch computes as an outer product
    (-1 · 0 is -0.0)."""
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == 1 and a.shape[0] > 1 and b.shape[1] > 1:
        return a * b  # torch's outer product: -1 · 0 is -0.0
    return np.matmul(a, b) + 0.0


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
        tags=frozenset({"bilinear", "one_dtype"}),
        mixed_dtypes=same_dtype_message,
        float64=blas_matmul,
        cost=_product_cost,
        batch=matmul_batch,
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
        tags=frozenset({"bilinear", "one_dtype"}),
        mixed_dtypes=same_dtype_message,
        float64=blas_matmul,
        cost=_product_cost,
        batch=matmul_batch,
    )
)


def _outer_shape(a: Shape, b: Shape) -> Shape:
    for what, shape in (("self", a), ("vec2", b)):
        if len(shape) != 1:
            raise ShapeError(f"outer: Expected 1-D argument {what}, but got {len(shape)}-D")
    return (a[0], b[0])


register(
    Op(
        "outer",
        _outer_shape,
        lambda a, b: np.multiply.outer(a, b),
        lambda torch, a, b: torch.outer(a, b),
        "torch.outer({0}, {1})",
        "{0} {1}^{{\\top}}",
        "MulBackward0",
        vjp=lambda g, out, a, b: (g @ b, a @ g),
        tags=frozenset({"bilinear", "one_dtype"}),
        float64=np.multiply.outer,
        batch=_outer_batch,
    )
)
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum_parts(equation: str) -> tuple[list[str], str]:
    """The subscripts of each operand and of the output, of an equation with an explicit output."""
    inputs, _, output = equation.replace(" ", "").partition("->")
    return inputs.split(","), output


def _einsum_sizes(shapes: tuple, equation: str) -> dict[str, Any]:
    """The size of each subscript, with torch's rules and messages (a size-1 dim broadcasts, as in torch)."""
    operands, _ = einsum_parts(equation)
    if len(operands) != len(shapes):
        raise ShapeError(f"einsum(): more operands were provided than specified in the equation ({equation})")
    sizes: dict[str, Any] = {}
    for position, (letters, shape) in enumerate(zip(operands, shapes)):
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
                    f"previously seen size {seen} (shapes {', '.join(format_shape(s) for s in shapes)})"
                )
    return sizes


def _einsum_shape(*shapes: Shape, equation: str) -> Shape:
    sizes = _einsum_sizes(shapes, equation)
    return tuple(sizes[letter] for letter in einsum_parts(equation)[1])


def _einsum(*arrays: np.ndarray, equation: str) -> np.ndarray:
    """np.einsum after broadcasting size-1 dims to their subscript's size (torch broadcasts them)."""
    operands, output = einsum_parts(equation)
    sizes = _einsum_sizes(tuple(a.shape for a in arrays), equation)
    full = [np.broadcast_to(a, tuple(sizes[c] for c in letters)) for a, letters in zip(arrays, operands)]
    if not output and not all(a.size for a in full):
        return np.array(sympy.S.Zero, dtype=object)  # an empty sum
    if not all(a.size for a in full):
        return np.full(tuple(sizes[c] for c in output), sympy.S.Zero, dtype=object)
    return np.array(np.einsum(equation.replace(" ", ""), *full), dtype=object)


def _einsum_cost(*shapes: tuple, equation: str) -> int:
    """One term per combination of subscript values, per operand."""
    sizes = _einsum_sizes(shapes, equation)
    return math.prod(int(d) for d in sizes.values()) * len(shapes)


def einsum_op(*operands: Any, equation: str) -> Any:
    """The einsum node of any number of operands (one op row per number of operands, for its spelling)."""
    return apply("einsum" if len(operands) == 2 else f"einsum{len(operands)}", *operands, equation=equation)


def _einsum_vjp(g, out, *operands, equation: str) -> tuple:
    subscripts, output = einsum_parts(equation)
    sizes = _einsum_sizes(tuple(t.shape for t in operands), equation)
    grads = []
    for k, (mine, operand) in enumerate(zip(subscripts, operands)):
        others = [(letters, t) for j, (letters, t) in enumerate(zip(subscripts, operands)) if j != k]
        grads.append(_einsum_operand_grad(g, output, others, mine, sizes, operand))
    return tuple(grads)


def _einsum_operand_grad(g, output: str, others: list, mine: str, sizes: dict, operand):
    """The gradient for the operand with subscripts ``mine``: g contracted with the other operands.

    A subscript summed in this operand only gets the gradient broadcast along it; a repeated subscript
    (a diagonal) puts it on the diagonal (a product with identity matrices); a broadcast (size-1) dim of
    this operand gets it summed over that dim.
    """
    unique = "".join(dict.fromkeys(mine))
    theirs = "".join(letters for letters, _ in others)
    reached = "".join(c for c in unique if c in output or c in theirs)
    equation = ",".join([output, *(letters for letters, _ in others)]) + f"->{reached}"
    grad = einsum_op(g, *(t for _, t in others), equation=equation)
    for axis, letter in enumerate(unique):
        if letter not in reached:
            grad = grad.unsqueeze(axis)
    full = tuple(sizes[c] for c in unique)
    if tuple(grad.shape) != full:
        grad = grad.expand(*full)
    if unique != mine:  # a diagonal: δ between each repeated subscript and its first occurrence
        spare = iter(c for c in LETTERS if c not in mine + output + theirs)
        renamed, pairs = "", []
        for letter in mine:
            fresh = next(spare) if letter in renamed else letter
            pairs += [letter + fresh] if fresh != letter else []
            renamed += fresh
        identities = [apply("eye", n=sizes[pair[0]]) for pair in pairs]
        grad = einsum_op(grad, *identities, equation=",".join([unique, *pairs]) + f"->{renamed}")
    return unbroadcast(grad, operand.shape)


def _einsum_mixed_dtypes(*dtypes: str, equation: str) -> str | None:
    """torch's einsum multiplies operands that it sums over nothing (promoting them), and refuses two floating
    dtypes in the products it sums in."""
    subscripts, output = einsum_parts(equation)
    if set("".join(subscripts)) <= set(output):
        return None
    first = next(d for d in dtypes if is_floating(d))
    return scalar_type_message(first, next(d for d in dtypes if is_floating(d) and d != first))


def _register_einsum(name: str, count: int) -> None:
    operands = ", ".join(f"{{{i}}}" for i in range(count))
    register(
        Op(
            name,
            _einsum_shape,
            _einsum,
            lambda torch, *tensors, equation: torch.einsum(equation, *tensors),
            'torch.einsum("{equation}", ' + operands + ")",
            r"\operatorname{{einsum}}_{{\mathtt{{{equation}}}}}\left(" + operands + r"\right)",
            "EinsumBackward0",
            vjp=_einsum_vjp,
            tags=frozenset({"bilinear", "one_dtype"} if count == 2 else {"one_dtype"}),
            mixed_dtypes=_einsum_mixed_dtypes,
            cost=_einsum_cost,
        )
    )


_register_einsum("einsum", 2)
for _count in (1, *range(3, 9)):
    _register_einsum(f"einsum{_count}", _count)


# ── linear algebra (square matrices, batched) ─────────────────────────────
def _square(a: Shape, what: str) -> Shape:
    """Batches of square matrices, with torch's messages (``what`` is torch's name of the op, e.g. ``linalg.det``)."""
    if len(a) < 2:
        raise ShapeError(f"{what}: The input tensor A must have at least 2 dimensions.")
    if a[-2] != a[-1] and isinstance(a[-2], int) and isinstance(a[-1], int):
        raise ShapeError(f"{what}: A must be batches of square matrices, but they are {a[-2]} by {a[-1]} matrices")
    return a


def _per_matrix(a: np.ndarray, fn, *, matrices: bool = False) -> np.ndarray:
    """``fn(sympy.Matrix)`` for each matrix of a batch, stacked back: a scalar per matrix, or (``matrices``)
    a matrix of the same size."""
    n = a.shape[-1]
    results = [fn(sympy.Matrix(n, n, list(a[index].reshape(-1)))) for index in np.ndindex(a.shape[:-2])]
    if matrices:
        return object_array([entry for m in results for entry in m], a.shape)
    return object_array(results, a.shape[:-2])


def _as_matrix(a: np.ndarray) -> sympy.Matrix:
    return sympy.Matrix(a.tolist())


def _lift(t, a):
    """A per-matrix scalar (shape: a's batch) as a tensor that broadcasts against a's matrices."""
    return t if a.ndim <= 2 else t.unsqueeze(-1).unsqueeze(-1)


def _inverse(a: np.ndarray, check: bool = True) -> np.ndarray:
    """np.linalg.inv, with torch's error for a singular matrix; without ``check`` (an inverse inside a
    backward), what LU solves give there, as in torch's backward: inf and nan."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        if not check:
            return _lu_inverse(a)
        raise SymgradError(
            "linalg.inv: The diagonal element is zero, the inversion could not be completed because the input "
            "matrix is singular."
        ) from None


def _lu_inverse(a: np.ndarray) -> np.ndarray:
    """A⁻¹ by LU with partial pivoting (LAPACK's getrf and getrs), dividing by a zero pivot as IEEE does."""
    out = np.empty(a.shape)
    n = a.shape[-1]
    for index in np.ndindex(a.shape[:-2]):
        lu, rows = np.array(a[index], dtype=float), np.eye(n)
        for k in range(n):
            pivot = k + int(np.argmax(np.abs(lu[k:, k])))
            lu[[k, pivot]], rows[[k, pivot]] = lu[[pivot, k]], rows[[pivot, k]]
            for i in range(k + 1, n):
                factor = lu[i, k] / lu[k, k]
                lu[i, k:] -= factor * lu[k, k:]
                rows[i] -= factor * rows[k]
        solution = np.zeros((n, n))
        for i in reversed(range(n)):
            solution[i] = (rows[i] - lu[i, i + 1 :] @ solution[i + 1 :]) / lu[i, i]
        out[index] = solution
    return out


def _symbolic_inverse(m: sympy.Matrix) -> sympy.Matrix:
    try:
        return m.inv()
    except ValueError:
        raise SymgradError(
            "linalg.inv: The inversion could not be completed because the input matrix is singular."
        ) from None


def _trace_shape(a: Shape) -> Shape:
    """torch.trace takes any 2-D tensor (the diagonal of a non-square one is min(n, m) long)."""
    if len(a) != 2:
        raise ShapeError(f"trace: expected a matrix, but got tensor with dim {len(a)}")
    return ()


def _trace_vjp(g, out, a):
    """g times the n×m matrix with ones on its diagonal."""
    n, m = a.shape
    if n == m:
        diagonal = apply("eye", n=n)
    elif not (isinstance(n, int) and isinstance(m, int)):
        raise UnsupportedError(f"the trace law of a non-square {format_shape(a.shape)} matrix needs concrete sizes")
    else:
        diagonal = apply("index", apply("eye", n=max(n, m)), index=(slice(0, n), slice(0, m)), via="index")
    # torch fills the diagonal with g (a select: a nan or infinite g stays off the diagonal's zeros)
    return (apply("where", apply("eq", diagonal, 1), g, 0),)


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


def _inverse_transpose(a):
    """A⁻ᵀ for the determinant family's gradients (no singularity check: where A is singular, the rules give
    torch's value, inf or 0, rather than an error)."""
    return apply("inv", a, check=False).mT


def _det_vjp(g, out, a):
    """det(A) A⁻ᵀ, and g·0 at a singular A, as torch's backward gives, except for 1×1 where det is the entry."""
    if a.shape[-1] == 1:
        return (g.reshape(*a.shape),)
    scaled = _lift(g * out, a)  # g·det: at a singular A torch's gradient is g·0, so an infinite or nan g gives nan
    general = apply("where", apply("eq", _lift(out, a), 0), scaled * 0, scaled * _inverse_transpose(a))
    if isinstance(a.shape[-1], int):
        return (general,)
    # a symbolic n: the emitted code decides at run time whether the matrices are 1×1 (a singular one keeps g)
    one_by_one = apply("eq", apply("full", shape=(), value=a.shape[-1]), 1)
    return (apply("where", one_by_one, _lift(g, a), general),)


def _lu_determinant(a: np.ndarray) -> np.ndarray:
    """det as torch computes it: the product of U's diagonal from LU with partial pivoting, signed by the
    row swaps (np.linalg.det goes through exp(log|det|) and gives 7.999999999999998 for det [[2, 1], [0, 4]])."""
    a = np.array(a, dtype=np.float64)
    if a.shape[-1] == 0:
        return np.ones(a.shape[:-2])
    out = np.empty(a.shape[:-2])
    for index in np.ndindex(a.shape[:-2]):
        m = a[index].copy()
        n, det = m.shape[0], 1.0
        for k in range(n):
            pivot = k + int(np.argmax(np.abs(m[k:, k])))
            if m[pivot, k] == 0:
                det = 0.0 * det
                break
            if pivot != k:
                m[[k, pivot]] = m[[pivot, k]]
                det = -det
            m[k + 1 :, k:] -= np.outer(m[k + 1 :, k] / m[k, k], m[k, k:])
            det *= m[k, k]
        out[index] = det
    return out


register(
    Op(
        "det",
        lambda a: _square(a, "linalg.det")[:-2],
        lambda a: _per_matrix(a, lambda m: m.det()),
        lambda torch, a: torch.linalg.det(a),
        "torch.linalg.det({0})",
        r"\det\left({0}\right)",
        "LinalgDetBackward0",
        vjp=_det_vjp,
        float64=_lu_determinant,
        cost=_determinant_cost,
        batch="trailing",
    )
)
register(
    Op(
        "logdet",
        lambda a: _square(a, "logdet")[:-2],
        lambda a: _per_matrix(a, lambda m: functions.log_of_determinant(m.det())),
        lambda torch, a: torch.logdet(a),
        "torch.logdet({0})",
        r"\log\det\left({0}\right)",
        "LogdetBackward0",
        # no gradient where the determinant is negative: torch's logdet is nan there, from a where
        vjp=lambda g, out, a: (
            _lift(apply("where", apply("lt", apply("det", a), 0), 0, g), a) * _inverse_transpose(a),
        ),
        float64=lambda a: _logdet_float64(a),
        cost=_determinant_cost,
        batch="trailing",
    )
)


def _logdet_float64(a: np.ndarray) -> np.ndarray:
    """torch's logdet: log|det| where det > 0, nan where it is negative, -inf where it is 0."""
    sign, logabsdet = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, logabsdet)


register(
    Op(
        "logabsdet",
        lambda a: _square(a, "linalg.slogdet")[:-2],
        lambda a: _per_matrix(a, lambda m: sympy.log(sympy.Abs(m.det()))),
        lambda torch, a: torch.linalg.slogdet(a)[1],
        "torch.linalg.slogdet({0}).logabsdet",
        r"\log\left|\det\left({0}\right)\right|",
        "LinalgSlogdetBackward0",
        vjp=lambda g, out, a: (_lift(g, a) * _inverse_transpose(a),),
        float64=lambda a: np.linalg.slogdet(a)[1],
        cost=_determinant_cost,
        batch="trailing",
    )
)
register(
    Op(
        "inv",
        lambda a, check=True: _square(a, "linalg.inv"),
        lambda a, check=True: _per_matrix(a, _symbolic_inverse, matrices=True),
        lambda torch, a, check=True: torch.linalg.inv(a) if check else torch.linalg.inv_ex(a).inverse,
        "torch.linalg.inv({0})",
        "{0}^{{-1}}",
        "LinalgInvExBackward0",
        precedence=8,
        vjp=lambda g, out, a, check=True: (-(out.mT @ g @ out.mT),),
        float64=_inverse,
        cost=lambda a, check=True: _determinant_cost(a) * (a[-1] if a else 1),
        batch="trailing",
    )
)


# ── Cholesky factor (a closed form for small matrices; LAPACK's numbers) ───
def _cholesky(m: sympy.Matrix) -> sympy.Matrix:
    return m.cholesky(hermitian=False) if m.rows else m


def _cholesky_float64(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise SymgradError(
            "linalg.cholesky: The factorization could not be completed because the input is not positive-definite."
        ) from None


def _cholesky_vjp(g, L, a) -> tuple:
    """torch's cholesky_backward (Murray 2016): L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹, symmetrised, where Φ keeps the lower
    triangle and halves the diagonal."""
    n = a.shape[-1]
    L_inv = apply("inv", L)
    phi = L.mT @ g
    if isinstance(n, int):
        mask = [[1.0 if j < i else 0.5 if j == i else 0.0 for j in range(n)] for i in range(n)]
        phi = phi * constant(mask, dtype=a.dtype)
    else:
        phi = phi.tril() - phi * apply("eye", n=n) / 2
    grad = L_inv.mT @ phi @ L_inv
    return ((grad + grad.mT) / 2,)


register(
    Op(
        "cholesky",
        lambda a: _square(a, "linalg.cholesky"),
        lambda a: _per_matrix(a, _cholesky, matrices=True),
        lambda torch, a: torch.linalg.cholesky(a),
        "torch.linalg.cholesky({0})",
        r"\operatorname{{chol}}\left({0}\right)",
        "LinalgCholeskyExBackward0",
        vjp=_cholesky_vjp,
        float64=_cholesky_float64,
        cost=lambda a: math.prod(a or (1,)) * (a[-1] if a else 1) ** 2,
        batch="trailing",
    )
)
