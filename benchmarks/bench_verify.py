"""``symgrad verify`` on eight common hand-written backwards, at both orders, beside torch's own checks.

For each Function (Swish, Mish, HardSwish, tanh-GeLU, SwiGLU, RMSNorm, LayerNorm, softmax cross-entropy, written
here in this project's words) the script runs the command a user runs, ``symgrad verify FILE:Class --input ...``
(a fresh process: start-up included), and, in the same run, torch's ``gradcheck`` + ``gradgradcheck`` of the same
Function in a fresh process too. It prints wall and CPU seconds (medians of ``--repeats``, default 3) and the ratio
symgrad / torch. The checks differ in kind (a proof for every size and value against numbers at one point), so the
ratio says what the proof costs beside the check people already run; nothing here asserts a time.

    python benchmarks/bench_verify.py [--repeats N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

FUNCTIONS = """
import torch


class Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return g * (s + x * s * (1 - s))


class Mish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.tanh(torch.nn.functional.softplus(x))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = torch.tanh(torch.nn.functional.softplus(x))
        return g * (t + x * torch.sigmoid(x) * (1 - t * t))


class HardSwish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.clamp(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x < -3, 0, torch.where(x > 3, g, g * (2 * x + 3) / 6))


class TanhGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = torch.tanh(0.7978845608 * (x + 0.044715 * x**3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 0.134145 * x * x))


class SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * torch.sigmoid(a) * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        s = torch.sigmoid(a)
        return g * b * (s + a * s * (1 - s)), g * a * s


class RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)  # recomputed: a saved one is a constant twice over
        xhat = x * rstd
        gw = g * w
        gx = rstd * (gw - xhat * (gw * xhat).mean(-1, keepdim=True))
        return gx, (g * xhat).sum(0)


class LayerNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        rstd = 1 / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
        xhat = (x - x.mean(-1, keepdim=True)) * rstd
        return rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))


class SoftmaxCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, y):
        ctx.save_for_backward(z, y)
        return -torch.log_softmax(z, -1).gather(1, y[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        z, y = ctx.saved_tensors
        p = torch.softmax(z, -1)
        picked = torch.zeros_like(p).scatter(1, y[:, None], 1.0)
        return g * (p - picked) / p.shape[0], None
"""

# name: (the command's inputs, torch's example inputs as Python code)
CASES = {
    "Swish": (["--input", "x=m,n"], "(torch.randn(3, 5, dtype=D, requires_grad=True),)"),
    "Mish": (["--input", "x=m,n"], "(torch.randn(3, 5, dtype=D, requires_grad=True),)"),
    "HardSwish": (["--input", "x=m,n"], "(4 * torch.randn(3, 5, dtype=D, requires_grad=True),)"),
    "TanhGelu": (["--input", "x=m,n"], "(torch.randn(3, 5, dtype=D, requires_grad=True),)"),
    "SwiGLU": (
        ["--input", "a=m,n", "--input", "b=m,n"],
        "(torch.randn(3, 5, dtype=D, requires_grad=True), torch.randn(3, 5, dtype=D, requires_grad=True))",
    ),
    "RMSNorm": (
        ["--input", "x=m,n", "--input", "w=n"],
        "(torch.randn(3, 5, dtype=D, requires_grad=True), torch.randn(5, dtype=D, requires_grad=True))",
    ),
    "LayerNorm": (["--input", "x=m,n"], "(torch.randn(3, 5, dtype=D, requires_grad=True),)"),
    "SoftmaxCrossEntropy": (
        ["--input", "z=3,c", "--value", "y=[0, 3, 1]"],
        "(torch.randn(3, 4, dtype=D, requires_grad=True), torch.tensor([0, 3, 1]))",
    ),
}

TORCH_CHECK = """
import sys, torch
sys.path.insert(0, {folder!r})
import functions
D = torch.float64
torch.manual_seed(0)
inputs = {inputs}
f = functions.{name}.apply
assert torch.autograd.gradcheck(f, inputs) and torch.autograd.gradgradcheck(f, inputs)
"""


def timed(command: list[str]) -> tuple[float, float, int]:
    """Wall and CPU seconds of one child process, and its exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    code = subprocess.run(command, capture_output=True, check=False).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "functions.py"
        source.write_text(textwrap.dedent(FUNCTIONS))
        header = f"{'Function':22} {'verdict':>7} {'symgrad wall':>12} {'cpu':>6} {'torch wall':>10} {'cpu':>6}"
        print(f"{header} {'ratio':>6}")
        for name, (options, inputs) in CASES.items():
            ours, theirs, codes = [], [], set()
            for _ in range(repeats):
                wall, cpu, code = timed([sys.executable, "-m", "symgrad", "verify", f"{source}:{name}", *options])
                ours.append((wall, cpu))
                codes.add(code)
                check = TORCH_CHECK.format(folder=folder, inputs=inputs, name=name)
                wall, cpu, failed = timed([sys.executable, "-c", check])
                theirs.append((wall, cpu))
                codes.add(10 + failed if failed else code)  # torch's check failing too is a finding
            ow, oc = (statistics.median(t[k] for t in ours) for k in (0, 1))
            tw, tc = (statistics.median(t[k] for t in theirs) for k in (0, 1))
            found = codes.pop() if len(codes) == 1 else -1
            verdict = {0: "proved", 1: "WRONG", 2: "n/c"}.get(found, "torch!" if found >= 10 else "mixed")
            print(f"{name:22} {verdict:>7} {ow:12.2f} {oc:6.2f} {tw:10.2f} {tc:6.2f} {ow / tw:6.2f}")


if __name__ == "__main__":
    main()
