"""torch's own decompositions, for the torch functions symgrad has no rule for.

A function of ``torch.nn.functional`` written in Python (``F.glu``, ``F.multi_head_attention_forward``,
``F.gaussian_nll_loss``) runs its own body; a built-in function runs torch's reference implementation
(``torch._refs``) or its ATen decomposition (``torch._decomp``). Either way the tracer sees the torch calls the
decomposition makes, and follows those. symgrad's own rules come first, so that laws keep fused ops where it
has them (``layer_norm``, not its pieces).

>>> import torch
>>> source(torch.nn.functional.gaussian_nll_loss), source(torch.nn.functional.hardshrink)
('its Python body', 'torch._refs')
>>> source(torch.nn.functional.relu)  # symgrad has a rule for it, but torch can decompose it too
'its Python body'
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from .compositions import COMPOSED

# The modules whose Python functions are decomposed by running their body.
_PYTHON_MODULES = ("torch.nn.functional", "torch.functional")
# torch's guards that route a call to __torch_function__; in a decomposed body they must say "no", so that the
# body runs instead of handing the call back to the tracer.
_GUARDS = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")


def _broadcast_in_dim(a: Any, shape: Any, broadcast_dimensions: Any) -> Any:
    """``prims.broadcast_in_dim``: ``a``'s dim i becomes the result's dim ``broadcast_dimensions[i]``."""
    view = [1] * len(shape)
    for axis, target in enumerate(broadcast_dimensions):
        view[target] = a.shape[axis]
    return a.reshape(*view).expand(*shape)


def _convert_element_type(a: Any, dtype: str) -> Any:
    return a.to(dtype)


# torch's primitives (``torch.ops.prims``) that its references call, on symgrad's tensors
PRIMITIVES: dict[str, Callable[..., Any]] = {
    "broadcast_in_dim": _broadcast_in_dim,
    "convert_element_type": _convert_element_type,
    "rev": lambda a, dims: a.flip(dims),  # fliplr, flipud
}


def _instance_norm(
    input: Any,
    weight: Any,
    bias: Any,
    running_mean: Any,
    running_var: Any,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Any:
    """``torch.instance_norm`` as ATen composes it (in C++): a batch norm of the (1, N·C, ...) reshaped input, the
    running statistics repeated per instance and then averaged back."""
    import torch

    n, c = input.shape[0], input.shape[1]

    def repeated(t: Any) -> Any:
        return None if t is None else t.repeat(n)

    mean, var = repeated(running_mean), repeated(running_var)
    out = torch.batch_norm(input.reshape(1, n * c, *input.shape[2:]), repeated(weight), repeated(bias), mean, var,
                           use_input_stats, momentum, eps, cudnn_enabled)  # fmt: skip
    if running_mean is not None:
        running_mean.copy_(mean.view(n, c).mean(0))
    if running_var is not None:
        running_var.copy_(var.view(n, c).mean(0))
    return out.view(input.shape)


def _reduced(losses: Any, reduction: int) -> Any:
    """ATen's ``apply_loss_reduction``: reduction 0 keeps, 1 averages, 2 sums."""
    return losses.mean() if reduction == 1 else losses.sum() if reduction == 2 else losses


def _cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: int = 1) -> Any:
    """1 − cos(x1, x2) where target is 1, max(0, cos − margin) where it is −1 (0 elsewhere), as ATen computes
    it: the squared norms get 1e-12 before their product's square root."""
    import torch

    dim = 0 if input1.dim() == 1 else 1
    products = (input1 * input2).sum(dim)
    norms = ((input1 * input1).sum(dim) + 1e-12) * ((input2 * input2).sum(dim) + 1e-12)
    cos = products / norms.sqrt()
    zeros = torch.zeros_like(cos)
    losses = torch.where(target == 1, 1 - cos, zeros) + torch.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduced(losses, reduction)


def _multilabel_margin_loss(input: Any, target: Any, reduction: int = 1) -> Any:
    """Σ over target classes j and other classes i of max(0, 1 − (x[j] − x[i])) / C, per sample: the target
    classes are the leading entries of its target row, up to the first −1. A margin of exactly 0 gives no
    gradient, as torch's kernel (``z > 0``)."""
    import torch

    x, y = (input, target) if input.dim() == 2 else (input.reshape(1, -1), target.reshape(1, -1))
    classes = x.shape[-1]
    listed = (y == -1).cumsum(-1) == 0  # the entries before the first -1
    is_target = ((y.unsqueeze(-1) == torch.arange(classes)) & listed.unsqueeze(-1)).any(-2)
    picked = x.gather(-1, y.clamp_min(0))
    margins = torch.relu(1 - (picked.unsqueeze(-1) - x.unsqueeze(-2)))
    counted = listed.unsqueeze(-1) & ~is_target.unsqueeze(-2)
    losses = torch.where(counted, margins, torch.zeros_like(margins)).sum((-1, -2)) / classes
    if input.dim() < 2:
        losses = losses.reshape(())
    return _reduced(losses, reduction)


def _memory_positions(shape: Any, stride: Any, offset: int) -> Any:
    """Where in memory each entry of a strided view lies, in the view's order (a NumPy array of integers)."""
    import numpy as np

    positions = np.full(tuple(int(s) for s in shape), int(offset), dtype=np.int64)
    for axis, (size, step) in enumerate(zip(shape, stride, strict=True)):
        view = [1] * len(shape)
        view[axis] = int(size)
        positions = positions + np.arange(int(size), dtype=np.int64).reshape(view) * int(step)
    return positions.reshape(-1)


def _as_strided(input: Any, size: Any, stride: Any, storage_offset: Any = None) -> Any:
    """``as_strided`` as a gather from the input's own entries: each entry of the view reads the input's entry that
    lies at its place in memory. torch's kernel reads memory; where the view reaches memory that none of the input's
    entries hold, or the input holds one place twice (an expanded tensor), what it reads is not the input's values
    alone, and symgrad refuses."""
    import numpy as np
    import torch

    from ..core.errors import UnsupportedError
    from .sizes import SizeInt

    if any(isinstance(n, SizeInt) for n in (*size, *stride, *input.shape)):
        raise UnsupportedError("as_strided at a symbolic size: where its entries lie in memory depends on the size")
    held = _memory_positions(input.shape, input.stride(), input.storage_offset())
    if len(np.unique(held)) != held.size:
        raise UnsupportedError("as_strided of a tensor that holds one place in memory twice (an expanded tensor)")
    offset = input.storage_offset() if storage_offset is None else storage_offset
    wanted = _memory_positions(size, stride, offset)
    order = np.argsort(held, kind="stable")
    found = np.searchsorted(held[order], wanted)
    inside = found < held.size
    if not (inside.all() and (held[order][found[inside]] == wanted[inside]).all()):
        raise UnsupportedError("as_strided reaches memory that the tensor it views does not hold")
    picks = torch.tensor(order[found].reshape(tuple(int(s) for s in size)), dtype=torch.int64)
    return input.reshape(-1)[picks]


# Functions that torch composes in C++ only (or computes in a kernel), composed here in torch calls as ATen does
def _layered(name: str) -> Callable[..., Any]:
    """torch's decomposition of a recurrent network (``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``) with the dropout
    between layers its kernel applies: torch._decomp's helper compares ``num_layers < i - 1`` and so never drops
    (torch 2.13), where the kernel draws ``torch.dropout`` of each layer's output but the last. Layer by layer,
    each a one-layer call of torch's decomposition, with the dropout between them."""

    def layered(input: Any, hx: Any, params: Any, has_biases: bool, num_layers: int, dropout: float, train: bool,
                bidirectional: bool, batch_first: bool) -> Any:  # fmt: skip
        import torch
        from torch._decomp import decomposition_table

        one = decomposition_table[getattr(torch.ops.aten, name).input]
        if not (dropout and train and num_layers > 1):
            return one(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        directions = 2 if bidirectional else 1
        per_layer = len(params) // num_layers
        states = hx if isinstance(hx, (tuple, list)) else (hx,)
        finals: list[list[Any]] = [[] for _ in states]
        out = input
        for layer in range(num_layers):
            mine = [s[layer * directions : (layer + 1) * directions] for s in states]
            given = tuple(mine) if isinstance(hx, (tuple, list)) else mine[0]
            weights = params[layer * per_layer : (layer + 1) * per_layer]
            out, *last = one(out, given, weights, has_biases, 1, 0.0, train, bidirectional, batch_first)
            for kept, state in zip(finals, last, strict=True):
                kept.append(state)
            if layer < num_layers - 1:
                out = torch.dropout(out, dropout, train=True)
        return (out, *(torch.cat(kept, 0) for kept in finals))

    return layered


# torch's decompositions that symgrad corrects (they would follow a decomposition that disagrees with the kernel)
CORRECTED: dict[str, Callable[..., Any]] = {name: _layered(name) for name in ("lstm", "gru", "rnn_tanh", "rnn_relu")}


COMPOSITES: dict[str, Callable[..., Any]] = {
    **COMPOSED,
    "as_strided": _as_strided,
    "instance_norm": _instance_norm,
    "cosine_embedding_loss": _cosine_embedding_loss,
    "multilabel_margin_loss": _multilabel_margin_loss,
}


# ATen overloads that torch's references reach and that symgrad composes itself
_OWN_OVERLOADS = ("as_strided", "index")


def _never(*args: Any) -> bool:
    return False


@functools.cache
def _unguarded_globals(module: str) -> dict[str, Any]:
    import importlib

    namespace = dict(vars(importlib.import_module(module)))
    namespace.update(dict.fromkeys(_GUARDS, _never))
    return namespace


@functools.cache
def _body(func: Callable) -> Callable:
    """``func`` with its __torch_function__ guards off: calling it runs its body. Functions it holds in its
    closure lose theirs too: ``F.max_pool2d`` is a dispatcher whose closure holds the two functions it picks
    between, and their guards would hand the call back under the dispatcher's name."""
    closure = func.__closure__
    if closure is not None:
        closure = tuple(types.CellType(_body(c.cell_contents)) if _is_python(_contents(c)) else c for c in closure)
    copy = types.FunctionType(func.__code__, _unguarded_globals(func.__module__), func.__name__, func.__defaults__,
                              closure)  # fmt: skip
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _is_python(func: Any) -> bool:
    return inspect.isfunction(func) and func.__module__ in _PYTHON_MODULES


def _python_body(func: Callable) -> Callable | None:
    return _body(func) if _is_python(func) else None


def _reference(name: str) -> Callable | None:
    import torch._refs
    import torch._refs.linalg
    import torch._refs.nn.functional
    import torch._refs.special

    for namespace in (torch._refs.nn.functional, torch._refs, torch._refs.special, torch._refs.linalg):
        found = getattr(namespace, name, None) or getattr(namespace, name.removeprefix("special_"), None)
        if inspect.isfunction(found):
            return found
    return None


def _overload(name: str, args: tuple, kwargs: dict) -> Any:
    """The ATen overload that a call of the built-in ``name`` with these arguments runs; None if none."""
    import torch

    packet = getattr(torch.ops.aten, name, None)
    if packet is None:
        return None
    try:
        return getattr(packet, torch._C._jit_resolve_packet(f"aten::{name}", *args, **kwargs), None)
    except Exception:  # no overload takes these arguments
        return None


_REDUCTIONS = ("none", "mean", "sum")  # torch's reduction enum, as ATen's losses take it


def _by_schema(reference: Callable, overload: Any) -> Callable:
    """``reference`` called with the arguments of ``overload``'s schema by name, as far as their names match
    (the built-in's order may differ from the reference's: ``torch.poisson_nll_loss`` takes ``eps`` where the
    reference takes ``size_average``), and with reduction's enum as the name references take. Where the names
    differ, in their order: the tracer checks the decomposition's results against the kernel's anyway."""
    names = [argument.name for argument in overload._schema.arguments]
    parameters = inspect.signature(reference).parameters
    if any(n not in parameters for n in names[1:]):
        names = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not names:
            return reference(*args, **kwargs)
        named = {**dict(zip(names[1:], args[1:])), **kwargs}
        if isinstance(named.get("reduction"), int):
            named["reduction"] = _REDUCTIONS[named["reduction"]]
        return reference(args[0], **named)

    return call


def find(func: Callable, name: str, args: tuple, kwargs: dict) -> tuple[str, Callable] | None:
    """Where torch decomposes ``func`` for this call, and the callable that does it; None if it does not.

    ``name`` is the function's (or the method's) name. A Python function runs its body; a built-in runs the
    decomposition of the ATen overload it calls, else the reference of that name, given the arguments by name.
    """
    import torch
    from torch._decomp import decomposition_table

    if name in _OWN_OVERLOADS:
        return "ATen's composition", COMPOSITES[name]
    if name in CORRECTED and not isinstance(func, torch._ops.OpOverload):
        return "torch._decomp, with its kernel's dropout between layers", CORRECTED[name]
    if isinstance(func, torch._ops.OpOverload):
        if func.overloadpacket.__name__ in _OWN_OVERLOADS:
            return "ATen's composition", COMPOSITES[func.overloadpacket.__name__]
        found = decomposition_table.get(func)
        return ("torch._decomp", found) if found is not None else None
    body = _python_body(func)
    if body is not None:
        return "its Python body", body
    overload = _overload(name, args, kwargs)
    if overload is not None and overload in decomposition_table:
        found = decomposition_table[overload]
        if found.__module__.startswith("torch._refs"):  # a reference registered as the decomposition
            return "torch._refs", _by_schema(found, overload)
        return "torch._decomp", found
    reference = _reference(name)
    if reference is not None:  # unresolved (an int where the schema lists ints): the arguments as given
        return "torch._refs", reference if overload is None else _by_schema(reference, overload)
    if name in COMPOSITES:
        return "ATen's composition", COMPOSITES[name]
    return None


def source(func: Callable) -> str | None:
    """Which decomposition torch has for a public function (``'its Python body'``, ``'torch._refs'``,
    ``'torch._decomp'``), judged by its name alone; None if none."""
    import torch

    name = getattr(func, "__name__", "")
    if _python_body(func) is not None:
        return "its Python body"
    if _reference(name) is not None:
        return "torch._refs"
    packet = getattr(torch.ops.aten, name, None)
    if packet is not None:
        from torch._decomp import decomposition_table

        if any(getattr(packet, o) in decomposition_table for o in packet.overloads()):
            return "torch._decomp"
    return "ATen's composition" if name in COMPOSITES else None


# torch functions that sg.trace follows through torch's own decomposition, each checked against torch (values and
# gradients) by tests/torch/test_decompositions.py; generated/ops.md lists them with where the decomposition is
FOLLOWED = (
    "F.alpha_dropout", "F.cosine_embedding_loss", "F.glu", "F.hardshrink", "F.hinge_embedding_loss",
    "F.instance_norm", "F.local_response_norm", "F.lp_pool1d", "F.lp_pool2d", "F.margin_ranking_loss",
    "F.multi_head_attention_forward", "F.multi_margin_loss", "F.multilabel_margin_loss",
    "F.multilabel_soft_margin_loss", "F.pairwise_distance", "F.poisson_nll_loss", "F.prelu", "F.soft_margin_loss",
    "F.softshrink", "F.tanhshrink", "F.triplet_margin_loss", "torch.deg2rad", "torch.frac", "torch.gru",
    "torch.logaddexp2", "torch.logit", "torch.lstm", "torch.nan_to_num", "torch.rnn_relu", "torch.rnn_tanh",
    "torch.sinc", "torch.square",
)  # fmt: skip


def followed() -> list[tuple[str, str]]:
    """(name, where torch decomposes it) for each function of :data:`FOLLOWED`."""
    import torch

    namespaces = {"F": torch.nn.functional, "torch": torch}
    out = []
    for name in FOLLOWED:
        space, _, attribute = name.partition(".")
        out.append((name, source(getattr(namespaces[space], attribute)) or "ATen's composition"))
    return out
