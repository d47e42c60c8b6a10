"""Second-order benchmark: symgrad's emitted Hessian and HVP beside torch's own ways of computing them.

Run from the repository root (no install needed):

    python benchmarks/bench_hessian.py            # full run, about 2 minutes on 2 cores
    python benchmarks/bench_hessian.py --quick    # n = 8 only, 3 short rounds: a ~15 s smoke test

Cases (each written once, as ``expr(T, F, *inputs)``, and run with ``T, F = torch, torch.nn.functional`` for
torch and with ``symgrad.torch`` and ``symgrad.torch.nn.functional`` for symgrad, so both sides compute the same
expression):

* ``quadratic``  -- ``x @ A @ x``, x: n, A: n×n, wrt x, at n = 8, 64, 128, 256;
* ``logistic``   -- ``F.binary_cross_entropy_with_logits(X @ w, y)``, X: n×d, wrt w, with d = n / 4
  (n = 256, d = 64 as the issue asks; n = 64, d = 16; n = 8, d = 2), y in [0, 1];
* ``mlp_W1``     -- ``((W2 @ tanh(W1 @ X.T)).reshape(-1) - y).pow(2).mean()``, X: n×d, W1: h×d, W2: 1×h, y: n,
  wrt W1; n is the batch, d = h = 16 (256 parameters, so H is 16×16×16×16);
* ``mlp_W1_W2``  -- the same loss wrt W1 and W2 (H is the nested 2×2 tuple torch returns).

Each case is emitted once with symbolic dims, ``sg.compile(f, wrt, inputs=..., style="hessian")`` and
``style="hvp"``; the emission (symbolic derivation + code generation) is timed on its own, cold
(``sympy.core.cache.clear_cache()`` and ``gc.collect()`` first, untimed), and printed in its own table, never mixed
into the per-call times. The first emission in the process (imports, first-call costs) is a warm-up printed on its
own line.

Contenders, all on the same float64 inputs:

* **Hessian** -- emitted ``mod.hessian(*inputs)``; ``torch.func.hessian(f, argnums)`` (jacfwd over jacrev);
  ``torch.func.jacrev(torch.func.jacrev(f, argnums), argnums)``; ``torch.autograd.functional.hessian`` with
  ``vectorize=True`` and with ``vectorize=False`` (one backward per parameter).
* **HVP** (one random tangent per wrt input) -- emitted ``mod.hvp(*inputs, *tangents)``; jvp-of-grad,
  ``torch.func.jvp(torch.func.grad(f, argnums), primals, tangents)``; ``torch.autograd.functional.hvp``; and
  plain double backward, ``torch.autograd.grad`` with ``create_graph=True`` then ``torch.autograd.grad`` of that
  with the tangents as grad_outputs.

Verification first (untimed): at every size, before anything is timed, every contender's result (and the emitted
``forward`` and ``gradient``) is compared with torch's (``torch.func.hessian`` / jvp-of-grad / ``torch.func.grad``):
``torch.allclose(ours, ref, rtol=1e-9, atol=1e-12 * max(1, max |ref|))`` in float64, shapes equal. A mismatch
stops the script (exit status 1): it never times a wrong answer.

Timing: ``torch.set_num_threads(1)`` and ``torch.utils.benchmark.Timer(num_threads=1).blocked_autorange``
(median of one block of calls of at least ``--min-run-time`` seconds), after one untimed warm-up call of each
contender. Each configuration runs ``--rounds``
interleaved rounds; a round measures every contender once, the order rotating from round to round, so all are
measured side by side under the same load. The µs columns are medians over rounds. The ratio is, per round,
symgrad's time over the fastest torch contender's time in that round; the table gives the median of those per-round
ratios with their quartiles (q1..q3, a noise gauge) and the speedup (1 / ratio). The fastest torch option named is
the one with the smallest median.

Targets (issue 30, :data:`TARGETS`): the emitted Hessian at least 10× faster than the fastest torch option for the
classics (logistic regression and the quadratic form, a weight as a vector and as a column) and 3× for the hidden
layer; the HVP by the same factors against torch's double backward; ``newton_step`` 10× against torch's Hessian
followed by ``torch.linalg.solve``. The script prints MET / MISSED with the factor. It makes no
assertions about time. The machine this runs on is usually shared (2 cores, other processes running): the load
average is printed at start and end.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np
import sympy
import torch
import torch.nn.functional as F  # noqa: N812 - torch's own spelling
from provenance import git_state  # benchmarks/ is on sys.path when run as a script
from sympy.core.cache import clear_cache
from torch.utils.benchmark import Timer

import symgrad as sg
import symgrad.torch as sgt
import symgrad.torch.nn.functional as sgf

TORCH_THREADS = 1
RTOL = 1e-9  # float64
ATOL_SCALE = 1e-12  # atol = ATOL_SCALE * max(1, max |reference|)
# the rows (issue 30): emitted Hessian >= these factors faster than the fastest torch option
TARGETS = (
    ("logistic", 2048, 10.0),  # for newton too: newton_step against torch's Hessian followed by torch.linalg.solve
    ("logistic_col", 2048, 10.0),
    ("logistic_col", 256, 10.0),
    ("quadratic", 2048, 10.0),
    ("quadratic_col", 2048, 10.0),
    ("quadratic_col", 128, 10.0),
    ("hidden", 256, 3.0),
)
LARGE = 1024  # from this n on, only torch.func.hessian and AF vectorize=True run (the loops take minutes)
MLP_WIDTH = 16  # d = h for the MLP cases
LOGISTIC_D = {8: 2, 64: 16, 256: 64, 2048: 256}  # n -> d: the (256, 64) and (2048, 256)


# ── the cases: one expression, written against a torch-like namespace ─────────────────────────────────────────────
@dataclass(frozen=True)
class Case:
    name: str
    text: str
    inputs: tuple[tuple[str, tuple], ...]  # (name, shape) with dims as names ("n", "d", "h") or ints
    wrt: tuple[str, ...]
    expr: Callable  # expr(T, F, *inputs)
    dims: Callable[[int], dict[str, int]]  # n -> concrete size of every dim
    ns: tuple[int, ...]
    scales: tuple[tuple[str, str], ...] = ()  # input name -> how to draw it ("unit": U[0, 1], "fan_in": N(0, 1/d))
    wrt_index: tuple[int, ...] = field(init=False)  # positions of the wrt inputs among the inputs

    def __post_init__(self) -> None:
        names = [name for name, _ in self.inputs]
        object.__setattr__(self, "wrt_index", tuple(names.index(w) for w in self.wrt))  # looked up on every call


def _quadratic(T, F, A, x):
    return x @ A @ x


def _quadratic_column(T, F, A, x):
    return (x.T @ A @ x).reshape(())


def _logistic(T, F, X, w, y):
    return F.binary_cross_entropy_with_logits(X @ w, y)


def _hidden(T, F, X, W1, w2, t):
    return ((T.tanh(X @ W1) @ w2 - t) ** 2).mean()


def _mlp(T, F, X, W1, W2, y):
    return ((W2 @ T.tanh(W1 @ X.T)).reshape(-1) - y).pow(2).mean()


_MLP_INPUTS = (("X", ("n", "d")), ("W1", ("h", "d")), ("W2", (1, "h")), ("y", ("n",)))
_MLP_TEXT = "((W2 @ tanh(W1 @ X.T)).reshape(-1) - y).pow(2).mean()"

CASES = (
    Case(
        "quadratic",
        "x @ A @ x",
        (("A", ("n", "n")), ("x", ("n",))),
        ("x",),
        _quadratic,
        lambda n: {"n": n},
        (8, 128, 2048),
    ),
    Case(
        "quadratic_col",
        "(x.T @ A @ x).reshape(()), x a column",
        (("A", ("n", "n")), ("x", ("n", 1))),
        ("x",),
        _quadratic_column,
        lambda n: {"n": n},
        (8, 128, 2048),
    ),
    Case(
        "logistic",
        "F.binary_cross_entropy_with_logits(X @ w, y)",
        (("X", ("n", "d")), ("w", ("d",)), ("y", ("n",))),
        ("w",),
        _logistic,
        lambda n: {"n": n, "d": LOGISTIC_D[n]},
        (8, 256, 2048),
        (("y", "unit"),),
    ),
    Case(
        "logistic_col",
        "F.binary_cross_entropy_with_logits(X @ w, y), w a column",
        (("X", ("n", "d")), ("w", ("d", 1)), ("y", ("n", 1))),
        ("w",),
        _logistic,
        lambda n: {"n": n, "d": LOGISTIC_D[n]},
        (8, 256, 2048),
        (("y", "unit"),),
    ),
    Case(
        "hidden",
        "((tanh(X @ W1) @ w2 - t) ** 2).mean(), W1: 16×8",
        (("X", ("n", 16)), ("W1", (16, 8)), ("w2", (8,)), ("t", ("n",))),
        ("W1",),
        _hidden,
        lambda n: {"n": n},
        (8, 256),
        (("W1", "fan_in"), ("w2", "fan_in")),
    ),
    Case(
        "mlp_W1",
        _MLP_TEXT,
        _MLP_INPUTS,
        ("W1",),
        _mlp,
        lambda n: {"n": n, "d": MLP_WIDTH, "h": MLP_WIDTH},
        (8, 64, 256),
        (("W1", "fan_in"), ("W2", "fan_in")),
    ),
    Case(
        "mlp_W1_W2",
        _MLP_TEXT,
        _MLP_INPUTS,
        ("W1", "W2"),
        _mlp,
        lambda n: {"n": n, "d": MLP_WIDTH, "h": MLP_WIDTH},
        (8, 64, 256),
        (("W1", "fan_in"), ("W2", "fan_in")),
    ),
)


def module_name(case: Case, style: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in case.name.split("_")) + style.capitalize()


def emit(case: Case, style: str) -> tuple[ModuleType, float]:
    """The case emitted with symbolic dims (one module for every size), and the seconds that took (cold)."""
    clear_cache()
    gc.collect()
    started = time.perf_counter()
    dims: dict[str, sympy.Symbol] = {}
    symbolic = []
    for name, shape in case.inputs:
        for s in shape:
            if isinstance(s, str) and s not in dims:
                dims[s] = sg.dims(s)[0]
        shape = tuple(dims[s] if isinstance(s, str) else s for s in shape)
        symbolic.append(sg.symbols(name, shape, requires_grad=name in case.wrt))
    f = case.expr(sgt, sgf, *symbolic)
    wrt = [symbolic[i] for i in case.wrt_index]
    module = sg.compile(f, wrt, inputs=symbolic, style=style, name=module_name(case, style))
    return module, time.perf_counter() - started


# ── numbers ───────────────────────────────────────────────────────────────
@dataclass
class Problem:
    """One case at one size: the float64 inputs, tangents, and torch's functions of them."""

    case: Case
    n: int
    values: list[torch.Tensor]
    tangents: list[torch.Tensor]

    @property
    def sizes(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.case.dims(self.n).items())

    @property
    def wrt_values(self) -> list[torch.Tensor]:
        return [self.values[i] for i in self.case.wrt_index]

    def f(self, *args: torch.Tensor) -> torch.Tensor:
        return self.case.expr(torch, F, *args)

    def f_wrt(self, *wrt: torch.Tensor) -> torch.Tensor:
        """The loss as a function of the wrt inputs only (the others fixed), as torch.autograd.functional wants."""
        args = list(self.values)
        for i, w in zip(self.case.wrt_index, wrt, strict=True):
            args[i] = w
        return self.f(*args)


def make_problem(case: Case, n: int, seed: int = 0) -> Problem:
    gen = torch.Generator().manual_seed(seed)
    sizes = case.dims(n)
    scales = dict(case.scales)
    values = []
    for name, shape in case.inputs:
        concrete = tuple(sizes[s] if isinstance(s, str) else s for s in shape)
        if scales.get(name) == "unit":
            values.append(torch.rand(concrete, generator=gen, dtype=torch.float64))
        elif scales.get(name) == "fan_in":
            values.append(torch.randn(concrete, generator=gen, dtype=torch.float64) / concrete[-1] ** 0.5)
        else:
            values.append(torch.randn(concrete, generator=gen, dtype=torch.float64))
    tangents = [torch.randn(values[i].shape, generator=gen, dtype=torch.float64) for i in case.wrt_index]
    return Problem(case, n, values, tangents)


def flat(result) -> list[torch.Tensor]:
    """The tensors of a result in order: a tensor, or (nested) tuples of them as torch's Hessians are."""
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for part in result for t in flat(part)]


def mismatch(ours, reference) -> str | None:
    """None when every tensor of ``ours`` equals ``reference``'s (float64 allclose, same shapes), else why not."""
    a, b = flat(ours), flat(reference)
    if len(a) != len(b):
        return f"{len(a)} tensors, expected {len(b)}"
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        if x.shape != y.shape:
            return f"tensor {k} has shape {tuple(x.shape)}, expected {tuple(y.shape)}"
        if x.dtype != torch.float64:
            return f"tensor {k} has dtype {x.dtype}, expected torch.float64"
        scale = max(1.0, float(y.abs().max())) if y.numel() else 1.0
        if not torch.allclose(x, y, rtol=RTOL, atol=ATOL_SCALE * scale):
            return f"tensor {k}: max |ours - torch| = {float((x - y).abs().max()):.3e} (scale {scale:.3g})"
    return None


# ── the contenders: name -> a call with no arguments ──────────────────────────────────────────────────────────────
def _argnums(p: Problem) -> int | tuple[int, ...]:
    many = len(p.case.wrt) > 1
    return tuple(range(len(p.case.wrt))) if many else 0


def _inputs(p: Problem) -> torch.Tensor | tuple[torch.Tensor, ...]:
    return tuple(p.wrt_values) if len(p.case.wrt) > 1 else p.wrt_values[0]


def hessian_contenders(p: Problem, module: ModuleType) -> dict[str, Callable[[], object]]:
    values, wrt, argnums = p.values, p.wrt_values, _argnums(p)
    func_hessian = torch.func.hessian(p.f_wrt, argnums=argnums)
    rev_rev = torch.func.jacrev(torch.func.jacrev(p.f_wrt, argnums=argnums), argnums=argnums)
    inputs = _inputs(p)
    functional = torch.autograd.functional.hessian
    calls = {
        "symgrad": lambda: module.hessian(*values),
        "func.hessian": lambda: func_hessian(*wrt),
        "jacrev(jacrev)": lambda: rev_rev(*wrt),
        "AF vectorize": lambda: functional(p.f_wrt, inputs, vectorize=True),
        "AF loop": lambda: functional(p.f_wrt, inputs, vectorize=False),
    }
    if p.n >= LARGE:  # the two torch options; the others take minutes per call at this size
        calls = {name: call for name, call in calls.items() if name in ("symgrad", "func.hessian", "AF vectorize")}
    return calls


def hvp_contenders(p: Problem, module: ModuleType) -> dict[str, Callable[[], object]]:
    values, wrt, tangents, argnums = p.values, p.wrt_values, p.tangents, _argnums(p)
    grad = torch.func.grad(p.f_wrt, argnums=argnums)
    primals, tangent_tuple = tuple(wrt), tuple(tangents)
    inputs = _inputs(p)
    v = tuple(tangents) if len(tangents) > 1 else tangents[0]
    leaves = [w.detach().clone().requires_grad_(True) for w in wrt]

    def double_backward():
        out = p.f_wrt(*leaves)
        first = torch.autograd.grad(out, leaves, create_graph=True)
        return torch.autograd.grad(first, leaves, tangent_tuple)

    return {
        "symgrad": lambda: module.hvp(*values, *tangents),
        "jvp(grad)": lambda: torch.func.jvp(grad, primals, tangent_tuple)[1],
        "AF.hvp": lambda: torch.autograd.functional.hvp(p.f_wrt, inputs, v)[1],
        "grad(grad)": double_backward,
        # not a contender: one first-order gradient, the floor an HVP's cost can approach (see targets)
        "ref:grad": lambda: torch.autograd.grad(p.f_wrt(*leaves), leaves),
    }


NEWTON_CASES = ("logistic", "logistic_col")  # the convex classics with one weight: a Newton step is what one takes


def newton_contenders(p: Problem, module: ModuleType) -> dict[str, Callable[[], object]]:
    """The emitted newton_step beside torch's Hessian (two ways) and gradient followed by torch.linalg.solve."""
    (w,) = p.wrt_values
    k = w.numel()
    func_hessian, func_grad = torch.func.hessian(p.f_wrt), torch.func.grad(p.f_wrt)

    def solved(hessian: torch.Tensor) -> torch.Tensor:
        return torch.linalg.solve(hessian.reshape(k, k), func_grad(w).reshape(k)).reshape(w.shape)

    functional = torch.autograd.functional.hessian
    return {
        "symgrad": lambda: module.newton_step(*p.values),
        "func.hessian+solve": lambda: solved(func_hessian(w)),
        "AF vectorize+solve": lambda: solved(functional(p.f_wrt, w, vectorize=True)),
    }


def verify(p: Problem, hessian_module: ModuleType, hvp_module: ModuleType) -> list[str]:
    """Every contender's answer against torch's (untimed); the problems found, empty when all agree."""
    problems = []
    reference_value = p.f(*p.values)
    reference_grad = torch.func.grad(p.f_wrt, argnums=_argnums(p))(*p.wrt_values)
    for label, module in (("hessian", hessian_module), ("hvp", hvp_module)):
        if why := mismatch(module.forward(*p.values), reference_value):
            problems.append(f"{label} module forward: {why}")
        if why := mismatch(module.gradient(*p.values), reference_grad):
            problems.append(f"{label} module gradient: {why}")
    for style, contenders, module in (
        ("hessian", hessian_contenders, hessian_module),
        ("hvp", hvp_contenders, hvp_module),
    ):
        calls = contenders(p, module)
        reference_name = next(name for name in calls if name != "symgrad")
        reference = calls[reference_name]()
        for name, call in calls.items():
            if name != reference_name and not name.startswith("ref:") and (why := mismatch(call(), reference)):
                problems.append(f"{style} {name} against {reference_name}: {why}")
    # the HVP against the Hessian, contracted with the tangents by hand: both emitted paths agree with each other
    hessian = flat(hessian_contenders(p, hessian_module)["func.hessian"]())
    k = len(p.case.wrt)
    by_hand = []
    for i in range(k):
        total = 0
        for j in range(k):
            block, v = hessian[i * k + j], p.tangents[j]
            total = total + (block.reshape(p.wrt_values[i].numel(), v.numel()) @ v.reshape(-1)).reshape(
                p.wrt_values[i].shape
            )
        by_hand.append(total)
    if why := mismatch(hvp_module.hvp(*p.values, *p.tangents), tuple(by_hand)):
        problems.append(f"emitted hvp against H @ v from torch.func.hessian: {why}")
    return problems


# ── timing ────────────────────────────────────────────────────────────────
@dataclass
class Row:
    case: str
    n: int
    sizes: str
    style: str
    medians: dict[str, float]  # seconds, per contender
    ratio: float  # median over rounds of symgrad / fastest torch in that round
    spread: tuple[float, float]
    fastest: str  # the torch contender with the smallest median

    @property
    def speedup(self) -> float:
        return 1.0 / self.ratio


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4)
    return q1, q3


def measure(p: Problem, style: str, calls: dict[str, Callable[[], object]], rounds: int, min_run_time: float) -> Row:
    timers = {
        name: Timer(stmt="call()", globals={"call": call}, num_threads=TORCH_THREADS, label=p.case.name, sub_label=name)
        for name, call in calls.items()
    }
    for call in calls.values():
        call()  # one untimed warm-up call each (first-call costs: torch.func's transforms, allocator)
    order = list(timers)
    runs: dict[str, list[float]] = {name: [] for name in order}
    for r in range(rounds):
        shift = r % len(order)
        for name in order[shift:] + order[:shift]:
            runs[name].append(timers[name].blocked_autorange(min_run_time=min_run_time).median)
    torch_names = [name for name in order if name != "symgrad" and not name.startswith("ref:")]
    ratios = [runs["symgrad"][r] / min(runs[name][r] for name in torch_names) for r in range(rounds)]
    medians = {name: statistics.median(times) for name, times in runs.items()}
    fastest = min(torch_names, key=medians.__getitem__)
    return Row(p.case.name, p.n, p.sizes, style, medians, statistics.median(ratios), quartiles(ratios), fastest)


# ── reports ───────────────────────────────────────────────────────────────
def environment() -> str:
    return (
        f"python {platform.python_version()} | torch {torch.__version__} | sympy {sympy.__version__} | "
        f"numpy {np.__version__} | symgrad {sg.__version__} | cpus {os.cpu_count()} | "
        f"torch.get_num_threads() {torch.get_num_threads()} (Timer num_threads={TORCH_THREADS}) | float64 | "
        f"{git_state()}"
    )


def print_rows(style: str, rows: list[Row], names: list[str]) -> None:
    width = max(12, *(len(name) for name in names))
    header = (
        f"{'case':14s} {'sizes':>18s} "
        + " ".join(f"{name + ' µs':>{width + 1}s}" for name in names)
        + f"  {'fastest torch':>14s} {'ratio':>7s} {'q1..q3':>11s} {'speedup':>8s}"
    )
    print(f"\n== {style}: median µs per call, ratio = symgrad / fastest torch (median of per-round ratios) ==")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.case:14s} {r.sizes:>18s} "
            + " ".join(
                f"{r.medians[name] * 1e6:{width + 1}.1f}" if name in r.medians else f"{'—':>{width + 1}s}"
                for name in names
            )
            + f"  {r.fastest:>14s} {r.ratio:7.3f} {'{:.3f}..{:.3f}'.format(*r.spread):>11s} {r.speedup:7.1f}x"
        )


def function_source(module: ModuleType, name: str) -> str:
    """The statements of an emitted function, without its docstring and shape checks."""
    lines = module.__symgrad_source__.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    body = []
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break
        body.append(line)
    text = "\n".join(body)
    text = text.split('"""', 2)[-1] if text.lstrip().startswith('r"""') else text
    return "\n".join(line for line in text.splitlines() if line.strip() and "_check_" not in line)


def targets(rows: list[Row], style: str) -> None:
    print(f"\n== targets (issue 30): emitted {style} against the fastest torch option ==")
    for name, n, factor in TARGETS:
        if style == "newton" and name not in NEWTON_CASES:
            continue
        row = next((r for r in rows if r.case == name and r.n == n and r.style == style), None)
        if row is None:
            print(f"  {name} at n={n}: not measured in this run (--quick, --sizes or --cases)")
            continue
        verdict = (
            f"MET (>= {factor:g}x)" if row.speedup >= factor else f"MISSED {factor:g}x by {factor / row.speedup:.1f}x"
        )
        print(
            f"  {name:14s} {row.sizes:18s} symgrad {row.medians['symgrad'] * 1e6:9.1f} µs, fastest torch "
            f"({row.fastest}) {row.medians[row.fastest] * 1e6:9.1f} µs: speedup {row.speedup:6.1f}x "
            f"(per-round ratio q1..q3 {row.spread[0]:.3f}..{row.spread[1]:.3f})  {verdict}"
        )
        if "ref:grad" in row.medians:  # how far an HVP can go: costing one torch gradient, it would be this fast
            gradient = row.medians["ref:grad"]
            print(
                f"  {'':14s} {'':18s} one torch gradient {gradient * 1e6:9.1f} µs: an HVP at that cost would be "
                f"{row.medians['grad(grad)'] / gradient:5.1f}x double backward; symgrad's HVP costs "
                f"{row.medians['symgrad'] / gradient:5.2f} torch gradients"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 8 only, 3 short rounds: a smoke test")
    parser.add_argument("--rounds", type=int, default=11, help="interleaved rounds per configuration (default 11)")
    parser.add_argument("--min-run-time", type=float, default=0.05, help="blocked_autorange min_run_time, seconds")
    parser.add_argument("--sizes", type=int, nargs="*", help="only these n (default: each case's own list)")
    parser.add_argument("--cases", nargs="*", choices=[c.name for c in CASES], help="only these cases")
    args = parser.parse_args()
    torch.set_num_threads(TORCH_THREADS)
    rounds = 3 if args.quick else max(1, args.rounds)
    min_run_time = 0.005 if args.quick else args.min_run_time
    wanted_sizes = {8} if args.quick else set(args.sizes or ())
    cases = [c for c in CASES if not args.cases or c.name in args.cases]
    started = time.perf_counter()

    print(environment())
    print(f"load average at start (1, 5, 15 min): {os.getloadavg()} -- other processes may share these cores")
    print(
        f"timing: Timer.blocked_autorange(min_run_time={min_run_time}) median, {rounds} interleaved round(s) per "
        "configuration, contender order rotating; ratio = median over rounds of symgrad / fastest torch that round"
    )

    print("\n== emission (symbolic derivation + code generation, cold, once per case with symbolic dims) ==")
    warm = time.perf_counter()
    x = sg.symbols("x", (sg.dims("n")[0],))
    sg.compile(x.pow(2).sum(), [x], inputs=[x], style="hessian", name="Warmup")
    print(f"  first emission in the process (imports, first calls; not a case): {time.perf_counter() - warm:.2f} s")
    modules: dict[tuple[str, str], ModuleType] = {}
    for case in cases:
        seconds = {}
        for style in ("hessian", "hvp", "newton") if case.name in NEWTON_CASES else ("hessian", "hvp"):
            modules[case.name, style], seconds[style] = emit(case, style)
        print(
            f"  {case.name:14s} {case.text:58s} wrt {','.join(case.wrt):6s} "
            f"hessian {seconds['hessian']:5.2f} s   hvp {seconds['hvp']:5.2f} s"
        )

    problems = {
        (case.name, n): make_problem(case, n)
        for case in cases
        for n in case.ns
        if not wanted_sizes or n in wanted_sizes
    }
    print("\n== verification against torch, float64, before any timing (untimed) ==")
    failures = 0
    for (name, _n), p in problems.items():
        found = verify(p, modules[name, "hessian"], modules[name, "hvp"])
        if (name, "newton") in modules:
            calls = newton_contenders(p, modules[name, "newton"])
            if why := mismatch(calls["symgrad"](), calls["func.hessian+solve"]()):
                found.append(f"newton_step against func.hessian + solve: {why}")
        failures += len(found)
        print(f"  {name:14s} {p.sizes:18s} {'OK' if not found else 'MISMATCH'}")
        for why in found:
            print(f"      {why}")
    if failures:
        print("\nmismatches above: nothing is timed (the benchmark never times a wrong answer)")
        sys.exit(1)

    rows: dict[str, list[Row]] = {"hessian": [], "hvp": [], "newton": []}
    for style, contenders in (("hessian", hessian_contenders), ("hvp", hvp_contenders), ("newton", newton_contenders)):
        names: list[str] = []
        for (name, _n), p in problems.items():
            if (name, style) not in modules:
                continue
            calls = contenders(p, modules[name, style])
            names += [c for c in calls if c not in names]
            row = measure(p, style, calls, rounds, min_run_time)
            rows[style].append(row)
            print(
                f"  [{style} {name} {p.sizes}: symgrad {row.medians['symgrad'] * 1e6:.1f} µs, "
                f"{row.fastest} {row.medians[row.fastest] * 1e6:.1f} µs, speedup {row.speedup:.1f}x]",
                flush=True,
            )
        if names:
            print_rows(style, rows[style], names)

    targets(rows["hessian"], "hessian")
    targets(rows["hvp"], "hvp")
    targets(rows["newton"], "newton")
    print("\n== the emitted code that was timed (statements of hessian / hvp, shape checks left out) ==")
    for (name, style), module in modules.items():
        print(f"-- {name} {style}:")
        print(function_source(module, "newton_step" if style == "newton" else style))
    print(f"\nload average at end (1, 5, 15 min): {os.getloadavg()}; wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
