"""torch's type promotion: the dtype of an op's result from its operands' dtypes.

Tensors with dims decide first, then 0-d tensors, then Python numbers (which stand for torch's default dtype);
a later group counts only when it is of a higher category (floating over integer) than the ones before:

>>> floating_result_type([Operand("float32", False, False), Operand("float64", True, False)])
'float32'
>>> floating_result_type([Operand("int64", False, False), Operand("float64", True, False)])
'float64'
>>> floating_result_type([Operand("int64", False, False), Operand("float32", True, True)])
'float32'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .registry import Op

DEFAULT_FLOAT = "float32"  # torch.get_default_dtype() unless a program changes it
_FLOAT_WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
_INT64_ACCUMULATORS = frozenset({"sum", "prod", "cumsum", "cumprod"})


class Operand(NamedTuple):
    """What promotion reads of an operand: its dtype, whether it is 0-d, whether it is a Python number."""

    dtype: str
    zero_dim: bool
    python_scalar: bool


def is_floating(dtype: str) -> bool:
    """Whether ``dtype`` is a floating dtype (bfloat16 included)."""
    return dtype in _FLOAT_WIDTH


_KERNEL_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}
_SCALAR_TYPES = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16"}


def same_dtype_message(a: str, b: str) -> str:
    """torch's matrix products' error for operands of two floating dtypes."""
    return f"expected m1 and m2 to have the same dtype, but got: {_KERNEL_NAMES[a]} != {_KERNEL_NAMES[b]}"


def scalar_type_message(expected: str, found: str) -> str:
    """torch's kernels' error for an operand whose floating dtype is not the first operand's."""
    return f"expected scalar type {_SCALAR_TYPES[expected]} but found {_SCALAR_TYPES[found]}"


def promote_floats(dtypes: Sequence[str]) -> str:
    """torch.promote_types over floating dtypes: the widest; float16 with bfloat16 is float32."""
    widest = max(dtypes, key=lambda d: _FLOAT_WIDTH[d])
    if _FLOAT_WIDTH[widest] == 16 and len(set(dtypes)) > 1:
        return "float32"
    return widest


_INT_WIDTH = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _category(dtype: str) -> int:
    return 2 if is_floating(dtype) else (0 if dtype == "bool" else 1)


def promote_types(a: str, b: str) -> str:
    """torch.promote_types: bool < integers < floating; uint8 with int8 is int16."""
    if a == b:
        return a
    if is_floating(a) or is_floating(b):
        return promote_floats([d for d in (a, b) if is_floating(d)])
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if {a, b} == {"uint8", "int8"}:
        return "int16"
    return max((a, b), key=lambda d: (_INT_WIDTH.get(d, 64), d != "uint8"))


def _promoted(dtypes: Sequence[str]) -> str | None:
    result = None
    for dtype in dtypes:
        result = dtype if result is None else promote_types(result, dtype)
    return result


def _combine(higher: str | None, lower: str | None) -> str | None:
    """torch's combine_categories: a later group counts only when it is of a higher category."""
    if higher is None or lower is None:
        return higher or lower
    if is_floating(higher):
        return higher
    if higher == "bool" or _category(lower) > _category(higher):
        return promote_types(higher, lower)
    return higher


def result_type(operands: Sequence[Operand]) -> str:
    """torch.result_type of the operands (see the module docstring)."""
    dims = _promoted([o.dtype for o in operands if not o.python_scalar and not o.zero_dim])
    zero = _promoted([o.dtype for o in operands if not o.python_scalar and o.zero_dim])
    wrapped = _promoted(
        [DEFAULT_FLOAT if is_floating(o.dtype) else ("int64" if o.dtype != "bool" else "bool") for o in operands
         if o.python_scalar]
    )  # fmt: skip
    return _combine(dims, _combine(zero, wrapped)) or DEFAULT_FLOAT


def floating_result_type(operands: Sequence[Operand]) -> str:
    """The result type of operands of which one at least is floating (see the module docstring)."""
    result = result_type(operands)
    return result if is_floating(result) else DEFAULT_FLOAT


def result_dtype(op: Op, operands: Sequence[Operand]) -> str:
    """The dtype of ``op``'s result: bool for comparisons, the branches' for a where, torch's promotion when an
    operand is floating, torch's default float for ops that always give floats (exp, div, mean of integers),
    int64 for sums and products of integers, else the first tensor's dtype."""
    if op.has("comparison"):
        return "bool"
    if op.name == "where":  # the condition selects; the branches give the dtype
        operands = operands[1:]
    tensors = [o for o in operands if not o.python_scalar] or list(operands)
    if not tensors:
        return DEFAULT_FLOAT
    if op.has("input_dtype") and tensors[0].dtype in ("bfloat16", "float16"):
        return tensors[0].dtype
    if any(is_floating(o.dtype) for o in operands):
        return floating_result_type(operands)
    if op.float_result:
        return DEFAULT_FLOAT
    if op.name in _INT64_ACCUMULATORS:
        return "int64"  # torch sums and multiplies bool and integer tensors in int64
    if op.has("broadcasting") or op.name == "where":  # arithmetic: torch's promotion (int32 + int64 is int64)
        return result_type(operands)
    return tensors[0].dtype
