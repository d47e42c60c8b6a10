"""Class targets of the classification losses: integer tensors that enter the formulas as constants.

A target with known values becomes an int64 constant (named as the user named it, so emitted code takes
it as an input); a symbolic one stays a symbol leaf, whose entries are only known in laws.

>>> import symgrad.torch as torch
>>> class_targets(torch.tensor([1.0, 0.0]), "nll_loss").dtype
'int64'
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ...core.constructors import symbols, tensor
from ...core.errors import TorchIndexError, TorchRuntimeError, TorchTypeError, UnsupportedError
from ...core.graph import topological_all
from ...core.indexing import note_index_range
from ...core.tensor import Tensor


def class_targets(target: Any, what: str, classes: Any = None) -> Tensor:
    """Class indices as an int64 tensor: an input named as the user named it, with its values when
    it has them, or symbolic (its entries are then only known in laws, where indices stay symbolic)."""
    if not isinstance(target, Tensor):
        raise TorchTypeError(f"{what}(): target must be a Tensor, not {type(target).__name__}")
    named = target.kind == "symbol" or target.is_named_constant
    if not target.has_values():
        if target.kind != "symbol":
            if target.dtype.startswith("int") and _moved_symbols(target):
                note_index_range(target, classes)  # the values a proof picks for its entries
                return target if target.dtype == "int64" else target.to("int64")
            raise UnsupportedError(
                f"{what}(): class targets must be a tensor of its own, or one rearranged (view, reshape, slices), "
                "not a computed one"
            )
        if target.dtype == "int64":
            if getattr(target, "classes", None) is None:
                target.classes = classes
            return target
        return symbols(target.name, target.shape, dtype="int64", classes=classes)
    values = target.values()
    flat = [sympy.sympify(v) for v in values.reshape(-1)]
    if not all(v.is_Number and v.is_finite and float(v).is_integer() for v in flat):
        raise TorchRuntimeError(
            f"{what}(): class targets must be integers (class indices); probability targets must be floating "
            "and shaped as the input"
        )
    if target.dtype == "int64":  # already class indices (a second use of the same target is the same tensor)
        return target
    indices = np.array([sympy.Integer(int(v)) for v in flat], dtype=object).reshape(values.shape)
    return tensor(indices.tolist(), name=target.name if named else None, dtype="int64")


def _moved_symbols(target: Tensor) -> bool:
    """Whether every entry of ``target`` is an entry of a tensor of symbols, moved (by views, reshapes, slices):
    ``targets.view(-1)``."""
    return all(
        node.kind == "symbol" or (node.kind == "op" and node.op.has("layout")) for node in topological_all([target])
    )


def known_classes(values: list[int], classes: Any) -> None:
    """torch's check of class indices (ignored targets left out): each in [0, classes)."""
    if not isinstance(classes, int):
        return
    for v in values:
        if not 0 <= v < classes:
            raise TorchIndexError(f"Target {v} is out of bounds.")
