"""Shape questions the random-graph generators ask (tests/test_*_properties.py): what two shapes give."""

from __future__ import annotations

from symgrad.core.dims import broadcast_shapes, matmul_shape
from symgrad.core.errors import ShapeError


def broadcast(a: tuple, b: tuple) -> tuple | None:
    """The broadcast shape of ``a`` and ``b`` when it exists and has at most 2 dimensions."""
    try:
        shape = broadcast_shapes(a, b)
    except ShapeError:
        return None
    return shape if len(shape) <= 2 else None


def matmul_result(a: tuple, b: tuple) -> tuple | None:
    """The shape of ``a @ b``, or None when the two cannot be multiplied."""
    if not a or not b:
        return None
    try:
        return matmul_shape(a, b)
    except ShapeError:
        return None
