"""Pages that fit: in the PDFs ``symgrad explain`` builds, no word runs past the right margin.

Wide formulas break at their top-level ``+``, ``-`` and ``\\odot``, and matrices wider than the page keep their
first and last columns around ``\\cdots``. Each case below used to run off the page. The margin is read from the
document's own geometry; every word's box, as ``pdftotext -bbox`` reports it, must end inside it.
PDFs need pdflatex and xelatex with ctex, and pdftotext (poppler-utils); the tests skip without them unless
SYMGRAD_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from tools import require_engine, require_tool

from symgrad.reader import parse, parse_shape, parse_values
from symgrad.report import explain, render_explanation
from symgrad.report.tex import compile_pdf

BP_PER_CM = 72 / 2.54
TOLERANCE = 1.0  # bp: a justified line ends at the margin, give or take rounding in the PDF
# A full-width punctuation mark's ink sits in the left 0.4 em of its 1 em box, and at the end of a line xeCJK
# squeezes the empty rest past the margin: such a word ends where its last mark's ink does.
PUNCTUATION_BLANK = 0.6  # em
FULL_WIDTH_PUNCTUATION = "。，、；：！？）」』"

CASES = {
    "cross_entropy": ("F.cross_entropy(Z, y)", {"Z": "3,4"}, {"y": "[0,2,1]"}, ["Z"]),
    "matmul_6x6": ("(A @ B).sum()", {"A": "6,6", "B": "6,6"}, {}, ["A"]),
    "mlp_law": (
        "F.mse_loss(W2 @ torch.tanh(W1 @ X + b1) + b2, Y)",
        {"W1": "h,n", "b1": "h,1", "W2": "k,h", "b2": "k,1", "X": "n,m", "Y": "k,m"},
        {},
        None,
    ),
}


def right_margin_edge(tex: str) -> float:
    """Where the text block ends, in bp from the page's left edge: 1 in plus \\oddsidemargin plus \\textwidth."""

    def length(name: str) -> float:
        match = re.search(r"\\setlength\{\\" + name + r"\}\{([\d.]+)cm\}", tex)
        assert match, f"the document sets no \\{name} in cm"
        return float(match.group(1)) * BP_PER_CM

    return 72.0 + length("oddsidemargin") + length("textwidth")


def words_past(pdf: bytes, edge: float, tmp_path) -> list[str]:
    path = tmp_path / "doc.pdf"
    path.write_bytes(pdf)
    xhtml = subprocess.run(["pdftotext", "-bbox", str(path), "-"], capture_output=True, text=True, check=True).stdout
    pages = re.findall(r'<page width="([\d.]+)" height="[\d.]+">(.*?)</page>', xhtml, re.S)
    assert pages, "pdftotext found no pages"
    past = []
    for number, (width, body) in enumerate(pages, 1):
        assert edge < float(width)
        for y_min, x_max, y_max, word in re.findall(
            r'<word xMin="[\d.]+" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', body
        ):
            right = float(x_max)
            if word[-1] in FULL_WIDTH_PUNCTUATION:
                right -= PUNCTUATION_BLANK * (float(y_max) - float(y_min))
            if right > edge + TOLERANCE:
                past.append(f"page {number}: {word!r} ends at {right:.1f} bp, the margin is at {edge:.1f} bp")
    return past


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_word_is_inside_the_margins(case, lang, tmp_path):
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
    assert words_past(compile_pdf(tex, lang), right_margin_edge(tex), tmp_path) == []
