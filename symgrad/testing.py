"""Helpers for a project's own tests: ``assert_backward_correct(Fn, *example_inputs)`` fails with symgrad's
report when a hand-written ``torch.autograd.Function``'s backward is not the vector-Jacobian product of its
forward (see :func:`symgrad.verify_backward`).

>>> import torch
>>> class Double(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         return 2 * x
...     @staticmethod
...     def backward(ctx, g):
...         return 2 * g
>>> assert_backward_correct(Double, torch.ones(3, dtype=torch.float64))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .verify import verify_backward


def assert_backward_correct(
    fn: Any, *example_inputs: Any, dynamic_shapes: Mapping[str, Mapping[int, str]] | None = None, order: int = 2
) -> None:
    """Raise AssertionError with the verdict's report unless every gradient ``fn.backward`` returns is proved (and,
    with ``order=2``, differentiating through it gives the true second derivatives)."""
    verdict = verify_backward(fn, *example_inputs, dynamic_shapes=dynamic_shapes, order=order)
    if not verdict.held:
        raise AssertionError("\n" + verdict.report())


def verify_spec(*, input: Any = (), value: Any = (), number: Any = (), order: int = 2) -> Any:  # noqa: A002 - the command line's option names
    """A decorator that gives a Function the inputs ``symgrad verify PATH`` checks it at, beside its code
    (the fields of ``[tool.symgrad.verify]``: ``input=["x=m,n"]``, ``value``, ``number`` and ``order``).

    >>> import torch
    >>> @verify_spec(input=["x=m,n"], order=1)
    ... class Double(torch.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         return 2 * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         return 2 * g
    >>> Double.symgrad_verify
    {'input': ['x=m,n'], 'value': [], 'number': [], 'order': 1}
    """
    spec = {"input": _listed(input), "value": _listed(value), "number": _listed(number), "order": order}

    def mark(fn: Any) -> Any:
        fn.symgrad_verify = spec
        return fn

    return mark


def _listed(given: Any) -> list[str]:
    return [given] if isinstance(given, str) else list(given)
