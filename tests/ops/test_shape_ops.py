"""Shape, joining and splitting, indexing and scattering, against real torch (float64).

Each case is written once as a function of a *world* (``SG``: symgrad.torch, ``PT``: real torch) and
checked three ways: the forward values (nan and inf included), the VJP of a random grad_tensor
(symgrad's numbers against ``torch.autograd.grad``), and :func:`symgrad.verify.check` (the op rows'
torch spellings, and the entrywise formulas at nearby random points). Repeated indices (their
gradients accumulate), empty tensors and torch's layout of mixed advanced indexing are among the
cases. Then: every new row's law, proved at symbolic sizes; emitted code run against
torch.autograd; torch's errors; and the clean refusals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import symgrad as sg
import symgrad.torch as sym_torch
from symgrad.emit import check_module
from symgrad.verify import check

SG = SimpleNamespace(name="symgrad", torch=sym_torch, F=sym_torch.nn.functional)
PT = SimpleNamespace(name="torch", torch=torch, F=torch.nn.functional)
NAN, INF = math.nan, math.inf


def make(w: SimpleNamespace, kind: str, values: Any, name: str) -> Any:
    """A leaf (float64, requires grad), an int64 index or a bool mask, in the world ``w``."""
    values = np.asarray(values, dtype=float if kind == "leaf" else np.int64)  # arrays keep empty shapes
    if w is PT:
        dtype = {"leaf": torch.float64, "ints": torch.int64, "mask": torch.bool}[kind]
        return torch.tensor(values, dtype=dtype, requires_grad=kind == "leaf")
    if kind == "leaf":
        return sym_torch.tensor(values, dtype="float64", requires_grad=True, name=name)
    return sym_torch.tensor(values, dtype="int64" if kind == "ints" else "bool")


def numbers(t: sg.Tensor, shape: Any) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=float).reshape(tuple(shape))  # .tolist() of an empty tensor loses its shape


def ints(w: SimpleNamespace, values: Any) -> Any:
    return make(w, "ints", values, "i")


def mask(w: SimpleNamespace, values: Any) -> Any:
    return make(w, "mask", values, "m")


def flat(out: Any) -> list:
    return [t for part in out for t in flat(part)] if isinstance(out, (tuple, list)) else [out]


X = ("leaf", [[1.0, -2.0, 0.0], [3.0, NAN, -INF]])  # 2×3 with a nan and an infinity
Y = ("leaf", np.arange(24.0).reshape(2, 3, 4).tolist())
V = ("leaf", [1.0, -2.0, 3.0])
E = ("leaf", np.zeros((0, 3)))  # empty

# (id, inputs, build): build(w, *inputs) gives a tensor or a tuple of tensors
CASES: list[tuple[str, list, Callable]] = [
    ("cat", [X, ("leaf", [[5.0], [6.0]])], lambda w, x, b: w.torch.cat([x, b, x], 1)),
    ("concat_empty", [E, X], lambda w, e, x: w.torch.concat([e, x], 0)),
    ("concatenate_1d_empty", [("leaf", []), X], lambda w, e, x: w.torch.concatenate([e, x, e], -1)),
    ("stack", [V], lambda w, v: w.torch.stack([v, 2 * v, v], -1)),
    ("split", [Y], lambda w, y: w.torch.split(y, 3, 2)),
    ("split_sizes", [Y], lambda w, y: w.torch.split(y, [1, 0, 2], 1)),
    ("chunk", [Y], lambda w, y: w.torch.chunk(y, 3, -1)),
    ("unbind", [X], lambda w, x: w.torch.unbind(x, 1)),
    ("narrow", [Y], lambda w, y: w.torch.narrow(y, 2, -3, 2)),
    ("select", [Y], lambda w, y: w.torch.select(y, 1, -1)),
    ("squeeze", [X], lambda w, x: w.torch.squeeze(x[None, :, None], (0, 2))),
    ("flatten", [Y], lambda w, y: w.torch.flatten(y, 1)),
    ("unflatten", [Y], lambda w, y: w.torch.unflatten(y, -1, (2, -1))),
    ("repeat", [X], lambda w, x: x.repeat(2, 1, 2)),
    ("index_select_repeated", [X], lambda w, x: w.torch.index_select(x, 1, ints(w, [2, 0, 2]))),
    ("gather", [X], lambda w, x: w.torch.gather(x, 1, ints(w, [[0, 0], [2, 1]]))),
    ("gather_empty", [X], lambda w, x: w.torch.gather(x, 0, ints(w, np.zeros((0, 3))))),
    ("scatter", [X, ("leaf", [[7.0], [8.0]])], lambda w, x, s: w.torch.scatter(x, 1, ints(w, [[2], [0]]), s)),
    ("scatter_value", [X], lambda w, x: w.torch.scatter(x, 0, ints(w, [[1, 0, 1]]), 2.5)),
    (
        "scatter_add_repeated",
        [X, ("leaf", [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])],
        lambda w, x, s: w.torch.scatter_add(x, 0, ints(w, [[1, 0, 1], [1, 1, 0]]), s),
    ),
    (
        "index_put_mask",
        [X, ("leaf", 4.0)],
        lambda w, x, value: w.torch.index_put(x, (mask(w, [[True, False, True], [False, True, False]]),), value),
    ),
    (
        "index_put_accumulate_repeated",
        [X, V],
        lambda w, x, v: w.torch.index_put(x, (ints(w, [1, 1, 0]), ints(w, [0, 0, 2])), v * v, accumulate=True),
    ),
    ("take_along_dim", [X], lambda w, x: w.torch.take_along_dim(x, ints(w, [[0, -1]]), 1)),
    ("take_along_dim_flat", [X], lambda w, x: w.torch.take_along_dim(x, ints(w, [5, 0, 5]))),
    (
        "masked_fill",
        [X, ("leaf", 4.0)],
        lambda w, x, value: w.torch.masked_fill(x, mask(w, [[True, False, False], [False, True, False]]), value),
    ),
    ("masked_fill_broadcast", [V], lambda w, v: w.torch.masked_fill(v, mask(w, [[1, 0, 1], [0, 0, 1]]), -1.0)),
    ("tril", [X], lambda w, x: w.torch.tril(x, -1) + w.torch.tril(x)),
    ("triu", [Y], lambda w, y: w.torch.triu(y, 1)),
    ("diagonal", [Y], lambda w, y: w.torch.diagonal(y, 1, 0, 2)),
    ("diag_vector", [V], lambda w, v: w.torch.diag(v, -1)),
    ("diag_matrix", [X], lambda w, x: w.torch.diag(x, 1)),
    ("getitem_list", [X], lambda w, x: x[[1, 1, 0]]),
    ("getitem_columns", [Y], lambda w, y: y[:, [2, 2, 0], 1:3]),
    ("getitem_apart", [Y], lambda w, y: y[[0, 1], :, [3, -1]]),
    ("getitem_int_then_list", [Y], lambda w, y: y[0, :, [1, 0]]),  # torch: (3, 2); NumPy would give (2, 3)
    ("getitem_pairs", [Y], lambda w, y: y[[[0], [1]], [2, 0]]),
    ("getitem_mask", [X], lambda w, x: x[:, mask(w, [True, False, True])]),
    ("getitem_mask_2d", [X], lambda w, x: x[mask(w, [[True, False, True], [False, True, True]])]),
    ("getitem_tensor", [Y], lambda w, y: y[..., None, ints(w, [[3, 3], [0, 1]])]),
    ("getitem_bool", [X], lambda w, x: x[True] + x[1, False].sum()),
    ("pad_constant", [Y], lambda w, y: w.F.pad(y, (1, -2, 0, 1), value=NAN)),
    ("pad_reflect", [Y], lambda w, y: w.F.pad(y, (2, -1, -1, 1), mode="reflect")),
    ("pad_replicate", [Y], lambda w, y: w.F.pad(y, (-1, 3), mode="replicate")),
    ("pad_circular", [Y], lambda w, y: w.F.pad(y, (2, 1, 1, 0), mode="circular")),
    ("pad_empty_batch", [("leaf", np.zeros((0, 2, 3)))], lambda w, y: w.F.pad(y, (1, 2), mode="reflect")),
]  # fmt: skip


@pytest.mark.parametrize(("label", "inputs", "build"), CASES, ids=[c[0] for c in CASES])
def test_matches_torch(label: str, inputs: list, build: Callable) -> None:
    names = [f"a{k}" for k in range(len(inputs))]
    pt_in = [make(PT, kind, values, name) for (kind, values), name in zip(inputs, names)]
    sg_in = [make(SG, kind, values, name) for (kind, values), name in zip(inputs, names)]
    theirs, ours = flat(build(PT, *pt_in)), flat(build(SG, *sg_in))
    assert len(ours) == len(theirs)
    for t, s in zip(theirs, ours):
        assert tuple(s.shape) == tuple(t.shape) and s.dtype == "float64"
        np.testing.assert_allclose(numbers(s, t.shape), t.detach().numpy(), rtol=1e-12, atol=0)
    generator = torch.Generator().manual_seed(len(label))
    vs = [torch.randn(t.shape, generator=generator, dtype=torch.float64) for t in theirs]
    want = torch.autograd.grad(theirs, pt_in, vs, allow_unused=True)
    sg_vs = [sym_torch.tensor(v.tolist() if v.numel() else np.zeros(tuple(v.shape)), dtype="float64") for v in vs]
    got = sg.vjp(ours, sg_in, sg_vs)
    for leaf, t_grad, s_grad in zip(pt_in, want, got):
        t_grad = torch.zeros_like(leaf) if t_grad is None else t_grad
        np.testing.assert_allclose(numbers(s_grad, t_grad.shape), t_grad.numpy(), rtol=1e-12, atol=1e-15)
    # the op rows' torch spellings and the entrywise formulas (check needs finite inputs)
    finite = [(kind, np.nan_to_num(np.asarray(values, dtype=float), posinf=9, neginf=-9)) for kind, values in inputs]
    again = flat(build(SG, *[make(SG, kind, values, name) for (kind, values), name in zip(finite, names)]))
    assert check(again, grad_tensors=sg_vs).ok


def _random_item(rng: random.Random, size: int) -> Any:
    """One item of an index: an int, a slice, a list (or a list of lists), a mask, an index tensor or a bool."""
    kind = rng.choice(["int", "slice", "slice", "list", "lists", "mask", "tensor", "bool"])
    if kind == "int":
        return rng.randint(-size, size - 1)
    if kind == "slice":
        bound = lambda: rng.choice([None, rng.randint(-size, size)])  # noqa: E731
        return slice(bound(), bound(), rng.choice([None, 1, 2]))
    if kind in ("list", "lists"):
        values = [rng.randint(-size, size - 1) for _ in range(rng.randint(0 if kind == "list" else 1, 3))]
        return values if kind == "list" else [[v] for v in values]
    if kind == "bool":
        return rng.random() < 0.5
    return (kind, [rng.random() < 0.5 for _ in range(size)] if kind == "mask" else [rng.randrange(size)] * 2)


@pytest.mark.parametrize("seed", range(4))
def test_random_advanced_indices_match_torch(seed: int) -> None:
    """ints, slices, None, ``...``, lists, masks, index tensors and bools, mixed: torch's shapes (its layout,
    not NumPy's), values, errors and gradients (repeated picks accumulate)."""
    rng = random.Random(seed)
    for trial in range(25):
        shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 3)))
        items = [_random_item(rng, size) for size in shape if rng.random() < 0.85]
        if items and rng.random() < 0.3:
            items.insert(rng.randint(0, len(items)), rng.choice([None, Ellipsis]))

        def spelled(w: SimpleNamespace, item: Any) -> Any:
            if isinstance(item, tuple):
                return mask(w, item[1]) if item[0] == "mask" else ints(w, item[1])
            return item

        data = np.random.default_rng(trial).standard_normal(shape)
        x_pt, x_sg = make(PT, "leaf", data, "x"), make(SG, "leaf", data, "x")
        index_pt, index_sg = (tuple(spelled(w, item) for item in items) for w in (PT, SG))
        try:
            theirs = x_pt[index_pt]
        except IndexError as error:
            with pytest.raises(IndexError) as ours:
                x_sg[index_sg]
            assert str(error) in str(ours.value), items
            continue
        ours = x_sg[index_sg]
        assert tuple(ours.shape) == tuple(theirs.shape), items
        np.testing.assert_array_equal(numbers(ours, theirs.shape), theirs.detach().numpy())
        v = torch.randn(theirs.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(trial))
        (want,) = torch.autograd.grad(theirs, x_pt, v)
        got = sg.vjp(ours, x_sg, sym_torch.tensor(v.numpy(), dtype="float64"))
        np.testing.assert_allclose(numbers(got, want.shape), want.numpy(), rtol=1e-12, atol=0)


# ── laws at symbolic sizes: one per new row (gather's also proves scatter_add, its VJP) ──
k, n, m, d = sg.dims("k n m d")
A, B = sg.symbols("A", (n, d), requires_grad=True), sg.symbols("B", (m, d), requires_grad=True)
S = sg.symbols("S", (n, n), requires_grad=True)
W = sg.symbols("W", (n, d), requires_grad=True)
Z = sg.symbols("Z", (2, n, m), requires_grad=True)
rows = sg.symbols("i", (k,), dtype="int64", classes=n)  # class-like indices: proofs draw them in [0, n)
LAWS: list[tuple[str, Callable, list]] = [
    ("cat", lambda: sym_torch.cat([A, B.tanh()]), [A, B]),
    ("narrow", lambda: W.narrow(0, 1, n - 1), [W]),
    ("pad", lambda: sym_torch.nn.functional.pad(Z, (1, -1, 2, 0), value=3.0), [Z]),
    ("pad_reflect", lambda: sym_torch.nn.functional.pad(Z, (1, 1), mode="reflect"), [Z]),
    ("slices", lambda: Z[:, 1:, :-1] * Z[:, :-1, 1:], [Z]),
    ("tril_triu", lambda: S.tril(-1) + S.triu(1) * 2, [S]),
    ("diagonal", lambda: S.diagonal(1).exp(), [S]),
    ("diag", lambda: sym_torch.diag(S.diagonal()) * S, [S]),
    ("gather", lambda: W[rows] * 2, [W]),
    ("scatter_add", lambda: W.scatter_add(0, rows[:, None].expand(k, d), A[:1].expand(k, d).sin()), [W, A]),
    ("scatter", lambda: A[:, :2].scatter(0, sym_torch.tensor([[1, 0]]), B[:1, :2].exp()), [A, B]),
]


@pytest.mark.parametrize(("label", "build", "wrt"), LAWS, ids=[c[0] for c in LAWS])
def test_laws_hold_at_every_size(label: str, build: Callable, wrt: list) -> None:
    out = build()
    grad = sg.symbols("G", out.shape)
    sizes = [{n: 3, m: 4, d: 2, k: 5}, {n: 4, m: 3, d: 3, k: 2}]  # reflect padding needs m > 1
    proof = sg.prove(out, wrt, [grad], sizes=sizes, torch_sizes={n: 5, m: 6, d: 4, k: 7})
    assert proof.held, proof


def test_laws_read_as_torch_code() -> None:
    assert [g.name for g in sg.law(sym_torch.cat([A, B]), [A, B], [sg.symbols("G", (n + m, d))])] == [
        "G.narrow(0, 0, n)",
        "G.narrow(0, n, m)",
    ]
    assert sg.law(W[rows], [W], [sg.symbols("G", (k, d))])[0].name == (
        "G.new_full((n, d), 0).scatter_add(0, i[:, None].expand(k, d), G)"
    )
    assert sg.law(S.diagonal(), [S], [sg.symbols("G", (n,))])[0].name == "torch.diag(G)"


def test_emitted_code_matches_torch() -> None:
    idx = sg.symbols("idx", (k,), dtype="int64", classes=n)
    out = sym_torch.cat([W[idx], A.narrow(0, 0, k).tril()], 1).tanh()
    module = sg.compile(out, [W, A], inputs=[W, A, idx], name="Picks", style="autograd_function")
    assert check_module(module, out, [W, A], [W, A, idx], sizes={n: 5, d: 3, k: 4}).ok
    padded = sym_torch.nn.functional.pad(Z, (2, 1), mode="circular").exp()
    module = sg.compile(padded, [Z], inputs=[Z], name="Circular", style="autograd_function")
    assert check_module(module, padded, [Z], [Z], sizes={n: 3, m: 4}).ok


# ── torch's errors, and clean refusals ──────────────────────────────────────
def _x(w: SimpleNamespace) -> Any:
    return make(w, "leaf", np.arange(12.0).reshape(3, 4).tolist(), "x")


ERRORS: list[tuple[str, Callable]] = [
    ("cat_sizes", lambda w: w.torch.cat([_x(w), _x(w)[:, :2]], 0)),
    ("cat_ndim", lambda w: w.torch.cat([_x(w), _x(w)[0]])),
    ("cat_0d", lambda w: w.torch.cat([_x(w)[0, 0]])),
    ("cat_none", lambda w: w.torch.cat([])),
    ("cat_dim", lambda w: w.torch.cat([_x(w)], 2)),
    ("stack_sizes", lambda w: w.torch.stack([_x(w), _x(w).T])),
    ("split_sum", lambda w: w.torch.split(_x(w), [1, 1])),
    ("split_0d", lambda w: w.torch.split(_x(w)[0, 0], 1)),
    ("chunk_zero", lambda w: w.torch.chunk(_x(w), 0)),
    ("narrow_long", lambda w: w.torch.narrow(_x(w), 1, 3, 2)),
    ("narrow_start", lambda w: w.torch.narrow(_x(w), 0, -4, 1)),
    ("select_range", lambda w: w.torch.select(_x(w), 1, 4)),
    ("unflatten_sizes", lambda w: w.torch.unflatten(_x(w), 1, (3, 2))),
    ("flatten_order", lambda w: w.torch.flatten(_x(w), 1, 0)),
    ("repeat_dims", lambda w: _x(w).repeat(2)),
    ("gather_ndim", lambda w: w.torch.gather(_x(w), 0, ints(w, [0]))),
    ("gather_size", lambda w: w.torch.gather(_x(w), 0, ints(w, [[0, 0, 0, 0, 0]]))),
    ("gather_range", lambda w: w.torch.gather(_x(w), 1, ints(w, [[4]]))),
    ("gather_dtype", lambda w: w.torch.gather(_x(w), 1, _x(w))),
    ("index_select_vector", lambda w: w.torch.index_select(_x(w), 0, ints(w, [[0]]))),
    ("index_select_range", lambda w: w.torch.index_select(_x(w), 0, ints(w, [3]))),
    ("scatter_range", lambda w: w.torch.scatter(_x(w), 0, ints(w, [[3]]), 1.0)),
    ("scatter_add_size", lambda w: w.torch.scatter_add(_x(w), 0, ints(w, [[0, 0, 0]]), _x(w)[:1, :2])),
    ("take_along_dim_ndim", lambda w: w.torch.take_along_dim(_x(w), ints(w, [0]), 1)),
    ("masked_fill_mask", lambda w: w.torch.masked_fill(_x(w), ints(w, [1, 0, 1, 0]), 0.0)),
    ("getitem_range", lambda w: _x(w)[:, [4]]),
    ("getitem_mask_shape", lambda w: _x(w)[mask(w, [True, False])]),
    ("getitem_broadcast", lambda w: _x(w)[[0, 1], [0, 1, 2]]),
    ("getitem_float", lambda w: _x(w)[_x(w)[0]]),
    ("getitem_too_many", lambda w: _x(w)[0, [0], 1]),
    ("tril_1d", lambda w: w.torch.tril(_x(w)[0])),
    ("diag_3d", lambda w: w.torch.diag(_x(w)[None])),
    ("diagonal_same", lambda w: w.torch.diagonal(_x(w), 0, 1, -1)),
    ("pad_odd", lambda w: w.F.pad(_x(w), (1,))),
    ("pad_long", lambda w: w.F.pad(_x(w), (1, 1, 1, 1, 1, 1))),
    ("pad_crop", lambda w: w.F.pad(_x(w), (-3, -2))),
    ("pad_reflect_size", lambda w: w.F.pad(_x(w)[None], (4, 0), mode="reflect")),
    ("pad_reflect_dims", lambda w: w.F.pad(_x(w)[0], (1, 1), mode="reflect")),
    ("pad_mode", lambda w: w.F.pad(_x(w), (1, 1), mode="wrap")),
    ("pad_value", lambda w: w.F.pad(_x(w), (1, 1), mode="replicate", value=1.0)),
    ("pad_circular_wrap", lambda w: w.F.pad(_x(w), (5, 0), mode="circular")),
]


def raised(action: Callable) -> BaseException:
    try:
        action()
    except Exception as error:  # the exception itself is compared
        return error
    raise AssertionError("no exception")


@pytest.mark.parametrize(("label", "mistake"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(label: str, mistake: Callable) -> None:
    theirs, ours = raised(lambda: mistake(PT)), raised(lambda: mistake(SG))
    assert isinstance(ours, type(theirs)), (ours, theirs)
    assert str(theirs).split("\n")[0] in str(ours)


REFUSALS: list[tuple[str, Callable]] = [
    ("scatter_repeated", lambda: _x(SG).scatter(0, ints(SG, [[1], [1]]), 2.0)),
    ("scatter_multiply", lambda: _x(SG).scatter(0, ints(SG, [[1]]), 2.0, reduce="multiply")),
    ("mask_unknown", lambda: sg.symbols("u", (3,))[sg.symbols("u", (3,)) > 0]),
    ("symbolic_step", lambda: W[::2]),
    ("symbolic_several", lambda: W[rows, rows]),
    ("gather_unknown_index", lambda: sg.vjp(_x(SG).gather(0, sg.symbols("j", (1, 4), dtype="int64")).sum(), _x(SG))),
    ("diagonal_unknown_length", lambda: sg.symbols("R", (n, m)).diagonal()),
]


@pytest.mark.parametrize(("label", "refused"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_are_one_clean_line(label: str, refused: Callable) -> None:
    with pytest.raises(sg.UnsupportedError) as info:
        refused()
    assert str(info.value) and "\n" not in str(info.value)
