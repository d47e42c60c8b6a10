"""sg.verify_backward on hand-written torch.autograd.Functions, right and wrong: each bug class is caught and
the wrong input named, including where torch's gradcheck passes (a symmetric test matrix, a batch of one)."""

from __future__ import annotations

import pytest

import symgrad as sg
from symgrad.testing import assert_backward_correct

torch = pytest.importorskip("torch")
F64 = torch.float64


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, dtype=F64, generator=torch.Generator().manual_seed(seed + len(shape)))


class Affine(torch.autograd.Function):
    """y = x @ W + b, the right backward; the subclasses below each break one thing."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return x @ w + b

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g.sum(0)


class TransposedWeight(Affine):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, g.T @ x, g.sum(0)  # the weight's gradient transposed


class BiasFromFirstRow(Affine):
    """The bias's gradient read from the first row only: right for a batch of one."""

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g[0]


class LostSign(Affine):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return -(g @ w.T), x.T @ g, g.sum(0)


class Quadratic(torch.autograd.Function):
    """xᵀ A x with the gradient 2 A x in x: right only for a symmetric A."""

    @staticmethod
    def forward(ctx, x, a):
        ctx.save_for_backward(x, a)
        return x @ a @ x

    @staticmethod
    def backward(ctx, g):
        x, a = ctx.saved_tensors
        return 2 * g * (a @ x), g * torch.outer(x, x)


class MeanSquare(torch.autograd.Function):
    """mean((x - t)²) whose backward forgets to divide by the number of entries."""

    @staticmethod
    def forward(ctx, x, t):
        ctx.save_for_backward(x, t)
        return ((x - t) ** 2).mean()

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        return 2 * g * (x - t), None


class LayerNorm(torch.autograd.Function):
    """A hand-written layer norm over the last dim that saves its statistics, in torch's setup_context style."""

    @staticmethod
    def forward(x):
        mean = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5)
        return (x - mean) * rstd, mean, rstd

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        _, mean, rstd = output
        ctx.mark_non_differentiable(mean, rstd)
        ctx.save_for_backward(x, mean, rstd)

    @staticmethod
    def backward(ctx, g, _mean, _rstd):
        x, mean, rstd = ctx.saved_tensors
        xhat = (x - mean) * rstd
        n = x.shape[-1]
        return rstd * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).sum(-1, keepdim=True) / n)


class LayerNormDroppedTerm(LayerNorm):
    @staticmethod
    def backward(ctx, g, _mean, _rstd):
        rstd = ctx.saved_tensors[2]
        return rstd * (g - g.mean(-1, keepdim=True))  # the x̂ · mean(g x̂) term is gone


def test_a_right_backward_is_proved_for_every_value():
    verdict = sg.verify_backward(Affine, _randn(3, 2), _randn(2, 4), _randn(4))
    assert verdict.held and [g.name for g in verdict.gradients] == ["x", "w", "b"]
    assert "proved" in verdict.report()


def test_a_right_backward_is_proved_for_every_size():
    dynamic = {"x": {0: "m", 1: "n"}, "w": {0: "n", 1: "k"}, "b": {0: "k"}}
    verdict = sg.verify_backward(Affine, _randn(3, 2), _randn(2, 4), _randn(4), dynamic_shapes=dynamic)
    assert verdict.held
    assert "torch at" in verdict.report()  # numbers against torch at larger sizes too


@pytest.mark.parametrize(
    ("function", "wrong"),
    [(BiasFromFirstRow, "b"), (LostSign, "x")],
    ids=["bias from the first row", "lost sign"],
)
def test_a_wrong_gradient_is_named_with_an_entry_and_numbers(function, wrong):
    verdict = sg.verify_backward(function, _randn(3, 2), _randn(2, 4), _randn(4))
    assert not verdict.held
    assert [g.name for g in verdict.gradients if not g.held] == [wrong]
    bad = next(g for g in verdict.gradients if not g.held)
    assert bad.index is not None and bad.claimed != bad.true and "the true one" in bad.example
    with pytest.raises(AssertionError, match=f"grad of {wrong}: differs"):
        assert_backward_correct(function, _randn(3, 2), _randn(2, 4), _randn(4))


def test_a_transposed_weight_gradient_is_caught_whatever_its_shape():
    """Refused as torch refuses it where its shape is wrong; where the weight is square, proved wrong."""
    verdict = sg.verify_backward(TransposedWeight, _randn(3, 2), _randn(2, 4), _randn(4))
    bad = next(g for g in verdict.gradients if not g.held)
    assert bad.name == "w" and "got [4, 2] but expected shape compatible with [2, 4]" in bad.proof
    verdict = sg.verify_backward(TransposedWeight, _randn(3, 3), _randn(3, 3), _randn(3))
    assert [g.name for g in verdict.gradients if not g.held] == ["w"]


def test_gradchecks_blind_spots_are_caught():
    """gradcheck passes a backward that is right only for a symmetric matrix, or only for a batch of one, when
    that is what it is given; symgrad's proof is for every value."""
    a = _randn(3, 3)
    symmetric = (a + a.T).requires_grad_()
    x = _randn(3).requires_grad_()
    assert torch.autograd.gradcheck(lambda v: Quadratic.apply(v, symmetric.detach()), (x,))
    verdict = sg.verify_backward(Quadratic, x.detach(), symmetric.detach())
    assert [g.name for g in verdict.gradients if not g.held] == ["x"]
    one = (_randn(1, 2).requires_grad_(), _randn(2, 4).requires_grad_(), _randn(4).requires_grad_())
    assert torch.autograd.gradcheck(BiasFromFirstRow.apply, one)
    verdict = sg.verify_backward(BiasFromFirstRow, *(t.detach() for t in one), dynamic_shapes={"x": {0: "m"}})
    assert [g.name for g in verdict.gradients if not g.held] == ["b"]


def test_a_missing_batch_divisor_is_caught_and_only_inputs_that_require_grad_are_checked():
    verdict = sg.verify_backward(MeanSquare, _randn(4).requires_grad_(), _randn(4, seed=1))
    assert [g.name for g in verdict.gradients] == ["x"] and not verdict.held  # t needs no gradient
    verdict = sg.verify_backward(MeanSquare, _randn(4), _randn(4, seed=1))
    assert [g.name for g in verdict.gradients if not g.held] == ["x", "t"]  # t's None is not its gradient


def test_a_layer_norms_backward_is_proved_at_symbolic_sizes_and_a_dropped_term_is_caught():
    dynamic = {"x": {0: "m", 1: "n"}}
    assert_backward_correct(LayerNorm, _randn(2, 3), dynamic_shapes=dynamic, order=1)
    verdict = sg.verify_backward(LayerNormDroppedTerm, _randn(2, 3))
    assert [g.name for g in verdict.gradients if not g.held] == ["x"]


def test_what_cannot_be_verified_is_refused_in_one_line():
    with pytest.raises(
        sg.SymgradError, match=r"takes a torch\.autograd\.Function subclass or a torch\.library custom op"
    ):
        sg.verify_backward(3, _randn(2))
    with pytest.raises(sg.UnsupportedError, match=r"applies no torch\.autograd\.Function"):
        sg.verify_backward(lambda x: x.tanh(), _randn(2))
    with pytest.raises(sg.UnsupportedError, match=r"applies 2 Functions \(Affine, Tanh\): verify each one"):
        sg.verify_backward(lambda x, w, b: Tanh.apply(Affine.apply(x, w, b)), _randn(3, 2), _randn(2, 4), _randn(4))
    with pytest.raises(sg.UnsupportedError, match="has size 2 on axis 1, which could be n and k"):
        sg.verify_backward(
            two_layers, _randn(3, 2), _randn(2, 2), _randn(2), dynamic_shapes={"x": {1: "n"}, "w": {1: "k"}}
        )
    with pytest.raises(sg.UnsupportedError, match="the order is 1 or 2"):
        sg.verify_backward(Affine, _randn(3, 2), _randn(2, 4), _randn(4), order=3)


def two_layers(x, w, b):
    """Plain code around a Function: the Function is verified at the arguments it gets here."""
    return torch.relu(Affine.apply(torch.sin(x), w, b * 2))


def two_layers_wrong(x, w, b):
    return torch.relu(TransposedWeight.apply(torch.sin(x), w, b * 2))


def test_a_function_applied_by_plain_code_is_verified_where_it_is_applied():
    dynamic = {"x": {0: "m", 1: "n"}, "w": {0: "n", 1: "k"}, "b": {0: "k"}}
    verdict = sg.verify_backward(two_layers, _randn(3, 2), _randn(2, 4), _randn(4), dynamic_shapes=dynamic)
    assert verdict.held and verdict.function == "Affine" and [g.name for g in verdict.gradients] == ["x", "w", "b"]
    assert "m=" in verdict.report()  # the sizes were carried over, so the proof is for every size
    verdict = sg.verify_backward(BiasFromFirstRow, _randn(3, 2), _randn(2, 4), _randn(4), dynamic_shapes=dynamic)
    (wrong,) = [g for g in verdict.gradients if not g.held]
    assert [law.name for law in wrong.laws] == ["grad_output[0]", "grad_output.sum(dim=0)"]
    assert "as a law, the backward gives: grad_output[0]" in verdict.report()
    verdict = sg.verify_backward(two_layers_wrong, _randn(3, 2), _randn(2, 4), _randn(4), order=1)
    assert [g.name for g in verdict.gradients if not g.held] == ["w"]


class ScaledSoftmax(torch.autograd.Function):
    """softmax(x · scale) along ``dim``: a number and an int among the inputs, whose gradients are None."""

    @staticmethod
    def forward(ctx, x, scale, dim):
        y = torch.softmax(x * scale, dim)
        ctx.save_for_backward(y)
        ctx.scale, ctx.dim = scale, dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return ctx.scale * y * (g - (g * y).sum(ctx.dim, keepdim=True)), None, None


class ScaledSoftmaxGradForANumber(ScaledSoftmax):
    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return ctx.scale * y * (g - (g * y).sum(ctx.dim, keepdim=True)), g.sum(), None


def test_numbers_among_the_inputs_are_constants_whose_gradient_must_be_none():
    assert_backward_correct(ScaledSoftmax, _randn(2, 3), 0.5, 0, dynamic_shapes={"x": {1: "n"}})
    verdict = sg.verify_backward(ScaledSoftmaxGradForANumber, _randn(2, 3), 0.5, 0, order=1)
    assert [g.name for g in verdict.gradients if not g.held] == ["scale"]
    assert "returned a gradient different than None at position 2" in verdict.report()


class Tanh(torch.autograd.Function):
    """tanh whose backward reads its saved output: right one order up too (the output's gradient flows through
    this Function again)."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)


class TanhSavedSlope(Tanh):
    """Saves 1 - y², an intermediate: its first derivative is right, its second is not."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(1 - y * y)
        return y

    @staticmethod
    def backward(ctx, g):
        (slope,) = ctx.saved_tensors
        return g * slope


class TanhDetached(Tanh):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.tanh(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        y = torch.tanh(x).detach()
        return g * (1 - y * y)


class TanhOnce(TanhSavedSlope):
    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        (slope,) = ctx.saved_tensors
        return g * slope


def test_the_second_order_is_proved_through_a_saved_output():
    verdict = sg.verify_backward(Tanh, _randn(3))
    assert verdict.held and [g.name for g in verdict.second] == ["x", "grad_output"]


@pytest.mark.parametrize(
    ("function", "cause"),
    [(TanhSavedSlope, "a saved intermediate"), (TanhDetached, "a .detach()")],
    ids=["saved intermediate", "detach"],
)
def test_a_backward_right_once_but_not_twice_is_caught_with_its_cause(function, cause):
    x = _randn(3).requires_grad_()
    verdict = sg.verify_backward(function, x.detach())
    assert all(g.held for g in verdict.gradients) and not verdict.held
    assert [g.name for g in verdict.second if not g.held] == ["x"]
    assert f"cause: {cause}" in verdict.report()

    def second_derivative(f):
        (first,) = torch.autograd.grad((f(x) ** 2).sum(), x, create_graph=True)
        return torch.autograd.grad(first.sum(), x)[0]

    assert not torch.allclose(second_derivative(function.apply), second_derivative(torch.tanh))  # torch's, silently


def test_a_once_differentiable_backward_is_checked_once():
    verdict = sg.verify_backward(TanhOnce, _randn(3))
    assert verdict.held and verdict.second == [] and "once_differentiable" in verdict.report()


@torch.library.custom_op("symgrad_tests::scaled_sin", mutates_args=())
def scaled_sin(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x.sin() * scale


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _scaled_sin_backward(ctx, grad):
    x, scale = ctx.saved_tensors
    return grad * x.cos() * scale, grad * x.sin()


scaled_sin.register_autograd(_scaled_sin_backward, setup_context=_save_inputs)


@torch.library.custom_op("symgrad_tests::scaled_sin_wrong", mutates_args=())
def scaled_sin_wrong(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x.sin() * scale


def _wrong_backward(ctx, grad):
    x = ctx.saved_tensors[0]
    return grad * x.cos(), grad * x.sin()  # the scale is missing from x's gradient


scaled_sin_wrong.register_autograd(_wrong_backward, setup_context=_save_inputs)


def test_a_torch_library_custom_op_is_verified_through_its_registered_backward():
    assert sg.verify_backward(scaled_sin, _randn(3), _randn(3, seed=1)).held
    verdict = sg.verify_backward(scaled_sin_wrong, _randn(3), _randn(3, seed=1))
    assert [g.name for g in verdict.gradients if not g.held] == ["x"]


class ExpWithJvp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = torch.exp(x)
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y


class ExpWithWrongJvp(ExpWithJvp):
    @staticmethod
    def jvp(ctx, t):
        return t  # exp's slope is missing


class ExpWithJvpWrongPastFour(ExpWithJvp):
    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y if t.numel() <= 4 else t  # a "fast path" for larger inputs that forgets exp's slope


class AffineWrongPastFourRows(Affine):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        bias = g.sum(0) if g.shape[0] <= 4 else g[:4].sum(0)  # a "chunked" path that drops rows past the fourth
        return g @ w.T, x.T @ g, bias


def test_code_that_branches_on_a_size_is_run_by_torch_at_larger_sizes():
    # a trace follows the example's branch; torch runs the Function's own code at larger sizes as well
    dynamic = {"x": {0: "m"}}
    verdict = sg.verify_backward(AffineWrongPastFourRows, _randn(3, 2), _randn(2, 4), _randn(4), dynamic_shapes=dynamic)
    assert [g.name for g in verdict.gradients if not g.held] == ["b"]
    assert "exact at m=2: held" in verdict.gradients[2].proof
    assert "the Function's own code, run by torch at m=5: FAILED" in verdict.gradients[2].proof
    verdict = sg.verify_backward(ExpWithJvpWrongPastFour, _randn(3), dynamic_shapes={"x": {0: "n"}}, order=1)
    assert all(g.held for g in verdict.gradients) and not verdict.held
    assert "the Function's own code, run by torch at n=5: FAILED" in verdict.jvp[0].proof
    assert sg.verify_backward(Affine, _randn(3, 2), _randn(2, 4), _randn(4), dynamic_shapes=dynamic, order=1).held


def test_a_functions_jvp_is_checked_against_the_jacobian_vector_product():
    verdict = sg.verify_backward(ExpWithJvp, _randn(3), dynamic_shapes={"x": {0: "n"}}, order=1)
    assert verdict.held and [j.name for j in verdict.jvp] == ["the output"]
    verdict = sg.verify_backward(ExpWithWrongJvp, _randn(3), order=1)
    assert all(g.held for g in verdict.gradients) and not verdict.held
    assert "jvp of the output: differs" in verdict.report()


class LeakyRelu(torch.autograd.Function):
    """A comparison in both passes: its derivative is 0 where it is defined, as in torch."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.01 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x > 0, g, 0.01 * g)


class GeluTanh(torch.autograd.Function):
    """Decimal constants written differently on each side (0.044715 · 3 as 0.134145): equal up to their rounding."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3))
        slope = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * 0.7978845608028654 * (1 + 0.134145 * x**2)
        return g * slope


class GeluTanhSlightlyOff(GeluTanh):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = torch.tanh(0.7978845608028654 * (x + 0.044715 * x**3))
        slope = 0.5 * (1 + t) + 0.5 * x * (1 - t**2) * 0.7978845608028654 * (1 + 0.134146 * x**2)  # one digit off
        return g * slope


def test_comparisons_and_decimal_constants_are_proved_and_a_wrong_digit_is_caught():
    assert sg.verify_backward(LeakyRelu, _randn(4)).held
    verdict = sg.verify_backward(GeluTanh, _randn(3))
    assert verdict.held and "decimal rounding" in verdict.report()
    assert not sg.verify_backward(GeluTanhSlightlyOff, _randn(3), order=1).held


class AffineBiasNotSummed(Affine):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g @ w.T, x.T @ g, g  # b's gradient left at the output's shape: torch sums it down


def test_a_gradient_of_a_broadcast_shape_is_summed_as_torch_sums_it_and_the_report_says_so():
    verdict = sg.verify_backward(AffineBiasNotSummed, _randn(3, 2), _randn(2, 4), _randn(4), order=1)
    assert verdict.held and "the backward returns shape (3, 4) for b; torch sums it down, as here" in verdict.report()


class MeanSquareRight(MeanSquare):
    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        d = 2.0 * (x - t) / x.numel() * g
        return d, -d


def test_a_mean_over_symbolic_sizes_proves_one_order_up():
    # the forward's mean runs under no_grad: one number, detached, whose formula has no entries at symbolic sizes
    dynamic = {"x": {0: "m", 1: "n"}, "t": {0: "m", 1: "n"}}
    assert_backward_correct(MeanSquareRight, _randn(3, 4), _randn(3, 4, seed=1), dynamic_shapes=dynamic)


class ScaledRows(torch.autograd.Function):
    """y = x · rstd with rstd = 1 / sqrt(mean(x²) + eps) per row, spelled as older published code spells it:
    ``ctx.saved_variables``, ``keepdims=True`` and a coefficient ``1 / n`` from ``x.size(-1)``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x / torch.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_variables
        n = x.size(-1)
        coeff = 1 / n
        rstd = 1 / torch.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
        dot = (g * x).sum(-1, keepdims=True)
        return g * rstd - x * rstd**3 * dot * coeff


class ScaledRowsWithoutTheCoefficient(ScaledRows):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        rstd = 1 / torch.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
        return g * rstd - x * rstd**3 * (g * x).sum(-1, keepdims=True)


def test_older_spellings_and_a_coefficient_from_a_symbolic_size_are_proved_at_both_orders():
    dynamic = {"x": {0: "m", 1: "n"}}
    with pytest.warns(DeprecationWarning, match="saved_variables"):
        verdict = sg.verify_backward(ScaledRows, _randn(3, 4), dynamic_shapes=dynamic, order=2)
    assert verdict.held, verdict.report()
    wrong = sg.verify_backward(ScaledRowsWithoutTheCoefficient, _randn(3, 4), dynamic_shapes=dynamic)
    assert not wrong.held


class SoftTargetCrossEntropy(torch.autograd.Function):
    """−Σ t · log softmax(z) with the backward p − t, right only where each target row sums to 1."""

    @staticmethod
    def forward(ctx, z, target):
        p = z.softmax(-1)
        ctx.save_for_backward(p, target)
        return -(target * p.log()).sum()

    @staticmethod
    def backward(ctx, g):
        p, target = ctx.saved_tensors
        return g * (p - target), None


def test_inputs_that_do_not_require_grad_are_data_held_at_their_values():
    z = _randn(3, 4).requires_grad_()
    rows = torch.softmax(_randn(3, 4, seed=1), -1)
    verdict = sg.verify_backward(SoftTargetCrossEntropy, z, rows, order=1)  # p is saved: wrong one order up
    assert verdict.held, verdict.report()
    assert "given values of target" in verdict.report()
    off = rows.clone()
    off[0, 0] += 0.2  # a row summing to 1.2: the backward is wrong there
    assert not sg.verify_backward(SoftTargetCrossEntropy, z, off, order=1).held
    free = sg.verify_backward(SoftTargetCrossEntropy, z.detach(), rows, order=1)  # none requires grad: both are checked
    assert not free.held and "given values" not in free.report()


class HardSwishByMasks(torch.autograd.Function):
    """x · clamp(x + 3, 0, 6) / 6 with a backward built from a mask times ones and a where on two comparisons, as
    memory-saving activation code writes it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * (x + 3).clamp(min=0, max=6) / 6

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        slope = torch.ones_like(x) * (x >= 3.0)
        slope = torch.where((x >= -3.0) & (x <= 3.0), x / 3.0 + 0.5, slope)
        return g * slope


def test_a_backward_of_masks_times_ones_and_nested_comparisons_is_proved_at_both_orders():
    x = torch.tensor([[-4.0, -3.0, -1.0], [0.5, 3.0, 5.0]], dtype=F64)  # the kinks, where torch defines the value
    verdict = sg.verify_backward(HardSwishByMasks, x, order=2)
    assert verdict.held, verdict.report()
    symbolic = sg.verify_backward(HardSwishByMasks, _randn(3, 2), dynamic_shapes={"x": {0: "m", 1: "n"}}, order=1)
    assert symbolic.held, symbolic.report()


def _tanh_gelu(x):
    return 0.5 * x * (1 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class BiasGelu(torch.autograd.Function):
    """GeLU of input + bias with the tanh approximation; the backward writes 0.79788456 · 3 · 0.044715 as the
    ten-digit decimal 0.1070322243 (its exact value is 0.10703222430120…), and returns one gradient for both."""

    DIGITS = 0.1070322243

    @staticmethod
    def forward(ctx, x, bias):
        ctx.save_for_backward(x, bias)
        return _tanh_gelu(x + bias)

    @classmethod
    def backward(cls, ctx, g):
        x, bias = ctx.saved_tensors
        z = x + bias
        t = torch.tanh(0.79788456 * z * (1 + 0.044715 * z * z))
        slope = 0.5 * z * ((1 - t * t) * (0.79788456 + cls.DIGITS * z * z)) + 0.5 * (1 + t)
        return slope * g, slope * g


class BiasGeluOffByTenUnits(BiasGelu):
    DIGITS = 0.1070322253


def test_a_decimal_constant_within_one_unit_of_its_last_digit_is_accepted_the_same_way_everywhere():
    dynamic = {"x": {0: "m", 1: "n"}, "bias": {0: "n"}}
    verdict = sg.verify_backward(BiasGelu, _randn(3, 2), _randn(2), dynamic_shapes=dynamic, order=1)
    assert verdict.held, verdict.report()
    for gradient in verdict.gradients:  # the input's and the bias's (a sum over the batch) alike
        assert "0.1070322243 for 0.1070322243012" in gradient.proof
    wrong = sg.verify_backward(BiasGeluOffByTenUnits, _randn(2, 2), _randn(2), order=1)
    assert not wrong.held and not any(g.held for g in wrong.gradients)
