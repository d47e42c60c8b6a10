"""``explain``: the one entry point for explanation documents, first order or, with ``create_graph=True``,
second order.

>>> import symgrad as sg
>>> w = sg.tensor([1.0, 2.0], requires_grad=True, name="w")
>>> type(explain((w * w).sum(), [w], create_graph=True, run_check=False)).__name__
'SecondOrderExplanation'
"""

from __future__ import annotations

from typing import Any

from ..core.tensor import Tensor
from .explanation import Explanation
from .explanation import explain as explain_first_order
from .second_order import SecondOrderExplanation, explain_second_order


def explain(
    output: Tensor,
    wrt: list[Tensor] | None = None,
    *,
    grad_tensor: Any = None,
    expression: str = "",
    lang: str = "en",
    run_check: bool = True,
    create_graph: bool = False,
) -> Explanation | SecondOrderExplanation:
    """A document explaining what ``backward()`` computes for ``output`` (see
    :func:`symgrad.report.explanation.explain`), or, with ``create_graph=True``, what
    ``backward(create_graph=True)`` and a second backward compute for a one-element ``output``: the gradient
    law, the Hessian as its Jacobian, and ``torch.autograd.grad(g, x, u)`` as ``uᵀH = H u`` (see
    :func:`symgrad.report.second_order.explain_second_order`; there ``grad_tensor`` is ``u``).

    Render it with :func:`symgrad.report.render_explanation` (``md`` or ``tex``)."""
    make = explain_second_order if create_graph else explain_first_order
    return make(output, wrt, grad_tensor=grad_tensor, expression=expression, lang=lang, run_check=run_check)
