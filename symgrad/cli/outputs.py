"""Where a command's result goes and in which format: ``-o FILE`` or stdout, and a document's format from
``--format`` or from the file's suffix.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from ..core.errors import SymgradError, WorkBudgetError
from ..core.files import OutputError, write_file
from ..report import render_explanation
from .errors import say


def put_result(args: argparse.Namespace, text: str) -> None:
    """``derive``'s result: to ``-o FILE`` when given, else to stdout."""
    if args.output:
        saved(Path(args.output), text, args)
    else:
        print(text, end="")


def saved(path: Path, data: str | bytes, args: argparse.Namespace) -> Path:
    """Write ``data`` to ``path`` (``-o FILE``, or a picture beside it) and say so on stderr. A symlink is refused
    unless ``--force``: writing through it would change a file the command line does not name."""
    if path.is_symlink() and not getattr(args, "force", False):
        raise OutputError(
            f"cannot write {path}: it is a symlink to {os.readlink(path)}; name that file, or pass --force"
        )
    write_file(path, data)
    if path.is_file():  # not /dev/stdout or a pipe
        say(f"symgrad: wrote {path}")
    return path


SUFFIX_FORMATS = {".pdf": "pdf", ".tex": "tex", ".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}


def document_format(args: argparse.Namespace) -> None:
    """``args.format`` for ``explain``: as given (``markdown`` is ``md``), else from ``-o FILE``'s suffix, else md;
    a format that contradicts the file's suffix is refused rather than written under the wrong name."""
    given = "md" if args.format == "markdown" else args.format
    implied = SUFFIX_FORMATS.get(Path(args.output).suffix.lower()) if args.output else None
    if given is not None and implied is not None and given != implied:
        raise SymgradError(f"-o {args.output} names a .{implied} file but --format is {given}: make them agree")
    args.format = given or implied or "md"


def write_page(target: Path | None, explanation: Any, picture: Any, args: argparse.Namespace) -> None:
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
        saved(target, text, args)
    else:
        print(text, end="")
