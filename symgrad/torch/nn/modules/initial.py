"""Initial parameters as torch draws them: the real ``torch.nn`` layer, built from symgrad's random generator.

A layer's default initialisation is torch's own code: the same real layer is built with the same arguments,
drawing from torch's generator, which :func:`symgrad.torch.manual_seed` seeds, so that a script using
``symgrad.torch`` gets the numbers the same script gets with torch. With symbolic sizes the parameters are
symbols without numbers. This is the one module of :mod:`symgrad.torch.nn.modules` that imports torch.

>>> import symgrad.torch as torch
>>> _ = torch.manual_seed(0)
>>> state = initial_parameters("Linear", {"weight": (1, 2), "bias": (1,)}, 2, 1)
>>> round(state["weight"].tolist()[0][0], 6)
-0.005294
"""

from __future__ import annotations

from typing import Any

from ....core.constructors import dtype_name, symbols
from ....core.dims import is_concrete
from ....core.errors import UnsupportedError
from ....core.tensor import auto_name


def torch_layer(kind: str, *args: Any, device: Any = None, dtype: Any = None, **kwargs: Any) -> Any:
    """The real ``torch.nn.<kind>(*args, **kwargs)``, its random numbers drawn from torch's generator (symgrad's
    random functions draw from it too, see :func:`symgrad.torch.creation.random_generator`)."""
    import torch

    if device is not None and str(device) != "cpu":
        raise UnsupportedError(f"symgrad computes on the CPU; device={device!r} is not supported, use device=None")
    if dtype is not None:
        kwargs["dtype"] = getattr(torch, dtype_name(dtype))
    return getattr(torch.nn, kind)(*args, **kwargs)


def initial_parameters(kind: str, shapes: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The initial value of each named parameter or buffer of ``shapes`` (None where the shape is None): the real
    layer's tensors when every size is a number, else symbols of the symbolic shapes."""
    sizes = [d for shape in shapes.values() if shape is not None for d in shape]
    if is_concrete(sizes):
        state = torch_layer(kind, *args, **kwargs).state_dict()
        return {name: state[name] if shape is not None else None for name, shape in shapes.items()}
    dtype = dtype_name(kwargs.get("dtype")) or "float32"
    return {
        name: symbols(auto_name(name), shape, dtype=dtype) if shape is not None else None
        for name, shape in shapes.items()
    }


__all__ = ["initial_parameters", "torch_layer"]
