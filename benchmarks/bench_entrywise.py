"""Entrywise derivation benchmark: symgrad's Jacobian/VJP of W @ X and tanh(W) * X, beside torch.autograd.

Run from the repository root (no install needed):

    python benchmarks/bench_entrywise.py            # full run, a few minutes on 2 cores
    python benchmarks/bench_entrywise.py --quick    # n = 4, 8, 16 and fewer repeats, for a smoke test

What is timed (all with ``time.perf_counter``, medians over repeats, never one run):

* the 16×16 target: W @ X with respect to W, built from scratch each repeat
  (``symbols`` → ``W @ X`` → ``.entries()``), then ``jacobian(out, W)``,
  ``vjp(out, W, V)`` for a symbolic ``V = symbols_like(out, "V")``, for numeric
  grad tensors (ones and random floats), and ``out.backward(V)``;
* scaling over n = 4, 8, 16, 32 for W @ X (non-zeros n³) and the elementwise
  tanh(W) * X (non-zeros n²), against out.numel() × in.numel() = n⁴;
* torch.autograd on the same sizes (float64, forward + backward with a ones
  grad) with ``torch.utils.benchmark.Timer.blocked_autorange``, median.

Every timed phase starts cold: ``sympy.core.cache.clear_cache()`` and
``gc.collect()`` run (untimed) before it, and tensors are rebuilt from scratch.
The garbage collector stays enabled (as users run symgrad) except in the
column marked "gc off", which repeats the derivation with ``gc.disable()`` to
separate the algorithm's scaling from the collector's.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

import numpy as np
import sympy
import torch
from sympy.core.cache import clear_cache
from torch.utils.benchmark import Timer

import symgrad.torch as sgt
from symgrad.core import Tensor, symbols, symbols_like, tensor
from symgrad.derive import jacobian, sparse_jacobian, vjp

TARGET_SECONDS = 2.0
TORCH_THREADS = 1  # symgrad is single-threaded Python; torch gets one thread too (Timer's default)


# ── the two workloads ─────────────────────────────────────────────────────
def build_matmul(n: int) -> tuple[Tensor, Tensor]:
    """out = W @ X with W requiring grad; each of the n² outputs depends on n entries of W (nnz = n³)."""
    w = symbols("W", (n, n), requires_grad=True)
    x = symbols("X", (n, n))
    out = w @ x
    out.entries()
    return out, w


def build_elementwise(n: int) -> tuple[Tensor, Tensor]:
    """out = tanh(W) * X; each output depends on one entry of W (nnz = n²)."""
    w = symbols("W", (n, n), requires_grad=True)
    x = symbols("X", (n, n))
    out = sgt.tanh(w) * x
    out.entries()
    return out, w


WORKLOADS: dict[str, tuple[Callable[[int], tuple[Tensor, Tensor]], Callable[[int], int], str]] = {
    "W @ X": (build_matmul, lambda n: n**3, "torch.matmul(W, X)"),
    "tanh(W) * X": (build_elementwise, lambda n: n**2, "torch.tanh(W) * X"),
}


# ── timing helpers ────────────────────────────────────────────────────────
def cold() -> None:
    """Forget SymPy's global cache and collect garbage, so the next timed phase starts cold."""
    clear_cache()
    gc.collect()


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float]) -> str:
    return f"min {min(values):.3f} / max {max(values):.3f}"


def run_pipeline(build: Callable[[int], tuple[Tensor, Tensor]], n: int, *, gc_off: bool = False) -> dict[str, float]:
    """One repeat: build (graph + entries), jacobian, vjp with symbolic V; each phase cold and timed."""
    times: dict[str, float] = {}
    was_enabled = gc.isenabled()
    try:
        cold()
        if gc_off:
            gc.disable()
        times["build"], (out, w) = timed(lambda: build(n))
        gc.enable()
        cold()
        if gc_off:
            gc.disable()
        times["jacobian"], jac = timed(lambda: jacobian(out, w))
        gc.enable()
        times["nnz"] = len(jac._sparse_array)
        del jac
        v = symbols_like(out, "V")
        v.entries()
        cold()
        if gc_off:
            gc.disable()
        times["vjp"], _ = timed(lambda: vjp(out, w, v))
    finally:
        if was_enabled:
            gc.enable()
    times["total"] = times["build"] + times["jacobian"] + times["vjp"]
    return times


def torch_fwd_bwd(expr: str, n: int) -> float:
    """Median seconds of forward + backward(ones) in float64, via torch.utils.benchmark."""
    setup = (
        "W = torch.randn(n, n, dtype=torch.float64, requires_grad=True)\n"
        "X = torch.randn(n, n, dtype=torch.float64)\n"
        "G = torch.ones(n, n, dtype=torch.float64)"
    )
    timer = Timer(
        stmt=f"W.grad = None\nout = {expr}\nout.backward(G)",
        setup=setup,
        globals={"torch": torch, "n": n},
        num_threads=TORCH_THREADS,
    )
    return timer.blocked_autorange(min_run_time=0.5).median


# ── sanity checks (not timed) ─────────────────────────────────────────────
def sanity(n: int = 4) -> list[str]:
    """symgrad's Jacobian equals SymPy's own expr.diff entry by entry; its VJP values equal torch's grad."""
    lines = []
    for label, (build, _, expr) in WORKLOADS.items():
        out, w = build(n)
        position = {s: i for i, s in enumerate(w.entries().reshape(-1))}
        reference = [
            (o, position[s], e.diff(s))
            for o, e in enumerate(out.entries().reshape(-1))
            for s in sorted(e.free_symbols & position.keys(), key=position.__getitem__)
            if e.diff(s) != 0
        ]
        same = list(sparse_jacobian(out, w)) == reference
        rng = np.random.default_rng(0)
        w_vals, x_vals, g_vals = (rng.standard_normal((n, n)) for _ in range(3))
        w_num = symbols("W", (n, n), requires_grad=True, values=w_vals.tolist())
        x_num = symbols("X", (n, n), values=x_vals.tolist())
        out_num = w_num @ x_num if label == "W @ X" else sgt.tanh(w_num) * x_num
        grad = np.array(vjp(out_num, w_num, tensor(g_vals.tolist())).tolist(), dtype=float)
        wt = torch.tensor(w_vals, requires_grad=True)
        xt = torch.tensor(x_vals)
        ((wt @ xt) if label == "W @ X" else (torch.tanh(wt) * xt)).backward(torch.tensor(g_vals))
        close = np.allclose(grad, wt.grad.numpy(), rtol=1e-10, atol=1e-12)
        lines.append(
            f"  {label:12s} n={n}: jacobian == SymPy expr.diff per entry: {same}; "
            f"vjp values == torch {expr} grad (float64): {close}"
        )
    return lines


# ── reports ───────────────────────────────────────────────────────────────
def environment() -> str:
    return (
        f"python {platform.python_version()} | torch {torch.__version__} | sympy {sympy.__version__} | "
        f"numpy {np.__version__} | cpus {os.cpu_count()} | torch.get_num_threads() {torch.get_num_threads()} "
        f"(Timer num_threads={TORCH_THREADS}) | SYMPY_CACHE_SIZE {os.environ.get('SYMPY_CACHE_SIZE', '1000 (default)')}"
        f" | SYMPY_USE_CACHE {os.environ.get('SYMPY_USE_CACHE', 'yes (default)')}"
    )


def one_block(n: int) -> None:
    """Build, Jacobian and symbolic VJP in one go, as a user session would run them."""
    out, w = build_matmul(n)
    jacobian(out, w)
    vjp(out, w, symbols_like(out, "V"))


def target(n: int, repeats: int) -> None:
    print(f"\n== target: gradient of W @ X wrt W at {n}x{n} @ {n}x{n}, median of {repeats} cold repeats ==")
    phases: dict[str, list[float]] = {
        k: [] for k in ("build", "jacobian", "vjp_sym", "vjp_ones", "vjp_rand", "backward", "total", "one_block")
    }
    rng = np.random.default_rng(0)
    for _ in range(repeats):
        run = run_pipeline(build_matmul, n)
        phases["build"].append(run["build"])
        phases["jacobian"].append(run["jacobian"])
        phases["vjp_sym"].append(run["vjp"])
        phases["total"].append(run["total"])
        for key, make in (
            ("vjp_ones", lambda: tensor(np.ones((n, n)).tolist())),
            ("vjp_rand", lambda: tensor(rng.standard_normal((n, n)).tolist())),
        ):
            out, w = build_matmul(n)
            g = make()
            cold()
            seconds, _ = timed(lambda out=out, w=w, g=g: vjp(out, w, g))
            phases[key].append(seconds)
        out, w = build_matmul(n)
        v = symbols_like(out, "V")
        cold()
        seconds, _ = timed(lambda out=out, v=v, w=w: (out.backward(v), w.grad.entries()))
        phases["backward"].append(seconds)
        cold()
        seconds, _ = timed(lambda: one_block(n))
        phases["one_block"].append(seconds)
    labels = {
        "build": "build: symbols + W @ X + .entries()",
        "jacobian": "jacobian(out, W)",
        "vjp_sym": "vjp(out, W, V)  V = symbols_like(out, 'V')",
        "vjp_ones": "vjp(out, W, ones)  numeric grad tensor",
        "vjp_rand": "vjp(out, W, randn)  numeric grad tensor",
        "backward": "out.backward(V) + W.grad.entries()",
        "total": "end to end: sum of cold build, jac, vjp(V)",
        "one_block": "end to end, one timed block: build, jac, vjp",
    }
    for key, label in labels.items():
        print(f"  {label:46s} median {median(phases[key]):7.3f} s   ({spread(phases[key])})")
    total = max(median(phases["total"]), median(phases["one_block"]))
    verdict = "MET" if total < TARGET_SECONDS else "MISSED"
    print(f"  target end to end < {TARGET_SECONDS:.0f} s: {verdict} (median {total:.3f} s)")


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def scaling(sizes: list[int], repeats: dict[int, int], with_gc_off: bool) -> None:
    print("\n== scaling: symgrad (build + jacobian + vjp, each cold) beside torch.autograd (fwd + bwd, float64) ==")
    print("   times are medians in seconds; per-entry columns in microseconds")
    for label, (build, nnz_of, expr) in WORKLOADS.items():
        print(f"\n-- {label} wrt W: nnz expected {'n^3' if label == 'W @ X' else 'n^2'}, out x in = n^4 --")
        header = (
            f"{'n':>3} {'reps':>4} {'nnz':>7} {'out x in':>9} {'build':>7} {'jacobian':>8} {'vjp':>7} "
            f"{'total':>7} {'total/nnz':>9} {'total/(out x in)':>16}"
        )
        if with_gc_off:
            header += f" {'total gc off':>12} {'gc-off/nnz':>10}"
        header += f" {'torch fwd+bwd':>13} {'(build+vjp)/torch':>17}"
        print(header)
        totals, nnzs, totals_off = [], [], []
        phase_medians: dict[str, list[float]] = {"build": [], "jacobian": [], "vjp": []}
        for n in sizes:
            runs = [run_pipeline(build, n) for _ in range(repeats[n])]
            nnz = int(runs[0]["nnz"])
            assert nnz == nnz_of(n), (nnz, nnz_of(n))
            med = {k: median([r[k] for r in runs]) for k in ("build", "jacobian", "vjp", "total")}
            fwd_bwd = median([r["build"] + r["vjp"] for r in runs])
            cells = n * n * n * n
            line = (
                f"{n:>3} {repeats[n]:>4} {nnz:>7} {cells:>9} {med['build']:7.3f} {med['jacobian']:8.3f} "
                f"{med['vjp']:7.3f} {med['total']:7.3f} {med['total'] / nnz * 1e6:9.1f} "
                f"{med['total'] / cells * 1e6:16.3f}"
            )
            if with_gc_off:
                off = median([run_pipeline(build, n, gc_off=True)["total"] for _ in range(repeats[n])])
                totals_off.append(off)
                line += f" {off:12.3f} {off / nnz * 1e6:10.1f}"
            torch_seconds = torch_fwd_bwd(expr, n)
            line += f" {torch_seconds * 1e6:10.1f} us {fwd_bwd / torch_seconds:17.0f}"
            print(line, flush=True)
            totals.append(med["total"])
            for key, values in phase_medians.items():
                values.append(med[key])
            nnzs.append(nnz)
        fit = slope(nnzs, totals)
        fit_n = slope([float(n) for n in sizes], totals)
        message = (
            f"   fit: total ~ nnz^{fit:.2f} (1.00 = linear in nnz), ~ n^{fit_n:.2f}; "
            f"out x in would be n^4 (nnz^{4 / math.log(nnz_of(2), 2):.2f})"
        )
        if with_gc_off:
            message += f"; gc off: total ~ nnz^{slope(nnzs, totals_off):.2f}"
        print(message)
        fits = ", ".join(f"{key} ~ nnz^{slope(nnzs, values):.2f}" for key, values in phase_medians.items())
        print(f"   per phase: {fits}")


PRODUCTS_LIMIT = 4.0  # the speed issue: vjp(W @ X, W, V) at most 4x the time of building its n³ SymPy products


def products(sizes: list[int], repeats: int) -> None:
    """``vjp(W @ X, W, V)`` with a symbolic V against the floor any entrywise VJP pays: building the n³ SymPy
    products ``V[i, j] * X[k, j]`` its entries are sums of, from the same symbols, timed side by side (cold)."""
    print(f"\n== vjp(W @ X, W, V) against building its n³ SymPy products (target: ratio <= {PRODUCTS_LIMIT:g}) ==")
    print(f"{'n':>4s} {'vjp s':>8s} {'products s':>11s} {'ratio':>6s}  {'ratio min..max':>14s}")
    for n in sizes:
        ratios, vjps, floors = [], [], []
        for _ in range(repeats):
            cold()
            out, w = build_matmul(n)
            v = symbols_like(out, "V")
            x = out.inputs[1]
            v_entries, x_entries = v.entries(), x.entries()
            cold()
            start = time.perf_counter()
            [v_entries[i, j] * x_entries[k, j] for i in range(n) for k in range(n) for j in range(n)]
            floor = time.perf_counter() - start
            cold()
            start = time.perf_counter()
            vjp(out, w, v)
            seconds = time.perf_counter() - start
            vjps.append(seconds)
            floors.append(floor)
            ratios.append(seconds / floor)
        verdict = "MET" if median(ratios) <= PRODUCTS_LIMIT else "MISSED"
        print(
            f"{n:4d} {median(vjps):8.3f} {median(floors):11.3f} {median(ratios):6.2f}  "
            f"{min(ratios):6.2f}..{max(ratios):<6.2f} {verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="n = 4, 8, 16 only, 5 repeats, no gc-off column")
    parser.add_argument(
        "--products", action="store_true", help="only the vjp-against-products comparison at n = 32 and 40"
    )
    parser.add_argument("--repeats", type=int, default=7, help="repeats for the target and for n <= 16 (>= 5)")
    args = parser.parse_args()
    repeats = max(5, args.repeats)
    sizes = [4, 8, 16] if args.quick else [4, 8, 16, 32]
    per_size = {n: (repeats if n <= 16 else 5) for n in sizes}
    if args.quick:
        per_size = dict.fromkeys(sizes, 5)

    print(environment())
    print(f"load average at start (1, 5, 15 min): {os.getloadavg()} -- other processes share these cores")
    if args.products:
        products([32, 40], 5)
        return
    print(
        "SymPy cache: sympy.core.cache.clear_cache() IS called (untimed) before every timed phase, and gc.collect();"
        " tensors are rebuilt from scratch every repeat, so repeats are cold."
    )
    print("sanity (n=4, untimed):")
    for line in sanity():
        print(line)
    target(16, 5 if args.quick else repeats)
    scaling(sizes, per_size, with_gc_off=not args.quick)
    products([16] if args.quick else [32, 40], 3 if args.quick else 5)
    print(f"\nload average at end (1, 5, 15 min): {os.getloadavg()}")


if __name__ == "__main__":
    main()
