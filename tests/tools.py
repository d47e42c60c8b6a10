"""External programs the tests use (TeX engines, pdftotext, dot): skip without them, unless
SYMGRAD_REQUIRE_TOOLS=1 (as in CI), where a missing tool fails the test."""

from __future__ import annotations

import os
import shutil

import pytest


def require_tool(program: str, packages: str) -> None:
    if shutil.which(program):
        return
    reason = f"{program} is not installed (Debian: {packages})"
    if os.environ.get("SYMGRAD_REQUIRE_TOOLS") == "1":
        pytest.fail(f"{reason}; SYMGRAD_REQUIRE_TOOLS=1 requires it", pytrace=False)
    pytest.skip(reason)


def require_engine(lang: str) -> None:
    """The TeX engine of a language: xelatex with ctex for Chinese, pdflatex otherwise."""
    if lang == "zh":
        require_tool("xelatex", "texlive-xetex texlive-lang-chinese")
    else:
        require_tool("pdflatex", "texlive-latex-base")
