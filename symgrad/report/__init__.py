"""What people read: derivation reports and explanation documents.

- :mod:`.derivation`: what ``symgrad derive`` shows, as data (entries, Jacobians, vᵀJ, the
  torch check; laws and proofs for symbolic shapes), printed as text or JSON;
- :mod:`.explanation`: an explanation of what ``backward()`` computes for one expression,
  every statement derived for it; :mod:`.second_order`: what ``create_graph=True`` does (the
  gradient law, the Hessian as its Jacobian, a second backward as an HVP); :mod:`.documents`: ``explain``,
  which makes either; :mod:`.render` turns both into Markdown and LaTeX through
  the templates, with :mod:`.formats` saying how each format writes math and code;
- :mod:`.latex`: numbers and elided formulas in LaTeX; :mod:`.tex`: PDFs with a real TeX engine;
- :mod:`.op_reference`: ``generated/ops.md``, the supported ops and refused options, read from the code.

User text reaches a document only through the escaping functions of :mod:`symgrad.core.latex`
and :mod:`.latex`. This package imports :mod:`symgrad.emit` (templates, listings) and everything below it.
"""

from .derivation import Derivation, LawDerivation, derive, derive_law
from .documents import explain
from .explanation import LANGUAGES, Explanation
from .render import render_explanation, render_markdown
from .second_order import SecondOrderExplanation, explain_second_order
from .tex import compile_pdf

__all__ = [
    "LANGUAGES",
    "Derivation",
    "Explanation",
    "LawDerivation",
    "SecondOrderExplanation",
    "compile_pdf",
    "derive",
    "derive_law",
    "explain",
    "explain_second_order",
    "render_explanation",
    "render_markdown",
]
