"""``--module FILE.py:NAME --input x=m,3``: a model from a file goes through derive, codegen and explain, with
torch's numbers; a bad file, name or input is one line with exit code 2."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from symgrad.cli import main

F64 = torch.float64
MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return torch.nn.functional.softplus(self.fc2(torch.tanh(self.fc1(x)))).mean()


def score(x, w):
    return (x @ w).sigmoid()


torch.manual_seed(0)
shared = nn.Linear(3, 2).double()


def closure_loss(x, y):
    return torch.nn.functional.cross_entropy(shared(x), y)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x, y, keep):
        return torch.nn.functional.cross_entropy(self.fc(x) * keep, y)


class NormedCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.norm = nn.BatchNorm2d(3)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        return self.fc(self.drop(torch.relu(self.norm(self.conv(x)))).flatten(1)).square().mean()


broken = None  # neither a model nor a function
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def the_same_net(path: Path) -> torch.nn.Module:
    """The model as the command line builds it: the class after torch.manual_seed(0), in float64."""
    spec = importlib.util.spec_from_file_location("net_for_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.Net().double()


def test_derive_a_model_from_a_file_gives_torchs_gradients(capsys, model_file):
    spec = f"{model_file}:Net"
    code, out, err = run(
        capsys, "derive", "--module", spec, "--input", "x=2,3", "--wrt", "fc2.weight", "--format", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["check"]["ok"] is True
    net = the_same_net(model_file)
    x = torch.randn((2, 3), dtype=F64, generator=torch.Generator().manual_seed(0))
    net(x).backward()
    (grad,) = data["gradients"]
    assert [e["value"] for e in grad["entries"]] == pytest.approx(net.fc2.weight.grad.reshape(-1).tolist(), abs=1e-14)


def test_a_symbolic_batch_gives_the_models_laws_proved(capsys, model_file):
    code, out, err = run(capsys, "derive", "--module", f"{model_file}:Net", "--input", "x=m,3")
    assert code == 0, err
    assert "grad_fc1_weight = " in out and "grad_fc2_bias = " in out
    assert "proof: held" in out


def test_a_model_with_class_targets_takes_integer_and_boolean_inputs(capsys, model_file):
    """``y=m:int64[0,4)``: class targets drawn in 0..3 at a symbolic batch; ``m,1:bool``: a mask."""
    argv = ["--module", f"{model_file}:Classifier", "--input", "x=m,3", "--input", "y=m:int64[0,4)"]
    code, out, err = run(capsys, "derive", *argv, "--input", "keep=m,1:bool", "--wrt", "fc.weight")
    assert code == 0, err
    assert "grad_fc_weight = " in out and "proof: held" in out
    fixed = ["--module", f"{model_file}:Classifier", "--input", "x=5,3", "--input", "y=5:int64[0,4)"]
    code, out, err = run(capsys, "derive", *fixed, "--input", "keep=5,1:bool", "--wrt", "fc.weight", "--format", "json")
    assert code == 0, err
    generator = torch.Generator().manual_seed(0)  # the command line's draws, in the order of the inputs
    x = torch.randn((5, 3), dtype=F64, generator=generator)
    y = torch.randint(0, 4, (5,), generator=generator)
    keep = torch.randint(0, 2, (5, 1), generator=generator).bool()
    torch.manual_seed(0)
    spec = importlib.util.spec_from_file_location("classifier_for_test", model_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    net = module.Classifier().double()
    net(x, y, keep).backward()
    (grad,) = json.loads(out)["gradients"]
    listed = grad["entries"]  # the first entries and the last ones of the count
    assert grad["count"] == 12 and len(listed) >= 4
    expected = [net.fc.weight.grad[tuple(e["index"])].item() for e in listed]
    assert [e["value"] for e in listed] == pytest.approx(expected, abs=1e-14)


def test_a_loss_function_closing_over_a_model_names_its_parameters(capsys, model_file):
    argv = ["--module", f"{model_file}:closure_loss", "--input", "x=m,3", "--input", "y=m:int64[0,2)"]
    code, out, err = run(capsys, "derive", *argv, "--wrt", "shared.weight")
    assert code == 0, err
    assert "grad_shared_weight = " in out and "proof: held" in out


def test_codegen_of_a_model_writes_a_drop_in_that_trains_like_the_original(capsys, model_file, tmp_path):
    target = tmp_path / "net_backward.py"
    code, _, err = run(
        capsys, "codegen", "--module", f"{model_file}:Net", "--input", "x=m,3", "--name", "Net", "-o", str(target)
    )
    assert code == 0 and "OK" in err, err
    spec = importlib.util.spec_from_file_location("net_backward", target)
    emitted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emitted)
    original, twin = the_same_net(model_file), the_same_net(model_file)
    drop_in = emitted.NetModule(twin)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.5) for m in (original, twin)]
    generator = torch.Generator().manual_seed(5)
    for step in range(3):
        batch = torch.randn((5 + step, 3), dtype=F64, generator=generator)  # a batch size of its own each step
        for model, optimizer in zip((original, drop_in), optimizers, strict=True):
            optimizer.zero_grad()
            model(batch).backward()
            optimizer.step()
    for (name, a), b in zip(original.named_parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)


def test_codegen_of_a_model_with_batch_norm_and_dropout_in_training_writes_its_drop_in(capsys, model_file, tmp_path):
    """The running statistics are inputs the loss never reads, and dropout's noise comes from torch's generator: the
    check runs the module at one seed against torch.autograd through its own forward, and the file is written."""
    target = tmp_path / "cnn_backward.py"
    argv = ["--module", f"{model_file}:NormedCNN", "--input", "x=m,1,6,6", "--name", "CNN", "-o", str(target)]
    code, _, err = run(capsys, "codegen", *argv)
    assert code == 0 and "OK" in err, err
    spec = importlib.util.spec_from_file_location("cnn_backward", target)
    emitted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emitted)
    loaded = importlib.util.spec_from_file_location("cnn_for_test", model_file)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    torch.manual_seed(0)
    original = module.NormedCNN().double()
    twin = copy.deepcopy(original)
    drop_in = emitted.CNNModule(twin)
    x = torch.randn((4, 1, 6, 6), dtype=F64, generator=torch.Generator().manual_seed(1))
    for model in (original, drop_in):
        torch.manual_seed(3)
        model(x).backward()
    for (name, a), b in zip(original.named_parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-14, msg=name)
    for (name, a), b in zip(original.named_buffers(), twin.buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=0, msg=name)


def test_codegen_of_a_function_in_a_file_differentiates_its_named_inputs(capsys, model_file, tmp_path):
    target = tmp_path / "score.py"
    code, _, err = run(
        capsys, "codegen", "--module", f"{model_file}:score", "--input", "x=m,3", "--input", "w=3",
        "--wrt", "w", "--style", "function", "-o", str(target),
    )  # fmt: skip
    assert code == 0, err
    spec = importlib.util.spec_from_file_location("score", target)
    emitted = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(emitted)
    x = torch.randn((4, 3), dtype=F64)
    w = torch.randn(3, dtype=F64, requires_grad=True)
    v = torch.randn(4, dtype=F64)
    (x @ w).sigmoid().backward(v)
    (grad,) = emitted.vjp(x, w.detach(), v)
    torch.testing.assert_close(grad, w.grad, rtol=1e-12, atol=1e-14)


def test_explain_a_model_from_a_file(capsys, model_file, tmp_path):
    target = tmp_path / "net.md"
    code, _, err = run(
        capsys, "explain", "--module", f"{model_file}:Net", "--input", "x=m,3", "--wrt", "fc1.weight", "-o", str(target)
    )
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    assert "Net(x) from model.py" in text and r"\mathrm{fc1\_weight}" in text
    # the page leads with the law, and a parameter's values, drawn at initialisation, are not printed: the law holds
    # for any
    assert text.index("laws that hold for every size") < text.index("## The tensors")
    assert r"\overline{\mathrm{fc1\_weight}} &=" in text.split("## The tensors")[0]
    tensors = text.split("## The tensors")[1][:600]
    assert "values given (the law below holds for any)" in tensors and "pmatrix" not in tensors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--module", "{dir}/nope.py:Net", "--input", "x=2,3"], "is not a Python file"),
        (["--module", "{dir}/model.py:Nope", "--input", "x=2,3"], "model.py has no Nope"),
        (["--module", "{dir}/model.py", "--input", "x=2,3"], "takes FILE.py:NAME"),
        (["--module", "{dir}/model.py:broken", "--input", "x=2,3"], "not a model or a function"),
        (["--module", "{dir}/model.py:Net", "--input", "y=2,3"], "names the arguments x in order"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,4"], "cannot be multiplied"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3", "--wrt", "fc9"], "does not have"),
        (["x.sum()", "--module", "{dir}/model.py:Net"], "not both or neither"),
        (["x.sum()", "--shape", "x=2", "--input", "x=2"], "--input goes with --module"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3:int64"], "give the integers' range"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3:int64[0,3]"], "int64[LOW,HIGH)"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3:int64[3,3)"], "is empty"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3:bool[0,2)"], "goes with an integer kind"),
        (["--module", "{dir}/model.py:Net", "--input", "x=2,3:complex"], "use float64, float32, bool"),
    ],
)
def test_bad_models_are_one_line_with_exit_2(capsys, model_file, argv, message):
    code, out, err = run(capsys, "derive", *[a.replace("{dir}", str(model_file.parent)) for a in argv])
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_a_file_that_raises_is_reported_in_one_line(capsys, tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("raise ValueError('no weights here')\n", encoding="utf-8")
    code, _, err = run(capsys, "derive", "--module", f"{path}:Net", "--input", "x=2")
    assert code == 2
    assert "running bad.py failed: ValueError: no weights here" in err and err.count("\n") == 1
