"""An explanation as one HTML page that works offline: KaTeX and its fonts inline, the graph inline as SVG,
each graph node linked to its step in the text and each step back to its node, long formulas folded away,
and a copy button on every formula and every block of code.

The page is written from the same Markdown body as the ``md`` format (one set of templates), read by
markdown-it with its dollar-math plugin; the math is typeset in the browser by the KaTeX shipped inside
the page, so nothing is fetched from anywhere.

>>> html = markdown_html("A law: $x^2$.\\n\\n$$\\ny = x < z\\n$$\\n", "en")
>>> '<span class="math">x^2</span>' in html, 'y = x &lt; z' in html, 'class="copy"' in html
(True, True, True)
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup
from mdit_py_plugins.dollarmath import dollarmath_plugin

from ..core.latex import bar_latex, group_end
from ..emit.templates import page_environment, template_dir
from .formats import MarkdownFormat, Step
from .graph import Graph

HTML_LINE_BUDGET = 40.0
"""em of display math a line may take: the page's column is 48 em of body text, and KaTeX sets display math
about 1.2 times larger."""

LONG_ROWS = 12
"""A displayed formula of more rows than this is folded away behind a summary that opens it."""

FIGURE_MARK = "@@symgrad-figure@@"

WORDS = {
    "en": {
        "copy_latex": "Copy LaTeX",
        "copy_code": "Copy code",
        "copied": "Copied",
        "rows": "Show the formula ({} rows)",
        "graph": "graph",
    },
    "zh": {
        "copy_latex": "复制 LaTeX",
        "copy_code": "复制代码",
        "copied": "已复制",
        "rows": "展开公式（{} 行）",
        "graph": "计算图",
    },
}


class HtmlSourceFormat(MarkdownFormat):
    """The Markdown an HTML page is read from: display math is broken to the page's width, a step that
    defines a node of the graph carries an anchor and links back to the node, and the figure is a mark the
    page replaces with the drawing itself."""

    name = "html"
    line_budget = HTML_LINE_BUDGET

    def __init__(self, links: Mapping[str, str] | None = None) -> None:
        self.links = dict(links or {})  # a step's left-hand side (LaTeX) -> the key of its graph node
        self.anchored: set[str] = set()  # the keys whose step carries the anchor (the first one met)
        self.caption = ""

    def display(self, steps: Sequence[Any]) -> str:
        return super().display([self._linked(s) for s in steps])

    def _linked(self, step: Any) -> Any:
        key = self.links.get(step.lhs) if step is not None else None
        if key is None:
            return step
        lhs = rf"\href{{\#g-{key}}}{{{step.lhs}}}"
        if key not in self.anchored:
            self.anchored.add(key)
            lhs = rf"\htmlId{{s-{key}}}{{{lhs}}}"
        return Step(lhs, step.rhs)

    def figure(self, path: str, caption: str) -> str:
        self.caption = caption
        return FIGURE_MARK


def step_links(explanation: Any, picture: Graph) -> dict[str, str]:
    """Which displayed steps define which node of ``picture``: the forward pass's ``Z_k = …`` and the backward
    pass's ``Z̄_k = …`` for the k-th op, ``x̄ = …`` for an input (the law's steps; none without a law)."""
    law = getattr(explanation, "law", None)
    links: dict[str, str] = {}
    ops = [node for node in picture.nodes if node.kind == "op"]
    forward = list(law.forward) if law is not None else []
    if forward and len(forward) == len(ops):  # the same topological order of the same ops
        for step, node in zip(forward, ops):
            links[step.lhs] = node.key
            links[_bar(step.lhs)] = node.key
    for node in picture.nodes:
        if node.kind == "leaf":
            links.setdefault(bar_latex(node.name), node.key)
    return links


def _bar(name: str) -> str:
    r"""The cotangent's name for an intermediate's: ``Z_{3}`` -> ``\bar{Z}_{3}``, ``\mathrm{out}`` -> its overline."""
    if name == r"\mathrm{out}":
        return r"\overline{\mathrm{out}}"
    letter, sub = re.fullmatch(r"(.*?)(_\{.*\})?", name).groups()  # type: ignore[union-attr]
    return rf"\bar{{{letter}}}{sub or ''}"


def markdown_html(text: str, lang: str) -> str:
    """The body of a page from an explanation's Markdown: math left as LaTeX for KaTeX, escaped."""
    words = WORDS[lang]
    md = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin, allow_labels=False, double_inline=True)
    md.add_render_rule(
        "math_inline", lambda _renderer, tokens, i, *_: f'<span class="math">{html.escape(tokens[i].content)}</span>'
    )
    md.add_render_rule("math_block", lambda _renderer, tokens, i, *_: _formula(tokens[i].content.strip(), words))
    md.add_render_rule("fence", lambda _renderer, tokens, i, *_: _code(tokens[i], words))
    md.add_render_rule("code_block", lambda _renderer, tokens, i, *_: _code(tokens[i], words))
    return md.render(text)


def _inline_math(latex: str) -> str:
    return f'<span class="math">{html.escape(latex)}</span>'


def _formula(latex: str, words: Mapping[str, str]) -> str:
    shown = (
        f'<div class="formula"><div class="math display">{html.escape(latex)}</div>'
        f'<button type="button" class="copy" data-copy="{html.escape(unlinked(latex))}">{words["copy_latex"]}'
        "</button></div>\n"
    )
    rows = latex.count("\\\\") + 1
    if rows <= LONG_ROWS:
        return shown
    return f'<details class="long"><summary>{html.escape(words["rows"].format(rows))}</summary>\n{shown}</details>\n'


def unlinked(latex: str) -> str:
    r"""The LaTeX a reader copies: the page's own ``\htmlId{…}{X}`` and ``\href{…}{X}`` become ``X``.

    >>> unlinked(r"\htmlId{s-n1}{\href{\#g-n1}{Z_{1}}} &= x_{2}")
    'Z_{1} &= x_{2}'
    """
    while (found := re.search(r"\\(?:htmlId|href)\{[^{}]*\}\{", latex)) is not None:
        end = group_end(latex, found.end() - 1)
        latex = latex[: found.start()] + latex[found.end() : end - 1] + latex[end:]
    return latex


def _code(token: Token, words: Mapping[str, str]) -> str:
    code = token.content.rstrip("\n")
    language = token.info.strip().split()[0] if token.info.strip() else ""
    kind = f' class="language-{html.escape(language)}"' if language else ""
    return (
        f'<div class="code"><pre><code{kind}>{html.escape(code)}</code></pre>'
        f'<button type="button" class="copy" data-copy="{html.escape(code)}">{words["copy_code"]}</button></div>\n'
    )


def inline_svg(drawing: bytes) -> str:
    """Graphviz's SVG without its XML prologue, doctype and comments: an element to put inside a page."""
    text = drawing.decode("utf-8")
    text = text[text.index("<svg") :]
    return re.sub(r"<!--.*?-->\n?", "", text, flags=re.S)


@cache
def katex_assets() -> tuple[str, str]:
    """KaTeX's style sheet, its WOFF2 fonts inside as data: URLs, and its script (shipped in templates/katex)."""
    folder = template_dir() / "katex"

    def font(match: re.Match[str]) -> str:
        data = base64.b64encode((folder / "fonts" / f"{match.group(1)}.woff2").read_bytes()).decode("ascii")
        return f'url(data:font/woff2;base64,{data}) format("woff2")'

    css = (folder / "katex.min.css").read_text(encoding="utf-8")
    css = re.sub(
        r'url\(fonts/([\w-]+)\.woff2\) format\("woff2"\)(?:,url\(fonts/[\w-]+\.woff\) format\("woff"\))?'
        r'(?:,url\(fonts/[\w-]+\.ttf\) format\("truetype"\))?',
        font,
        css,
    )
    if "url(fonts/" in css:
        raise RuntimeError("KaTeX's style sheet names a font file the page cannot carry inline")
    return css, (folder / "katex.min.js").read_text(encoding="utf-8")


def page(body: str, lang: str, *, title: str, drawing: bytes | None = None, form: str = "") -> str:
    """A whole page around ``body`` (HTML from :func:`markdown_html`): the figure mark becomes the drawing."""
    words = WORDS[lang]
    figure = ""
    if drawing is not None:
        figure = f'<figure class="graph">{inline_svg(drawing)}</figure>'
    body = body.replace(f"<p>{FIGURE_MARK}</p>", figure).replace(FIGURE_MARK, "")
    css, script = katex_assets()
    return (
        page_environment()
        .get_template("page.html.j2")
        .render(
            lang=lang,
            title=title,
            katex_css=Markup(css),
            katex_js=Markup(script),
            body=Markup(body),
            form=Markup(form),
            words=words,
        )
    )


def title_of(markdown: str) -> str:
    """The page's title: the document's first heading, without its Markdown."""
    first = next((line for line in markdown.splitlines() if line.startswith("# ")), "# symgrad")
    return first[2:].replace("`", "").strip()
