"""The ``torch.autograd.Function`` a plain callable applies: ``verify_backward(fn, ...)`` for a ``fn`` that calls
``MyFunction.apply(...)`` verifies ``MyFunction`` at the arguments it receives there.

``fn`` runs once on the example inputs, with ``Function.apply`` recorded (torch's function modes do not see it).
Sizes made symbolic by ``dynamic_shapes`` (named after ``fn``'s arguments) carry over to the Function's arguments:
an argument that is one of ``fn``'s inputs keeps its axes, and any other axis whose size is the example size of
exactly one dimension name gets that name; a size that could be two of them is refused in one line.

>>> import torch
>>> class Twice(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         return 2 * x
...     @staticmethod
...     def backward(ctx, g):
...         return 2 * g
>>> def model(x):
...     return Twice.apply(x + 1)
>>> cls, args, shapes = applied_function(model, (torch.ones(3),), {"x": {0: "n"}})
>>> cls.__name__, args[0].shape, shapes
('Twice', torch.Size([3]), {'x': {0: 'n'}})
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ..core.errors import SymgradError, UnsupportedError
from .functions import input_names


@contextmanager
def _recorded_applications(calls: list) -> Iterator[None]:
    """Record each ``Function.apply(*args)`` as ``(cls, args, kwargs)`` while the block runs (then run it)."""
    import torch

    base = torch.autograd.Function
    original = base.__dict__["apply"]

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        calls.append((cls, args, kwargs))
        return original.__func__(cls, *args, **kwargs)

    base.apply = classmethod(apply)
    try:
        yield
    finally:
        base.apply = original


def applied_function(
    fn: Any, example_inputs: tuple, dynamic_shapes: Mapping[str, Mapping[int, str]] | None
) -> tuple[type, tuple, dict | None]:
    """(the Function ``fn`` applies, the arguments it gets, their ``dynamic_shapes``) from one run of ``fn``."""
    import torch

    label = getattr(fn, "__name__", type(fn).__name__)
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    chosen = any(x.requires_grad for x in tensors)
    inputs = tuple(
        x.detach().clone().requires_grad_(x.requires_grad or (not chosen and x.is_floating_point()))
        if isinstance(x, torch.Tensor)
        else x
        for x in example_inputs
    )
    calls: list = []
    try:
        with _recorded_applications(calls):
            fn(*inputs)
    except SymgradError:
        raise
    except Exception as error:  # the user's code failed as Python code
        raise SymgradError(f"{label} raised {type(error).__name__}: {error}") from error
    classes = list(dict.fromkeys(cls for cls, _, _ in calls))
    if not classes:
        raise UnsupportedError(
            f"{label} applies no torch.autograd.Function: its gradient is autograd's own, with no hand-written "
            "backward to verify"
        )
    if len(classes) > 1:
        raise UnsupportedError(
            f"{label} applies {len(classes)} Functions ({', '.join(c.__name__ for c in classes)}): verify each one "
            "on its own"
        )
    cls, args, kwargs = calls[0]
    if cls.__name__.startswith("GeneratedBackwardFor_"):  # torch.library's Function for a custom op
        raise UnsupportedError(f"{label} calls a torch.library custom op: give verify_backward the op itself")
    if kwargs:
        bound = inspect.signature(cls.forward).bind(*args, **kwargs)
        bound.apply_defaults()
        args = bound.args
    examples = tuple(
        a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args
    )
    shapes = _carried_shapes(cls, args, inputs, input_names(fn, len(inputs)), dynamic_shapes or {})
    return cls, examples, shapes or None


def _carried_shapes(cls: type, args: tuple, inputs: tuple, names: list[str], given: Mapping) -> dict:
    """``dynamic_shapes`` for the Function's arguments, from those of ``fn``'s inputs (see the module docstring)."""
    import torch

    unknown = sorted(set(given) - set(names))
    if unknown:
        raise SymgradError(f"dynamic_shapes names {unknown[0]}, which is no argument of the function")
    example_size: dict[str, int] = {}
    fixed: set[int] = set()
    for name, x in zip(names, inputs):
        axes = given.get(name) or {}
        for axis, size in enumerate(getattr(x, "shape", ())):
            if axis in axes:
                example_size[str(axes[axis])] = size
            else:
                fixed.add(size)
    carried: dict[str, dict[int, str]] = {}
    for arg_name, arg in zip(input_names(cls, len(args)), args):
        if not isinstance(arg, torch.Tensor):
            continue
        same = next((n for n, x in zip(names, inputs) if x is arg), None)
        if same is not None:
            if given.get(same):
                carried[arg_name] = dict(given[same])
            continue
        axes = {}
        for axis, size in enumerate(arg.shape):
            symbols = [s for s, n in example_size.items() if n == size]
            if not symbols:
                continue
            if len(symbols) > 1 or size in fixed:
                could = " and ".join([*symbols, *(["a fixed size"] if size in fixed else [])])
                raise UnsupportedError(
                    f"{cls.__name__}'s input {arg_name} has size {size} on axis {axis}, which could be {could}: "
                    "give the example inputs distinct sizes"
                )
            axes[axis] = symbols[0]
        if axes:
            carried[arg_name] = axes
    return carried
