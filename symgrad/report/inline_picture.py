"""The graph's picture inside a Markdown document, for notebooks: an SVG drawn by Graphviz's ``dot`` as a ``data:``
URI, so that ``_repr_markdown_`` needs no file beside it. Without ``dot`` (or for a graph it cannot draw) there is
no picture, silently: a notebook cell is no place for an error about an optional program.

>>> import symgrad as sg
>>> w = sg.symbols("w", (2,), requires_grad=True)
>>> uri = svg_data_uri(lambda: sg.graph((w * w).sum()))
>>> uri is None or uri.startswith("data:image/svg+xml;base64,")
True
>>> print(svg_data_uri(None))
None
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from ..core.errors import SymgradError, WorkBudgetError


def svg_data_uri(make_graph: Callable[[], Any] | None) -> str | None:
    """``data:image/svg+xml;base64,…`` of the graph ``make_graph()`` builds, or None without one or without dot."""
    if make_graph is None:
        return None
    try:
        drawing = make_graph().draw("svg")
    except WorkBudgetError:
        raise
    except SymgradError:
        return None
    return "data:image/svg+xml;base64," + base64.b64encode(drawing).decode("ascii")
