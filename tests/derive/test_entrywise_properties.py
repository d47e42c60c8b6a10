"""Properties of random expression graphs, drawn with hypothesis.

A graph starts from 1-3 symbolic leaves of random shapes (up to 3 dims, sizes 1..4) and
applies 2-6 random ops that respect shapes: broadcasting binary ops between
subexpressions (and with Python scalars), reductions with ``dim``/``keepdim`` (sum, mean,
amax, logsumexp, norm), softmax/log_softmax/cumsum/flip along a dim,
transposes and permutes, indexing and reshapes, ``matmul`` when shapes allow (with a
fresh leaf of a fitting shape otherwise) and elementwise functions. Domains are kept
safe: ``log``/``sqrt``/bases of ``**`` see ``x*x + 1``; ``exp`` and ``2 ** x`` see ``tanh(x)``.

Properties:

* :func:`symgrad.verify.check` passes (1e-10) for the implicit grad of ``y.sum()`` and
  for a random numeric grad_tensor;
* ``y.backward(v)`` gives the same formulas as ``(v * y).sum().backward()`` (the seed's
  equivalence), with a symbolic ``v``; and both equal :func:`symgrad.derive.vjp`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import sympy
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgrad.torch as sym_torch
from symgrad.core import Tensor, symbols, symbols_like, tensor
from symgrad.core.dims import broadcast_shapes, matmul_shape
from symgrad.core.errors import ShapeError
from symgrad.derive import vjp
from symgrad.ops import function
from symgrad.verify import check

# On a failure, hypothesis' report imports libcst, which warns about mypy_extensions; with warnings as
# errors that would turn the report of a genuine failure into a pytest INTERNALERROR.
pytestmark = pytest.mark.filterwarnings("ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

PROPERTY_SETTINGS = settings(
    max_examples=examples(150),
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_LEAVES = 4
MAX_NUMEL = 64

cube_sin = function("f", lambda t: t**3 + sympy.sin(t))
F = sym_torch.nn.functional


class Graph:
    """The nodes drawn so far (leaves first) and a log of what was applied, for failure reports."""

    def __init__(self) -> None:
        self.leaves: list[Tensor] = []
        self.nodes: list[Tensor] = []
        self.log: list[str] = []

    def leaf(self, shape: tuple[int, ...]) -> Tensor:
        x = symbols(f"x{len(self.leaves)}", shape, requires_grad=True)
        self.leaves.append(x)
        self.nodes.append(x)
        self.log.append(f"x{len(self.leaves) - 1} = symbols{shape}")
        return x

    def add(self, node: Tensor, text: str) -> None:
        self.nodes.append(node)
        self.log.append(f"{text} -> {tuple(node.shape)}")

    def __repr__(self) -> str:
        return "Graph(" + "; ".join(self.log) + ")"


def shapes(min_ndim: int = 0, max_ndim: int = 3) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(1, 4), min_size=min_ndim, max_size=max_ndim).map(tuple)


def safe_positive(x: Tensor) -> Tensor:
    return x * x + 1


UNARY: dict[str, Callable[[Tensor], Tensor]] = {  # hypothesis favours the first entries: vary them
    "user f": cube_sin,
    "relu": lambda x: F.relu(x),
    "log(x*x+1)": lambda x: safe_positive(x).log(),
    "sigmoid": lambda x: x.sigmoid(),
    "abs": lambda x: x.abs(),
    "sqrt(x*x+1)": lambda x: sym_torch.sqrt(safe_positive(x)),
    "exp(tanh)": lambda x: x.tanh().exp(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: sym_torch.cos(x),
    "tanh": lambda x: F.tanh(x),
    "neg": lambda x: -x,
    "square": lambda x: x**2,
    "2**tanh": lambda x: 2 ** x.tanh(),
    "scalar affine": lambda x: 2.5 - x / 3,
    "erf": lambda x: x.erf(),
    "clamp": lambda x: x.clamp(-0.5, 0.75),
    "softplus": lambda x: F.softplus(x),
}

BINARY: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/ (b*b+1)": lambda a, b: a / safe_positive(b),
    "(a*a+1) ** tanh(b)": lambda a, b: safe_positive(a) ** b.tanh(),
    "torch.add alpha": lambda a, b: sym_torch.add(a, b, alpha=0.5),
    "maximum": lambda a, b: sym_torch.maximum(a, b),
    "where(a > b)": lambda a, b: sym_torch.where(a > b, a * b, b),
}


@st.composite
def dims_of(draw: st.DrawFn, ndim: int) -> int | tuple[int, ...] | None:
    """A reduction's dim: None, an int or a tuple, each dim maybe spelled negative."""
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1]))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None
    picked = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    spelled = [d - ndim if draw(st.booleans()) else d for d in picked]
    return spelled[0] if kind == "int" else tuple(spelled)


@st.composite
def index_for(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple:
    """A non-empty basic index: ints, non-empty slices, None and ``...``."""
    items: list = []
    for size in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            start = draw(st.integers(0, size - 1))
            stop = draw(st.integers(start + 1, size))
            items.append(slice(start, stop, draw(st.sampled_from([None, 1, 2]))))
        else:
            items.append(slice(None))
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
    if items and draw(st.booleans()):
        at = draw(st.integers(0, len(items) - 1))
        if items[at] == slice(None):
            items[at] = Ellipsis
    return tuple(items)


def fits(shape: tuple[int, ...]) -> bool:
    return int(np.prod(shape, dtype=int)) <= MAX_NUMEL


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, Tensor]:
    graph = Graph()
    for _ in range(draw(st.integers(1, 3))):
        graph.leaf(draw(shapes()))
    for _ in range(draw(st.integers(2, 6))):
        a = draw(st.sampled_from(graph.nodes[-2:] if draw(st.booleans()) else graph.nodes))
        kind = draw(
            st.sampled_from(["unary", "binary", "scalar", "reduce", "layout", "index", "reshape", "matmul", "along"])
        )
        if kind == "unary":
            name = draw(st.sampled_from(list(UNARY)))
            graph.add(UNARY[name](a), f"{name}({tuple(a.shape)})")
        elif kind == "binary":
            partners = [b for b in graph.nodes if _broadcasts(a.shape, b.shape)]
            b = draw(st.sampled_from(partners))  # a itself always broadcasts with a
            name = draw(st.sampled_from(list(BINARY)))
            a, b = (a, b) if draw(st.booleans()) else (b, a)
            graph.add(BINARY[name](a, b), f"{tuple(a.shape)} {name} {tuple(b.shape)}")
        elif kind == "scalar":
            c = draw(st.sampled_from([2, -1.5, 0.5, 3]))
            op = draw(st.sampled_from(["+", "-", "*", "r-", "r*", "r/"]))
            out = {"+": a + c, "-": a - c, "*": a * c, "r-": c - a, "r*": c * a, "r/": c / safe_positive(a)}[op]
            graph.add(out, f"scalar {op} {c} with {tuple(a.shape)}")
        elif kind == "reduce":
            dim, keepdim = draw(dims_of(a.ndim)), draw(st.booleans())
            method = draw(st.sampled_from(["sum", "mean", "amax", "logsumexp", "norm"]))
            axes = dim if dim is not None else tuple(range(a.ndim))  # amax and logsumexp need a dim
            graph.add(getattr(a, method)(dim=axes, keepdim=keepdim), f"{method}(dim={axes}, keepdim={keepdim})")
        elif kind == "along":  # ops along one dim that keep the shape
            dim = draw(st.integers(-max(a.ndim, 1), max(a.ndim, 1) - 1)) if a.ndim else None
            method = draw(st.sampled_from(["softmax", "log_softmax", "cumsum", "flip"]))
            if dim is not None:
                graph.add(getattr(a, method)(dim), f"{method}({dim})")
        elif kind == "layout":
            if a.ndim >= 2 and draw(st.booleans()):
                d0, d1 = draw(st.integers(-a.ndim, a.ndim - 1)), draw(st.integers(-a.ndim, a.ndim - 1))
                graph.add(a.transpose(d0, d1), f"transpose({d0}, {d1})")
            elif draw(st.booleans()):
                order = draw(st.permutations(range(a.ndim)))
                graph.add(a.permute(*order) if order else a.permute(()), f"permute{tuple(order)}")
            else:
                graph.add(a.T, "T")
        elif kind == "index":
            if a.ndim and draw(st.booleans()):
                row = draw(st.integers(0, a.shape[0] - 1))
                graph.add(list(a)[row], f"list(...)[{row}]")
            else:
                index = draw(index_for(a.shape))
                graph.add(a[index], f"[{index}]")
        elif kind == "reshape":
            choice = draw(st.sampled_from(["flatten", "unsqueeze", "reshape"]))
            if choice == "flatten":
                graph.add(a.flatten(), "flatten()")
            elif choice == "unsqueeze":
                dim = draw(st.integers(-a.ndim - 1, a.ndim))
                graph.add(a.unsqueeze(dim), f"unsqueeze({dim})")
            else:
                total = a.numel()
                first = draw(st.sampled_from([d for d in range(1, total + 1) if total % d == 0]))
                target = (first, -1) if draw(st.booleans()) else (-1, first)
                graph.add(a.reshape(target), f"reshape{target}")
        else:  # matmul with an existing node when shapes allow, else with a fresh leaf that fits
            if a.ndim == 0:
                a = a.unsqueeze(0)
            partners = [b for b in graph.nodes if _multiplies(a.shape, b.shape)]
            if not partners or (len(graph.leaves) < MAX_LEAVES and draw(st.booleans())):
                k = a.shape[-1]
                shape = draw(st.sampled_from([(k,), (k, draw(st.integers(1, 3))), (draw(st.integers(1, 2)), k, 2)]))
                if len(graph.leaves) >= MAX_LEAVES or not _multiplies(a.shape, shape):
                    continue
                partners = [graph.leaf(shape)]
            b = draw(st.sampled_from(partners))
            graph.add(a @ b, f"{tuple(a.shape)} @ {tuple(b.shape)}")
        if not fits(graph.nodes[-1].shape):
            graph.nodes.pop()
            graph.log.append("(dropped: too large)")
    return graph, graph.nodes[-1]


def _broadcasts(a: tuple, b: tuple) -> bool:
    try:
        return fits(broadcast_shapes(a, b))
    except ShapeError:
        return False


def _multiplies(a: tuple, b: tuple) -> bool:
    try:
        return bool(b) and fits(matmul_shape(a, b))
    except ShapeError:
        return False


@PROPERTY_SETTINGS
@given(graphs(), st.integers(0, 2**16))
def test_check_passes_for_random_graphs(drawn: tuple[Graph, Tensor], seed: int) -> None:
    graph, y = drawn
    implicit = check(y.sum(), seed=seed)
    assert implicit.ok, graph
    v = np.random.default_rng(seed).uniform(-1.0, 1.0, size=tuple(y.shape))
    explicit = check(y, grad_tensors=tensor(v), seed=seed)
    assert explicit.ok, graph
    used = {leaf.name for leaf in graph.leaves if leaf.name in y.leaves()}
    assert {c.label for c in explicit.comparisons} >= {f"grad {name}" for name in used}


def _equal_formulas(ours: np.ndarray, theirs: np.ndarray) -> bool:
    return all(a == b or sympy.expand(a - b) == 0 for a, b in zip(ours.reshape(-1), theirs.reshape(-1), strict=True))


@PROPERTY_SETTINGS
@given(graphs())
def test_backward_with_grad_tensor_is_backward_of_weighted_sum(drawn: tuple[Graph, Tensor]) -> None:
    graph, y = drawn
    v = symbols_like(y, "v")
    y.backward(v, retain_graph=True)
    seeded = {leaf.name: leaf.grad for leaf in graph.leaves}
    for leaf in graph.leaves:
        leaf.grad = None
    (v * y).sum().backward()
    for leaf in graph.leaves:
        first, second = seeded[leaf.name], leaf.grad
        if leaf.name not in y.leaves():
            assert first is None and second is None, graph
            continue
        assert first is not None and second is not None, graph
        assert _equal_formulas(first.entries(), second.entries()), graph
        assert _equal_formulas(first.entries(), vjp(y, leaf, v).entries()), graph
