"""A drop-in module is the model: it updates batch norm's running statistics as torch does, draws dropout's noise
from torch's generator as torch does, and refuses a mode other than the one it was traced in. A seeded training
run through it ends where the same run through torch ends (float64)."""

from __future__ import annotations

import copy

import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F = torch.nn.functional
F64 = torch.float64


class SmallCnn(torch.nn.Module):
    """Conv2d, BatchNorm2d, ReLU, max-pooling, Dropout and a linear classifier, with cross-entropy."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.bn = torch.nn.BatchNorm2d(2)
        self.drop = torch.nn.Dropout(0.3)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return F.cross_entropy(self.fc(self.drop(h.flatten(1))), y)


def _batch(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(size, 1, 6, 6, dtype=F64), torch.randint(0, 3, (size,))


@pytest.fixture(scope="module")
def emitted():
    torch.manual_seed(0)
    model = SmallCnn().double()
    traced = sg.trace(model, *_batch(4), dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}})
    return model, traced, sg.compile(traced, name="SmallCnn")


def test_training_through_the_drop_in_ends_where_torch_ends(emitted):
    model, _, module = emitted
    torch.manual_seed(1)
    ours, theirs = copy.deepcopy(model), copy.deepcopy(model)
    drop_in = module.SmallCnnModule(ours)
    optimisers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ours, theirs)]
    for step in range(10):
        x, y = _batch(3 + step % 4)  # any batch size: the trace's is symbolic
        state = torch.random.get_rng_state()
        losses = []
        for net, optimiser in zip((drop_in, theirs), optimisers):
            torch.random.set_rng_state(state)  # the same draws of dropout's noise for both
            optimiser.zero_grad()
            loss = net(x, y)
            loss.backward()
            optimiser.step()
            losses.append(loss.detach())
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-12, atol=1e-14)
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)
    assert int(ours.bn.num_batches_tracked) == int(theirs.bn.num_batches_tracked) == 10
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)
    ours.eval(), theirs.eval()
    x, y = _batch(5)
    torch.testing.assert_close(ours(x, y), theirs(x, y), rtol=1e-12, atol=1e-14)


def test_forward_and_backward_trains_as_loss_backward_does(emitted):
    """One pass without autograd's graph: the same losses, gradients (accumulated into .grad across calls, as
    backward accumulates them), buffers and dropout draws as the model's own forward and backward."""
    model, _, module = emitted
    ours, theirs = copy.deepcopy(model), copy.deepcopy(model)
    drop_in = module.SmallCnnModule(ours)
    optimisers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ours, theirs)]
    for step in range(6):
        x, y = _batch(3 + step % 3)
        state = torch.random.get_rng_state()
        for optimiser in optimisers:
            optimiser.zero_grad()
        torch.random.set_rng_state(state)
        ours_loss = drop_in.forward_and_backward(x, y)
        ours_loss = ours_loss + drop_in.forward_and_backward(x, y)  # a second call adds to .grad
        torch.random.set_rng_state(state)
        first = theirs(x, y)
        first.backward()
        second = theirs(x, y)
        second.backward()
        torch.testing.assert_close(ours_loss, (first + second).detach(), rtol=1e-12, atol=1e-14)
        for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-12, atol=1e-14, msg=name)
        for optimiser in optimisers:
            optimiser.step()
    for (name, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14, msg=name)


class Unused(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.used, self.unused = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x).square().sum()


def test_forward_and_backward_leaves_unreached_and_frozen_parameters_alone():
    torch.manual_seed(0)
    model = Unused().double()
    model.used.bias.requires_grad_(False)
    module = sg.compile(sg.trace(model, torch.randn(3, 2, dtype=F64)), name="Unused")
    module.UnusedModule(model).forward_and_backward(torch.randn(3, 2, dtype=F64))
    assert model.used.weight.grad is not None
    assert model.used.bias.grad is None and model.unused.weight.grad is None and model.unused.bias.grad is None


def _same_step(model: torch.nn.Module, drop_in: torch.nn.Module, twin: torch.nn.Module, x, y) -> None:
    """One forward and backward of each at the same seed: the same loss, gradients and buffers."""
    losses = []
    for net in (model, drop_in):
        net.zero_grad()
        torch.manual_seed(11)
        losses.append(net(x, y))
        losses[-1].backward()
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-12, atol=1e-14)
    for (name, a), b in zip(model.named_parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-12, atol=1e-14, msg=name)
    for (name, a), b in zip(model.named_buffers(), twin.buffers(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=0, msg=name)


def test_the_drop_in_follows_the_models_mode_both_ways(emitted):
    """Traced in training, compiled for eval too: model.eval() and model.train() switch freely, with no symgrad at
    run time, and a mix of the two (batch norm frozen, dropout on) is refused in one line."""
    model, traced, module = emitted
    assert traced.modes == {"bn": True, "drop": True}  # SmallCnn's own code never reads self.training
    model, twin = copy.deepcopy(model), copy.deepcopy(model)
    drop_in = module.SmallCnnModule(twin)
    for mode in ("eval", "train", "eval", "train"):
        getattr(model, mode)(), getattr(drop_in, mode)()
        _same_step(model, drop_in, twin, *_batch(3))
    drop_in.bn.eval()
    with pytest.raises(RuntimeError, match="not bn eval, drop training: trace and compile the model in these modes"):
        drop_in(*_batch(2))


def test_a_model_traced_in_eval_mode_trains_too():
    torch.manual_seed(0)
    model = SmallCnn().double().eval()
    traced = sg.trace(model, *_batch(4), dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}})
    assert traced.updates == []
    twin = copy.deepcopy(model)
    drop_in = sg.compile(traced, name="Eval").EvalModule(twin)
    _same_step(model, drop_in, twin, *_batch(3))
    model.train(), drop_in.train()
    _same_step(model, drop_in, twin, *_batch(5))


def test_symbolic_dropout_draws_what_torch_draws_for_the_same_seed():
    torch.manual_seed(3)
    x = torch.randn(3, 4)
    expected = F.dropout(x.requires_grad_(), 0.3, True)
    expected.sum().backward()
    storch.manual_seed(3)
    storch.randn(3, 4)  # the same draws in the same order
    ours = storch.tensor(x.tolist(), requires_grad=True, name="x")
    out = storch.nn.functional.dropout(ours, 0.3, True)
    torch.testing.assert_close(torch.tensor(out.tolist()), expected.detach(), rtol=0, atol=0)
    out.sum().backward()
    torch.testing.assert_close(torch.tensor(ours.grad.tolist()), x.grad, rtol=0, atol=0)


class Counted(torch.nn.Module):
    """Batch norm with momentum=None keeps a cumulative average: its factor is 1 / num_batches_tracked, a number
    read out of a buffer, which a traced graph would freeze."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(2, momentum=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x).sum()


def test_a_number_read_out_of_a_buffer_is_refused():
    with pytest.raises(sg.UnsupportedError, match=r"reads a number out of a tensor computed from bn_num_batches"):
        sg.trace(Counted().double(), torch.randn(3, 2, dtype=F64))


class Residual(torch.nn.Module):
    """A ResNet-style block written with in-place ops: ReLU(inplace=True) and out += identity."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.fc(x)
        out += x
        out.mul_(2)
        return self.relu(out).sum()


def test_in_place_ops_are_traced_as_torch_computes_them():
    torch.manual_seed(0)
    model = Residual().double()
    x = torch.randn(4, 3, dtype=F64)
    traced = sg.trace(model, x)
    loss = model(x)
    loss.backward()
    assert traced.output.tolist() == pytest.approx(loss.item(), rel=1e-14)
    grads = sg.vjp(traced.output, list(traced.parameters.values()))
    for grad, (name, p) in zip(grads, model.named_parameters(), strict=True):
        torch.testing.assert_close(torch.tensor(grad.tolist(), dtype=F64), p.grad, rtol=1e-13, atol=1e-14, msg=name)


def test_an_in_place_update_of_a_view_is_refused():
    def fn(x):
        row = x[0]
        y = x * 1
        y[0].add_(1)  # y[0] is a view of y: updating it changes y
        return (y * row).sum()

    with pytest.raises(sg.UnsupportedError, match="shares storage with another"):
        sg.trace(fn, torch.randn(2, 3, dtype=F64))


class TwoBuffers(torch.nn.Module):
    """b is updated from a before a changes: the emitted forward must read a's old value, as the model does."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("a", torch.tensor([1.0, 2.0], dtype=F64))
        self.register_buffer("b", torch.zeros(2, dtype=F64))
        self.w = torch.nn.Parameter(torch.ones(2, dtype=F64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.b.mul_(0.5).add_(self.a)
        self.a.add_(1)
        return (x * self.w).sum()


def test_buffer_updates_read_the_values_before_any_is_written():
    model = TwoBuffers()
    x = torch.randn(2, dtype=F64)
    drop_in = sg.compile(sg.trace(model, x), name="Two").TwoModule(ours := copy.deepcopy(model))
    theirs = copy.deepcopy(model)
    for _ in range(3):
        drop_in(x), theirs(x)
    assert ours.a.tolist() == theirs.a.tolist() and ours.b.tolist() == theirs.b.tolist()


class DropThenLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.3)
        self.fc = torch.nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.drop(x)).tanh().sum()


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # forward_ad's import
def test_forward_mode_through_the_drop_in_reads_the_noise_it_drew():
    import torch.autograd.forward_ad as forward_ad

    torch.manual_seed(0)
    model = DropThenLinear().double()
    traced = sg.trace(model, torch.randn(4, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    drop_in = sg.compile(traced, name="Drop").DropModule(model)
    x, tangent = torch.randn(5, 3, dtype=F64), torch.randn(5, 3, dtype=F64)
    results = []
    for net in (drop_in, model):
        with forward_ad.dual_level():
            torch.manual_seed(7)
            primal, derivative = forward_ad.unpack_dual(net(forward_ad.make_dual(x, tangent)))
            results.append((primal.item(), derivative.item(), torch.rand(()).item()))
    assert results[0] == pytest.approx(results[1], rel=1e-12)


class MyDropout(torch.nn.Dropout):
    """A subclass of torch's Dropout: still a module whose computation depends on its mode."""


def test_mode_checks_cover_subclasses_of_torchs_modules():
    model = torch.nn.Sequential(MyDropout(0.5), torch.nn.Linear(3, 1)).double()
    traced = sg.trace(model, torch.randn(4, 3, dtype=F64))
    assert traced.modes == {"0": True}
    drop_in = sg.compile(traced, name="Sub").SubModule(model)
    x = torch.randn(4, 3, dtype=F64)
    torch.testing.assert_close(drop_in.eval()(x), model.eval()(x), rtol=1e-12, atol=1e-14)


def test_a_model_without_parameters_whose_mode_may_matter_compiles():
    """Code whose class cannot be read (defined where inspect finds no source) may depend on its mode; with no
    parameters or buffers there is no drop-in to follow it, and the module is emitted as for a function."""
    namespace: dict = {}
    exec(  # a class inspect.getsource cannot read, as one typed at the REPL
        "import torch\nclass Square(torch.nn.Module):\n    def forward(self, x):\n        return x.square().sum()\n",
        namespace,
    )
    model = namespace["Square"]()
    traced = sg.trace(model, torch.randn(3, 2, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    assert traced.modes == {"": True}
    module = sg.compile(traced, name="Square")
    x = torch.randn(4, 2, dtype=F64, requires_grad=True)
    module.apply(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach(), rtol=1e-15, atol=0)
