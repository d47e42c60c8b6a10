"""Numbers in lower precision as torch computes them, for the graphs ``sg.trace`` makes.

A traced model that casts to float32 (``x.float()``), or runs in float16 or bfloat16, has torch round every op
in that dtype; symgrad's own numbers are float64. The tracer gives its leaves :data:`TORCH_NUMBERS`, which the
nodes built from them inherit (see :class:`symgrad.core.numbers.NumbersBy`): a node in a precision below float64
is then computed by its row's torch function on torch tensors of the nodes' dtypes, so its numbers are torch's.

>>> import torch, symgrad as sg
>>> x = torch.tensor([1.0, 3.0], dtype=torch.float64)
>>> traced = sg.trace(lambda x: (x.float() / 3).sum(), x)
>>> traced.output.tolist() == (x.float() / 3).sum().item()
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.numbers import is_weak_scalar, numeric_dtype
from ..core.tensor import Tensor, constant


class TorchNumbers:
    """Computes an op node's numbers with its row's torch function, inputs in their own dtypes."""

    def node_numbers(self, node: Tensor, numbers_of: Callable[[Tensor], np.ndarray]) -> np.ndarray | None:
        try:
            import torch
        except ImportError:  # symgrad's own numbers, then
            return None

        wanted = _dtype(torch, node.dtype)
        if wanted is None:
            return None
        inputs: list[Any] = []
        for part in node.inputs:
            dtype = _dtype(torch, part.dtype)
            if dtype is None:
                return None
            numbers = np.array(numbers_of(part))
            if is_weak_scalar(part):  # a Python number (or one made of them): torch's double-precision Scalar
                inputs.append(numbers.item())
            else:
                inputs.append(torch.from_numpy(numbers).to(dtype))
        try:
            with torch.no_grad():
                result = node.op.torch(torch, *inputs, **node.attrs)
        except Exception:  # a row whose torch function takes another form: symgrad's float64 numbers
            return None
        if not isinstance(result, torch.Tensor) or tuple(result.shape) != tuple(int(d) for d in node.shape):
            return None
        return result.to(wanted).cpu().to(_numeric(torch, node.dtype)).numpy().astype(numeric_dtype(node.dtype))


def _dtype(torch: Any, name: str) -> Any:
    return getattr(torch, name, None) if name in _KNOWN else None


def _numeric(torch: Any, name: str) -> Any:
    kind = numeric_dtype(name)
    return torch.bool if kind is np.bool_ else (torch.int64 if kind is np.int64 else torch.float64)


def constant_of(value: Any, name: str | None = None) -> Tensor:
    """A torch tensor as a constant of the graph (its numbers, which compute as torch does below float64), named
    ``name`` if given (data an input holds)."""
    import torch

    data = value.detach().cpu()
    if data.dtype.is_floating_point:
        made = constant(data.double().numpy(), dtype=str(data.dtype).replace("torch.", ""), name=name)
    elif data.dtype == torch.bool:
        made = constant(data.numpy(), dtype="bool", name=name)
    else:  # an integer tensor keeps its dtype (a uint8 reserve, int32 indices); its numbers are int64
        made = constant(data.long().numpy(), dtype=str(data.dtype).replace("torch.", ""), name=name)
    made.numbers_by = _TORCH
    return made


_KNOWN = frozenset({"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"})
TORCH_NUMBERS = _TORCH = TorchNumbers()
"""The one evaluator the tracer gives its leaves."""
