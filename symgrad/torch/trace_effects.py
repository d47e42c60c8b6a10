"""What traced code does besides computing a result: in-place updates, running statistics, random draws, and
numbers read out of tensors. :mod:`.tracing` asks this module how to follow each such call.

- An in-place op (``x.add_(1)``, ``out += identity``, ``F.relu(x, inplace=True)``) is traced as its out-of-place
  op, and the real tensor then stands for the result, as it does in torch. A tensor that is a view, or that
  has views, is refused: they would not see the update.
- ``batch_norm`` in training mode updates its running statistics: the tracer records the update (see
  :class:`BatchNormUpdate`), and the buffers then stand for their new values.
- A buffer changed in place by other code is recorded as an :class:`Assign` of its final value.
- A number read out of a tensor that depends on the inputs, the parameters or the buffers (``x.item()``,
  ``if mask.any():``, ``float(self.num_batches_tracked)``) would be a constant of the traced graph, right only
  for these values: it is refused.

>>> out_of_place("method", "add_"), out_of_place("method", "__iadd__"), out_of_place("method", "requires_grad_")
('add', '__add__', None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.errors import UnsupportedError
from ..core.tensor import Tensor

# Methods whose trailing underscore does not mean "in place on the values" (or that symgrad never follows).
_NOT_VALUE_UPDATES = frozenset(
    {"requires_grad_", "retain_grad_", "share_memory_", "pin_memory_", "record_stream_", "grad_", "detach_"}
)
_OPERATORS = {
    "__iadd__": "__add__",
    "__isub__": "__sub__",
    "__imul__": "__mul__",
    "__itruediv__": "__truediv__",
    "__idiv__": "__truediv__",
    "__ifloordiv__": "__floordiv__",
    "__imod__": "__mod__",
    "__ipow__": "__pow__",
    "__imatmul__": "__matmul__",
    "__iand__": "__and__",
    "__ior__": "__or__",
    "__ixor__": "__xor__",
    "__ilshift__": "__lshift__",
    "__irshift__": "__rshift__",
}
VALUE_READS = frozenset(
    {"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__complex__", "numpy", "__array__"}
)
# torch's random functions and methods besides dropout (whose noise symgrad draws itself, see ops.draws)
_RANDOM = frozenset(
    {
        "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "normal", "bernoulli", "multinomial",
        "poisson", "randperm", "normal_", "uniform_", "bernoulli_", "exponential_", "geometric_", "cauchy_",
        "log_normal_", "random_",
    }
)  # fmt: skip


def draws_random(kind: str, name: str, target: Any) -> bool:
    """Whether a torch call draws random numbers (other than dropout's)."""
    return (target if kind == "method" else name) in _RANDOM


@dataclass(frozen=True)
class BatchNormUpdate:
    """``batch_norm`` in training mode updated these buffers (paths of the model's buffers, or None) from the
    batch ``input``: emitted code lets torch's own kernel do the same."""

    input: Tensor = field(repr=False)
    running_mean: str | None
    running_var: str | None
    momentum: float
    eps: float


@dataclass(frozen=True)
class Assign:
    """A buffer (its path in the model) changed in place; ``value`` is its new value, read off its old one."""

    buffer: str
    value: Tensor = field(repr=False)


_BATCH_NORM = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps")


def batch_norm_arguments(args: tuple, kwargs: dict) -> dict[str, Any]:
    """An F.batch_norm call's arguments by name, with torch's defaults."""
    bound = dict(zip(_BATCH_NORM, args))
    bound.update(kwargs)
    return {"weight": None, "bias": None, "training": False, "momentum": 0.1, "eps": 1e-5, **bound}


def batch_norm_updates(args: tuple, kwargs: dict) -> bool:
    """Whether an F.batch_norm call updates running statistics (training mode, with statistics to update)."""
    given = batch_norm_arguments(args, kwargs)
    return bool(given["training"]) and (given["running_mean"] is not None or given["running_var"] is not None)


def out_of_place(kind: str, name: str) -> str | None:
    """The out-of-place spelling of an in-place method or function (``add_`` → ``add``), else None."""
    if name in _OPERATORS:
        return _OPERATORS[name]
    if name.endswith("_") and not name.endswith("__") and not name.startswith("_") and name not in _NOT_VALUE_UPDATES:
        return name[:-1]
    return None


def check_update(real: Any, viewed: set[int], name: str, site: str) -> None:
    """Refuse an in-place update of a view, or of a tensor that has views: they share storage in torch, and
    symgrad's graph would update one and not the other."""
    if real._is_view() or id(real) in viewed:
        raise UnsupportedError(
            f"{name} ({site}) updates a tensor in place that shares storage with another (a view such as x[0], "
            "x.view(...) or x.T); symgrad would update one and not the other: write it out of place"
        )


def check_value_read(name: str, symbolic: Any, site: str) -> None:
    """Refuse reading a number out of a tensor that depends on the inputs, parameters or buffers."""
    if isinstance(symbolic, Tensor) and symbolic.leaves():
        leaves = ", ".join(sorted(symbolic.leaves())[:3])
        raise UnsupportedError(
            f"{name} ({site}) reads a number out of a tensor computed from {leaves}; the traced graph would "
            "hold that number as a constant, right only for these values: compute with tensors instead"
        )


def without_inplace(kwargs: dict) -> dict:
    """A ``torch.nn.functional`` call's keywords with ``inplace=True`` made False: the tracer follows the update
    by rebinding the real tensor to the out-of-place result."""
    return {**kwargs, "inplace": False} if kwargs.get("inplace") else kwargs


def _mode_dependent_classes() -> tuple:
    """torch.nn's modules whose computation depends on their training flag: batch and instance norms (running
    statistics), dropouts, RReLU, and the modules with a dropout inside (attention, transformers, RNNs)."""
    import torch.nn as nn

    norms = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm, nn.InstanceNorm1d, nn.InstanceNorm2d,
             nn.InstanceNorm3d)  # fmt: skip
    dropouts = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.FeatureAlphaDropout)
    transformers = (nn.Transformer, nn.TransformerEncoder, nn.TransformerDecoder)
    layers = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.MultiheadAttention)
    return (*norms, *dropouts, nn.RReLU, nn.RNN, nn.GRU, nn.LSTM, *transformers, *layers)


def modes_that_matter(model: Any) -> dict[str, bool]:
    """The training flag of each submodule whose computation may depend on it: torch's mode-dependent modules
    (and their subclasses), and modules of the user's own classes whose code mentions ``training`` (or cannot be
    read)."""
    import inspect

    import torch

    if not isinstance(model, torch.nn.Module):
        return {}
    dependent = _mode_dependent_classes()
    found = {}
    for path, module in model.named_modules():
        matters = isinstance(module, dependent)
        for cls in type(module).__mro__:
            if matters or cls.__module__.startswith("torch."):
                break
            try:
                matters = "training" in inspect.getsource(cls)
            except (OSError, TypeError):
                matters = True
        if matters:
            found[path] = module.training
    return found
