"""Runs of traced code: the model's state kept across runs, and what a second run at other sizes is compared by.

>>> [key[0] for key, _ in graph_signature(_demo())]
['leaf', 'leaf', 'mul']
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core.errors import SymgradError
from ..core.graph import topological_all
from ..core.tensor import Tensor
from .leaf_values import snapshot_of, trust
from .sizes import Guard


@contextlib.contextmanager
def state_kept(model: Any) -> Iterator[None]:
    """Run the traced code without a trace on the model: its buffers and parameters (values, gradients, and the
    tensors its attributes hold), its modules' other attributes (a Python counter), and torch's random state, as
    they were."""
    import torch

    modules = list(model.modules()) if isinstance(model, torch.nn.Module) else []
    attributes = [(m, dict(m.__dict__), dict(m._buffers), dict(m._parameters)) for m in modules]
    # a tensor's values are kept as the snapshot its leaf reads (made once, shared: a model of 124M parameters is
    # not copied twice)
    tensors = {id(t): (t, snapshot_of(t), t.grad) for m in modules for t in (*m._buffers.values(),
               *m._parameters.values()) if t is not None}  # fmt: skip
    random_state = torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.random.set_rng_state(random_state)
        for module, saved, buffers, parameters in attributes:
            module.__dict__.clear()
            module.__dict__.update(saved)
            module._buffers.clear()
            module._buffers.update(buffers)
            module._parameters.clear()
            module._parameters.update(parameters)
        for tensor, values, grad in tensors.values():
            if not values.holds(tensor):
                # through .data, which has a version counter of its own: the values are the ones a graph of the
                # user's saved before the trace, and that graph can still go backward
                tensor.data.copy_(values.copy)
            trust(values)
            if tensor.grad is not grad:
                tensor.grad = grad


def made_from_numbers(func: Any, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` for a call given no tensor (``torch.arange(0, 64)``): real numbers even in a run
    on fake tensors (the probe at other sizes), since the graph holds them as a constant."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return func(*args, **kwargs)


def example_sizes(example_inputs: Sequence[Any], names: list[str], shapes: dict) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for name, x in zip(names, example_inputs, strict=False):
        for axis, dim in shapes.get(name, {}).items():
            size = int(x.shape[axis])
            if sizes.setdefault(dim, size) != size:
                raise SymgradError(f"dynamic_shapes gives {dim} two sizes in the example: {sizes[dim]} and {size}")
    return sizes


def within(guards: Sequence[Guard], sizes: Mapping[str, int]) -> bool:
    values = {symbol: sizes.get(str(symbol), 0) for g in guards for symbol in g.relation.free_symbols}
    return all(bool(g.relation.subs(values)) for g in guards)


def resized(x: Any, axes: Mapping[int, str], sizes: Mapping[str, int]) -> Any:
    """``x`` with each symbolic axis grown (its first slices repeated) or cut to the size in ``sizes``: values
    stay of the kinds the example has (class targets stay within their classes)."""
    import torch

    out = x.detach()
    for axis, dim in axes.items():
        now, wanted = out.shape[axis], sizes[dim]
        if wanted <= now:
            out = out.narrow(axis, 0, wanted)
        elif now == 0:
            out = out.new_zeros((*out.shape[:axis], wanted, *out.shape[axis + 1 :]))
        else:
            repeats = -(-wanted // now)
            out = torch.cat([out] * repeats, axis).narrow(axis, 0, wanted)
    return out.clone().requires_grad_(x.requires_grad)


def first_difference(first: Any, second: Any, sites: Mapping[int, str]) -> str | None:
    """Where two runs' outputs' graphs first differ (the call and the user's line, from the first run's ``sites``),
    or None when they are the same."""
    a, b = graph_signature(first), graph_signature(second)
    for (key_a, node_a), (key_b, _) in zip(a, b):
        if key_a != key_b:
            return f"the first difference: {call_name(node_a)} at {sites.get(id(node_a), 'an unknown place')}"
    if len(a) != len(b):
        return f"{len(a)} operations against {len(b)}"
    return None


def call_name(node: Tensor) -> str:
    return node.op.name if node.op is not None else f"the tensor {node.name}"


def graph_signature(output: Any) -> list[tuple[tuple, Tensor]]:
    """Each node of the graph below ``output`` as a key: its op, attributes, shape, dtype and inputs (by their
    position), in the graph's order; leaves by name, constants by their numbers."""
    roots = [t for t in flat(output) if isinstance(t, Tensor)]
    position: dict[int, int] = {}
    keys = []
    for node in topological_all(roots):
        if node.op is None:
            what = ("leaf", node.name) if node.kind == "symbol" else ("constant", str(node.entries().tolist()))
        else:
            attrs = tuple(sorted((k, str(v)) for k, v in node.attrs.items()))
            what = (node.op.name, attrs, tuple(position[id(i)] for i in node.inputs))
        position[id(node)] = len(keys)
        keys.append(((*what, str(node.shape), node.dtype), node))
    return keys


_LARGEST_COMPARED_CONSTANT = 4096  # entries: a larger constant makes two graphs count as different, unread


def same_graphs(a: Any, b: Any) -> bool:
    """Whether the graphs below ``a`` and ``b`` (tensors, or tuples and lists of them) compute the same: the same
    ops on the same leaves and constants, in the same order. False where a constant is too large to compare."""
    roots = [[t for t in flat(x) if isinstance(t, Tensor)] for x in (a, b)]
    if len(roots[0]) != len(roots[1]):
        return False
    for graph in roots:
        if any(n.op is None and n.kind != "symbol" and n.numel() > _LARGEST_COMPARED_CONSTANT
               for n in topological_all(graph)):  # fmt: skip
            return False
    keys = [[key for key, _ in graph_signature(graph)] for graph in roots]
    return keys[0] == keys[1]


def rebuilt(value: tuple | list, items: Any) -> Any:
    """A list, tuple, named tuple or torch result type (``torch.return_types.max``) like ``value``, of ``items``.

    >>> from collections import namedtuple
    >>> rebuilt(namedtuple("pair", "a b")(1, 2), [3, 4])
    pair(a=3, b=4)
    """
    items = list(items)
    if hasattr(value, "_fields"):  # a named tuple takes its fields as arguments
        return type(value)(*items)
    return type(value)(items)


def flat(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [y for x in value for y in flat(x)]
    if isinstance(value, dict):
        return [y for x in value.values() for y in flat(x)]
    return [value]


def _demo() -> Tensor:
    from ..core.constructors import symbols

    return symbols("x", (2,)) * symbols("y", (2,))
