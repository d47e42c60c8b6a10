"""The seed tutorial's REPL session, run under real torch and under symgrad.torch.

Every step is recorded (values or the error) in both worlds and compared; the
formulas symgrad derives are asserted against hand derivations from the post:
for ``loss = w @ x`` with ``w`` 1×2, ``∂loss/∂w = [x₀, x₁]``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import sympy
import torch as real_torch

import symgrad as sg
import symgrad.torch as sym_torch

Maker = Callable[..., object]


def maker(module: ModuleType) -> Maker:
    """``torch.tensor`` for either world; symgrad also gets the variable's name."""

    def make(data, name: str, requires_grad: bool = False):
        if module is sym_torch:
            return module.tensor(data, requires_grad=requires_grad, name=name)
        return module.tensor(data, requires_grad=requires_grad)

    return make


def outcome(step: Callable[[], object]) -> tuple[str, object]:
    try:
        result = step()
    except RuntimeError as error:
        return ("error", str(error))
    if result is None:
        return ("ok", None)
    return ("value", result.tolist())


def literal_session(torch: ModuleType) -> list[tuple[str, tuple[str, object]]]:
    """The seed's REPL lines, in order, exactly as written (the non-REPL code block is not run)."""
    make = maker(torch)
    log: list[tuple[str, tuple[str, object]]] = []

    def step(label: str, action: Callable[[], object]) -> None:
        log.append((label, outcome(action)))

    # Scalar loss.
    w = make([[1.0, 2.0]], "w", requires_grad=True)
    x = make([[1.0], [1.0]], "x")
    loss = torch.mm(w, x)
    step("scalar loss", lambda: loss)
    step("scalar backward", lambda: loss.backward())
    step("scalar w.grad", lambda: w.grad)

    # Vector loss.
    w = make([[1.0, 2.0]], "w", requires_grad=True)
    x = make([[1.0, 1.0], [2.0, 2.0]], "x")
    loss = torch.mm(w, x)
    step("vector loss", lambda: loss)
    step("implicit backward of a vector", lambda: loss.backward())
    loss_sum = loss.sum()
    step("loss_sum", lambda: loss_sum)
    step("sum backward", lambda: loss_sum.backward(retain_graph=True))
    step("w.grad after sum", lambda: w.grad)

    def zero_grad() -> None:
        w.grad *= 0

    step("zero", zero_grad)
    step("ones_like backward", lambda: loss.backward(torch.ones_like(loss)))
    step("w.grad after ones_like", lambda: w.grad)
    step("zero again", zero_grad)
    loss0, loss1 = loss[0]
    step("loss0 backward (graph already freed)", lambda: loss0.backward(retain_graph=True))
    step("loss1 backward", lambda: loss1.backward(retain_graph=True))
    step("w.grad at the end", lambda: w.grad)
    return log


def test_literal_session_matches_torch_step_by_step():
    ours = literal_session(sym_torch)
    theirs = literal_session(real_torch)
    assert [label for label, _ in ours] == [label for label, _ in theirs]
    for (label, (kind, value)), (_, (torch_kind, torch_value)) in zip(ours, theirs):
        assert kind == torch_kind, label
        if kind == "error":
            assert value.startswith(torch_value), label  # symgrad adds which call freed the graph
        else:
            assert value == torch_value, label  # small exact numbers: equal in float32 and symbolically
    errors = {label: value for label, (kind, value) in ours if kind == "error"}
    assert errors["implicit backward of a vector"] == "grad can be implicitly created only for scalar outputs"
    freed = errors["loss0 backward (graph already freed)"]
    assert "Trying to backward through the graph a second time" in freed
    assert "freed by backward call" in freed and "(w @ x).backward(gradient)" in freed  # names the culprit


def seed_tensors(x_data=((1.0, 1.0), (2.0, 2.0))):
    w = sym_torch.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    x = sym_torch.tensor([list(r) for r in x_data], name="x")
    return w, x, x.entries()


def test_scalar_loss_formula_and_value():
    w, x, xs = seed_tensors(((1.0,), (1.0,)))
    loss = sym_torch.mm(w, x)
    assert loss.sympy() == sympy.Array([[w.entries()[0, 0] * xs[0, 0] + w.entries()[0, 1] * xs[1, 0]]])
    assert loss.tolist() == [[3.0]]
    loss.backward()
    assert w.grad.sympy() == sympy.Array([[xs[0, 0], xs[1, 0]]])  # ∂loss/∂w = [x₀, x₁]
    assert w.grad.tolist() == [[1.0, 1.0]]
    assert sg.jacobian(loss, w) == sympy.Array([[[[xs[0, 0], xs[1, 0]]]]])


def test_vector_loss_needs_grad_tensors():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    assert loss.tolist() == [[5.0, 5.0]]
    with pytest.raises(RuntimeError, match=r"^grad can be implicitly created only for scalar outputs$"):
        loss.backward()
    assert w.grad is None


def expected_vector_grad(xs):
    return sympy.Array([[xs[0, 0] + xs[0, 1], xs[1, 0] + xs[1, 1]]])


@pytest.mark.parametrize("how", ["ones_like", "sum", "per_element", "list_form", "autograd_backward"])
def test_every_route_gives_the_weighted_row_sum(how):
    """ones_like grad_tensors, sum-then-backward, per-element accumulation and the list form agree."""
    w, x, xs = seed_tensors()
    loss = sym_torch.mm(w, x)
    if how == "ones_like":
        loss.backward(sym_torch.ones_like(loss))
    elif how == "sum":
        loss.sum().backward(retain_graph=True)
    elif how == "per_element":
        loss0, loss1 = loss[0]
        loss0.backward(retain_graph=True)
        loss1.backward(retain_graph=True)
    elif how == "list_form":
        loss0, loss1 = loss[0]
        sym_torch.autograd.backward([loss0, loss1], [sym_torch.ones_like(loss0), sym_torch.ones_like(loss1)])
    else:
        sym_torch.autograd.backward(loss, sym_torch.ones_like(loss))
    assert w.grad.sympy() == expected_vector_grad(xs)
    assert w.grad.tolist() == [[2.0, 4.0]]

    tw = real_torch.tensor([[1.0, 2.0]], requires_grad=True, dtype=real_torch.float64)
    tx = real_torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=real_torch.float64)
    real_torch.mm(tw, tx).backward(real_torch.ones(1, 2, dtype=real_torch.float64))
    assert w.grad.tolist() == tw.grad.tolist()


def test_zeroing_and_accumulation():
    w, x, xs = seed_tensors()
    loss = sym_torch.mm(w, x)
    loss.sum().backward(retain_graph=True)
    grad = w.grad
    w.grad *= 0
    assert w.grad is grad  # in place, as in torch
    assert w.grad.tolist() == [[0.0, 0.0]]
    loss.sum().backward(retain_graph=True)
    loss.sum().backward(retain_graph=True)
    assert w.grad.sympy() == 2 * expected_vector_grad(xs)
    assert w.grad.tolist() == [[4.0, 8.0]]
    w.grad.zero_()
    assert w.grad.tolist() == [[0.0, 0.0]]
    w.grad = None
    loss.backward(sym_torch.ones_like(loss))
    assert w.grad.tolist() == [[2.0, 4.0]]


def test_symbolic_grad_tensor_gives_v_transpose_j():
    w, x, xs = seed_tensors()
    loss = sym_torch.mm(w, x)
    v = sg.symbols_like(loss, "v")
    loss.backward(v)
    vs = v.entries()
    assert w.grad.sympy() == sympy.Array(
        [[vs[0, 0] * xs[0, 0] + vs[0, 1] * xs[0, 1], vs[0, 0] * xs[1, 0] + vs[0, 1] * xs[1, 1]]]
    )
    with pytest.raises(sg.ValuesUnknownError):
        w.grad.tolist()
    # vᵀJ is a weighted sum of the Jacobian's rows.
    jac = sg.jacobian(loss, w, matrix=True)
    assert sympy.Matrix(w.grad.sympy().reshape(1, 2)) == sympy.Matrix([[vs[0, 0], vs[0, 1]]]) * jac


def test_grad_tensor_equals_backward_of_weighted_sum():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    v = sg.symbols_like(loss, "v")
    via_grad_tensor = sg.vjp(loss, w, v).sympy()
    via_sum = sg.vjp((v * loss).sum(), w).sympy()
    assert sympy.simplify(sympy.Matrix(via_grad_tensor) - sympy.Matrix(via_sum)) == sympy.zeros(1, 2)


def test_seed_checks_against_torch():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    report = sg.check(loss, grad_tensors=sym_torch.ones_like(loss))
    assert report.ok and report.max_abs_error <= 1e-12
    assert report.values["w"] == [[2.0, 4.0]]


def test_mismatched_grad_tensor_shape_raises_like_torch():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    with pytest.raises(RuntimeError) as ours:
        loss.backward(sym_torch.tensor([1.0, 1.0]))
    tw = real_torch.tensor([[1.0, 2.0]], requires_grad=True)
    with pytest.raises(RuntimeError) as theirs:
        real_torch.mm(tw, real_torch.tensor([[1.0, 1.0], [2.0, 2.0]])).backward(real_torch.tensor([1.0, 1.0]))
    assert str(ours.value) == str(theirs.value)


def test_list_form_count_mismatch_raises_like_torch():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    with pytest.raises(RuntimeError, match=r"^got 2 tensors and 1 gradients$"):
        sym_torch.autograd.backward([loss, loss], [sym_torch.ones_like(loss)])


def test_retain_graph_semantics_follow_torch():
    """Nodes that save tensors (mm) refuse a second backward; purely linear ones (sum) do not."""
    w, _, _ = seed_tensors()
    s = w.sum()
    s.backward()
    s.backward()  # SumBackward0 saves no tensors: torch allows this too
    assert w.grad.tolist() == [[2.0, 2.0]]
    tw = real_torch.tensor([[1.0, 2.0]], requires_grad=True)
    ts = tw.sum()
    ts.backward()
    ts.backward()
    assert w.grad.tolist() == tw.grad.tolist()


def test_non_leaf_grad_warns_like_torch():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert loss.grad is None


def test_grad_fn_names_follow_torch():
    w, x, _ = seed_tensors()
    loss = sym_torch.mm(w, x)
    loss0, _ = loss[0]
    tw = real_torch.tensor([[1.0, 2.0]], requires_grad=True)
    tloss = real_torch.mm(tw, real_torch.tensor([[1.0, 1.0], [2.0, 2.0]]))
    tloss0, _ = tloss[0]
    pairs = [(loss, tloss), (loss.sum(), tloss.sum()), (loss[0], tloss[0]), (loss0, tloss0), (loss.T, tloss.T)]
    for ours, theirs in pairs:
        assert ours.grad_fn.name == type(theirs.grad_fn).__name__
