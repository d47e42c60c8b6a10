"""Making leaf tensors: with values, of symbols (possibly of symbolic shape), or from explicit formulas.

>>> import symgrad.ops  # the op table
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> w.sympy(), w.tolist()
([[w_0_0, w_0_1]], [[1.0, 2.0]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import sympy

from .arrays import numbers_only, object_array
from .dims import as_shape, format_shape, is_concrete
from .dtypes import is_floating
from .errors import AutogradError, UnsupportedError
from .tensor import Tensor, auto_name, check_name, constant


def _infer_dtype(arr: np.ndarray, dtype: str | None) -> str:
    if dtype is not None:
        return dtype
    flat = arr.reshape(-1)
    integer = all(isinstance(v, (int, np.integer)) or (isinstance(v, sympy.Basic) and v.is_Integer) for v in flat)
    return "int64" if flat.size and integer else "float32"


def tensor(
    data: Any, *, requires_grad: bool = False, name: str | None = None, dtype: Any = None, distinct: bool = False
) -> Tensor:
    """A leaf tensor with values: its formulas use its symbols, its numbers use ``data``.

    ``distinct=True`` gives the tensor symbols of its own, never equal to another tensor's even
    under the same name (for tensors symgrad makes, such as a grad_tensor).

    >>> tensor([[1.0, 2.0]], requires_grad=True, name="w").sympy()
    [[w_0_0, w_0_1]]
    """
    if isinstance(data, Tensor):
        data = data.tolist()
    if isinstance(data, np.ndarray) and data.dtype.kind == "f" and (dtype is None or is_floating(dtype_name(dtype))):
        # numbers given as an array stay an array (a model's parameters, which may be millions)
        kind = dtype_name(dtype) or "float32"
        out = Tensor(shape=data.shape, name=name, values=data.astype(np.float64), dtype=kind, distinct=distinct)
        return out.requires_grad_(True) if requires_grad else out
    raw = np.array(numbers_only(data), dtype=object)  # before SymPy, which has no -0.0
    kind = dtype_name(dtype) or _infer_dtype(raw, None)
    if not is_floating(kind):
        if requires_grad:
            raise AutogradError("Only Tensors of floating point and complex dtype can require gradients")
        # Integer tensors (class targets, indices) cannot be differentiated: they are named constants.
        values = object_array([sympy.Integer(int(v)) for v in raw.reshape(-1)], raw.shape)
        return Tensor(shape=values.shape, name=check_name(name) if name else None, entries=values, dtype=kind)
    # as torch holds them: a -0.0 keeps its sign (1 / x is -inf there), as the numbers ops compute do (core.ieee)
    values = np.array([_as_float(v) for v in raw.reshape(-1)], dtype=np.float64).reshape(raw.shape)
    out = Tensor(shape=values.shape, name=name, values=values, dtype=kind, distinct=distinct)
    if requires_grad:
        out.requires_grad_(True)
    return out


def deferred_tensor(
    shape: Sequence[int], values: Callable[[], np.ndarray], *, name: str, dtype: str, requires_grad: bool = False
) -> Tensor:
    """A leaf of a floating ``dtype`` whose float64 numbers ``values()`` makes when they are first asked for: a
    traced model's parameters, whose laws and emitted code never read them.

    >>> w = deferred_tensor((2,), lambda: np.array([1.0, 2.0]), name="w", dtype="float32")
    >>> w.sympy(), w.tolist()
    ([w_0, w_1], [1.0, 2.0])
    """
    out = Tensor(shape=tuple(int(n) for n in shape), name=name, values=values, dtype=dtype)
    return out.requires_grad_(True) if requires_grad else out


def _as_float(value: Any) -> float:
    """A number given as a tensor's value, as a float64 (SymPy's nan and infinities included)."""
    if isinstance(value, sympy.Basic):
        if value is sympy.nan:
            return math.nan
        if value in (sympy.oo, -sympy.oo):
            return math.inf if value is sympy.oo else -math.inf
    return float(value)


def dtype_name(dtype: Any) -> str | None:
    """``torch.float64``, ``"double"`` or ``"float64"`` as ``"float64"``; None stays None."""
    if dtype is None:
        return None
    text = str(dtype).replace("torch.", "")
    aliases = {"float": "float32", "double": "float64", "long": "int64", "int": "int32"}
    return aliases.get(text, text)


def symbols(
    name: str,
    shape: Any,
    *,
    requires_grad: bool = False,
    values: Any = None,
    dtype: str = "float32",
    classes: Any = None,
    distinct: bool = False,
) -> Tensor:
    """A leaf tensor of symbols, possibly with symbolic dimensions.

    Tensors of the same name share their symbols (``w_0_1`` in every graph), unless
    ``distinct=True``: then the symbols are the tensor's own (see :func:`tensor`).

    Integer tensors of class targets declare ``classes`` (their number of classes,
    e.g. a dimension ``C``) so that proofs can instantiate them with valid labels.

    >>> n = sympy.Symbol("n", integer=True, positive=True)
    >>> symbols("W", (2, n)).shape
    (2, n)
    """
    shape = as_shape(shape)
    arr = None
    if values is not None:
        given = np.array(numbers_only(values), dtype=object)
        arr = np.array([_as_float(v) for v in given.reshape(-1)], dtype=np.float64).reshape(given.shape)
    out = Tensor(
        shape=shape, name=check_name(name), values=arr, dtype=dtype_name(dtype) or "float32", distinct=distinct
    )
    out.classes = classes
    if requires_grad:
        out.requires_grad_(True)
    return out


def symbols_like(t: Tensor, name: str, *, values: Any = None, distinct: bool = False) -> Tensor:
    """Symbols shaped like ``t`` and of its dtype (a floating one), e.g. a symbolic grad_tensor ``v``."""
    dtype = t.dtype if is_floating(t.dtype) else "float32"
    return symbols(name, t.shape, values=values, distinct=distinct, dtype=dtype)


def formula(
    entries: np.ndarray | Callable[[], np.ndarray],
    *,
    sources: Sequence[Tensor],
    shape: tuple | None = None,
    name: str | None = None,
    dtype: str = "float32",
    numeric: Tensor | None = None,
) -> Tensor:
    """A tensor given by explicit entry formulas (gradients); ``sources`` supply the symbols' values.

    ``numeric``, when given, is a graph with the same value that torch would compute op by op
    (a gradient's backward graph): the numbers come from it, so that at singular points they
    follow torch's rules rather than the simplified formula's. Two different source tensors with
    the same name are refused, as in any expression. ``entries`` may be a function that builds them,
    with ``shape`` given: it runs only when the formulas are asked for (numbers alone don't need them).
    """
    return Tensor(
        shape=entries.shape if shape is None else shape,
        name=name or auto_name("f"),
        entries=entries,
        sources=tuple(sources),
        dtype=dtype,
        numeric=numeric,
    )


def fresh_name(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base1``, ``base2``, …: a name that none of ``taken`` has.

    >>> fresh_name("v", ["v", "v1", "w"])
    'v2'
    """
    taken = set(taken)
    name, counter = base, 0
    while name in taken:
        counter += 1
        name = f"{base}{counter}"
    return name


def full_like(t: Tensor, value: float) -> Tensor:
    shape = t.shape if is_concrete(t.shape) else None
    if shape is None:
        raise UnsupportedError(f"full_like needs a concrete shape; {t.name} has shape {format_shape(t.shape)}")
    number = sympy.Integer(value) if float(value).is_integer() else sympy.Float(value)
    return constant(number, shape=shape, dtype=t.dtype)
