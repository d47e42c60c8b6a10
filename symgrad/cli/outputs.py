"""Where a command's result goes and in which format: ``-o FILE`` or stdout, and a document's format from
``--format`` or from the file's suffix.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..core.errors import SymgradError, WorkBudgetError
from ..core.files import write_file
from ..report import render_explanation
from .errors import say


def put_result(args: argparse.Namespace, text: str) -> None:
    """``derive``'s result: to ``-o FILE`` when given, else to stdout."""
    if args.output:
        write_file(Path(args.output), text)
    else:
        print(text, end="")


SUFFIX_FORMATS = {".pdf": "pdf", ".tex": "tex", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def document_format(args: argparse.Namespace) -> None:
    """``args.format`` for ``explain``: as given (``markdown`` is ``md``), else from ``-o FILE``'s suffix, else md;
    a format that contradicts the file's suffix is refused rather than written under the wrong name."""
    given = "md" if args.format == "markdown" else args.format
    implied = SUFFIX_FORMATS.get(Path(args.output).suffix.lower()) if args.output else None
    if given is not None and implied is not None and given != implied:
        raise SymgradError(f"-o {args.output} names a .{implied} file but --format is {given}: make them agree")
    args.format = given or implied or "md"


def write_page(target: Path | None, explanation: Any, picture: Any) -> None:
    """``explain --format html``: the page, to ``target`` or stdout, with the graph drawn inside it; without dot,
    the page goes without its picture and a note says why."""
    try:
        text = render_explanation(explanation, "html", picture=picture)
    except SymgradError as error:
        if picture is None or isinstance(error, WorkBudgetError):
            raise
        say(f"symgrad: note: the page has no graph picture: {error}")
        text = render_explanation(explanation, "html")
    if target is not None:
        write_file(target, text)
    else:
        print(text, end="")
