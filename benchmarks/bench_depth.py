"""Depth: how symgrad's time and text grow with the number of layers of a small GPT.

One command, from the repository root: ``python benchmarks/bench_depth.py`` (about a minute on two cores).

For 1, 2 and 3 layers of the small GPT of ``tests/public_models.py`` (embedding 16, 2 heads, 8 positions, batch 2,
float64), it times ``sg.trace`` at a fixed size, ``backward()`` of the traced loss, ``sg.trace`` with a symbolic
batch, ``sg.law`` of every parameter, and ``sg.codegen`` of the drop-in module, and measures the text of the law
listing and of the emitted module. Each number is printed with its ratio to the 1-layer one: growth with depth is
linear when the ratios are about the number of layers. torch's own forward + backward of the same model is timed
side by side (median of 20), as the scale of what is being derived.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

import symgrad as sg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import public_models as pm


def _seconds(run, repeats: int = 1) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(layers: int) -> dict[str, float]:
    torch.manual_seed(0)
    model = pm.GPT(pm.GPTConfig(n_layer=layers, n_embd=16, n_head=2, block_size=8, vocab_size=11)).double()
    generator = torch.Generator().manual_seed(0)
    idx, targets = torch.randint(0, 11, (2, 8), generator=generator), torch.randint(0, 11, (2, 8), generator=generator)

    def loss(idx, targets):
        return model(idx, targets)[1]

    out: dict[str, float] = {}
    start = time.perf_counter()
    fixed = sg.trace(loss, idx, targets)
    out["trace s"] = time.perf_counter() - start
    out["backward s"] = _seconds(fixed.output.backward)
    dynamic = {"idx": {0: "b"}, "targets": {0: "b"}}
    start = time.perf_counter()
    traced = sg.trace(loss, idx, targets, dynamic_shapes=dynamic)
    out["symbolic trace s"] = time.perf_counter() - start
    wrt = list(traced.parameters.values())
    start = time.perf_counter()
    laws = sg.law(traced.output, wrt)
    out["law s"] = time.perf_counter() - start
    out["listing chars"] = len(sg.listing([(f"grad_{p.name}", g) for p, g in zip(wrt, laws)]).text())
    start = time.perf_counter()
    source = sg.codegen(traced, name="Loss")
    out["codegen s"] = time.perf_counter() - start
    out["module chars"] = len(source)
    out["torch step ms"] = 1e3 * _seconds(lambda: loss(idx, targets).backward(), repeats=20)
    return out


def main() -> None:
    torch.set_default_dtype(torch.float64)
    rows = {layers: measure(layers) for layers in (1, 2, 3)}
    keys = list(rows[1])
    print(f"{'layers':>8}" + "".join(f"{k:>22}" for k in keys))
    for layers, row in rows.items():
        cells = "".join(f"{row[k]:>12.3g} ({row[k] / rows[1][k]:4.1f}×)" for k in keys)
        print(f"{layers:>8}{cells}")
    print("(×: the ratio to 1 layer; linear growth is about the number of layers)")


if __name__ == "__main__":
    main()
