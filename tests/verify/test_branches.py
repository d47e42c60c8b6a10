"""A backward wrong in one branch only (below zero, below -3) is WRONG, not proved: differences with case splits
are evaluated at points of either sign and beside each threshold their conditions compare with, where positive
points of size about 1 would see one branch. Masks written as in-place assignments (``g[x < 0] = 0``) are
followed at symbolic sizes."""

from __future__ import annotations

import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F64 = torch.float64


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(3))


class Elu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, torch.exp(x) - 1)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, g * torch.exp(x))


class EluNegativeSignLost(Elu):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, -g * torch.exp(x))


class HardSwish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.clamp(x + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inner = g * (2 * x + 3) / 6
        return torch.where(x < -3, 0, torch.where(x > 3, g, inner))


class HardSwishBelowMinusThree(HardSwish):
    """Wrong only below -3, where normal draws rarely go."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inner = g * (2 * x + 3) / 6
        return torch.where(x < -3, g, torch.where(x > 3, g, inner))


class LeakyWrongSlope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.1 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, -0.1 * g)


class MaskedReLU(torch.autograd.Function):
    """The tutorial's ReLU: the gradient's entries zeroed through a mask, in place."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.clone()
        grad[x < 0] = 0
        return grad


class MaskedReLUWrong(MaskedReLU):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.clone()
        grad[x > 0] = 0
        return grad


SYMBOLIC = {"x": {0: "m", 1: "n"}}


@pytest.mark.parametrize("dynamic", [None, SYMBOLIC], ids=["given sizes", "symbolic sizes"])
@pytest.mark.parametrize("function", [EluNegativeSignLost, HardSwishBelowMinusThree, LeakyWrongSlope, MaskedReLUWrong])
def test_a_backward_wrong_in_one_branch_is_wrong(function, dynamic):
    verdict = sg.verify_backward(function, _x(2, 3), dynamic_shapes=dynamic, order=1)
    assert not verdict.held, verdict.report()


@pytest.mark.parametrize("dynamic", [None, SYMBOLIC], ids=["given sizes", "symbolic sizes"])
@pytest.mark.parametrize("function", [Elu, HardSwish, MaskedReLU])
def test_the_right_branches_are_proved(function, dynamic):
    verdict = sg.verify_backward(function, _x(2, 3), dynamic_shapes=dynamic, order=1)
    assert verdict.held, verdict.report()


def test_a_masked_assignment_is_followed_at_symbolic_sizes():
    def loss(x):
        g = x * 2
        g[x < 0] = 0
        rows = x * 1
        rows[:, x[0] > 0] = 5.0
        labels = (x * 3).long()
        labels[labels < 0] = 0
        return (g * x).sum() + (rows * x).sum() + (labels * x).sum()

    x = _x(2, 3)
    traced = sg.trace(loss, x, dynamic_shapes=SYMBOLIC)
    assert sg.prove(traced.output, [traced.inputs[0]]).held
    emitted = sg.compile(traced, name="Masked")
    bigger = _x(4, 5).requires_grad_()
    out = emitted.apply(bigger)
    (ours,) = torch.autograd.grad(out[0] if isinstance(out, tuple) else out, bigger)
    (theirs,) = torch.autograd.grad(loss(bigger), bigger)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


class HardSwishBySelections(torch.autograd.Function):
    """HardSwish with the entries a mask picks computed on their own and written back (forward and backward)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        out = x * (x + 3.0) / 6.0
        out[x < -3] = 0.0
        out[x > 3] = x[x > 3]
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.clone()
        middle = (x >= -3) & (x <= 3)
        grad[middle] = g[middle] * (2.0 * x[middle] + 3.0) / 6.0
        grad[x < -3] = 0.0
        return grad


class HardSwishBySelectionsWrong(HardSwishBySelections):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        grad = g.clone()
        middle = (x >= -3) & (x <= 3)
        grad[middle] = g[middle] * (2.0 * x[middle] + 2.0) / 6.0
        grad[x < -3] = 0.0
        return grad


class CountsTheSelection(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * torch.ones_like(x) * x[x > 0].numel()


@pytest.mark.parametrize("dynamic", [None, SYMBOLIC], ids=["given sizes", "symbolic sizes"])
def test_entries_picked_by_a_mask_and_written_back_are_followed(dynamic):
    right = sg.verify_backward(HardSwishBySelections, _x(2, 3), dynamic_shapes=dynamic, order=2)
    assert right.held, right.report()
    wrong = sg.verify_backward(HardSwishBySelectionsWrong, _x(2, 3), dynamic_shapes=dynamic, order=1)
    assert not wrong.held


def test_a_selection_whose_count_matters_is_refused_in_one_line():
    with pytest.raises(sg.UnsupportedError, match=r"reads x\[mask\] for a mask computed from the inputs"):
        sg.verify_backward(CountsTheSelection, _x(2, 3), dynamic_shapes=SYMBOLIC, order=1)
