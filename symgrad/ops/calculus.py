"""Building blocks of VJP rules: undoing broadcasts and reductions, and scalar derivatives as tensor ops.

The derivative of an elementwise function comes from SymPy and is turned back
into tensor operations, so ``tanh`` gives ``1 - torch.tanh(x) ** 2`` (and the
forward result is reused: ``1 - out ** 2``).

>>> import symgrad.ops
>>> from symgrad.core import symbols
>>> x = symbols("x", (2, 3))
>>> elementwise_derivative(sympy.tanh, x).name
'1 - torch.tanh(x) ** 2'
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy

from ..core.dims import Shape, same_dim
from ..core.errors import UnsupportedError
from ..core.graph import is_size
from ..core.registry import OPS
from ..core.tensor import Tensor, apply, constant

T = sympy.Symbol("t", real=True)


def unbroadcast(g: Tensor, shape: Shape) -> Tensor:
    """Sum ``g`` over the dimensions that broadcasting added to a tensor of ``shape``."""
    lead = len(g.shape) - len(shape)
    if lead == 0 and all(same_dim(a, b) for a, b in zip(g.shape, shape)):
        return g
    kept = tuple(lead + i for i, d in enumerate(shape) if d == 1 and not (g.shape[lead + i] == 1))
    if kept and lead > 0:  # one sum, as torch's sum_to_size: in low precision, two would round twice
        return g.sum(dim=(*range(lead), *kept)).reshape(*shape)
    if kept:
        return g.sum(dim=kept, keepdim=True)
    return g.sum(dim=tuple(range(lead))) if lead > 0 else g


def expand_back(g: Tensor, shape: Shape, dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """Undo a reduction over ``dim``: put the reduced dims back (size 1) and expand to ``shape``."""
    out = g
    if not keepdim:
        for axis in sorted(d for d in dim if d < len(shape)):  # a 0-d tensor reduced over dim 0 has no axis
            out = out.unsqueeze(axis)
    return out.expand(*shape) if tuple(out.shape) != tuple(shape) else out


def zero_gradient(x: Tensor) -> Tensor:
    """The gradient of a piecewise-constant function (sign, floor, round): zeros shaped like ``x``.

    torch's rule is ``zeros_like(grad)``, not "no gradient": the zeros flow on and meet the
    other factors of the chain rule, so a nan or an infinity upstream still makes ``0 * nan = nan``.
    """
    return apply("full", shape=x.shape, value=0)


def _function_ops() -> dict:
    table = {op.scalar: name for name, op in OPS.items() if isinstance(op.scalar, type)}
    table.setdefault(sympy.sign, "sign")  # SymPy's own sign (from Abs') is the sign op, whose gradient is torch's 0
    return table


def to_tensor(expr: sympy.Expr, bindings: dict[sympy.Symbol, Tensor], like: Tensor) -> Tensor:
    """A scalar SymPy expression in the bound symbols, as tensor operations on their tensors."""
    if expr in bindings:
        return bindings[expr]
    if expr.is_Number:
        value = int(expr) if expr.is_Integer else (float(expr) if expr.is_Float else expr)
        return constant(value, dtype=like.dtype, python_scalar=True)
    if expr.is_number or is_size(expr):  # an exact constant such as sqrt(2)/sqrt(pi), or a size such as 1/n
        return Tensor(shape=(), entries=np.array(expr, dtype=object), dtype=like.dtype, is_python_scalar=True)
    if expr.is_Add:
        negatives = [a for a in expr.args if a.could_extract_minus_sign()]
        positives = [a for a in expr.args if not a.could_extract_minus_sign()]
        out = _fold(
            [to_tensor(a, bindings, like) for a in positives] or [constant(0, python_scalar=True)],
            lambda a, b: a + b,
        )
        for term in negatives:
            out = out - to_tensor(-term, bindings, like)
        return out
    if expr.is_Mul:
        numer, denom = expr.as_numer_denom()
        if denom != 1:
            return to_tensor(numer, bindings, like) / to_tensor(denom, bindings, like)
        coeff, rest = expr.as_coeff_Mul()
        if coeff == -1:
            return -to_tensor(rest, bindings, like)
        return _fold([to_tensor(a, bindings, like) for a in expr.args], lambda a, b: a * b)
    if expr.is_Pow:
        base, exponent = expr.args
        if exponent == sympy.S.Half:
            return apply("sqrt", to_tensor(base, bindings, like))
        if exponent == -1:
            return 1 / to_tensor(base, bindings, like)
        if exponent.is_Number and exponent < 0:
            return 1 / to_tensor(base**-exponent, bindings, like)
        return to_tensor(base, bindings, like) ** to_tensor(exponent, bindings, like)
    name = _function_ops().get(expr.func)
    if name is not None:
        return apply(name, *(to_tensor(a, bindings, like) for a in expr.args))
    as_op = getattr(expr, "as_op", None)  # a function whose row takes some arguments as attributes (polygamma's n)
    if as_op is not None and as_op() is not None:
        name, tensors, attrs = as_op()
        return apply(name, *(to_tensor(a, bindings, like) for a in tensors), **attrs)
    if isinstance(expr, sympy.Heaviside):
        at_zero = expr.args[1] if len(expr.args) > 1 else sympy.S.Half
        return apply("step", to_tensor(expr.args[0], bindings, like), at_zero=at_zero)
    if isinstance(expr, sympy.Piecewise):
        return _piecewise(expr, bindings, like)
    if isinstance(expr, sympy.core.relational.Relational) and type(expr) in _RELATIONS:
        left, right = (to_tensor(a, bindings, like) for a in expr.args)
        return apply(_RELATIONS[type(expr)], left, right)
    free = sorted(expr.free_symbols & bindings.keys(), key=str)
    if len(free) == 1:  # anything else SymPy knows: an elementwise map of that one tensor
        (symbol,) = free
        return apply("map", bindings[symbol], fn=sympy.Lambda(symbol, expr), label="d")
    raise UnsupportedError(f"cannot express {expr} with tensor operations")


def _piecewise(expr: sympy.Piecewise, bindings: dict, like: Tensor) -> Tensor:
    (value, condition), *rest = expr.args
    if condition == sympy.true:
        return to_tensor(value, bindings, like)
    otherwise = to_tensor(sympy.Piecewise(*rest), bindings, like) if rest else constant(0, python_scalar=True)
    return _where(condition, to_tensor(value, bindings, like), otherwise, bindings, like)


def _where(condition, value: Tensor, otherwise: Tensor, bindings: dict, like: Tensor) -> Tensor:
    """``where`` for a SymPy condition; ``Or`` and ``And`` become nested ``where`` (no boolean ops needed)."""
    if isinstance(condition, sympy.Or):
        first, *others = condition.args
        return _where(first, value, _where(sympy.Or(*others), value, otherwise, bindings, like), bindings, like)
    if isinstance(condition, sympy.And):
        first, *others = condition.args
        return _where(first, _where(sympy.And(*others), value, otherwise, bindings, like), otherwise, bindings, like)
    return apply("where", to_tensor(condition, bindings, like), value, otherwise)


_RELATIONS = {
    sympy.StrictGreaterThan: "gt",
    sympy.GreaterThan: "ge",
    sympy.StrictLessThan: "lt",
    sympy.LessThan: "le",
    sympy.Equality: "eq",
}


def _fold(items: list, combine: Callable) -> Tensor:
    out = items[0]
    for item in items[1:]:
        out = combine(out, item)
    return out


def _derivative_expression(
    scalar: Callable | sympy.Lambda, x: Tensor, out: Tensor | None, params: dict
) -> tuple[sympy.Expr, dict[sympy.Symbol, Tensor]]:
    """f'(t) from SymPy, with the tensors its symbols stand for (``out`` where f(t) itself appears)."""
    if isinstance(scalar, sympy.Lambda):
        (variable,) = scalar.variables
        value = scalar.expr.xreplace({variable: T})
    else:
        value = sympy.sympify(scalar(T, **params))
    derivative = sympy.diff(value, T)
    marker = sympy.Symbol("forward_result", real=True)
    bindings = {T: x}
    if out is not None and value.has(T) and not value.is_Symbol:
        derivative = derivative.subs(value, marker)
        bindings[marker] = out
    return derivative, bindings


def elementwise_derivative(scalar: Callable | sympy.Lambda, x: Tensor, out: Tensor | None = None, **params) -> Tensor:
    """f'(x) as tensor ops, from SymPy; where f(x) itself appears, the forward result ``out`` is reused."""
    derivative, bindings = _derivative_expression(scalar, x, out, params)
    return to_tensor(derivative, bindings, x)


_GRAD = sympy.Symbol("grad_output", real=True)


def elementwise_vjp(
    g: Tensor, scalar: Callable | sympy.Lambda, x: Tensor, out: Tensor | None = None, **params
) -> Tensor:
    """g · f'(x); where f' is piecewise, g is multiplied into each piece and a piece that is 0 stays 0.

    torch's backward kernels of piecewise functions select (``threshold_backward`` is
    ``x <= 0 ? 0 : g``), so a nan or an infinite g never reaches a branch whose derivative is 0,
    where ``g * 0`` would be nan. ``relu'`` (a Heaviside step) is the piecewise ``0 if x <= 0 else 1``:
    a nan x passes g on, as torch's relu does.

    >>> import symgrad.ops
    >>> from symgrad.core import symbols
    >>> x, g = symbols("x", (2,)), symbols("g", (2,))
    >>> elementwise_vjp(g, symgrad.ops.functions.relu, x).name
    'torch.where(x <= 0, 0, g)'
    """
    derivative, bindings = _derivative_expression(scalar, x, out, params)
    return _times_grad(g, derivative, bindings, x)


def _times_grad(g: Tensor, derivative: sympy.Expr, bindings: dict, like: Tensor) -> Tensor:
    """g · derivative as tensor ops, g inside each piece of a piecewise derivative (see :func:`elementwise_vjp`)."""
    derivative = derivative.replace(
        lambda e: isinstance(e, sympy.Heaviside) and len(e.args) == 2 and e.args[1] == 0,
        lambda e: sympy.Piecewise((0, sympy.LessThan(e.args[0], 0)), (1, True)),
    )
    if not isinstance(derivative, sympy.Piecewise):
        return g * to_tensor(derivative, bindings, like)
    pieces = sympy.Piecewise(*[(_GRAD * value, condition) for value, condition in derivative.args], evaluate=False)
    return to_tensor(pieces, {**bindings, _GRAD: g}, like)


class NoDerivative:
    """What a VJP rule gives for an input torch has no derivative for (``x // y``, the first argument of
    ``igamma``): reverse mode refuses with ``message`` if, and only if, that input is differentiated."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"NoDerivative({self.message!r})"


_ARGUMENTS = (sympy.Symbol("a", real=True), sympy.Symbol("b", real=True))


def partial_vjp(scalar: Callable, undefined: tuple[int, ...] = ()) -> Callable:
    """The VJP rule of a broadcasting function of two tensors, ``scalar(a, b)``: g times each partial derivative
    from SymPy, as tensor ops, summed back to each input's shape (the forward result is reused where the function
    itself appears). torch defines no derivative by the inputs at ``undefined``: asking for one is refused, and a
    constant there gets none."""

    def vjp(g: Tensor, out: Tensor, *inputs: Tensor) -> tuple:
        value = sympy.sympify(scalar(*_ARGUMENTS))
        marker = sympy.Symbol("forward_result", real=True)
        bindings = {**dict(zip(_ARGUMENTS, inputs)), marker: out}
        grads = []
        for position, (mine, symbol) in enumerate(zip(inputs, _ARGUMENTS)):
            if position in undefined:
                grads.append(
                    NoDerivative(
                        f"torch does not differentiate {getattr(scalar, '__name__', 'this function')} by its "
                        f"{('first', 'second')[position]} argument (detach it, as torch requires)"
                    )
                )
                continue
            derivative = sympy.diff(value, symbol).subs(value, marker)
            if derivative == 0:  # torch's zeros_like (which flow on), not g·0, which is nan where g is infinite
                grads.append(zero_gradient(mine))
                continue
            grads.append(unbroadcast(_times_grad(g, derivative, bindings, mine), mine.shape))
        return tuple(grads)

    return vjp
