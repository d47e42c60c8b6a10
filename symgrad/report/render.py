"""Reports and explanations rendered through their templates (``derive.md.j2``, ``explain.*.j2``).

>>> import symgrad as sg
>>> from symgrad.report.derivation import derive
>>> w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = sg.tensor([[1.0], [1.0]], name="x")
>>> render_markdown(derive(w @ x, [w], run_check=False)).splitlines()[0]
'# Gradient of `w @ x`'
"""

from __future__ import annotations

import html
import re
from dataclasses import replace
from typing import Any

import sympy

from ..core.errors import SymgradError, TorchValueError, WorkBudgetError
from ..emit.templates import document_environment, text_environment
from .formats import FORMATS
from .graph import Graph
from .html import HtmlSourceFormat, markdown_html, page, step_links, title_of


def _value_suffix(entry: Any) -> str:
    """`` = 3`` after an entry's formula, unless the formula is itself that number."""
    if entry.value is None:
        return ""
    try:
        float(entry.formula)
        return ""
    except ValueError:
        return f" = {entry.value:.6g}"


def render_markdown(derivation: Any) -> str:
    """A :class:`symgrad.report.derivation.Derivation` as Markdown with ``$…$`` math."""
    template = text_environment().get_template("derive.md.j2")
    return template.render(d=derivation, latex=sympy.latex, value=_value_suffix)


def render_explanation(explanation: Any, fmt: str, *, picture: Graph | None = None) -> str:
    """A :class:`symgrad.report.explanation.Explanation` as a Markdown (``md``) or standalone LaTeX
    (``tex``) document, or as one HTML page (``html``) with ``picture`` drawn inside it (see
    :mod:`symgrad.report.html`)."""
    if fmt == "html":
        return _html_page(explanation, picture)
    if fmt not in FORMATS:
        raise TorchValueError(f"unknown format {fmt!r}: choose one of {', '.join([*FORMATS, 'html'])}")
    return _document(explanation, f"explain.{fmt}.j2", FORMATS[fmt])


def notebook_html(explanation: Any) -> str:
    """The page of ``explain --format html`` for a notebook's ``_repr_html_``, inside an ``<iframe>`` so that its
    styles and scripts stay its own: the graph inside it when Graphviz's dot can draw it, else without."""
    make_graph = getattr(explanation, "graph", None)
    try:
        text = render_explanation(explanation, "html", picture=make_graph() if make_graph is not None else None)
    except SymgradError as error:
        if isinstance(error, WorkBudgetError):
            raise
        text = render_explanation(explanation, "html")
    return (
        f'<iframe srcdoc="{html.escape(text)}" title="{html.escape(title_of_page(text))}" '
        'style="width: 100%; height: 80vh; border: 1px solid #d8dee4; border-radius: 6px"></iframe>'
    )


def title_of_page(text: str) -> str:
    found = re.search(r"<title>(.*?)</title>", text, flags=re.S)
    return html.unescape(found.group(1)) if found else "symgrad"


def _document(explanation: Any, template: str, fmt: Any) -> str:
    text = document_environment().get_template(template).render(e=explanation, f=fmt)
    return re.sub(r"\n{3,}", "\n\n", text)  # the templates' optional sections leave runs of blank lines


def _html_page(explanation: Any, picture: Graph | None) -> str:
    fmt = HtmlSourceFormat(step_links(explanation, picture) if picture is not None else None)
    shown = replace(explanation, picture="graph" if picture is not None else None)  # drawn where the text says
    text = _document(shown, "explain.md.j2", fmt)
    body = markdown_html(text, explanation.lang)
    drawing = None
    if picture is not None:
        links = {key: f"#s-{key}" for key in fmt.anchored}
        drawing = picture.draw("svg", links=links)
    return page(body, explanation.lang, title=title_of(text), drawing=drawing)
