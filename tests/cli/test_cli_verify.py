"""``symgrad verify FILE.py:NAME``: a hand-written Function's backward proved (exit 0), caught with its report
(exit 1), or refused in one line (exit 2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_math import katex_errors, math_spans, require_katex
from pdf_fit import assert_inside
from tools import require_engine

from symgrad.cli import main

FUNCTIONS = """\
import torch


class Affine(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g.sum(0)


class AffineFirstRow(Affine):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g[0]


class PickedLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, y):
        ctx.save_for_backward(z, y)
        return -z.gather(1, y[:, None]).sum()

    @staticmethod
    def backward(ctx, g):
        z, y = ctx.saved_tensors
        return -g * torch.zeros_like(z).scatter(1, y[:, None], 1.0), None


class Broken(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, g):
        return g.no_such_method()


class SoftTargets(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, t):
        p = z.softmax(-1)
        ctx.save_for_backward(p, t)
        return -(t * p.log()).sum()

    @staticmethod
    def backward(ctx, g):
        p, t = ctx.saved_tensors
        return g * (p - t), None


def applies_no_function(x):
    return x


def layer(x, w, b):
    return torch.tanh(AffineFirstRow.apply(x, w, b))


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor, shift=0.5):
        ctx.factor = factor
        return x * factor + shift

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None, None


not_callable = 3
"""


PROGRESS = re.compile(r"^symgrad: .*\(\d+ s of CPU time, limit \d+ s\)$")


@pytest.fixture
def functions(tmp_path: Path) -> Path:
    path = tmp_path / "layers.py"
    path.write_text(FUNCTIONS, encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr without the progress lines long work shows on a slow machine)."""
    code = main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, "".join(line for line in err.splitlines(keepends=True) if not PROGRESS.search(line))


def test_a_right_backward_is_proved_for_every_size(capsys, functions):
    code, out, err = run(capsys, f"{functions}:Affine", "--input", "x=m,n", "--input", "w=n,k", "--input", "b=k")
    assert code == 0 and err == ""
    assert out.startswith("Affine.backward: proved") and "torch at" in out


def test_a_wrong_backward_exits_1_with_the_report(capsys, functions):
    code, out, _ = run(capsys, f"{functions}:AffineFirstRow", "--input", "x=3,2", "--input", "w=2,4", "--input", "b=4")
    assert code == 1
    assert "grad of b: differs" in out and "first entry that differs: b[0]" in out and "the true one" in out


def test_a_function_that_applies_one_is_verified_where_it_applies_it(capsys, functions):
    code, out, _ = run(capsys, f"{functions}:layer", "--input", "x=m,2", "--input", "w=2,4", "--input", "b=4")
    assert code == 1 and out.startswith("AffineFirstRow.backward: WRONG") and "grad of b: differs" in out


def test_plain_numbers_come_from_number_or_the_signatures_default(capsys, functions):
    code, out, _ = run(capsys, f"{functions}:Scale", "--input", "x=m,3", "--number", "factor=0.7")
    assert code == 0 and out.startswith("Scale.backward: proved") and "grad of factor" not in out
    code, out, _ = run(capsys, f"{functions}:Scale", "--input", "x=3", "--number", "factor=2", "--input", "shift=3")
    assert code == 1 and "grad of shift: differs" in out  # the default yields: a tensor shift, whose None is wrong
    code, _, err = run(capsys, f"{functions}:Scale", "--input", "x=3", "--number", "factor=[1, 2]")
    assert code == 2 and "--number factor= takes one number" in err


def test_integer_inputs_take_values(capsys, functions):
    code, out, _ = run(capsys, f"{functions}:PickedLoss", "--input", "z=3,4", "--value", "y=[0, 3, 1]")
    assert code == 0 and "grad of z: proved" in out


def test_a_symbolic_size_is_drawn_past_the_class_values_given(capsys, functions):
    """z=3,c beside y=[0,3,1]: c is drawn at 4 and more, so that class 3 exists."""
    code, out, err = run(capsys, f"{functions}:PickedLoss", "--input", "z=3,c", "--value", "y=[0, 3, 1]")
    assert code == 0 and "grad of z: proved" in out, err


def test_float_values_beside_drawn_inputs_are_data(capsys, functions):
    """Soft targets whose rows sum to 1 make p − t right; a row summing to 1.2 makes it wrong."""
    spec = f"{functions}:SoftTargets"
    code, out, err = run(capsys, spec, "--input", "z=2,3", "--value", "t=[[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]",
                         "--order", "1")  # fmt: skip
    assert code == 0 and "given values of t" in out, out + err
    code, out, _ = run(capsys, spec, "--input", "z=2,3", "--value", "t=[[0.2, 0.3, 0.7], [0.1, 0.1, 0.8]]",
                       "--order", "1")  # fmt: skip
    assert code == 1 and "grad of z: differs" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["{dir}/layers.py:not_callable", "--input", "x=2"],
            "is a int, not a torch.autograd.Function, a torch.library custom op or a function that applies one",
        ),
        (["{dir}/layers.py:applies_no_function", "--input", "x=2"], "applies no torch.autograd.Function"),
        (["{dir}/layers.py:Affine", "--input", "x=2,3"], "missing w"),
        (["{dir}/layers.py:Affine", "--input", "q=2"], "it has no input q"),
        (["{dir}/layers.py:Nope", "--input", "x=2"], "has no Nope"),
        (["{dir}/nothing.py:Affine", "--input", "x=2"], "is not a Python file"),
        (["{dir}/layers.py:Affine", "--input", "x=3,2", "--input", "w=3,4", "--input", "b=4"], "cannot be multiplied"),
        (["{dir}/layers.py:Broken", "--input", "x=2"], "Broken's code raised AttributeError"),
    ],
)
def test_bad_input_is_one_line_with_exit_2(capsys, functions, argv, message):
    code, out, err = run(capsys, *[a.replace("{dir}", str(functions.parent)) for a in argv])
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_verify_writes_the_proof_or_the_counterexample_as_a_document(capsys, functions, tmp_path, lang):
    require_katex()
    target = tmp_path / f"proof-{lang}.md"
    argv = ["explain", "--verify", f"{functions}:AffineFirstRow", "--input", "x=3,2", "--input", "w=2,4"]
    code = main([*argv, "--input", "b=4", "--lang", lang, "-o", str(target)])
    text = target.read_text(encoding="utf-8")
    assert code == 1  # a wrong backward, as symgrad verify says
    assert text.startswith("# Proof of AffineFirstRow.backward" if lang == "en" else "# AffineFirstRow.backward 的证明")
    assert "b[0]" in text and math_spans(text) and katex_errors(text) == []
    code = main(
        ["explain", "--verify", f"{functions}:Affine", "--input", "x=m,n", "--input", "w=n,k", "--input", "b=k"]
    )
    out, _ = capsys.readouterr()
    assert code == 0 and "**Proved**" in out
    code = main([*argv, "--input", "b=4", "--format", "tex", "--lang", lang, "-o", str(tmp_path / "p.tex")])
    tex = (tmp_path / "p.tex").read_text(encoding="utf-8")
    assert code == 1 and "\\begin{document}" in tex and "b[0]" in tex


def test_explain_verify_compiles_to_pdf(capsys, functions, tmp_path):
    """In Chinese, with xelatex: English goes through the same template with pdflatex (its LaTeX is checked above)."""
    lang = "zh"
    require_engine(lang)
    argv = ["explain", "--verify", f"{functions}:AffineFirstRow", "--input", "x=3,2", "--input", "w=2,4"]
    code = main([*argv, "--input", "b=4", "--format", "pdf", "--lang", lang, "-o", str(tmp_path / "p.pdf")])
    assert code == 1 and (tmp_path / "p.pdf").read_bytes().startswith(b"%PDF")
    assert_inside((tmp_path / "p.pdf").read_bytes())  # the proof's long typewriter lines are set ragged right


def test_explain_verify_writes_an_html_page_chosen_by_the_suffix(capsys, functions, tmp_path):
    target = tmp_path / "proof.html"
    argv = ["explain", "--verify", f"{functions}:AffineFirstRow", "--input", "x=3,2", "--input", "w=2,4"]
    assert main([*argv, "--input", "b=4", "--lang", "zh", "-o", str(target)]) == 1  # a wrong backward
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and '<html lang="zh">' in text
    assert "<code>b[0]</code>" in text and '<span class="math">' in text and "katex" in text
