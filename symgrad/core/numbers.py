"""A tensor's numbers, computed node by node in IEEE float64, the way torch computes them.

Each op node builds its meaning on stand-in symbols for its inputs' values and evaluates
that in float64 (see :mod:`symgrad.core.ieee`): ``sqrt(-1)`` is ``nan`` and stays ``nan``
through a ``relu``; ``where`` passes what its branches hold. Integer and boolean inputs
(class targets, masks) stay exact. A formula tensor (a gradient) takes its numbers from its
``numeric_source`` graph when it has one, else from its formulas.

>>> import symgrad as sg
>>> x = sg.tensor([-1.0, 4.0], name="x")
>>> numbers_at([x.sqrt().relu()], {id(x): np.array([-1.0, 4.0])})[0].tolist()
[nan, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import sympy

from .arrays import object_array
from .dtypes import is_floating
from .graph import topological
from .ieee import as_sympy_number, float64_values, rounded_to
from .symbols import value_symbols

if TYPE_CHECKING:
    from .tensor import Tensor

NumbersOf = Callable[["Tensor"], np.ndarray]


class NumbersBy(Protocol):
    """Who computes a graph's numbers in a precision below float64 (float32, float16, bfloat16), where torch's
    kernels round as symgrad's float64 arithmetic cannot, and for the functions torch approximates:
    :mod:`symgrad.torch`'s tracer gives its leaves one that runs torch itself. The nodes built from those leaves
    inherit it; float64 nodes keep symgrad's own numbers."""

    def node_numbers(self, node: Tensor, numbers_of: NumbersOf) -> np.ndarray | None:
        """The node's numbers, or None to leave them to symgrad's float64 arithmetic."""


_DEFAULT: list[NumbersBy] = []


def compute_approximations_with(numbers_by: NumbersBy) -> None:
    """Let ``numbers_by`` compute the functions torch approximates (tagged ``kernel``) in every graph, not
    only in traced ones: their values are torch's own definition (:mod:`symgrad.torch` registers torch's, used when
    torch can be imported)."""
    _DEFAULT[:] = [numbers_by]


def approximations_by() -> NumbersBy | None:
    """Who computes the functions torch approximates outside a trace (see :func:`compute_approximations_with`)."""
    return _DEFAULT[0] if _DEFAULT else None


def in_lower_precision(node: Tensor) -> bool:
    """Whether an op node computes in a floating dtype below float64 (its own, or one of its tensor inputs'), or is
    one torch computes with an approximation of its own (its row is tagged ``kernel``). Python numbers, and
    what is computed from them alone (``log(2)`` in the gradient of ``2 ** x``), are torch's double-precision
    scalars: they never lower the precision."""
    if node.op.has("kernel"):
        return True
    tensors = [t for t in node.inputs if not is_weak_scalar(t)]
    if not tensors:
        return False
    return any(is_floating(t.dtype) and t.dtype != "float64" for t in (node, *tensors))


def is_weak_scalar(t: Tensor) -> bool:
    """A Python number, or a 0-d result of Python numbers alone: torch computes with it as a double ``Scalar``."""
    if t.is_python_scalar:
        return True
    return t.op is not None and not t.shape and bool(t.inputs) and all(is_weak_scalar(i) for i in t.inputs)


def numeric_dtype(dtype: str) -> Any:
    """The NumPy dtype a tensor of ``dtype`` holds its numbers in: float64 for every floating dtype (float32,
    float16 and bfloat16 numbers are float64 numbers), int64 for integers, bool."""
    if dtype == "bool":
        return np.bool_
    return np.float64 if is_floating(dtype) else np.int64


def as_numbers(flat: Sequence[Any], shape: tuple, dtype: str) -> np.ndarray:
    """Numbers (floats, SymPy numbers, truth values) as the numeric array of a tensor of ``dtype``."""
    kind = numeric_dtype(dtype)
    if kind is np.bool_:
        return np.array([bool(_float(v)) for v in flat], dtype=bool).reshape(shape)
    if kind is np.int64:
        return np.array([_integer(v, dtype) for v in flat], dtype=np.int64).reshape(shape)
    return np.array([_float(v) for v in flat], dtype=np.float64).reshape(shape)


def from_entries(entries: np.ndarray, dtype: str) -> np.ndarray:
    """Entries that are numbers (SymPy's, or truth values) as the numeric array of a tensor of ``dtype``."""
    return as_numbers(entries.reshape(-1).tolist(), entries.shape, dtype)


def as_entries(numbers: np.ndarray) -> np.ndarray:
    """A numeric array as an object array of SymPy numbers (``-0.0`` kept as a float: SymPy has no signed zero)."""
    if numbers.dtype == np.bool_:
        return object_array([sympy.true if v else sympy.false for v in numbers.reshape(-1)], numbers.shape)
    if numbers.dtype.kind in "iu":
        return object_array([sympy.Integer(int(v)) for v in numbers.reshape(-1)], numbers.shape)
    return object_array([as_sympy_number(float(v)) for v in numbers.reshape(-1)], numbers.shape)


def node_numbers(node: Tensor, numbers_of: NumbersOf) -> np.ndarray:
    """The numbers of a formula or op node, given ``numbers_of`` for the tensors it reads (numeric arrays); a node
    of a 16-bit float dtype rounds them to it, as torch's kernels round what they compute in float32 (the sum of a
    float16 tensor is a float16)."""
    numbers = _node_numbers(node, numbers_of)
    if node.op is not None and node.dtype in ("float16", "bfloat16"):
        return rounded_to(numbers, node.dtype)
    return numbers


def _node_numbers(node: Tensor, numbers_of: NumbersOf) -> np.ndarray:
    if node.kind == "formula":
        if node.numeric_source is not None:  # a gradient: the numbers of the backward graph that computed it
            return np.asarray(numbers_of(node.numeric_source))
        entries = node.entries()
        if all(sympy.sympify(e).is_number for e in entries.reshape(-1)):
            return from_entries(entries, node.dtype)
        point: dict = {}
        for leaf in node.leaves().values():
            if leaf.kind != "symbol":
                continue
            point.update(zip(leaf.entries().reshape(-1), (float(v) for v in numbers_of(leaf).reshape(-1))))
        return as_numbers(float64_values(entries.reshape(-1), point), entries.shape, node.dtype)
    floats = [is_floating(part.dtype) for part in node.inputs]
    # a bool or an integer next to a float is promoted to a float, as in torch (and must meet nan as one:
    # SymPy's exact 0 * x is 0 before x's nan arrives)
    promoted = any(floats) and all(f or part.dtype == "bool" or part.dtype.startswith("int")
                                   for f, part in zip(floats, node.inputs))  # fmt: skip
    if node.op.float64 is not None and (promoted or not node.inputs):  # or made from its attributes alone
        arrays = [np.asarray(numbers_of(part), dtype=np.float64) for part in node.inputs]
        with np.errstate(all="ignore"):
            result = np.asarray(node.op.float64(*arrays, **node.attrs))
        return _as_dtype(result, node.dtype)
    args, point = [], {}
    for position, part in enumerate(node.inputs):
        values = np.asarray(numbers_of(part))
        if is_floating(part.dtype) and values.size:  # integers and booleans stay exact
            holders = value_symbols(position, values.shape)
            point.update(zip(holders.reshape(-1), (float(v) for v in values.reshape(-1))))
            args.append(holders)
        else:
            args.append(as_entries(values))
    result = node.op.meaning(*args, **node.attrs)
    if not point:
        return from_entries(result, node.dtype)
    return as_numbers(float64_values(result.reshape(-1), point), result.shape, node.dtype)


def _as_dtype(result: np.ndarray, dtype: str) -> np.ndarray:
    kind = numeric_dtype(dtype)
    if kind is np.int64 and result.dtype.kind == "f":  # an integer result computed in float64 (a floor): exact
        return as_numbers(result.reshape(-1).tolist(), result.shape, dtype)
    return result.astype(kind)


def _float(value: Any) -> float:
    if value is sympy.true or value is True:
        return 1.0
    if value is sympy.false or value is False:
        return 0.0
    if isinstance(value, (float, int, np.number)):
        return float(value)
    number = sympy.sympify(value)
    if number is sympy.nan or number is sympy.zoo or number.is_extended_real is False:
        return math.nan
    return float(number)


_SMALLEST = {"int64": -(1 << 63), "int32": -(1 << 31)}


def _integer(value: Any, dtype: str = "int64") -> int:
    if value is sympy.true or value is True:
        return 1
    if value is sympy.false or value is False:
        return 0
    if isinstance(value, (float, np.floating)) or (isinstance(value, sympy.Basic) and not value.is_Integer):
        number = _float(value)
        if not math.isfinite(number) or abs(number) >= 2.0**63:  # torch's conversion gives the dtype's smallest
            return _SMALLEST.get(dtype, -(1 << 63))
        value = math.trunc(number)
    number = int(value)
    return ((number + (1 << 63)) % (1 << 64)) - (1 << 63)  # torch's int64 wraps around


def numbers_at(roots: Sequence[Tensor], leaf_numbers: Mapping[int, np.ndarray]) -> list[np.ndarray]:
    """The numbers of ``roots`` when the leaves take ``leaf_numbers`` (by ``id`` of the leaf);
    leaves not in it keep their own values."""
    memo: dict[int, np.ndarray] = {}

    def numbers_of(t: Tensor) -> np.ndarray:
        if id(t) not in memo:
            for node in topological(t):
                if id(node) in memo:
                    continue
                if node.kind == "symbol":
                    given = leaf_numbers.get(id(node))
                    memo[id(node)] = node.numbers() if given is None else np.asarray(given, dtype=np.float64)
                else:
                    memo[id(node)] = node_numbers(node, numbers_of)
        return memo[id(t)]

    return [numbers_of(root) for root in roots]
