"""Random draws in traced code: dropout's noise, attention's dropout, and any other draw, each a draw node of
:mod:`symgrad.ops.draws` holding the numbers torch drew.

``F.dropout`` and ``scaled_dot_product_attention(dropout_p > 0)`` draw ``empty_like(x).bernoulli_(1 − p)`` (on the
CPU, attention's math path draws it for its weights); the tracer draws it again from the same random state and
checks that the output is the input (the weights) times that noise.

torch's random functions all fill a tensor with one of a few kinds of draw (``normal_``, ``uniform_``,
``bernoulli_``, …): ``torch.randn_like(x)`` is ``empty_like(x).normal_(0, 1)``, ``x.new_empty(s).bernoulli_(p)``
is ``bernoulli_(p)`` in a fresh tensor of shape ``s``. The tracer reads a call as such a draw, of a shape that may
be symbolic, re-draws it from the random state torch had before the call, and keeps it only if the numbers are
torch's: the node then holds them (its formulas have a symbol per entry), emitted code draws it again in the
model's order with torch's generator, and the backward reads the saved numbers. A call it cannot read so
(``multinomial``, ``randperm``, a tensor of probabilities) stays a constant of the graph, as before.

>>> import torch, symgrad as sg
>>> traced = sg.trace(lambda x: x + torch.randn_like(x), torch.zeros(2, 3), dynamic_shapes={"x": {0: "b"}})
>>> [node.op.name for node in sg.core.topological(traced.output) if node.op is not None]
['draw_normal', 'add']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.dtypes import is_floating
from ..core.errors import UnsupportedError
from ..core.tensor import Tensor, apply
from ..ops.draws import KINDS, Drawn
from .nn.activations import dropout_noise
from .nn.layers import attention_weights
from .torch_numbers import constant_of
from .trace_effects import check_update
from .trace_lookup import function_name, user_line


@dataclass(frozen=True)
class Draw:
    """A call read as a draw: its kind (a key of ``KINDS``), its parameters, the tensor whose dtype and device it
    takes (None: from sizes alone), its shape (symbolic where the like is) and its dtype."""

    kind: str
    params: dict
    like: Any
    shape: tuple
    dtype: str


# in-place methods: (kind, parameter names in torch's order, their defaults)
_METHODS = {
    "normal_": ("normal", ("mean", "std"), (0.0, 1.0)),
    "uniform_": ("uniform", ("low", "high"), (0.0, 1.0)),
    "bernoulli_": ("bernoulli", ("p",), (0.5,)),
    "exponential_": ("exponential", ("lambd",), (1.0,)),
    "geometric_": ("geometric", ("p",), (None,)),
    "cauchy_": ("cauchy", ("median", "sigma"), (0.0, 1.0)),
    "log_normal_": ("log_normal", ("mean", "std"), (1.0, 2.0)),
}
_KEYWORDS = {"from": "low", "to": "high"}  # torch's names for uniform_'s bounds
_LIKE = {"randn_like": ("normal", {"mean": 0.0, "std": 1.0}), "rand_like": ("uniform", {"low": 0.0, "high": 1.0})}
_NEW = {"randn": ("normal", {"mean": 0.0, "std": 1.0}), "rand": ("uniform", {"low": 0.0, "high": 1.0})}


def read_draw(kind: str, name: str, args: tuple, kwargs: dict, symbolic: Callable[[Any], Any]) -> Draw | None:
    """The draw a random call makes, or None if it is not one of the readable kinds. ``symbolic`` maps a real
    argument to its symbolic value (a tensor, or a size)."""
    import torch

    if kind == "method" and name in _METHODS and args:
        which, names, defaults = _METHODS[name]
        given = dict(zip(names, args[1:]))
        given.update({_KEYWORDS.get(k, k): v for k, v in kwargs.items() if k != "generator"})
        params = {n: given.get(n, d) for n, d in zip(names, defaults)}
        if kwargs.get("generator") is not None or not all(isinstance(v, (int, float)) for v in params.values()):
            return None
        target = symbolic(args[0])
        return _like_draw(which, params, target, str(args[0].dtype).replace("torch.", ""))
    if name in _LIKE and args and not kwargs.get("dtype") and not kwargs.get("generator"):
        which, params = _LIKE[name]
        return _like_draw(which, params, symbolic(args[0]), str(args[0].dtype).replace("torch.", ""))
    if name in _NEW and not kwargs.get("generator") and not kwargs.get("out"):
        sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
        if not all(isinstance(s, int) for s in sizes):
            return None
        which, params = _NEW[name]
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
        return Draw(which, params, None, tuple(symbolic(s) for s in sizes), str(dtype).replace("torch.", ""))
    return None


def _like_draw(which: str, params: dict, target: Any, dtype: str) -> Draw | None:
    if not isinstance(target, Tensor) or not is_floating(dtype):
        return None
    if target.op is not None and target.op.name == "empty":  # new_empty(s).bernoulli_(p): a fresh tensor of s
        return Draw(which, params, target.inputs[0], target.shape, dtype)
    return Draw(which, params, target, target.shape, dtype)


def redrawn(draw: Draw, concrete_shape: tuple) -> Any:
    """The draw made again from torch's current random state (the caller restores the state torch had before the
    call): torch's own draw, if the call was read right."""
    import torch

    method, names = KINDS[draw.kind]
    empty = torch.empty(concrete_shape, dtype=getattr(torch, draw.dtype))
    return getattr(empty, method)(*(draw.params[n] for n in names))


def draw_node(draw: Draw, key: int, numbers: Any) -> Tensor:
    """The draw's node in the graph, holding the ``numbers`` torch drew (a NumPy array)."""
    attrs = {"shape": tuple(draw.shape), "key": key, "drawn": Drawn(numbers), **draw.params}
    if draw.like is None:
        node = apply(f"draw_{draw.kind}_new", dtype=draw.dtype, **attrs)
    else:
        node = apply(f"draw_{draw.kind}", draw.like, **attrs)
    node.dtype = draw.dtype
    return node


def random_call(recorder: Any, func: Callable, kind: str, target: Any, args: tuple, kwargs: dict) -> Any:
    """A random draw other than dropout's (torch.randn_like, x.new_empty(s).bernoulli_(p), …): a draw node of the
    graph holding torch's numbers, which emitted code draws again in the model's order (see :mod:`.trace_draws`);
    a draw it cannot read so is a constant of the graph, and the trace notes it (an emitted module would repeat
    those numbers)."""
    import torch

    name = target if kind == "method" else function_name(func)
    before = torch.random.get_rng_state()
    real = func(*args, **kwargs)
    draw = read_draw(kind, name, args, kwargs, recorder.to_symbolic)
    result = None
    if draw is not None and isinstance(real, torch.Tensor):
        after = torch.random.get_rng_state()
        torch.random.set_rng_state(before)
        again = redrawn(draw, tuple(real.shape))
        torch.random.set_rng_state(after)
        if torch.equal(again.double(), real.detach().double()) or (again.isnan() & real.isnan()).all():
            recorder.draws += 1
            result = draw_node(draw, recorder.draws, real.detach().cpu().double().numpy())
    if result is None:
        result = constant_of(real if not isinstance(real, (tuple, list)) else real[0])
        recorder.random_sites.append(f"{function_name(func)} ({user_line()})")
    recorder.record(real, result)
    recorder.sites[id(result)] = user_line()
    return real


_DROPOUT = ("input", "p", "training", "inplace")


def _dropout_arguments(args: tuple, kwargs: dict) -> dict[str, Any]:
    return {"p": 0.5, "training": True, "inplace": False, **dict(zip(_DROPOUT, args)), **kwargs}


def draws_noise(args: tuple, kwargs: dict) -> bool:
    given = _dropout_arguments(args, kwargs)
    return bool(given["training"]) and 0 < given["p"] < 1


def dropout_call(recorder: Any, call: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
    """F.dropout in training mode: torch draws the noise; the tracer draws it again from the same random state
    (as torch's CPU kernel does: ``empty_like(x).bernoulli_(1 - p).div_(1 - p)``), checks that the output is
    ``x * noise``, and the symbolic output multiplies by a noise node holding those numbers."""
    import torch

    given = _dropout_arguments(args, kwargs)
    x, p = given["input"], float(given["p"])
    if given["inplace"]:
        check_update(x, recorder.viewed, "dropout", user_line())
    symbolic_x = recorder.to_symbolic(x)
    before, original = torch.random.get_rng_state(), x.detach().clone()
    real = call()
    after = torch.random.get_rng_state()
    torch.random.set_rng_state(before)
    noise = torch.empty_like(original).bernoulli_(1 - p).div_(1 - p)
    torch.random.set_rng_state(after)
    expected = original * noise
    if not bool(((real == expected) | (real.isnan() & expected.isnan())).all()):
        raise UnsupportedError(
            f"dropout ({user_line()}): symgrad cannot draw the noise torch drew here (on {x.device}); "
            "trace on the CPU, or in eval mode"
        )
    recorder.draws += 1
    noise_node = dropout_noise(symbolic_x, p, noise.detach().double().cpu().numpy(), key=recorder.draws)
    result = symbolic_x * noise_node
    recorder.record(real, result)
    recorder.sites[id(result)] = user_line()
    return real


_ATTENTION = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _attention_arguments(args: tuple, kwargs: dict) -> dict[str, Any]:
    return {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False,
            **dict(zip(_ATTENTION, args)), **kwargs}  # fmt: skip


def attention_draws(args: tuple, kwargs: dict) -> bool:
    return 0 < float(_attention_arguments(args, kwargs)["dropout_p"]) < 1


def attention_call(recorder: Any, call: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
    """scaled_dot_product_attention with dropout: torch's kernel (its math path, on the CPU) drops attention weights
    with the noise ``empty_like(weights).bernoulli_(1 - p).div_(1 - p)``; the tracer draws it again from the same
    state, checks the output is ``(weights · noise) @ value``, and the graph multiplies by a noise node of those
    numbers (numbered with the model's other draws)."""
    import torch

    given = _attention_arguments(args, kwargs)
    p = float(given["dropout_p"])
    symbolic = {k: recorder.to_symbolic(v) for k, v in given.items() if k != "dropout_p"}
    weights, value = attention_weights(**symbolic)
    before = torch.random.get_rng_state()
    real = call()
    after = torch.random.get_rng_state()
    torch.random.set_rng_state(before)
    concrete = tuple(real.shape[:-1]) + (int(given["key"].shape[-2]),)
    shape = torch.broadcast_shapes(concrete, tuple(given["query"].shape[:-1]) + (int(given["key"].shape[-2]),))
    noise = torch.empty(shape, dtype=real.dtype).bernoulli_(1 - p).div_(1 - p)
    torch.random.set_rng_state(after)
    recorder.draws += 1
    noise_node = dropout_noise(weights, p, noise.detach().double().cpu().numpy(), key=recorder.draws)
    result = (weights * noise_node) @ value
    if not _same_attention(given, noise, real):
        raise UnsupportedError(
            f"scaled_dot_product_attention ({user_line()}): symgrad cannot draw the dropout noise torch drew here "
            f"(on {real.device}); trace on the CPU, or in eval mode"
        )
    recorder.record(real, result)
    recorder.sites[id(result)] = user_line()
    return real


def _same_attention(given: dict, noise: Any, real: Any) -> bool:
    """Whether torch's math attention with the dropout noise ``noise`` gives ``real`` (the noise was read right)."""
    import torch

    with torch.no_grad():
        _, weights = torch.ops.aten._scaled_dot_product_attention_math(
            given["query"], given["key"], given["value"], given["attn_mask"], 0.0, bool(given["is_causal"]),
            scale=given["scale"], enable_gqa=bool(given["enable_gqa"]),
        )  # fmt: skip
        value = given["value"]
        if given["enable_gqa"] and value.shape[-3] != weights.shape[-3]:
            value = value.repeat_interleave(weights.shape[-3] // value.shape[-3], dim=-3)
        again = (weights * noise) @ value
    tolerance = 1e-10 if real.dtype == torch.float64 else 1e-4
    return torch.allclose(again, real, rtol=tolerance, atol=tolerance, equal_nan=True)
