"""The tracer under ``torch.autocast``: each call computes at the precision torch's autocast chose for it.

Autocast casts an op's floating inputs (float64 excepted) to its lower precision (matrix products, convolutions),
to float32 (losses, reductions that need the range) or to the widest of them (``cat``), by lists kept in torch's
C++ dispatcher. The tracer does not copy those lists: it reads each call's choice off the real result, whose
dtype says where torch computed it, and makes the same casts on the symbolic inputs, so that the graph holds them
as explicit casts and their backward casts the gradient back, as autograd does.

>>> import torch, symgrad as sg
>>> w, x = torch.randn(3, 2), torch.randn(2, 4)
>>> with torch.autocast("cpu", dtype=torch.bfloat16):
...     traced = sg.trace(lambda w, x: (w @ x).float().sum(), w, x)
>>> traced.autocast
(('cpu', 'bfloat16'),)
>>> print(traced.output.name)
(w.to(torch.bfloat16) @ x.to(torch.bfloat16)).to(torch.float32).sum()
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..core.dtypes import is_floating
from ..core.errors import SymgradError, UnsupportedError
from ..core.tensor import Tensor

_DEVICE_TYPES = ("cpu", "cuda")


def autocast_state() -> tuple[tuple[str, str], ...]:
    """The device types whose autocast is on, with its dtype: ``(("cpu", "bfloat16"),)``, or ``()``."""
    import torch

    return tuple(
        (device, str(torch.get_autocast_dtype(device)).removeprefix("torch."))
        for device in _DEVICE_TYPES
        if torch.is_autocast_enabled(device)
    )


@contextlib.contextmanager
def in_autocast_state(state: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """Run the block under the autocast ``state`` (from :func:`autocast_state`) and no other."""
    import torch

    with contextlib.ExitStack() as stack:
        for device in _DEVICE_TYPES:
            dtype = dict(state).get(device)
            enabled = dtype is not None
            stack.enter_context(
                torch.autocast(device, dtype=getattr(torch, dtype) if enabled else None, enabled=enabled)
            )
        yield


def _first_floating(value: Any, kind: type) -> Any:
    if isinstance(value, kind):
        floating = is_floating(value.dtype) if kind is Tensor else value.is_floating_point()
        return value if floating else None
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_floating(item, kind)
            if found is not None:
                return found
    return None


def _cast(value: Any, dtype: str) -> Any:
    """``value`` with each floating symbolic tensor (float64 excepted, as autocast leaves it) cast to ``dtype``."""
    if isinstance(value, Tensor):
        return value.to(dtype) if is_floating(value.dtype) and value.dtype not in ("float64", dtype) else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(item, dtype) for item in value)
    return value


def as_autocast_computes(name: str, site: Callable[[], str], real: Any, symbolic_args: tuple, call: Callable) -> Any:
    """The symbolic call ``call(symbolic_args)`` (args, kwargs), made on inputs cast as torch's autocast cast them
    where the real result's dtype shows it did: a lower-precision matrix product, a float32 loss. A call whose
    inputs' own dtypes give that dtype (a bfloat16 activation plus a float32 residual) is left as it is."""
    import torch

    real_tensor = _first_floating(real, torch.Tensor)
    autocast = real_tensor is not None and torch.is_autocast_enabled(real_tensor.device.type)
    try:
        result = call(symbolic_args)
    except SymgradError:  # a product of a bfloat16 activation and a float32 weight: the casts decide
        if not autocast:
            raise
        result = None
    if not autocast:
        return result
    wanted = str(real_tensor.dtype).removeprefix("torch.")
    if result is not None and getattr(_first_floating(result, Tensor), "dtype", wanted) == wanted:
        return result
    args, kwargs = symbolic_args
    again = call((_cast(args, wanted), {k: _cast(v, wanted) for k, v in kwargs.items()}))
    if getattr(_first_floating(again, Tensor), "dtype", None) != wanted:
        raise UnsupportedError(
            f"{name} ({site()}) computes in {wanted} under torch.autocast, at a precision symgrad cannot follow "
            "there: trace it outside the autocast region"
        )
    return again


def again_in_autocast_state(state: tuple[tuple[str, str], ...], call: Callable[[], Any]) -> Any:
    """``call()`` under the autocast ``state`` a trace ran under (a trace made again, in the model's other mode)."""
    with in_autocast_state(state):
        return call()
