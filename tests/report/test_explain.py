"""Explanation documents: compiled by real TeX engines, numbers against torch, Markdown math through KaTeX,
and no way for user text to leave math mode or start a TeX command.

PDF tests need pdflatex (texlive-latex-base) and xelatex with ctex (texlive-xetex texlive-lang-chinese); they
skip without them unless SYMGRAD_REQUIRE_TOOLS=1 (as in CI), where a missing tool fails the test.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_math import katex_errors, math_spans, require_katex
from pdf_fit import assert_inside, words_outside
from tools import require_engine

import symgrad as sg
from symgrad import cli
from symgrad.cli.catalogue import EXPLAIN_ITEMS, drawings, render_explain_item
from symgrad.core.errors import SymgradError
from symgrad.core.latex import latex_name, text_latex
from symgrad.reader import parse, parse_shape, parse_values
from symgrad.report import explain, render_explanation
from symgrad.report.formats import FORMATS
from symgrad.report.graph import NEEDS_DOT, Graph
from symgrad.report.tex import compile_pdf, first_error

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "zh")


@dataclass(frozen=True)
class Case:
    """An expression as the CLI takes it; ``values`` empty means symbolic shapes."""

    key: str
    expression: str
    values: dict
    shapes: dict
    wrt: tuple[str, ...]

    def build(self):
        shapes = {n: parse_shape(s) for n, s in self.shapes.items()}
        values = {n: parse_values(v) for n, v in self.values.items()}
        out = parse(self.expression, shapes=shapes, values=values, requires_grad=list(self.wrt))
        leaves = out.leaves()
        return out, [leaves[n] for n in self.wrt]

    def explanation(self, lang: str):
        out, wrt = self.build()
        return explain(out, wrt, expression=self.expression, lang=lang)


CASES = {
    "seed": Case("seed", "torch.mm(w, x)", {"w": "[[1.0, 2.0]]", "x": "[[1.0, 1.0], [2.0, 2.0]]"}, {}, ("w",)),
    "elementwise": Case("elementwise", "torch.tanh(a) * a ** 2", {"a": "[[0.5, -1.0], [2.0, 0.25]]"}, {}, ("a",)),
    "broadcasting": Case(
        "broadcasting",
        "torch.sigmoid(x * y + b)",
        {"x": "[[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]", "y": "[0.5, -2.0, 1.5]", "b": "[[0.1], [0.2]]"},
        {},
        ("x", "y", "b"),
    ),
    "shape_generic": Case(
        "shape_generic", "torch.tanh(W @ X + b)", {}, {"W": "k,n", "X": "n,m", "b": "k,1"}, ("W", "b")
    ),
}
CONCRETE = [k for k, c in CASES.items() if c.values]


@pytest.fixture(scope="module")
def documents():
    """(case, lang) -> (Explanation, Markdown, LaTeX), built once."""
    out = {}
    for key, case in CASES.items():
        for lang in LANGS:
            e = case.explanation(lang)
            out[key, lang] = (e, render_explanation(e, "md"), render_explanation(e, "tex"))
    return out


def torch_gradients(case: Case) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """out and each wrt's .grad from real torch.autograd.backward with grad_tensors = ones (float64)."""
    env = {
        n: torch.tensor(parse_values(v), dtype=torch.float64, requires_grad=n in case.wrt)
        for n, v in case.values.items()
    }
    expressions = {
        "torch.mm(w, x)": lambda t: torch.mm(t["w"], t["x"]),
        "torch.tanh(a) * a ** 2": lambda t: torch.tanh(t["a"]) * t["a"] ** 2,
        "torch.sigmoid(x * y + b)": lambda t: torch.sigmoid(t["x"] * t["y"] + t["b"]),
    }
    out = expressions[case.expression](env)
    torch.autograd.backward([out], [torch.ones_like(out)])
    return out.detach(), {n: env[n].grad for n in case.wrt}


NUMBER = re.compile(r"^(-?[0-9.]+)(?: \\times 10\^\{(-?\d+)\})?$")


def matrix_after(label: str, document: str) -> list[float]:
    r"""The numbers of the pmatrix written right after ``\texttt{label} =`` (row by row)."""
    found = re.search(re.escape(r"\texttt{" + label + "} = ") + r"\\begin\{pmatrix\}(.*?)\\end\{pmatrix\}", document)
    assert found, f"no matrix for {label} in the document"
    numbers = []
    for cell in re.split(r"\\\\|&", found.group(1)):
        match = NUMBER.match(cell.strip())
        assert match, f"not a number: {cell!r}"
        numbers.append(float(match.group(1)) * 10 ** int(match.group(2) or 0))
    return numbers


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", CONCRETE)
def test_the_numbers_in_the_document_are_the_ones_torch_computes(documents, key, lang):
    case = CASES[key]
    out, grads = torch_gradients(case)
    _, md, tex = documents[key, lang]
    for document in (md, tex):
        assert matrix_after("out", document) == pytest.approx(out.reshape(-1).tolist(), rel=1e-5, abs=1e-6)
        for name, grad in grads.items():
            shown = matrix_after(text_latex(name) + ".grad", document)
            assert shown == pytest.approx(grad.reshape(-1).tolist(), rel=1e-5, abs=1e-6), name


def test_the_seed_explanation_says_what_the_seed_shows(documents):
    e, md, _ = documents["seed", "en"]
    assert e.implicit_error == "grad can be implicitly created only for scalar outputs"
    assert "RuntimeError: grad can be implicitly created only for scalar outputs" in md
    (g,) = e.entrywise.gradients
    assert g.values == [2.0, 4.0]  # the seed's w.grad after backward(torch.ones_like(loss))
    assert g.sum_agrees and g.per_element_agrees and g.per_element_exact
    assert e.check["ok"]


def test_a_scalar_output_needs_no_grad_tensor():
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = sg.tensor([[1.0], [1.0]], name="x")
    e = explain(w @ x, [w], run_check=False)
    assert e.implicit_error is None and e.output_numel == 1
    assert "RuntimeError" not in render_explanation(e, "md")


def test_the_shape_generic_explanation_derives_the_law_op_by_op(documents):
    e, md, tex = documents["shape_generic", "en"]
    assert e.entrywise is None and e.law.proved and e.law.sum_agrees
    assert [s.lhs for s in e.law.forward] == ["Z_{1}", "Z_{2}", r"\mathrm{out}"]
    assert e.law.backward[0].rhs == "V"
    assert dict(e.law.code)["grad_W"] == "t1 @ X.T"
    assert dict(e.law.code)["grad_b"] == "t1.sum(dim=1, keepdim=True)"
    assert r"\bar{W} &= \mathrm{t1} X^{\top}" in md and r"\bar{W} &= \mathrm{t1} X^{\top}" in tex


def test_big_tensors_are_elided_and_the_document_leads_with_the_law():
    W = sg.symbols("W", (8, 9), requires_grad=True)
    x = sg.symbols("x", (9, 1))
    e = explain(W @ x, [W], run_check=False)
    md = render_explanation(e, "md")
    assert e.leads_with_law and e.law is not None
    assert md.index("matrix law") < md.index("The Jacobian")
    assert r"\cdots" in md and r"\vdots" in md and r"\ddots" in md
    assert r"W_{0,3} & W_{0,4}" not in md  # the Jacobian keeps its corners only: columns 0-3, then the last
    assert r"W_{0,3}" in md


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", list(CASES))
def test_markdown_math_parses_with_katex(documents, key, lang):
    require_katex()
    _, md, _ = documents[key, lang]
    assert math_spans(md), "the document has no math"
    assert katex_errors(md) == []


def test_the_generated_explanations_parse_with_katex():
    require_katex()
    for path in sorted((ROOT / "generated").glob("explain_*.md")):
        assert katex_errors(path.read_text(encoding="utf-8")) == [], path.name


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("key", list(CASES))
def test_each_explanation_compiles_to_pdf_without_latex_errors(documents, key, lang):
    require_engine(lang)
    _, _, tex = documents[key, lang]
    pdf = compile_pdf(tex, lang)
    assert pdf.startswith(b"%PDF")
    assert_inside(pdf, tex)


def test_the_generated_tex_files_are_the_catalogue_and_compile():
    require_engine("en")
    files = render_explain_item(EXPLAIN_ITEMS[0])
    picture = {"explain_seed_en-graph.pdf": drawings()["explain_seed_en-graph.pdf"].draw("pdf")}
    pdf = compile_pdf(files["explain_seed_en.tex"], "en", files=picture)
    assert pdf.startswith(b"%PDF")
    assert_inside(pdf, files["explain_seed_en.tex"])


# --- user text cannot inject TeX ----------------------------------------------------------------------------

TEX_SPECIALS = set("\\{}$&#%^~_")


def unescaped_specials(escaped: str) -> set[str]:
    """Special characters left once every escape sequence this project writes is removed."""
    rest = re.sub(r"\\(textbackslash|backslash|wedge|sim)\{\}|\\\^\{\}|\\~\{\}|\\[{}$&#%_]", "", escaped)
    # characters outside ASCII: a Greek letter's command, or a code point between angle brackets
    rest = re.sub(r"\$\\[A-Za-z]+\$|\{\\[A-Za-z]+\}|U\+[0-9A-F]+", "", rest)
    return set(rest) & TEX_SPECIALS


@settings(max_examples=examples(200), deadline=None, derandomize=True, database=None)
@given(st.text(max_size=40))
def test_escaped_text_has_no_live_tex_character(text):
    assert unescaped_specials(text_latex(text)) == set()
    inner = latex_name(text)
    if inner.startswith(r"\mathrm{"):
        assert unescaped_specials(inner[len(r"\mathrm{") : -1]) == set()
    else:
        assert inner.isalpha() or (inner.startswith("\\") and inner[1:].isalpha())


EVIL = r"w}$ \input{/etc/passwd} \end{document} \immediate\write18{rm -rf x} `$$ x $$` %^~_#&"


def test_a_hostile_expression_text_stays_text_in_both_formats():
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = sg.tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
    benign = explain(w @ x, [w], expression="w @ x", run_check=False)
    hostile = explain(w @ x, [w], expression=EVIL, run_check=False)
    md_benign, md_hostile = (render_explanation(e, "md") for e in (benign, hostile))
    tex_benign, tex_hostile = (render_explanation(e, "tex") for e in (benign, hostile))
    # The only difference is the expression, written as a code span / \texttt with every special escaped.
    assert tex_hostile == tex_benign.replace(r"\texttt{w @ x}", r"\texttt{" + text_latex(EVIL) + "}")
    assert md_hostile == md_benign.replace("`w @ x`", FORMATS["md"].code(EVIL))
    assert math_spans(md_hostile) == math_spans(md_benign)
    assert r"\input" not in tex_hostile.replace(r"\textbackslash{}input", "")


def test_a_hostile_expression_compiles_and_is_printed_literally(tmp_path):
    require_engine("en")
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = sg.tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
    tex = render_explanation(explain(w @ x, [w], expression=EVIL, run_check=False), "tex")
    pdf = tmp_path / "evil.pdf"
    pdf.write_bytes(compile_pdf(tex, "en"))
    assert words_outside(pdf.read_bytes(), tex) == []
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert "input{/etc/passwd}" in text.replace(" ", "").replace("\n", "")


@settings(max_examples=examples(60), deadline=None, derandomize=True, database=None)
@given(
    name=st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True),
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=2),
)
def test_names_and_values_only_reach_math_through_the_escapers(name, values):
    try:
        w = sg.tensor([values], requires_grad=True, name=name)
    except sg.SymgradError:
        return  # a keyword such as "if": refused with a clear error
    e = explain(w * 2, [w], run_check=False)
    md = render_explanation(e, "md")
    for tex, _ in math_spans(md):
        assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")
        assert "$" not in tex.replace(r"\$", "")


# --- the command line -----------------------------------------------------------------------------------------

SEED_ARGS = ["explain", "torch.mm(w, x)", "--value", "w=[[1.0, 2.0]]", "--value", "x=[[1.0, 1.0], [2.0, 2.0]]"]
SEED_ARGS += ["--wrt", "w"]


def test_cli_explain_markdown_to_stdout(capsys):
    assert cli.main([*SEED_ARGS, "--lang", "zh"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# backward() 对 `torch.mm(w, x)` 算了什么")
    assert r"\texttt{w.grad} = \begin{pmatrix} 2 & 4 \end{pmatrix}" in out


def test_cli_explain_tex_to_a_file(tmp_path):
    target = tmp_path / "seed.tex"
    assert cli.main([*SEED_ARGS, "--format", "tex", "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith(r"\documentclass")


def test_cli_explain_pdf(tmp_path):
    require_engine("en")
    target = tmp_path / "seed.pdf"
    assert cli.main([*SEED_ARGS, "--format", "pdf", "-o", str(target)]) == 0
    assert target.read_bytes().startswith(b"%PDF")


def test_cli_explain_pdf_needs_a_file_name(capsys):
    assert cli.main([*SEED_ARGS, "--format", "pdf"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o FILE" in err


@pytest.mark.parametrize(("lang", "packages"), [("en", "texlive-latex-base"), ("zh", "texlive-xetex")])
def test_cli_names_the_debian_packages_when_tex_is_missing(tmp_path, capsys, monkeypatch, lang, packages):
    monkeypatch.setattr(shutil, "which", lambda program: None)
    assert cli.main([*SEED_ARGS, "--format", "pdf", "--lang", lang, "-o", str(tmp_path / "x.pdf")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and packages in err and "apt-get install" in err
    assert not (tmp_path / "x.pdf").exists()


def test_cli_explain_symbolic_shapes(capsys):
    args = ["explain", "torch.tanh(W @ X + b)", "--shape", "W=k,n", "--shape", "X=n,m", "--shape", "b=k,1"]
    assert cli.main([*args, "--wrt", "W,b", "--format", "md"]) == 0
    assert "t1 @ X.T" in capsys.readouterr().out


def test_a_tex_error_is_reported_with_its_first_line():
    require_engine("en")
    with pytest.raises(sg.SymgradError, match="Undefined control sequence"):
        compile_pdf("\\documentclass{article}\\begin{document}\\nosuchcommand\\end{document}")
    assert first_error("! Missing $ inserted.\nl.3 x_1") == "Missing $ inserted. (l.3 x_1)"


# --- notebooks ------------------------------------------------------------------------------------------------


def test_notebook_displays():
    k, n = sg.dims("k n")
    W = sg.symbols("W", (k, n))
    assert (W.T @ W)._repr_latex_() == r"$W^{\top} W \in \mathbb{R}^{n \times n}$"
    w = sg.tensor([[1.0, 2.0]], name="w")
    assert w._repr_latex_() == r"$w = \begin{pmatrix} w_{0,0} & w_{0,1} \end{pmatrix}$"
    V = sg.symbols("V", (k, k))
    proof = sg.prove(W @ W.T, [W], [V])
    assert proof._repr_markdown_().startswith("**proof held**")
    e = explain(w * w, [w], run_check=False)
    # the document, with the graph drawn inside it when dot is there (test_the_notebook_markdown_shows_the_graph_inline)
    assert re.sub(r"!\[[^\]]*\]\(data:[^)]*\)\n\n", "", e._repr_markdown_()) == render_explanation(e, "md")


# --- inputs found by review ------------------------------------------------------------------------------------


def test_a_float_grad_tensor_gives_torch_numbers():
    x = sg.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True, name="x")
    e = explain(sg.torch.tanh(x) * x, [x], grad_tensor=[[1.5, -2.0], [0.25, 3.0]])
    md = render_explanation(e, "md")
    xt = torch.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=torch.float64, requires_grad=True)
    out = torch.tanh(xt) * xt
    out.backward(torch.tensor([[1.5, -2.0], [0.25, 3.0]], dtype=torch.float64))
    assert matrix_after("x.grad", md) == pytest.approx(xt.grad.reshape(-1).tolist(), rel=1e-5)
    (g,) = e.entrywise.gradients
    assert g.per_element_exact and g.per_element_agrees and g.sum_agrees


def test_a_symbolic_grad_tensor_keeps_the_formula():
    x = sg.tensor([1.0, 2.0], requires_grad=True, name="x")
    e = explain(x * x, [x], grad_tensor="v", run_check=False)
    (g,) = e.entrywise.gradients
    assert g.numbers is None and "v_{0}" in g.formula and g.per_element_agrees


def test_tensors_named_like_the_documents_own_symbols():
    (k,) = sg.dims("k")
    V = sg.symbols("V", (k,), requires_grad=True)
    g_bar = sg.symbols("g_bar", (k,), requires_grad=True)
    e = explain(V * g_bar, [V, g_bar], run_check=True)
    assert e.law.proved and e.law.grad_tensor == r"\mathrm{V1}"
    Z = sg.symbols("Z", (k, k), requires_grad=True)
    e = explain((Z @ Z).tanh(), [Z], run_check=False)
    assert e.law.forward[0].lhs == "H_{1}"


def test_a_scalar_output_skips_the_non_scalar_equivalences():
    w = sg.tensor([1.0, 2.0], requires_grad=True, name="w")
    md = render_explanation(explain((w * w).sum(), [w], run_check=False), "md")
    assert "Two other ways" not in md and "non-scalar output, backward" not in md


def test_per_element_backward_of_a_matrix_output_is_spelled_flat():
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    e = explain(w * 3, [w], run_check=False)
    assert e.per_element_call == "out.flatten()[i].backward(v.flatten()[i], retain_graph=True)"


def test_empty_tensors_are_refused_with_one_line(capsys):
    assert cli.main(["explain", "x * 2", "--shape", "x=0"]) == 2
    assert "empty tensors" in capsys.readouterr().err


def test_non_ascii_names_stay_distinct():
    a = sg.tensor([1.0, 2.0], requires_grad=True, name="ω")
    b = sg.tensor([3.0, 4.0], requires_grad=True, name="φ")
    md = render_explanation(explain(a * b, [a, b], run_check=False), "md")
    assert r"\omega" in md and r"\phi" in md


def test_large_concrete_shapes_are_checked_against_torch_at_those_sizes():
    W = sg.symbols("W", (40, 40), requires_grad=True)
    x = sg.symbols("x", (40, 1))
    e = explain(W @ x, [W])
    assert e.entrywise is None and e.too_big == 1600 * 40
    assert e.law.concrete and e.law.proved
    assert [p["kind"] for p in e.law.proof_lines] == ["torch"]


def test_inputs_with_more_than_two_dimensions_say_how_they_are_shown():
    x = sg.symbols("x", (2, 2, 2), requires_grad=True)
    e = explain(x * x, [x], run_check=False)
    assert "dimensions after the first flattened into columns" in render_explanation(e, "md")
    assert "展平成列" in render_explanation(explain(x * x, [x], lang="zh", run_check=False), "md")


def _inline_svgs(markdown: str) -> list[str]:
    return [
        base64.b64decode(e).decode()
        for e in re.findall(r"\]\(data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)\)", markdown)
    ]


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot")
def test_the_notebook_markdown_shows_the_graph_inline():
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = sg.tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
    first = explain(w @ x, [w], run_check=False)
    (svg,) = _inline_svgs(first._repr_markdown_())
    assert svg.startswith("<?xml") and "v = ones" in svg and first.picture is None  # the grad_tensor it uses
    second = sg.explain((w * w).sum(), [w], create_graph=True, run_check=False)
    (svg,) = _inline_svgs(second._repr_markdown_())
    assert "v = 1" in svg


def test_the_notebook_markdown_has_no_picture_without_dot(monkeypatch):
    def no_dot(self, *_, **__):
        raise SymgradError(NEEDS_DOT)

    monkeypatch.setattr(Graph, "draw", no_dot)
    w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    md = explain(w @ w.T, [w], run_check=False)._repr_markdown_()
    assert "data:image" not in md and "![" not in md


def test_a_name_with_an_underscore_reads_as_code_in_the_prose():
    w = sg.tensor([1.5, 2.5], requires_grad=True, name="w_1")
    for fmt, spelled in (("md", "`w_1.grad`"), ("tex", "\\texttt{w\\_1.grad}")):
        text = render_explanation(explain((w * w).sum(), [w], run_check=False), fmt)
        assert spelled in text and "w\\_1.grad`" not in text
