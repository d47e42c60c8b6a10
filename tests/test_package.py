"""The package as users meet it: no torch at import time, and what the wheel and the CLI need."""

from __future__ import annotations

import subprocess
import sys

from symgrad.emit.templates import template_dir


def test_import_does_not_import_torch():
    done = subprocess.run(
        [sys.executable, "-c", "import symgrad, symgrad.torch, sys; assert 'torch' not in sys.modules"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_templates_are_found():
    names = {p.name for p in template_dir().iterdir()}
    assert {"module.py.j2", "derive.md.j2"} <= names


def test_cli_help_exits_zero():
    done = subprocess.run([sys.executable, "-m", "symgrad", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "derive" in done.stdout
