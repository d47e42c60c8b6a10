"""Whole models: one training step (forward + backward) of symgrad's drop-in against autograd, side by side.

One command, from the repository root: ``python benchmarks/bench_models.py`` (a few minutes on two cores);
``--quick`` runs one batch size and dtype, ``--torch-compile`` adds ``torch.compile`` of the same model and of its
drop-in, side by side (their first calls compile, which takes minutes on a CPU).

Each model is traced at a symbolic batch (``sg.trace(..., dynamic_shapes=...)``) and compiled with ``sg.compile``;
its ``LossModule`` runs the model's own parameters through the emitted ``autograd.Function``. Models:

- ``mlp``: Linear(64 → 256) → LayerNorm → GELU → Linear(256 → 10) → cross-entropy;
- ``cnn``: Conv2d(3 → 16, 3×3) → BatchNorm2d (training) → ReLU → max_pool2d → Linear → cross-entropy, 3×16×16;
- ``gpt block``: a small GPT (``tests/public_models.py``) of one layer, width 256, 4 heads, sequence 64;
- ``llama block``: the Llama-style block of ``tests/public_models.py``, width 256, sequence 64.

For each model, batch size and dtype it prints the median time of a step (one thread) for autograd and for the
drop-in, their ratio with its min / median / max over rounds that alternate the two (this machine is noisy), and
the bytes each saves for the backward, measured with ``torch.autograd.graph.saved_tensors_hooks`` (each storage
once, without the model's own parameters and buffers). ``one pass`` is the drop-in's ``forward_and_backward``
(loss and ``.grad`` in one call, without autograd's graph) over autograd's time. A ratio below 1 means the drop-in
is faster or saves less. The gradients are compared first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812 - as torch code writes it
from torch import nn

import symgrad as sg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import public_models as pm

ROUNDS, STEPS = 15, 5  # rounds alternate autograd and the drop-in; each times STEPS steps


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(64, 256), nn.LayerNorm(256), nn.Linear(256, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.gelu(self.norm(self.fc1(x)))), y)


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm, self.fc = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.Linear(16 * 8 * 8, 10)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.norm(self.conv(x))), 2)
        return F.cross_entropy(self.fc(h.flatten(1)), y)


class GPTLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gpt = pm.GPT(pm.GPTConfig(block_size=64, vocab_size=64, n_layer=1, n_head=4, n_embd=256))

    def forward(self, idx, targets):
        return self.gpt(idx, targets)[1]


class LlamaLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = pm.TransformerBlock(dim=256, n_heads=4, max_seq_len=64)

    def forward(self, x):
        return self.block(x).square().mean()


def _data(name: str, batch: int, dtype: torch.dtype, seed: int) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    if name == "mlp":
        return torch.randn(batch, 64, dtype=dtype, generator=generator), torch.randint(0, 10, (batch,))
    if name == "cnn":
        return torch.randn(batch, 3, 16, 16, dtype=dtype, generator=generator), torch.randint(0, 10, (batch,))
    if name == "gpt block":
        tokens = torch.randint(0, 64, (batch, 64), generator=generator)
        return tokens, torch.randint(0, 64, (batch, 64), generator=generator)
    return (torch.randn(batch, 64, 256, dtype=dtype, generator=generator),)


MODELS = {"mlp": MLP, "cnn": CNN, "gpt block": GPTLoss, "llama block": LlamaLoss}


def _step(call, inputs, parameters) -> None:
    for p in parameters:
        p.grad = None
    out = call(*inputs)
    if getattr(call, "__name__", "") != "forward_and_backward":  # which fills .grad itself
        out.backward()


def saved_bytes(call, inputs, owned_tensors) -> int:
    """Bytes of the tensors the step saves for its backward, each storage once, without ``owned_tensors`` (the
    model's own parameters and buffers: a saved reference to a weight holds no memory of its own)."""
    owned = {t.untyped_storage().data_ptr() for t in owned_tensors}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in owned:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = call(*inputs)
    del loss
    return sum(seen.values())


def measure(name: str, batch: int, dtype: torch.dtype, with_compile: bool) -> dict:
    torch.manual_seed(0)
    model = MODELS[name]().to(dtype).train()
    twin = MODELS[name]().to(dtype).train()
    twin.load_state_dict(model.state_dict())
    inputs = _data(name, batch, dtype, seed=1)
    names = ["idx", "targets"] if name == "gpt block" else ["x", "y"][: len(inputs)]
    traced = sg.trace(model, *_data(name, 4, dtype, seed=2), dynamic_shapes={n: {0: "b"} for n in names})
    drop_in = sg.compile(traced, name="Loss").LossModule(twin)
    calls = {
        "autograd": (model, list(model.parameters())),
        "symgrad": (drop_in, list(twin.parameters())),
        "one pass": (drop_in.forward_and_backward, list(twin.parameters())),
    }
    if with_compile:  # each under torch.compile: the model (AOTAutograd's backward) and the drop-in (symgrad's)
        calls["torch.compile"] = (torch.compile(model), list(model.parameters()))
        calls["compiled drop-in"] = (torch.compile(drop_in), list(twin.parameters()))
    grads = {}
    for label, (call, parameters) in calls.items():
        _step(call, inputs, parameters)
        grads[label] = [p.grad.clone() for p in parameters]
    tolerance = {"rtol": 1e-3, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-12}
    for label in ("symgrad", "one pass", "compiled drop-in"):
        for a, b in zip(grads["autograd"], grads.get(label, grads["autograd"]), strict=True):
            torch.testing.assert_close(a, b, **tolerance)
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(ROUNDS):
        for label, (call, parameters) in calls.items():
            start = time.perf_counter()
            for _ in range(STEPS):
                _step(call, inputs, parameters)
            times[label].append((time.perf_counter() - start) / STEPS)
    out = {label: statistics.median(t) for label, t in times.items()}
    ratios = sorted(s / a for s, a in zip(times["symgrad"], times["autograd"]))
    out["ratio"] = (ratios[0], statistics.median(ratios), ratios[-1])
    out["one pass"] = statistics.median(s / a for s, a in zip(times["one pass"], times["autograd"]))
    if with_compile:
        pairs = zip(times["compiled drop-in"], times["torch.compile"])
        out["compiled ratio"] = sorted(s / a for s, a in pairs)
    models = {"autograd": model, "symgrad": twin}
    out["saved"] = {
        label: saved_bytes(calls[label][0], inputs, [*m.parameters(), *m.buffers()]) for label, m in models.items()
    }
    return out


class _NativeLayerNorm(torch.autograd.Function):
    """The floor of any Python autograd.Function for a layer norm: autograd's own two kernels and nothing else."""

    @staticmethod
    def forward(ctx, x, w, b):
        out, mean, rstd = torch.ops.aten.native_layer_norm(x, tuple(w.shape), w, b, 1e-5)
        ctx.save_for_backward(x, w, b, mean, rstd)
        return out

    @staticmethod
    def backward(ctx, g):
        x, w, b, mean, rstd = ctx.saved_tensors
        return torch.ops.aten.native_layer_norm_backward(g, x, tuple(w.shape), mean, rstd, w, b, [True] * 3)


def measure_layer_norm(batch: int, dtype: torch.dtype) -> dict:
    """The layer-norm layer alone: forward and backward for its input, weight and bias (width 256), autograd's
    ``F.layer_norm`` against the emitted ``autograd.Function`` of the same call, each given the same cotangent."""
    width = 256
    x, w, b = sg.symbols("x", (sg.dims("m")[0], width)), sg.symbols("w", (width,)), sg.symbols("c", (width,))
    module = sg.compile(sg.torch.nn.functional.layer_norm(x, (width,), w, b), [x, w, b], style="autograd_function")
    generator = torch.Generator().manual_seed(0)
    values = [torch.randn(shape, dtype=dtype, generator=generator) for shape in ((batch, width), (width,), (width,))]
    cotangent = torch.randn(batch, width, dtype=dtype, generator=generator)
    leaves = [v.requires_grad_() for v in values]

    def step(function) -> None:
        for leaf in leaves:
            leaf.grad = None
        function(*leaves).backward(cotangent)

    calls = {
        "autograd": lambda a, w_, b_: F.layer_norm(a, (width,), w_, b_),
        "symgrad": module.apply,
        "floor": _NativeLayerNorm.apply,
    }
    grads = {}
    for label, call in calls.items():
        step(call)
        grads[label] = [leaf.grad.clone() for leaf in leaves]
    tolerance = {"rtol": 1e-3, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-12}
    for a, c in zip(grads["autograd"], grads["symgrad"], strict=True):
        torch.testing.assert_close(a, c, **tolerance)
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(ROUNDS):
        for label, call in calls.items():
            start = time.perf_counter()
            for _ in range(STEPS * 4):
                step(call)
            times[label].append((time.perf_counter() - start) / (STEPS * 4))
    out = {label: statistics.median(t) for label, t in times.items()}
    ratios = sorted(a / c for a, c in zip(times["symgrad"], times["autograd"]))
    out["ratio"] = (ratios[0], statistics.median(ratios), ratios[-1])
    out["floor"] = statistics.median(f / c for f, c in zip(times["floor"], times["autograd"]))
    saved = {label: saved_bytes(calls[label], leaves, leaves) for label in ("autograd", "symgrad")}
    out["saved"] = saved
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="batch 64 in float32 only")
    parser.add_argument("--torch-compile", action="store_true", help="also time torch.compile of each model")
    every = [*MODELS, "layer norm"]
    parser.add_argument("--models", nargs="*", default=every, help=f"any of {', '.join(every)}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = [(64, torch.float32)] if args.quick else [(256, torch.float32), (64, torch.float32), (64, torch.float64)]
    header = f"{'model':12} {'batch':>5} {'dtype':>7} {'autograd ms':>11} {'symgrad ms':>10}"
    header += f" {'time ratio min/med/max':>24} {'saved ratio':>11} {'one pass':>8}"
    if args.torch_compile:
        header += f" {'torch.compile ms':>16} {'compiled drop-in ratio min/med/max':>34}"
    print(header)
    for name in args.models:
        for batch, dtype in settings:
            if name == "layer norm":
                m = measure_layer_norm(batch, dtype)
            else:
                m = measure(name, batch, dtype, args.torch_compile)
            low, mid, high = m["ratio"]
            saved = m["saved"]["symgrad"] / max(m["saved"]["autograd"], 1)
            line = f"{name:12} {batch:5d} {str(dtype).replace('torch.', ''):>7} {m['autograd'] * 1e3:11.2f}"
            line += f" {m['symgrad'] * 1e3:10.2f} {low:8.2f} {mid:7.2f} {high:7.2f} {saved:11.2f}"
            line += f" {m['one pass']:8.2f}" if "one pass" in m else f" {'-':>8}"
            if args.torch_compile and "torch.compile" in m:
                spread = m["compiled ratio"]
                line += f" {m['torch.compile'] * 1e3:16.2f} {spread[0]:18.2f} {statistics.median(spread):7.2f}"
                line += f" {spread[-1]:7.2f}"
            elif args.torch_compile:
                line += f" {'-':>16} {'-':>34}"
            print(line, flush=True)
            if "floor" in m:
                print(f"{'':12} (a minimal Python autograd.Function with autograd's own two kernels: {m['floor']:.2f})")
    print("(ratios: symgrad's drop-in over autograd; below 1 is faster, or saves fewer bytes; the compiled ratio is")
    print(" the drop-in under torch.compile over the model under torch.compile)")


if __name__ == "__main__":
    main()
