"""The numbers a traced leaf stands for: a read-only float64 copy of a real tensor's values, made once and shared by
every trace of the tensor while its bits are unchanged (the probe at other sizes, a model's other mode).

>>> import torch
>>> w = torch.ones(3)
>>> float64_values(w) is float64_values(w)
True
>>> _ = w.data.mul_(2)  # through .data: no version counter sees it
>>> float64_values(w).tolist()
[2.0, 2.0, 2.0]
"""

from __future__ import annotations

import weakref
from typing import Any

# each traced tensor's float64 values, while a trace holds them: the same array for every trace of an unchanged
# tensor (the probe at other sizes, the other mode's trace), where a model of 124M parameters took 1 GB each time.
# By id, since a tensor's == compares entries: the tensor, and its values, held weakly.
_VALUES: dict[int, tuple[weakref.ref, weakref.ref]] = {}
_CHUNK = 1 << 20  # entries compared at a time, so that the comparison allocates little


def float64_values(real: Any) -> Any:
    """``real``'s values as a read-only float64 array: one already made, where its bits are still ``real``'s."""
    known = _VALUES.get(id(real))
    values = known[1]() if known is not None and known[0]() is real else None
    if values is not None and same_bits(real, values):
        return values
    values = real.detach().cpu().double().numpy()
    if str(real.dtype) == "torch.float64":  # .double() gave the tensor itself, whose memory the model writes
        values = values.copy()
    values.flags.writeable = False
    if str(real.dtype) in ("torch.float32", "torch.float64") and real.is_contiguous():
        key = id(real)
        _VALUES[key] = (weakref.ref(real, lambda _: _VALUES.pop(key, None)), weakref.ref(values))
    return values


def same_bits(real: Any, values: Any) -> bool:
    """Whether the float64 ``values`` made from ``real`` still hold its numbers bit for bit (a sign of zero and a
    nan's included), compared a chunk at a time; the tensor may have changed through ``.data``, which no version
    counter sees."""
    flat = real.detach().cpu().reshape(-1).numpy()
    copied = values.reshape(-1)
    if flat.shape != copied.shape:
        return False
    bits = "<i4" if flat.dtype.itemsize == 4 else "<i8"
    for start in range(0, flat.size, _CHUNK):
        ours = copied[start : start + _CHUNK].astype(flat.dtype).view(bits)
        if not (ours == flat[start : start + _CHUNK].view(bits)).all():
            return False
    return True
