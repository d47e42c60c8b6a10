"""Jinja2 environments: templates live in the top-level ``templates/`` folder.

In a wheel they ship as ``symgrad/templates``; in a source checkout or an
editable install they are read from the repository's ``templates/``. Code
templates use Jinja's own delimiters; documents use TeX-safe ones, because
``{#`` and ``}}`` are everyday TeX.

>>> template_dir().name
'templates'
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jinja2


def template_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("symgrad's templates/ folder is missing from this installation")


def code_span(text: Any) -> str:
    """``text`` as one Markdown code span whatever it holds: fenced by more backticks than its longest run of
    them (CommonMark), with a space inside where it starts or ends with one, so that a backtick in a user's
    expression (a comment, say) cannot close the span and let raw HTML through.

    >>> code_span("x.sum() # `<img>`")
    '`` x.sum() # `<img>` ``'
    """
    text = " ".join(str(text).split())
    runs = [len(run) for run in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or runs else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _environment(*, trim: bool, escape: bool = False, **delimiters: str) -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=trim,
        lstrip_blocks=trim,
        autoescape=escape,
        **delimiters,
    )
    environment.filters["code_span"] = code_span
    return environment


@cache
def text_environment() -> jinja2.Environment:
    """Markdown reports: default delimiters, block tags keep their lines."""
    return _environment(trim=False)


@cache
def code_environment() -> jinja2.Environment:
    """Emitted Python: block tags leave no blank lines or indentation behind."""
    return _environment(trim=True)


@cache
def document_environment() -> jinja2.Environment:
    """Explanations, LaTeX and Markdown alike: TeX-safe delimiters (``((* block *))``,
    ``((( variable )))``, ``((# comment #))``) so that TeX's braces and ``{%`` never clash with Jinja's."""
    return _environment(
        trim=True,
        block_start_string="((*",
        block_end_string="*))",
        variable_start_string="(((",
        variable_end_string=")))",
        comment_start_string="((#",
        comment_end_string="#))",
    )


@cache
def page_environment() -> jinja2.Environment:
    """HTML pages: every value is escaped unless it is marked safe (the page's own rendered parts)."""
    return _environment(trim=True, escape=True)
