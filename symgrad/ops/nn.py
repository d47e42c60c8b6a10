"""Neural-network ops: activations, and losses with a closed-form gradient.

>>> import symgrad as sg
>>> z = sg.tensor([[0.0, 0.0]], requires_grad=True, name="z")
>>> import symgrad.torch as torch
>>> torch.nn.functional.cross_entropy(z, torch.tensor([1])).backward()
>>> z.grad.tolist()
[[0.5, -0.5]]
"""

from __future__ import annotations

import numpy as np
import sympy

from ..core.errors import ShapeError
from ..core.registry import Op, register
from ..core.tensor import apply
from . import functions
from .rows import unary

# ── activations ────────────────────────────────────────────────────────────
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
    lambda t, negative_slope: sympy.Piecewise((t, t > 0), (negative_slope * t, True)),
    r"\operatorname{{leaky\_relu}}\left({0}\right)",
    torch_fn=lambda torch, a, negative_slope: torch.nn.functional.leaky_relu(a, negative_slope),
    code="torch.nn.functional.leaky_relu({0}, {negative_slope})",
    grad_fn="LeakyReluBackward0",
)
unary(
    "threshold",
    lambda t, threshold, value: sympy.Piecewise((t, t > threshold), (value, True)),
    r"\operatorname{{threshold}}\left({0}\right)",
    torch_fn=lambda torch, a, threshold, value: torch.nn.functional.threshold(a, threshold, value),
    code="torch.nn.functional.threshold({0}, {threshold}, {value})",
    grad_fn="ThresholdBackward0",
)


# ── losses with a closed-form gradient ─────────────────────────────────────
def _class_indices(y: np.ndarray) -> list[int]:
    flat = [sympy.sympify(v) for v in y.reshape(-1)]
    if not all(v.is_Integer for v in flat):
        raise ShapeError("class targets need integer values (give the target tensor values)")
    return [int(v) for v in flat]


def _cross_entropy(z: np.ndarray, y: np.ndarray, reduction: str) -> np.ndarray:
    losses = [sympy.log(sympy.Add(*[sympy.exp(v) for v in row])) - row[c] for row, c in zip(z, _class_indices(y))]
    total = sympy.Add(*losses)
    return np.array(total / len(losses) if reduction == "mean" else total, dtype=object)


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
        vjp=lambda g, out, z, y, reduction: (
            (apply("softmax", z, dim=1) - apply("one_hot", y, num_classes=z.shape[1]))
            * (g / z.shape[0] if reduction == "mean" else g),
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
    )
)
