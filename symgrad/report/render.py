"""Reports and explanations rendered through their templates (``derive.md.j2``, ``explain.*.j2``).

>>> import symgrad as sg
>>> from symgrad.report.derivation import derive
>>> w = sg.tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = sg.tensor([[1.0], [1.0]], name="x")
>>> render_markdown(derive(w @ x, [w], run_check=False)).splitlines()[0]
'# Gradient of `w @ x`'
"""

from __future__ import annotations

import re
from typing import Any

import sympy

from ..core.errors import TorchValueError
from ..emit.templates import document_environment, text_environment
from .formats import FORMATS


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


def render_explanation(explanation: Any, fmt: str) -> str:
    """A :class:`symgrad.report.explanation.Explanation` as a Markdown (``md``) or standalone LaTeX
    (``tex``) document."""
    if fmt not in FORMATS:
        raise TorchValueError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    text = document_environment().get_template(f"explain.{fmt}.j2").render(e=explanation, f=FORMATS[fmt])
    return re.sub(r"\n{3,}", "\n\n", text)  # the templates' optional sections leave runs of blank lines
