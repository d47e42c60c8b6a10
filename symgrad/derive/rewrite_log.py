"""The record a simplification keeps of its rewrites, for proofs that check them one by one.

>>> import symgrad as sg
>>> from symgrad.derive.simplify import simplify
>>> x = sg.symbols("x", (2,))
>>> log = []
>>> simplify([x * 1], log=log)[0] is x, len(log)
(True, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.tensor import Tensor


@dataclass(frozen=True)
class Rewrite:
    """One step of a simplification: ``before`` (an op applied to already simplified inputs, or an arithmetic
    region as fuse found it) was replaced by ``after``. ``frontier`` holds the ids of the existing nodes ``after``
    reads; the rest of ``after`` is new. ``closed``: ``before`` too reads only the frontier (an arithmetic region
    and its atoms), however deep. A proof checks each step on its own (see :mod:`symgrad.verify.rewrites`)."""

    before: Tensor
    after: Tensor
    frontier: frozenset[int]
    closed: bool = False
