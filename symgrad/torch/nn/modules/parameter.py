"""``nn.Parameter`` and ``nn.Buffer``: leaves of symbols that a module registers, and their renaming.

A parameter is a leaf tensor of symbols that requires grad; its numbers come from the data it is made of
(a symgrad tensor, a real torch tensor, nested lists) and its name from where a module keeps it
(:func:`placed`). As in torch, ``isinstance(t, Parameter)`` tells a parameter from other tensors.

>>> import symgrad.torch as torch
>>> w = torch.nn.Parameter(torch.tensor([[1.0, 2.0]]))
>>> isinstance(w, torch.nn.Parameter), w.requires_grad, w.tolist()
(True, True, [[1.0, 2.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....core.constructors import symbols, tensor
from ....core.dtypes import is_floating
from ....core.errors import SymgradError
from ....core.tensor import Tensor, auto_name


def is_real_tensor(value: Any) -> bool:
    """Whether ``value`` is a real torch tensor (told by its type's module: torch is not imported here)."""
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "detach")


def real_dtype(value: Any) -> str:
    return str(value.dtype).replace("torch.", "")


def leaf_of(data: Any, name: str, requires_grad: bool, dtype: str | None = None) -> Tensor:
    """A new leaf named ``name`` holding ``data``'s numbers (or its symbols, for a symbolic leaf)."""
    if data is None:
        data = []
    if is_real_tensor(data):
        kind = dtype or real_dtype(data)
        values = data.detach().cpu().double().tolist() if is_floating(kind) else data.detach().cpu().tolist()
        return tensor(values, name=name, requires_grad=requires_grad, dtype=kind)
    if isinstance(data, Tensor):
        kind = dtype or data.dtype
        if data.kind == "symbol" and data.symbol_values is None:
            return symbols(name, data.shape, dtype=kind, requires_grad=requires_grad)
        if not data.has_values():
            raise SymgradError(
                f"a parameter or buffer is a leaf: {data.name} is a formula of symbols without values; "
                "give a leaf of symbols (sg.symbols) or a tensor with values"
            )
        return tensor(data.tolist(), name=name, requires_grad=requires_grad, dtype=kind)
    return tensor(data, name=name, requires_grad=requires_grad, dtype=dtype)


def _marked(leaf: Tensor, parameter: bool) -> Tensor:
    leaf.is_parameter = parameter
    return leaf


class ParameterMeta(type):
    """``isinstance(t, Parameter)``: a tensor marked as a parameter (as torch's ``_ParameterMeta`` does)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and getattr(instance, "is_parameter", False)


class Parameter(metaclass=ParameterMeta):
    """A leaf tensor that a module registers as its parameter: ``Parameter(data, requires_grad=True)``."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Tensor:  # type: ignore[misc]
        return _marked(leaf_of(data, auto_name("param"), requires_grad), True)


class BufferMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and hasattr(instance, "buffer_persistent")


class Buffer(metaclass=BufferMeta):
    """A tensor that a module registers as its buffer when assigned: ``Buffer(data, persistent=True)``."""

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        leaf = leaf_of(data, auto_name("buffer"), False)
        leaf.buffer_persistent = persistent
        return leaf


def placed(t: Tensor, name: str) -> Tensor:
    """``t`` named ``name``: renamed in place, or, once its symbols exist (a forward pass has read them), a fresh
    leaf with its numbers, dtype, requires_grad and grad. Tensors that are not leaves of symbols (expressions,
    constants) keep their names."""
    if t.kind == "symbol":
        t.rename(name)
        if t.name == name:
            return t
        fresh = leaf_of(t, name, t.requires_grad)
    elif t.is_named_constant and t.name != name:
        fresh = tensor(t.tolist(), name=name, dtype=t.dtype)
    else:
        return t
    fresh.grad = t.grad
    return _marked(fresh, isinstance(t, Parameter))


def recast(t: Tensor, dtype: str) -> Tensor:
    """``t`` as a float tensor of ``dtype`` (float32 rounds the numbers as torch's cast does); others unchanged."""
    if not is_floating(t.dtype) or t.dtype == dtype:
        return t
    if dtype == "float32" and t.kind == "symbol" and t.symbol_values is not None:
        rounded = np.asarray(t.symbol_values, dtype=float).astype(np.float32).astype(float).tolist()
        fresh = symbols(t.name, t.shape, values=rounded, dtype=dtype, requires_grad=t.requires_grad)
        return _marked(fresh, isinstance(t, Parameter))
    t.dtype = dtype
    return t


__all__ = ["Buffer", "Parameter", "is_real_tensor", "leaf_of", "placed", "real_dtype", "recast"]
