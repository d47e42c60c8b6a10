"""sg.trace with symbolic sizes: Python code that loops or decides on a size is refused, or its decisions are
kept as guards that emitted modules check; and tracing leaves the model and torch's random state as they were."""

from __future__ import annotations

import importlib
import math

import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64
PROBES = importlib.import_module("symgrad.torch.trace_probes")


@pytest.fixture(autouse=True, params=["real", "fake"])
def probes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the probes at other sizes on real tensors (a small model's) and on torch's fake tensors
    (a large model's, from a second of CPU time): each decides the same, refusals in the same words."""
    if request.param == "fake":
        monkeypatch.setattr(PROBES, "_FAKE_WORTH", 0.0)
    return request.param


def test_a_fake_probe_follows_a_model_that_reads_no_numbers_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake probe really runs (it is no fallback every time), and the trace it checks equals the real one's."""
    outcomes = []
    fake_run = PROBES._without_numbers

    def counted(*args: object) -> object:
        second = fake_run(*args)
        outcomes.append(second is not None)
        return second

    monkeypatch.setattr(PROBES, "_without_numbers", counted)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.GELU(), torch.nn.Linear(4, 2))

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(model(x) + torch.arange(2.0), y)

    x, y = torch.randn(5, 3, dtype=F64), torch.tensor([0, 1, 1, 0, 1])
    model.double()
    dynamic = {"x": {0: "b"}, "y": {0: "b"}}
    monkeypatch.setattr(PROBES, "_FAKE_WORTH", 0.0)
    fake = sg.codegen(sg.trace(loss, x, y, dynamic_shapes=dynamic, modules={"model": model}), name="Loss")
    assert outcomes and all(outcomes)
    monkeypatch.setattr(PROBES, "_FAKE_WORTH", math.inf)
    assert sg.codegen(sg.trace(loss, x, y, dynamic_shapes=dynamic, modules={"model": model}), name="Loss") == fake


class Unrolled(torch.nn.Module):
    """A recurrent cell run over the time steps by a Python loop over x.shape[1]."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = torch.nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x[:, 0]
        for i in range(1, x.shape[1]):
            h = torch.tanh(self.cell(torch.cat([x[:, i], h], 1)))
        return h.sum()


def test_a_loop_over_a_symbolic_length_is_refused_at_trace_time():
    """Unrolled at t = 3, the graph reads x[:, 0..2] only: a module from it gave a wrong loss at t = 5."""
    torch.manual_seed(0)
    model = Unrolled().double()
    x = torch.randn(2, 3, 2, dtype=F64)
    with pytest.raises(sg.UnsupportedError, match=r"other calls at t = 4 than at t = 3 .*leave t out of the symbolic"):
        sg.trace(model, x, dynamic_shapes={"x": {0: "b", 1: "t"}})
    traced = sg.trace(model, x, dynamic_shapes={"x": {0: "b"}})  # the batch alone is symbolic: fine
    assert traced.guards == []


class Checked(torch.nn.Module):
    """A model that checks its sequence length, as a GPT checks its block size."""

    def __init__(self, branch_on_batch: bool = False) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.branch_on_batch = branch_on_batch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.shape[1] <= 8, "sequence too long"
        if self.branch_on_batch and x.shape[0] == 3:
            return self.lin(x).tanh().sum()
        return self.lin(x).sum()


def test_a_decision_on_a_size_is_a_guard_that_the_emitted_module_checks():
    torch.manual_seed(0)
    model = Checked().double()
    traced = sg.trace(model, torch.randn(3, 4, 2, dtype=F64), dynamic_shapes={"x": {0: "b", 1: "t"}})
    assert [str(g.relation) for g in traced.guards] == ["t <= 8"]
    assert "assert x.shape[1] <= 8" in traced.guards[0].site
    emitted = sg.compile(traced, name="Checked")
    drop_in = emitted.CheckedModule(model)
    ok = torch.randn(2, 8, 2, dtype=F64)
    torch.testing.assert_close(drop_in(ok), model(ok), rtol=1e-13, atol=0)
    with pytest.raises(ValueError, match=r"holds only where t <= 8"):
        drop_in(torch.randn(2, 9, 2, dtype=F64))


def test_a_branch_on_the_value_of_a_size_is_refused():
    model = Checked(branch_on_batch=True).double()
    with pytest.raises(sg.UnsupportedError, match=r"decides on the symbolic size b by its value \(b == 3\)"):
        sg.trace(model, torch.randn(3, 4, 2, dtype=F64), dynamic_shapes={"x": {0: "b", 1: "t"}})


def test_code_that_runs_at_one_size_only_is_refused():
    mask = torch.ones(4, 4, dtype=F64)

    def attend(x):
        return (x @ x.mT * mask).sum()  # a 4x4 constant pins the length

    with pytest.raises(sg.UnsupportedError, match=r"torch runs it at the example's sizes, but not for every t"):
        sg.trace(attend, torch.randn(2, 4, 3, dtype=F64), dynamic_shapes={"x": {1: "t"}})


class Noisy(torch.nn.Module):
    """Batch norm in training mode updates its running statistics; the code also draws random numbers."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.bn(x) + 0 * torch.rand(())).sum()


@pytest.mark.parametrize("dynamic", [None, {"x": {0: "m"}}], ids=["concrete", "symbolic batch"])
def test_tracing_leaves_the_model_and_the_random_state_as_they_were(dynamic):
    torch.manual_seed(0)
    model = Noisy().double().train()
    x = torch.randn(4, 3, dtype=F64)
    before = {name: b.clone() for name, b in model.named_buffers()}
    state = torch.random.get_rng_state()
    sg.trace(model, x, dynamic_shapes=dynamic)
    for name, buffer in model.named_buffers():
        assert torch.equal(buffer, before[name]), name
    assert torch.equal(torch.random.get_rng_state(), state)


def test_a_graph_made_before_the_trace_still_goes_backward():
    """Restoring the running statistics after the trace must not bump their version counters: batch norm's
    backward reads them, and a loss computed before sg.trace is still differentiated afterwards."""
    torch.manual_seed(0)
    model = torch.nn.BatchNorm1d(3).double().train()
    x = torch.randn(4, 3, dtype=F64, requires_grad=True)
    loss = (model(x) ** 3).sum()
    sg.trace(model, x)
    loss.backward()
    assert x.grad is not None and model.weight.grad is not None


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda x: x.sum() * (2 if len(x) >= 5 else 1), r"len\(\) .* reads the symbolic size m"),
        (lambda x: x[: x.shape[0] // 2].sum(), r"a slice bound made of a symbolic size"),
        (lambda x: torch.nn.functional.pad(x, (0, x.shape[0])).sum(), r"pad\(\) by a symbolic size"),
    ],
    ids=["len", "a slice at a size", "pad by a size"],
)
def test_uses_of_a_size_that_a_graph_cannot_follow_are_refused(fn, match):
    with pytest.raises(sg.UnsupportedError, match=match):
        sg.trace(fn, torch.randn(4, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})


@pytest.mark.parametrize(
    ("fn", "guard", "refused_at"),
    [
        (lambda x: x.sum() * (2 if x.shape[0] % 3 == 0 else 1), "Ne(Mod(m, 3), 0)", 6),
        (lambda x: x.sum() * (2 if x.shape[0] > 2.5 else 1), "m > 5/2", 2),
        (lambda x: x.sum() * (2 if -x.shape[0] < -3 else 1), "m > 3", 3),
        (lambda x: x.sum() * (2 if x.shape[0] / 2 >= 2.5 else 1), "m/2 < 5/2", 5),  # a size divided: a number of m
    ],
    ids=["m % 3", "a float bound", "-m", "a size as a float"],
)
def test_decisions_through_size_arithmetic_are_guards(fn, guard, refused_at):
    class Model(torch.nn.Module):
        def forward(self, x):
            return fn(x)

    traced = sg.trace(Model(), torch.randn(4, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    assert [str(g.relation) for g in traced.guards] == [guard]
    emitted = sg.compile(traced, name="Guarded")
    with pytest.raises(ValueError, match="the traced code holds only where"):
        emitted.forward(torch.randn(refused_at, 3, dtype=F64))


@pytest.mark.parametrize(
    ("fn", "law"),
    [
        (lambda x: x.sum(-1) * (1.0 / x.size(-1)), "1 / n"),
        (lambda x: x * (1.0 / math.sqrt(x.shape[-1])), "math.sqrt(n)"),
        (lambda x: x.var(-1) * (2.0 / (x.size(-1) - 1)), "-1 + n"),
        (lambda x: x * (1.0 / x.numel()), "m * n"),
        (lambda x: x * torch.empty_like(x).fill_(1.0 / x.numel()), "m * n"),
    ],
    ids=["1.0 / n", "1.0 / sqrt(n)", "2.0 / (n - 1)", "1.0 / numel", "fill_(1.0 / numel)"],
)
def test_a_python_float_made_from_sizes_becomes_an_expression_in_them(fn, law):
    """float's own division by a size gives a plain float; the probes at other sizes make it an expression in the
    sizes, and the emitted function at other sizes gives torch's value and gradient."""
    loss = lambda x: fn(x).square().sum()  # noqa: E731
    traced = sg.trace(loss, torch.randn(3, 4, dtype=F64), dynamic_shapes={"x": {0: "m", 1: "n"}})
    (grad,) = sg.law(traced.output, [traced.inputs[0]])
    assert law in str(grad)
    emitted = sg.compile(traced, name="SizeNumbers")
    for shape in ((5, 6), (2, 9)):
        x = torch.randn(*shape, dtype=F64, requires_grad=True)
        (expected,) = torch.autograd.grad(loss(x), x)
        out = emitted.apply(x)  # the loss first (the emitted function also returns what the forward saves)
        (ours,) = torch.autograd.grad(out[0] if isinstance(out, tuple) else out, x)
        torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def test_a_number_that_changes_with_a_size_otherwise_is_refused():
    with pytest.raises(sg.UnsupportedError, match=r"the number 1\.0, made from the sizes, changes otherwise"):
        sg.trace(
            lambda x: x.sum() * float(x.size(-1) % 3), torch.randn(3, 4, dtype=F64), dynamic_shapes={"x": {1: "n"}}
        )


def test_a_one_hot_of_targets_at_a_symbolic_batch_follows_with_its_class_count():
    """F.one_hot(y, C) of targets whose batch is symbolic: torch's kernel checks the values when it runs, so the
    trace follows; without num_classes the class count is the targets' largest value, which a symbolic batch leaves
    unknown, and that is refused in one line."""
    head = torch.nn.Linear(4, 7).double()
    x, y = torch.randn(5, 4, dtype=F64), torch.tensor([0, 6, 2, 2, 5])

    def loss(x, y):
        return -(torch.nn.functional.one_hot(y, 7) * torch.log_softmax(head(x), -1)).sum()

    traced = sg.trace(loss, x, y, dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}}, modules={"head": head})
    twin = sg.compile(traced, name="Loss").LossModule(traced.model)
    x3, y3 = torch.randn(3, 4, dtype=F64), torch.tensor([1, 0, 6])
    (ours,) = torch.autograd.grad(twin(x3, y3), head.weight)
    (theirs,) = torch.autograd.grad(loss(x3, y3), head.weight)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-14)
    with pytest.raises(sg.UnsupportedError, match="one_hot without num_classes"):
        sg.trace(
            lambda x, y: (torch.nn.functional.one_hot(y) * x).sum(),
            torch.randn(5, 7, dtype=F64),
            y,
            dynamic_shapes={"x": {0: "m"}, "y": {0: "m"}},
        )


def test_a_branch_on_a_symbolic_size_inside_a_call_is_refused_in_one_line():
    """embedding_bag with a padding_idx checks it against the table's length, a symbolic size here: a one-line
    refusal naming the size, where it was reported as a bug of symgrad."""
    weight = torch.randn(5, 5, dtype=F64, requires_grad=True)
    bags = torch.tensor([[2, 1, 1], [0, 2, 4], [2, 0, 0]])
    with pytest.raises(sg.UnsupportedError, match="branches on the value of m; leave m out of the symbolic sizes"):
        sg.trace(
            lambda w, bags: torch.nn.functional.embedding_bag(bags, w, padding_idx=2, mode="sum").sum(),
            weight,
            bags,
            dynamic_shapes={"w": {0: "m"}},
        )


def test_a_count_made_from_a_symbolic_size_that_a_call_branches_on_is_refused_in_one_line():
    """torch.linspace(0, 1, x.shape[0]) at a symbolic length: the count reaches the call as a number, not a tensor,
    and the refusal still names the size, where it was reported as a bug of symgrad."""
    with pytest.raises(sg.UnsupportedError, match="branches on the value of m; leave m out of the symbolic sizes"):
        sg.trace(
            lambda x: (x * torch.linspace(0, 1, x.shape[0], dtype=F64)).sum(),
            torch.randn(5, dtype=F64),
            dynamic_shapes={"x": {0: "m"}},
        )
