"""The command line on what the trust review found: commands that stopped on a valid input now give torch's
answer, in English and Chinese."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from symgrad.cli import main

pytest.importorskip("torch")

CROSS_ENTROPY = [
    "F.cross_entropy(X @ W, y)", "--shape", "X=3,n", "--shape", "W=n,c", "--value", "y=[0,2,1]", "--wrt", "W",
]  # fmt: skip


def test_derive_of_cross_entropy_with_fixed_targets_proves_its_law(capsys):
    assert main(["derive", *CROSS_ENTROPY]) == 0
    out = capsys.readouterr().out
    assert "proof: held" in out and "FAILED" not in out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_of_cross_entropy_with_fixed_targets(tmp_path, lang):
    target = tmp_path / f"ce_{lang}.md"
    assert main(["explain", *CROSS_ENTROPY, "--lang", lang, "--no-graph", "-o", str(target)]) == 0
    assert "softmax" in target.read_text(encoding="utf-8")


def test_long_work_shows_progress_then_stops_at_its_time_limit(capsys):
    """(W @ X).sum() at 60×60 differentiates for a minute: with --time-limit 3 it reports its progress on stderr
    past two seconds, then stops with one line naming the ways out, exit 2."""
    code = main(["derive", "torch.mm(w, x).sum()", "--shape", "w=60,60", "--shape", "x=60,60", "--wrt", "w",
                 "--time-limit", "3"])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("symgrad: error: symgrad derive did not finish within 3 s (at ")
    assert "--no-check" in err[-1] and "--time-limit SECONDS" in err[-1]
    progress = err[:-1]
    assert progress and all(line.startswith("symgrad: symgrad derive: ") for line in progress)


def test_a_refusal_by_size_costs_milliseconds_and_megabytes(capsys):
    """torch.mm(w, x) with w of 10⁹ × 2: the budget refused only after allocating 15 GB for a grad_tensor."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    code = main(["derive", "torch.mm(w, x)", "--shape", "w=1000000000,2", "--shape", "x=2,2", "--wrt", "w",
                 "--grad-tensor", "ones"])  # fmt: skip
    assert code == 2 and "would take about" in capsys.readouterr().err
    assert time.process_time() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # kB


def test_the_time_limit_must_be_a_positive_number(capsys):
    assert main(["derive", "x.sum()", "--shape", "x=2", "--time-limit", "0"]) == 2
    assert "a time limit must be a positive number of seconds" in capsys.readouterr().err


def test_a_graph_torch_computes_in_float32_is_written_and_gives_torchs_numbers(capsys, tmp_path):
    """torch.where of two Python numbers is float32 at torch's default dtype, and so is its product with a 0-d
    float64 sum: the module computes what torch computes, and its check compares at float32's precision."""
    import importlib.util

    import torch

    target = tmp_path / "where_module.py"
    argv = ["codegen", "torch.where(x > 0, 2.0, 0.5) * x.sum()", "--shape", "x=3", "--wrt", "x", "-o", str(target)]
    assert main(argv) == 0, capsys.readouterr().err
    assert "float32 by torch's rules" in capsys.readouterr().err
    spec = importlib.util.spec_from_file_location("where_module", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.tensor([0.7, -1.3, 2.1], dtype=torch.float64, requires_grad=True)
    expected = torch.where(x > 0, 2.0, 0.5) * x.sum()
    ours = module.apply(x)
    assert ours.dtype == expected.dtype == torch.float32
    torch.testing.assert_close(ours, expected, rtol=0, atol=0)
    v = torch.tensor([0.3, -0.2, 1.1])
    (theirs,) = torch.autograd.grad(expected, x, v)
    (mine,) = torch.autograd.grad(module.apply(x), x, v)
    torch.testing.assert_close(mine, theirs, rtol=1e-12, atol=0)


def test_the_progress_line_names_torchs_import_while_a_check_waits_for_it():
    """The check's import of torch (a second) is said in the progress line, where the last step's words stood
    ("deriving the law" at fixed sizes, where no law was derived); in a fresh process, where torch is not loaded."""
    script = (
        "import symgrad.core.budget as budget\n"
        "budget.PROGRESS_AFTER = budget.PROGRESS_EVERY = 0.0\n"
        "from symgrad.verify.torch_eval import imported_torch\n"
        "lines = []\n"
        "with budget.time_limit(60, 'symgrad derive', 'no way out', report=lines.append):\n"
        "    imported_torch()\n"
        "print(lines)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert "importing torch for the check" in done.stdout, done.stdout
