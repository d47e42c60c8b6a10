"""Models with the structure of well-known public model code (see public_models.py), used as they stand: each
traces as a loss closure, gives torch's gradients, has a law at a symbolic batch, and compiles to a drop-in that
trains exactly as the model does (float64, a few SGD steps at other batch sizes, buffers included).

``SYMGRAD_MODELS_FULL=1`` also proves every model's law (``sg.prove``); the CI run proves the fastest ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
import public_models as pm  # noqa: E402

F64 = torch.float64
FULL = os.environ.get("SYMGRAD_MODELS_FULL", "") == "1"


def _tokens(batch: int, length: int, vocab: int, seed: int) -> tuple:
    generator = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (batch, length), generator=generator)
    targets = torch.randint(0, vocab, (batch, length), generator=generator)
    targets[0, -1] = -1  # an ignored position, as the models' ignore_index=-1
    return idx, targets


def _gpt(flash: bool):
    def make():
        return pm.GPT(pm.GPTConfig(flash=flash))

    return make, lambda b, seed: _tokens(b, 4, 11, seed)


def _char(cls, *args):
    return (lambda: cls(pm.CharConfig(), *args)), lambda b, seed: _tokens(b, 4, 7, seed)


def _dense(make, shape):
    return make, lambda b, seed: (torch.randn(b, *shape, dtype=F64, generator=torch.Generator().manual_seed(seed)),)


MODELS = {
    "small GPT": _gpt(False),
    "small GPT, flash attention": _gpt(True),
    "Llama-style block": _dense(pm.TransformerBlock, (5, 8)),
    "ResNet basic block": _dense(lambda: pm.BasicBlock(2, 2), (2, 4, 4)),
    "bigram": _char(pm.Bigram),
    "character MLP": _char(pm.CharMLP),
    "character RNN": _char(pm.CharRNN, "rnn"),
    "character GRU": _char(pm.CharRNN, "gru"),
    "bag of words": _char(pm.BoW),
}
PROVED_IN_CI = {"bigram", "ResNet basic block"}
# llama2.c's RMSNorm and rotary embeddings compute in float32 (x.float()), whatever the model's dtype: torch's
# numbers are then float32's, rounded at every step, and symgrad's the exact ones of the float32-rounded casts
TOLERANCE: dict = {}


@pytest.fixture(autouse=True)
def _float64_by_default():
    """The models make their masks, positions and zeros in the default dtype, as the code they reproduce does."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(F64)
    yield
    torch.set_default_dtype(previous)


def _loss_of(model, inputs):
    """The loss people train: the model's own (logits, loss), or the mean square of its output."""
    if len(inputs) == 2:
        return lambda idx, targets: model(idx, targets)[1]
    return lambda x: model(x).square().mean()


def _traced(name):
    torch.manual_seed(0)
    make, data = MODELS[name]
    model = make().double()
    inputs = data(3, seed=1)
    loss = _loss_of(model, inputs)
    names = ["idx", "targets"] if len(inputs) == 2 else ["x"]
    traced = sg.trace(loss, *inputs, dynamic_shapes={n: {0: "b"} for n in names})
    return model, loss, inputs, traced, data


@pytest.mark.parametrize("name", list(MODELS))
def test_public_model_traces_with_torchs_gradients_and_a_law_at_a_symbolic_batch(name):
    model, loss, inputs, traced, _ = _traced(name)
    (b,) = sg.dims("b")
    assert traced.inputs[0].shape[0] == b
    parameters = dict(model.named_parameters())
    assert sorted(traced.parameters) == sorted(f"model.{p}" for p in parameters)
    wrt = [traced.parameters[f"model.{p}"] for p in parameters]
    laws = sg.law(traced.output, wrt)
    assert [law.shape for law in laws] == [tuple(p.shape) for p in parameters.values()]
    fixed = sg.trace(loss, *inputs)
    ours = sg.vjp(fixed.output, [fixed.parameters[f"model.{p}"] for p in parameters], 1.0)
    theirs = torch.autograd.grad(loss(*inputs), list(parameters.values()), allow_unused=True)
    for p, mine, real in zip(parameters, ours, theirs, strict=True):
        real = torch.zeros_like(parameters[p]) if real is None else real
        rtol, atol = TOLERANCE.get(name, (1e-10, 1e-12))
        np.testing.assert_allclose(np.asarray(mine.tolist()), real.numpy(), rtol=rtol, atol=atol, err_msg=p)
    if FULL or name in PROVED_IN_CI:
        proof = sg.prove(traced.output, wrt, laws=laws, time_limit=None)
        assert proof.held, str(proof)
        assert all("rewrites" in e for e in proof.exact), str(proof)  # the fast way, not the entries of the whole law


@pytest.mark.parametrize("name", list(MODELS))
def test_public_model_compiles_to_a_drop_in_that_trains_as_the_model(name):
    model, _, _, traced, data = _traced(name)
    rtol, atol = TOLERANCE.get(name, (1e-10, 1e-12))
    # a model of its own (not a deepcopy: makemore's BoW block keeps a lambda over its own submodule, which a
    # deepcopy shares), with the same numbers
    reference = MODELS[name][0]().double()
    reference.load_state_dict(model.state_dict())
    reference_loss = _loss_of(reference, data(1, seed=0))
    emitted = sg.compile(traced, name="Loss")
    twin = emitted.LossModule(traced.model)
    ours = torch.optim.SGD(model.parameters(), lr=0.1)
    theirs = torch.optim.SGD(reference.parameters(), lr=0.1)
    for step, batch in enumerate((2, 5, 3)):
        inputs = data(batch, seed=10 + step)
        for optimizer, value in ((ours, twin(*inputs)), (theirs, reference_loss(*inputs))):
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
        for (p, mine), real in zip(model.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(mine, real, rtol=rtol, atol=atol, msg=f"{p} after step {step}")
        for (p, mine), real in zip(model.named_buffers(), reference.buffers(), strict=True):
            torch.testing.assert_close(mine, real, rtol=rtol, atol=atol, msg=f"{p} after step {step}")


@pytest.mark.slow
def test_text_grows_with_the_number_of_layers_not_their_product():
    """A small GPT's law listing and emitted module: each layer adds about as much text as the first (a printer
    without shared parts once made a 2-layer module of 120 MB)."""
    sizes = {}
    for layers in (1, 3):
        torch.manual_seed(0)
        model = pm.GPT(pm.GPTConfig(n_layer=layers)).double()
        idx, targets = _tokens(2, 4, 11, seed=0)
        traced = sg.trace(_loss_of(model, (idx, targets)), idx, targets, dynamic_shapes={
            "idx": {0: "b"}, "targets": {0: "b"}})  # fmt: skip
        wrt = list(traced.parameters.values())
        laws = sg.listing([(f"grad_{p.name}", g) for p, g in zip(wrt, sg.law(traced.output, wrt))]).text()
        sizes[layers] = (len(laws), len(sg.codegen(traced, name="Loss")))
    for one, three in zip(sizes[1], sizes[3]):
        assert three < 3.5 * one, sizes


def test_a_small_gpt_with_dropout_trains_through_its_drop_in_as_the_model():
    """Dropout in training mode (embeddings, attention, residuals, MLP), the same seed for both: the drop-in's
    losses and gradients are the model's. Its backward once drew the MLP's noise again instead of reading it."""
    torch.manual_seed(0)
    model = pm.GPT(pm.GPTConfig(dropout=0.1)).double().train()
    reference = pm.GPT(pm.GPTConfig(dropout=0.1)).double().train()
    reference.load_state_dict(model.state_dict())
    idx, targets = _tokens(3, 4, 11, seed=1)
    traced = sg.trace(_loss_of(model, (idx, targets)), idx, targets, dynamic_shapes={
        "idx": {0: "b"}, "targets": {0: "b"}})  # fmt: skip
    twin = sg.compile(traced, name="Loss").LossModule(traced.model)
    for step, batch in enumerate((2, 5)):
        inputs = _tokens(batch, 4, 11, seed=20 + step)
        torch.manual_seed(step)
        ours = twin(*inputs)
        ours.backward()
        torch.manual_seed(step)
        theirs = reference(*inputs)[1]
        theirs.backward()
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
        for (name, mine), real in zip(model.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(mine.grad, real.grad, rtol=1e-10, atol=1e-12, msg=name)


def test_a_models_emitted_module_is_code_we_would_sign(tmp_path):
    """The small GPT's drop-in, as ruff checks and formats code with the repository's settings: no unused
    statement, and the text ruff format writes (long lines and symbolic sizes such as ``4 * b`` included)."""
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed")
    *_, traced, _ = _traced("small GPT")
    path = tmp_path / "emitted.py"
    path.write_text(sg.codegen(traced, name="Loss"))
    settings = ["--config", str(Path(__file__).parents[2] / "pyproject.toml")]
    checked = subprocess.run([ruff, "check", *settings, str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
    formatted = subprocess.run([ruff, "format", "--check", *settings, str(path)], capture_output=True, text=True)
    assert formatted.returncode == 0, formatted.stdout


def test_a_model_that_returns_logits_and_loss_compiles_to_a_drop_in_that_returns_both():
    """The small GPT traced as it is called, ``model(idx, targets)``: the drop-in returns ``(logits, loss)`` with
    their shapes at other batch sizes, and a backward through both gives the model's gradients."""
    torch.manual_seed(0)
    model = pm.GPT(pm.GPTConfig()).double()
    reference = pm.GPT(pm.GPTConfig()).double()
    reference.load_state_dict(model.state_dict())
    idx, targets = _tokens(3, 4, 11, seed=1)
    traced = sg.trace(model, idx, targets, dynamic_shapes={"idx": {0: "b"}, "targets": {0: "b"}})
    twin = sg.compile(traced, name="Net").NetModule(model)
    for batch in (2, 5):
        idx, targets = _tokens(batch, 4, 11, seed=batch)
        (logits, loss), (their_logits, their_loss) = twin(idx, targets), reference(idx, targets)
        assert logits.shape == (batch, 4, 11) and loss.shape == ()
        torch.testing.assert_close(logits, their_logits, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(loss, their_loss, rtol=1e-12, atol=1e-12)
        weights = torch.linspace(-1, 1, logits.numel(), dtype=F64).reshape(logits.shape)
        (loss + (logits * weights).sum()).backward()
        (their_loss + (their_logits * weights).sum()).backward()
        for (name, mine), real in zip(model.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(mine.grad, real.grad, rtol=1e-10, atol=1e-12, msg=name)


def test_a_traced_tuple_with_something_else_than_tensors_is_refused_in_one_line():
    torch.manual_seed(0)
    model = pm.GPT(pm.GPTConfig()).double()
    idx, _ = _tokens(2, 4, 11, seed=1)
    traced = sg.trace(model, idx)  # no targets: the loss is None
    with pytest.raises(sg.SymgradError, match=r"returns a NoneType in position 1 of its tuple"):
        sg.compile(traced, name="Net")
