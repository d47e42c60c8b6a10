"""The architecture is checked like any other behaviour: imports run one way, modules stay small.

The layers and their contracts live in pyproject.toml ([tool.importlinter]); import-linter
checks them on the real import graph, function-level imports included.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import symgrad

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "symgrad"
MAX_MODULE_LINES = 700


def test_import_linter_contracts_hold():
    from importlinter.cli import lint_imports

    here = Path.cwd()
    os.chdir(ROOT)  # import-linter reads pyproject.toml from the working directory
    try:
        assert lint_imports(no_cache=True, no_logo=True) == 0, "an import breaks the layering (see the output)"
    finally:
        os.chdir(here)


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_module_is_small(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_is_imported_from_another_module(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    private = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert private == [], f"{path.name} imports private names {private}; make them public where they belong"


def test_every_subpackage_says_what_it_is_for():
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 60, f"{init.relative_to(ROOT)} needs a docstring saying its job and its imports"


def test_public_names_match_the_lazy_table():
    table = {name for names in symgrad._WHERE.values() for name in names.split()}
    assert set(symgrad.__all__) == table | {"__version__"}
    for name in symgrad.__all__:
        assert getattr(symgrad, name) is not None
