"""Neural-network ops: activations, and losses with a closed-form gradient.

>>> import symgrad as sg
>>> z = sg.tensor([[0.0, 0.0]], requires_grad=True, name="z")
>>> import symgrad.torch as torch
>>> torch.nn.functional.cross_entropy(z, torch.tensor([1])).backward()
>>> z.grad.tolist()
[[0.5, -0.5]]
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from ..core.arrays import elementwise
from ..core.errors import ShapeError
from ..core.graph import uniform_constant
from ..core.registry import Op, register
from ..core.tensor import apply
from . import functions
from .calculus import unbroadcast
from .rows import binary, same_shape, unary
from .softmax import softmax_float64

# ── activations ────────────────────────────────────────────────────────────
_GELU_BETA = sympy.sqrt(2) / sympy.sqrt(sympy.pi)  # torch's kBeta = sqrt(2) · (2 / sqrt(pi)) / 2
_GELU_KAPPA = sympy.Float(0.044715)
SELU_ALPHA = sympy.Float(1.6732632423543772848170429916717)  # torch's constants, as float64
SELU_SCALE = sympy.Float(1.0507009873554804934193349852946)

unary("relu", functions.relu, r"\operatorname{{relu}}\left({0}\right)")
unary(
    "softplus",
    functions.softplus,
    r"\operatorname{{softplus}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.softplus(a),
    code="torch.nn.functional.softplus({0})",
)
unary(
    "gelu",
    lambda t: t / 2 * (1 + sympy.erf(t / sympy.sqrt(2))),
    r"\operatorname{{GELU}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.gelu(a),
    code="torch.nn.functional.gelu({0})",
    vjp=lambda g, out, a: (g * apply("gelu_derivative", a),),
)
# GELU's derivatives, nodes of their own so that ``g * GELU'(x)`` runs torch's gelu_backward kernel in emitted code
# (see symgrad.emit.code_text); read on their own they are the formulas, Φ(x) + x φ(x) and its tanh form
unary(
    "gelu_derivative",
    lambda t: (1 + sympy.erf(t / sympy.sqrt(2))) / 2 + t * sympy.exp(-(t**2) / 2) / sympy.sqrt(2 * sympy.pi),
    r"\operatorname{{GELU}}'\left({0}\right)",
    torch_fn=lambda torch, a: torch.ops.aten.gelu_backward(torch.ones_like(a), a),
    code="(0.5 * (1 + torch.erf({0} * 0.7071067811865476)) + {0} * torch.exp(-0.5 * {0} ** 2) * 0.3989422804014327)",
    grad_fn="GeluBackwardBackward0",
)
unary(
    "silu",
    lambda t: t * functions.sigmoid(t),
    r"\operatorname{{SiLU}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.silu(a),
    code="torch.nn.functional.silu({0})",
)
unary(
    "logsigmoid",
    lambda t: -functions.softplus(-t),
    r"\log\sigma\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.logsigmoid(a),
    code="torch.nn.functional.logsigmoid({0})",
    grad_fn="LogSigmoidBackward0",
)
unary(
    "leaky_relu",
    lambda t, negative_slope: sympy.Piecewise((t, functions.gt(t, 0)), (negative_slope * t, True)),
    r"\operatorname{{leaky\_relu}}\left({0}\right)",
    torch_fn=lambda torch, a, negative_slope: torch.nn.functional.leaky_relu(a, negative_slope),
    code="torch.nn.functional.leaky_relu({0}, {negative_slope})",
    grad_fn="LeakyReluBackward0",
    # as torch's kernel: a slope of 0 keeps the sign of a negative x's zero (SymPy's 0.0 * x is a plain 0)
    float64=lambda a, negative_slope: np.where(a > 0, a, a * negative_slope),
    # torch's leaky_relu_backward multiplies by the slope (an infinite g gives nan at a slope of 0)
    vjp=lambda g, out, a, negative_slope: (apply("where", apply("gt", a, 0), g, g * negative_slope),),
)
unary(
    "gelu_tanh",
    lambda t: t / 2 * (1 + sympy.tanh(_GELU_BETA * (t + _GELU_KAPPA * t**3))),
    r"\operatorname{{GELU}}_{{\tanh}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.gelu(a, approximate="tanh"),
    code='torch.nn.functional.gelu({0}, approximate="tanh")',
    grad_fn="GeluBackward0",
    vjp=lambda g, out, a: (g * apply("gelu_tanh_derivative", a),),
)
unary(
    "gelu_tanh_derivative",
    lambda t: (
        (1 + sympy.tanh(_GELU_BETA * (t + _GELU_KAPPA * t**3))) / 2
        + t
        / 2
        * (1 - sympy.tanh(_GELU_BETA * (t + _GELU_KAPPA * t**3)) ** 2)
        * _GELU_BETA
        * (1 + 3 * _GELU_KAPPA * t**2)
    ),
    r"\operatorname{{GELU}}_{{\tanh}}'\left({0}\right)",
    torch_fn=lambda torch, a: torch.ops.aten.gelu_backward(torch.ones_like(a), a, approximate="tanh"),
    code="(0.5 * (1 + torch.tanh(0.7978845608028654 * ({0} + 0.044715 * {0} ** 3))) + 0.5 * {0} * (1 - torch.tanh("
    "0.7978845608028654 * ({0} + 0.044715 * {0} ** 3)) ** 2) * 0.7978845608028654 * (1 + 0.134145 * {0} ** 2))",
    grad_fn="GeluBackwardBackward0",
)
# torch's ELU family: x ≤ 0 (0 included, for the gradient too) takes the exponential branch, x > 0 and nan the linear
unary(
    "elu",
    lambda t, alpha: sympy.Piecewise((alpha * (sympy.exp(t) - 1), functions.le(t, 0)), (t, True)),
    r"\operatorname{{ELU}}\left({0}\right)",
    torch_fn=lambda torch, a, alpha: torch.nn.functional.elu(a, alpha),
    code="torch.nn.functional.elu({0}, {alpha})",
    grad_fn="EluBackward0",
)
unary(
    "selu",
    lambda t: sympy.Piecewise(
        (SELU_SCALE * SELU_ALPHA * (sympy.exp(t) - 1), functions.le(t, 0)), (SELU_SCALE * t, True)
    ),
    r"\operatorname{{SELU}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.selu(a),
    code="torch.nn.functional.selu({0})",
    grad_fn="EluBackward0",
)
unary(
    "celu",
    lambda t, alpha: sympy.Piecewise((alpha * (sympy.exp(t / alpha) - 1), functions.le(t, 0)), (t, True)),
    r"\operatorname{{CELU}}\left({0}\right)",
    torch_fn=lambda torch, a, alpha: torch.nn.functional.celu(a, alpha),
    code="torch.nn.functional.celu({0}, {alpha})",
    grad_fn="CeluBackward0",
)
unary(
    "mish",
    lambda t: t * sympy.tanh(functions.softplus(t)),
    r"\operatorname{{mish}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.mish(a),
    code="torch.nn.functional.mish({0})",
    grad_fn="MishBackward0",
)


class hardswish(sympy.Function):  # noqa: N801 - spelled as in torch
    """x · min(max(x + 3, 0), 6) / 6; torch's gradient at x = −3 is 0 and at x = 3 is 1 (the outer pieces')."""

    @classmethod
    def eval(cls, t):
        if t is sympy.nan:
            return sympy.nan
        if t.is_Number:
            return sympy.S.Zero if t <= -3 else (t if t >= 3 else t * (t + 3) / 6)
        return None

    def fdiff(self, argindex=1):
        t = self.args[0]
        return sympy.Piecewise(
            (0, functions.le(t, -3)), (t / 3 + sympy.S.Half, functions.lt(t, 3)), (1, True)
        )  # nan: 1, as torch

    @staticmethod
    def float64(x: float) -> float:
        return x * min(max(x + 3.0, 0.0), 6.0) / 6.0 if x == x else math.nan

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{hardswish}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


_ONE_SIXTH_FLOAT32 = sympy.Float(float(np.float32(1 / 6)))  # torch's hardsigmoid backward multiplies by 1.0f / 6


class hardsigmoid(sympy.Function):  # noqa: N801 - spelled as in torch
    """min(max(x + 3, 0), 6) / 6; torch's gradient is 1/6 (its float32 value) strictly inside (−3, 3), else 0."""

    @classmethod
    def eval(cls, t):
        if t is sympy.nan:
            return sympy.nan
        if t.is_Number:
            return sympy.S.Zero if t <= -3 else (sympy.S.One if t >= 3 else t / 6 + sympy.S.Half)
        return None

    def fdiff(self, argindex=1):
        t = self.args[0]
        return sympy.Piecewise((_ONE_SIXTH_FLOAT32, functions.gt(t, -3) & functions.lt(t, 3)), (0, True))

    @staticmethod
    def float64(x: float) -> float:
        return min(max(x + 3.0, 0.0), 6.0) / 6.0 if x == x else math.nan

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{hardsigmoid}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


unary(
    "hardswish",
    hardswish,
    r"\operatorname{{hardswish}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.hardswish(a),
    code="torch.nn.functional.hardswish({0})",
    grad_fn="HardswishBackward0",
)
unary(
    "hardsigmoid",
    hardsigmoid,
    r"\operatorname{{hardsigmoid}}\left({0}\right)",
    torch_fn=lambda torch, a: torch.nn.functional.hardsigmoid(a),
    code="torch.nn.functional.hardsigmoid({0})",
    grad_fn="HardsigmoidBackward0",
)


class hardtanh(sympy.Function):  # noqa: N801 - spelled as in torch
    """clamp(x, low, high) in value (nan stays nan); torch's gradient is 0 at and beyond the bounds, else 1."""

    nargs = 3

    @classmethod
    def eval(cls, t, low, high):
        if t is sympy.nan:
            return sympy.nan
        if t.is_Number:
            return low if t <= low else (high if t >= high else t)
        return None

    def fdiff(self, argindex=1):
        if argindex != 1:
            raise sympy.ArgumentIndexError(self, argindex)
        t, low, high = self.args
        return sympy.Piecewise(
            (0, functions.le(t, low) | functions.ge(t, high)), (1, True)
        )  # nan passes it, as in torch

    @staticmethod
    def float64(x: float, low: float, high: float) -> float:
        return x if x != x else min(max(x, low), high)

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{hardtanh}}\left({printer._print(self.args[0])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


unary(
    "hardtanh",
    lambda t, min_val, max_val: hardtanh(t, sympy.sympify(min_val), sympy.sympify(max_val)),
    r"\operatorname{{hardtanh}}\left({0}\right)",
    torch_fn=lambda torch, a, min_val, max_val: torch.nn.functional.hardtanh(a, min_val, max_val),
    code="torch.nn.functional.hardtanh({0}, {min_val}, {max_val})",
    grad_fn="HardtanhBackward0",
)
unary(
    "threshold",
    # nan passes, as in torch
    lambda t, threshold, value: sympy.Piecewise((value, functions.compare(sympy.LessThan, t, threshold)), (t, True)),
    r"\operatorname{{threshold}}\left({0}\right)",
    torch_fn=lambda torch, a, threshold, value: torch.nn.functional.threshold(a, threshold, value),
    code="torch.nn.functional.threshold({0}, {threshold}, {value})",
    grad_fn="ThresholdBackward0",
)


# ── a clamp whose gradient passes unchanged (torch clamps cosine_similarity's norms under no_grad) ──
class clamp_min_nograd(sympy.Function):  # noqa: N801 - spelled like a SymPy function
    """max(x, low) in value; its derivative is 1, as if no clamp were there."""

    nargs = 2

    @classmethod
    def eval(cls, x, low):
        if x is sympy.nan:
            return sympy.nan
        if x.is_Number and low.is_Number:
            return max(x, low)
        return None

    def fdiff(self, argindex=1):
        return sympy.S.One if argindex == 1 else sympy.S.Zero

    @staticmethod
    def float64(x: float, low: float) -> float:
        return x if math.isnan(x) else max(x, low)

    def _latex(self, printer, exp=None):
        body = rf"\max\left({printer._print(self.args[0])}, {printer._print(self.args[1])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


register(
    Op(
        "clamp_min_nograd",
        same_shape,
        lambda a, min: elementwise(lambda t: clamp_min_nograd(t, sympy.sympify(min)), a),
        lambda torch, a, min: a + (a.clamp_min(min) - a).detach(),
        "({0} + ({0}.clamp_min({min}) - {0}).detach())",
        r"\max\left({0}, {min}\right)",
        "none",
        saves=False,
        vjp=lambda g, out, a, min: (g,),
        batch="pointwise",
    )
)


def is_truth_value(x: sympy.Basic) -> bool:
    """A comparison, a logical combination of them, or true/false (not a symbol: SymPy's symbols are Booleans too)."""
    logic = sympy.logic.boolalg
    return isinstance(x, (sympy.core.relational.Relational, logic.BooleanFunction, logic.BooleanAtom))


# ── a value without a gradient (embedding's padding_idx row) ──
class detached(sympy.Function):  # noqa: N801 - spelled like a SymPy function
    """x in value; its derivative is 0 (torch's ``x.detach()``)."""

    nargs = 1

    @classmethod
    def eval(cls, x):
        # a number, or a truth value (a detached comparison), has no gradient to stop
        return x if x.is_Number or is_truth_value(x) else None

    def fdiff(self, argindex=1):
        return sympy.S.Zero

    @staticmethod
    def float64(x: float) -> float:
        return x

    def _latex(self, printer, exp=None):
        body = printer._print(self.args[0])
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


register(
    Op(
        "stop_gradient",
        same_shape,
        lambda a: elementwise(detached, a),
        lambda torch, a: a.detach(),
        "{0}.detach()",
        "{0}",
        "none",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, a: (None,),
        batch="pointwise",
    )
)


# ── binary cross-entropy as torch computes it: logs clamped at −100, the gradient guarded at p(1 − p) = 0 ──
_BCE_EPSILON = sympy.Float(1e-12)


class binary_cross_entropy(sympy.Function):  # noqa: N801 - spelled as in torch
    """−[t · max(log p, −100) + (1 − t) · max(log(1 − p), −100)], with torch's gradients:
    (p − t) / max(p(1 − p), 1e-12) for p, and log(1 − p) − log p for t."""

    nargs = 2

    @classmethod
    def eval(cls, p, t):
        if p.is_Number and t.is_Number:
            if p is sympy.nan or t is sympy.nan:
                return sympy.nan
            return -(t * sympy.Max(sympy.log(p), -100) + (1 - t) * sympy.Max(sympy.log(1 - p), -100))
        return None

    def fdiff(self, argindex=1):
        p, t = self.args
        if argindex == 1:
            return (p - t) / functions.maximum(p * (1 - p), _BCE_EPSILON)
        return sympy.log(1 - p) - sympy.log(p)

    @staticmethod
    def float64(p: float, t: float) -> float:
        with np.errstate(all="ignore"):
            return float((t - 1) * max(np.log1p(-p), -100.0) - t * max(np.log(p), -100.0)) if p == p else math.nan

    def _latex(self, printer, exp=None):
        body = rf"\operatorname{{BCE}}\left({printer._print(self.args[0])}, {printer._print(self.args[1])}\right)"
        return rf"{body}^{{{exp}}}" if exp else body


def _bce_vjp(g, out, p, t):
    guard = apply("clamp", p * (1 - p), min=1e-12, max=None)
    return unbroadcast(g * (p - t) / guard, p.shape), unbroadcast(g * (apply("log", 1 - p) - apply("log", p)), t.shape)


binary(
    "binary_cross_entropy",
    binary_cross_entropy,
    lambda torch, p, t: torch.nn.functional.binary_cross_entropy(p, t, reduction="none"),
    'torch.nn.functional.binary_cross_entropy({0}, {1}, reduction="none")',
    r"\operatorname{{BCE}}\left({0}, {1}\right)",
    "BinaryCrossEntropyBackward0",
    saves=True,
    precedence=9,
    vjp=_bce_vjp,
    float_result=True,
)


# ── binary cross-entropy on logits: torch's value and its fused backward ──
def _bce_with_logits_vjp(g, out, z, t):
    """torch's ``(σ(z) − t) · g`` and ``−z · g``: where g is infinite, σ(z) − t is one number times it, not two."""
    return unbroadcast((apply("sigmoid", z) - t) * g, z.shape), unbroadcast(-z * g, t.shape)


binary(
    "binary_cross_entropy_with_logits",
    # torch's (1 − t) z − log σ(z), whose value at z = ±∞ is torch's: ∞ at +∞ (t < 1), nan at −∞
    lambda z, t: (1 - t) * z + functions.softplus(-z),
    lambda torch, z, t: torch.nn.functional.binary_cross_entropy_with_logits(z, t, reduction="none"),
    'torch.nn.functional.binary_cross_entropy_with_logits({0}, {1}, reduction="none")',
    r"\operatorname{{BCE}}_{{\sigma}}\left({0}, {1}\right)",
    "BinaryCrossEntropyWithLogitsBackward0",
    saves=True,
    precedence=9,
    vjp=_bce_with_logits_vjp,
    float_result=True,
)


# ── losses with a closed-form gradient ─────────────────────────────────────
def _class_indices(y: np.ndarray) -> list[int]:
    flat = [sympy.sympify(v) for v in y.reshape(-1)]
    if not all(v.is_Integer for v in flat):
        raise ShapeError("class targets need integer values (give the target tensor values)")
    return [int(v) for v in flat]


def _reduced(losses: list, reduction: str) -> np.ndarray:
    """The per-row losses of a classification loss, summed or averaged, as a 0-d array."""
    total = sympy.Add(*losses)
    return np.array(total / len(losses) if reduction == "mean" else total, dtype=object)


def _per_row(g, rows, reduction: str):
    """The incoming gradient each row of a summed or averaged loss receives."""
    return g / rows if reduction == "mean" else g


def _cross_entropy(z: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    losses = [sympy.log(sympy.Add(*[sympy.exp(v) for v in row])) - row[c] for row, c in zip(z, _class_indices(y))]
    return _reduced(losses, reduction)


def _cross_entropy_float64(z: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    """torch's log_softmax, then NLL: each row's maximum is subtracted first, so large logits do not overflow
    (the SymPy meaning, log Σ exp z − z_c, gives inf at z = 1000)."""
    losses = -softmax_float64(z, 1, log=True)[np.arange(z.shape[0]), y.astype(int)]
    return np.sum(losses) / len(losses) if reduction == "mean" else np.sum(losses)


def _one_hot(y: np.ndarray, num_classes: int) -> np.ndarray:
    out = np.full(y.shape + (num_classes,), sympy.S.Zero, dtype=object)
    for index, c in zip(np.ndindex(y.shape), _class_indices(y)):
        out[index + (c,)] = sympy.S.One
    return out


register(
    Op(
        "cross_entropy",
        lambda z, y, reduction: (),
        _cross_entropy,
        lambda torch, z, y, reduction: torch.nn.functional.cross_entropy(z, y.long(), reduction=reduction),
        'torch.nn.functional.cross_entropy({0}, {1}, reduction="{reduction}")',
        r"\operatorname{{CE}}\left({0}, {1}\right)",
        "NllLossBackward0",
        vjp=lambda g, out, z, y, reduction: (_cross_entropy_vjp(g, z, y, reduction), None),
        float64=_cross_entropy_float64,
        indexes=lambda z, y, reduction: [(z.shape[1], y)],
    )
)


def _nll_loss_float64(lp: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    """torch's NLL kernel subtracts each picked entry from a total that starts at +0.0: a loss of zeros is +0.0
    (negating their sum gives -0.0)."""
    total = 0.0 - np.sum(lp[np.arange(lp.shape[0]), y.astype(int)])
    return np.asarray(total / lp.shape[0] if reduction == "mean" else total)


def _nll_loss(log_probabilities: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    return _reduced([-row[c] for row, c in zip(log_probabilities, _class_indices(y))], reduction)


def _at_targets(y, num_classes, value):
    """``value`` at each row's target class, 0 elsewhere: selected, as torch's NLL kernel scatters it, so that an
    infinite value leaves the other entries 0 (a product with the one-hot would make them 0 · ∞ = nan)."""
    return apply("where", apply("eq", apply("one_hot", y, num_classes=num_classes), 1), value, 0)


def _nll_loss_vjp(g, lp, y, reduction: str):
    """−g (or −g/m) at each target, 0 elsewhere."""
    return _at_targets(y, lp.shape[1], -_per_row(g, lp.shape[0], reduction))


def _cross_entropy_vjp(g, z, y, reduction: str):
    """``(softmax(z) − one_hot(y)) · s`` with ``s`` = g (or g/m), in torch's order: the NLL gradient −s at the
    targets, minus softmax(z) times its row sum −s, so that an infinite s gives nan at the targets (−∞ + ∞), as
    torch's log_softmax backward does. Laws to read are written back as the product (see derive.simplify)."""
    s = _per_row(g, z.shape[0], reduction)
    return _at_targets(y, z.shape[1], -s) + apply("softmax", z, dim=1) * s


def _cross_entropy_grad(log_probabilities: np.ndarray, y: np.ndarray, scale: np.ndarray, total: np.ndarray):
    onehot = _one_hot(y, log_probabilities.shape[1])
    return elementwise(lambda lp, h: (sympy.exp(lp) - h) * scale[()] / total[()], log_probabilities, onehot)


def _over(value, total):
    """``value / total``, or ``value`` itself when ``total`` is the number 1 (a sum, not a mean)."""
    return value if uniform_constant(total) == 1 else value / total


# nll_loss of 2-D input without options (F.nll_loss takes this row), and cross_entropy as emitted code splits it
# when its gradient is needed: the forward keeps log_softmax(z), as torch's own cross_entropy does inside, and the
# backward runs torch's NLL and log_softmax backward kernels on it (cross_entropy_grad). Its last input is 1 (a
# sum) or the NLL's total weight, the number of targets, which torch's nll_loss_forward returns with the loss
# (nll_total_weight): the backward of a mean divides by it, as torch's own does, and makes no tensor of its own
register(
    Op(
        "nll_loss",
        lambda lp, y, reduction: (),
        _nll_loss,
        lambda torch, lp, y, reduction: torch.nn.functional.nll_loss(lp, y.long(), reduction=reduction),
        'torch.nn.functional.nll_loss({0}, {1}, reduction="{reduction}")',
        r"\operatorname{{NLL}}\left({0}, {1}\right)",
        "NllLossBackward0",
        tuple_code="torch.ops.aten.nll_loss_forward({0}, {1}, None, {reduction_number}, -100)",
        spell=lambda attrs, inputs: {"reduction_number": {"none": 0, "mean": 1, "sum": 2}[attrs["reduction"]]},
        vjp=lambda g, out, lp, y, reduction: (_nll_loss_vjp(g, lp, y, reduction), None),
        indexes=lambda lp, y, reduction: [(lp.shape[1], y)],
        float64=_nll_loss_float64,
    )
)
register(
    Op(
        "nll_total_weight",
        lambda lp, y: (),
        lambda lp, y: np.array(sympy.Integer(len(y)), dtype=object),
        lambda torch, lp, y: torch.ops.aten.nll_loss_forward(lp, y.long(), None, 1, -100)[1],
        "torch.ops.aten.nll_loss_forward({0}, {1}, None, 1, -100)[1]",
        r"\left|{1}\right|",
        "none",
        differentiable=False,
        vjp=lambda g, out, lp, y: (None, None),
        companion_of=(("nll_loss", 1),),
    )
)
register(
    Op(
        "cross_entropy_grad",
        lambda lp, y, scale, total: lp,
        _cross_entropy_grad,
        lambda torch, lp, y, scale, total: (  # torch's order, as in _cross_entropy_vjp
            torch.where(torch.nn.functional.one_hot(y.long(), lp.shape[1]) == 1, -(scale / total), 0)
            + torch.exp(lp) * (scale / total)
        ),
        "_cross_entropy_grad({0}, {1}, {2}, {3})",
        r"\left(e^{{{0}}} - \operatorname{{onehot}}\left({1}\right)\right) \frac{{{2}}}{{{3}}}",
        "none",
        vjp=lambda g, out, lp, y, scale, total: (
            g * apply("exp", lp) * _over(scale, total),
            None,
            _over((g * (apply("exp", lp) - apply("one_hot", y, num_classes=lp.shape[1]))).sum(), total),
            None,
        ),
    )
)


register(
    Op(
        "one_hot",
        lambda y, num_classes: tuple(y) + (num_classes,),
        _one_hot,
        lambda torch, y, num_classes: torch.nn.functional.one_hot(y.long(), int(num_classes)).to(torch.float64),
        "torch.nn.functional.one_hot({0}, {num_classes})",
        r"\operatorname{{onehot}}\left({0}\right)",
        "none",
        differentiable=False,
        vjp=lambda g, out, y, num_classes: (None,),
        stand_in_attrs=lambda mapping, y, num_classes: {"num_classes": mapping.get(num_classes, num_classes)},
    )
)
