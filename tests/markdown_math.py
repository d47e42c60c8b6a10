"""Find the math spans of a Markdown document and check that each one parses with KaTeX.

KaTeX in strict mode accepts a subset of LaTeX math that Markdown viewers render (GitHub and Jupyter use
MathJax, VS Code and many others KaTeX). It runs under Node.js from tests/katex (install it with
`npm ci --prefix tests/katex`). A test calls `require_katex()` first: it skips when KaTeX
is missing, or fails when the environment variable SYMGRAD_REQUIRE_TOOLS=1 says the tools must be there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

KATEX_DIR = Path(__file__).resolve().parent / "katex"
CHECK_SCRIPT = KATEX_DIR / "check_math.js"

# An opening code fence: up to 3 spaces, then 3+ backticks or 3+ tildes (CommonMark).
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
# A line break followed by a blank line: the end of a paragraph.
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _blank_fenced_code(markdown: str) -> str:
    """Return `markdown` with every line of a fenced code block (fences included) emptied."""
    out: list[str] = []
    fence = ""  # the opening fence while inside a block
    for line in markdown.split("\n"):
        if fence:
            stripped = line.strip()
            # Closed by a fence of the same character, at least as long, and nothing else on the line.
            if (
                len(stripped) >= len(fence)
                and stripped == fence[0] * len(stripped)
                and len(line) - len(line.lstrip(" ")) <= 3
            ):
                fence = ""
            out.append("")
            continue
        match = _FENCE_OPEN.match(line)
        # A backtick fence's info string may not contain a backtick.
        if match and not (match[1][0] == "`" and "`" in line[match.end() :]):
            fence = match[1]
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def _run_length(text: str, start: int, char: str) -> int:
    """Length of the run of `char` starting at `start`."""
    end = start
    while end < len(text) and text[end] == char:
        end += 1
    return end - start


def _code_span_end(text: str, start: int, ticks: int) -> int:
    """Index just past the code span opened by `ticks` backticks at `start`, or -1 if it is never closed.

    The closer is a run of exactly `ticks` backticks; a span does not cross a blank line (paragraph end).
    """
    i = start + ticks
    while i < len(text):
        if _BLANK_LINE.match(text, i):
            return -1
        if text[i] == "`":
            run = _run_length(text, i, "`")
            if run == ticks:
                return i + run
            i += run
        else:
            i += 1
    return -1


def _inline_math_end(text: str, start: int) -> int:
    """Index of the `$` closing the inline math opened at `start`, or -1 if this `$` opens no math.

    Pandoc's rules, which keep prices like "$5 and $10" out: the content is on one line, starts and ends
    with a non-space, a `\\$` inside it does not close it, and the closing `$` is not followed by a digit.
    """
    i = start + 1
    if i >= len(text) or text[i].isspace():
        return -1
    while i < len(text) and text[i] != "\n":
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "$":
            if text[i - 1].isspace() or text[i + 1 : i + 2].isdigit():
                return -1
            return i
        i += 1
    return -1


def math_spans(markdown: str) -> list[tuple[str, bool]]:
    """The math in `markdown` as (tex, is_display) pairs, in document order.

    The rules (close to GitHub's and Jupyter's):
    - `$$ ... $$` is display math and may span lines; its tex is returned without surrounding whitespace.
    - `$...$` is inline math: on one line, no space just inside either `$`, the closing `$` not followed by a
      digit (pandoc's rules). GitHub's `` $`...`$ `` form is inline math too (the tex between the backticks).
    - `\\$` is a literal dollar sign, outside math and inside it.
    - Nothing inside a code span (`` `...` ``, closed by a backtick run of the same length) or a fenced code
      block (``` or ~~~) is math. Indented code blocks and HTML are not recognized.

    >>> math_spans("Let $x^2$ cost \\\\$5, `$not$` and $$\\n\\\\frac{a}{b}\\n$$")
    [('x^2', False), ('\\\\frac{a}{b}', True)]
    """
    text = _blank_fenced_code(markdown)
    spans: list[tuple[str, bool]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":  # a backslash escape, e.g. \$ or \`
            i += 2
        elif char == "`":
            ticks = _run_length(text, i, "`")
            end = _code_span_end(text, i, ticks)
            i = end if end >= 0 else i + ticks
        elif text.startswith("$$", i):
            end = text.find("$$", i + 2)
            if end < 0:
                i += 2
                continue
            spans.append((text[i + 2 : end].strip(), True))
            i = end + 2
        elif text.startswith("$`", i):
            end = text.find("`$", i + 2)
            if end < 0 or "\n" in text[i + 2 : end]:
                i += 1
                continue
            spans.append((text[i + 2 : end], False))
            i = end + 2
        elif char == "$":
            end = _inline_math_end(text, i)
            if end < 0:
                i += 1
                continue
            spans.append((text[i + 1 : end], False))
            i = end + 1
        else:
            i += 1
    return spans


def katex_available() -> bool:
    """Whether node is on PATH and KaTeX is installed in tests/katex/node_modules."""
    return shutil.which("node") is not None and (KATEX_DIR / "node_modules" / "katex" / "package.json").is_file()


def require_katex() -> None:
    """Skip the calling test when KaTeX is unavailable; fail it instead if SYMGRAD_REQUIRE_TOOLS=1."""
    import pytest

    if katex_available():
        return
    reason = "KaTeX is not available: needs node on PATH and `npm ci --prefix tests/katex` (from the repository root)"
    if os.environ.get("SYMGRAD_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{reason}; SYMGRAD_REQUIRE_TOOLS=1 requires it", pytrace=False)
    pytest.skip(reason)


def katex_errors(markdown: str) -> list[str]:
    """One message per math span of `markdown` that KaTeX rejects (strict mode); [] if all parse.

    A message reads "inline math 3 `\\foo`: KaTeX parse error: ...", numbering the spans of `math_spans`
    from 1. All spans are checked by one run of tests/katex/check_math.js.
    """
    spans = math_spans(markdown)
    if not spans:
        return []
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    payload = json.dumps([{"tex": tex, "display": display} for tex, display in spans])
    proc = subprocess.run(
        [node, str(CHECK_SCRIPT)], input=payload, capture_output=True, text=True, encoding="utf-8", timeout=120
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{CHECK_SCRIPT.name} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    results = json.loads(proc.stdout)
    return [
        f"{'display' if display else 'inline'} math {number} `{' '.join(tex.split())}`: {error}"
        for number, ((tex, display), error) in enumerate(zip(spans, results), start=1)
        if error is not None
    ]
