"""``explain --format html`` in a real browser: every formula typeset by the KaTeX inside the page, the graph
inline, nothing fetched, nothing wider than a 1000 px window; and the page's links between the graph and the text."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from browser import INSPECT, Opened, browser  # noqa: F401 - the fixture

import symgrad as sg
from symgrad import torch
from symgrad.cli import main
from symgrad.report import render_explanation

PAGES = {
    "seed": ["torch.mm(w, x)", "--value", "w=[[1.0, 2.0]]", "--value", "x=[[1.0, 1.0], [2.0, 2.0]]", "--wrt", "w"],
    "mlp_layer": ["torch.tanh(W @ X + b)", "--shape", "W=k,n", "--shape", "X=n,m", "--shape", "b=k,1", "--wrt", "W,b"],
    "matmul_6x6": ["(A @ B).tanh().sum()", "--shape", "A=6,6", "--shape", "B=6,6", "--wrt", "A"],
}


def write_page(tmp_path: Path, name: str, lang: str) -> Path:
    target = tmp_path / f"{name}_{lang}.html"
    assert main(["explain", *PAGES[name], "--lang", lang, "-o", str(target)]) == 0
    return target


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders_in_chromium(browser, tmp_path: Path, name: str, lang: str) -> None:  # noqa: F811
    target = write_page(tmp_path, name, lang)
    text = target.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text)  # no remote link, in the source too
    opened = Opened(browser)
    try:
        opened.page.goto(target.as_uri())
        seen = opened.inspect()
        assert opened.page.evaluate("document.documentElement.lang") == lang
    finally:
        opened.close()
    assert seen["formulas"] >= 3 and seen["untypeset"] == 0, seen
    assert seen["errors"] == [], seen["errors"]
    assert seen["svgs"] == 1
    assert seen["wide"] == [] and seen["scrollWidth"] <= seen["width"], seen
    assert [url for url in opened.requests if not url.startswith("data:")] == [target.as_uri()]
    assert opened.script_errors == []


def test_graph_nodes_and_steps_link_both_ways(browser, tmp_path: Path) -> None:  # noqa: F811
    target = write_page(tmp_path, "mlp_layer", "en")
    opened = Opened(browser)
    try:
        opened.page.goto(target.as_uri())
        to_steps = opened.page.eval_on_selector_all(
            "figure.graph a", "links => links.map(a => a.getAttribute('xlink:href') || a.getAttribute('href'))"
        )
        ids = set(opened.page.eval_on_selector_all("[id]", "elements => elements.map(e => e.id)"))
        to_nodes = opened.page.eval_on_selector_all("#result a[href^='#g-']", "links => links.map(a => a.hash)")
    finally:
        opened.close()
    assert len(to_steps) >= 4  # W, b and the ops that use them
    assert all(link.startswith("#s-") and link[1:] in ids for link in to_steps)
    assert to_nodes and all(link[1:] in ids for link in to_nodes)
    assert {link[3:] for link in to_steps} <= {link[3:] for link in to_nodes}  # each linked step links back


def test_copy_buttons_carry_plain_latex_and_the_code(tmp_path: Path) -> None:
    text = write_page(tmp_path, "mlp_layer", "en").read_text(encoding="utf-8")
    copies = re.findall(r'class="copy" data-copy="([^"]*)"', text)
    assert copies and not any("htmlId" in c or "href" in c for c in copies)
    assert any("\ngrad_W = t1 @ X.T\n" in html.unescape(c) for c in copies)  # the emitted torch code, whole


def test_the_notebook_shows_the_same_page_in_a_frame(browser, tmp_path: Path) -> None:  # noqa: F811
    n = sg.dims("n")[0]  # symbolic: the law's steps, which the graph's nodes link to
    w = sg.symbols("w", (n,), requires_grad=True)
    x = sg.symbols("x", (n,))
    explanation = sg.explain(torch.tanh(w @ x), [w])
    shown = explanation._repr_html_()
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1))
    assert page == render_explanation(explanation, "html", picture=explanation.graph())
    target = tmp_path / "notebook.html"
    target.write_text(f"<!DOCTYPE html><html><body><p>a notebook cell</p>{shown}</body></html>", encoding="utf-8")
    opened = Opened(browser)
    try:
        opened.page.goto(target.as_uri())
        frame = opened.page.frame_locator("iframe")
        frame.locator(".katex").first.wait_for()
        seen = opened.page.frames[1].evaluate(INSPECT)
        frame.locator("figure.graph a").first.click()  # a node's link: to its step, inside the frame
        inside = opened.page.frames[1].evaluate("[location.href, document.querySelectorAll('.reached').length]")
    finally:
        opened.close()
    assert seen["formulas"] >= 3 and seen["errors"] == [] and seen["untypeset"] == 0 and seen["svgs"] == 1, seen
    assert inside == ["about:srcdoc", 1]  # the notebook's own page is not loaded into the frame
