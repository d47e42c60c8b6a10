"""Compile a LaTeX document to PDF with a real TeX engine.

English documents use pdflatex; Chinese ones xelatex with ctex. Shell escape is
off, and the engine runs in a temporary directory that is removed afterwards.

>>> engine_for("zh")
'xelatex'
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.errors import SymgradError

ENGINES = {"en": "pdflatex", "zh": "xelatex"}
DEBIAN_PACKAGES = {"pdflatex": "texlive-latex-base", "xelatex": "texlive-xetex texlive-lang-chinese"}
TIMEOUT = 300  # seconds; xelatex builds its font cache on the first run


def engine_for(lang: str) -> str:
    return ENGINES.get(lang, "pdflatex")


def compile_pdf(source: str, lang: str = "en", files: dict[str, bytes] | None = None) -> bytes:
    """The PDF that ``source`` compiles to, or a :class:`SymgradError` with TeX's first error line.

    ``files``: pictures the source includes, by file name, written beside it first."""
    engine = engine_for(lang)
    program = shutil.which(engine)
    if program is None:
        raise SymgradError(
            f"{engine} is not installed; on Debian or Ubuntu: apt-get install --no-install-recommends "
            f"{DEBIAN_PACKAGES[engine]}"
        )
    with tempfile.TemporaryDirectory(prefix="symgrad-tex-") as folder:
        work = Path(folder)
        (work / "explain.tex").write_text(source, encoding="utf-8")
        for name, data in (files or {}).items():
            (work / name).write_bytes(data)
        command = [program, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "explain.tex"]
        try:
            done = subprocess.run(command, cwd=work, capture_output=True, timeout=TIMEOUT, check=False)
        except subprocess.TimeoutExpired as error:
            raise SymgradError(f"{engine} took longer than {TIMEOUT} s") from error
        pdf = work / "explain.pdf"
        if done.returncode != 0 or not pdf.exists():
            log = (
                (work / "explain.log").read_text(encoding="utf-8", errors="replace")
                if (work / "explain.log").exists()
                else ""
            )
            raise SymgradError(f"{engine} failed: {first_error(log) or done.stdout.decode(errors='replace')[-200:]}")
        return pdf.read_bytes()


def first_error(log: str) -> str:
    """TeX's first error message (the line starting with ``!``) and the line it points at.

    >>> first_error("x\\n! Undefined control sequence.\\nl.7 \\\\foo\\n")
    'Undefined control sequence. (l.7 \\\\foo)'
    """
    lines = log.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("!"):
            where = next((t for t in lines[number + 1 : number + 6] if t.startswith("l.")), "")
            return line[1:].strip() + (f" ({where.strip()})" if where else "")
    return ""
