"""Every op reachable from ``symgrad.torch`` and Tensor methods, checked against real torch.

Each case is written once, as a function of a *world*: ``SG`` (symgrad) or ``PT`` (real
torch). The same code therefore builds the graph in both, and we check

* the symbolic graph with :func:`symgrad.verify.check` (implicit grad after ``.sum()``, a
  symbolic grad_tensor and a random numeric one), at random shapes for several seeds;
* the graph with values against a graph we build ourselves in real torch (float64): the
  forward values (``.tolist()``) and ``.grad`` after ``backward`` (accumulated over two calls);
* torch's subgradients at non-differentiable points (``relu'(0) = abs'(0) = 0``);
* the shape errors: same exception type as torch, torch's message contained in symgrad's.
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import sympy
import torch as real_torch
from budget import examples

import symgrad.torch as sym_torch
from symgrad.core import Tensor, symbols, symbols_like, tensor
from symgrad.derive import law
from symgrad.ops import function
from symgrad.verify import check

TOL = 1e-10
SEEDS = range(examples(2))  # random draws per case (SYMGRAD_EXAMPLES=10: twenty)

cube_sin = function("f", lambda t: t**3 + sympy.sin(t))
_names = (f"z{i}" for i in itertools.count())


def _torch_const(values: Any) -> Any:
    """Known numbers (targets, identity matrices): float64, or int64 for integers, as in torch."""
    arr = np.asarray(values)
    return real_torch.tensor(arr, dtype=real_torch.int64 if arr.dtype.kind in "iu" else real_torch.float64)


SG = SimpleNamespace(
    name="symgrad",
    torch=sym_torch,
    F=sym_torch.nn.functional,
    f=cube_sin,
    zeros=lambda *shape: symbols(next(_names), shape, requires_grad=True),
    const=lambda values: tensor(np.asarray(values).tolist(), name=next(_names)),
    eye=lambda n: tensor(np.eye(n).tolist(), name=next(_names)),
)
PT = SimpleNamespace(
    name="torch",
    torch=real_torch,
    F=real_torch.nn.functional,
    f=lambda t: t**3 + real_torch.sin(t),
    zeros=lambda *shape: real_torch.zeros(shape, dtype=real_torch.float64),
    const=_torch_const,
    eye=lambda n: real_torch.eye(n, dtype=real_torch.float64),
)


# ── random shapes and arguments ─────────────────────────────────────────────
def rand_shape(rng: random.Random, min_ndim: int = 0, max_ndim: int = 3, max_size: int = 4) -> tuple[int, ...]:
    return tuple(rng.randint(1, max_size) for _ in range(rng.randint(min_ndim, max_ndim)))


def broadcast_pair(rng: random.Random) -> list[tuple[int, ...]]:
    """Two shapes that broadcast: each drops leading dims and/or turns dims into 1."""
    out = rand_shape(rng, 0, 3)

    def operand() -> tuple[int, ...]:
        kept = out[rng.randint(0, len(out)) :] if rng.random() < 0.4 else out
        return tuple(1 if rng.random() < 0.3 else d for d in kept)

    return [operand(), operand()]


def batched_matmul_shapes(rng: random.Random) -> list[tuple[int, ...]]:
    """Shapes for torch.matmul with at least one operand of 3 dims, batches broadcasting."""
    n, k, m = (rng.randint(1, 3) for _ in range(3))
    batch = rand_shape(rng, 1, 2, 3)

    def operand_batch() -> tuple[int, ...]:
        kept = batch[rng.randint(0, len(batch)) :] if rng.random() < 0.5 else batch
        return tuple(1 if rng.random() < 0.3 else d for d in kept)

    left = (*operand_batch(), n, k) if rng.random() < 0.85 else (k,)
    right = (*operand_batch(), k, m) if rng.random() < 0.85 else (k,)
    if len(left) < 3 and len(right) < 3:
        left = (*batch, n, k)
    return [left, right]


def random_dims(rng: random.Random, ndim: int) -> Any:
    """A reduction's ``dim``: None, an int (maybe negative) or a tuple of distinct dims."""
    kind = rng.choice(["none", "int", "tuple", "tuple"]) if ndim else rng.choice(["none", "int"])
    if kind == "none":
        return None
    axes = list(range(ndim)) if ndim else [0]
    spell = lambda axis: axis - max(ndim, 1) if rng.random() < 0.5 else axis  # noqa: E731
    if kind == "int":
        return spell(rng.choice(axes))
    picked = rng.sample(axes, rng.randint(1, len(axes)))
    return tuple(spell(axis) for axis in picked)


def slice_bound(rng: random.Random, size: int) -> int | None:
    return rng.choice([None, rng.randint(-size - 1, size + 1)])


def random_index(rng: random.Random, shape: tuple[int, ...]) -> Any:
    """A basic index: ints (maybe negative), slices (maybe stepped or out of range), None and ``...``."""
    items: list[Any] = []
    for size in shape:
        kind = rng.choice(["int", "slice", "full", "full"])
        if kind == "int":
            items.append(rng.randint(-size, size - 1))
        elif kind == "slice":
            items.append(slice(slice_bound(rng, size), slice_bound(rng, size), rng.choice([None, 1, 2])))
        else:
            items.append(slice(None))
        if rng.random() < 0.2:
            items.append(None)
    if rng.random() < 0.2:
        items.insert(0, None)
    if items and rng.random() < 0.35:  # a run of items becomes "..."
        start = rng.randint(0, len(items))
        stop = rng.randint(start, len(items))
        if all(i == slice(None) for i in items[start:stop]):
            items[start:stop] = [Ellipsis]
    elif items and rng.random() < 0.3:  # trailing full slices may be left out
        while items and items[-1] == slice(None):
            items.pop()
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]
    return tuple(items)


def random_reshape(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    total = int(np.prod(shape, dtype=int))
    dims: list[int] = []
    left = total
    for _ in range(rng.randint(0, 2)):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        d = rng.choice(divisors)
        dims.append(d)
        left //= d
    dims.append(left)
    rng.shuffle(dims)
    if rng.random() < 0.5:
        dims[rng.randrange(len(dims))] = -1
    return tuple(dims)


def permutation(rng: random.Random, ndim: int) -> tuple[int, ...]:
    order = list(range(ndim))
    rng.shuffle(order)
    return tuple(d - ndim if rng.random() < 0.3 else d for d in order)


def two_dims(rng: random.Random, ndim: int) -> tuple[int, int]:
    n = max(ndim, 1)
    return tuple(rng.randint(-n, n - 1) for _ in range(2))  # type: ignore[return-value]


# ── the cases ───────────────────────────────────────────────────────────────
Draw = Callable[[random.Random], tuple[list[tuple[int, ...]], dict]]


@dataclass(frozen=True)
class Case:
    """``build(world, params, *inputs)`` makes the graph; ``draw(rng)`` gives input shapes and params."""

    name: str
    draw: Draw
    build: Callable[..., Any]
    positive: bool = False  # inputs drawn positive (log, sqrt, tensor bases of **)
    tags: frozenset = field(default_factory=frozenset)


def shapes_only(fn: Callable[[random.Random], list[tuple[int, ...]]]) -> Draw:
    return lambda rng: (fn(rng), {})


one_any = shapes_only(lambda rng: [rand_shape(rng)])
one_matrix = shapes_only(lambda rng: [rand_shape(rng, 2, 2)])
pair = shapes_only(broadcast_pair)


def mm_shapes(rng: random.Random) -> list[tuple[int, ...]]:
    n, k, m = (rng.randint(1, 4) for _ in range(3))
    return [(n, k), (k, m)]


def cell_shapes(gates: int, states: int = 1) -> Draw:
    """Input, hidden state(s), w_ih, w_hh, b_ih and b_hh of a recurrent cell with ``gates`` gates."""

    def draw(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
        batch, size, hidden = (rng.randint(1, 3) for _ in range(3))
        weights = [(gates * hidden, size), (gates * hidden, hidden), (gates * hidden,), (gates * hidden,)]
        return [(batch, size), *[(batch, hidden)] * states, *weights], {}

    return draw


def with_param(shape_fn: Callable[[random.Random], tuple[int, ...]], **params: Callable) -> Draw:
    """One input of a random shape, and params drawn from it: ``name=lambda rng, shape: value``."""

    def draw(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
        shape = shape_fn(rng)
        return [shape], {name: make(rng, shape) for name, make in params.items()}

    return draw


reduction = with_param(
    rand_shape, dim=lambda rng, s: random_dims(rng, len(s)), keepdim=lambda rng, s: rng.random() < 0.5
)


def reverse_dims(w: SimpleNamespace, a: Any) -> Any:
    """``a.T``; real torch deprecates ``.T`` except on matrices, so it spells it as permute there."""
    if w is SG or a.dim() == 2:
        return a.T
    return a.permute(*reversed(range(a.dim())))


def unpack_rows(w: SimpleNamespace, p: dict, x: Any) -> Any:
    first, second = x[0]  # iteration (unbind) of a row of two entries
    rows = list(x)
    return first * second + sum((i + 1) * row for i, row in enumerate(rows)) - second


# Equations for einsum (two operands) and a shape for each letter.
EINSUMS = [
    "ij,jk->ik", "ij,jk", "ij,ij->", "ij,ij->i", "i,j->ij", "bij,bjk->bik", "ij,j->i", "ij,kj", "i,i->", "ijk,k",
    "ij,jk->", "ij,j->j", "ji,jk->ki", "ij,kl->",
]  # fmt: skip


def einsum_draw(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
    """An equation, a size per subscript, and now and then a size-1 dim (torch's einsum broadcasts it)."""
    equation = rng.choice(EINSUMS)
    sizes = {letter: rng.randint(1, 3) for letter in "bijkl"}
    operands = equation.split("->")[0].split(",")
    shapes = [tuple(1 if rng.random() < 0.15 else sizes[c] for c in operand) for operand in operands]
    return shapes, {"equation": equation}


def dim_of(rng: random.Random, shape: tuple[int, ...]) -> int:
    n = max(len(shape), 1)
    return rng.randint(-n, n - 1)


def sizes_at_least_two(rng: random.Random) -> tuple[int, ...]:
    """var/std divide by N - 1: every reduced size must be at least 2 (torch warns otherwise)."""
    return tuple(rng.randint(2, 4) for _ in range(rng.randint(1, 3)))


def square(rng: random.Random) -> list[tuple[int, ...]]:
    n = rng.randint(1, 3)
    return [(n, n)]


def addmm_shapes(rng: random.Random) -> list[tuple[int, ...]]:
    n, k, m = (rng.randint(1, 3) for _ in range(3))
    return [rng.choice([(m,), (n, m), (1, m), ()]), (n, k), (k, m)]


def linear_shapes(rng: random.Random) -> list[tuple[int, ...]]:
    i, o = rng.randint(1, 3), rng.randint(1, 3)
    return [(*rand_shape(rng, 0, 2), i), (o, i), (o,)]


def classes(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
    n, c = rng.randint(1, 3), rng.randint(2, 4)
    reduction = rng.choice(["mean", "sum"])  # symgrad refuses reduction="none" for class targets
    return [(n, c)], {"target": [rng.randrange(c) for _ in range(n)], "reduction": reduction}


def same_pair(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
    shape = rand_shape(rng)
    return [shape, shape], {"reduction": rng.choice(["mean", "sum", "none"])}


def probabilities(rng: random.Random) -> tuple[list[tuple[int, ...]], dict]:
    shape = rand_shape(rng)
    target = np.array([rng.uniform(0.05, 0.95) for _ in range(int(np.prod(shape, dtype=int)))]).reshape(shape)
    return [shape], {"target": target, "reduction": rng.choice(["mean", "sum", "none"])}


def ones_likely(rng: random.Random) -> tuple[int, ...]:
    return tuple(1 if rng.random() < 0.5 else rng.randint(2, 3) for _ in range(rng.randint(0, 2)))


def expand_target(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Leading new dims, and size-1 dims grown (expand's rule)."""
    return (*rand_shape(rng, 0, 1, 3), *(rng.randint(1, 3) if d == 1 else d for d in shape))


def eye_like(w: SimpleNamespace, a: Any) -> Any:
    return w.eye(a.shape[0])


def all_dims(p: dict, a: Any) -> Any:
    return p["dim"] if p["dim"] is not None else tuple(range(a.dim()))


CASES: list[Case] = [
    # products
    Case("mm", shapes_only(mm_shapes), lambda w, p, a, b: w.torch.mm(a, b)),
    Case("mm_method", shapes_only(mm_shapes), lambda w, p, a, b: a.mm(b)),
    Case("matmul_1d_1d", shapes_only(lambda rng: [(k := rng.randint(1, 4),), (k,)]), lambda w, p, a, b: a @ b),
    Case(
        "matmul_2d_1d",
        shapes_only(lambda rng: [(rng.randint(1, 4), k := rng.randint(1, 4)), (k,)]),
        lambda w, p, a, b: w.torch.matmul(a, b),
    ),
    Case(
        "matmul_1d_2d",
        shapes_only(lambda rng: [(k := rng.randint(1, 4),), (k, rng.randint(1, 4))]),
        lambda w, p, a, b: a.matmul(b),
    ),
    Case("matmul_2d_2d", shapes_only(mm_shapes), lambda w, p, a, b: a @ b),
    Case("matmul_batched", shapes_only(batched_matmul_shapes), lambda w, p, a, b: w.torch.matmul(a, b)),
    Case("matmul_batched_operator", shapes_only(batched_matmul_shapes), lambda w, p, a, b: a @ b),
    # broadcasting arithmetic
    Case("add", pair, lambda w, p, a, b: a + b),
    Case("sub", pair, lambda w, p, a, b: a - b),
    Case("mul", pair, lambda w, p, a, b: a * b),
    Case("div", pair, lambda w, p, a, b: a / b, positive=True),
    Case("pow_tensor_tensor", pair, lambda w, p, a, b: a**b, positive=True),
    Case("torch_add_alpha", pair, lambda w, p, a, b: w.torch.add(a, b, alpha=2)),
    Case("torch_sub_alpha", pair, lambda w, p, a, b: w.torch.sub(a, b, alpha=0.5)),
    Case("torch_mul_div", pair, lambda w, p, a, b: w.torch.div(w.torch.mul(a, b), b), positive=True),
    Case("torch_pow_tensor", pair, lambda w, p, a, b: w.torch.pow(a, b), positive=True),
    Case(
        "methods_add_sub_mul_div_pow",
        pair,
        lambda w, p, a, b: a.add(b).mul(b).sub(a).div(b).pow(2).neg(),
        positive=True,
    ),
    # Python scalars on either side
    Case("scalar_add", one_any, lambda w, p, a: (a + 2) + (1.5 + a)),
    Case("scalar_sub", one_any, lambda w, p, a: (a - 1.5) * (3 - a)),
    Case("scalar_mul", one_any, lambda w, p, a: a * 2 + 2.5 * a),
    Case("scalar_div", one_any, lambda w, p, a: a / 3 + 2 / a, positive=True),
    Case("scalar_pow", one_any, lambda w, p, a: a**2 + a**3 - a**-1, positive=True),
    Case("scalar_pow_half", one_any, lambda w, p, a: a**0.5 + a**1.5, positive=True),
    Case("scalar_rpow", one_any, lambda w, p, a: 2**a + 0.5**a),
    Case("torch_pow_scalar", one_any, lambda w, p, a: w.torch.pow(a, 3) + w.torch.pow(2, a)),
    Case("neg", one_any, lambda w, p, a: -a * w.torch.neg(a)),
    # layout
    Case("T_matrix", one_matrix, lambda w, p, a: a.T),
    Case("T_any", one_any, lambda w, p, a: reverse_dims(w, a) * 2),
    Case("mT", shapes_only(lambda rng: [rand_shape(rng, 2, 3)]), lambda w, p, a: a.mT),
    Case(
        "transpose",
        with_param(rand_shape, dims=lambda rng, s: two_dims(rng, len(s))),
        lambda w, p, a: a.transpose(*p["dims"]),
    ),
    Case(
        "torch_transpose",
        with_param(rand_shape, dims=lambda rng, s: two_dims(rng, len(s))),
        lambda w, p, a: w.torch.transpose(a, *p["dims"]),
    ),
    Case("t", shapes_only(lambda rng: [rand_shape(rng, 0, 2)]), lambda w, p, a: a.t() * w.torch.t(a)),
    Case(
        "permute",
        with_param(lambda rng: rand_shape(rng, 1, 3), order=lambda rng, s: permutation(rng, len(s))),
        lambda w, p, a: a.permute(*p["order"]),
    ),  # torch has no a.permute() without dims
    Case(
        "permute_tuple",
        with_param(rand_shape, order=lambda rng, s: permutation(rng, len(s))),
        lambda w, p, a: a.permute(p["order"]) + w.torch.permute(a, p["order"]),
    ),
    Case(
        "reshape",
        with_param(rand_shape, target=lambda rng, s: random_reshape(rng, s)),
        lambda w, p, a: a.reshape(*p["target"]),
    ),
    Case(
        "reshape_tuple",
        with_param(rand_shape, target=lambda rng, s: random_reshape(rng, s)),
        lambda w, p, a: a.reshape(p["target"]) * w.torch.reshape(a, p["target"]),
    ),
    Case(
        "view",
        with_param(rand_shape, target=lambda rng, s: random_reshape(rng, s)),
        lambda w, p, a: a.view(*p["target"]) + a.view(-1).sum(),
    ),
    Case(
        "unsqueeze",
        with_param(rand_shape, dim=lambda rng, s: rng.randint(-len(s) - 1, len(s))),
        lambda w, p, a: a.unsqueeze(p["dim"]) * w.torch.unsqueeze(a, p["dim"]),
    ),
    Case("flatten", one_any, lambda w, p, a: a.flatten() + w.torch.flatten(a)),
    Case("ravel", one_any, lambda w, p, a: (2 * a).ravel() * w.torch.ravel(a)),
    Case("clone", one_any, lambda w, p, a: w.torch.clone(a) * a.clone()),
    Case("index", with_param(rand_shape, index=random_index), lambda w, p, a: a[p["index"]]),
    Case(
        "index_chain",
        with_param(lambda rng: rand_shape(rng, 1, 3), index=random_index),
        lambda w, p, a: a[p["index"]][None] * 2,
    ),
    Case("unpack_iteration", shapes_only(lambda rng: [(rng.randint(1, 4), 2)]), unpack_rows),
    # reductions
    Case("sum", reduction, lambda w, p, a: a.sum(dim=p["dim"], keepdim=p["keepdim"])),
    Case(
        "torch_sum",
        reduction,
        lambda w, p, a: w.torch.sum(a, p["dim"], p["keepdim"]) if p["dim"] is not None else w.torch.sum(a),
    ),
    Case("mean", reduction, lambda w, p, a: a.mean(dim=p["dim"], keepdim=p["keepdim"])),
    Case(
        "torch_mean",
        reduction,
        lambda w, p, a: w.torch.mean(a, p["dim"], p["keepdim"]) if p["dim"] is not None else w.torch.mean(a),
    ),
    Case(
        "sum_positional",
        with_param(lambda rng: rand_shape(rng, 1, 3), dim=lambda rng, s: random_dims(rng, len(s))),
        lambda w, p, a: a.sum(p["dim"]) if p["dim"] is not None else a.sum(),
    ),
    Case(
        "sum_empty_dims",
        with_param(lambda rng: rand_shape(rng, 2, 3), keepdim=lambda rng, s: rng.random() < 0.5),
        lambda w, p, a: a.sum(dim=(), keepdim=p["keepdim"]) + a.mean(dim=[], keepdim=p["keepdim"]),
    ),
    # constants shaped like a tensor
    Case(
        "ones_zeros_full_like",
        one_any,
        lambda w, p, a: a * w.torch.ones_like(a) + w.torch.zeros_like(a) - w.torch.full_like(a, 2.5) * a,
    ),
    # elementwise functions: methods, torch.* and torch.nn.functional
    Case("exp", one_any, lambda w, p, a: a.exp() + w.torch.exp(a)),
    Case("log", one_any, lambda w, p, a: a.log() * w.torch.log(a), positive=True),
    Case("sin", one_any, lambda w, p, a: a.sin() + w.torch.sin(a * 2)),
    Case("cos", one_any, lambda w, p, a: a.cos() * w.torch.cos(a)),
    Case("tanh", one_any, lambda w, p, a: a.tanh() + w.torch.tanh(a) * w.F.tanh(a)),
    Case("sigmoid", one_any, lambda w, p, a: a.sigmoid() + w.torch.sigmoid(a) * w.F.sigmoid(a)),
    Case("relu", one_any, lambda w, p, a: a.relu() + w.torch.relu(a) * w.F.relu(a)),
    Case("abs", one_any, lambda w, p, a: a.abs() + w.torch.abs(a) * a),
    Case("sqrt", one_any, lambda w, p, a: a.sqrt() + w.torch.sqrt(a), positive=True),
    Case("user_function", one_any, lambda w, p, a: w.f(a) * w.f(a * 0.5)),
    # ── ops added with the gradient laws: elementwise ──
    Case("erf", one_any, lambda w, p, a: a.erf() + w.torch.erf(a) * a),
    Case("log1p", one_any, lambda w, p, a: a.log1p() * w.torch.log1p(a), positive=True),
    Case("expm1_exp2_erfc", one_any, lambda w, p, a: a.expm1() * w.torch.exp2(a) + w.torch.erfc(a) * a.exp2()),
    Case(
        "reciprocal_rsqrt",
        one_any,
        lambda w, p, a: a.reciprocal() + w.torch.reciprocal(a) * a.rsqrt() - w.torch.rsqrt(a),
        positive=True,
    ),
    Case("sign", one_any, lambda w, p, a: a.sign() * a + w.torch.sign(a) * a * a),
    Case("atan2", pair, lambda w, p, a, b: w.torch.atan2(a, b) * a),
    Case("maximum_minimum", pair, lambda w, p, a, b: w.torch.maximum(a, b) - w.torch.minimum(a, b) * 2),
    Case("max_of_two", pair, lambda w, p, a, b: w.torch.max(a, b) * a),
    Case(
        "clamp_clip",
        one_any,
        lambda w, p, a: a.clamp(min=-0.5) + a.clamp(max=0.5) * w.torch.clamp(a, -0.3, 0.7) + w.torch.clip(a, min=0.1),
    ),
    Case(
        "where_comparisons",
        pair,
        lambda w, p, a, b: (
            w.torch.where(a > b, a * b, a - b)
            + w.torch.where(w.torch.ge(a, 0.2), a, 0.5)
            + w.torch.where(w.torch.lt(b, a), b, 2 * a)
            + w.torch.where(w.torch.le(a, -0.1), a * a, b)
            + w.torch.where(w.torch.gt(b, -0.3), a, b)
            + w.torch.where(w.torch.eq(a, a), b, a)
            + w.torch.where(a < 0, a, 0.0)
            + w.torch.where(a >= b, 1.0, b)
            + w.torch.where(a <= 0.3, a, b)
        ),
    ),
    # ── reductions along dims ──
    Case(
        "softmax",
        with_param(lambda rng: rand_shape(rng, 1, 3), dim=dim_of),
        lambda w, p, a: a.softmax(p["dim"]) + w.torch.softmax(a, p["dim"]) * w.F.softmax(a, dim=p["dim"]),
    ),
    Case(
        "log_softmax",
        with_param(lambda rng: rand_shape(rng, 1, 3), dim=dim_of),
        lambda w, p, a: a.log_softmax(p["dim"]) + w.torch.log_softmax(a, p["dim"]) * w.F.log_softmax(a, dim=p["dim"]),
    ),
    Case(
        "logsumexp",
        reduction,
        lambda w, p, a: (
            a.logsumexp(all_dims(p, a), keepdim=p["keepdim"])
            * w.torch.logsumexp(a, all_dims(p, a), keepdim=p["keepdim"])
        ),
    ),
    Case(
        "amax",
        reduction,
        lambda w, p, a: a.amax(all_dims(p, a), keepdim=p["keepdim"]) + w.torch.amax(a, all_dims(p, a), p["keepdim"]),
    ),
    Case("max_all", one_any, lambda w, p, a: a.max() * w.torch.max(a)),
    Case(
        "max_dim",
        with_param(lambda rng: rand_shape(rng, 1, 3), dim=dim_of, keepdim=lambda rng, s: rng.random() < 0.5),
        lambda w, p, a: a.max(p["dim"], keepdim=p["keepdim"]).values + w.torch.max(a, p["dim"], p["keepdim"])[0],
    ),
    Case(
        "norm",
        reduction,
        lambda w, p, a: (
            a.norm(dim=p["dim"], keepdim=p["keepdim"])
            + w.torch.norm(a, 1, p["dim"], p["keepdim"])
            + w.torch.norm(a, p="fro", dim=p["dim"], keepdim=p["keepdim"]) * w.torch.norm(a, p=w.torch.inf)
        ),
    ),
    Case(
        "var_std",
        with_param(
            sizes_at_least_two, dim=lambda rng, s: random_dims(rng, len(s)), keepdim=lambda rng, s: rng.random() < 0.5
        ),
        lambda w, p, a: (
            a.var(p["dim"], keepdim=p["keepdim"])
            + w.torch.std(a, p["dim"], keepdim=p["keepdim"])
            + w.torch.var(a, p["dim"], correction=0, keepdim=p["keepdim"])
            * a.std(p["dim"], unbiased=False, keepdim=p["keepdim"])
            + w.torch.var(a, False)
            + w.torch.std(a) * 2
        ),
    ),
    Case(
        "cumsum",
        with_param(lambda rng: rand_shape(rng, 1, 3), dim=dim_of),
        lambda w, p, a: a.cumsum(p["dim"]) * w.torch.cumsum(a, p["dim"]),
    ),
    Case(
        "flip",
        with_param(
            lambda rng: rand_shape(rng, 1, 3), order=lambda rng, s: permutation(rng, len(s))[: rng.randint(1, len(s))]
        ),
        lambda w, p, a: a.flip(p["order"]) * w.torch.flip(a, p["order"]) + a.flip(*p["order"]),
    ),
    Case("trace", one_matrix, lambda w, p, a: a.trace() * w.torch.trace(a)),
    Case(
        "expand",
        with_param(ones_likely, target=expand_target),
        lambda w, p, a: (
            a.expand(*p["target"]) * a.expand(p["target"])
            + a.expand_as(w.zeros(*p["target"]))
            + a.expand(*p["target"][: len(p["target"]) - a.dim()], *(-1 for _ in a.shape))
        ),
    ),
    # ── products ──
    Case("einsum", einsum_draw, lambda w, p, a, b: w.torch.einsum(p["equation"], a, b)),
    Case(
        "outer_ger_dot",
        shapes_only(lambda rng: [(k := rng.randint(1, 4),), (k,)]),
        lambda w, p, a, b: w.torch.outer(a, b) + w.torch.ger(b, a) * w.torch.dot(a, b),
    ),
    Case(
        "bmm",
        shapes_only(
            lambda rng: [(n := rng.randint(1, 3), rng.randint(1, 3), k := rng.randint(1, 3)), (n, k, rng.randint(1, 3))]
        ),
        lambda w, p, a, b: w.torch.bmm(a, b),
    ),
    Case(
        "addmm",
        shapes_only(addmm_shapes),
        lambda w, p, c, a, b: (
            w.torch.addmm(c, a, b) + w.torch.addmm(c, a, b, beta=0.5, alpha=2) + w.torch.addmm(c, a, b, beta=0)
        ),
    ),
    # ── linear algebra on small square matrices ──
    Case("det", shapes_only(square), lambda w, p, a: w.torch.det(a) + w.torch.linalg.det(a) * 2),
    Case(
        "logdet",
        shapes_only(square),
        lambda w, p, a: w.torch.logdet(a @ a.mT + eye_like(w, a)),  # positive definite
    ),
    Case(
        "inverse",
        shapes_only(square),
        lambda w, p, a: w.torch.inverse(a + 3 * eye_like(w, a)),
    ),
    Case(
        "linalg_inv",
        shapes_only(square),
        lambda w, p, a: w.torch.linalg.inv(a / 2 + 2 * eye_like(w, a)),  # integer coefficients: SymPy is faster
    ),
    Case(
        "slogdet",
        shapes_only(square),
        lambda w, p, a: (
            w.torch.linalg.slogdet(-(a @ a.mT) - eye_like(w, a)).logabsdet
            * w.torch.slogdet(-(a @ a.mT) - eye_like(w, a)).sign
        ),
    ),
    Case(
        "linalg_norms",
        with_param(lambda rng: rand_shape(rng, 2, 3), dim=dim_of),
        lambda w, p, a: (
            w.torch.linalg.vector_norm(a)
            + w.torch.linalg.vector_norm(a, 1, dim=p["dim"]).sum()
            + w.torch.linalg.vector_norm(a, w.torch.inf, dim=p["dim"], keepdim=True).sum()
            + w.torch.linalg.matrix_norm(a).sum() * w.torch.linalg.norm(a)
            + w.torch.linalg.norm(a, "fro", dim=(-2, -1)).sum()
        ),
    ),
    # ── torch.nn.functional ──
    Case(
        "activations",
        one_any,
        lambda w, p, a: (
            w.F.gelu(a)
            + w.F.silu(a) * w.F.softplus(a)
            - w.F.logsigmoid(a)
            + w.F.hardtanh(a) * w.F.hardtanh(a, -0.5, 0.25)
            + w.F.leaky_relu(a)
            + w.F.leaky_relu(a, 0.2)
            + w.F.threshold(a, 0.1, -2.0)
        ),
    ),
    Case(
        "linear",
        shapes_only(linear_shapes),
        lambda w, p, x, weight, bias: w.F.linear(x, weight, bias) * w.F.linear(x, weight),
    ),
    Case(
        "layer_norm",
        with_param(lambda rng: rand_shape(rng, 1, 3), k=lambda rng, s: rng.randint(1, len(s))),
        lambda w, p, a: w.F.layer_norm(a, a.shape[len(a.shape) - p["k"] :]) * a,
    ),
    Case(
        "cross_entropy_nll",
        classes,
        lambda w, p, a: (
            w.F.cross_entropy(a, w.const(p["target"]), reduction=p["reduction"])
            + w.F.nll_loss(w.F.log_softmax(a, dim=1), w.const(p["target"]), reduction=p["reduction"]) * 2
        ),
    ),
    Case(
        "one_hot",
        classes,
        lambda w, p, a: w.F.one_hot(w.const(p["target"]), a.shape[1]) * a + w.F.one_hot(w.const(p["target"])).sum(),
    ),
    Case("mse_loss", same_pair, lambda w, p, a, b: w.F.mse_loss(a, b, reduction=p["reduction"])),
    Case(
        "binary_cross_entropy",
        probabilities,
        lambda w, p, a: (
            w.F.binary_cross_entropy_with_logits(a, w.const(p["target"]), reduction=p["reduction"])
            + w.F.binary_cross_entropy(w.torch.sigmoid(a), w.const(p["target"]), reduction=p["reduction"])
        ),
    ),
    # compositions
    Case(
        "mlp",
        shapes_only(
            lambda rng: [(rng.randint(1, 3), i := rng.randint(1, 3)), (i, h := rng.randint(1, 3)), (h,), (h, 1)]
        ),
        lambda w, p, x, w1, b1, w2: w.F.sigmoid(w.F.relu(x @ w1 + b1) @ w2).mean(),
    ),
    Case(
        "attention_like",
        shapes_only(lambda rng: [(rng.randint(1, 2), rng.randint(1, 3), d := rng.randint(1, 3)), (d, d)]),
        lambda w, p, x, q: ((x @ q) @ x.transpose(-2, -1)).tanh().sum(dim=-1, keepdim=True) * x,
    ),
    # recurrent cells, as torch's functions spell them (all weights and both states differentiated)
    Case("rnn_tanh_cell", cell_shapes(1), lambda w, p, *a: w.torch.rnn_tanh_cell(*a)),
    Case("rnn_relu_cell", cell_shapes(1), lambda w, p, *a: w.torch.rnn_relu_cell(*a)),
    Case("gru_cell", cell_shapes(3), lambda w, p, *a: w.torch.gru_cell(*a)),
    Case(
        "lstm_cell",
        cell_shapes(4, states=2),
        lambda w, p, x, h, c, *weights: sum(w.torch.lstm_cell(x, (h, c), *weights)),
    ),
]
CASE_IDS = [case.name for case in CASES]


def draw_case(case: Case, seed: int) -> tuple[random.Random, list[tuple[int, ...]], dict]:
    rng = random.Random(f"{case.name}-{seed}")
    shapes, params = case.draw(rng)
    return rng, shapes, params


def random_array(rng: random.Random, shape: tuple[int, ...], positive: bool = False) -> np.ndarray:
    low, high = (0.25, 1.5) if positive else (-1.5, 1.5)
    size = int(np.prod(shape, dtype=int))
    return np.array([rng.uniform(low, high) for _ in range(size)], dtype=float).reshape(shape)


def assert_close(ours: Any, theirs: Any) -> None:
    np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float), rtol=TOL, atol=TOL)


# ── 1. the symbolic graph passes symgrad.verify.check ───────────────────────
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_symbolic_graph_passes_check(case: Case, seed: int) -> None:
    rng, shapes, params = draw_case(case, seed)
    leaves = [symbols(f"x{i}", shape, requires_grad=True) for i, shape in enumerate(shapes)]
    out = case.build(SG, params, *leaves)
    assert isinstance(out, Tensor)
    reports = [
        check(out.sum(), seed=seed),  # implicit grad
        check(out, grad_tensors=symbols_like(out, "v"), seed=seed),  # symbolic grad_tensor
        check(out, grad_tensors=tensor(random_array(rng, out.shape)), seed=seed),  # numeric grad_tensor
    ]
    for report in reports:
        assert report.ok
        assert {c.label for c in report.comparisons} >= {f"grad x{i}" for i in range(len(leaves))}


# ── 2. values and gradients against a graph built independently in torch ────
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_real_torch(case: Case, seed: int) -> None:
    rng, shapes, params = draw_case(case, seed)
    arrays = [random_array(rng, shape, case.positive) for shape in shapes]
    ours = [tensor(a.tolist(), requires_grad=True, name=f"x{i}") for i, a in enumerate(arrays)]
    theirs = [real_torch.tensor(a, dtype=real_torch.float64, requires_grad=True) for a in arrays]
    out, expected = case.build(SG, params, *ours), case.build(PT, params, *theirs)

    assert tuple(out.shape) == tuple(expected.shape)
    assert_close(out.tolist(), expected.tolist())

    # Two backward calls: .grad accumulates, as in torch.
    out.sum().backward(retain_graph=True)
    expected.sum().backward(retain_graph=True)
    v = random_array(rng, tuple(expected.shape))
    out.backward(tensor(v, name="v"))  # an array keeps a 0-size shape that nested lists lose
    expected.backward(real_torch.tensor(v, dtype=real_torch.float64))
    for leaf, reference in zip(ours, theirs, strict=True):
        assert reference.grad is not None
        assert leaf.grad is not None
        assert_close(leaf.grad.tolist(), reference.grad.tolist())


@pytest.mark.parametrize("seed", SEEDS[:2])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gradient_law_matches_real_torch(case: Case, seed: int) -> None:
    """The op rows' VJP rules (symgrad.reverse.law, simplified) give torch's gradients too."""
    rng, shapes, params = draw_case(case, seed)
    arrays = [random_array(rng, shape, case.positive) for shape in shapes]
    ours = [tensor(a.tolist(), requires_grad=True, name=f"x{i}") for i, a in enumerate(arrays)]
    theirs = [real_torch.tensor(a, dtype=real_torch.float64, requires_grad=True) for a in arrays]
    out, expected = case.build(SG, params, *ours), case.build(PT, params, *theirs)
    v = random_array(rng, tuple(expected.shape))
    laws = law(out, ours, tensor(v, name="v"))
    references = real_torch.autograd.grad(expected, theirs, real_torch.tensor(v, dtype=real_torch.float64))
    for formula, reference in zip(laws, references, strict=True):
        assert tuple(formula.shape) == tuple(reference.shape)
        assert_close(formula.tolist(), reference.tolist())


def test_every_symgrad_torch_function_is_covered() -> None:
    """A new public function in symgrad.torch, torch.linalg or torch.nn.functional gets a case against real torch,
    here or in another test file of tests/ops spelling it ``w.torch.<name>(`` / ``w.F.<name>(``."""
    not_ops = {"Tensor", "autograd", "backward", "func", "inf", "is_tensor", "linalg", "nn", "tensor", "aliases"}
    not_ops |= {"special"}  # a namespace: its functions are covered one by one in test_math_functions.py
    not_ops |= {"float", "float32", "float64", "double", "int64", "long"}  # dtypes
    sources = Path(__file__).read_text(encoding="utf-8").split("CASES: list[Case] = [", 1)[1].split("CASE_IDS", 1)[0]
    sources += "".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.glob("test_*.py"))
    missing = [name for name in sym_torch.__all__ if name not in not_ops and f"w.torch.{name}(" not in sources]
    missing += [
        f"linalg.{name}"
        for name in sym_torch.linalg.__all__
        if name != "slogdet_result" and f"w.torch.linalg.{name}(" not in sources
    ]
    missing += [f"F.{name}" for name in sym_torch.nn.functional.__all__ if f"w.F.{name}(" not in sources]
    assert missing == []


# ── 3. torch's subgradients at non-differentiable points ────────────────────
DIRECT_KINKS = {"relu_method", "torch_relu", "functional_relu", "abs_method", "torch_abs"}
KINKS: list[tuple[str, Callable]] = [
    ("relu_method", lambda w, a: a.relu()),
    ("torch_relu", lambda w, a: w.torch.relu(a)),
    ("functional_relu", lambda w, a: w.F.relu(a)),
    ("abs_method", lambda w, a: a.abs()),
    ("torch_abs", lambda w, a: w.torch.abs(a)),
    ("relu_of_product", lambda w, a: (a * 3).relu() * 2),
    ("abs_of_product", lambda w, a: (a * a.abs()).abs()),
    ("relu_of_difference", lambda w, a: (a - a[0]).relu()),
    ("abs_of_difference", lambda w, a: (a - a[0]).abs()),
    ("abs_then_relu", lambda w, a: (a.abs() - 1).relu() + a.relu().abs()),
]


@pytest.mark.parametrize(("label", "build"), KINKS, ids=[k[0] for k in KINKS])
def test_subgradients_at_zero_match_torch(label: str, build: Callable) -> None:
    x = compare_at([0.0, -0.0, 1.0, -2.0, 0.0], build)
    if label in DIRECT_KINKS:
        assert x.grad.tolist()[0] == 0.0  # relu'(0) = abs'(0) = 0


def compare_at(data: list, build: Callable) -> Tensor:
    """Forward values and .grad at exactly ``data`` against torch; check() substitutes the same values."""
    x = tensor(data, requires_grad=True, name="x")
    reference = real_torch.tensor(data, dtype=real_torch.float64, requires_grad=True)
    out, expected = build(SG, x), build(PT, reference)
    assert_close(out.tolist(), expected.tolist())
    out.sum().backward()
    expected.sum().backward()
    assert_close(x.grad.tolist(), reference.grad.tolist())
    assert check(build(SG, tensor(data, requires_grad=True, name="y")).sum()).ok
    z = tensor(data, requires_grad=True, name="z")
    (gradient_law,) = law(build(SG, z).sum(), [z])  # the op rows' VJP rules pick the same subgradient
    assert_close(gradient_law.tolist(), reference.grad.tolist())
    return x


TIES = [1.0, -1.0, 1.0, 0.5, 1.0, -1.0]  # the maximum thrice, the minimum twice
BOUNDS = [-0.5, 0.5, 0.0, 1.0, -1.0, 0.25]  # values exactly at the bounds used below
TIE_CASES: list[tuple[str, list, Callable]] = [
    ("amax_ties", TIES, lambda w, a: a.amax() + w.torch.amax(a, 0)),
    ("max_ties", TIES, lambda w, a: a.max() * w.torch.max(a)),
    ("max_dim_ties_first_index", TIES, lambda w, a: a.reshape(2, 3).max(1).values * w.torch.max(a.reshape(3, 2), 0)[0]),
    ("amax_dim_ties", TIES, lambda w, a: w.torch.amax(a.reshape(2, 3), 1, keepdim=True) * a.reshape(2, 3)),
    ("maximum_ties", TIES, lambda w, a: w.torch.maximum(a, a.flip(0)) + w.torch.max(a, a * 0 + 1.0)),
    ("minimum_ties", TIES, lambda w, a: w.torch.minimum(a, a.flip(0)) * 3),
    ("norm_inf_ties", TIES, lambda w, a: w.torch.linalg.vector_norm(a, w.torch.inf) + w.torch.norm(a, p=w.torch.inf)),
    ("clamp_at_bounds", BOUNDS, lambda w, a: a.clamp(-0.5, 0.5) + w.torch.clamp(a, min=0.25) + a.clamp(max=-1.0)),
    ("clip_at_bounds", BOUNDS, lambda w, a: w.torch.clip(a, -0.5, 0.5) * a),
    ("hardtanh_at_bounds", BOUNDS, lambda w, a: w.F.hardtanh(a, -0.5, 0.5) + w.F.hardtanh(a)),
    ("threshold_at_threshold", BOUNDS, lambda w, a: w.F.threshold(a, 0.25, -3.0) + w.F.threshold(a, 0.0, 2.0)),
    ("leaky_relu_at_zero", BOUNDS, lambda w, a: w.F.leaky_relu(a, 0.1)),
    ("sign_at_zero", BOUNDS, lambda w, a: w.torch.sign(a) * a + a.sign()),
    ("norm_of_zeros", [0.0, 0.0, 0.0], lambda w, a: a.norm() + w.torch.linalg.vector_norm(a) + w.torch.norm(a, 1)),
    ("norm_of_some_zero_rows", [0.0, 0.0, 1.0, -2.0], lambda w, a: a.reshape(2, 2).norm(dim=1)),
    ("where_at_equality", BOUNDS, lambda w, a: w.torch.where(a >= 0.5, a, -a) + w.torch.where(a <= -0.5, a * a, a)),
    ("max_of_relu_ties", [0.0, -1.0, -2.0], lambda w, a: a.relu().amax()),
]


@pytest.mark.parametrize(("label", "data", "build"), TIE_CASES, ids=[t[0] for t in TIE_CASES])
def test_ties_and_bounds_match_torch(label: str, data: list, build: Callable) -> None:
    """At ties and at clamp bounds torch picks a subgradient (split evenly, first index, pass or block)."""
    compare_at(data, build)


def test_subgradient_formulas() -> None:
    x = symbols("x", (2,), requires_grad=True)
    x0 = x.entries()[0]
    sym_torch.relu(x).sum().backward()
    assert x.grad.sympy()[0] == sympy.Heaviside(x0, 0)
    assert sympy.Heaviside(x0, 0).subs(x0, 0) == 0
    y = symbols("y", (2,), requires_grad=True)
    y.abs().sum().backward()
    y0 = y.entries()[0]
    assert y.grad.sympy()[0] == sympy.sign(y0)
    assert sympy.sign(y0).subs(y0, 0) == 0


# ── 4. shape errors: torch's exception type and message ─────────────────────
def z(w: SimpleNamespace, *shape: int) -> Any:
    return w.zeros(*shape)


ERRORS: list[tuple[str, Callable]] = [
    ("mm_mismatch", lambda w: w.torch.mm(z(w, 2, 3), z(w, 4, 5))),
    ("mm_method_mismatch", lambda w: z(w, 3, 2).mm(z(w, 3, 2))),
    ("mm_left_not_matrix", lambda w: w.torch.mm(z(w, 3), z(w, 3, 5))),
    ("mm_right_not_matrix", lambda w: w.torch.mm(z(w, 2, 3), z(w, 3))),
    ("matmul_2d_2d", lambda w: z(w, 2, 3) @ z(w, 4, 5)),
    ("matmul_1d_1d", lambda w: w.torch.matmul(z(w, 3), z(w, 4))),
    ("matmul_1d_2d", lambda w: z(w, 3) @ z(w, 4, 5)),
    ("matmul_2d_1d", lambda w: z(w, 2, 3) @ z(w, 4)),
    ("matmul_3d_1d", lambda w: z(w, 2, 2, 3) @ z(w, 4)),
    ("matmul_3d_2d", lambda w: z(w, 2, 2, 3) @ z(w, 4, 5)),
    ("matmul_1d_3d", lambda w: z(w, 3) @ z(w, 2, 4, 5)),
    ("matmul_2d_3d", lambda w: z(w, 2, 3) @ z(w, 2, 4, 5)),
    ("matmul_3d_3d_inner", lambda w: z(w, 2, 2, 3) @ z(w, 2, 4, 5)),
    ("matmul_batch_broadcast", lambda w: z(w, 2, 2, 3) @ z(w, 3, 3, 5)),
    ("matmul_batch_broadcast_last_dim", lambda w: z(w, 2, 2, 1, 1) @ z(w, 3, 3, 1, 1)),
    ("matmul_0d", lambda w: w.torch.matmul(z(w), z(w, 3))),
    ("broadcast_add", lambda w: z(w, 2, 3) + z(w, 4)),
    ("broadcast_mul_3d", lambda w: z(w, 2, 3) * z(w, 2, 1, 4)),
    ("broadcast_reports_last_dim", lambda w: z(w, 2, 3) - z(w, 3, 2)),
    ("broadcast_div", lambda w: z(w, 4, 1, 3) / z(w, 2, 4)),
    ("broadcast_pow", lambda w: z(w, 3) ** z(w, 2, 2)),
    ("reshape_invalid", lambda w: z(w, 2, 3).reshape(4, 2)),
    ("reshape_infer_invalid", lambda w: z(w, 2, 3).reshape(-1, 4)),
    ("reshape_two_inferred", lambda w: z(w, 2, 3).reshape(-1, -1)),
    ("reshape_negative", lambda w: z(w, 2, 3).reshape(-2, -3)),
    ("reshape_infer_zero", lambda w: z(w, 2, 3).reshape(-1, 0)),
    ("view_invalid", lambda w: z(w, 2, 3).view(5)),
    ("torch_reshape_invalid", lambda w: w.torch.reshape(z(w, 2, 3), (7,))),
    ("sum_dim_out_of_range", lambda w: z(w, 2, 3).sum(2)),
    ("sum_negative_dim_out_of_range", lambda w: z(w, 2, 3).sum(dim=-3)),
    ("sum_dim_tuple_out_of_range", lambda w: z(w, 2, 3, 4).sum((0, 5))),
    ("sum_dim_repeated", lambda w: z(w, 2, 3).sum((0, -2))),
    ("sum_dim_repeated_later", lambda w: z(w, 2, 3, 4).sum((2, 0, -1))),
    ("mean_dim_out_of_range", lambda w: z(w, 2, 3).mean(dim=(1, 2), keepdim=True)),
    ("scalar_sum_dim_out_of_range", lambda w: z(w).sum(1)),
    ("transpose_dim_out_of_range", lambda w: z(w, 2, 3).transpose(0, 2)),
    ("torch_transpose_dim_out_of_range", lambda w: w.torch.transpose(z(w, 2), -2, 0)),
    ("unsqueeze_dim_out_of_range", lambda w: z(w, 2, 3).unsqueeze(3)),
    ("unsqueeze_negative_out_of_range", lambda w: z(w, 2, 3).unsqueeze(-4)),
    ("permute_dim_out_of_range", lambda w: z(w, 2, 3).permute(0, 2)),
    ("permute_duplicate", lambda w: z(w, 2, 3).permute(1, -1)),
    ("permute_too_few", lambda w: z(w, 2, 3).permute(0)),
    ("t_of_3d", lambda w: z(w, 2, 3, 4).t()),
    ("mT_of_1d", lambda w: z(w, 3).mT),
    ("index_out_of_bounds", lambda w: z(w, 2, 3)[2]),
    ("index_negative_out_of_bounds", lambda w: z(w, 2, 3)[:, -4]),
    ("index_out_of_bounds_after_none", lambda w: z(w, 2, 3)[None, 0, 5]),
    ("index_out_of_bounds_after_ellipsis", lambda w: z(w, 2, 3, 4)[..., 5]),
    ("index_out_of_bounds_ellipsis_none", lambda w: z(w, 2, 3, 4)[0, ..., None, 7]),
    ("too_many_indices", lambda w: z(w, 2, 3)[0, 0, 0]),
    ("too_many_indices_with_none", lambda w: z(w, 3)[None, 0, 0]),
    ("index_0d", lambda w: z(w)[0]),
    ("index_0d_slice", lambda w: z(w)[:]),
    ("iterate_0d", lambda w: list(z(w))),
    ("slice_step_zero", lambda w: z(w, 3)[::0]),
    ("einsum_sizes", lambda w: w.torch.einsum("ij,jk->ik", z(w, 2, 3), z(w, 4, 5))),
    ("einsum_rank", lambda w: w.torch.einsum("ij,jk->ik", z(w, 2, 3, 1), z(w, 3, 5))),
    ("einsum_repeated_sizes", lambda w: w.torch.einsum("ii,i->i", z(w, 2, 3), z(w, 3))),
    ("trace_of_1d", lambda w: w.torch.trace(z(w, 3))),
    ("trace_of_3d", lambda w: z(w, 2, 2, 2).trace()),
    ("det_not_square", lambda w: w.torch.det(z(w, 2, 3))),
    ("det_of_1d", lambda w: w.torch.linalg.det(z(w, 3))),
    ("inverse_not_square", lambda w: w.torch.inverse(z(w, 3, 2))),
    ("linalg_inv_of_1d", lambda w: w.torch.linalg.inv(z(w, 2))),
    ("logdet_not_square", lambda w: w.torch.logdet(z(w, 2, 3))),
    ("bmm_mismatch", lambda w: w.torch.bmm(z(w, 2, 3, 4), z(w, 2, 5, 6))),
    ("bmm_not_3d", lambda w: w.torch.bmm(z(w, 3, 4), z(w, 4, 6))),
    ("dot_mismatch", lambda w: w.torch.dot(z(w, 3), z(w, 4))),
    ("dot_not_1d", lambda w: w.torch.dot(z(w, 3, 1), z(w, 3))),
    ("outer_not_1d", lambda w: w.torch.outer(z(w, 3, 1), z(w, 3))),
    ("linear_mismatch", lambda w: w.F.linear(z(w, 2, 3), z(w, 4, 5))),
    ("addmm_mismatch", lambda w: w.torch.addmm(z(w, 2, 2), z(w, 2, 3), z(w, 4, 2))),
    ("softmax_dim_out_of_range", lambda w: w.torch.softmax(z(w, 2, 3), 2)),
    ("cumsum_dim_out_of_range", lambda w: w.torch.cumsum(z(w, 2, 3), -3)),
    ("amax_dim_out_of_range", lambda w: w.torch.amax(z(w, 2, 3), 2)),
    ("logsumexp_dim_repeated", lambda w: w.torch.logsumexp(z(w, 2, 3), (0, 0))),
    ("max_dim_out_of_range", lambda w: w.torch.max(z(w, 2, 3), 2)),
    ("var_dim_out_of_range", lambda w: w.torch.var(z(w, 2, 3), 2)),
    ("where_broadcast", lambda w: w.torch.where(z(w, 2, 3) > 0, z(w, 2, 3), z(w, 4))),
    ("maximum_broadcast", lambda w: w.torch.maximum(z(w, 2, 3), z(w, 2))),
    ("clamp_without_bounds", lambda w: w.torch.clamp(z(w, 2, 3))),
    ("matrix_norm_of_1d", lambda w: w.torch.linalg.matrix_norm(z(w, 3))),
]


def raised(action: Callable[[], Any]) -> BaseException:
    try:
        action()
    except Exception as error:  # the type is what we compare
        return error
    raise AssertionError("no exception was raised")


@pytest.mark.parametrize(("label", "mistake"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(label: str, mistake: Callable) -> None:
    theirs, ours = raised(lambda: mistake(PT)), raised(lambda: mistake(SG))
    assert isinstance(ours, type(theirs)), (ours, theirs)
    assert str(theirs) in str(ours)


SMALL_SHAPES = [s for n in range(4) for s in itertools.product([1, 2, 3], repeat=n)]


def builtin_type(error: BaseException) -> type:
    """RuntimeError for symgrad's ShapeError (a RuntimeError subclass) and for torch's RuntimeError."""
    return next(t for t in type(error).__mro__ if t.__module__ == "builtins")


def outcome(action: Callable, *args: Any, **kwargs: Any) -> tuple:
    """("shape", shape of ``action(*args, **kwargs)``) or ("error", built-in exception type, message)."""
    try:
        return ("shape", tuple(action(*args, **kwargs).shape))
    except (RuntimeError, IndexError, TypeError, ValueError) as error:
        return ("error", builtin_type(error), str(error))


def same_outcome(ours: tuple, theirs: tuple) -> bool:
    if theirs[0] == "shape" or ours[0] == "shape":
        return ours == theirs
    return ours[1] is theirs[1] and theirs[2] in ours[2]


@pytest.mark.parametrize("left", SMALL_SHAPES, ids=str)
def test_matmul_and_broadcast_shapes_match_torch(left: tuple[int, ...]) -> None:
    """Every pair of shapes up to 3 dims (sizes 1..3): torch's result shape or torch's error."""
    a = symbols("a", left, requires_grad=True)
    ta = real_torch.zeros(left)
    for right in SMALL_SHAPES:
        b = symbols("b", right, requires_grad=True)
        tb = real_torch.zeros(right)
        for op in (operator.matmul, operator.mul, operator.sub):
            mine, expected = outcome(op, a, b), outcome(op, ta, tb)
            assert same_outcome(mine, expected), (left, right, op, mine, expected)
        if len(left) == 2 and len(right) == 2:
            assert same_outcome(outcome(a.mm, b), outcome(ta.mm, tb))


@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=str)
def test_reduction_and_layout_shapes_match_torch(shape: tuple[int, ...]) -> None:
    """sum/mean over every dim spelling, transpose, unsqueeze and t(): shapes and errors as torch's."""
    a = symbols("a", shape, requires_grad=True)
    ta = real_torch.zeros(shape)
    n = len(shape)
    spellings: list[Any] = [None, (), []]
    spellings += list(range(-n - 1, n + 1))
    spellings += [combo for r in (1, 2, 3) for combo in itertools.product(range(-n, n), repeat=r)]
    for dim in spellings:
        for keepdim in (False, True):
            for method in ("sum", "mean"):
                mine = outcome(getattr(a, method), dim=dim, keepdim=keepdim)
                expected = outcome(getattr(ta, method), dim=dim, keepdim=keepdim)
                assert same_outcome(mine, expected), (shape, method, dim, keepdim, mine, expected)
    for d0, d1 in itertools.product(range(-n - 1, n + 1), repeat=2):
        assert same_outcome(outcome(a.transpose, d0, d1), outcome(ta.transpose, d0, d1))
    for d in range(-n - 2, n + 2):
        assert same_outcome(outcome(a.unsqueeze, d), outcome(ta.unsqueeze, d))
    assert same_outcome(outcome(a.t), outcome(ta.t))
    assert same_outcome(outcome(a.flatten), outcome(ta.flatten))


@pytest.mark.parametrize("seed", range(40))
def test_random_indexing_matches_torch(seed: int) -> None:
    """Random basic indices (out of bounds included): torch's shape, entries and errors."""
    rng = random.Random(seed)
    for _ in range(25):
        shape = rand_shape(rng, 0, 3)
        index = random_index(rng, shape)
        if rng.random() < 0.2 and shape:  # an out-of-bounds int somewhere
            items = list(index) if isinstance(index, tuple) else [index]
            spots = [i for i, item in enumerate(items) if isinstance(item, int)]
            if spots:
                spot = rng.choice(spots)
                items[spot] = rng.choice([-1, 1]) * (10 + rng.randint(0, 3))
                index = tuple(items)
        data = np.arange(int(np.prod(shape, dtype=int)), dtype=float).reshape(shape)
        x = tensor(data.tolist(), name="x")
        reference = real_torch.tensor(data, dtype=real_torch.float64)
        mine, expected = outcome(operator.getitem, x, index), outcome(operator.getitem, reference, index)
        assert same_outcome(mine, expected), (shape, index, mine, expected)
        if expected[0] == "shape":
            assert x[index].tolist() == reference[index].tolist()


@pytest.mark.parametrize("seed", range(10))
def test_random_reshape_matches_torch(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(20):
        shape = rand_shape(rng, 0, 3)
        target = random_reshape(rng, shape)
        if rng.random() < 0.3:  # sometimes a wrong target
            target = (*target, rng.randint(2, 3))
        data = np.arange(int(np.prod(shape, dtype=int)), dtype=float).reshape(shape)
        x = tensor(data.tolist(), name="x")
        reference = real_torch.tensor(data, dtype=real_torch.float64)
        mine, expected = outcome(x.reshape, target), outcome(reference.reshape, target)
        assert same_outcome(mine, expected), (shape, target, mine, expected)
        if expected[0] == "shape":
            assert x.reshape(target).tolist() == reference.reshape(target).tolist()
            assert x.view(*target).tolist() == reference.view(*target).tolist()


# ── 5. user functions with constants evaluate in torch ──────────────────────
@pytest.mark.parametrize(
    "body",
    [
        lambda t: t**3 + sympy.sin(t),
        lambda t: sympy.sqrt(2) * t,
        lambda t: sympy.exp(2) * t - sympy.pi,
        lambda t: sympy.atan(t) * sympy.log(3),
        lambda t: sympy.Max(t, sympy.Rational(1, 10)),
        lambda t: sympy.Min(t, -sympy.Rational(1, 3)) + sympy.Abs(t),
        lambda t: sympy.sqrt(t**2 + 1) / (1 + t**2),
        lambda t: 2**t + sympy.cbrt(t**2 + 1),
        lambda t: sympy.Integer(3),
    ],
    ids=["cube_sin", "sqrt2", "exp2_pi", "log3", "max_tenth", "min_abs", "sqrt_ratio", "rpow_cbrt", "constant"],
)
def test_user_function_with_constants(body: Callable) -> None:
    fn = function("g", body)
    x = symbols("x", (2, 3), requires_grad=True)
    assert check(fn(x).sum(), seed=1).ok
    xv = tensor([[0.0, 0.05, -0.5], [1.0, -1.0, 0.3]], requires_grad=True, name="xv")
    assert check(fn(xv).sum()).ok


# ── 6. 0-d tensors ──────────────────────────────────────────────────────────
@pytest.mark.parametrize(
    "build",
    [
        lambda w, a: a.sum(0),
        lambda w, a: a.sum(-1, keepdim=True),
        lambda w, a: a.mean(0),
        lambda w, a: w.torch.mean(a, (0,), True),
        lambda w, a: a.transpose(0, -1),
        lambda w, a: a.t() * a.permute(()),
        lambda w, a: a.unsqueeze(0).unsqueeze(-1),
        lambda w, a: a.flatten(),
        lambda w, a: a.reshape(1, 1, -1),
        lambda w, a: a[None, ..., None],
        lambda w, a: a[...] * 2,
    ],
)
def test_zero_dim_tensors_match_torch(build: Callable) -> None:
    x = tensor(1.25, requires_grad=True, name="x")
    reference = real_torch.tensor(1.25, dtype=real_torch.float64, requires_grad=True)
    out, expected = build(SG, x), build(PT, reference)
    assert tuple(out.shape) == tuple(expected.shape)
    assert_close(out.tolist(), expected.tolist())
    out.sum().backward()
    expected.sum().backward()
    assert_close(x.grad.tolist(), reference.grad.tolist())
    assert check(build(SG, symbols("s", (), requires_grad=True)).sum()).ok


# ── 7. known differences outside the op table (tensor.py, display.py/verify.py) ──
# Recorded as non-strict xfails so that they show up in the report until they are fixed.
@pytest.mark.xfail(reason="tensor.py: view() is reshape(); torch refuses to view a non-contiguous tensor", strict=False)
def test_view_of_transposed_tensor_is_refused_as_in_torch() -> None:
    theirs = raised(lambda: real_torch.zeros(2, 3).t().view(-1))
    ours = raised(lambda: symbols("y", (2, 3), requires_grad=True).t().view(-1))
    assert isinstance(ours, RuntimeError)
    assert str(theirs) in str(ours)


@pytest.mark.xfail(reason="tensor.py: permute checks each dim's range before the number of dims", strict=False)
def test_permute_with_too_many_dims_words_it_as_torch() -> None:
    theirs = raised(lambda: real_torch.zeros(2, 3).permute(0, 1, 2))
    ours = raised(lambda: symbols("y", (2, 3), requires_grad=True).permute(0, 1, 2))
    assert isinstance(ours, type(theirs))
    assert str(theirs) in str(ours)


def test_sqrt_gradient_at_zero_is_inf_as_in_torch() -> None:
    x = tensor([0.0, 1.0], requires_grad=True, name="x")
    x.sqrt().sum().backward()
    assert x.grad.tolist() == [float("inf"), 0.5]


@pytest.mark.xfail(
    reason="torch/linalg.py: norm(A, 'fro') of a 3-D A without dim is accepted; torch refuses", strict=False
)
def test_linalg_norm_fro_of_3d_without_dim_is_refused_as_in_torch() -> None:
    theirs = raised(lambda: real_torch.linalg.norm(real_torch.zeros(2, 2, 2), "fro"))
    ours = raised(lambda: sym_torch.linalg.norm(symbols("y", (2, 2, 2), requires_grad=True), "fro"))
    assert isinstance(ours, type(theirs))
    assert str(theirs) in str(ours)
