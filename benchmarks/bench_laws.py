"""Gradient-law benchmark: time of sg.law on a 3-layer MLP (symbolic and concrete sizes), and law quality per case.

Run from the repository root (no install needed):

    python benchmarks/bench_laws.py            # timing: about a minute on 2 cores
    python benchmarks/bench_laws.py --prove-repeats 1   # also one run of sg.prove with its defaults (+1.5-2 min)
    python benchmarks/bench_laws.py report     # op-count ratio of every law in tests/test_laws.py, under a minute

``timing`` (the default) derives and simplifies the gradient laws of

    h1 = tanh(W1 @ X + b1);  h2 = tanh(W2 @ h1 + b2);  z = W3 @ h2 + b3
    loss = cross_entropy(z.T, y, reduction="mean")       # y: int64 class targets

with respect to W1, b1, W2, b2, W3, b3 (``sg.law``, reverse mode over the op
VJP rules, then the simplifier), with symbolic dims and with concrete sizes
(all 8, all 64, all 512, and an MNIST-like 784-512-256-10 net on a batch of
128). Concrete sizes go through the same law engine: no tensor's entries are
built (only 0-d constants hold a value), which the script checks. Medians of at least 7 cold repeats; the target is
sg.law under 1 s. ``sg.prove`` (exact entrywise at d=h=g=c=n=2, then torch) is
timed separately, for information only; ``sg.prove`` with its default sizes
takes over a minute a run, so it is timed only with ``--prove-repeats N``.

``report`` derives the law of every case in tests/test_laws.py and prints its
op count (``symgrad.simplify.op_count``: distinct ops, shared nodes once)
beside the hand-written closed form's, their ratio, and the derived law in
torch spelling (``sg.TorchPrinter``), then the largest ratio and how many laws
are within 1.5× (the bound the tests assert).

Every timed phase starts cold: ``sympy.core.cache.clear_cache()`` and
``gc.collect()`` run (untimed) before it, and all tensors are rebuilt from
scratch. One untimed warm-up call per configuration runs first (module imports
and first-call costs); its time is printed on its own line, not mixed into the
medians. The script makes no assertions about time.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np
import sympy
import torch
from sympy.core.cache import clear_cache

import symgrad as sg
from symgrad.core import Tensor, apply, topological
from symgrad.derive import op_count, simplify

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 1.0
SAME_WITHIN = 1.5  # concrete-size medians within this factor of each other count as size-independent
MIN_REPEATS = 7
PARAMS = ("W1", "b1", "W2", "b2", "W3", "b3")
DIM_NAMES = ("d", "h", "g", "c", "n")  # input features, hidden 1, hidden 2, classes, batch


# ── environment and timing helpers ────────────────────────────────────────
def environment() -> str:
    try:
        commit = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"python {platform.python_version()} | torch {torch.__version__} | sympy {sympy.__version__} | "
        f"numpy {np.__version__} | symgrad {sg.__version__} @ {commit} | cpus {os.cpu_count()} | "
        f"load average (1, 5, 15 min) {load} | SYMPY_USE_CACHE {os.environ.get('SYMPY_USE_CACHE', 'yes (default)')}"
    )


def cold() -> None:
    """Forget SymPy's global cache and collect garbage, so the next timed phase starts cold."""
    clear_cache()
    gc.collect()


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def spread(values: list[float]) -> str:
    return f"min {min(values):.4f} / max {max(values):.4f}"


# ── the MLP ───────────────────────────────────────────────────────────────
def mlp(sizes: tuple) -> tuple[Tensor, list[Tensor], dict[str, Tensor]]:
    """Loss, parameters and forward nodes of the 3-layer tanh MLP with softmax cross-entropy.

    ``sizes`` = (d, h, g, c, n): symbolic dims or ints. X is (d, n): one column per example.
    """
    d, h, g, c, n = sizes
    X = sg.symbols("X", (d, n))
    y = sg.symbols("y", (n,), dtype="int64", classes=c)
    W1, b1 = sg.symbols("W1", (h, d)), sg.symbols("b1", (h, 1))
    W2, b2 = sg.symbols("W2", (g, h)), sg.symbols("b2", (g, 1))
    W3, b3 = sg.symbols("W3", (c, g)), sg.symbols("b3", (c, 1))
    h1 = (W1 @ X + b1).tanh()
    h2 = (W2 @ h1 + b2).tanh()
    z = W3 @ h2 + b3
    loss = apply("cross_entropy", z.T, y, reduction="mean")
    return loss, [W1, b1, W2, b2, W3, b3], {"h1": h1, "h2": h2, "z": z}


def entries_held(roots: list[Tensor]) -> tuple[int, int]:
    """(nodes, SymPy entries) held below ``roots``: only 0-d constants (1, 2, n) carry one; no tensor's are built."""
    nodes = {id(node): node for root in roots for node in topological(root) if node._entries is not None}
    return len(nodes), sum(node._entries.size for node in nodes.values())


def structure(law: Tensor) -> list[tuple[str, str]]:
    """The law's ops in dependency order with their attribute names, sizes left out: equal for every size if the
    engine does the same work whatever the sizes are."""
    return [(node.op.name, ",".join(sorted(node.attrs))) for node in topological(law) if node.op is not None]


PHASES = ("build", "derive", "simplify", "law", "law cpu", "build+law")


def one_repeat(sizes: tuple, phases: dict[str, list[float]]) -> tuple[Tensor, list[Tensor]]:
    """One cold repeat of every phase for one configuration; appends the times to ``phases``."""
    cold()
    seconds, (loss, wrt, _) = timed(lambda: mlp(sizes))
    phases["build"].append(seconds)
    cold()
    seconds, raw = timed(lambda: sg.law(loss, wrt, simplified=False))
    phases["derive"].append(seconds)
    cold()
    seconds, _ = timed(lambda: simplify(list(raw), context=[loss]))
    phases["simplify"].append(seconds)
    loss, wrt, _ = mlp(sizes)
    cold()
    cpu = time.process_time()
    seconds, laws = timed(lambda: sg.law(loss, wrt))
    phases["law cpu"].append(time.process_time() - cpu)
    phases["law"].append(seconds)
    cold()
    seconds, _ = timed(lambda: sg.law(*mlp(sizes)[:2]))
    phases["build+law"].append(seconds)
    return loss, list(laws)


def time_configs(configs: list[tuple[str, tuple]], repeats: int) -> dict[str, dict]:
    """Warm up each configuration once (untimed in the medians), then ``repeats`` rounds over all configurations,
    so that load from other processes falls on every column alike."""
    results: dict[str, dict] = {}
    for label, sizes in configs:
        first, _ = timed(lambda sizes=sizes: sg.law(*mlp(sizes)[:2]))
        results[label] = {"first": first, **{phase: [] for phase in PHASES}}
    for _ in range(repeats):
        for label, sizes in configs:
            loss, laws = one_repeat(sizes, results[label])
            results[label]["laws"] = laws
            results[label]["entries"] = entries_held([loss, *laws])
    return results


def timing(repeats: int, prove_repeats: int) -> None:
    print(environment())
    print(
        "SymPy cache: sympy.core.cache.clear_cache() and gc.collect() run (untimed) before every timed phase; the MLP"
        " is rebuilt from scratch every repeat, so repeats are cold."
    )
    symbolic = sg.dims(" ".join(DIM_NAMES))
    configs: list[tuple[str, tuple]] = [
        ("symbolic d h g c n", tuple(symbolic)),
        ("all 8", (8,) * 5),
        ("all 64", (64,) * 5),
        ("all 512", (512,) * 5),
        ("784-512-256-10, n=128", (784, 512, 256, 10, 128)),
    ]
    print(
        "\n== sg.law for W1, b1, W2, b2, W3, b3 of h1 = tanh(W1 @ X + b1), h2 = tanh(W2 @ h1 + b2), z = W3 @ h2 + b3,"
        f" loss = cross_entropy(z.T, y, 'mean'); median of {repeats} cold repeats, seconds =="
    )
    print("   sizes (d, h, g, c, n): X is d x n (n examples), W1 h x d, W2 g x h, W3 c x g, y n int64 in [0, c)")
    print(
        "   build = symbols + forward graph; derive = sg.law(simplified=False), reverse mode over VJP rules;"
        " simplify = the simplifier on those; law = sg.law (derive + simplify, the target);"
        " law cpu = the same calls' process CPU time (time.process_time: leaves out time preempted by other"
        " processes, which comes in ~4 ms scheduler slices on this box); build+law = one block"
    )
    results = time_configs(configs, repeats)
    columns = PHASES
    header = f"{'phase':<11}" + "".join(f"{label:>24}" for label, _ in configs)
    print(header)
    for phase in columns:
        print(f"{phase:<11}" + "".join(f"{statistics.median(results[label][phase]):>24.4f}" for label, _ in configs))
    spreads = [f"{min(results[label]['law']):.4f}..{max(results[label]['law']):.4f}" for label, _ in configs]
    print(f"{'law min..max':<11}" + "".join(f"{text:>24}" for text in spreads))
    print(
        f"{'1st call':<11}"
        + "".join(f"{results[label]['first']:>24.4f}" for label, _ in configs)
        + "   (untimed warm-up: imports, first calls; not in the medians)"
    )
    print(
        f"{'ops/law':<11}"
        + "".join(f"{'/'.join(str(op_count(t)) for t in results[label]['laws']):>24}" for label, _ in configs)
        + "   (op_count per W1/b1/W2/b2/W3/b3)"
    )
    print(
        f"{'entries':<11}"
        + "".join(f"{'{} in {} nodes'.format(*results[label]['entries'][::-1]):>24}" for label, _ in configs)
        + "   (SymPy entries held after sg.law: only 0-d constants such as 1, 2, n; no tensor's entries are built)"
    )
    law_medians = {label: statistics.median(results[label]["law"]) for label, _ in configs}
    worst_label = max(law_medians, key=law_medians.__getitem__)
    worst = law_medians[worst_label]
    verdict = "MET at every size" if worst < TARGET_SECONDS else "MISSED"
    print(
        f"\n  target sg.law < {TARGET_SECONDS:.0f} s (median of {repeats} cold repeats): {verdict}"
        f" (slowest median {worst:.4f} s: {worst_label})"
    )
    reference = [structure(t) for t in results[configs[0][0]]["laws"]]
    same = {label: [structure(t) for t in results[label]["laws"]] == reference for label, _ in configs}
    print(
        f"  size independence: the laws have the same ops in the same order at every size: {all(same.values())}"
        f" ({', '.join(f'{k}: {v}' for k, v in same.items())})"
    )
    concrete = [label for label, _ in configs[1:]]
    for phase in ("law", "law cpu"):
        medians = {label: statistics.median(results[label][phase]) for label, _ in configs}
        ratio = max(medians[x] for x in concrete) / min(medians[x] for x in concrete)
        symbolic_ratio = medians[configs[0][0]] / statistics.median([medians[x] for x in concrete])
        growth = "no growth with the sizes" if ratio < SAME_WITHIN else "the sizes matter"
        print(
            f"  {phase + ':':<8} slowest / fastest concrete-size median = {ratio:.2f} for sizes 8 up to 784"
            f" ({growth}; threshold {SAME_WITHIN}); symbolic / median concrete = {symbolic_ratio:.2f}"
        )
    print("\n  the laws at symbolic sizes (sg.listing, shared subexpressions named once):")
    loss, wrt, forward = mlp(tuple(symbolic))
    laws = sg.law(loss, wrt)
    text = sg.listing(list(zip([f"{p}.grad" for p in PARAMS], laws)), forward=list(forward.items())).text()
    for line in text.splitlines():
        print(f"    {line}")
    prove_timing(tuple(symbolic), prove_repeats)
    print(f"\nload average at end (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def prove_timing(symbolic: tuple, prove_repeats: int) -> None:
    """sg.prove of the symbolic-size laws, for information (not part of the target)."""
    print(
        "\n== sg.prove of the symbolic-size laws (for information, not part of the target); the laws are derived"
        " untimed =="
    )
    smallest = [dict.fromkeys(symbolic, 2)]
    loss, wrt, _ = mlp(symbolic)
    laws = sg.law(loss, wrt)
    sg.prove(loss, wrt, laws=laws, sizes=smallest)  # warm-up: torch and the proof machinery's imports
    small: list[float] = []
    for _ in range(MIN_REPEATS):
        cold()
        seconds, proof = timed(lambda: sg.prove(loss, wrt, laws=laws, sizes=smallest))
        small.append(seconds)
        assert proof.held, proof
    print(
        f"  sg.prove(..., sizes=[all dims 2]): exact at d=h=g=c=n=2, then torch at"
        f" {', '.join(f'{k}={v}' for k, v in proof.numeric[0]['sizes'].items())}"
    )
    print(
        f"    median {statistics.median(small):.3f} s of {MIN_REPEATS} cold repeats ({spread(small)});"
        f" held: {proof.held}"
    )
    if prove_repeats == 0:
        print(
            "  sg.prove(...) with its defaults (exact at two assignments of distinct sizes, then torch): skipped, it"
            " takes 1.5 to 2 minutes a run on two loaded cores; --prove-repeats 1 (one run) or 3 (a median) times it"
        )
        return
    full: list[float] = []
    for _ in range(prove_repeats):
        cold()
        seconds, proof = timed(lambda: sg.prove(loss, wrt, laws=laws))
        full.append(seconds)
    kind = f"median of {prove_repeats} cold repeats" if prove_repeats > 1 else "ONE run, not a median"
    print("  sg.prove(...) with its defaults: exact at two assignments of distinct sizes, then torch")
    for line in str(proof).splitlines():
        print(f"    {line}")
    print(
        f"    {statistics.median(full):.1f} s ({kind}{'; ' + spread(full) if prove_repeats > 1 else ''};"
        " each run takes over a minute: --prove-repeats 3 for a median)"
    )


# ── the report ────────────────────────────────────────────────────────────
def shorten(text: str, width: int) -> str:
    return text if width <= 0 or len(text) <= width else f"{text[: width - 1]}… ({len(text)} chars)"


def report(width: int) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_laws import CASES  # the table the tests prove; imported, not copied

    print(environment())
    print(
        f"op counts: symgrad.simplify.op_count (distinct ops, shared nodes once) of sg.law(...) and of the hand form;"
        f" laws printed with sg.TorchPrinter().doprint, cut at {width} characters; hand forms shown when ratio > 1"
    )
    printer = sg.TorchPrinter()
    rows: list[tuple[str, str, int, int, float]] = []
    start = time.perf_counter()
    print(f"\n{'case':<40} {'wrt':<6} {'law':>4} {'hand':>5} {'ratio':>6}  law (torch)")
    for name in sorted(CASES):
        spec = CASES[name]()
        derived = sg.law(spec.outputs, spec.wrt, spec.grads)
        for x, mine, theirs in zip(spec.wrt, derived, spec.hand, strict=True):
            a, b = op_count(mine), op_count(theirs)
            ratio = a / b if b else (1.0 if a == 0 else float("inf"))
            rows.append((name, x.name, a, b, ratio))
            print(f"{name:<40} {x.name:<6} {a:>4} {b:>5} {ratio:>6.2f}  {shorten(printer.doprint(mine), width)}")
            if ratio > 1:
                print(f"{'':<40} {'':<6} {'':>4} {'':>5} {'hand':>6}  {shorten(printer.doprint(theirs), width)}")
    seconds = time.perf_counter() - start
    ratios = [r[4] for r in rows]
    within = sum(1 for r in ratios if r <= 1.5)
    worst = max(rows, key=lambda r: r[4])
    by_case: dict[str, float] = {}
    for name, _, _, _, ratio in rows:
        by_case[name] = max(by_case.get(name, 0.0), ratio)
    print(
        f"\nsummary: {len(CASES)} cases, {len(rows)} laws; max ratio {worst[4]:.2f} ({worst[0]}, wrt {worst[1]});"
        f" {within}/{len(rows)} laws ≤ 1.5 ({sum(1 for r in by_case.values() if r <= 1.5)}/{len(by_case)} cases);"
        f" {sum(1 for r in ratios if r < 1)} shorter than the hand form, {sum(1 for r in ratios if r == 1)} equal,"
        f" {sum(1 for r in ratios if r > 1)} longer; median ratio {statistics.median(ratios):.2f}"
    )
    print(f"(building the cases and deriving all laws took {seconds:.1f} s, one pass, warm SymPy cache)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=("timing", "report"), default="timing")
    parser.add_argument("--repeats", type=int, default=15, help=f"cold repeats per phase (at least {MIN_REPEATS})")
    parser.add_argument(
        "--prove-repeats",
        type=int,
        default=0,
        help="runs of sg.prove with its defaults (over 1 min each; default 0: skipped)",
    )
    parser.add_argument("--width", type=int, default=150, help="cut printed laws at this many characters (0: never)")
    args = parser.parse_args()
    if args.command == "report":
        report(args.width)
    else:
        timing(max(MIN_REPEATS, args.repeats), max(0, args.prove_repeats))


if __name__ == "__main__":
    main()
