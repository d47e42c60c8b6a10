"""``symgrad verify PATH``: every Function in a folder, at the inputs its spec gives, one line each and the worst
exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from symgrad.cli import main

pytest.importorskip("torch")

ACTIVATIONS = """\
import torch
from symgrad.testing import verify_spec


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class SquareHalved(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x * g  # the 2 is lost


@verify_spec(input=["x=n"], order=1)
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class Unlisted(Square):
    pass
"""

LOSSES = """\
import torch
from torch.autograd import Function as Imported  # imported, not defined here: not listed


class Picked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z, y):
        ctx.save_for_backward(z, y)
        return -z.gather(1, y[:, None]).sum()

    @staticmethod
    def backward(ctx, g):
        z, y = ctx.saved_tensors
        return -g * torch.zeros_like(z).scatter(1, y[:, None], 1.0), None
"""

PROJECT = """\
[project]
name = "layers"

[tool.symgrad.verify]
"pkg/activations.py:Square" = { input = ["x=m,n"] }
"pkg.activations:SquareHalved" = { input = ["x=m"], order = 1 }
"pkg/losses.py:Picked" = { input = ["z=3,c"], value = ["y=[0, 3, 1]"], order = 1 }
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "activations.py").write_text(ACTIVATIONS, encoding="utf-8")
    (tmp_path / "pkg" / "losses.py").write_text(LOSSES, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(PROJECT, encoding="utf-8")
    return tmp_path


def test_every_function_in_a_folder_gets_one_line_and_a_wrong_one_makes_the_exit_code_1(capsys, project):
    code = main(["verify", str(project / "pkg")])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "pkg/activations.py:Square: proved (first and second order)",
        "pkg/activations.py:SquareHalved: WRONG at first order",
        "pkg/activations.py:Cube: proved (first order)",
        "pkg/activations.py:Unlisted: not checked (no spec in [tool.symgrad.verify] or verify_spec)",
        "pkg/losses.py:Picked: proved (first order)",
    ]
    assert code == 1


def test_a_folder_of_right_backwards_exits_0_and_a_bad_spec_is_one_line_with_exit_2(capsys, project):
    assert main(["verify", str(project / "pkg" / "losses.py")]) == 0
    assert capsys.readouterr().out == "pkg/losses.py:Picked: proved (first order)\n"
    toml = project / "pyproject.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("order = 1 }", "orders = 1 }", 1), encoding="utf-8")
    assert main(["verify", str(project / "pkg" / "activations.py")]) == 2
    assert "SquareHalved: could not check: the spec of pkg/activations.py:SquareHalved has 'orders'" in (
        capsys.readouterr().out
    )


def test_a_path_takes_its_inputs_from_the_specs_not_from_options(capsys, project):
    assert main(["verify", str(project / "pkg"), "--input", "x=m"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("symgrad: error: verify PATH takes each Function's inputs from its spec")
        and err.count("\n") == 1
    )


def test_pytest_collects_each_specified_backward_as_a_test(tmp_path):
    """``pytest --symgrad-verify``: the plugin symgrad installs makes one test per Function with a spec."""
    import subprocess
    import sys

    (tmp_path / "acts.py").write_text(ACTIVATIONS, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.symgrad.verify]\n"acts.py:SquareHalved" = { input = ["x=m"], order = 1 }\n', encoding="utf-8"
    )
    command = [sys.executable, "-m", "pytest", "--symgrad-verify", "acts.py", "-q", "-o", "addopts=",
               "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "FAILED acts.py::SquareHalved" in done.stdout and "1 failed, 1 passed" in done.stdout, done.stdout
    assert done.returncode == 1
