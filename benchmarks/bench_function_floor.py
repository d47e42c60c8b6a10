"""What bounds an emitted torch.autograd.Function at small sizes: the same backward as a Python Function, as a
C++ Function, and as torch.autograd's own graph, side by side.

The case is the catalogue's tanh layer, out = tanh(W @ X + b), wrt W and b, forward + backward with a random
incoming gradient. Three ways:

* autograd: plain torch, whose graph runs C++ backward nodes (AddmmBackward, TanhBackward, ...);
* python Function: the module symgrad emits for it (``generated/tanh_layer.py``), through its ``apply``;
* C++ Function: the same kernels (``addmm``, ``tanh_backward``, ``mm``, ``sum``) in a ``torch::autograd::Function``
  built with ``torch.utils.cpp_extension.load_inline`` (needs a C++ compiler and ninja; the first build takes
  about 30 s and is cached by torch).

Medians of per-round ratios to autograd, rounds interleaved. Run: ``python benchmarks/bench_function_floor.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import timeit
from pathlib import Path

import torch
from torch.utils.cpp_extension import load_inline

ROOT = Path(__file__).resolve().parents[1]

CPP_SOURCE = r"""
#include <torch/extension.h>
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct TanhLayer : public torch::autograd::Function<TanhLayer> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor W, torch::Tensor X, torch::Tensor b) {
    auto out = torch::tanh(torch::addmm(b, W, X));
    ctx->save_for_backward({X, out});
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto t = at::tanh_backward(grads[0], saved[1]);
    return {t.mm(saved[0].t()), torch::Tensor(), t.sum({1}, true)};
  }
};

torch::Tensor apply(torch::Tensor W, torch::Tensor X, torch::Tensor b) { return TanhLayer::apply(W, X, b); }
"""


def emitted_module():
    spec = importlib.util.spec_from_file_location("tanh_layer", ROOT / "generated" / "tanh_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def forward_and_backward(python, cpp, W, X, b, g) -> dict:
    """The three ways to run forward + backward of the tanh layer on these tensors."""
    return {
        "autograd": lambda: torch.autograd.backward(torch.tanh(W @ X + b), g),
        "python": lambda: torch.autograd.backward(python.apply(W, X, b), g),
        "cpp": lambda: torch.autograd.backward(cpp.apply(W, X, b), g),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,32,256", help="comma-separated sizes (every dim), default 2,32,256")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    cpp = load_inline("symgrad_floor_tanh_layer", cpp_sources=[CPP_SOURCE], functions=["apply"], extra_cflags=["-O2"])
    print(f"torch {torch.__version__}; C++ Function built or loaded in {time.perf_counter() - started:.1f} s")
    python = emitted_module()
    print(f"{'size':>5} {'autograd µs':>12} {'python Function':>16} {'C++ Function':>13}")
    for size in (int(s) for s in args.sizes.split(",")):
        gen = torch.Generator().manual_seed(size)
        W = torch.randn(size, size, generator=gen, requires_grad=True)
        X = torch.randn(size, size, generator=gen)
        b = torch.randn(size, 1, generator=gen, requires_grad=True)
        g = torch.randn(size, size, generator=gen)
        ways = forward_and_backward(python, cpp, W, X, b, g)
        gradients = {}
        for name, way in ways.items():  # the same gradients, checked before anything is timed
            W.grad = b.grad = None
            way()
            gradients[name] = (W.grad.clone(), b.grad.clone())
        for name in ("python", "cpp"):
            for ours, theirs in zip(gradients[name], gradients["autograd"], strict=True):
                torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
        number = max(20, int(20000 / size))
        times: dict[str, list[float]] = {name: [] for name in ways}
        for round_ in range(args.rounds):
            order = list(ways)[round_ % 3 :] + list(ways)[: round_ % 3]
            for name in order:
                times[name].append(timeit.timeit(ways[name], number=number) / number * 1e6)
        ratio = {
            name: statistics.median(t / a for t, a in zip(times[name], times["autograd"], strict=True)) for name in ways
        }
        print(
            f"{size:>5} {statistics.median(times['autograd']):>12.1f} {ratio['python']:>15.2f}x {ratio['cpp']:>12.2f}x"
        )


if __name__ == "__main__":
    sys.exit(main())
