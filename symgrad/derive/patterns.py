"""Shapes of gradient that the VJP rules build and later passes look for by their nodes.

The cross-entropy rule writes its gradient in torch's order, ``where(one_hot(y) == 1, -s, 0) + softmax(z) * s``,
so that its values are torch's at every input; a law to read writes it back as ``(softmax(z) - one_hot(y)) * s``
(:mod:`symgrad.derive.simplify`), and emitted code runs torch's two backward kernels on it
(:mod:`symgrad.emit.kernels`).

>>> import symgrad as sg
>>> import symgrad.torch as torch
>>> from symgrad.derive.reverse import law
>>> z, y, g = sg.symbols("z", (4, 3)), sg.symbols("y", (4,), dtype="int64"), sg.symbols("g", ())
>>> (gradient,) = law(torch.nn.functional.cross_entropy(z, y), [z], g, simplified=False)
>>> logits, target, scale = cross_entropy_gradient(gradient)
>>> logits is z, target is y, scale.name
(True, True, 'g / 4')
"""

from __future__ import annotations

import sympy

from ..core.dtypes import is_floating
from ..core.graph import uniform_constant
from ..core.tensor import Tensor


def _named(t: Tensor, name: str) -> bool:
    return t.op is not None and t.op.name == name


def _one_hot_target(mask: Tensor) -> Tensor | None:
    """``y`` when ``mask`` is ``one_hot(y) == 1``."""
    if not _named(mask, "eq") or uniform_constant(mask.inputs[1]) != 1 or not _named(mask.inputs[0], "one_hot"):
        return None
    return mask.inputs[0].inputs[0]


def cross_entropy_gradient(node: Tensor) -> tuple[Tensor, Tensor, Tensor] | None:
    """``(z, y, s)`` when ``node`` is ``where(one_hot(y) == 1, -s, 0) + softmax(z, dim=1) * s`` with ``s`` a 0-d
    tensor (the same node in both places) and ``z`` a matrix of floats; else None."""
    if not _named(node, "add"):
        return None
    for picked, spread in (node.inputs, node.inputs[::-1]):
        if not _named(picked, "where") or uniform_constant(picked.inputs[2]) != 0 or not _named(spread, "mul"):
            continue
        y, negated = _one_hot_target(picked.inputs[0]), picked.inputs[1]
        if y is None or not _named(negated, "neg"):
            continue
        for softmax, scale in (spread.inputs, spread.inputs[::-1]):
            if scale is negated.inputs[0] and not scale.shape and _is_row_softmax(softmax, node.shape):
                return softmax.inputs[0], y, scale
    return None


def numeric_cross_entropy_gradient(node: Tensor) -> tuple[Tensor, Tensor, sympy.Expr] | None:
    """``(z, y, c)`` when ``node`` is ``where(one_hot(y) == 1, -c, 0) + c * softmax(z, dim=1)`` for a number ``c``
    (a grad_output given as a number, folded into the product as ``softmax(z) / 4``); else None."""
    if not _named(node, "add"):
        return None
    for picked, spread in (node.inputs, node.inputs[::-1]):
        if not _named(picked, "where") or uniform_constant(picked.inputs[2]) != 0 or picked.inputs[1].shape:
            continue
        y, negated = _one_hot_target(picked.inputs[0]), uniform_constant(picked.inputs[1])
        factor, softmax = _number_times(spread)
        if y is not None and negated is not None and _is_row_softmax(softmax, node.shape):
            if (factor + negated).is_zero:
                return softmax.inputs[0], y, factor
    return None


def _number_times(t: Tensor) -> tuple[sympy.Expr, Tensor]:
    """``(c, x)`` with ``t == c * x`` for a number ``c`` (``x / c`` counts as ``(1/c) * x``), or ``(1, t)``."""
    if _named(t, "mul"):
        for number, x in (t.inputs, t.inputs[::-1]):
            if not number.shape and uniform_constant(number) is not None:
                return uniform_constant(number), x
    if _named(t, "div") and not t.inputs[1].shape and uniform_constant(t.inputs[1]) is not None:
        return 1 / uniform_constant(t.inputs[1]), t.inputs[0]
    return sympy.S.One, t


def _is_row_softmax(t: Tensor, shape: tuple) -> bool:
    return (
        _named(t, "softmax")
        and t.attrs["dim"] % 2 == 1
        and len(t.shape) == 2
        and tuple(t.shape) == tuple(shape)
        and is_floating(t.dtype)
    )
