"""``sg.trace``: run existing torch code — real ``torch`` calls, real ``nn.Module`` objects — symbolically.

The function runs as it is, on the real example inputs, under a :class:`torch.overrides.TorchFunctionMode`
that sees every torch call. Each call is also made in :mod:`symgrad.torch` on the symbolic tensors that
stand for its arguments: the inputs, the module's parameters (named as the module names them), and
constants for any other tensor. Python control flow (loops over time steps, shapes) runs on the real
values, exactly as it would without symgrad; the symbolic graph records what happened.

>>> import torch, symgrad as sg
>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
>>> traced = sg.trace(model, torch.randn(4, 3))
>>> sorted(traced.parameters)
['0.bias', '0.weight']
>>> traced.output.shape
(4, 2)
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import torch as symbolic_torch
from ..core.constructors import symbols, tensor
from ..core.dims import dims
from ..core.errors import (
    InternalError,
    SymbolicShapeError,
    SymgradError,
    UnsupportedError,
    ValuesUnknownError,
    WorkBudgetError,
)
from ..core.tensor import Tensor, constant
from .nn.modules.module import leaf_name

# Tensor attributes and methods whose result is not a tensor: the real answer is the answer.
_PLAIN = {
    "shape", "dtype", "device", "requires_grad", "is_leaf", "ndim", "grad_fn", "layout", "is_cuda", "names",
    "size", "dim", "numel", "item", "tolist", "__len__", "__bool__", "__format__", "__repr__", "__str__",
    "__hash__", "__index__", "__int__", "__float__", "is_floating_point", "is_contiguous", "stride",
    "element_size", "data_ptr", "__iter__", "type", "untyped_storage", "storage_offset", "nelement",
}  # fmt: skip
_HERE = Path(__file__).resolve().parents[1]


class SizeInt(int):
    """A size read off a traced tensor whose dimension is symbolic: the example's number for torch, and
    the dimension (``m``) for symgrad. Arithmetic keeps both, so ``x.shape[0] * 2`` stays ``2 m``."""

    def __new__(cls, value: int, symbolic: Any) -> SizeInt:
        out = super().__new__(cls, value)
        out.symbolic = symbolic
        return out

    def _both(self, other: Any, combine: Callable) -> Any:
        if isinstance(other, bool) or not isinstance(other, int):
            return combine(int(self), other)
        theirs = other.symbolic if isinstance(other, SizeInt) else other
        return SizeInt(combine(int(self), int(other)), combine(self.symbolic, theirs))

    def __add__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a // b)


@dataclass
class Trace:
    """What :func:`trace` returns: the symbolic output, the leaves for the inputs and the parameters."""

    output: Any
    inputs: list[Tensor]
    parameters: dict[str, Tensor] = field(default_factory=dict)
    buffers: dict[str, Tensor] = field(default_factory=dict)


def _user_line() -> str:
    """Where in the user's code the current torch call was made."""
    import torch

    torch_root = Path(torch.__file__).resolve().parent
    for frame in reversed(traceback.extract_stack()):
        path = Path(frame.filename).resolve()
        if _HERE in path.parents or torch_root in path.parents or frame.filename.startswith("<frozen"):
            continue
        code = (frame.line or "").strip()
        return f"{frame.filename}, line {frame.lineno}" + (f": {code}" if code else "")
    return "an unknown place"


def _symbolic_function(func: Callable) -> tuple[str, Any]:
    """The :mod:`symgrad.torch` function (or Tensor method name) for a torch function, by its name."""
    name = getattr(func, "__name__", "")
    qualname = getattr(func, "__qualname__", "")
    module = getattr(func, "__module__", None) or ""
    if qualname.startswith(("TensorBase.", "Tensor.", "_TensorBase.")):
        return "method", name
    if qualname.endswith("__get__") and hasattr(func, "__self__"):
        return "attribute", func.__self__.__name__
    if module in ("torch.nn.functional", "torch._C._nn"):
        return "function", getattr(symbolic_torch.nn.functional, name, None)
    if module == "torch.linalg" or "linalg" in module:
        return "function", getattr(symbolic_torch.linalg, name.removeprefix("linalg_"), None)
    if module in ("torch", "torch.functional") or qualname.startswith("_VariableFunctionsClass."):
        # F.conv2d, F.max_pool2d, … are torch.conv2d, torch.max_pool2d, … themselves
        found = getattr(symbolic_torch, name, None) or getattr(symbolic_torch.nn.functional, name, None)
        return "function", found
    return "function", None


class _Recorder:
    """Maps real tensors to the symbolic tensors that stand for them, call by call."""

    def __init__(self) -> None:
        self.symbolic: dict[int, Tensor] = {}
        self.kept: list[Any] = []  # the real tensors mapped, kept alive so that their ids stay theirs

    def bind(self, real: Any, symbolic: Tensor) -> None:
        self.symbolic[id(real)] = symbolic
        self.kept.append(real)

    def to_symbolic(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor):
            known = self.symbolic.get(id(value))
            if known is None:  # a tensor made inside the function, or a constant: its numbers
                known = _constant_of(value)
                self.bind(value, known)
            return known
        if isinstance(value, torch.Size):  # a tuple too, but one of ints: its symbolic sizes make a plain tuple
            return tuple(self.to_symbolic(v) for v in value)
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(self.to_symbolic(v) for v in value)
        if isinstance(value, torch.dtype):
            return str(value).replace("torch.", "")
        if isinstance(value, SizeInt):
            return value.symbolic
        return value

    def record(self, real: Any, symbolic: Any) -> None:
        import torch

        if isinstance(real, torch.Tensor) and isinstance(symbolic, Tensor):
            self.bind(real, symbolic)
        elif isinstance(real, (tuple, list)) and isinstance(symbolic, (tuple, list)):
            for r, s in zip(real, symbolic, strict=False):
                self.record(r, s)


def _sizes(real: Any, symbolic: Tensor | None, what: str, args: tuple, kwargs: dict) -> Any:
    """``x.shape`` / ``x.size(...)``: the real sizes, carrying the symbolic dimensions of a traced tensor."""
    import torch

    if symbolic is None or what not in ("shape", "size") or all(isinstance(d, int) for d in symbolic.shape):
        return real
    sizes = [
        SizeInt(int(n), d) if not isinstance(d, int) else int(n) for n, d in zip(real_shape(args[0]), symbolic.shape)
    ]
    if isinstance(real, torch.Size):
        return torch.Size(sizes)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    return sizes[dim] if isinstance(real, int) and dim is not None else real


def real_shape(t: Any) -> tuple:
    return tuple(t.shape)


def _holds_size(value: Any) -> bool:
    if isinstance(value, SizeInt):
        return True
    if isinstance(value, dict):
        return any(_holds_size(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_size(v) for v in value)
    return False


def _holds_tensor(value: Any) -> bool:
    import torch

    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    return False


def _constant_of(value: Any) -> Tensor:
    import torch

    data = value.detach().cpu()
    if data.dtype.is_floating_point:
        return constant(_numbers(data.double()), dtype=str(data.dtype).replace("torch.", ""))
    return constant(_numbers(data.long()), dtype="bool" if data.dtype == torch.bool else "int64")


def _numbers(data: Any) -> Any:
    """A tensor's numbers as nested lists; an empty one as an array of its shape (tolist() of a (5, 0, 5) tensor
    is [[], [], [], [], []], which reads back as (5, 0))."""
    return data.tolist() if data.numel() else np.zeros(tuple(data.shape), dtype=object)


# What symgrad says on purpose when it cannot follow a call torch made: a refusal. Anything else it raises there
# (torch's own errors for a call torch ran, a TypeError from inside) is a bug, reported as InternalError.
REFUSALS = (UnsupportedError, WorkBudgetError, SymbolicShapeError, ValuesUnknownError)


def _name(func: Callable) -> str:
    return getattr(func, "__name__", None) or str(func)


def _mode(recorder: _Recorder) -> Any:
    from torch.overrides import TorchFunctionMode

    class SymbolicMode(TorchFunctionMode):
        def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            real = func(*args, **kwargs)
            kind, target = _symbolic_function(func)
            if kind in ("attribute", "method") and (target in _PLAIN or not _holds_tensor(real)):
                # what a tensor says of itself (x.is_nested, x.dim()): the real answer is the answer
                return _sizes(real, recorder.symbolic.get(id(args[0])), target, args, kwargs)
            if kind == "function" and not _holds_tensor((args, kwargs)):
                if target is None or not _holds_size((args, kwargs)):
                    return real  # made from numbers alone (torch.zeros(2, 3)): a constant when it is used
            try:
                sym_args = recorder.to_symbolic(args)
                sym_kwargs = {k: recorder.to_symbolic(v) for k, v in kwargs.items()}
                if kind == "attribute":
                    result = getattr(sym_args[0], target)
                elif kind == "method":
                    method = getattr(Tensor, target, None)
                    if method is None:
                        raise UnsupportedError(f"symgrad has no Tensor.{target}")
                    result = method(*sym_args, **sym_kwargs)
                else:
                    if target is None:
                        raise UnsupportedError(f"symgrad has no {getattr(func, '__name__', func)}")
                    result = target(*sym_args, **sym_kwargs)
            except REFUSALS as error:
                raise UnsupportedError(f"{_name(func)} ({_user_line()}): {error}") from None
            except Exception as error:  # torch ran this call: any other error of symgrad's is a bug of symgrad's
                raise InternalError(
                    f"{_name(func)} ({_user_line()}): symgrad failed where torch did not, with "
                    f"{type(error).__name__}: {' '.join(str(error).split())} (a bug in symgrad: please report it)"
                ) from error
            recorder.record(real, result)
            return real

    return SymbolicMode()


def _leaf(real: Any, name: str, symbolic_dims: Mapping[int, str] | None, requires_grad: bool) -> Tensor:
    dtype = str(real.dtype).replace("torch.", "")
    if symbolic_dims:
        shape = tuple(
            dims(symbolic_dims[axis])[0] if axis in symbolic_dims else int(size) for axis, size in enumerate(real.shape)
        )
        return symbols(name, shape, requires_grad=requires_grad, dtype=dtype)
    values = _numbers(real.detach().cpu().double())
    return tensor(values, name=name, requires_grad=requires_grad and real.dtype.is_floating_point, dtype=dtype)


def trace(fn: Callable, *example_inputs: Any, dynamic_shapes: Mapping[str, Mapping[int, str]] | None = None) -> Trace:
    """Run ``fn(*example_inputs)`` — real torch code, possibly an ``nn.Module`` — and return its symbolic graph.

    The inputs are named after ``fn``'s parameters (``forward``'s for a module); ``dynamic_shapes`` makes
    sizes symbolic in torch.export's spelling, ``{"x": {0: "m"}}``, so the result has laws for every batch
    size. A torch function symgrad does not have stops the trace with its name and the line that called it.
    """
    import torch

    recorder = _Recorder()
    signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    names = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names += [f"x{i}" for i in range(len(names), len(example_inputs))]
    shapes = dict(dynamic_shapes or {})
    inputs = []
    for name, real in zip(names, example_inputs, strict=False):
        if not isinstance(real, torch.Tensor):
            raise SymgradError(f"trace() takes tensors as example inputs; {name} is a {type(real).__name__}")
        leaf = _leaf(real, name, shapes.get(name), requires_grad=real.requires_grad)
        recorder.bind(real, leaf)
        inputs.append(leaf)
    parameters, buffers = {}, {}
    if isinstance(fn, torch.nn.Module):
        for name, real in fn.named_parameters():
            parameters[name] = _leaf(real, leaf_name(name), None, requires_grad=True)
            recorder.bind(real, parameters[name])
        for name, real in fn.named_buffers():
            buffers[name] = _leaf(real, leaf_name(name), None, requires_grad=False)
            recorder.bind(real, buffers[name])
    with _mode(recorder):
        real_output = fn(*example_inputs)
    output = recorder.to_symbolic(real_output)
    return Trace(output=output, inputs=inputs, parameters=parameters, buffers=buffers)
