"""The reader's list of torch's public names (symgrad/reader/torch_names.py, which tells a misspelt name from one
symgrad does not support without importing torch) is the installed torch's: regenerate it with
``python build_support/torch_names.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_the_list_of_torchs_names_is_the_installed_torchs():
    """Made in a fresh process, as the builder makes it: torch's namespace grows as its submodules load."""
    builder = ROOT / "build_support" / "torch_names.py"
    made = subprocess.run([sys.executable, str(builder), "--print"], capture_output=True, text=True, check=True)
    written = (ROOT / "symgrad" / "reader" / "torch_names.py").read_text(encoding="utf-8")
    assert written == made.stdout, "regenerate with: python build_support/torch_names.py"
