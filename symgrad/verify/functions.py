"""What verify_backward needs to know of a hand-written ``torch.autograd.Function``: its class (a custom op's
included), its inputs' names, how its forward runs (either style), and which of torch's hooks it overrides.

>>> import torch
>>> class Scale(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x, factor):
...         return x * factor
...     @staticmethod
...     def backward(ctx, g):
...         return g, None
>>> input_names(Scale), is_once_differentiable(Scale)
(['x', 'factor'], False)
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

from ..core.errors import SymgradError, UnsupportedError


class Context:
    """What a Function's forward and backward see as ``ctx``: saved tensors, ``needs_input_grad`` and attributes."""

    def __init__(self, needs: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs
        self.saved: tuple = ()
        self.non_differentiable: list[Any] = []
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        self.saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        return self.saved

    @property
    def saved_variables(self) -> tuple:
        """torch's deprecated spelling of :attr:`saved_tensors`, which torch still answers, with a warning."""
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable.extend(tensors)

    def mark_dirty(self, *tensors: Any) -> None:
        raise UnsupportedError("the Function changes its inputs in place (ctx.mark_dirty); verify_backward cannot")

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


def is_function_like(fn: Any) -> bool:
    """Whether ``fn`` is a Function subclass or a custom op (anything else callable is code that applies one)."""
    import torch

    return isinstance(fn, type) or isinstance(fn, torch.library.CustomOpDef)


def function_class(fn: Any) -> type:
    """``fn`` as a ``torch.autograd.Function`` subclass: itself, or the Function a custom op stands for."""
    import torch

    if isinstance(fn, type) and issubclass(fn, torch.autograd.Function):
        return fn
    if isinstance(fn, torch.library.CustomOpDef):
        return _custom_op_function(fn)
    raise SymgradError(
        f"verify_backward takes a torch.autograd.Function subclass or a torch.library custom op, not "
        f"{type(fn).__name__}"
    )


def _custom_op_function(op: Any) -> type:
    """A ``torch.library.custom_op`` with ``register_autograd`` as the Function it stands for: its Python
    implementation as the forward, its setup_context and backward as they are (torch keeps them on the op)."""
    import torch

    backward = getattr(op, "_backward_fn", None)
    implementation = getattr(op, "_init_fn", None)
    if backward is None or implementation is None:
        raise SymgradError(f"the custom op {op._name} has no backward: give it one with register_autograd")
    setup = getattr(op, "_setup_context_fn", None) or (lambda ctx, inputs, output: None)
    return type(
        op._name,
        (torch.autograd.Function,),
        {"forward": staticmethod(implementation), "setup_context": staticmethod(setup),
         "backward": staticmethod(backward)},
    )  # fmt: skip


def _new_style(cls: type) -> bool:
    """Whether forward takes no ctx (torch's ``setup_context`` style)."""
    import torch

    return inspect.getattr_static(cls, "setup_context") is not inspect.getattr_static(
        torch.autograd.Function, "setup_context"
    )


def run_forward(cls: type, ctx: Context, inputs: tuple) -> Any:
    if _new_style(cls):
        out = cls.forward(*inputs)
        cls.setup_context(ctx, inputs, out)
        return out
    return cls.forward(ctx, *inputs)


def as_tuple(value: Any) -> tuple:
    """What a forward, backward or jvp returns, as a tuple (one tensor is a tuple of one)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def input_names(fn: Any, count: int | None = None) -> list[str]:
    """The names of a Function's inputs, from its forward (without ``ctx``), or of a plain callable's arguments;
    ``x<i>`` past them, up to ``count``."""
    function = isinstance(fn, type)
    try:
        parameters = list(inspect.signature(fn.forward if function else fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        parameters = []
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = names[1:] if function and not _new_style(fn) else names  # forward(ctx, ...): ctx is not an input
    if count is None:
        return names
    return (names + [f"x{i}" for i in range(len(names), count)])[:count]


def input_defaults(fn: Any) -> dict[str, Any]:
    """The default values of a Function's forward's inputs, or of a plain callable's arguments, by name."""
    try:
        parameters = inspect.signature(fn.forward if isinstance(fn, type) else fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def overrides(cls: type, name: str) -> bool:
    import torch

    return inspect.getattr_static(cls, name) is not inspect.getattr_static(torch.autograd.Function, name)


def is_once_differentiable(cls: type) -> bool:
    """Whether the backward is wrapped in torch's ``once_differentiable``."""
    import torch

    # the wrapper torch makes runs one code object, whatever it wraps
    wrapper = torch.autograd.function.once_differentiable(lambda ctx, *grads: grads)
    return getattr(cls.backward, "__code__", None) is wrapper.__code__
