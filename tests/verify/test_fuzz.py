"""A differential fuzzer: random small torch graphs, run by symgrad and by torch, must give the same numbers.

Two properties, drawn with hypothesis from the op specs of ``fuzz_cases.py`` (one or more spellings
per torch function, written against a namespace ``T`` that is ``symgrad.torch`` or ``torch``):

1. **Entrywise** (:func:`test_symgrad_matches_torch_on_random_graphs`): 1-3 float64 leaves of shapes up
   to 3×3 (and a few small 3-d ones), up to 5 ops. Leaf values are random or special points: exact zeros,
   ties (repeated values, a constant tensor), kinks (the bounds of clamp/hardtanh/threshold and the
   comparison constants are drawn from the entries themselves), ±20/50/100 into exp/softplus/logsumexp,
   negatives into sqrt/log (nan must propagate as in torch, also through the branch ``where`` does not
   take), exactly singular matrices (and well-conditioned ones; nearly singular ones are left out, where
   torch's LU and the determinant formula round differently). The forward (``.tolist()``) and the VJP
   with a random grad_output (``sg.vjp``) are compared with ``torch.autograd.grad`` in float64: nan equals
   nan, equal infinities are equal, else rtol = atol = 1e-7.
2. **Emitted** (:func:`test_emitted_modules_match_torch_on_random_graphs`): a graph over leaves with
   symbolic shapes (``sg.dims("k n m")``; only the specs with laws), emitted with
   ``sg.compile(..., style="autograd_function")``, run at random concrete sizes on special values
   (``forward``, ``vjp`` and the ``autograd.Function``'s backward vs torch.autograd on the same torch
   graph), and ``torch.autograd.gradcheck`` of ``apply`` at generic (continuous random) values.

A ``sg.SymgradError`` is a clean refusal: counted, not a failure. An error torch raises makes the
case undefined (counted as ``torch_error``). Any other exception, any numeric mismatch, and any case on
which symgrad spends more than ``SYMGRAD_FUZZ_CASE_SECONDS`` (10) of CPU time fails; the failure message is
the case as a runnable script (``build(T, ...)`` run in both namespaces). A failure that matches an entry
of ``fuzz_cases.KNOWN_BUGS`` (a symgrad bug found and not fixed yet, each with its repro) is counted as
``known`` instead; ``SYMGRAD_FUZZ_STRICT=1`` turns that off.

CI draws 250 + 60 examples (the whole file: about 20 s on one core). ``SYMGRAD_EXAMPLES`` multiplies both; the
5,000-case run, which keeps going past failures and prints the totals (``-s``) and every failure::

    SYMGRAD_EXAMPLES=16.2 SYMGRAD_FUZZ_KEEP_GOING=1 python -m pytest -n 0 -s -p no:cacheprovider \\
        tests/verify/test_fuzz.py

Without ``SYMGRAD_FUZZ_KEEP_GOING`` the first failure stops the property and hypothesis shrinks it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import pytest
import torch
from budget import examples
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import symgrad as sg

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_cases as fz

# On a failure, hypothesis' report imports libcst, which warns about mypy_extensions; with warnings as
# errors that would turn the report of a genuine failure into a pytest INTERNALERROR.
pytestmark = pytest.mark.filterwarnings("ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

ENTRYWISE_EXAMPLES = 250
EMITTED_EXAMPLES = 60
KEEP_GOING = os.environ.get("SYMGRAD_FUZZ_KEEP_GOING", "") not in ("", "0")


def settings_for(count: int) -> settings:
    return settings(
        max_examples=examples(count),
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        # no Phase.explain: hypothesis 6.155's explain step crashes (AssertionError in shrinker._explain) on these
        # variable-length draws, turning a genuine failure into an internal error
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Thousands of tiny torch calls: one intra-op thread is exact and fast."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def report(tally: fz.Tally, title: str) -> None:
    print("\n" + tally.summary(title))
    if tally.failures:
        shown = "\n\n".join(f"# {kind}\n{detail}\n{repro}" for kind, detail, repro in tally.failures)
        print(f"\n{len(tally.failures)} failures of {title}:\n\n{shown}")
        pytest.fail(f"{len(tally.failures)} failures; the first:\n{tally.failures[0][1]}\n{tally.failures[0][2]}")


def test_symgrad_matches_torch_on_random_graphs() -> None:
    tally = fz.Tally()

    @settings_for(ENTRYWISE_EXAMPLES)
    @given(fz.cases())
    def check(case: fz.Case) -> None:
        note(case.code)
        outcome = fz.run_case(case)
        tally.record(outcome, case.code, case.specs)
        if outcome.failed and not KEEP_GOING:
            raise AssertionError(f"{outcome.kind}:\n{outcome.detail}\n\nrepro:\n{case.code}")

    check()
    report(tally, "entrywise")


def test_emitted_modules_match_torch_on_random_graphs() -> None:
    tally = fz.Tally()

    @settings_for(EMITTED_EXAMPLES)
    @given(fz.programs(), st.data())
    def check(program: fz.Program, data: st.DataObject) -> None:
        note(program.code())
        emitted = fz.emit(program)
        if emitted.outcome is not None:
            tally.record(emitted.outcome, program.code(), program.specs)
            if emitted.outcome.failed and not KEEP_GOING:
                raise AssertionError(f"{emitted.outcome.kind}:\n{emitted.outcome.detail}\n\n{program.code()}")
            return
        names = sorted({str(d) for n in program.leaves for d in program.shapes[n] if not isinstance(d, int)})
        sizes = {name: data.draw(st.integers(1, 3), label=name) for name in names}
        values = fz.program_values(data.draw, program, sizes)
        out_shape = fz.instantiate(tuple(program.symbolic_graph()[0].shape), sizes)
        v = fz.grad_values(data.draw, out_shape)
        repro = program.code(sizes, values, fz.nest(v, out_shape))
        note(repro)
        outcome = fz.run_program_at(program, emitted.module, values, v)
        if outcome.kind == "ok":
            checked = fz.gradcheck_program(program, emitted.module, sizes, data.draw(st.integers(0, 2**16)))
            if checked is None:
                tally.counts["gradcheck_skipped"] += 1
            elif checked.kind != "ok":
                outcome = checked
        tally.record(outcome, repro, program.specs)
        if outcome.failed and not KEEP_GOING:
            raise AssertionError(f"{outcome.kind}:\n{outcome.detail}\n\n{repro}")

    check()
    report(tally, "emitted")


# ── the per-case CPU limit ──


def test_cpu_limit_stops_code_that_swallows_the_timeout() -> None:
    """SymPy catches broad exceptions in places: the limit fires again until the block ends, and the block raises
    CaseTimeoutError even when the code caught every one and returned (its result is not to be trusted)."""
    caught = 0

    def swallowing_loop() -> None:
        nonlocal caught
        while caught < 3:
            try:
                sum(range(5000))
            except Exception:
                caught += 1

    start = time.process_time()
    with pytest.raises(fz.CaseTimeoutError, match="caught 3 times"), fz.cpu_limit(0.3):
        swallowing_loop()
    assert caught == 3
    assert time.process_time() - start < 0.3 + 10 * fz.REFIRE_SECONDS
    with fz.cpu_limit(5.0):  # a block that ends in time is untouched, and the timer is cleared after it
        sum(range(1000))
    end = time.process_time() + 2 * fz.REFIRE_SECONDS
    while time.process_time() < end:
        sum(range(1000))


# ── coverage: every op of the table is fuzzed, or listed with the reason it cannot be ──


def test_every_op_has_a_fuzz_spec_or_a_reason() -> None:
    ops = set(sg.core.OPS)
    covered = fz.spec_ops()
    missing = sorted(ops - covered - set(fz.UNREACHABLE))
    assert not missing, f"ops with neither a fuzz spec (fuzz_cases.SPECS) nor a reason (UNREACHABLE): {missing}"
    stale = sorted((set(fz.UNREACHABLE) | covered) - ops)
    assert not stale, f"fuzz specs or UNREACHABLE name ops that sg.core.OPS does not have: {stale}"
    reached = sorted(covered & set(fz.UNREACHABLE))
    assert not reached, f"ops both fuzzed and listed as unreachable: {reached}"


def graph_ops(root: sg.Tensor) -> set[str]:
    seen, stack, names = set(), [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op is not None:
            names.add(node.op.name)
        stack.extend(node.inputs)
    return names


class AllReachedError(Exception):
    """Not an error: every declared op was found, which stops the search (re-raised once, unshrunk)."""


@pytest.mark.parametrize("name", fz.all_spec_names())
def test_spec_reaches_the_ops_it_names(name: str) -> None:
    """Each spec builds graphs in symgrad that contain every op it declares (drawn until one applies)."""
    declared = fz.SPECS[name].ops
    found: set[str] = set()

    @settings(deadline=None, database=None, derandomize=True, max_examples=300, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(fz.cases(first=name, max_ops=1))
    def build(case: fz.Case) -> None:
        if declared <= found:
            raise AllReachedError
        if not case.lines or case.lines[0][2] != name:
            return
        env: dict = {"f": fz.f}
        exec(case.build_source(), env)
        leaves = [
            sg.tensor(fz.nest(case.values[n], case.shapes[n]), dtype="float64", requires_grad=True, name=n)
            for n in case.leaves
        ]
        try:
            found.update(graph_ops(env["build"](fz.storch, *leaves)))
        except Exception:  # refusals and crashes are the properties' business
            pass
        if declared <= found:
            raise AllReachedError

    with contextlib.suppress(AllReachedError):
        build()
    assert declared <= found, f"spec {name!r} never reached {sorted(declared - found)} (it reached {sorted(found)})"
