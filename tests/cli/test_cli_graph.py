"""``symgrad graph``: DOT on stdout, SVG/PNG/PDF drawn by Graphviz's dot or the DOT source by extension,
written atomically; bad input is one line and exit code 2.

Drawing needs dot (Debian: graphviz); those tests skip without it unless SYMGRAD_REQUIRE_TOOLS=1 (as in CI).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pdf_fit import assert_inside, words
from tools import require_tool

from symgrad.cli import main
from symgrad.report.formats import FORMATS

SEED = ["graph", "torch.tanh(w @ x).sum()", "--shape", "w=2,3", "--shape", "x=3"]


def require_dot() -> None:
    require_tool("dot", "graphviz")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_output_the_dot_source_goes_to_stdout(capsys):
    code, out, err = run(capsys, *SEED, "--wrt", "w")
    assert (code, err) == (0, "")
    assert out.startswith("// symgrad graph of torch.tanh(w @ x).sum()\ndigraph symgrad {")
    for text in ("matmul  2", "tanh  2", "sum  scalar", "w̄ = torch.outer(Z̄₁, x)", "Z̄₁ = Z̄₂ * (1 - Z₂ ** 2)"):
        assert text in out, text
    assert 'label="w  2×3\\nrequires grad"' in out and 'label="x  3"' in out  # --wrt w: only w is marked


def test_the_svg_names_each_op(capsys, tmp_path):
    require_dot()
    target = tmp_path / "g.svg"
    code, out, err = run(capsys, *SEED, "--wrt", "w", "-o", str(target))
    assert (code, out, err) == (0, "", f"symgrad: wrote {target}\n")
    svg = target.read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for op in ("matmul", "tanh", "sum", "w̄ = torch.outer(Z̄₁, x)"):
        assert op in svg, op


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG\r\n\x1a\n"), (".pdf", b"%PDF")])
def test_png_and_pdf_by_extension(capsys, tmp_path, suffix, magic):
    require_dot()
    target = tmp_path / f"g{suffix}"
    code, _, err = run(capsys, *SEED, "-o", str(target))
    assert (code, err) == (0, f"symgrad: wrote {target}\n")
    assert target.read_bytes().startswith(magic)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left behind


@pytest.mark.parametrize("suffix", [".dot", ".gv"])
def test_dot_and_gv_files_hold_the_source(capsys, tmp_path, suffix):
    code, printed, _ = run(capsys, *SEED)
    assert code == 0
    target = tmp_path / f"g{suffix}"
    assert run(capsys, *SEED, "-o", str(target))[0] == 0
    assert target.read_text(encoding="utf-8") == printed


def test_symbolic_shapes_and_a_named_grad_tensor(capsys):
    code, out, _ = run(
        capsys, "graph", "torch.tanh(W @ X + b)", "--shape", "W=k,n", "--shape", "X=n,m", "--shape", "b=k,1",
        "--grad-tensor", "V",
    )  # fmt: skip
    assert code == 0
    assert "matmul  k×m" in out and "W̄ = Z̄₁ @ X.T" in out and 'label="V  k×m\\ngrad_tensor"' in out


def test_a_bad_expression_is_one_line_and_exit_2(capsys, tmp_path):
    target = tmp_path / "g.svg"
    target.write_text("old", encoding="utf-8")
    code, out, err = run(capsys, "graph", "torch.tanh(w @@ x)", "--shape", "w=2,3", "-o", str(target))
    assert code == 2 and out == ""
    assert err.startswith("symgrad: error: ") and err.count("\n") == 1
    assert target.read_text(encoding="utf-8") == "old"  # nothing is written over it


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([*SEED, "-o", "g.jpg"], "name it .svg, .png, .pdf, .dot or .gv"),
        ([*SEED, "--wrt", "q"], "unknown tensors q"),
        (["graph", "w @ x", "--shape", "w=2,3", "--shape", "x=4"], "symgrad: error:"),
        ([*SEED, "-o", "no/such/folder/g.svg"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert says in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_without_dot_drawing_says_to_install_graphviz(capsys, tmp_path, monkeypatch):
    target = tmp_path / "g.svg"
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without Graphviz
    code, out, err = run(capsys, *SEED, "-o", str(target))
    assert (code, out) == (2, "")
    assert "install graphviz" in err and err.count("\n") == 1
    assert not target.exists()
    assert run(capsys, *SEED, "-o", str(tmp_path / "g.dot"))[0] == 0  # the source needs no dot


def test_the_installed_command_prints_utf8_dot():
    done = subprocess.run(
        [sys.executable, "-m", "symgrad", *SEED], capture_output=True, timeout=300, check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "x̄ = w.T @ Z̄₁" in done.stdout.decode("utf-8")


# ── explanations carry the picture ──────────────────────────────────────────
EXPLAIN = ["explain", "torch.tanh(W @ x).sum()", "--value", "W=[[1.0, 2.0], [0.5, -1.0]]", "--value", "x=[1.0, -1.0]"]


def test_a_markdown_explanation_shows_the_graph_drawn_beside_it(capsys, tmp_path):
    require_dot()
    target = tmp_path / "tanh layer.md"
    code, out, err = run(capsys, *EXPLAIN, "--wrt", "W", "-o", str(target))
    picture = tmp_path / "tanh_layer-graph.svg"
    assert (code, out, err) == (0, "", f"symgrad: wrote {target}\nsymgrad: wrote {picture}\n")  # each file named
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tanh layer.md", "tanh_layer-graph.svg"]
    assert "](tanh_layer-graph.svg)" in target.read_text(encoding="utf-8")
    svg = (tmp_path / "tanh_layer-graph.svg").read_text(encoding="utf-8")
    assert "matmul" in svg and "W̄ = torch.outer(Z̄₁, x)" in svg


def test_no_graph_leaves_the_picture_out(capsys, tmp_path):
    target = tmp_path / "t.md"
    code, _, _ = run(capsys, *EXPLAIN, "--wrt", "W", "--no-graph", "-o", str(target))
    assert code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["t.md"]
    assert "-graph." not in target.read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pdf_explanation_has_the_graph_as_a_figure(capsys, tmp_path, lang):
    require_dot()
    require_tool("pdftotext", "poppler-utils")
    target = tmp_path / "t.pdf"
    code, _, err = run(capsys, *EXPLAIN, "--wrt", "W", "--format", "pdf", "--lang", lang, "-o", str(target))
    if code == 2 and "not installed" in err:
        pytest.skip(err.strip())
    assert (code, err) == (0, f"symgrad: wrote {target}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["t.pdf"]  # the drawing went inside
    text = subprocess.run(["pdftotext", str(target), "-"], capture_output=True, text=True, check=True).stdout
    assert "matmul" in text and "tanh" in text  # the graph's node labels, drawn into the page
    caption = {"en": "The computation graph", "zh": "计算图"}[lang]
    assert caption in text
    assert_inside(target.read_bytes())


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_graph_sits_where_the_text_puts_it_at_its_natural_size(capsys, tmp_path, lang):
    """No float: the figure follows the sentence before it, on its page where it fits there (English) or at the
    top of the next (Chinese, whose title and list take more room), and before the next heading; its labels are
    drawn no smaller than the body text (10.5 pt against 10 and 10.5)."""
    require_dot()
    require_tool("pdftotext", "poppler-utils")
    target = tmp_path / "t.pdf"
    code, _, err = run(capsys, *EXPLAIN, "--wrt", "W", "--format", "pdf", "--lang", lang, "-o", str(target))
    assert code == 0, err
    found = words(target.read_bytes())
    before = {"en": "below,", "zh": "表达式的结果在下文记作"}[lang]  # the sentence on out's shape
    after = {"en": "scalar", "zh": "输出是标量时为什么不用给"}[lang]  # the next heading
    order = [w.text for w in found]
    sentence, label, heading = order.index(before), order.index("matmul"), order.index(after, order.index("matmul"))
    assert sentence < label < heading
    expected = {"en": found[sentence].page, "zh": found[sentence].page + 1}[lang]
    assert found[label].page == expected
    body = sorted(w.height for w in found if w.page == found[sentence].page)
    assert found[label].height >= body[len(body) // 2]  # the median word of the text


def test_the_latex_figure_neither_floats_nor_scales_a_picture_that_fits():
    tex = FORMATS["tex"].figure("g.pdf", "The graph.")
    assert "\\begin{figure}" not in tex and "\\includegraphics{g.pdf}" in tex
    assert "\\rotatebox{90}" in tex  # only for a drawing wider than the text, which its side fits


def test_a_second_order_explanation_shows_the_graph_too(capsys, tmp_path):
    require_dot()
    target = tmp_path / "s.md"
    argv = ["explain", "(w * w * w).sum()", "--value", "w=[1.0, 2.0]", "--wrt", "w", "--create-graph"]
    code, _, err = run(capsys, *argv, "--grad-tensor", "[1.0, 0.0]", "-o", str(target))
    assert (code, err) == (0, f"symgrad: wrote {target}\nsymgrad: wrote {tmp_path / 's-graph.svg'}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-graph.svg", "s.md"]
    assert "](s-graph.svg)" in target.read_text(encoding="utf-8")
