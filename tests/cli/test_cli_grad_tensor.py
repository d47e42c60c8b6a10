"""One grad_tensor rule in every verb: without --grad-tensor a non-scalar output gets ones (numbers) or a symbolic V
(symbolic sizes), and the verb says which (derive and graph in a note on stderr, explain in its document); a
one-element output gets torch's implicit 1, silently."""

from __future__ import annotations

import pytest
import torch

from symgrad.cli import main

VALUES = ["w @ x", "--value", "w=[[1.0, 2.0]]", "--value", "x=[[1, 1], [2, 2]]", "--wrt", "w"]
SYMBOLIC = ["W @ x", "--shape", "W=k,n", "--shape", "x=n", "--wrt", "W"]
ONES_NOTE = (
    "symgrad: note: out has shape 1×2, for which torch's out.backward() stops (grad can be implicitly created only "
    "for scalar outputs); using the grad_tensor v = ones, what torch.ones_like(out) gives; pass --grad-tensor to "
    "choose another (ones, a name such as v, or values)\n"
)
V_NOTE = (
    "symgrad: note: out has shape k, for which torch's out.backward() stops (grad can be implicitly created only for "
    "scalar outputs); using a symbolic grad_tensor V of out's shape; the law holds for every grad_tensor, ones among "
    "them\n"
)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def notes(verb: str, note: str) -> str:
    """explain's document says it (the RuntimeError torch raises, then the grad_tensor it uses): no note."""
    return "" if verb == "explain" else note


@pytest.mark.parametrize("verb", ["derive", "explain", "graph"])
def test_a_vector_output_gets_ones_and_says_so(capsys, verb):
    code, out, err = run(capsys, verb, *VALUES, *(["--no-check"] if verb != "graph" else []))
    assert code == 0 and err == notes(verb, ONES_NOTE)
    shown = {
        "derive": "grad_tensor v: ones (as torch.ones_like(out))",
        "explain": "is all ones, what `torch.ones_like(out)` gives",
        "graph": 'label="v = ones  1×2\\ngrad_tensor"',
    }[verb]
    assert shown in out


def test_the_default_gives_what_torch_gives_for_ones_like(capsys):
    code, out, err = run(capsys, "derive", *VALUES)
    assert code == 0 and err == ONES_NOTE
    w = torch.tensor([[1.0, 2.0]], requires_grad=True)
    out_t = w @ torch.tensor([[1.0, 1.0], [2.0, 2.0]])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        out_t.backward()
    out_t.backward(torch.ones_like(out_t))
    assert w.grad.tolist() == [[2.0, 4.0]] and "w.grad[0,0] = x_0_0 + x_0_1 = 2" in out
    assert "w.grad[0,1] = x_1_0 + x_1_1 = 4" in out


@pytest.mark.parametrize("verb", ["derive", "explain", "graph"])
def test_symbolic_sizes_get_a_symbolic_v_and_say_so(capsys, verb):
    code, out, err = run(capsys, verb, *SYMBOLIC, *(["--no-check"] if verb != "graph" else []))
    assert code == 0 and err == notes(verb, V_NOTE)
    shown = {
        "derive": "grad_W = torch.outer(V, x)",
        "explain": r"\bar{W} = V x^{\top}",
        "graph": 'label="V  k\\ngrad_tensor"',
    }[verb]
    assert shown in out


def test_explain_too_large_for_entries_draws_the_v_of_its_law(capsys, tmp_path):
    argv = ["explain", "A @ B", "--shape", "A=6,6", "--shape", "B=6,6", "--wrt", "A", "--no-check"]
    code, _, err = run(capsys, *argv, "-o", str(tmp_path / "big.md"))
    assert code == 0 and err.startswith(f"symgrad: wrote {tmp_path / 'big.md'}\n")
    assert "matrix law" in (tmp_path / "big.md").read_text(encoding="utf-8")
    assert "o̅u̅t̅ = V\u00a0</text>" in (tmp_path / "big-graph.svg").read_text(encoding="utf-8")


@pytest.mark.parametrize("verb", ["derive", "explain", "graph"])
def test_a_given_grad_tensor_or_a_scalar_output_needs_no_note(capsys, verb):
    check = ["--no-check"] if verb != "graph" else []
    assert run(capsys, verb, *VALUES, "--grad-tensor", "[[2.0, -1.0]]", *check)[2] == ""
    assert run(capsys, verb, *VALUES, "--grad-tensor", "ones", *check)[2] == ""
    scalar = ["(w @ x).sum()", *VALUES[1:]]
    code, out, err = run(capsys, verb, *scalar, *check)
    assert code == 0 and err == ""
    if verb == "graph":
        assert 'label="v = 1\\ngrad_tensor (implicit)"' in out


def test_the_picture_names_the_same_v_as_the_law(capsys, tmp_path):
    target = tmp_path / "law.md"
    code, _, err = run(capsys, "explain", *SYMBOLIC, "--no-check", "-o", str(target))
    assert code == 0 and err == f"symgrad: wrote {target}\nsymgrad: wrote {tmp_path / 'law-graph.svg'}\n"
    assert "o̅u̅t̅ = V\u00a0</text>" in (tmp_path / "law-graph.svg").read_text(encoding="utf-8")


@pytest.mark.parametrize("verb", ["derive", "explain"])
def test_a_named_grad_tensor_at_symbolic_sizes_is_the_laws_and_a_bad_one_is_refused_alike(capsys, verb):
    sigmoid = ["torch.sigmoid(W @ x)", *SYMBOLIC[1:], "--no-check"]
    code, out, err = run(capsys, verb, *sigmoid, "--grad-tensor", "U")
    assert code == 0 and err == "" and ("\\overline{\\mathrm{out}} &= U" in out if verb == "explain" else "U" in out)
    refusals = {
        "ones": "a non-scalar output needs a symbolic --grad-tensor such as V",
        "[1, 2": "with symbolic shapes, --grad-tensor is a name (e.g. V) or ones",
        "W": "--grad-tensor W names a tensor of the expression",
    }
    for given, refusal in refusals.items():
        code, out, err = run(capsys, verb, *sigmoid, "--grad-tensor", given)
        assert code == 2 and out == "" and refusal in err and err.count("\n") == 1, (given, err)


def test_given_numbers_are_shown_as_numbers(capsys):
    values = ["torch.sigmoid(W @ x)", "--value", "W=[[1.0, 2.0, 3.0], [0.5, 0.1, 0.2]]", "--value", "x=[1.0, 2.0, 3.0]"]
    code, out, _ = run(capsys, "explain", *values, "--wrt", "W", "--grad-tensor", "[3.0, 5.0]", "--no-check")
    assert code == 0 and "v = \\begin{pmatrix} 3 & 5 \\end{pmatrix}" in out
