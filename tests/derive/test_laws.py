"""Gradient laws for symbolic shapes, each with its closed form written by hand as a torch expression.

Every derived law and every hand-written form is proved two ways (exactly, at
small distinct sizes, against the entrywise VJP; numerically, at larger sizes,
against torch.autograd.backward), and the derived law is at most 1.5× the
hand-written form's operation count.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import sympy

import symgrad as sg
from symgrad.core import apply
from symgrad.derive import op_count

k, n, m, c, d = sg.dims("k n m c d")


def S(name: str, *shape, **kw) -> sg.Tensor:
    return sg.symbols(name, shape, **kw)


def full(value, *shape):
    return apply("full", shape=shape, value=value)


def one_hot(y, classes):
    return apply("one_hot", y, num_classes=classes)


@dataclass
class Case:
    outputs: list
    wrt: list
    grads: list | None
    hand: list


CASES: dict[str, Callable[[], Case]] = {}


def case(fn: Callable[[], Case]) -> Callable[[], Case]:
    CASES[fn.__name__] = fn
    return fn


@case
def matmul_wrt_both():
    W, X, V = S("W", k, n), S("X", n, m), S("V", k, m)
    return Case([W @ X], [W, X], [V], [V @ X.T, W.T @ V])


@case
def tanh_layer_wrt_weight_and_bias():
    W, X, b, V = S("W", k, n), S("X", n, m), S("b", k, 1), S("V", k, m)
    out = (W @ X + b).tanh()
    g = V * (1 - out**2)
    return Case([out], [W, b], [V], [g @ X.T, g.sum(dim=1, keepdim=True)])


@case
def sigmoid_layer():
    W, X, V = S("W", k, n), S("X", n, m), S("V", k, m)
    s = (W @ X).sigmoid()
    return Case([s], [W], [V], [(V * s * (1 - s)) @ X.T])


@case
def relu_layer():
    W, X, V = S("W", k, n), S("X", n, m), S("V", k, m)
    h = W @ X
    return Case([h.relu()], [W], [V], [apply("where", h > 0, V, 0) @ X.T])


@case
def exp_of_product():  # SymPy's MatrixSymbol.diff returns 0 here
    A, B, V = S("A", k, n), S("B", n, m), S("V", k, m)
    e = (A @ B).exp()
    return Case([e], [A, B], [V], [(V * e) @ B.T, A.T @ (V * e)])


@case
def two_layer_composition():  # SymPy's MatrixSymbol.diff mixes up the Hadamard factors here
    W1, W2, X, V = S("W1", n, k), S("W2", d, n), S("X", k, m), S("V", d, m)
    h = (W1 @ X).tanh()
    return Case([W2 @ h], [W1, W2], [V], [((W2.T @ V) * (1 - h**2)) @ X.T, V @ h.T])


@case
def mlp_with_mse_loss():
    W1, b1, W2, b2, X, Y = S("W1", n, k), S("b1", n, 1), S("W2", d, n), S("b2", d, 1), S("X", k, m), S("Y", d, m)
    h = (W1 @ X + b1).tanh()
    out = W2 @ h + b2
    loss = ((out - Y) ** 2).mean()
    r = 2 * (out - Y) / (d * m)
    gh = (W2.T @ r) * (1 - h**2)
    return Case(
        [loss], [W1, b1, W2, b2], None, [gh @ X.T, gh.sum(dim=1, keepdim=True), r @ h.T, r.sum(dim=1, keepdim=True)]
    )


@case
def softmax_cross_entropy_mean():
    z, y = S("z", n, c), S("y", n, dtype="int64", classes=c)
    loss = apply("cross_entropy", z, y, reduction="mean")
    return Case([loss], [z], None, [(z.softmax(1) - one_hot(y, c)) / n])


@case
def softmax_cross_entropy_sum():
    z, y = S("z", n, c), S("y", n, dtype="int64", classes=c)
    loss = apply("cross_entropy", z, y, reduction="sum")
    return Case([loss], [z], None, [z.softmax(1) - one_hot(y, c)])


@case
def quadratic_form():
    A, x = S("A", n, n), S("x", n, 1)
    return Case([x.T @ A @ x], [x, A], None, [(A + A.T) @ x, x @ x.T])


@case
def logdet():
    X = S("X", n, n)
    # torch's logdet is nan where det X < 0, and gives no gradient there
    guard = apply("where", apply("lt", apply("det", X), 0), 0, 1)
    return Case([apply("logdet", X)], [X], None, [guard * apply("inv", X).T])


@case
def det():
    X = S("X", n, n)
    dx = apply("det", X)  # torch's gradient is 0 at a singular X
    return Case([dx], [X], None, [apply("where", apply("eq", dx, 0), 0, dx * apply("inv", X).T)])


@case
def inverse():
    X, V = S("X", n, n), S("V", n, n)
    inv = apply("inv", X)
    return Case([inv], [X], [V], [-(inv.T @ V @ inv.T)])


@case
def trace_of_product():
    A, X = S("A", n, k), S("X", k, n)
    return Case([apply("trace", A @ X)], [X, A], None, [A.T, X.T])


@case
def attention_scores():
    Q, K, Vv, G = S("Q", n, d), S("K", m, d), S("Vv", m, d), S("G", n, d)
    scale = 1 / sympy.sqrt(d)
    P = (Q @ K.T * scale).softmax(1)
    dP = G @ Vv.T
    dS = P * (dP - (dP * P).sum(dim=1, keepdim=True)) * scale
    return Case([P @ Vv], [Q, K, Vv], [G], [dS @ K, dS.T @ Q, P.T @ G])


@case
def list_form_two_outputs():
    W, X, V1, V2 = S("W", k, n), S("X", n, m), S("V1", k, m), S("V2", k, m)
    y1 = W @ X
    y2 = y1.tanh()
    return Case([y1, y2], [W], [V1, V2], [(V1 + V2 * (1 - y2**2)) @ X.T])


@case
def sum_of_product():
    W, X = S("W", k, n), S("X", n, m)
    return Case([(W @ X).sum()], [W], None, [X.sum(dim=1, keepdim=True).T.expand(k, n)])


@case
def mean_of_product():
    W, X = S("W", k, n), S("X", n, m)
    return Case([(W @ X).mean()], [W], None, [X.sum(dim=1, keepdim=True).T.expand(k, n) / (k * m)])


@case
def hadamard_sum():
    W, X = S("W", k, n), S("X", k, n)
    return Case([(W * X).sum()], [W], None, [X])


@case
def broadcast_row_scale():
    W, b, V = S("W", k, n), S("b", 1, n), S("V", k, n)
    return Case([W * b], [b, W], [V], [(V * W).sum(dim=0, keepdim=True), V * b])


@case
def broadcast_bias_add():
    X, b, V = S("X", k, n), S("b", n), S("V", k, n)
    return Case([X + b], [b], [V], [V.sum(dim=0)])


@case
def quotient():
    x, y, V = S("x", k, n), S("y", k, n), S("V", k, n)
    q = x / y
    return Case([q], [x, y], [V], [V / y, -V * q / y])


@case
def cube():
    x, V = S("x", k, n), S("V", k, n)
    return Case([x**3], [x], [V], [3 * V * x**2])


@case
def exp_sum_over_rows():
    X, W = S("X", k, n), S("W", n)
    return Case([X.exp().sum(dim=0)], [X], [W], [W * X.exp()])


@case
def log():
    x, V = S("x", k, n), S("V", k, n)
    return Case([x.log()], [x], [V], [V / x])


@case
def square_root():
    x, V = S("x", k, n), S("V", k, n)
    r = x.sqrt()
    return Case([r], [x], [V], [V / (2 * r)])


@case
def sin_times_cos():
    x, V = S("x", k, n), S("V", k, n)
    return Case([x.sin() * x.cos()], [x], [V], [V * (x.cos() ** 2 - x.sin() ** 2)])


@case
def absolute_value():
    x, V = S("x", k, n), S("V", k, n)
    return Case([x.abs()], [x], [V], [V * x.sign()])


@case
def user_function():
    f = sg.function("f", lambda t: t**3 + sympy.sin(t))
    x, V = S("x", k, n), S("V", k, n)
    return Case([f(x)], [x], [V], [V * (3 * x**2 + x.cos())])


@case
def log_softmax():
    z, V = S("z", n, c), S("V", n, c)
    return Case([z.log_softmax(1)], [z], [V], [V - z.softmax(1) * V.sum(dim=1, keepdim=True)])


@case
def logsumexp():
    z, v = S("z", n, c), S("v", n)
    return Case([z.logsumexp(1)], [z], [v], [v.unsqueeze(1) * z.softmax(1)])


@case
def linear_layer():
    x, W, b, V = S("x", m, n), S("W", k, n), S("b", k), S("V", m, k)
    return Case([x @ W.T + b], [W, b, x], [V], [V.T @ x, V.sum(dim=0), V @ W])


@case
def einsum_matmul():
    A, B, V = S("A", k, n), S("B", n, m), S("V", k, m)
    return Case(
        [apply("einsum", A, B, equation="ij,jk->ik")],
        [A, B],
        [V],
        [apply("einsum", V, B, equation="ik,jk->ij"), apply("einsum", V, A, equation="ik,ij->jk")],
    )


@case
def outer_product():
    a, b, V = S("a", n), S("b", m), S("V", n, m)
    return Case([a.unsqueeze(1) * b.unsqueeze(0)], [a, b], [V], [V @ b, V.T @ a])


@case
def dot_product():
    a, b = S("a", n), S("b", n)
    return Case([(a * b).sum()], [a], None, [b])


@case
def euclidean_norm():
    x = S("x", n)
    r = x.norm()
    return Case([r], [x], None, [apply("where", apply("eq", r, 0), 0, x / r)])


@case
def clamp():
    x, V = S("x", k, n), S("V", k, n)
    inside = apply("where", x < 0, 0, apply("where", x > 1, 0, V))
    return Case([x.clamp(0, 1)], [x], [V], [inside])


@case
def maximum():
    a, b, V = S("a", k, n), S("b", k, n), S("V", k, n)
    # torch's rule: 0 where b is larger, V/2 at a tie, else V (a select: a nan V stays off the zeros)
    return Case(
        [apply("maximum", a, b)],
        [a],
        [V],
        [apply("where", apply("lt", a, b), 0, apply("where", apply("eq", a, b), V / 2, V))],
    )


@case
def logistic_regression_bce_with_logits():
    X, w, y = S("X", n, k), S("w", k), S("y", n)
    z = X @ w
    loss = (apply("softplus", z) - y * z).mean()
    return Case([loss], [w], None, [X.T @ (z.sigmoid() - y) / n])


@case
def variance():
    x, v = S("x", k, n), S("v", k)
    centered = x - x.mean(dim=1, keepdim=True)
    return Case([x.var(dim=1)], [x], [v], [2 * v.unsqueeze(1) * centered / (n - 1)])


@case
def cumulative_sum():
    x, V = S("x", k, n), S("V", k, n)
    return Case([x.cumsum(1)], [x], [V], [V.flip(1).cumsum(1).flip(1)])


@case
def transpose_of_product():
    W, X, V = S("W", k, n), S("X", n, m), S("V", m, k)
    return Case([(W @ X).T], [W], [V], [V.T @ X.T])


@case
def batched_matmul():
    A, B, V = S("A", d, k, n), S("B", d, n, m), S("V", d, k, m)
    return Case([A @ B], [A, B], [V], [V @ B.mT, A.mT @ V])


@case
def matrix_vector():
    A, x, v = S("A", k, n), S("x", n), S("v", k)
    return Case([A @ x], [A, x], [v], [v.unsqueeze(1) * x.unsqueeze(0), A.T @ v])


@case
def softmax():
    z, V = S("z", n, c), S("V", n, c)
    s = z.softmax(1)
    return Case([s], [z], [V], [s * (V - (V * s).sum(dim=1, keepdim=True))])


@case
def amax_of_rows():
    x, v = S("x", k, n), S("v", k)
    mx = x.amax(1, keepdim=True)
    ties = apply("where", apply("eq", x, mx), 1, 0)
    return Case([x.amax(1)], [x], [v], [v.unsqueeze(1) * ties / ties.sum(dim=1, keepdim=True)])


@case
def leaky_relu():
    x, V = S("x", k, n), S("V", k, n)
    return Case([apply("leaky_relu", x, negative_slope=0.125)], [x], [V], [apply("where", x > 0, V, 0.125 * V)])


def _proved(proof) -> bool:
    return proof.held and len(proof.exact) == 2 and len(proof.numeric) == 1


@pytest.mark.parametrize("name", sorted(CASES))
def test_law_is_proved_and_as_short_as_the_hand_written_form(name):
    spec = CASES[name]()
    derived = sg.law(spec.outputs, spec.wrt, spec.grads)
    by_law = sg.prove(spec.outputs, spec.wrt, spec.grads, laws=derived)
    assert _proved(by_law), f"derived law failed:\n{by_law}"
    by_hand = sg.prove(spec.outputs, spec.wrt, spec.grads, laws=spec.hand)
    assert _proved(by_hand), f"hand-written form failed (a bad test):\n{by_hand}"
    for x, mine, theirs in zip(spec.wrt, derived, spec.hand):
        assert op_count(mine) <= 1.5 * op_count(theirs), (
            f"grad {x.name}: {mine.name} has {op_count(mine)} ops, hand form {theirs.name} has {op_count(theirs)}"
        )


def test_at_least_forty_laws():
    assert len(CASES) >= 40


def test_a_float_literal_is_proved_exactly_not_left_as_a_rounding_residue():
    (m,) = sg.dims("m")
    x = sg.symbols("x", (m, 1))
    proof = sg.prove((x / 9 + 2.5).log_softmax(1).sum(), [x])
    assert proof.held, str(proof)


def test_the_law_for_an_input_the_output_does_not_use_is_zero_and_proved():
    k, n = sg.dims("k n")
    x, y = sg.symbols("x", (k, n)), sg.symbols("y", (k, n))
    out = x.tanh().sum()
    laws = sg.law(out, [x, y])
    assert sg.TorchPrinter().doprint(laws[1]) == "torch.full((k, n), 0)"
    assert sg.prove(out, [x, y], laws=laws).held


def test_dividing_by_a_broadcast_keeps_the_broadcast_shape():
    (m,) = sg.dims("m")
    a, x = sg.symbols("a", (m,)), sg.symbols("x", (m, 1))
    out = (a * x / a).sum()
    (rule,) = sg.law(out, [x])
    assert tuple(rule.shape) == (m, 1)
    assert sg.prove(out, [x], laws=[rule]).held


def test_a_float_factor_over_a_symbolic_size_is_proved_exactly():
    # -0.5 / k at k = 3 must become -1/6 exactly, not the float -0.1666666666666667
    (k, n) = sg.dims("k n")
    x = sg.symbols("x", (k, n))
    out = (1.25 - x.tanh().softmax(0).tanh() * 0.5).mean(dim=0).sum()
    assert sg.prove(out, [x]).held


def test_detach_at_symbolic_sizes_stops_the_gradient_and_is_proved():
    """x.detach() of a tensor with symbolic sizes has no formulas to copy: it is the stop_gradient op, spelled
    as torch spells it, and its law is proved against torch like any other."""
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    detached = x.detach()
    assert not detached.requires_grad and detached.is_leaf
    out = (x * x.detach()).sum()
    (rule,) = sg.law(out, [x])
    assert rule.name == "x.detach()"
    assert sg.prove(out, [x], laws=[rule]).held
