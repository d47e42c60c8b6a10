"""Which :mod:`symgrad.torch` function follows a torch call the tracer sees, and where the user made the call.

>>> import torch
>>> symbolic_function(torch.nn.functional.relu)[0], symbolic_function(torch.Tensor.add)
('function', ('method', 'add'))
"""

from __future__ import annotations

import functools
import inspect
import linecache
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import torch as symbolic_torch
from ..core.tensor import method
from . import decompositions

# Tensor attributes and methods whose result is not a tensor: the real answer is the answer.
PLAIN = {
    "shape", "dtype", "device", "requires_grad", "is_leaf", "ndim", "grad_fn", "layout", "is_cuda", "names",
    "size", "dim", "numel", "item", "tolist", "__len__", "__bool__", "__format__", "__repr__", "__str__",
    "__hash__", "__index__", "__int__", "__float__", "is_floating_point", "is_contiguous", "stride",
    "element_size", "data_ptr", "__iter__", "type", "untyped_storage", "storage_offset", "nelement",
}  # fmt: skip
_HERE = Path(__file__).resolve().parents[1]


@functools.cache
def _not_users(filename: str) -> bool:
    """Whether a frame of ``filename`` is symgrad's or torch's (or Python's frozen modules'), not the user's code."""
    import torch

    if filename.startswith("<frozen"):
        return True
    path = Path(filename).resolve()
    return _HERE in path.parents or Path(torch.__file__).resolve().parent in path.parents


def _where(filename: str, lineno: int) -> str:
    code = linecache.getline(filename, lineno).strip()
    return f"{filename}, line {lineno}" + (f": {code}" if code else "")


def user_line() -> str:
    """Where in the user's code the current torch call was made (run for every traced call: it walks the frames
    and reads one source line, where ``traceback.extract_stack`` read every frame's)."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _not_users(frame.f_code.co_filename):
            return _where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return "an unknown place"


def failing_line(error: BaseException) -> str:
    """Where in the user's code ``error`` was raised (the innermost frame outside symgrad and torch)."""
    found = "an unknown place"
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if not _not_users(frame.f_code.co_filename):
            found = _where(frame.f_code.co_filename, lineno)
    return found


# torch functions whose name differs from the one symgrad gives them (the name torch's own binding has)
_ALIASES = {
    # symgrad's Tensor keeps Python's == and != (identity: tensors are dict keys); torch's are comparisons
    "__eq__": "eq",
    "__ne__": "ne",
    "log_sigmoid": "logsigmoid",
    "_threshold": "threshold",
    "max_pool1d_with_indices": "max_pool1d",
    "max_pool2d_with_indices": "max_pool2d",
    "max_pool3d_with_indices": "max_pool3d",
    "adaptive_max_pool1d_with_indices": "adaptive_max_pool1d",
    "adaptive_max_pool2d_with_indices": "adaptive_max_pool2d",
    "adaptive_max_pool3d_with_indices": "adaptive_max_pool3d",
}


def returns_indices(func: Callable, name: str) -> bool:
    """Whether torch's function returns a pooling's indices whatever it is asked (``max_pool2d_with_indices``, and
    the built-in ``torch.adaptive_max_pool1d``, unlike ``F.adaptive_max_pool1d``)."""
    if name.endswith("_with_indices"):
        return True
    return name.startswith("adaptive_max_pool") and not inspect.isfunction(func)


def symbolic_function(func: Callable) -> tuple[str, Any]:
    """The :mod:`symgrad.torch` function (or Tensor method name) for a torch function, by its name."""
    import torch

    if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return _operator_function(func)
    name = getattr(func, "__name__", "")
    name = _ALIASES.get(name, name)
    qualname = getattr(func, "__qualname__", "")
    module = getattr(func, "__module__", None) or ""
    if qualname.startswith(("TensorBase.", "Tensor.", "_TensorBase.")):
        return "method", name
    if qualname.endswith("__get__") and hasattr(func, "__self__"):
        return "attribute", func.__self__.__name__
    if module in ("torch.nn.functional", "torch._C._nn"):
        return "function", getattr(symbolic_torch.nn.functional, name, None)
    if module in ("torch._C._special", "torch.special"):  # torch.special.expm1 is special_expm1
        name = name.removeprefix("special_")
        found = getattr(symbolic_torch.special, name, None) or getattr(symbolic_torch, name, None)
        return "function", found or getattr(symbolic_torch.nn.functional, name, None)
    if module == "torch.linalg" or "linalg" in module:
        return "function", getattr(symbolic_torch.linalg, name.removeprefix("linalg_"), None)
    if module in ("torch", "torch.functional") or qualname.startswith("_VariableFunctionsClass."):
        # F.conv2d, F.max_pool2d, … are torch.conv2d, torch.max_pool2d, … themselves
        found = getattr(symbolic_torch, name, None) or getattr(symbolic_torch.nn.functional, name, None)
        return "function", found
    return "function", None


# ATen operators that torch's decompositions call, spelled as symgrad's functions and methods
_ATEN_NAMES = {"_unsafe_view": "reshape", "split_with_sizes": "split", "_softmax": None, "alias": "view_as"}


def _operator_function(func: Any) -> tuple[str, Any]:
    """symgrad's function, or Tensor method, for an ATen or prims operator (``aten.mul.Tensor``): by its name,
    with torch's argument order, which the ATen schema keeps."""
    packet = getattr(func, "overloadpacket", func)
    name = packet.__name__
    namespace = getattr(packet, "_qualified_op_name", "").split("::")[0]
    if namespace == "prims" and name in decompositions.PRIMITIVES:
        return "function", decompositions.PRIMITIVES[name]
    if namespace not in ("aten", "prims"):
        return "function", None
    name = _ATEN_NAMES.get(name, name)
    if name is None:
        return "function", None
    found = getattr(symbolic_torch, name, None) or getattr(symbolic_torch.nn.functional, name, None)
    if found is not None:
        return "function", found
    if method(name) is not None:
        return "method", name
    return "function", None


def holds_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, dict):
        return any(holds_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_tensor(v) for v in value)
    return False


def function_name(func: Callable) -> str:
    func = func.func if isinstance(func, functools.partial) else func
    return getattr(func, "__name__", None) or str(func)


def symbolic_function_named(func: Callable, name: str) -> Any:
    """The :mod:`symgrad.torch` function of ``name`` where torch's ``func`` lives (relu for torch.relu_)."""
    module = getattr(func, "__module__", None) or ""
    if module in ("torch.nn.functional", "torch._C._nn"):
        return getattr(symbolic_torch.nn.functional, name, None)
    return getattr(symbolic_torch, name, None) or getattr(symbolic_torch.nn.functional, name, None)
