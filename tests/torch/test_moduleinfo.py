"""PyTorch's own ModuleInfo samples through ``sg.trace``: each nn module, built as torch's tests build it (float64,
training mode), traced on its sample inputs, and compared with torch: the outputs, and the VJP with respect to
every parameter and every input that requires grad, to rtol = atol = 1e-7.

Each module gets one status: ``pass`` (every sample agrees), ``refused`` or ``partial`` (some samples refused in one
line, ``sg.UnsupportedError``, the rest agree: xfail), ``crash`` (any other exception: a bug, which fails),
``differs`` (a number or shape differs: fails), ``skipped`` (no sample within the budget).

CI runs the smallest sample of each module within 300 numbers (inputs and parameters together), stopping a sample
after 3 s; ``SYMGRAD_MODULEINFO_FULL=1`` runs up to two samples of each within 2,000 numbers (a sample stopped
after 60 s). ``python tests/torch/test_moduleinfo.py [--full] [names...]`` prints the table.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # torch's testing internals import it

import symgrad as sg  # noqa: E402
from symgrad.core.budget import time_limit  # noqa: E402

RTOL = ATOL = 1e-7


@dataclass(frozen=True)
class Budget:
    samples: int
    max_numel: int
    sample_seconds: float


CI = Budget(samples=1, max_numel=300, sample_seconds=3.0)
FULL = Budget(samples=2, max_numel=2000, sample_seconds=60.0)
BUDGET = FULL if os.environ.get("SYMGRAD_MODULEINFO_FULL", "") == "1" else CI


def _module_db() -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frozen = torch.backends.flags_frozen()
        from torch.testing._internal.common_modules import module_db

        flags = getattr(torch.backends.flags_frozen, "__globals__", {})
        if not frozen and "__allow_nonbracketed_mutation_flag" in flags:
            flags["__allow_nonbracketed_mutation_flag"] = True
    return [m for m in module_db if not m.name.startswith("nn.Lazy")]


MODULES = _module_db()


class Called(torch.nn.Module):
    """The module called with the sample's non-tensor arguments; its tensor arguments are the trace's inputs."""

    def __init__(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        super().__init__()
        self.m = module
        self.args, self.kwargs = args, kwargs

    def forward(self, *tensors: torch.Tensor) -> Any:
        given = iter(tensors)
        args = [_rebuilt(a, given) for a in self.args]
        kwargs = {k: _rebuilt(v, given) for k, v in self.kwargs.items()}
        return self.m(*args, **kwargs)


def _tensors(value: Any) -> list[torch.Tensor]:
    """The tensors in a sample's argument, in order, through tuples and lists (an LSTM cell's (h, c))."""
    if torch.is_tensor(value):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _rebuilt(value: Any, given: Any) -> Any:
    """``value`` with its tensors replaced, in order, by the ones ``given`` yields."""
    if torch.is_tensor(value):
        return next(given)
    if isinstance(value, (tuple, list)) and _tensors(value):
        return type(value)(_rebuilt(v, given) for v in value)
    return value


@dataclass
class Outcome:
    kind: str
    detail: str = ""


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flat(x)]
    return [out]


def _samples(info: Any, budget: Budget) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        samples = info.module_inputs_func(info, device="cpu", dtype=torch.float64, requires_grad=True, training=True)
    sized = []
    for sample in samples:
        numel = _numel(info, sample)
        if numel is not None and numel <= budget.max_numel:
            sized.append((numel, sample))
    sized.sort(key=lambda x: x[0])
    return [s for _, s in sized[: budget.samples]]


def _build(info: Any, sample: Any) -> torch.nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = info.module_cls(*sample.constructor_input.args, **sample.constructor_input.kwargs)
    return module.to(torch.float64).train()


def _numel(info: Any, sample: Any) -> int | None:
    try:
        torch.manual_seed(0)
        module = _build(info, sample)
    except Exception:
        return None
    tensors = _tensors([*sample.forward_input.args, *sample.forward_input.kwargs.values()])
    return sum(t.numel() for t in tensors) + sum(p.numel() for p in module.parameters())


def run_sample(info: Any, sample: Any) -> Outcome:
    torch.manual_seed(0)
    module = _build(info, sample)
    args, kwargs = tuple(sample.forward_input.args), dict(sample.forward_input.kwargs)
    called = Called(module, args, kwargs)
    tensors = _tensors([*args, *kwargs.values()])
    leaves = [t.detach().clone().requires_grad_(t.requires_grad and t.is_floating_point()) for t in tensors]
    state = torch.random.get_rng_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = _flat(called(*leaves))
        except Exception as error:
            return Outcome("skipped", f"torch raises {type(error).__name__}: {error}")
        torch.random.set_rng_state(state)
        try:
            traced = sg.trace(called, *leaves)
        except sg.UnsupportedError as error:
            return Outcome("refused", f"trace: {error}")
        except Exception as error:
            return Outcome("crash", f"trace: {type(error).__name__}: {error}")
    ours = _flat(traced.output)
    if len(ours) != len(expected):
        return Outcome("differs", f"{len(ours)} outputs, torch {len(expected)}")
    try:
        for k, (s, t) in enumerate(zip(ours, expected)):
            if not torch.is_tensor(t):
                continue
            if tuple(s.shape) != tuple(t.shape):
                return Outcome("differs", f"output {k}: shape {tuple(s.shape)}, torch {tuple(t.shape)}")
            got = np.asarray(s.tolist(), dtype=float).reshape(tuple(t.shape))
            if not np.allclose(got, t.detach().numpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
                return Outcome("differs", f"output {k}: max difference {np.nanmax(np.abs(got - t.detach().numpy()))}")
        picked = [k for k, t in enumerate(expected) if torch.is_tensor(t) and t.requires_grad]
        wrt_torch = [p for _, p in module.named_parameters()] + [x for x in leaves if x.requires_grad]
        wrt_ours = list(traced.parameters.values()) + [s for s, x in zip(traced.inputs, leaves) if x.requires_grad]
        if not picked or not wrt_torch:
            return Outcome("pass", "forward only")
        generator = torch.Generator().manual_seed(1)
        vs = [torch.randn(expected[k].shape, generator=generator, dtype=torch.float64) for k in picked]
        theirs = torch.autograd.grad([expected[k] for k in picked], wrt_torch, vs, allow_unused=True)
        given = [sg.tensor(v.numpy() if v.numel() else np.zeros(tuple(v.shape)), dtype="float64") for v in vs]
        grads = sg.vjp([ours[k] for k in picked], wrt_ours, given)
        grads = (grads,) if isinstance(grads, sg.Tensor) else grads
        for k, (mine, real, target) in enumerate(zip(grads, theirs, wrt_torch)):
            real = torch.zeros_like(target) if real is None else real
            got = np.asarray(mine.tolist(), dtype=float).reshape(tuple(target.shape))
            if not np.allclose(got, real.numpy(), rtol=RTOL, atol=ATOL, equal_nan=True):
                return Outcome("differs", f"vjp {k}: max difference {np.nanmax(np.abs(got - real.numpy()))}")
    except sg.UnsupportedError as error:
        return Outcome("refused", f"vjp: {error}")
    except sg.WorkBudgetError as error:
        return Outcome("slow", str(error))
    except Exception as error:
        return Outcome("crash", f"compare: {type(error).__name__}: {error}")
    return Outcome("pass")


@dataclass
class ModuleResult:
    name: str
    status: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def reason(self) -> str:
        want = {"partial": "refused"}.get(self.status, self.status)
        found = next((o for o in self.outcomes if o.kind == want), None)
        return " ".join((found.detail if found else "").split())[:300]


def run_module(info: Any, budget: Budget = BUDGET) -> ModuleResult:
    start = time.perf_counter()
    result = ModuleResult(info.name, "pass")
    for sample in _samples(info, budget):
        try:
            with time_limit(budget.sample_seconds, "the sample", "a larger budget", report=None):
                outcome = run_sample(info, sample)
        except sg.WorkBudgetError as error:
            outcome = Outcome("slow", str(error))
        result.outcomes.append(outcome)
    result.seconds = time.perf_counter() - start
    kinds = {o.kind for o in result.outcomes}
    for status in ("crash", "differs"):
        if status in kinds:
            result.status = status
            break
    else:
        if "refused" in kinds:
            result.status = "partial" if "pass" in kinds else "refused"
        elif "pass" not in kinds:
            result.status = "skipped"
    return result


@pytest.mark.parametrize("info", MODULES, ids=[m.name for m in MODULES])
def test_moduleinfo(info: Any) -> None:
    result = run_module(info)
    if result.status in ("crash", "differs"):
        pytest.fail(f"{result.status}: {result.reason()}", pytrace=False)
    if result.status in ("refused", "partial"):
        pytest.xfail(f"{result.status}: {result.reason()}")
    if result.status == "skipped":
        pytest.skip("; ".join(o.detail for o in result.outcomes)[:300] or "no sample within the budget")


def main(argv: list[str]) -> int:
    budget = FULL if "--full" in argv else BUDGET
    wanted = [a for a in argv if not a.startswith("-")]
    totals: dict[str, int] = {}
    start = time.perf_counter()
    for info in MODULES:
        if wanted and info.name not in wanted:
            continue
        result = run_module(info, budget)
        totals[result.status] = totals.get(result.status, 0) + 1
        reason = "" if result.status == "pass" else result.reason()
        print(
            f"| {info.name} | {result.status} | {len(result.outcomes)} | {result.seconds:.1f} | {reason} |", flush=True
        )
    print("totals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())))
    print(f"{time.perf_counter() - start:.1f} s ({'full' if budget is FULL else 'CI'} mode)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
