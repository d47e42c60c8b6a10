"""Where a command's result goes and in which format: ``-o FILE`` or stdout, and a document's format from
``--format`` or from the file's suffix.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import SymgradError
from ..core.files import write_file


def put_result(args: argparse.Namespace, text: str) -> None:
    """``derive``'s result: to ``-o FILE`` when given, else to stdout."""
    if args.output:
        write_file(Path(args.output), text)
    else:
        print(text, end="")


SUFFIX_FORMATS = {".pdf": "pdf", ".tex": "tex", ".md": "md", ".markdown": "md"}


def document_format(args: argparse.Namespace) -> None:
    """``args.format`` for ``explain``: as given (``markdown`` is ``md``), else from ``-o FILE``'s suffix, else md;
    a format that contradicts the file's suffix is refused rather than written under the wrong name."""
    given = "md" if args.format == "markdown" else args.format
    implied = SUFFIX_FORMATS.get(Path(args.output).suffix.lower()) if args.output else None
    if given is not None and implied is not None and given != implied:
        raise SymgradError(f"-o {args.output} names a .{implied} file but --format is {given}: make them agree")
    args.format = given or implied or "md"
