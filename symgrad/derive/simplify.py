"""Rewrite gradient laws towards what a person would write.

One bottom-up pass rebuilds the graph: structurally equal subexpressions
become one node (so they can be named once and reused from the forward
pass), and local rules remove what a person would not write: products with
one, sums with zero, double transposes, double negation, reductions over
nothing, and scalar factors that can be collected.

>>> import symgrad.ops
>>> from symgrad.core import symbols
>>> x = symbols("x", (2, 3))
>>> simplify([(x.T.T * 1) + 0])[0] is x
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sympy

from ..core.budget import tick
from ..core.dims import broadcast_shapes, count, same_dim
from ..core.dtypes import is_floating
from ..core.graph import is_matrix_transpose, is_size, topological, uniform_constant
from ..core.registry import lookup
from ..core.tensor import Tensor, apply, constant, with_inputs
from .fuse import fuse
from .identities import identity_product
from .patterns import cross_entropy_gradient, numeric_cross_entropy_gradient
from .rewrite_log import Rewrite
from .unit_dims import unit_dim_rewrite


def _same_shape(a: Sequence, b: Sequence) -> bool:
    return len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


def _fill(value: sympy.Expr, shape: tuple) -> Tensor:
    if not shape:
        if value.is_Number:
            return constant(value, python_scalar=True)
        return Tensor(shape=(), entries=np.array(value, dtype=object), is_python_scalar=True)
    if all(isinstance(d, int) for d in shape) and value.is_Number:
        return constant(value, shape=shape)
    return apply("full", shape=shape, value=value)


def _rewrite(
    name: str, inputs: list[Tensor], attrs: dict, shape: tuple, exact: bool = False, identities: bool = True
) -> Tensor | None:
    """A simpler node equal to ``name(*inputs, **attrs)``, or None to keep it.

    With ``exact``, only rewrites that keep every value IEEE arithmetic gives (up to rounding, overflow at the
    edge of the range, and the sign of a zero) apply: ``x * 0`` stays, since an infinite ``x`` makes it nan, as
    in torch's backward. ``identities``: products with an identity are dropped even so (see
    :mod:`.identities`).
    """
    op = lookup(name)
    if op.readable is not None and not exact:
        return op.readable(*inputs, **attrs)
    consts = [uniform_constant(t) for t in inputs]
    folded = _fold_constants(name, inputs, consts, attrs, shape)
    if folded is not None:
        return folded
    unit = unit_dim_rewrite(name, inputs, attrs, shape)
    if unit is not None:
        return unit
    if (
        op.has("layout")
        and consts[0] is not None
        and not (inputs[0].op is None and _same_shape(inputs[0].shape, shape))
    ):
        return _fill(consts[0], shape)  # a broadcast or reshaped constant is just that constant
    if name == "where":
        simpler = _simplify_where(inputs, consts, shape)
        if simpler is not None:
            return simpler
    if op.has("broadcasting"):
        stripped = _strip_broadcasts(inputs, shape)
        if stripped is not None:
            return apply(name, *stripped, **attrs)
        hoisted = _hoist_broadcast(name, inputs, attrs, shape)
        if hoisted is not None:
            return hoisted
    if name in ("matmul", "mm"):
        return _simplify_matmul(inputs, consts, shape, exact, identities)
    if name == "reshape" and _same_shape(inputs[0].shape, shape):
        return inputs[0]  # a reshape to its own shape
    if name == "reshape" and inputs[0].op is not None and inputs[0].op.name == "reshape":
        return apply("reshape", inputs[0].inputs[0], **attrs)  # a reshape of a reshape is one reshape
    if name == "index":
        return _simplify_index(inputs[0], attrs["index"], shape)
    if name == "sum":
        return _simplify_sum(inputs[0], attrs, shape, exact)
    if name == "mul":
        a, b = inputs
        ca, cb = consts
        finite = (ca == 0 and not is_floating(b.dtype)) or (cb == 0 and not is_floating(a.dtype))
        if (ca == 0 or cb == 0) and (not exact or finite):  # 0 · x is nan for an infinite x, which no bool or
            return _fill(sympy.S.Zero, shape)  # integer tensor holds
        if ca == 1 and _same_shape(b.shape, shape):
            return b
        if cb == 1 and _same_shape(a.shape, shape):
            return a
        if cb is not None and ca is None and _same_shape(a.shape, shape):  # x * 2 → 2 * x
            return _collect(cb, a, shape)
        if ca is not None and cb is None and _same_shape(b.shape, shape):
            return _collect(ca, b, shape)
        if a.op is not None and a.op.name == "neg":
            return apply("neg", apply("mul", a.inputs[0], b))
        if b.op is not None and b.op.name == "neg":
            return apply("neg", apply("mul", a, b.inputs[0]))
        for x, y in ((a, b), (b, a)):  # x * (1 / c) → x / c
            if y.op is not None and y.op.name == "div" and uniform_constant(y.inputs[0]) == 1:
                quotient = apply("div", x, y.inputs[1])
                if _same_shape(quotient.shape, shape):  # the 1 may have carried a broadcast
                    return quotient
    if name == "div":
        if consts[1] == 1 and _same_shape(inputs[0].shape, shape):
            return inputs[0]
        x = inputs[0]
        divisor = consts[1]
        finite_divisor = divisor is not None and divisor.is_zero is False and divisor.is_finite is True
        if finite_divisor and x.op is not None and x.op.name == "mul" and _same_shape(x.shape, shape):
            inner = uniform_constant(x.inputs[0])
            if inner is not None and not x.inputs[0].shape:  # (c y) / n → (c/n) y
                return _collect(inner / consts[1], x.inputs[1], shape)
        if consts[0] == 0 and not exact:
            return _fill(sympy.S.Zero, shape)
    if name == "add":
        a, b = inputs
        if not exact and any(t.op is not None and t.op.name == "where" for t in inputs):
            written = _written_as_product(apply(name, *inputs, **attrs))
            if written is not None:
                return written
        if a is b:
            return _collect(sympy.Integer(2), a, shape)
        factored = None if exact else _factor_matmul(a, b, shape)
        if factored is None:
            factored = _factor_scalar(a, b, shape, exact)
        if factored is not None:
            return factored
        if consts[0] == 0 and _same_shape(b.shape, shape):
            return b
        if consts[1] == 0 and _same_shape(a.shape, shape):
            return a
        if b.op is not None and b.op.name == "neg":
            return apply("sub", a, b.inputs[0])
        if a.op is not None and a.op.name == "neg":
            return apply("sub", b, a.inputs[0])
    if name == "sub":
        a, b = inputs
        if consts[1] == 0 and _same_shape(a.shape, shape):
            return a
        if consts[0] == 0 and _same_shape(b.shape, shape):
            return apply("neg", b)
        if b.op is not None and b.op.name == "neg":
            return apply("add", a, b.inputs[0])
    if name == "neg":
        (a,) = inputs
        if a.op is not None and a.op.name == "neg":
            return a.inputs[0]
        if consts[0] is not None:
            return _fill(-consts[0], shape)
    if name == "exp" and not exact and inputs[0].op is not None and inputs[0].op.name == "log_softmax":
        return apply("softmax", inputs[0].inputs[0], dim=inputs[0].attrs["dim"])  # log_softmax's VJP reads its output
    if name == "pow":
        if consts[1] == 1:
            return inputs[0]
        if consts[1] == 0:  # torch: x ** 0 is 1, even for nan and inf
            return _fill(sympy.S.One, shape)
    if name == "where":
        decided = _decided(inputs[0])
        if decided is not None:
            chosen = inputs[1] if decided else inputs[2]
            return chosen if _same_shape(chosen.shape, shape) else chosen.expand(*shape)
    if name in ("transpose", "permute"):
        return _simplify_layout(name, inputs[0], _as_permutation(name, attrs, len(shape)), exact)
    if name == "mean" and not attrs["dim"]:
        return inputs[0]
    if name in ("reshape", "expand") and _same_shape(inputs[0].shape, shape):
        return inputs[0]
    return None


def _fold_constants(name: str, inputs: list[Tensor], consts: list, attrs: dict, shape: tuple) -> Tensor | None:
    """An elementwise op on uniform constants is a uniform constant: ``3 - 1`` → ``2``."""
    op = lookup(name)
    if not inputs or any(c is None for c in consts) or op.scalar is None or op.has("comparison"):
        return None
    value = sympy.sympify(op.scalar(*consts, **attrs))
    if not (value.is_Number or is_size(value)):
        return None
    return _fill(value, shape)


def _unbroadcast_view(t: Tensor) -> Tensor | None:
    """``y`` when ``t`` is ``y.expand(...)`` or ``y[None]``, or a chain of them (views that broadcasting makes
    redundant); a scalar unsqueezed anywhere, as ``g[None][:, None]``, is one too."""
    inner = _one_broadcast_view(t)
    if inner is None:
        return None
    while (deeper := _one_broadcast_view(inner)) is not None:
        inner = deeper
    return inner


def _one_broadcast_view(t: Tensor) -> Tensor | None:
    if t.op is None:
        return None
    if t.op.name == "expand":
        return t.inputs[0]
    if t.op.name == "index":
        index = t.attrs["index"]
        unsqueezes_only = all(i is None or i == slice(None) or i is Ellipsis for i in index) and None in index
        if unsqueezes_only and all(d == 1 for d in t.inputs[0].shape):  # all sizes 1: any new axis broadcasts
            return t.inputs[0]
        leading = 0
        while leading < len(index) and index[leading] is None:
            leading += 1
        if leading and all(i == slice(None) or i is Ellipsis for i in index[leading:]):
            return t.inputs[0]
    return None


def _simplify_where(inputs: list[Tensor], consts: list, shape: tuple) -> Tensor | None:
    """``where(c, k, 0)`` with a finite number ``k`` and ``c`` the ones of an identity: ``k * I`` (no nan or
    infinity can meet the zeros, so the product is the select); a branch filled with one number: that number
    (the condition and the other branch carry the shape)."""
    condition, *branches = inputs
    if _is_identity_mask(condition) and consts[2] == 0 and consts[1] is not None and consts[1].is_finite:
        identity = condition.inputs[0]
        return identity if consts[1] == 1 else _collect(consts[1], identity, shape)
    kept = [
        b if b.op is None or not b.shape or value is None or not value.is_Number else _scalar(value, b.dtype)
        for b, value in zip(branches, consts[1:])
    ]
    if all(k is b for k, b in zip(kept, branches)):
        return None
    result = apply("where", condition, *kept)
    return result if _same_shape(result.shape, shape) else None


def _is_identity_mask(t: Tensor) -> bool:
    """``eye(n) == 1`` (or a block of an identity, as the trace law of a non-square matrix builds)."""
    if t.op is None or t.op.name != "eq" or uniform_constant(t.inputs[1]) != 1:
        return False
    matrix = t.inputs[0]
    if matrix.op is not None and matrix.op.name == "index":
        matrix = matrix.inputs[0]
    return matrix.op is not None and matrix.op.name == "eye"


def _scalar(value: sympy.Expr, dtype: str) -> Tensor:
    return constant(float(value) if is_floating(dtype) else int(value), dtype=dtype, python_scalar=True)


def _strip_broadcasts(inputs: list[Tensor], shape: tuple) -> list[Tensor] | None:
    """Drop explicit broadcasts from the operands of a broadcasting op when the result shape stays the same."""
    changed, current = False, list(inputs)
    for position, t in enumerate(current):
        inner = _unbroadcast_view(t)
        if inner is None:
            continue
        trial = current[:position] + [inner] + current[position + 1 :]
        try:
            result = trial[0].shape
            for other in trial[1:]:
                result = broadcast_shapes(result, other.shape)
        except Exception:
            continue
        if _same_shape(result, shape):
            current, changed = trial, True
    return current if changed else None


def _hoist_broadcast(name: str, inputs: list[Tensor], attrs: dict, shape: tuple) -> Tensor | None:
    """``f(x.expand(s), c)`` with scalars ``c`` → ``f(x, c).expand(s)``: work on the small tensor, then
    let the consumer's broadcasting (or one expand) make it big. A scalar gradient stays a scalar."""
    views = [i for i, t in enumerate(inputs) if t.shape and _unbroadcast_view(t) is not None]
    if len(views) != 1 or any(t.shape for i, t in enumerate(inputs) if i != views[0]):
        return None
    position = views[0]
    inner = _unbroadcast_view(inputs[position])
    small = apply(name, *(inner if i == position else t for i, t in enumerate(inputs)), **attrs)
    return small if _same_shape(small.shape, shape) else small.expand(*shape)


def _scaled(t: Tensor) -> tuple[sympy.Expr, Tensor]:
    """``(c, x)`` with ``t == c * x`` for a scalar constant ``c`` (1 when there is none)."""
    if t.op is not None:
        if t.op.name == "mul" and not t.inputs[0].shape and uniform_constant(t.inputs[0]) is not None:
            return uniform_constant(t.inputs[0]), t.inputs[1]
        if t.op.name == "div" and not t.inputs[1].shape and uniform_constant(t.inputs[1]) is not None:
            return 1 / uniform_constant(t.inputs[1]), t.inputs[0]
        if t.op.name == "neg":
            return sympy.S.NegativeOne, t.inputs[0]
    return sympy.S.One, t


def _factor_scalar(a: Tensor, b: Tensor, shape: tuple, exact: bool = False) -> Tensor | None:
    """``c x + c y`` → ``c (x + y)`` and ``-c x + c y`` → ``c (y - x)`` (with ``exact``, only for a finite number
    ``c``: a size ratio such as 1/n is infinite at n = 0, and ``inf·0 + inf·1`` is nan where ``inf·1`` is not)."""
    (fa, xa), (fb, xb) = _scaled(a), _scaled(b)
    if fa == 1 and fb == 1:
        return None
    if exact and not all(f.is_Number and f.is_finite for f in (fa, fb)):
        return None
    if sympy.simplify(fa - fb) == 0:
        return _collect(fa, apply("add", xa, xb), shape)
    if sympy.simplify(fa + fb) == 0:
        return _collect(fb, apply("sub", xb, xa), shape)
    return None


def _written_as_product(node: Tensor) -> Tensor | None:
    """The cross-entropy gradient ``where(one_hot(y) == 1, -s, 0) + softmax(z) * s`` as a person writes it,
    ``(softmax(z) - one_hot(y)) * s`` (at an infinite s the two differ at the targets: nan against -inf)."""
    match = cross_entropy_gradient(node)
    if match is not None:
        z, y, scale = match
        return apply("mul", _softmax_minus_one_hot(z, y), scale)
    numeric = numeric_cross_entropy_gradient(node)
    if numeric is not None:
        z, y, factor = numeric
        return _collect(factor, _softmax_minus_one_hot(z, y), node.shape)
    return None


def _softmax_minus_one_hot(z: Tensor, y: Tensor) -> Tensor:
    return apply("sub", apply("softmax", z, dim=1), apply("one_hot", y, num_classes=z.shape[1]))


def _is_unsqueeze(t: Tensor, index: tuple) -> bool:
    return t.op is not None and t.op.name == "index" and t.attrs["index"] == index


def _simplify_index(x: Tensor, index: tuple, shape: tuple) -> Tensor | None:
    """``(A @ v[:, None])[..., 0]`` → ``A @ v``; ``x.sum(d, keepdim=True)`` indexed at 0 on ``d`` → ``x.sum(d)``."""
    if x.op is not None and x.op.name in ("matmul", "mm"):
        p, q = x.inputs
        last = index == (Ellipsis, 0) or (len(x.shape) == 2 and index == (slice(None), 0))
        if last and _is_unsqueeze(q, (slice(None), None)) and len(q.inputs[0].shape) == 1:
            return apply("matmul", p, q.inputs[0])
        if index == (0,) and _is_unsqueeze(p, (None,)) and len(p.inputs[0].shape) == 1 and len(q.shape) == 2:
            return apply("matmul", p.inputs[0], q)
    if x.op is not None and x.op.name == "sum" and x.attrs["keepdim"] and len(x.attrs["dim"]) == 1:
        (axis,) = x.attrs["dim"]
        ndim = len(x.shape)
        expected = tuple(0 if i == axis else slice(None) for i in range(ndim))
        shortest = expected[: axis + 1]
        if index in (expected, shortest) or (axis == ndim - 1 and index == (Ellipsis, 0)):
            return x.inputs[0].sum(dim=axis)
    return None


def _decided(condition: Tensor) -> bool | None:
    """The truth of a condition that is the same everywhere (``1 == 0``), else None."""
    value = uniform_constant(condition)
    if value is None and condition.op is not None and condition.op.has("comparison") and condition.inputs:
        consts = [uniform_constant(t) for t in condition.inputs]
        if len(consts) == 2 and all(c is not None and c.is_Number for c in consts):
            value = condition.op.scalar(*consts)
    if value is None:
        return None
    value = sympy.sympify(value)
    if isinstance(value, sympy.logic.boolalg.BooleanAtom):
        return bool(value)
    return bool(value) if value.is_Number else None


def _sum_of_diagonal(x: Tensor, attrs: dict) -> Tensor | None:
    """``(eye(n) * u).sum(1)`` → ``u``: summing a row of a diagonal picks its one entry."""
    if x.op is None or x.op.name != "mul" or len(x.shape) != 2 or len(attrs["dim"]) != 1:
        return None
    (axis,) = attrs["dim"]
    for eye, u in (x.inputs, tuple(reversed(x.inputs))):
        if eye.op is None or eye.op.name != "eye" or not _same_shape(eye.shape, x.shape):
            continue
        n = eye.shape[0]
        if len(u.shape) == 1 and same_dim(u.shape[0], n):
            vector = u
        elif len(u.shape) == 2 and (_same_shape(u.shape, (1, n)) or _same_shape(u.shape, (n, 1))):
            vector = u.reshape(n)
        else:
            continue
        if not attrs["keepdim"]:
            return vector
        return vector[:, None] if axis == 1 else vector[None, :]
    return None


def _simplify_sum(x: Tensor, attrs: dict, shape: tuple, exact: bool) -> Tensor | None:
    """``(M * v[None, :]).sum(1)`` → ``M @ v`` and ``(M * u[:, None]).sum(0)`` → ``u @ M``."""
    if not attrs["dim"]:
        return x
    value = uniform_constant(x)
    if value is not None and value.is_finite is True:  # n copies of c add up to n c (an empty sum is 0 as well)
        return _fill(value * count(x.shape, attrs["dim"]), shape)
    picked = None if exact else _sum_of_diagonal(x, attrs)  # the identity's zeros times an infinity are nan
    if picked is not None:
        return picked
    everything = len(attrs["dim"]) == len(x.shape)
    if everything and x.op is not None and x.op.name == "index_backward":  # the scattered zeros add nothing
        total = x.inputs[0].sum() if x.inputs[0].shape else x.inputs[0]
        return total.reshape(*shape) if shape else total
    if attrs["keepdim"] or x.op is None or x.op.name != "mul" or len(x.shape) != 2 or len(attrs["dim"]) != 1:
        return None
    (axis,) = attrs["dim"]
    for m, v in (x.inputs, tuple(reversed(x.inputs))):
        if len(m.shape) != 2 or not _same_shape(m.shape, x.shape):
            continue
        if axis == 1 and len(v.shape) == 1 and same_dim(v.shape[0], m.shape[1]):  # (M * v).sum(1) = M @ v
            return apply("matmul", m, v)
        if v.op is None or v.op.name != "index" or len(v.inputs[0].shape) != 1:
            continue
        vector = v.inputs[0]
        if axis == 1 and v.attrs["index"] in ((None, slice(None)), (None,)) and same_dim(vector.shape[0], m.shape[1]):
            return apply("matmul", m, vector)
        if axis == 0 and v.attrs["index"] == (slice(None), None) and same_dim(vector.shape[0], m.shape[0]):
            return apply("matmul", vector, m)
    return None


def _simplify_matmul(inputs: list[Tensor], consts: list, shape: tuple, exact: bool, identities: bool) -> Tensor | None:
    """Products with constant or identity matrices simplify; an inner size of 1 is an outer product."""
    a, b = inputs
    if len(a.shape) < 2 or len(b.shape) < 2:
        return None
    without = identity_product(a, b, shape) if identities else None
    if without is not None:
        return without
    if len(a.shape) == 2 and len(b.shape) == 2 and a.shape[1] == 1 and consts[0] is None and consts[1] is None:
        return apply("mul", a, b)
    for factor, other, summed in ((consts[0], b, -2), (consts[1], a, -1)):
        if factor is None or (exact and not (factor.is_Number and factor.is_finite and factor.is_zero is False)):
            continue
        if factor == 0:
            return _fill(sympy.S.Zero, shape)
        inner = a.shape[-1]
        if inner == 1:  # an outer product with ones is a broadcast
            reduced = other
        else:
            reduced = other.sum(dim=len(other.shape) + summed, keepdim=True)
        scaled = reduced if factor == 1 else _collect(factor, reduced, reduced.shape)
        return scaled if _same_shape(scaled.shape, shape) else scaled.expand(*shape)
    return None


def _factor_matmul(a: Tensor, b: Tensor, shape: tuple) -> Tensor | None:
    """``P @ x + Q @ x`` → ``(P + Q) @ x``, and the same for a common left factor."""
    if a.op is None or b.op is None or a.op.name != "matmul" or b.op.name != "matmul":
        return None
    (p, x), (q, y) = a.inputs, b.inputs
    if x is y and _same_shape(p.shape, q.shape):
        if is_matrix_transpose(p) and p.inputs[0] is q:
            p, q = q, p  # A + A.T, as the Hessian reads: the matrix before its transpose
        return apply("matmul", apply("add", p, q), x)
    if p is q and _same_shape(x.shape, y.shape):
        return apply("matmul", p, apply("add", x, y))
    return None


def _collect(factor: sympy.Expr, x: Tensor, shape: tuple) -> Tensor:
    """``factor * x`` with scalar factors already on ``x`` multiplied in."""
    if x.op is not None and x.op.name == "mul":
        inner = uniform_constant(x.inputs[0])
        if inner is not None and not x.inputs[0].shape:
            factor, x = factor * inner, x.inputs[1]
    if x.op is not None and x.op.name == "neg":
        factor, x = -factor, x.inputs[0]
    if factor == 1 and _same_shape(x.shape, shape):
        return x
    if factor == -1 and _same_shape(x.shape, shape):
        return apply("neg", x)
    if factor.is_Rational and factor.p == 1 and factor.q != 1:  # (1/4) x reads better as x / 4
        return apply("div", x, _fill(sympy.Integer(factor.q), ()))
    if not factor.is_Number and factor.is_number is not None and sympy.fraction(factor)[0] == 1:
        return apply("div", x, _fill(sympy.fraction(factor)[1], ()))
    return apply("mul", _fill(factor, ()), x)


def _as_permutation(name: str, attrs: dict, ndim: int) -> tuple[int, ...]:
    if name == "permute":
        return tuple(attrs["dims"])
    order = list(range(ndim))
    order[attrs["dim0"]], order[attrs["dim1"]] = order[attrs["dim1"]], order[attrs["dim0"]]
    return tuple(order)


def _simplify_layout(name: str, x: Tensor, order: tuple[int, ...], exact: bool = False) -> Tensor | None:
    """Compose stacked transposes/permutes, drop the identity, and write a swap of two dims as a transpose.

    ``(P Q)ᵀ`` becomes ``Qᵀ Pᵀ`` in laws to read, not in code (``exact``): there the product may be a forward
    result the backward reuses, and a transposed view of it costs nothing."""
    if (
        len(order) == 2
        and order == (1, 0)
        and x.op is not None
        and x.op.name == "index"
        and len(x.inputs[0].shape) == 1
        and x.attrs["index"] in ((slice(None), None), (None, slice(None)), (None,))
    ):
        flipped = (slice(None), None) if x.attrs["index"] != (slice(None), None) else (None, slice(None))
        return x.inputs[0][flipped]  # a column's transpose is the row, and back
    if not exact and len(order) == 2 and order == (1, 0) and x.op is not None and x.op.name in ("matmul", "mm"):
        p, q = x.inputs
        if len(p.shape) == 2 and len(q.shape) == 2 and (is_matrix_transpose(p) or is_matrix_transpose(q)):
            return apply("matmul", q.T, p.T)  # (P Q)ᵀ = Qᵀ Pᵀ, worth it when a transpose cancels
    if x.op is not None and x.op.name in ("transpose", "permute"):
        inner = _as_permutation(x.op.name, x.attrs, len(order))
        return _layout(x.inputs[0], tuple(inner[i] for i in order))
    if not exact and x.op is not None and x.op.name in ("mul", "div") and not x.inputs[1].shape:
        cancelled = _simplify_layout(name, x.inputs[0], order, exact) if _kept_sum_of_layout(x.inputs[0]) else None
        if cancelled is not None:  # (Aᵀ.sum(1, keepdim=True) / n)ᵀ = A.sum(0, keepdim=True) / n
            return apply(x.op.name, cancelled, x.inputs[1])
    if x.op is not None and x.op.name in ("sum", "mean") and x.attrs["keepdim"]:
        moved = x.inputs[0]
        if moved.op is not None and moved.op.name in ("transpose", "permute"):
            inner = _as_permutation(moved.op.name, moved.attrs, len(order))
            if all(inner[order[j]] == j for j in range(len(order))):  # (Aᵀ summed, keeping dims)ᵀ: A summed
                dims = tuple(sorted(inner[d] for d in x.attrs["dim"]))
                return apply(x.op.name, moved.inputs[0], dim=dims, keepdim=True)
    if order == tuple(range(len(order))):
        return x
    if name == "permute" and sum(1 for i, d in enumerate(order) if d != i) == 2:
        return _layout(x, order)
    return None


def _kept_sum_of_layout(x: Tensor) -> bool:
    """Whether ``x`` sums (or averages) a transposed tensor, keeping its dims: a transpose of it may cancel."""
    inner = x.inputs[0] if x.op is not None and x.op.name in ("sum", "mean") and x.attrs["keepdim"] else None
    return inner is not None and inner.op is not None and inner.op.name in ("transpose", "permute")


def _layout(x: Tensor, order: tuple[int, ...]) -> Tensor:
    """``x`` permuted by ``order``, as a transpose when two dims swap (what people write: ``X.T``)."""
    if order == tuple(range(len(order))):
        return x
    moved = [i for i, d in enumerate(order) if d != i]
    if len(moved) == 2:
        return x.transpose(*moved)
    return x.permute(*order)


def _key(t: Tensor) -> tuple:
    if t.op is None:
        value = uniform_constant(t)
        if value is not None and t.given_name is None:
            return ("constant", str(value), tuple(map(str, t.shape)), t.is_python_scalar)
        return ("leaf", id(t))
    return (t.op.name, repr(sorted(t.attrs.items())), tuple(id(i) for i in t.inputs))


def simplify(
    results: Sequence[Tensor],
    *,
    context: Sequence[Tensor] = (),
    fused: bool = True,
    exact: bool = False,
    keep_identities: bool | None = None,
    log: list[Rewrite] | None = None,
) -> list[Tensor]:
    """Simplified, hash-consed versions of ``results``; nodes equal to ones in ``context`` are reused.

    ``exact`` keeps every value IEEE arithmetic gives, at infinities and nans too (what emitted code
    needs to match torch everywhere): no products with zero dropped, nothing cancelled by SymPy; products with
    an identity stay too unless ``keep_identities=False`` (a Hessian's basis, see :mod:`.identities`). Each
    rewrite applied is appended to ``log`` when one is given; the rest is hash-consing, which merges only
    nodes with the same op, attributes and inputs.
    """
    identities = not (exact if keep_identities is None else keep_identities)
    memo: dict[tuple, Tensor] = {}
    rebuilt: dict[int, Tensor] = {}
    for root in context:  # forward nodes keep their identity, but equal ones (sigmoid(z) written twice) merge
        for node in topological(root):
            if id(node) in rebuilt:
                continue
            if node.op is None:
                rebuilt[id(node)] = memo.setdefault(_key(node), node)
                continue
            candidate = with_inputs(node, [rebuilt[id(i)] for i in node.inputs])
            rebuilt[id(node)] = memo.setdefault(_key(candidate), candidate)
            memo.setdefault(_key(node), rebuilt[id(node)])
    for root in results:
        for node in topological(root):
            tick("simplifying the law")
            if id(node) in rebuilt:
                continue
            rebuilt[id(node)] = _canonical(node, rebuilt, memo, exact=exact, identities=identities, log=log)
    simplified = [rebuilt[id(r)] for r in results]
    if not fused or exact:
        return simplified
    # arithmetic regions cancelled and factored by SymPy, then the rules and sharing once more
    return simplify(fuse(simplified, log=log), context=context, fused=False, log=log)


MAX_REWRITE_DEPTH = 40  # rules shrink or reorder expressions; the bound is a guard, not a tuning knob


def _canonical(
    node: Tensor,
    rebuilt: dict[int, Tensor],
    memo: dict[tuple, Tensor],
    depth: int = 0,
    *,
    exact: bool = False,
    identities: bool = True,
    log: list[Rewrite] | None = None,
) -> Tensor:
    if node.op is None:
        return memo.setdefault(_key(node), node)
    inputs = [rebuilt[id(i)] for i in node.inputs]
    replacement = None
    if depth < MAX_REWRITE_DEPTH:
        replacement = _rewrite(node.op.name, inputs, node.attrs, node.shape, exact, identities)
    if replacement is not None:
        if log is not None:
            log.append(Rewrite(with_inputs(node, inputs), replacement, _existing(replacement, inputs, memo)))
        return _canonical_tree(replacement, memo, depth + 1, exact=exact, identities=identities, log=log)
    candidate = with_inputs(node, inputs)
    return memo.setdefault(_key(candidate), candidate)


def _canonical_tree(
    t: Tensor,
    memo: dict[tuple, Tensor],
    depth: int = 0,
    *,
    exact: bool = False,
    identities: bool = True,
    log: list[Rewrite] | None = None,
) -> Tensor:
    """Canonicalise a freshly built replacement (its inputs may be new nodes too). The walk stops at nodes already
    canonical (or part of the forward graph), which stay as they are: a rewrite costs its new nodes, not the
    graph below them (a walk of the whole graph per rewrite made a deep network's laws quadratic in its depth)."""
    local: dict[int, Tensor] = {}
    stack: list[tuple[Tensor, bool]] = [(t, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in local:
            continue
        if ready:
            local[id(node)] = _canonical(node, local, memo, depth, exact=exact, identities=identities, log=log)
        elif memo.get(_key(node)) is node:
            local[id(node)] = node
        else:
            stack.append((node, True))
            stack.extend((part, False) for part in reversed(node.inputs) if id(part) not in local)
    return local[id(t)]


def _existing(replacement: Tensor, inputs: Sequence[Tensor], memo: dict[tuple, Tensor]) -> frozenset[int]:
    """The ids of the nodes a rewrite's replacement reads that existed before it: its inputs, canonical nodes and
    leaves, where a walk down from the replacement stops."""
    known = {id(i) for i in inputs}
    found: set[int] = set()
    seen: set[int] = set()
    stack = [replacement]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op is None or id(node) in known or memo.get(_key(node)) is node:
            found.add(id(node))
        else:
            stack.extend(node.inputs)
    return frozenset(found)


def op_count(t: Tensor) -> int:
    """Distinct operations in the expression DAG (shared subexpressions count once)."""
    return sum(1 for node in topological(t) if node.op is not None and node.op.name != "full")
