"""The symgrad command: derive as text and JSON, bad input as one line with exit code 2, the REPL."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from symgrad.cli import main

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


def test_vector_output_without_grad_tensor_is_refused(capsys):
    code, out, err = run(capsys, *SEED)
    assert code == 2 and out == ""
    assert err.startswith("symgrad: error: grad can be implicitly created only for scalar outputs")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("expression", "shapes", "needle"),
    [
        ("q @ w", ["w=1,2"], "unknown name 'q'"),
        ("w @ v", ["w=1,2", "v=3,1"], "1x2 and 3x1"),
        ("w + v", ["w=1,2", "v=1,3"], "(2) must match the size of tensor b (3)"),
        ("torch.foo(w)", ["w=1,2"], "unsupported function"),
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
