""" "What create_graph does": the second-order explanation (sg.explain(..., create_graph=True), symgrad explain
--create-graph). Its numbers equal torch's double backward (float64), its Markdown parses with KaTeX, its LaTeX
compiles, in English and Chinese; the CLI refuses what it cannot explain with one line and exit code 2.

PDF tests need pdflatex and xelatex with ctex; they skip without them unless SYMGRAD_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from markdown_math import katex_errors, math_spans, require_katex
from pdf_fit import assert_inside
from tools import require_engine

import symgrad as sg
from symgrad import cli
from symgrad.cli import catalogue
from symgrad.core.errors import SymgradError
from symgrad.reader import parse, parse_shape, parse_values
from symgrad.report import SecondOrderExplanation, compile_pdf, render_explanation
from symgrad.report.latex import number_latex

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "zh")
LOGISTIC = "F.binary_cross_entropy_with_logits(X @ w, y)"
# Inputs only (the expected numbers all come from torch below).
X_VALUES = [[1.0, 2.0], [0.5, -1.0], [2.0, 1.0]]
Y_VALUES = [1.0, 0.0, 1.0]
W_VALUES = [0.3, -0.2]
U_VALUES = [1.0, -2.0]


def logistic_with_values():
    values = {"X": parse_values(str(X_VALUES)), "y": parse_values(str(Y_VALUES)), "w": parse_values(str(W_VALUES))}
    out = parse(LOGISTIC, values=values, requires_grad=["w"])
    return out, out.leaves()["w"]


def logistic_symbolic():
    shapes = {"X": parse_shape("n,d"), "y": parse_shape("n"), "w": parse_shape("d")}
    out = parse(LOGISTIC, shapes=shapes, requires_grad=["w"])
    return out, out.leaves()["w"]


def torch_double_backward(u: list[float]):
    """torch's gradient (create_graph=True), Hessian (row by row) and second backward with u, float64."""
    X = torch.tensor(X_VALUES, dtype=torch.float64)
    y = torch.tensor(Y_VALUES, dtype=torch.float64)
    w = torch.tensor(W_VALUES, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(torch.nn.functional.binary_cross_entropy_with_logits(X @ w, y), w, create_graph=True)
    hessian = torch.stack([torch.autograd.grad(g[i], w, retain_graph=True)[0] for i in range(len(g))])
    (product,) = torch.autograd.grad(g, w, torch.tensor(u, dtype=torch.float64))
    return g.detach().numpy(), hessian.detach().numpy(), product.numpy()


@pytest.fixture(scope="module")
def valued():
    out, w = logistic_with_values()
    return {
        lang: sg.explain(out, [w], create_graph=True, grad_tensor=U_VALUES, expression=LOGISTIC, lang=lang)
        for lang in LANGS
    }


@pytest.fixture(scope="module")
def symbolic():
    out, w = logistic_symbolic()
    return {lang: sg.explain(out, [w], create_graph=True, expression=LOGISTIC, lang=lang) for lang in LANGS}


def test_the_numbers_are_torchs_double_backward(valued):
    e = valued["en"]
    assert isinstance(e, SecondOrderExplanation)
    g, hessian, product = torch_double_backward(U_VALUES)
    np.testing.assert_allclose(e.gradient_values, g, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.reshape(e.hessian_values, (2, 2)), hessian, rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.hvp_values, product, rtol=0, atol=1e-12)
    assert e.check["ok"] and not e.check["random"]
    assert e.proved and e.hvp_proved and e.symmetric and not e.failed


@pytest.mark.parametrize("lang", LANGS)
def test_the_document_shows_torchs_numbers(valued, lang):
    g, hessian, product = torch_double_backward(U_VALUES)
    for fmt in ("md", "tex"):
        text = render_explanation(valued[lang], fmt)
        for value in [*g, *hessian.reshape(-1), *product]:
            assert number_latex(value) in text, (fmt, value)


def test_a_second_backward_weighs_the_hessians_rows_by_u(valued):
    e = valued["en"]
    _, hessian, _ = torch_double_backward(U_VALUES)
    assert len(e.rows) == 2 and e.rows[1].startswith(r"\left(-2\right)")  # u_1 = -2 weighs row 1
    assert number_latex(hessian[1, 1]) in e.rows[1]
    # the document's uᵀH is torch's Hessian-vector product H u (H is symmetric)
    np.testing.assert_allclose(e.hvp_values, hessian @ U_VALUES, rtol=0, atol=1e-12)


def test_a_matrix_input_gets_a_flattened_hessian():
    W = sg.tensor([[0.5, -1.0], [0.25, 2.0]], requires_grad=True, name="W")
    x = sg.tensor([[1.0], [-0.5]], name="x")
    e = sg.explain((W @ x).tanh().sum(), [W], create_graph=True)
    Wt = torch.tensor([[0.5, -1.0], [0.25, 2.0]], dtype=torch.float64)
    xt = torch.tensor([[1.0], [-0.5]], dtype=torch.float64)
    hessian = torch.autograd.functional.hessian(lambda w: torch.tanh(w @ xt).sum(), Wt).reshape(4, 4)
    np.testing.assert_allclose(np.reshape(e.hessian_values, (4, 4)), hessian.numpy(), rtol=0, atol=1e-12)
    assert e.flattened and e.check["ok"]
    ones_product = hessian.sum(dim=0)  # u = ones: the sum of the Hessian's rows
    np.testing.assert_allclose(e.hvp_values, ones_product.numpy(), rtol=0, atol=1e-12)


def test_the_symbolic_document_gives_the_laws_and_proves_them(symbolic):
    e = symbolic["en"]
    code = dict(e.code)
    assert code["grad_w"] == "X.T @ ((torch.sigmoid(X @ w) - y) / n)"
    assert code["hessian_w"] == "((X.T / n) * (torch.sigmoid(X @ w) * (1 - torch.sigmoid(X @ w)))) @ X"
    assert code["hvp_w"] == "X.T @ (((X @ u) / n) * (torch.sigmoid(X @ w) * (1 - torch.sigmoid(X @ w))))"
    assert e.proved and e.hvp_proved and e.check is None and e.entry_sizes == "$d = 2, n = 2$"
    assert {p["kind"] for p in e.proof} == {"exact", "torch"} and all(p["held"] for p in e.proof + e.hvp_proof)
    assert e.symmetric and [s.lhs for s in e.hessian_entries if s.lhs] == ["H_{0,0}", "H_{0,1}", "H_{1,1}"]


@pytest.mark.parametrize("lang", LANGS)
def test_markdown_math_parses_with_katex(valued, symbolic, lang):
    require_katex()
    for e in (valued[lang], symbolic[lang]):
        md = render_explanation(e, "md")
        assert math_spans(md) and katex_errors(md) == []


def test_both_languages_say_the_same_things(valued):
    en, zh = (render_explanation(valued[lang], "md") for lang in LANGS)
    assert en.startswith("# What `create_graph` does for") and "create_graph` 对" in zh.splitlines()[0]
    assert [line for line in en.splitlines() if line.startswith("$$")] == [
        line for line in zh.splitlines() if line.startswith("$$")
    ]
    assert "Hessian" in zh and "二次反向传播" in zh and "weighted sum of the Hessian's rows" in en


@pytest.mark.parametrize("lang", LANGS)
def test_the_tex_compiles_to_pdf(valued, symbolic, lang):
    require_engine(lang)
    for e in (valued[lang], symbolic[lang]):
        tex = render_explanation(e, "tex")
        pdf = compile_pdf(tex, lang)
        assert pdf.startswith(b"%PDF")
        assert_inside(pdf, tex)


def test_the_generated_files_are_the_catalogues(symbolic):
    (item,) = [i for i in catalogue.EXPLAIN_ITEMS if i.create_graph]
    files = catalogue.render_explain_item(item)
    for lang in LANGS:
        md = files[f"explain_logistic_regression_second_order_{lang}.md"]
        assert md == (ROOT / "generated" / f"explain_logistic_regression_second_order_{lang}.md").read_text("utf-8")
        assert md.endswith(render_explanation(replace(symbolic[lang], picture=f"{item.stem}_{lang}-graph.svg"), "md"))


def _load(stem: str):
    spec = importlib.util.spec_from_file_location(stem, ROOT / "generated" / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_hvp_and_hessian_modules_equal_torch():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(7, 4, dtype=torch.float64, generator=g)
    y = torch.rand(7, dtype=torch.float64, generator=g)
    w = torch.randn(4, dtype=torch.float64, generator=g)
    v = torch.randn(4, dtype=torch.float64, generator=g)
    theirs = torch.autograd.functional.hessian(
        lambda w: torch.nn.functional.binary_cross_entropy_with_logits(X @ w, y), w
    )
    hessian = _load("logistic_regression_hessian").hessian(X, w, y)
    (product,) = _load("logistic_regression_hvp").hvp(X, w, y, v)
    torch.testing.assert_close(hessian, theirs, rtol=0, atol=1e-12)
    torch.testing.assert_close(product, theirs @ v, rtol=0, atol=1e-12)


def test_explain_refuses_what_it_cannot_explain():
    w = sg.tensor([1.0, 2.0], requires_grad=True, name="w")
    x = sg.tensor([3.0, 4.0], requires_grad=True, name="x")
    with pytest.raises(SymgradError, match="one-element output; this one has shape 2"):
        sg.explain(w * w, [w], create_graph=True)
    with pytest.raises(SymgradError, match="one input"):
        sg.explain((w * x).sum(), create_graph=True)
    with pytest.raises(SymgradError, match="3 entries"):
        sg.explain((w * w).sum(), [w], create_graph=True, grad_tensor=[1.0, 2.0, 3.0])


# --- the command line ---------------------------------------------------------------------------------------

CUBE = ["explain", "(w * w * w).sum()", "--value", "w=[1.0, 2.0]", "--wrt", "w", "--create-graph"]


def test_cli_create_graph_to_stdout(capsys):
    assert cli.main([*CUBE, "--grad-tensor", "[1, -2]"]) == 0
    out = capsys.readouterr().out
    w = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((w * w * w).sum(), w, create_graph=True)
    (product,) = torch.autograd.grad(g, w, torch.tensor([1.0, -2.0], dtype=torch.float64))
    assert out.startswith("# What `create_graph` does for `(w * w * w).sum()`")
    assert rf"&= \begin{{pmatrix}} {' & '.join(number_latex(p) for p in product)} \end{{pmatrix}}" in out


def test_cli_create_graph_zh_tex_without_checks(tmp_path):
    target = tmp_path / "cube.tex"
    assert cli.main([*CUBE, "--lang", "zh", "--format", "tex", "--no-check", "-o", str(target)]) == 0
    text = target.read_text(encoding="utf-8")
    assert r"\documentclass[UTF8,a4paper]{ctexart}" in text and "跳过了与 torch 的核对" in text


def test_cli_create_graph_pdf(tmp_path):
    require_engine("en")
    target = tmp_path / "cube.pdf"
    assert cli.main([*CUBE, "--format", "pdf", "-o", str(target)]) == 0
    assert target.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["explain", "w * w", "--value", "w=[1.0, 2.0]", "--create-graph"], "one-element output"),
        (["explain", "(X @ w).sum()", "--shape", "X=2,3", "--shape", "w=3", "--create-graph"], "pass --wrt NAME"),
        ([*CUBE, "--grad-tensor", "[1, 2, 3]"], "3 entries"),
        ([*CUBE, "--grad-tensor", "w"], "cannot be called 'w'"),
    ],
)
def test_cli_create_graph_refuses_in_one_line(capsys, args, message):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("symgrad: error: ") and message in err and err.count("\n") == 1


def test_a_symbolic_u_leaves_the_product_as_a_law():
    w = sg.tensor([1.0, 2.0], requires_grad=True, name="w")
    e = sg.explain((w * w * w).sum(), [w], create_graph=True, grad_tensor="v")
    wt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad((wt * wt * wt).sum(), wt, create_graph=True)
    hessian = torch.stack([torch.autograd.grad(g[i], wt, retain_graph=True)[0] for i in range(2)])
    np.testing.assert_allclose(e.gradient_values, g.detach().numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(e.hessian_values, hessian.reshape(-1).numpy(), rtol=0, atol=1e-12)
    assert e.hvp_values is None and e.rows == [] and e.check["ok"] and not e.check["hvp"]
    assert e.tangent == "v" and dict(e.code)["hvp_w"] == "6 * (v * w)" and e.hvp_proved


def test_large_inputs_are_checked_at_random_values_instead_of_entry_by_entry():
    W = sg.symbols("W", (3, 4), requires_grad=True)
    x = sg.symbols("x", (4, 1))
    e = sg.explain((W @ x).tanh().sum(), [W], create_graph=True)
    assert e.hessian_entries == [] and e.proved is None
    assert e.check["ok"] and e.check["random"] and e.check["hvp"]
    assert "at random inputs of these shapes" in render_explanation(e, "md")


@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "values"])
def test_a_linear_function_has_a_zero_hessian_where_torchs_second_backward_refuses(symbolic):
    """torch.autograd.grad refuses the constant gradient ("does not require grad"); the Hessian is 0, as
    torch.autograd.functional.hessian says, and the document is checked against that."""
    if symbolic:
        w, x = sg.symbols("w", (sg.dims("n")[0],), requires_grad=True), sg.symbols("x", (sg.dims("n")[0],))
    else:
        w, x = sg.tensor([1.0, 2.0], requires_grad=True, name="w"), sg.tensor([0.5, 3.0], name="x")
    e = sg.explain((w * x).sum(), [w], create_graph=True)
    assert isinstance(e, SecondOrderExplanation) and not e.failed
    expected = torch.autograd.functional.hessian(lambda t: (t * torch.tensor([0.5, 3.0])).sum(), torch.ones(2))
    assert torch.equal(expected, torch.zeros(2, 2))
    assert "H = 0" in render_explanation(e, "md") if symbolic else e.check["ok"]
