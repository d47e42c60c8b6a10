"""Whether a PDF that symgrad built keeps its words inside the text block, read with ``pdftotext -bbox``.

The block's edges come from the page and the document's own geometry: 1 in plus ``\\oddsidemargin`` on the left,
plus ``\\textwidth`` on the right, as the LaTeX templates set them (``templates/*.tex.j2``, or the ``.tex`` given).

>>> right_edge("\\\\setlength{\\\\textwidth}{16cm}\\n\\\\setlength{\\\\oddsidemargin}{0cm}")
525.5433070866142
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

BP_PER_CM = 72 / 2.54
TOLERANCE = 1.0  # bp: a justified line ends at the margin, give or take rounding in the PDF
# A full-width punctuation mark's ink sits in the left 0.4 em of its 1 em box, and at the end of a line xeCJK
# squeezes the empty rest past the margin: such a word ends where its last mark's ink does.
PUNCTUATION_BLANK = 0.6  # em
FULL_WIDTH_PUNCTUATION = "。，、；：！？）」』"
TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "explain.tex.j2"


@dataclass(frozen=True)
class Word:
    page: int  # from 1
    text: str
    x_min: float
    y_min: float
    x_max: float
    y_max: float

    @property
    def height(self) -> float:
        return self.y_max - self.y_min


def _length(tex: str, name: str) -> float:
    match = re.search(r"\\setlength\{\\" + name + r"\}\{(-?[\d.]+)cm\}", tex)
    assert match, f"the document sets no \\{name} in cm"
    return float(match.group(1)) * BP_PER_CM


def left_edge(tex: str | None = None) -> float:
    """Where the text block starts, in bp from the page's left edge."""
    return 72.0 + _length(tex or TEMPLATE.read_text(encoding="utf-8"), "oddsidemargin")


def right_edge(tex: str | None = None) -> float:
    """Where the text block ends, in bp from the page's left edge: 1 in plus \\oddsidemargin plus \\textwidth."""
    tex = tex or TEMPLATE.read_text(encoding="utf-8")
    return left_edge(tex) + _length(tex, "textwidth")


def words(pdf: bytes) -> list[Word]:
    """Every word of ``pdf`` with its box, page by page, as ``pdftotext -bbox`` reads them."""
    with tempfile.TemporaryDirectory(prefix="symgrad-bbox-") as folder:
        path = Path(folder) / "doc.pdf"
        path.write_bytes(pdf)
        xhtml = subprocess.run(["pdftotext", "-bbox", str(path), "-"], capture_output=True, text=True, check=True)
    pages = re.findall(r'<page width="[\d.]+" height="[\d.]+">(.*?)</page>', xhtml.stdout, re.S)
    assert pages, "pdftotext found no pages"
    found = []
    for number, body in enumerate(pages, 1):
        for x0, y0, x1, y1, text in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', body
        ):
            found.append(Word(number, text, float(x0), float(y0), float(x1), float(y1)))
    return found


def words_outside(pdf: bytes, tex: str | None = None) -> list[str]:
    """The words whose box leaves the text block on the left or the right, described; [] when all fit."""
    left, right = left_edge(tex), right_edge(tex)
    outside = []
    for w in words(pdf):
        end = w.x_max
        if w.text[-1] in FULL_WIDTH_PUNCTUATION:
            end -= PUNCTUATION_BLANK * w.height
        if end > right + TOLERANCE or w.x_min < left - TOLERANCE:
            outside.append(
                f"page {w.page}: {w.text!r} spans {w.x_min:.1f}–{end:.1f} bp, the text {left:.1f}–{right:.1f}"
            )
    return outside


def assert_inside(pdf: bytes, tex: str | None = None) -> None:
    """No word of ``pdf`` outside its text block; without pdftotext nothing is checked (unless
    SYMGRAD_REQUIRE_TOOLS=1, where that fails), so that a test's other checks still run."""
    if shutil.which("pdftotext") is None:
        if os.environ.get("SYMGRAD_REQUIRE_TOOLS") == "1":
            pytest.fail("pdftotext is not installed (Debian: poppler-utils); SYMGRAD_REQUIRE_TOOLS=1 requires it")
        return
    assert words_outside(pdf, tex) == []
