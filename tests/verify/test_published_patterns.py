"""Patterns of published backwards that symgrad once could not check or got wrong: a backward that scatters the
gradient at an argmax, and one that changes in place a tensor its own softmax saved (torch's double backward
refuses it: WRONG at second order, with the cause)."""

from __future__ import annotations

import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64
SYMBOLIC = {"x": {0: "m", 1: "n"}}


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(5))


class RowMax(torch.autograd.Function):
    """The row maxima; the gradient goes to each row's largest entry, scattered at the saved argmax."""

    @staticmethod
    def forward(ctx, x):
        values, where = x.max(dim=1)
        ctx.mark_non_differentiable(where)
        ctx.save_for_backward(where)
        ctx.shape = x.shape
        return values, where

    @staticmethod
    def backward(ctx, g, _):
        (where,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter(1, where[:, None], g[:, None])


class RowMaxAddedTwice(RowMax):
    @staticmethod
    def backward(ctx, g, _):
        (where,) = ctx.saved_tensors
        return g.new_zeros(ctx.shape).scatter_add(1, where[:, None].expand(-1, 2), g[:, None].expand(-1, 2))


class LogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return torch.logsumexp(z, 1).sum()

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return torch.softmax(z, 1) * g


class LogSumExpInPlace(LogSumExp):
    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        p = torch.softmax(z, 1)
        p *= g  # softmax saved p for its own backward
        return p


@pytest.mark.parametrize("dynamic", [None, SYMBOLIC], ids=["given sizes", "symbolic sizes"])
def test_a_gradient_scattered_at_an_argmax_is_proved_and_a_doubled_one_is_wrong(dynamic):
    assert sg.verify_backward(RowMax, _x(2, 3), dynamic_shapes=dynamic, order=1).held
    assert not sg.verify_backward(RowMaxAddedTwice, _x(2, 3), dynamic_shapes=dynamic, order=1).held


@pytest.mark.parametrize("dynamic", [None, {"z": SYMBOLIC["x"]}], ids=["given sizes", "symbolic sizes"])
def test_a_saved_tensor_changed_in_place_is_wrong_at_second_order_with_its_cause(dynamic):
    right = sg.verify_backward(LogSumExp, _x(2, 3), dynamic_shapes=dynamic, order=2)
    assert right.held, right.report()
    wrong = sg.verify_backward(LogSumExpInPlace, _x(2, 3), dynamic_shapes=dynamic, order=2)
    assert all(g.held for g in wrong.gradients) and not wrong.held
    assert wrong.second_cause == "in place"
    assert "modified by an inplace operation" in wrong.report() and "Hint:" not in wrong.report()


class PickedLogProbability(torch.autograd.Function):
    """Cross-entropy against class targets, saving the softmax: right once, wrong twice (the saved p is a
    constant to torch's double backward)."""

    @staticmethod
    def forward(ctx, z, y):
        p = torch.softmax(z, -1)
        ctx.save_for_backward(p, y)
        return -torch.log_softmax(z, -1).gather(1, y[:, None]).mean()

    @staticmethod
    def backward(ctx, g):
        p, y = ctx.saved_tensors
        return g * (p - torch.zeros_like(p).scatter(1, y[:, None], 1.0)) / p.shape[0], None


def test_a_second_order_counterexample_keeps_the_class_count_above_the_targets():
    """The report's counterexample is searched at sizes above the given targets (class 3 needs 4 classes)."""
    z, y = _x(3, 5).requires_grad_(), torch.tensor([0, 3, 1])
    verdict = sg.verify_backward(PickedLogProbability, z, y, dynamic_shapes={"z": {1: "c"}}, order=2)
    assert all(g.held for g in verdict.gradients) and not verdict.held
    assert verdict.second_cause == "saved intermediate"
