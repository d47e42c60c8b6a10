"""The numbers a traced leaf stands for: a copy of a real tensor as the trace found it, made once and shared by every
trace of the tensor while its bits are unchanged (the probe at other sizes, a model's other mode). The copy keeps
the tensor's own dtype; its float64 values, which only entrywise work reads, are made from it when first asked for.

>>> import torch
>>> w = torch.ones(3)
>>> snapshot_of(w) is snapshot_of(w)
True
>>> _ = w.data.mul_(2)  # through .data: no version counter sees it
>>> snapshot_of(w).float64().tolist()
[2.0, 2.0, 2.0]
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

# each traced tensor's snapshot, while a trace holds it: the same for every trace of an unchanged tensor, where a
# model of 124M parameters took 1 GB each time. By id, since a tensor's == compares entries; held weakly.
_SNAPSHOTS: dict[int, tuple[weakref.ref, weakref.ref]] = {}
_INTEGER_VIEW = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}
# ids of the snapshots known to hold their tensors' bits, while only symgrad runs (between the runs of one trace)
_TRUSTED: set[int] | None = None


class Snapshot:
    """A real tensor's values as a trace found them: a detached CPU copy in its own dtype, and, on demand, the
    read-only float64 array a leaf's numbers are."""

    def __init__(self, real: Any) -> None:
        self.copy = real.detach().to("cpu", copy=True)
        self._float64: Any = None

    def float64(self) -> Any:
        if self._float64 is None:
            values = self.copy.double().numpy()  # for a float64 copy, its own memory, which nothing writes
            values.flags.writeable = False
            self._float64 = values
        return self._float64

    def holds(self, real: Any) -> bool:
        """Whether ``real`` still has these bits (a sign of zero and a nan's included); it may have changed
        through ``.data``, which no version counter sees."""
        import torch

        current = real.detach()
        if current.shape != self.copy.shape or current.dtype != self.copy.dtype:
            return False
        if not (current.dtype.is_floating_point or current.dtype.is_complex):
            return bool(torch.equal(current.cpu(), self.copy))
        # compared as integers of the same width: == would take -0.0 for 0.0 and a nan for no nan
        bits = getattr(torch, _INTEGER_VIEW.get(current.element_size(), "uint8"))
        ours, theirs = (t.cpu().reshape(-1).contiguous().view(bits) for t in (current, self.copy))
        return bool(torch.equal(ours, theirs))


def snapshot_of(real: Any) -> Snapshot:
    """``real``'s snapshot: one already made, where its bits are still ``real``'s."""
    known = _SNAPSHOTS.get(id(real))
    made = known[1]() if known is not None and known[0]() is real else None
    if made is not None and ((_TRUSTED is not None and id(made) in _TRUSTED) or made.holds(real)):
        trust(made)
        return made
    made = Snapshot(real)
    key = id(real)
    _SNAPSHOTS[key] = (weakref.ref(real, lambda _: _SNAPSHOTS.pop(key, None)), weakref.ref(made))
    trust(made)
    return made


def trust(made: Snapshot) -> None:
    """Take ``made`` as holding its tensor's bits until the user's code runs (see :func:`symgrad_alone`)."""
    if _TRUSTED is not None:
        _TRUSTED.add(id(made))


def distrust() -> None:
    """The user's code runs now: every snapshot is compared again before it is reused."""
    if _TRUSTED is not None:
        _TRUSTED.clear()


@contextlib.contextmanager
def symgrad_alone() -> Iterator[None]:
    """Between the runs of one trace, only symgrad touches the model: a snapshot checked (or made) once is not
    compared with its tensor again until :func:`distrust` says the user's code ran."""
    global _TRUSTED
    outer, _TRUSTED = _TRUSTED, set()
    try:
        yield
    finally:
        _TRUSTED = outer
