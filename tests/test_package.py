"""The package as users meet it: no torch at import time, importable from any folder, and what the wheel and the
CLI need."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import symgrad
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


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["derive", "x.sum()", "--shape", "x=3", "--wrt", "x"], 0, "torch.autograd cross-check (float64): OK"),
        (["derive", "x.sum(", "--shape", "x=3"], 2, "symgrad: error: "),
    ],
)
def test_the_command_says_everything_and_exits_with_its_code(argv, code, said):
    """The command ends without unloading torch (a fifth of a short command's time): what it printed is flushed
    first, and its exit code is main's."""
    done = subprocess.run([sys.executable, "-m", "symgrad", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == code and said in done.stdout + done.stderr, done
    if code == 0:
        assert done.stdout.rstrip().endswith("max abs error 0")


def test_import_from_the_folder_that_holds_a_clone_named_symgrad(tmp_path):
    # `git clone ... symgrad`, then python (or a notebook) started beside it: the clone, a folder with no __init__.py,
    # must not shadow the installed package as an empty namespace package
    clone = tmp_path / "symgrad"
    for folder in ("symgrad", "templates", "generated", "tests"):
        (clone / folder).mkdir(parents=True)
    (clone / "pyproject.toml").write_text("[project]\nname = 'symgrad'\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "import symgrad as sg; sg.symbols_like; print(sg.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(symgrad.__file__)


CHECKOUT = Path(symgrad.__file__).resolve().parents[1]
BUILD = """
import sys, zipfile
from setuptools import build_meta
out, names = sys.argv[1], {}  # (building sets sys.argv)
for kind, build in (("wheel", build_meta.build_wheel), ("editable", build_meta.build_editable)):
    names[kind] = zipfile.ZipFile(f"{out}/{build(out)}")
print(repr(sorted(names["wheel"].namelist())))
print(repr([names["editable"].read(n).decode() for n in names["editable"].namelist() if n.endswith(".pth")]))
"""


@pytest.mark.skipif(not (CHECKOUT / "pyproject.toml").is_file(), reason="needs the source checkout")
def test_the_wheel_ships_templates_and_the_editable_install_is_a_plain_path(tmp_path):
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info/ beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(CHECKOUT / name, source / name)
    for folder in ("symgrad", "templates", "build_support"):
        shutil.copytree(CHECKOUT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path)], cwd=source, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    wheel_lines = done.stdout.splitlines()
    shipped = set(ast.literal_eval(wheel_lines[-2]))
    folder = CHECKOUT / "templates"
    templates = {f"symgrad/templates/{p.relative_to(folder).as_posix()}" for p in folder.rglob("*") if p.is_file()}
    assert templates and templates <= shipped
    # a plain path entry (no import hook, which Python would ask only after the working directory)
    (pth,) = ast.literal_eval(wheel_lines[-1])
    assert not pth.startswith("import") and Path(pth.strip()) == source.resolve()
