"""torch's other names for its functions and methods (``torch.subtract`` is ``torch.sub``, ``x.swapaxes`` is
``x.transpose``), and the methods torch has for its functions (``x.outer(y)`` is ``torch.outer(x, y)``).

Both are data: :data:`FUNCTIONS` maps an alias to the function it names; :data:`METHODS` lists the functions
that torch's Tensor also has as methods taking the tensor first. :func:`install` makes them, without replacing
anything symgrad already defines.

>>> import symgrad.torch as torch
>>> x = torch.tensor([3.0, 1.0], name="x")
>>> torch.subtract(x, 1).tolist(), x.multiply(2).tolist(), x.outer(x).shape
([2.0, 0.0], [6.0, 2.0], (2, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..core.registry import register_spelling, spelled
from ..core.tensor import Tensor

FUNCTIONS = {
    "absolute": "abs", "multiply": "mul", "subtract": "sub", "arctan2": "atan2", "greater_equal": "ge",
    "greater": "gt", "less_equal": "le", "less": "lt", "not_equal": "ne", "negative": "neg", "fix": "trunc",
    "ger": "outer", "row_stack": "vstack", "moveaxis": "movedim", "swapdims": "transpose", "swapaxes": "transpose",
    "inverse": "linalg.inv", "matrix_power": "linalg.matrix_power", "concat": "cat", "concatenate": "cat",
    "clip": "clamp", "true_divide": "div", "divide": "div", "conv1d": "nn.functional.conv1d",
    "conv2d": "nn.functional.conv2d", "conv3d": "nn.functional.conv3d",
    "conv_transpose1d": "nn.functional.conv_transpose1d", "conv_transpose2d": "nn.functional.conv_transpose2d",
    "conv_transpose3d": "nn.functional.conv_transpose3d", "group_norm": "nn.functional.group_norm",
    "layer_norm": "nn.functional.layer_norm", "rms_norm": "nn.functional.rms_norm", "adjoint": "Tensor.mH",
}  # fmt: skip

METHODS = (
    "absolute", "multiply", "subtract", "arctan2", "divide", "true_divide", "greater_equal", "greater",
    "less_equal", "less", "not_equal", "negative", "fix", "ger", "outer", "moveaxis", "movedim", "swapdims",
    "swapaxes", "adjoint", "logit", "det", "inverse", "matrix_power", "maximum", "minimum", "atan2", "hypot",
    "logaddexp", "xlogy", "lerp", "addcmul", "addcdiv", "where", "mvlgamma", "ldexp", "frexp", "sgn",
    "angle", "positive", "conj", "conj_physical", "resolve_conj", "resolve_neg", "isreal", "dot", "inner", "kron",
    "cross", "tile", "diagflat", "logdet", "slogdet", "cumsum", "cumprod", "logsumexp", "nansum", "nanmean",
    "clip", "clamp_min", "clamp_max", "square", "float_power", "floor_divide", "copysign", "heaviside",
)  # fmt: skip


def _resolve(root: ModuleType, path: str) -> Any:
    target: Any = root
    for part in path.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def _as_function(prop: property) -> Callable[[Tensor], Any]:
    return lambda input: prop.fget(input)


def install(namespace: ModuleType) -> list[str]:
    """Define the aliases in ``namespace`` (symgrad.torch) and register the methods on Tensor; returns the
    function names it defined, for ``__all__``."""
    defined = []
    for alias, target in FUNCTIONS.items():
        if hasattr(namespace, alias):
            continue
        if target.startswith("Tensor."):
            found = _as_function(getattr(Tensor, target.removeprefix("Tensor.")))
        else:
            found = _resolve(namespace, target)
        if found is not None:
            setattr(namespace, alias, found)
            defined.append(alias)
    for name in METHODS:
        if getattr(Tensor, name, None) is not None or spelled("Tensor", name) is not None:
            continue
        function = getattr(namespace, name, None)
        if function is not None:
            register_spelling(f"Tensor.{name}", function)
    return defined
