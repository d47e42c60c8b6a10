"""Jinja2 rendering: templates live in the top-level ``templates/`` folder.

In a wheel they ship as ``symgrad/templates``; in a source checkout or an
editable install they are read from the repository's ``templates/``.

>>> template_dir().name
'templates'
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import sympy

from .report import Derivation, Entry


def template_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("symgrad's templates/ folder is missing from this installation")


@cache
def environment() -> jinja2.Environment:
    """The Markdown/text environment (default delimiters; LaTeX documents get their own)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=False,
    )
    env.globals["latex"] = sympy.latex
    env.globals["value"] = _value_suffix
    return env


def _block_environment(**delimiters: str) -> jinja2.Environment:
    """Templates whose block tags leave no blank lines or indentation behind."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        **delimiters,
    )


@cache
def code_environment() -> jinja2.Environment:
    """The environment for emitted Python."""
    return _block_environment()


def _value_suffix(entry: Entry) -> str:
    if entry.value is None:
        return ""
    try:
        float(entry.formula)
        return ""
    except ValueError:
        return f" = {entry.value:.6g}"


def render_markdown(d: Derivation) -> str:
    """A derivation as Markdown with ``$…$`` math."""
    return environment().get_template("derive.md.j2").render(d=d)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


@cache
def document_environment() -> jinja2.Environment:
    """The environment for explanations, LaTeX and Markdown alike: TeX-safe delimiters
    (``((* block *))``, ``((( variable )))``, ``((# comment #))``) so that TeX's braces and
    ``{%`` never clash with Jinja's."""
    return _block_environment(
        block_start_string="((*",
        block_end_string="*))",
        variable_start_string="(((",
        variable_end_string=")))",
        comment_start_string="((#",
        comment_end_string="#))",
    )


def render_explanation(explanation: Any, fmt: str) -> str:
    """An :class:`symgrad.explain.Explanation` as a Markdown (``md``) or standalone LaTeX (``tex``) document."""
    from .formats import FORMATS

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    text = document_environment().get_template(f"explain.{fmt}.j2").render(e=explanation, f=FORMATS[fmt])
    return re.sub(r"\n{3,}", "\n\n", text)  # the templates' optional sections leave runs of blank lines
