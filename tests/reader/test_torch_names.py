"""The reader's list of torch's public names (symgrad/reader/torch_names.py, which tells a misspelt name from one
symgrad does not support without importing torch) is the installed torch's: regenerate it with
``python build_support/torch_names.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from symgrad.reader.torch_names import NAMES

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_the_list_of_torchs_names_is_the_installed_torchs():
    spec = importlib.util.spec_from_file_location("torch_names_builder", ROOT / "build_support" / "torch_names.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    expected = {label: frozenset(found) for label, found in builder.names().items()}
    assert NAMES == expected, "regenerate with: python build_support/torch_names.py"
    assert (ROOT / "symgrad" / "reader" / "torch_names.py").read_text(encoding="utf-8") == builder.source()
