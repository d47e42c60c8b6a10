"""The Markdown math helper: which spans are math, and that KaTeX (strict mode) accepts or rejects them."""

from __future__ import annotations

import resource

import pytest
from markdown_math import katex_errors, math_spans, require_katex


def test_inline_and_display_spans_in_order():
    markdown = "The loss $L = \\sum_i y_i$ has\n\n$$\n\\frac{\\partial L}{\\partial y_i} = 1\n$$\n\nand $x^2$."
    assert math_spans(markdown) == [
        ("L = \\sum_i y_i", False),
        ("\\frac{\\partial L}{\\partial y_i} = 1", True),
        ("x^2", False),
    ]


def test_display_math_spans_lines_and_may_sit_inside_a_line():
    markdown = "A $$\\begin{pmatrix} 1 & 2 \\\\\n3 & 4 \\end{pmatrix}$$ B"
    assert math_spans(markdown) == [("\\begin{pmatrix} 1 & 2 \\\\\n3 & 4 \\end{pmatrix}", True)]


def test_inline_math_stays_on_one_line():
    assert math_spans("costs $a\nb$ here") == []


def test_escaped_dollars_and_prices_are_not_math():
    assert math_spans("It costs \\$5, or \\$10 and $x$.") == [("x", False)]
    assert math_spans("Between $5 and $10 a day.") == []
    assert math_spans("$ x $ is not math, $y$ is") == [("y", False)]
    assert math_spans("$a \\$ b$") == [("a \\$ b", False)]


def test_code_spans_are_not_math():
    markdown = "Run `echo $HOME $x$` or ``a ` $b$`` then $c$; a lone ` backtick then $d$."
    assert math_spans(markdown) == [("c", False), ("d", False)]


def test_code_span_does_not_cross_a_paragraph():
    assert math_spans("an open ` tick\n\nthen $e$ and ` another") == [("e", False)]


def test_fenced_code_blocks_are_not_math():
    markdown = "$a$\n```python\nx = '$b$'  # $$c$$\n```\n~~~~\n$d$\n```\nstill code $e$\n~~~~\n$f$"
    assert math_spans(markdown) == [("a", False), ("f", False)]


def test_github_backtick_inline_math():
    assert math_spans("Inline $`\\sqrt{3}`$ math") == [("\\sqrt{3}", False)]


def test_katex_accepts_valid_math():
    require_katex()
    markdown = (
        "$$\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}$$\n\n"
        "Then $\\frac{\\partial y}{\\partial x}$ and $w_{0,1} \\odot x^{\\top}$."
    )
    assert len(math_spans(markdown)) == 3
    assert katex_errors(markdown) == []


@pytest.mark.parametrize("tex", ["\\frac{1}{", "\\input{x}", "\\unknowncommand"])
def test_katex_rejects_invalid_math(tex):
    require_katex()
    errors = katex_errors(f"ok $x$ then ${tex}$")
    assert len(errors) == 1
    assert errors[0].startswith(f"inline math 2 `{tex}`: KaTeX parse error:")


def test_katex_rejects_untrusted_commands_it_would_draw_as_red_text():
    require_katex()
    assert katex_errors("$\\href{https://pytorch.org}{x}$") == [
        "inline math 1 `\\href{https://pytorch.org}{x}`: KaTeX does not render untrusted command \\href"
    ]


def test_katex_errors_without_math_is_empty():
    assert katex_errors("no math, only \\$5 and `$x$`") == []


def test_katex_checks_many_spans_in_one_node_run():
    require_katex()
    markdown = "\n".join(f"Row {i}: $a_{{{i}}} = \\frac{{\\partial y}}{{\\partial x_{{{i}}}}}$" for i in range(200))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # node's CPU time, counted once it has exited
    assert katex_errors(markdown) == []
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 10  # one node run, not 200
