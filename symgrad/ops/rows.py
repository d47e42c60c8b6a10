"""Builders for the common kinds of rows: elementwise functions of one tensor, and broadcasting ones of two.

An elementwise row needs only its SymPy scalar function and its spellings: the
meaning applies the function entry by entry, and the VJP is ``g * f'(x)`` with
``f'`` from SymPy, turned back into tensor ops (see :mod:`symgrad.ops.calculus`).

>>> import symgrad.ops
>>> from symgrad.core import OPS
>>> OPS["tanh"].latex, OPS["add"].has("broadcasting")
('\\\\tanh\\\\left({0}\\\\right)', True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import sympy

from ..core.arrays import as_number, elementwise
from ..core.dims import Shape, broadcast_shapes
from ..core.registry import Op, register, register_spelling
from ..core.tensor import apply
from .calculus import elementwise_derivative, elementwise_vjp

# SymPy functions whose eval leaves a plain product of symbols alone (tanh(a*b) stays tanh(a*b)), but only after
# asking whether it is a multiple of i·π, which costs most of the time of building a large tensor's entries
_EVAL_LEAVES_PLAIN_PRODUCTS = frozenset({sympy.tanh, sympy.exp, sympy.sin, sympy.cos})


def applied(scalar: Callable, t: Any, **params: Any) -> Any:
    """``scalar(t)``, skipping SymPy's eval where it provably changes nothing (see above)."""
    if scalar in _EVAL_LEAVES_PLAIN_PRODUCTS and not params and _plain_product(t):
        return scalar(t, evaluate=False)
    return scalar(t, **params)


def _plain_product(t: Any) -> bool:
    """A symbol, or a product of symbols and positive numbers: nothing for an eval to extract."""
    if isinstance(t, sympy.Symbol):
        return True
    return isinstance(t, sympy.Mul) and all(
        isinstance(a, sympy.Symbol) or (a.is_Number and a.is_positive) for a in t.args
    )


def same_shape(shape: Shape, **_: Any) -> Shape:
    """The shape rule of ops whose output is shaped like their (first) input."""
    return shape


def unary(
    name: str,
    scalar: Callable,
    latex: str,
    *,
    grad_fn: str | None = None,
    torch_fn: Callable | None = None,
    code: str | None = None,
    vjp: Callable | None = None,
    float_result: bool = False,
    tags: Iterable[str] = (),
    float64: Callable | None = None,
    differentiable: bool = True,
    spellings: Iterable[str] = (),
) -> Op:
    """Register a row for an elementwise function of one tensor; its VJP is ``g * f'(x)`` with f' from SymPy.
    ``spellings`` are torch's names for it (``"torch.special.i0e"``, ``"Tensor.acos"``), each taking the tensor
    and the row's attributes as keywords; a function torch does not differentiate has ``differentiable=False``."""
    if not differentiable:
        vjp = vjp or (lambda g, out, a, **params: (None,))
    row = register(
        Op(
            name=name,
            shape=same_shape,
            meaning=lambda a, **params: elementwise(lambda t: applied(scalar, t, **params), a),
            torch=torch_fn or (lambda torch, a: getattr(torch, name)(a)),
            code=code or f"torch.{name}({{0}})",
            latex=latex,
            grad_fn=grad_fn or f"{name.capitalize()}Backward0",
            saves=differentiable,
            scalar=scalar,
            vjp=vjp or (lambda g, out, a, **params: (elementwise_vjp(g, scalar, a, out, **params),)),
            jvp=None if vjp is not None else _elementwise_jvp(scalar),
            differentiable=differentiable,
            float_result=float_result,
            tags=frozenset(tags),
            float64=float64,
            batch="pointwise",
        )
    )
    spell(row, spellings)
    return row


def spell(row: Op, spellings: Iterable[str]) -> None:
    """Register torch's names for ``row``: each builds the row's node from torch's arguments (the tensors, then the
    row's attributes by keyword)."""
    for path in spellings:
        register_spelling(path, _builder(row.name, path))


def _builder(name: str, path: str) -> Callable:
    def build(*tensors: Any, **attrs: Any) -> Any:
        return apply(name, *tensors, **attrs)

    build.__name__ = build.__qualname__ = path.rpartition(".")[2]
    build.__doc__ = f"``{path}``: the op ``{name}`` of symgrad's table."
    return build


def _elementwise_jvp(scalar: Callable) -> Callable:
    """f'(x) · t, with f' from SymPy (the same derivative the VJP multiplies by g)."""
    return lambda tangents, out, a, **params: tangents[0] * elementwise_derivative(scalar, a, out, **params)


def _promoting_bools(scalar: Callable, name: str) -> Callable:
    """The scalar function with a boolean entry next to a number read as 1 or 0, as torch promotes a bool
    tensor in ``(x > 0) * x``; two booleans add as ``or`` and multiply as ``and``, as torch's bool tensors."""

    def promoted(a: Any, b: Any) -> Any:
        a_number, b_number = as_number(a), as_number(b)
        a_bool, b_bool = a_number is not a, b_number is not b
        if a_bool and b_bool and name in _LOGICAL:
            return _LOGICAL[name](a, b)
        if a_bool or b_bool:
            a, b = a_number, b_number
        return scalar(a, b)

    return promoted


_LOGICAL = {"add": sympy.Or, "mul": sympy.And, "maximum": sympy.Or, "minimum": sympy.And}


def binary(
    name: str,
    scalar: Callable,
    torch_fn: Callable,
    code: str,
    latex: str,
    grad_fn: str | Callable,
    *,
    saves: bool,
    precedence: int,
    vjp: Callable | None = None,
    jvp: Callable | None = None,
    differentiable: bool = True,
    float_result: bool = False,
    tags: Iterable[str] = (),
    float64: Callable | None = None,
    spellings: Iterable[str] = (),
) -> Op:
    """Register a row for a broadcasting elementwise function of two tensors (forward mode transposes the VJP
    rule unless ``jvp`` is given, which a rule that selects on an input's value needs); ``spellings`` as for
    :func:`unary`."""
    row = register(
        Op(
            name=name,
            shape=lambda a, b: broadcast_shapes(a, b),
            meaning=lambda a, b: elementwise(_promoting_bools(scalar, name), a, b),
            torch=torch_fn,
            code=code,
            latex=latex,
            grad_fn=grad_fn,
            saves=saves,
            scalar=scalar,
            precedence=precedence,
            vjp=vjp,
            jvp=jvp,
            differentiable=differentiable,
            float_result=float_result,
            tags=frozenset({"broadcasting", *tags}),
            float64=float64,
            batch="broadcast",
        )
    )
    spell(row, spellings)
    return row


def scalar_kinds(inputs: tuple) -> tuple[bool, ...]:
    """Which inputs are Python scalars (torch names some backward nodes after them: ``RsubBackward1``)."""
    return tuple(getattr(t, "is_python_scalar", False) for t in inputs)
