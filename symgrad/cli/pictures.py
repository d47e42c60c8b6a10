"""Where a document's picture of its graph goes: ``NAME-graph.svg`` beside ``NAME.md`` (``.pdf`` beside ``.tex``),
as ``symgrad explain -o`` and ``symgrad catalogue`` write it.

>>> from pathlib import Path
>>> picture_name(Path("out/seed é.md"), "svg")
'seed__-graph.svg'
"""

from __future__ import annotations

from pathlib import Path


def picture_name(document: Path, kind: str) -> str:
    """``NAME-graph.svg`` beside ``NAME.md``: letters, digits, ``-`` and ``_`` only, which every Markdown
    viewer and LaTeX's graphicx (which reads a second dot as the extension) take as they are."""
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in document.stem)
    return f"{stem}-graph.{kind}"
