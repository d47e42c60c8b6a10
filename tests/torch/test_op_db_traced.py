"""Every entry of torch's ``op_db`` through ``sg.trace``: forward values and VJPs against torch, float64.

Where :mod:`test_opinfo` calls symgrad's own spelling of a chosen list of ops, this file takes *all* of torch's
OpInfo database and runs each entry's own callable (``op.op``, through its ``gradcheck_wrapper``) as user code
under :func:`symgrad.trace`: whatever torch calls inside it, symgrad follows or refuses. For up to
:data:`SAMPLES` float64 samples per entry it compares the forward outputs and a VJP with a seeded random
cotangent against ``torch.autograd.grad``. An entry ends as one status:

- ``pass``: every sample compared agrees;
- ``refused``/``partial``: every (some) sample is refused in one line (``sg.UnsupportedError``), the rest agree;
- ``skipped``: no sample was comparable (complex or integer-only entries, random outputs, samples torch rejects);
- ``differs``: a number, shape or dtype differs from torch (fails);
- ``crash``: any other exception (fails).

Entries that draw random numbers (``bernoulli``, ``normal``…) are compared by drawing under one seed on both sides.

CI runs :data:`CI_SHARE` of the entries, a fixed spread over the list, with :data:`SAMPLES` samples each;
``SYMGRAD_OP_DB_ALL=1`` runs every entry with every sample, and ``python tests/torch/test_op_db_traced.py
[--symbolic] [names...]`` prints the table with the counts (every sample too with ``SYMGRAD_OP_DB_ALL=1``).
``--symbolic`` (or ``SYMGRAD_OP_DB_SYMBOLIC=1``) also traces each sample with its first input's first size
symbolic and compares the law's numbers at the example's sizes: a trace may refuse a symbolic size in one line,
never differ.
"""

from __future__ import annotations

import functools
import os
import random
import resource
import signal
import sys
import time
import warnings
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")

import symgrad as sg  # noqa: E402

RTOL = ATOL = 1e-7  # as test_opinfo: torch's float64 Bessel and Airy functions are accurate to about 1e-8 only
SAMPLES = 3  # samples per entry in CI, spread over them (every sample with SYMGRAD_OP_DB_ALL=1)
MAX_NUMEL = 2000  # tensor entries in a sample's inputs and in torch's output
SAMPLE_CPU_SECONDS = 20.0  # a sample still running after this much CPU time is reported as slow (fails)
CI_SHARE = 12  # CI runs one entry in CI_SHARE
ALL = os.environ.get("SYMGRAD_OP_DB_ALL", "") == "1"
SYMBOLIC = os.environ.get("SYMGRAD_OP_DB_SYMBOLIC", "") == "1"


@functools.cache
def op_db() -> list[Any]:
    frozen = torch.backends.flags_frozen()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db as database
    finally:
        flags = getattr(torch.backends.flags_frozen, "__globals__", {})
        if not frozen and "__allow_nonbracketed_mutation_flag" in flags:
            flags["__allow_nonbracketed_mutation_flag"] = True
    return list(database)


def entry_id(op: Any) -> str:
    return f"{op.name}:{op.variant_test_name}" if op.variant_test_name else op.name


# ── comparing ──────────────────────────────────────────────────────────────────────────────────────────────
@dataclass
class Outcome:
    kind: str  # pass, refused, skipped, differs, crash, slow
    detail: str = ""


class MismatchError(Exception):
    pass


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (tuple, list)):
        return [y for x in value for y in _flatten(x)]
    return [value]


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for x in value for t in _tensors(x)]
    if isinstance(value, dict):
        return [t for x in value.values() for t in _tensors(x)]
    return []


def _compare(what: str, want: Any, got: Any) -> None:
    want_array = np.asarray(want, dtype=float)
    try:
        got_array = np.asarray(got, dtype=float).reshape(want_array.shape)
    except (TypeError, ValueError) as error:
        raise MismatchError(f"{what}: not numbers of shape {want_array.shape}: {error}") from None
    close = np.isclose(got_array, want_array, rtol=RTOL, atol=ATOL, equal_nan=True)
    # signed infinities must match exactly; isclose already does
    if not close.all():
        bad = tuple(int(i) for i in np.argwhere(~close)[0]) if close.ndim else ()
        raise MismatchError(
            f"{what}: {int((~close).sum())} of {close.size} entries differ, e.g. at {list(bad)}: "
            f"symgrad {got_array[bad]!r}, torch {want_array[bad]!r}"
        )


def _compare_output(what: str, real: Any, symbolic: Any) -> None:
    if not isinstance(real, torch.Tensor):
        if isinstance(symbolic, sg.Tensor):
            symbolic = symbolic.tolist()
        if isinstance(real, (int, float, bool)) and real != symbolic and not (real != real and symbolic != symbolic):
            raise MismatchError(f"{what}: {symbolic!r}, torch {real!r}")
        return
    if not isinstance(symbolic, sg.Tensor):
        kind = type(symbolic).__name__
        raise MismatchError(f"{what}: torch gives a tensor of shape {tuple(real.shape)}, symgrad a {kind}")
    if tuple(symbolic.shape) != tuple(real.shape):
        raise MismatchError(f"{what}: shape {tuple(symbolic.shape)}, torch {tuple(real.shape)}")
    dtype = str(real.dtype).removeprefix("torch.")
    if symbolic.dtype != dtype:
        raise MismatchError(f"{what}: dtype {symbolic.dtype}, torch {dtype}")
    if real.is_complex():
        return
    _compare(what, real.detach().double().tolist() if real.numel() else [], symbolic.tolist() if real.numel() else [])


# ── CPU-time limits ────────────────────────────────────────────────────────────────────────────────────────
class SampleTimeout(BaseException):
    pass


@contextmanager
def cpu_limit(seconds: float):
    """Raise :class:`SampleTimeout` after ``seconds`` of this process's CPU time (not the wall clock)."""

    def expire(signum: int, frame: Any) -> None:
        raise SampleTimeout

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# ── one sample ─────────────────────────────────────────────────────────────────────────────────────────────
def _swapped(value: Any, swap: dict[int, Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return swap.get(id(value), value)
    if type(value) in (list, tuple):
        return type(value)(_swapped(x, swap) for x in value)
    if isinstance(value, dict):
        return {k: _swapped(v, swap) for k, v in value.items()}
    return value


def _classify(error: BaseException, stage: str) -> Outcome:
    message = " ".join(f"{stage}: {type(error).__name__}: {error}".split())[:300]
    if isinstance(error, sg.UnsupportedError) or (isinstance(error, sg.SymgradError) and "bug" not in str(error)):
        return Outcome("refused", message)
    return Outcome("crash", message)


def _seeded_call(call: Callable, seed: int) -> Any:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return call()


def _same_memory_copy(t: torch.Tensor) -> torch.Tensor:
    """A copy of ``t`` that lies in its memory as ``t`` does (a view of a copy of its base, where it has one): what
    as_strided reads is the same."""
    if t._base is None:
        return t.detach().clone().requires_grad_(t.requires_grad)
    base = t._base.detach().clone()
    return base.as_strided(t.shape, t.stride(), t.storage_offset()).requires_grad_(t.requires_grad)


def run_sample(op: Any, sample: Any, seed: int, symbolic: bool = False) -> Outcome:
    args, kwargs = [sample.input, *sample.args], dict(sample.kwargs)
    real_inputs = _tensors([args, kwargs])
    for t in real_inputs:
        if t.is_complex():
            return Outcome("skipped", "complex input")
        if t.is_floating_point() and t.dtype != torch.float64:
            return Outcome("skipped", f"{t.dtype} input")
    process = sample.output_process_fn_grad

    def call(*tensors: Any) -> Any:
        swap = {id(r): t for r, t in zip(real_inputs, tensors, strict=True)}
        return process(op.gradcheck_wrapper(op, *_swapped(args, swap), **_swapped(kwargs, swap)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reference = _seeded_call(lambda: call(*real_inputs), seed)
            again = _seeded_call(lambda: call(*real_inputs), seed)
        except Exception as error:
            return Outcome("skipped", f"torch raises {type(error).__name__}: {error}")
    outputs = _flatten(reference)
    if any(isinstance(t, torch.Tensor) and t.layout != torch.strided for t in outputs + real_inputs):
        return Outcome("skipped", "a sparse tensor")
    if any(isinstance(t, torch.Tensor) and t.is_complex() for t in outputs):
        return Outcome("skipped", "complex output")
    if any(
        isinstance(t, torch.Tensor)
        and not t.dtype.is_floating_point
        and t.dtype not in (torch.int64, torch.int32, torch.bool, torch.uint8, torch.int16, torch.int8)
        for t in outputs
    ):
        return Outcome("skipped", "an output of an unusual dtype")
    if not all(
        (not isinstance(a, torch.Tensor)) or torch.equal(a.nan_to_num(0.123), b.nan_to_num(0.123))
        for a, b in zip(outputs, _flatten(again), strict=False)
    ):
        return Outcome("skipped", "not deterministic under one seed")
    if sum(t.numel() for t in outputs if isinstance(t, torch.Tensor)) > max(MAX_NUMEL, 4 * _numel(sample)):
        return Outcome("skipped", "output too large")
    copies = [_same_memory_copy(t) for t in real_inputs]
    dynamic = None
    if symbolic:
        first = next((k for k, t in enumerate(copies) if t.is_floating_point() and t.ndim and t.shape[0] > 1), None)
        if first is None:
            return Outcome("skipped", "no input with a first size above 1")
        dynamic = {f"x{first}": {0: "m"}}

    def traced_function(*tensors: Any) -> Any:
        return call(*tensors)

    traced_function.__signature__ = _positional_signature(len(copies))  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                traced = sg.trace(traced_function, *copies, dynamic_shapes=dynamic)
        except SampleTimeout:
            raise
        except Exception as error:
            return _classify(error, "trace")
    symbolic_outputs = _flatten(traced.output)
    if len(symbolic_outputs) != len(outputs):
        return Outcome("differs", f"{len(symbolic_outputs)} outputs, torch {len(outputs)}")
    try:
        if symbolic:
            return _symbolic_check(traced, copies, outputs, symbolic_outputs, seed)
        for k, (t, s) in enumerate(zip(outputs, symbolic_outputs, strict=True)):
            _compare_output(f"output {k}", t, s)
    except MismatchError as mismatch:
        return Outcome("differs", f"forward {mismatch}")
    except SampleTimeout:
        raise
    except Exception as error:
        return _classify(error, "forward values")
    for k, t in enumerate(outputs):  # an output torch does not differentiate must not be differentiated
        if isinstance(t, torch.Tensor) and not t.requires_grad and getattr(symbolic_outputs[k], "requires_grad", 0):
            return Outcome("differs", f"output {k}: torch's does not require grad, symgrad's does")
    # VJP
    picked = [k for k, t in enumerate(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    leaves = [k for k, t in enumerate(real_inputs) if t.requires_grad]
    if not picked or not leaves:
        return Outcome("pass", "forward only")
    generator = torch.Generator().manual_seed(seed)
    cotangents = [torch.randn(outputs[k].shape, generator=generator, dtype=outputs[k].dtype) for k in picked]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = torch.autograd.grad(
                [outputs[k] for k in picked], [real_inputs[k] for k in leaves], cotangents, allow_unused=True
            )
        except Exception as error:
            return Outcome("pass", f"forward only (torch's backward raises {type(error).__name__})")
    # an output torch differentiates and symgrad does not (it depends on no input) must have a zero gradient
    mine = [k for k in picked if symbolic_outputs[k].requires_grad]
    try:
        grads: Any = [None] * len(leaves)
        if mine:
            grads = sg.vjp(
                [symbolic_outputs[k] for k in mine],
                [traced.inputs[k] for k in leaves],
                [_symbolic_tensor(cotangents[picked.index(k)]) for k in mine],
            )
            grads = (grads,) if isinstance(grads, sg.Tensor) or grads is None else grads
        for k, leaf, want, got in zip(leaves, [real_inputs[k] for k in leaves], expected, grads, strict=True):
            want = torch.zeros_like(leaf) if want is None or want._is_zerotensor() else want
            if got is None:
                _compare(f"gradient of input {k}", want.tolist(), np.zeros(tuple(leaf.shape)).tolist())
                continue
            if tuple(got.shape) != tuple(leaf.shape):
                raise MismatchError(f"gradient of input {k}: shape {tuple(got.shape)}, the input's {tuple(leaf.shape)}")
            _compare(f"gradient of input {k}", want.tolist(), got.tolist())
    except MismatchError as mismatch:
        return Outcome("differs", str(mismatch))
    except SampleTimeout:
        raise
    except Exception as error:
        return _classify(error, "vjp")
    return Outcome("pass")


def _symbolic_tensor(t: Any) -> Any:
    return sg.tensor(t.tolist() if t.numel() else np.zeros(tuple(t.shape)), dtype="float64")


def _symbolic_check(traced: Any, copies: list, outputs: list, symbolic_outputs: list, seed: int) -> Outcome:
    """At a symbolic size: the shapes' ranks, and ``sg.prove`` of the law of each differentiable output (exactly at
    small sizes, and against torch.autograd at larger ones)."""
    for k, (t, s) in enumerate(zip(outputs, symbolic_outputs, strict=True)):
        if isinstance(t, torch.Tensor) and isinstance(s, sg.Tensor) and s.ndim != t.ndim:
            raise MismatchError(f"output {k}: {s.ndim} dims, torch {t.ndim}")
    picked = [k for k, t in enumerate(outputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    leaves = [k for k, t in enumerate(copies) if t.requires_grad]
    if not picked or not leaves:
        return Outcome("pass", "symbolic, shapes only")
    outs = [symbolic_outputs[k] for k in picked]
    cotangents = [sg.symbols_like(o, f"v{k}", distinct=True) for k, o in enumerate(outs)]  # non-scalar outputs too
    proof = sg.prove(outs, [traced.inputs[k] for k in leaves], cotangents)
    if not proof.held:
        raise MismatchError(f"the law at a symbolic size is not proved: {proof}")
    return Outcome("pass", "symbolic")


def _positional_signature(count: int) -> Any:
    import inspect

    parameter = inspect.Parameter
    return inspect.Signature([parameter(f"x{k}", parameter.POSITIONAL_OR_KEYWORD) for k in range(count)])


def _numel(sample: Any) -> int:
    return sum(t.numel() for t in _tensors([sample.input, sample.args, sample.kwargs]))


# ── one entry ──────────────────────────────────────────────────────────────────────────────────────────────
@dataclass
class EntryResult:
    id: str
    status: str = "pass"
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def reason(self) -> str:
        want = {"partial": "refused"}.get(self.status, self.status)
        for outcome in self.outcomes:
            if outcome.kind == want:
                return outcome.detail
        return "; ".join(o.detail for o in self.outcomes[:2])


def _samples(op: Any) -> list[Any]:
    dtypes = op.supported_dtypes("cpu")
    dtype = torch.float64 if torch.float64 in dtypes else (torch.int64 if torch.int64 in dtypes else None)
    if dtype is None:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=dtype.is_floating_point and op.supports_autograd))
    small = sorted((s for s in samples if _numel(s) <= MAX_NUMEL), key=_numel)
    if len(small) <= SAMPLES or ALL:
        return small
    picks = np.linspace(0, len(small) - 1, SAMPLES).round().astype(int).tolist()
    return [small[k] for k in sorted(set(picks))]


def run_entry(op: Any, symbolic: bool = False) -> EntryResult:
    result = EntryResult(entry_id(op))
    begin = resource.getrusage(resource.RUSAGE_SELF)
    seed = zlib.crc32(result.id.encode())
    state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed % 2**32)
            try:
                samples = _samples(op)
            except Exception as error:
                samples = []
                result.outcomes.append(Outcome("skipped", f"no samples: {type(error).__name__}: {error}"))
            for k, sample in enumerate(samples):
                try:
                    with cpu_limit(SAMPLE_CPU_SECONDS):
                        outcome = run_sample(op, sample, seed + k, symbolic)
                except SampleTimeout:
                    outcome = Outcome("slow", f"sample {k}: over {SAMPLE_CPU_SECONDS} s of CPU time")
                except Exception as error:  # a bug of this file, never symgrad's
                    outcome = Outcome("harness", f"sample {k}: {type(error).__name__}: {error}"[:300])
                result.outcomes.append(outcome)
    finally:
        random.setstate(state[0])
        np.random.set_state(state[1])
    end = resource.getrusage(resource.RUSAGE_SELF)
    result.seconds = end.ru_utime + end.ru_stime - begin.ru_utime - begin.ru_stime
    kinds = {o.kind for o in result.outcomes}
    for status in ("harness", "crash", "differs", "slow"):
        if status in kinds:
            result.status = status
            break
    else:
        if "refused" in kinds:
            result.status = "partial" if "pass" in kinds else "refused"
        elif "pass" not in kinds:
            result.status = "skipped"
    return result


def _chosen() -> list[Any]:
    ops = op_db()
    return ops if ALL else ops[::CI_SHARE]


def _ids() -> list[str]:
    try:
        return [entry_id(op) for op in _chosen()]
    except Exception:  # pragma: no cover - without torch's testing internals the tests skip
        return []


@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_op_db_entry_through_trace(index: int) -> None:
    """A pass, a one-line refusal, or a skip: never a number, shape or dtype that differs, never a crash."""
    result = run_entry(_chosen()[index], symbolic=SYMBOLIC)
    if result.status in ("harness", "crash", "differs", "slow"):
        pytest.fail(f"{result.status}: {result.reason()}", pytrace=False)


def main(argv: list[str]) -> int:
    symbolic = "--symbolic" in argv
    wanted = [a for a in argv if not a.startswith("-")]
    ops = [op for op in op_db() if not wanted or entry_id(op) in wanted or op.name in wanted]
    totals: dict[str, int] = {}
    start = time.perf_counter()
    for op in ops:
        result = run_entry(op, symbolic)
        totals[result.status] = totals.get(result.status, 0) + 1
        reason = "" if result.status == "pass" else result.reason()
        print(f"| {result.id} | {result.status} | {result.seconds:.1f} | {reason} |", flush=True)
        if "-v" in argv:
            for outcome in result.outcomes:
                print(f"    {outcome.kind}: {outcome.detail}")
    print("totals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())), f"({len(ops)} entries)")
    print(f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
