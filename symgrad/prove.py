"""Proofs of gradient laws, two ways.

1. **Exactly**: instantiate the symbolic dimensions at small, distinct sizes
   (so a transposition error cannot hide), derive the VJP entry by entry and
   show that SymPy simplifies the difference to 0.
2. **Numerically**: at larger sizes, evaluate the law with torch and compare
   with ``torch.autograd.backward`` on the same random inputs (float64).

>>> from symgrad.dims import dims
>>> from symgrad.tensor import symbols
>>> k, n, m = dims("k n m")
>>> W, X, V = symbols("W", (k, n)), symbols("X", (n, m)), symbols("V", (k, m))
>>> prove(W @ X, [W], [V]).held
True
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from .derive import vjp_entries
from .errors import CheckError, SymgradError
from .reverse import law
from .tensor import Tensor, _topological, apply, tensor

Sizes = dict[sympy.Symbol, int]


def _dims_of(roots: Sequence[Tensor]) -> list[sympy.Symbol]:
    found: set[sympy.Symbol] = set()
    for root in roots:
        for node in _topological(root):
            for d in node.shape:
                if isinstance(d, sympy.Expr):
                    found |= d.free_symbols
    return sorted(found, key=lambda s: s.name)


def size_assignments(dims: Sequence[sympy.Symbol], count: int = 2, start: int = 2) -> list[Sizes]:
    """Distinct sizes per dimension (2, 3, 4, …), rotated for each further assignment."""
    base = list(range(start, start + len(dims)))
    out = []
    for shift in range(count):
        if len(dims) > 1:
            sizes = base[shift % len(base) :] + base[: shift % len(base)]
        else:  # one dimension: try another size instead of the same rotation
            sizes = [b + shift for b in base]
        out.append(dict(zip(dims, sizes)))
    return out


def _concrete(value: Any, sizes: Sizes) -> Any:
    if isinstance(value, sympy.Expr):
        result = sympy.sympify(value.xreplace(sizes))
        return int(result) if result.is_Integer else result
    if isinstance(value, tuple):
        return tuple(_concrete(v, sizes) for v in value)
    return value


def instantiate(roots: Sequence[Tensor], sizes: Sizes, *, rng: random.Random | None = None) -> dict[int, Tensor]:
    """Rebuild the graphs below ``roots`` with dimensions replaced by ``sizes``.

    Leaves become concrete symbol tensors of the same name; integer leaves that
    declare a number of classes get random class indices.
    """
    rng = rng or random.Random(0)
    made: dict[int, Tensor] = {}
    for root in roots:
        for node in _topological(root):
            if id(node) in made:
                continue
            if node.op is None:
                made[id(node)] = _instantiate_leaf(node, sizes, rng)
            else:
                attrs = {k: _concrete(v, sizes) for k, v in node.attrs.items()}
                made[id(node)] = apply(node.op.name, *(made[id(i)] for i in node.inputs), **attrs)
    return made


def _instantiate_leaf(node: Tensor, sizes: Sizes, rng: random.Random) -> Tensor:
    shape = _concrete(tuple(node.shape), sizes)
    if node._kind != "symbol":
        entries = node.entries()
        if not any(sympy.sympify(e).free_symbols & sizes.keys() for e in entries.reshape(-1)):
            return node
        values = np.array([sympy.sympify(sympy.sympify(e).xreplace(sizes)) for e in entries.reshape(-1)], dtype=object)
        return Tensor(shape=entries.shape, entries=values.reshape(entries.shape), dtype=node.dtype,
                      is_python_scalar=node.is_python_scalar)
    classes = getattr(node, "classes", None)
    if classes is not None:
        bound = int(_concrete(classes, sizes))
        count = int(np.prod(shape, dtype=int))
        values = np.array([rng.randrange(bound) for _ in range(count)], dtype=object).reshape(shape)
        return tensor(values.tolist(), name=node.name, dtype="int64")
    new = Tensor(shape=shape, name=node.name, values=None, dtype=node.dtype)
    new._requires_grad = node.requires_grad
    return new


def is_zero(expr: sympy.Expr) -> bool:
    """Whether SymPy can show ``expr`` is 0 (cheap rewrites first, then ``simplify``)."""
    expr = sympy.sympify(expr)
    if expr == 0:
        return True
    for attempt in (sympy.expand, lambda e: sympy.cancel(sympy.together(e)), sympy.simplify):
        if attempt(expr) == 0:
            return True
    return sympy.simplify(expr.rewrite(sympy.exp)) == 0


@dataclass
class Proof:
    """Which proofs held for each law."""

    laws: list[Tensor]
    exact: list[dict[str, Any]] = field(default_factory=list)
    numeric: list[dict[str, Any]] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(e["held"] for e in self.exact) and all(n["held"] for n in self.numeric)

    def __str__(self) -> str:
        lines = []
        for e in self.exact:
            sizes = ", ".join(f"{k}={v}" for k, v in e["sizes"].items())
            lines.append(f"exact at {sizes or 'the given sizes'}: {'held' if e['held'] else 'FAILED'}"
                         f" ({e['entries']} entries)")
        for n in self.numeric:
            sizes = ", ".join(f"{k}={v}" for k, v in n["sizes"].items())
            lines.append(f"torch at {sizes or 'the given sizes'}: {'held' if n['held'] else 'FAILED'}"
                         f" (max abs error {n['max_abs_error']:.3g})")
        return "\n".join(lines)


def prove(outputs: Tensor | Sequence[Tensor], wrt: Tensor | Sequence[Tensor], grads: Any = None, *,
          laws: Sequence[Tensor] | None = None, sizes: Sequence[Sizes] | None = None,
          torch_sizes: Sizes | None = None, numeric: bool = True, raise_on_failure: bool = False) -> Proof:
    """Prove the laws for ``outputs`` (derived with :func:`law` unless given) both ways."""
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    targets = [wrt] if isinstance(wrt, Tensor) else list(wrt)
    vs = [grads] if isinstance(grads, Tensor) else (list(grads) if grads is not None else [None] * len(outs))
    laws = list(laws) if laws is not None else list(law(outs, targets, vs if grads is not None else None))
    vs_given = [v for v in vs if v is not None]
    roots = outs + vs_given + laws
    dims = _dims_of(roots + targets)
    proof = Proof(laws)
    for assignment in sizes or size_assignments(dims):
        made = instantiate(roots + targets, assignment)
        concrete_grads = [made[id(v)] if v is not None else None for v in vs]
        from .derive import as_grad_tensor
        from .tensor import constant

        grads_here = [as_grad_tensor(g if g is not None else constant(1, shape=made[id(o)].shape), made[id(o)], p)
                      for p, (o, g) in enumerate(zip(outs, concrete_grads))]
        held, count = True, 0
        for x, rule in zip(targets, laws):
            expected = vjp_entries([made[id(o)] for o in outs], made[id(x)], grads_here)
            actual = made[id(rule)].entries()
            if actual.shape != expected.shape:
                held = False
                continue
            for a, e in zip(actual.reshape(-1), expected.reshape(-1)):
                count += 1
                if not is_zero(sympy.sympify(a) - e):
                    held = False
        proof.exact.append({"sizes": {str(k): v for k, v in assignment.items()}, "held": held, "entries": count})
    if numeric:
        big = torch_sizes or dict(zip(dims, range(5, 5 + len(dims))))
        proof.numeric.append(check_numerically(outs, targets, vs, laws, big))
    if raise_on_failure and not proof.held:
        raise CheckError(str(proof))
    return proof


def check_numerically(outs: list[Tensor], targets: list[Tensor], vs: list[Tensor | None], laws: list[Tensor],
                      sizes: Sizes, seed: int = 0) -> dict[str, Any]:
    """Evaluate the laws with torch and compare with torch.autograd.backward at ``sizes``."""
    import torch

    from .verify import _torch_graph

    rng = random.Random(seed)
    roots = outs + [v for v in vs if v is not None] + laws
    made = instantiate(roots + targets, sizes, rng=rng)
    numbers: dict[Tensor, np.ndarray] = {}
    for root in roots + targets:
        for node in _topological(made[id(root)]):
            if node._kind == "symbol" and node not in numbers:
                size = int(np.prod(node.shape, dtype=int))
                numbers[node] = np.array([rng.uniform(0.25, 1.5) for _ in range(size)]).reshape(node.shape)
    wanted = {id(made[id(x)]) for x in targets}
    forward = _torch_graph(torch, [made[id(o)] for o in outs], numbers, {}, wanted)
    grads = []
    for o, v in zip(outs, vs):
        if v is None:
            grads.append(torch.ones_like(forward[id(made[id(o)])]))
        else:
            graph = _torch_graph(torch, [made[id(v)]], numbers, {}, set())
            grads.append(graph[id(made[id(v)])].to(torch.float64))
    leaves = [forward[id(made[id(x)])] for x in targets]
    torch.autograd.backward([forward[id(made[id(o)])] for o in outs], grads, inputs=leaves)
    law_values = _torch_graph(torch, [made[id(r)] for r in laws], numbers, {}, set())
    worst = 0.0
    for leaf, rule in zip(leaves, laws):
        ours = law_values[id(made[id(rule)])].detach()
        theirs = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        if tuple(ours.shape) != tuple(theirs.shape):
            raise SymgradError(f"law has shape {tuple(ours.shape)}, torch's gradient {tuple(theirs.shape)}")
        worst = max(worst, float((ours - theirs).abs().max()) if ours.numel() else 0.0)
    scale = max(float(leaf.grad.abs().max()) if leaf.grad is not None and leaf.grad.numel() else 0.0
                for leaf in leaves)
    return {"sizes": {str(k): v for k, v in sizes.items()}, "held": worst <= 1e-9 * max(1.0, scale),
            "max_abs_error": worst}
