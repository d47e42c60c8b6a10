"""Scale: symgrad's cost against a model's parameter count, width and depth, up to GPT-2 small and ResNet-18.

One command, from the repository root: ``python benchmarks/bench_scale.py`` (about 15 minutes on two cores, and
up to 8 GB of memory for the proofs at full size). ``--quick`` runs the width sweep at three widths, depths 1 and 4,
and no proof or training step; ``--no-prove`` and ``--no-step`` leave out those stages.

Each configuration runs in a fresh process, which measures, in CPU seconds of its own:

- ``trace``: ``sg.trace`` of the loss at a symbolic batch (GPT: 64 tokens; ResNet: 224×224 pictures);
- ``law``: ``sg.law`` of every parameter;
- ``compile``: ``sg.codegen`` and loading the emitted module (its length in lines is printed too);
- ``prove``: ``sg.prove`` with its default budget;
- ``memory``: the peak resident memory beyond the model's own after compile, and after the proof;
- ``step``: for the full-size models, one float32 training step of the drop-in against autograd's (GPT: batch
  1 × 64; ResNet: batch 2), medians over alternating rounds, and the bytes each saves for its backward.

Configurations: the GPT of ``tests/public_models.py`` (nanoGPT's GPT-2 vocabulary of 50257 and block of 1024) at one
layer and widths 64 → 768, and at width 768 and depths 1 → 12 (12 × 768 is GPT-2 small, 124M parameters); and the
ResNet-18 of ``tests/public_models.py``. After the table it prints the fitted slope of log time against log
parameters over the width sweep (0: the cost does not depend on the parameters; 1: it grows with them), and the
growth of each stage from 1 to the deepest depth beside the depth ratio. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEP_ROUNDS = 9  # rounds alternating autograd's step and the drop-in's, at full size


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def _build(kind: str, width: int, depth: int):
    """The model, its loss, example inputs for the trace and for a step, and the trace's dynamic shapes."""
    import torch

    sys.path.insert(0, str(HERE.parent / "tests"))
    import public_models as pm

    torch.manual_seed(0)
    if kind == "gpt":
        heads = max(1, width // 64)
        model = pm.GPT(pm.GPTConfig(n_layer=depth, n_head=heads, n_embd=width, vocab_size=50257, block_size=1024))

        def loss(idx, targets):
            return model(idx, targets)[1]

        example = (torch.randint(0, 50257, (2, 64)), torch.randint(0, 50257, (2, 64)))
        step = (torch.randint(0, 50257, (1, 64)), torch.randint(0, 50257, (1, 64)))
        dynamic = {"idx": {0: "b"}, "targets": {0: "b"}}
    else:
        model = pm.ResNet(width=width)

        def loss(x, y):
            return torch.nn.functional.cross_entropy(model(x), y)

        example = (torch.randn(2, 3, 224, 224), torch.randint(0, 1000, (2,)))
        step = (torch.randn(2, 3, 224, 224), torch.randint(0, 1000, (2,)))
        dynamic = {"x": {0: "b"}, "y": {0: "b"}}
    return model, loss, example, step, dynamic


def _steps(model, loss, drop_in, inputs) -> dict:
    """One float32 training step of autograd and of the drop-in, alternating: median seconds, ratio, saved bytes."""
    from bench_models import saved_bytes  # the same count as the model benchmarks'

    parameters = list(model.parameters())

    def step(call) -> float:
        for p in parameters:
            p.grad = None
        start = time.perf_counter()
        call(*inputs).backward()
        return time.perf_counter() - start

    step(loss), step(drop_in)  # warm-up
    ours, theirs = [], []
    for _ in range(STEP_ROUNDS):
        theirs.append(step(loss))
        ours.append(step(drop_in))
    ratios = sorted(o / t for o, t in zip(ours, theirs))
    owned = [*model.parameters(), *model.buffers()]
    return {
        "autograd_s": statistics.median(theirs),
        "symgrad_s": statistics.median(ours),
        "ratio": statistics.median(ratios),
        "ratio_spread": (ratios[0], ratios[-1]),
        "saved_ratio": saved_bytes(drop_in, inputs, owned) / max(1, saved_bytes(loss, inputs, owned)),
    }


def run_one(kind: str, width: int, depth: int, prove: bool, step: bool) -> dict:
    """Measure one configuration in this process (see the module docstring)."""
    import torch

    import symgrad as sg
    from symgrad.emit import load_source

    torch.set_num_threads(1)
    model, loss, example, step_inputs, dynamic = _build(kind, width, depth)
    out: dict = {"kind": kind, "width": width, "depth": depth, "parameters": sum(p.numel() for p in model.parameters())}
    base = _peak_gb()
    clock = time.process_time()
    traced = sg.trace(loss, *example, dynamic_shapes=dynamic, modules={"model": model})
    out["trace"], clock = time.process_time() - clock, time.process_time()
    wrt = list(traced.parameters.values())
    laws = sg.law(traced.output, wrt)
    out["law"], clock = time.process_time() - clock, time.process_time()
    source = sg.codegen(traced, name="Loss")
    module = load_source(source, "Loss")
    out["compile"], clock = time.process_time() - clock, time.process_time()
    out["lines"] = source.count("\n")
    out["memory"] = _peak_gb() - base
    if prove:
        try:
            proof = sg.prove(traced.output, wrt, laws=laws)
            out["proved"] = bool(proof.held)
        except sg.SymgradError as error:
            out["proved"] = f"refused: {str(error)[:120]}"
        out["prove"] = time.process_time() - clock
        out["memory_prove"] = _peak_gb() - base
    if step:
        drop_in = module.LossModule(traced.model).train()
        out["step"] = _steps(model, loss, drop_in, step_inputs)
    return out


def _configurations(quick: bool) -> list[tuple[str, int, int, bool]]:
    """(kind, width, depth, full size) in the order they run."""
    widths = (64, 256, 768) if quick else (64, 128, 256, 512, 768)
    depths = (1, 4) if quick else (1, 2, 4, 8, 12)
    out = [("gpt", w, 1, False) for w in widths]
    out += [("gpt", 768, d, d == 12) for d in depths if d != 1]
    if not quick:
        out.append(("resnet", 64, 18, True))
    return out


def _fit_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(max(y, 1e-6)) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-prove", action="store_true")
    parser.add_argument("--no-step", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, width, depth, prove, step = json.loads(args.child)
        print(json.dumps(run_one(kind, width, depth, prove, step)))
        return
    header = f"{'model':18} {'params':>8} {'trace':>6} {'law':>6} {'compile':>7} {'lines':>6} {'mem GB':>6}"
    print(f"{header} {'prove':>6} {'mem GB':>6} {'step ×':>7} {'saved ×':>7}   (CPU s; ratios to autograd)")
    rows = []
    for kind, width, depth, full in _configurations(args.quick):
        prove = not args.quick and not args.no_prove and (full or depth == 1)
        step = not args.quick and not args.no_step and full
        child = json.dumps([kind, width, depth, prove, step])
        done = subprocess.run([sys.executable, __file__, "--child", child], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"{kind} {width}×{depth}: failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        name = f"GPT {depth}×{width}" if kind == "gpt" else "ResNet-18"
        proof = f"{row['prove']:6.1f} {row['memory_prove']:6.2f}" if "prove" in row else f"{'':6} {'':6}"
        if "prove" in row and row["proved"] is not True:
            proof += f" ({row['proved']})"
        steps = f"{row['step']['ratio']:7.2f} {row['step']['saved_ratio']:7.2f}" if "step" in row else ""
        print(
            f"{name:18} {row['parameters'] / 1e6:7.1f}M {row['trace']:6.1f} {row['law']:6.2f} {row['compile']:7.1f} "
            f"{row['lines']:6d} {row['memory']:6.2f} {proof} {steps}",
            flush=True,
        )
    wide = [r for r in rows if r["kind"] == "gpt" and r["depth"] == 1]
    if len(wide) > 1:
        params = [r["parameters"] for r in wide]
        for stage in ("trace", "law", "compile"):
            slope = _fit_slope(params, [r[stage] for r in wide])
            growth = wide[-1][stage] / max(wide[0][stage], 1e-6)
            print(f"width sweep, {stage}: slope {slope:.2f} against parameters; {growth:.2f}× from the narrowest")
    deep = sorted((r for r in rows if r["kind"] == "gpt" and r["width"] == 768), key=lambda r: r["depth"])
    if len(deep) > 1:
        ratio = deep[-1]["depth"] / deep[0]["depth"]
        for stage in ("trace", "law", "compile", "lines"):
            growth = deep[-1][stage] / max(deep[0][stage], 1e-6)
            print(f"depth 1 → {deep[-1]['depth']}, {stage}: {growth:.2f}× (depth {ratio:.0f}×)")


if __name__ == "__main__":
    main()
