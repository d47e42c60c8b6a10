"""Pages that fit: in the PDFs ``symgrad explain`` builds, no word runs past the right margin.

Wide formulas break at their top-level ``+``, ``-`` and ``\\odot``, and matrices wider than the page keep their
first and last columns around ``\\cdots``; matrices whose cells are too wide even so break each cell into lines.
Each case below used to run off the page. The margins are read from the document's own geometry; every word's
box, as ``pdftotext -bbox`` reports it, must lie inside them (see ``tests/pdf_fit.py``).
PDFs need pdflatex and xelatex with ctex, and pdftotext (poppler-utils); the tests skip without them unless
SYMGRAD_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import pytest
from pdf_fit import words_outside
from tools import require_engine, require_tool

from symgrad.reader import parse, parse_shape, parse_values
from symgrad.report import explain, render_explanation
from symgrad.report.tex import compile_pdf

CASES = {
    "cross_entropy": ("F.cross_entropy(Z, y)", {"Z": "3,4"}, {"y": "[0,2,1]"}, ["Z"]),
    "matmul_6x6": ("(A @ B).sum()", {"A": "6,6", "B": "6,6"}, {}, ["A"]),
    # each entry of the Jacobian's row is a sum of six tanh' terms: too wide for even two columns, its cells break
    "tanh_matmul_6x6": ("(A @ B).tanh().sum()", {"A": "6,6", "B": "6,6"}, {}, ["A"]),
    # cells of fractions with exponents of fractions: wider than their estimate, the display is scaled to fit
    "attention_2x3": (
        "torch.softmax(Q @ K.mT / 2, dim=-1) @ V",
        {"Q": "2,3", "K": "2,3", "V": "2,2"},
        {},
        ["Q"],
    ),
    "mlp_law": (
        "F.mse_loss(W2 @ torch.tanh(W1 @ X + b1) + b2, Y)",
        {"W1": "h,n", "b1": "h,1", "W2": "k,h", "b2": "k,1", "X": "n,m", "Y": "k,m"},
        {},
        None,
    ),
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_word_is_inside_the_margins(case, lang):
    require_engine(lang)
    require_tool("pdftotext", "poppler-utils")
    expression, shapes, values, wrt = CASES[case]
    out = parse(
        expression,
        shapes={name: parse_shape(text) for name, text in shapes.items()},
        values={name: parse_values(text) for name, text in values.items()},
        requires_grad=wrt or True,
    )
    leaves = out.leaves()
    targets = [leaves[name] for name in wrt] if wrt else None
    tex = render_explanation(explain(out, targets, expression=expression, lang=lang, run_check=False), "tex")
    assert words_outside(compile_pdf(tex, lang), tex) == []
