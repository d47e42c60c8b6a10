"""Ops that make tensors from their attributes: ``full`` (a number everywhere) and ``empty`` (memory not yet
written, which code fills before it reads it).

>>> import symgrad as sg
>>> from symgrad.core import apply
>>> apply("full", shape=(2,), value=3).tolist()
[3.0, 3.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ..core.dims import stood_in
from ..core.errors import UnsupportedError
from ..core.registry import Op, register

register(
    Op(
        "full",
        lambda shape, value: tuple(shape),
        lambda shape, value: np.full(shape, sympy.sympify(value), dtype=object),
        lambda torch, shape, value: torch.full(tuple(shape), float(value), dtype=torch.float64),
        "torch.full({shape}, {value})",
        r"{value}",
        "none",
        differentiable=False,
        vjp=lambda g, out, shape, value: (),
        tags=frozenset({"creation"}),
        stand_in_attrs=lambda mapping, shape, value: {"shape": stood_in(shape, mapping), "value": value},
    )
)


def _uninitialised(*_: Any, **__: Any) -> Any:
    raise UnsupportedError(
        "the code reads uninitialised memory (torch.empty, new_empty or empty_like), whose numbers are whatever the "
        "memory held: fill it before reading it (fill_, zero_, copy_, a random draw), or use zeros"
    )


register(
    Op(
        "empty",
        lambda like, shape: tuple(shape),
        _uninitialised,
        lambda torch, like, shape: torch.full(tuple(int(d) for d in shape), float("nan"), dtype=like.dtype),
        "{0}.new_empty({shape})",
        r"\varnothing",
        "none",
        differentiable=False,
        vjp=lambda g, out, like, shape: (None,),
        float64=_uninitialised,
        stand_in_attrs=lambda mapping, like, shape: {"shape": stood_in(shape, mapping)},
    )
)
register(
    Op(
        "empty_new",
        lambda shape, dtype: tuple(shape),
        _uninitialised,
        lambda torch, shape, dtype: torch.full(tuple(int(d) for d in shape), float("nan"), dtype=getattr(torch, dtype)),
        "torch.empty({shape}, dtype=torch.{dtype})",
        r"\varnothing",
        "none",
        differentiable=False,
        vjp=lambda g, out, shape, dtype: (),
        tags=frozenset({"creation"}),
        float64=_uninitialised,
        stand_in_attrs=lambda mapping, shape, dtype: {"shape": stood_in(shape, mapping), "dtype": dtype},
    )
)
"""``empty(like, shape)`` (like's dtype and device) and ``empty_new(shape, dtype)``: memory not yet written
(new_empty, empty_like, torch.empty). Code that fills it before reading
it (``empty_like(x).fill_(v)``, ``x.new_empty(shape).bernoulli_(p)``) never reads it: the fill is the node that
stands for the tensor. Reading it is refused in one line."""
