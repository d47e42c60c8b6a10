"""The symgrad command: derive as text and JSON, bad input as one line with exit code 2, the REPL."""

from __future__ import annotations

import dataclasses
import errno
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import symgrad as sg
from symgrad.cli import catalogue, main
from symgrad.emit.module_check import ModuleCheck

SEED = ["derive", "torch.mm(w, x)", "--value", "w=[[1.0, 2.0]]", "--value", "x=[[1, 1], [2, 2]]", "--wrt", "w"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_derive_text_shows_entries_jacobian_gradient_and_check(capsys):
    code, out, err = run(capsys, *SEED, "--grad-tensor", "ones")
    assert code == 0 and err == ""
    assert "out[0,0] = w_0_0*x_0_0 + w_0_1*x_1_0 = 5" in out
    assert "w.grad[0,0] = x_0_0 + x_0_1 = 2" in out
    assert "w.grad[0,1] = x_1_0 + x_1_1 = 4" in out
    assert "cross-check (float64): OK" in out


def test_derive_json_matches_torch(capsys):
    code, out, _ = run(capsys, *SEED, "--grad-tensor", "ones", "--format", "json")
    assert code == 0
    data = json.loads(out)
    (grad,) = data["gradients"]
    tw = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    tx = torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=torch.float64)
    (tw @ tx).backward(torch.ones(1, 2, dtype=torch.float64))
    assert [e["value"] for e in grad["entries"]] == tw.grad.reshape(-1).tolist()
    assert [e["formula"] for e in grad["entries"]] == ["x_0_0 + x_0_1", "x_1_0 + x_1_1"]
    assert grad["entries"][0]["latex"] == "x_{0,0} + x_{0,1}"
    assert data["check"]["ok"] is True
    assert {j["wrt"] for j in data["jacobians"]} == {"w"}


def test_derive_symbolic_grad_tensor(capsys):
    code, out, _ = run(capsys, *SEED, "--grad-tensor", "v")
    assert code == 0
    assert "w.grad[0,0] = v_0_0*x_0_0 + v_0_1*x_0_1" in out


def test_derive_numeric_grad_tensor_values(capsys):
    code, out, _ = run(capsys, *SEED, "--grad-tensor", "[[2.0, -1.0]]", "--format", "json")
    assert code == 0
    tw = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    (tw @ torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=torch.float64)).backward(
        torch.tensor([[2.0, -1.0]], dtype=torch.float64)
    )
    assert [e["value"] for e in json.loads(out)["gradients"][0]["entries"]] == tw.grad.reshape(-1).tolist()


def test_vector_output_without_grad_tensor_uses_ones_and_says_so(capsys):
    # torch stops here; symgrad uses ones, as explain does, and says so (see tests/cli/test_cli_grad_tensor.py)
    code, out, err = run(capsys, *SEED)
    assert code == 0 and "grad_tensor v: ones (as torch.ones_like(out))" in out
    assert err.startswith("symgrad: note: out has shape 1×2, for which torch's out.backward() stops (grad can be")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("expression", "shapes", "needle"),
    [
        ("q @ w", ["w=1,2"], "unknown name 'q'"),
        ("w @ v", ["w=1,2", "v=3,1"], "1x2 and 3x1"),
        ("w + v", ["w=1,2", "v=1,3"], "(2) must match the size of tensor b (3)"),
        ("torch.tnah(w)", ["w=1,2"], "unknown torch.tnah(): torch has no such name; did you mean torch.tanh?"),
        ("w @", ["w=1,2"], "syntax error"),
        ("__import__('os').system('touch pwned')", ["w=1,2"], "not"),
        ("().__class__.__mro__", ["w=1,2"], "not"),
        ("lambda: 0", ["w=1,2"], "lambda"),
        ("w.__dict__", ["w=1,2"], "_"),
        ("w ** 10 ** 10", ["w=1,2"], "exponent"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, expression, shapes, needle):
    monkeypatch.chdir(tmp_path)
    argv = ["derive", expression]
    for shape in shapes:
        argv += ["--shape", shape]
    code, out, err = run(capsys, *argv, "--grad-tensor", "ones")
    assert code == 2
    assert out == ""
    assert err.startswith("symgrad: error: ") and err.count("\n") == 1
    assert needle in err
    assert list(tmp_path.iterdir()) == []  # nothing was executed


def test_bad_options_exit_2(capsys):
    code, _, err = run(capsys, "derive", "w", "--shape", "w")
    assert code == 2 and "NAME=" in err
    assert main(["derive"]) == 2
    code, _, err = run(capsys, *SEED, "--wrt", "nope", "--grad-tensor", "ones")
    assert code == 2 and "nope" in err


def test_console_script_runs_the_readme_derivation():
    done = subprocess.run(
        [sys.executable, "-m", "symgrad", *SEED, "--grad-tensor", "ones"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "w.grad[0,1] = x_1_0 + x_1_1 = 4" in done.stdout


def test_repl_names_tensors_after_variables():
    session = "\n".join(
        [
            "w = torch.tensor([[1.0, 2.0]], requires_grad=True)",
            "x = torch.tensor([[1.0, 1.0], [2.0, 2.0]])",
            "loss = torch.mm(w, x)",
            "loss.backward()",
            "loss.backward(torch.ones_like(loss))",
            "print(w.grad.sympy())",
            "loss0, loss1 = loss[0]",
            "loss0.backward(retain_graph=True)",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-m", "symgrad", "repl"], input=session, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0
    assert "[[x_0_0 + x_0_1, x_1_0 + x_1_1]]" in done.stdout
    assert "AutogradError: grad can be implicitly created only for scalar outputs" in done.stderr
    assert "freed by backward call" in done.stderr and "loss.backward(gradient)" in done.stderr
    assert "Traceback" not in done.stderr


def test_derive_with_symbolic_shapes_prints_the_proved_law(capsys):
    code, out, err = run(
        capsys,
        "derive",
        "torch.tanh(W @ X + b)",
        "--shape",
        "W=k,n",
        "--shape",
        "X=n,m",
        "--shape",
        "b=k,1",
        "--wrt",
        "W,b",
    )
    assert code == 0, err
    assert "t1 = V * (1 - out ** 2)" in out
    assert "grad_W = t1 @ X.T" in out
    assert "grad_b = t1.sum(dim=1, keepdim=True)" in out
    assert r"\mathrm{grad\_W} = t_{1} X^{\top}" in out or r"\mathrm{grad\_W} = \mathrm{t1} X^{\top}" in out
    assert "proof: held" in out


def test_derive_with_symbolic_shapes_as_json(capsys):
    code, out, _ = run(
        capsys,
        "derive",
        "W @ X",
        "--shape",
        "W=k,n",
        "--shape",
        "X=n,m",
        "--wrt",
        "W,X",
        "--grad-tensor",
        "V",
        "--format",
        "json",
    )
    assert code == 0
    data = json.loads(out)
    assert [law["torch"] for law in data["laws"]] == ["V @ X.T", "W.T @ V"]
    assert data["proof"]["held"] is True


def test_codegen_writes_a_checked_module(capsys, tmp_path):
    target = tmp_path / "layer.py"
    code, _, err = run(
        capsys,
        "codegen",
        "torch.tanh(W @ X + b)",
        "--shape",
        "W=k,n",
        "--shape",
        "X=n,m",
        "--shape",
        "b=k,1",
        "--wrt",
        "W,b",
        "--name",
        "TanhLayer",
        "-o",
        str(target),
    )
    assert code == 0, err
    assert "gradcheck passed" in err and "OK" in err
    source = target.read_text()
    assert "class TanhLayerFunction(torch.autograd.Function):" in source
    assert "symgrad codegen 'torch.tanh(W @ X + b)' --shape W=k,n" in source


def test_codegen_refuses_bad_names(capsys):
    code, _, err = run(capsys, "codegen", "w * 2", "--shape", "w=2", "--wrt", "w", "--name", "lower case")
    assert code == 2 and err.startswith("symgrad: error:")


# ── trust: no traceback, exit codes, atomic and checked files ──────────────────────────────────────────

CLI = importlib.import_module("symgrad.cli.main")  # the module (``symgrad.cli.main`` names the function)
SMALL = ["codegen", "x.sum()", "--shape", "x=2", "--wrt", "x"]


def one_error_line(err: str, prefix: str = "symgrad: error: ") -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), err
    assert "Traceback" not in err
    return lines[0]


def fail_with(error: BaseException):
    def raising(*args, **kwargs):
        raise error

    return raising


def test_help_documents_the_exit_codes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for doc in (out, CLI.__doc__):
        assert "exit code" in doc.lower()
        for line in ("0", "1", "2"):
            assert re.search(rf"^\W*{line}\W", doc, re.M), (line, doc)
        assert "disagrees with torch" in doc and "internal error" in doc and "unwritable output" in doc


def test_an_unexpected_error_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(CLI, "derive", fail_with(AttributeError("'NoneType' object has no attribute 'shape'")))
    code, out, err = run(capsys, *SEED, "--grad-tensor", "ones")
    assert code == 2 and out == ""
    line = one_error_line(err, "symgrad: error: internal error in mm: ")  # the op of the graph it was deriving
    assert line == (
        "symgrad: error: internal error in mm: AttributeError: 'NoneType' object has no attribute 'shape' "
        "(a bug in symgrad: please report it; --debug shows the traceback)"
    )


def test_an_error_inside_symgrad_names_the_op_it_was_working_on(capsys, monkeypatch):
    """An exception that is not a SymgradError, raised inside symgrad's own code, is a bug: one line that names the
    op whose rule or meaning failed, exit 2."""
    from symgrad.core import registry

    tanh = registry.OPS["tanh"]
    broken = dataclasses.replace(tanh, meaning=lambda a: {}["a bug"])
    monkeypatch.setitem(registry.OPS, "tanh", broken)
    code, _, err = run(capsys, "derive", "torch.tanh(x).sum()", "--value", "x=[1.0, 2.0]")
    assert code == 2
    line = one_error_line(err, "symgrad: error: ")
    assert "tanh" in line and "KeyError" in line and "a bug in symgrad" in line


@pytest.mark.parametrize("where", ["before the verb", "after the verb", "environment"])
def test_debug_shows_the_traceback(capsys, monkeypatch, where):
    monkeypatch.setattr(CLI, "derive", fail_with(AttributeError("boom")))
    argv = [*SEED, "--grad-tensor", "ones"]
    monkeypatch.setenv("SYMGRAD_DEBUG", "0")
    assert main(argv) == 2  # without --debug: one line
    if where == "before the verb":
        argv = ["--debug", *argv]
    elif where == "after the verb":
        argv = [*argv, "--debug"]
    else:
        monkeypatch.setenv("SYMGRAD_DEBUG", "1")
    with pytest.raises(AttributeError, match="boom"):
        main(argv)


def test_memory_error_is_one_line_that_names_the_way_out(capsys, monkeypatch):
    monkeypatch.setattr(CLI, "derive", fail_with(MemoryError()))
    code, _, err = run(capsys, *SEED, "--grad-tensor", "ones")
    assert code == 2
    line = one_error_line(err)
    assert "too large" in line and "smaller sizes" in line and "symbolic shapes" in line


def test_keyboard_interrupt_exits_130_quietly(capsys, monkeypatch):
    monkeypatch.setattr(CLI, "derive", fail_with(KeyboardInterrupt()))
    try:
        code = main([*SEED, "--grad-tensor", "ones"])
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main()")
    out, err = capsys.readouterr()
    assert code == 130 and out == "" and err == ""


def test_broken_pipe_ends_quietly_with_141():
    """`symgrad derive ... --format json | head -0`: the reader is gone before the first byte."""
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "symgrad", *SEED, "--grad-tensor", "ones", "--format", "json", "--no-check"],
        stdin=subprocess.DEVNULL,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    os.close(read_end)
    _, err = process.communicate(timeout=120)
    assert err.decode() == "" and process.returncode == 141


def _unwritable(tmp_path: Path, kind: str) -> str:
    if kind == "missing folder":
        return str(tmp_path / "missing" / "out.txt")
    if kind == "a directory":
        (tmp_path / "folder").mkdir()
        return str(tmp_path / "folder")
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    return "/dev/full"


@pytest.mark.parametrize("kind", ["missing folder", "a directory", "/dev/full"])
@pytest.mark.parametrize(
    "argv",
    [
        [*SMALL, "--no-check"],
        ["explain", "x.sum()", "--shape", "x=2", "--wrt", "x", "--no-check", "--format", "md"],
        ["explain", "x.sum()", "--shape", "x=2", "--wrt", "x", "--no-check", "--format", "pdf"],
    ],
    ids=["codegen", "explain-md", "explain-pdf"],
)
def test_unwritable_output_is_one_line_naming_the_path_and_exit_2(capsys, monkeypatch, tmp_path, kind, argv):
    monkeypatch.setattr(CLI, "compile_pdf", lambda source, lang, files=None: b"%PDF-1.5 stand-in")  # no TeX needed
    target = _unwritable(tmp_path, kind)
    before = sorted(tmp_path.rglob("*"))
    code, out, err = run(capsys, *argv, "-o", target)
    assert code == 2 and out == ""
    line = one_error_line(err)
    assert target in line
    assert sorted(tmp_path.rglob("*")) == before  # no temporary file left behind


def _failed_check(*args, **kwargs):
    return ModuleCheck({"n": 3}, forward_error=0.0, vjp_error=4.59, gradcheck=False, ok=False)


def test_codegen_module_that_fails_its_check_is_never_written(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(CLI, "check_module", _failed_check)
    target = tmp_path / "m.py"
    target.write_text("old\n")
    code, out, err = run(capsys, *SMALL, "-o", str(target))
    assert code == 1 and out == ""
    line = one_error_line(err)
    assert "MISMATCH" in line and str(target) in line
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]
    code, out, err = run(capsys, *SMALL)  # to stdout: the module is not printed either
    assert code == 1 and out == ""
    one_error_line(err)


def test_codegen_module_that_raises_in_its_check_is_never_written(capsys, monkeypatch, tmp_path):
    broken = "import torch\n\n\ndef forward(x):\n    return tensor([1.0])\n\n\ndef vjp(x, g):\n    return (g,)\n"
    monkeypatch.setattr(CLI, "codegen", lambda *args, **kwargs: broken)
    target = tmp_path / "m.py"
    code, _, err = run(capsys, *SMALL, "--style", "function", "-o", str(target))
    assert code == 1
    assert "NameError" in one_error_line(err)
    assert list(tmp_path.iterdir()) == []


def test_codegen_never_writes_a_module_that_is_not_python_even_with_no_check(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(CLI, "codegen", lambda *args, **kwargs: '"""docstring \\N"""\n')
    target = tmp_path / "m.py"
    code, _, err = run(capsys, *SMALL, "--no-check", "-o", str(target))
    assert code == 1
    assert "not valid Python" in one_error_line(err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("verb", ["codegen", "catalogue"])
def test_outputs_are_replaced_atomically(capsys, monkeypatch, tmp_path, verb):
    """The old file is renamed over, never truncated: a reader that opened it still reads all of it."""
    target = tmp_path / "m.py"
    target.write_text("old content\n")
    target.chmod(0o640)
    if verb == "codegen":
        argv = [*SMALL, "--no-check", "-o", str(target)]
    else:
        monkeypatch.setattr(catalogue, "render_all", lambda: {"m.py": "new content\n"})
        monkeypatch.setattr(catalogue, "drawings", dict)  # the graph pictures drawn after the files: none here
        argv = ["catalogue", "--directory", str(tmp_path)]
    with open(target, encoding="utf-8") as reader:
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        assert reader.read() == "old content\n"
    assert target.read_text() != "old content\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(capsys, monkeypatch, tmp_path):
    target = tmp_path / "m.py"
    target.write_text("old\n")
    monkeypatch.setattr(catalogue.os, "replace", fail_with(OSError(errno.ENOSPC, "No space left on device")))
    code, _, err = run(capsys, *SMALL, "--no-check", "-o", str(target))
    assert code == 2
    assert one_error_line(err) == f"symgrad: error: cannot write {target}: No space left on device"
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_catalogue_check_works_from_any_directory(capsys, monkeypatch, tmp_path):
    name = "seed_scalar_loss.md"
    generated = Path(__file__).resolve().parents[2] / "generated"
    monkeypatch.setattr(catalogue, "render_all", lambda: {name: (generated / name).read_text(encoding="utf-8")})
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "catalogue", "--check")
    assert (code, out, err) == (0, "", "")


def test_catalogue_outside_a_checkout_says_so_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(catalogue, "__file__", str(tmp_path / "site-packages" / "symgrad" / "cli" / "catalogue.py"))
    monkeypatch.setattr(catalogue, "render_all", lambda: {"a.md": "a\n"})
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "catalogue", "--check")
    assert code == 2 and out == ""
    assert "--directory" in one_error_line(err)


def _no_constants(token: str):
    raise ValueError(f"not JSON: {token}")


def test_derive_json_is_strict(capsys):
    """log at 0 is -inf with gradient inf, as in torch: JSON has no Infinity, so they are strings."""
    code, out, err = run(
        capsys, "derive", "x.log().sum()", "--value", "x=[0.0, 1.0]", "--wrt", "x", "--no-check", "--format", "json"
    )
    assert code == 0, err
    data = json.loads(out, parse_constant=_no_constants)
    assert data["output"]["entries"][0]["value"] == "-inf"
    assert [e["value"] for e in data["gradients"][0]["entries"]] == ["inf", 1.0]
    assert catalogue.strict_json({"a": [float("nan"), -float("inf"), 2.5]}) == {"a": [None, "-inf", 2.5]}


def test_codegen_accepts_both_spellings_of_the_autograd_function_style(capsys):
    sources = []
    for style in ("autograd_function", "autograd-function"):
        code, out, err = run(capsys, *SMALL, "--no-check", "--style", style)
        assert code == 0, err
        sources.append(out)
    assert sources[0] == sources[1] and "(torch.autograd.Function)" in sources[0]


def test_codegen_docstring_command_leaves_out_debug_and_output(capsys, tmp_path):
    target = tmp_path / "m.py"
    code, _, err = run(capsys, "--debug", *SMALL, "--no-check", "--outp", str(target))
    assert code == 0, err
    source = target.read_text()
    assert "symgrad codegen 'x.sum()' --shape x=2 --wrt x" in source
    assert "--debug" not in source and "--outp" not in source and str(target) not in source


def test_a_repeated_wrt_adds_names_as_a_comma_does(capsys):
    expression = ["derive", "(W @ x + b).tanh().sum()", "--shape", "W=k,n", "--shape", "x=n", "--shape", "b=k"]
    code, repeated, err = run(capsys, *expression, "--wrt", "W", "--wrt", "b", "--no-check")
    assert code == 0 and err == ""
    _, joined, _ = run(capsys, *expression, "--wrt", "W,b", "--no-check")
    assert repeated == joined and "grad_W = " in repeated and "grad_b = " in repeated


def test_explain_takes_its_format_from_the_output_files_suffix_and_refuses_a_contradiction(capsys, tmp_path):
    base = ["explain", "(x * x).sum()", "--shape", "x=2", "--wrt", "x", "--no-check", "--no-graph"]
    code, _, _ = run(capsys, *base, "-o", str(tmp_path / "doc.tex"))
    assert code == 0 and (tmp_path / "doc.tex").read_text(encoding="utf-8").startswith("\\documentclass")
    code, _, err = run(capsys, *base, "--format", "md", "-o", str(tmp_path / "doc.pdf"))
    assert code == 2 and "names a .pdf file but --format is md" in err and not (tmp_path / "doc.pdf").exists()
    code, out, _ = run(capsys, *base, "--format", "markdown")
    assert code == 0 and out.startswith("#")
    code, out, _ = run(capsys, "derive", "(x * x).sum()", "--value", "x=[1.0, 2.0]", "--wrt", "x", "--format", "md")
    assert code == 0 and out.startswith("#")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs a folder no file can be created in")
def test_an_unwritable_document_is_named_before_its_picture(capsys):
    argv = ["explain", "(x * x).sum()", "--shape", "x=2", "--wrt", "x", "--no-check", "-o", "/proc/nope.md"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "cannot write /proc/nope.md" in err and "graph" not in err


def test_a_module_name_may_have_underscores(capsys):
    code, out, _ = run(capsys, "codegen", "(x * x).sum()", "--shape", "x=2", "--wrt", "x", "--name", "CNN_noTRS")
    assert code == 0 and "class CNN_noTRSFunction(torch.autograd.Function):" in out
    code, _, err = run(capsys, "codegen", "(x * x).sum()", "--shape", "x=2", "--wrt", "x", "--name", "net")
    assert code == 2 and "must be a class name" in err


def test_derive_writes_its_result_to_o(capsys, tmp_path):
    target = tmp_path / "gradient.json"
    argv = ["derive", "(x * x).sum()", "--value", "x=[1.0, 2.0]", "--wrt", "x", "--format", "json", "-o", str(target)]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and out == ""
    assert json.loads(target.read_text(encoding="utf-8"))["gradients"]


def test_an_output_that_is_a_symlink_is_refused_unless_forced(capsys, tmp_path):
    """-o through a symlink would change a file the command line does not name: one line and exit 2, nothing
    written; --force writes through it, and every file written is named on stderr."""
    target = tmp_path / "kept.txt"
    target.write_text("mine", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    argv = ["derive", "x.sum()", "--shape", "x=2", "--wrt", "x", "-o", str(link)]
    code = main(argv)
    _, err = capsys.readouterr()
    assert (
        code == 2
        and err
        == f"symgrad: error: cannot write {link}: it is a symlink to {target}; name that file, or pass --force\n"
    )
    assert target.read_text(encoding="utf-8") == "mine"
    assert main([*argv, "--force"]) == 0
    assert capsys.readouterr()[1] == f"symgrad: wrote {link}\n"
    assert "grad" in target.read_text(encoding="utf-8") and link.is_symlink()


def test_a_backtick_in_the_expression_cannot_close_the_markdown_code_span(capsys):
    """A comment holding backticks and HTML stays inside the title's code span, as CommonMark reads it."""
    from markdown_it import MarkdownIt

    expression = "x.sum() # `<img src=x onerror=alert(1)>`"
    assert main(["derive", expression, "--shape", "x=2", "--wrt", "x", "--format", "md"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    html = MarkdownIt("commonmark").render(title)
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["F.conv2d(x, w, dilation=-1).sum()", "--shape", "x=1,1,5,5", "--shape", "w=1,1,3,3", "--wrt", "w"],
         "symgrad: error: dilation should be greater than zero\n"),
        (["torch.linalg.solve(a, b).sum()", "--value", "a=[[1.0, 2.0], [2.0, 4.0]]", "--shape", "b=2", "--wrt", "b"],
         "symgrad: error: at these values torch's inv fails: linalg.inv: "),
    ],
)  # fmt: skip
def test_input_torch_refuses_is_one_line_for_the_user_not_a_bug(capsys, argv, line):
    """What torch itself refuses (a dilation below 1, a singular matrix) is the user's to fix: exit 2, one line."""
    code = main(["derive", *argv])
    err = capsys.readouterr()[1]
    assert code == 2 and err.startswith(line) and err.count("\n") == 1 and "bug" not in err


def test_rounding_past_floats_range_is_refused_in_one_line(capsys):
    """10 ** 1000000 overflowed a Python float inside symgrad; torch's scale is inf there and its values nan, which
    symgrad does not derive: one line, exit 2."""
    code = main(["derive", "torch.round(x, decimals=1000000)", "--value", "x=[1.5, -2.25]", "--wrt", "x"])
    err = capsys.readouterr()[1]
    assert (code, err) == (
        2,
        "symgrad: error: round(decimals=1000000): 10**1000000 is past float64's range, where torch's result is nan; "
        "give decimals within ±308\n",
    )


def test_a_fullwidth_name_on_the_command_line_names_the_tensor_python_reads(capsys):
    assert main(["derive", "ｘ.sum()", "--shape", "ｘ=2", "--wrt", "ｘ"]) == 0
    assert "grad" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("expression", "rounding"),
    [
        ("x.half().sum()", "float16"),
        ("(x.bfloat16() * 3).exp().sum()", "bfloat16"),
        ("torch.softmax(x.half(), 0)[0]", "float16"),
        ("(x.double() * 3).exp().sum()", "float32"),
    ],
)
def test_an_expression_that_casts_is_checked_against_torch_in_its_dtypes(capsys, expression, rounding):
    """A cast to a narrower dtype, or from the float32 input to float64, is checked against torch computing as the
    user's code would (each input in its dtype, a float16 sum rounded to float16), to that dtype's rounding: valid
    input exits 0, where it was reported as disagreeing with torch."""
    assert main(["derive", expression, "--shape", "x=4", "--wrt", "x"]) == 0
    out = capsys.readouterr().out
    assert f"cross-check (each input in its dtype, to {rounding}'s rounding): OK" in out


def test_a_float16_sum_is_torchs_float16_sum():
    """The numbers of a float16 node are rounded to float16, as torch's kernels round what they add in float32."""
    values = [0.1, 0.2, 0.3, 1000.7]
    ours = sg.tensor(values, dtype="float64").half().sum()
    theirs = torch.tensor(values, dtype=torch.float64).half().sum()
    assert ours.tolist() == theirs.item() != sum(float(torch.tensor(v).half()) for v in values)


def test_torchs_own_overflow_near_floats_range_is_no_disagreement(capsys):
    """At entries of 1e154, torch's backward of det overflows to inf in its intermediate values where the formula
    (the adjugate) stays in range: those entries are left out and said so, and the check holds (exit 0)."""
    code = main(["derive", "torch.det(x)", "--value", "x=[[1e154, 2e154], [3e154, 5e154]]", "--wrt", "x"])
    out = capsys.readouterr().out
    assert code == 0 and "torch's own arithmetic overflows at 2: left out" in out
    assert "x.grad[0,0] = x_1_1 = 5e+154" in out
