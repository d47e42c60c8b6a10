"""Batch normalization in training mode as ops that close under differentiation, so that laws read ``BN`` and
emitted code runs torch's ``native_batch_norm`` kernels, forward and backward.

Each channel (dim 1) is normalized over the batch and spatial dims, with the batch's mean and biased variance:
layer normalization's law (:mod:`.normalization`) over other dims. The affine form is one op, as
``native_batch_norm`` is one kernel, so that its weight's and bias's gradients come from the backward kernel's
own sums (its output mask) and the backward saves no normalized copy of x:

- ``batch_norm(x)`` and ``batch_norm_affine(x, w, b)``; ``batch_norm_mean(x)`` and ``batch_norm_invstd(x)``, the
  statistics the forward kernel returns with its result;
- ``batch_norm_backward(g, x, mean, invstd)`` and ``batch_norm_affine_backward(g, x, mean, invstd, w)``, the
  input's gradient; ``batch_norm_weight_grad`` and ``batch_norm_bias_grad``, the parameters'.

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> x = sg.tensor([[1.0], [3.0]], name="x")
>>> apply("batch_norm", x, eps=0.0).tolist()
[[-1.0], [1.0]]
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import sympy

from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from .batched import batch_sizes, repeated
from .normalization import backward_entries, backward_rows64, normalized_entries, row_statistics64, second_vjp_in_x


def _channel_rows(a: np.ndarray) -> np.ndarray:
    """The entries grouped by channel: (C, N · spatial)."""
    return np.moveaxis(a, 1, 0).reshape(a.shape[1], -1)


def _from_channel_rows(rows: np.ndarray, shape: tuple) -> np.ndarray:
    moved = (shape[1], shape[0], *shape[2:])
    return np.moveaxis(rows.reshape(moved), 0, 1)


def _bn_normalized(x: np.ndarray, eps: Any) -> np.ndarray:
    rows = np.empty(_channel_rows(x).shape, dtype=object)
    for c, row in enumerate(_channel_rows(x)):
        rows[c] = normalized_entries(list(row), eps)[0]
    return rows


def _bn_meaning(x: np.ndarray, *weights: np.ndarray, eps: Any) -> np.ndarray:
    rows = _bn_normalized(x, eps)
    if weights:
        w, b = weights
        rows = rows * w.reshape(-1, 1) + b.reshape(-1, 1)
    return _from_channel_rows(rows, x.shape)


def _bn_statistic_meaning(x: np.ndarray, *, eps: Any, which: int) -> np.ndarray:
    out = []
    for row in _channel_rows(x):
        row = list(row)
        out.append(sympy.Add(*row) / len(row) if which == 1 else normalized_entries(row, eps)[1])
    return np.array(out, dtype=object)


def _bn_input_grad_meaning(g: np.ndarray, x: np.ndarray, *rest: np.ndarray, eps: Any) -> np.ndarray:
    grads = _channel_rows(g) if len(rest) == 2 else _channel_rows(g) * rest[2].reshape(-1, 1)
    out = np.empty(grads.shape, dtype=object)
    for c, (grad, row) in enumerate(zip(grads, _channel_rows(x))):
        out[c] = backward_entries(grad, row, eps)
    return _from_channel_rows(out, x.shape)


def _bn_parameter_grad_meaning(g: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, *, eps: Any, which):
    normal = _bn_normalized(x, eps) if which == 1 else np.ones(_channel_rows(x).shape, dtype=object)
    return np.array([sympy.Add(*(a * b for a, b in zip(grad, n))) for grad, n in zip(_channel_rows(g), normal)])


def _bn_parameter_grad_float64(g: np.ndarray, x: np.ndarray, mean, rstd, *, eps: float, which: int) -> np.ndarray:
    grad = _channel_rows(g).astype(float)
    if which == 2:
        return grad.sum(axis=1)
    rows, mean, rstd = _bn_statistics64(x, float(eps))
    return (grad * (rows - mean) * rstd).sum(axis=1)


def _bn_statistics64(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = _channel_rows(x).astype(float)
    return (rows, *row_statistics64(rows, eps))


def _bn_float64(x: np.ndarray, *weights: np.ndarray, eps: float) -> np.ndarray:
    rows, mean, rstd = _bn_statistics64(x, float(eps))
    out = (rows - mean) * rstd
    if weights:
        out = out * weights[0].reshape(-1, 1) + weights[1].reshape(-1, 1)
    return _from_channel_rows(out, x.shape)


def _bn_input_grad_float64(g: np.ndarray, x: np.ndarray, *rest: np.ndarray, eps: float) -> np.ndarray:
    grad = _channel_rows(g)
    if len(rest) == 3:
        grad = grad * rest[2].reshape(-1, 1)
    return _from_channel_rows(backward_rows64(grad, _channel_rows(x).astype(float), eps), x.shape)


def _channels(x: Tensor) -> tuple[int, ...]:
    return (0, *range(2, x.ndim))


def _per_channel(v: Tensor, x: Tensor) -> Tensor:
    """A (C,) tensor shaped to broadcast against x (N, C, *spatial)."""
    return v.reshape(1, v.shape[0], *([1] * (x.ndim - 2)))


def batch_norm_statistics(x: Tensor, eps: Any) -> tuple[Tensor, Tensor]:
    """(the mean, 1 / √(var + eps)) per channel, as torch's native_batch_norm saves them."""
    return apply("batch_norm_mean", x, eps=eps), apply("batch_norm_invstd", x, eps=eps)


def _bn_vjp(g: Tensor, out: Tensor, x: Tensor, *weights: Tensor, eps: Any) -> tuple:
    mean, invstd = batch_norm_statistics(x, eps)
    if not weights:
        return (apply("batch_norm_backward", g, x, mean, invstd, eps=eps),)
    parts = (g, x, mean, invstd)
    return (
        apply("batch_norm_affine_backward", *parts, weights[0], eps=eps),
        apply("batch_norm_weight_grad", *parts, eps=eps),
        apply("batch_norm_bias_grad", *parts, eps=eps),
    )


def _bn_second_x(h: Tensor, g: Tensor, x: Tensor, eps: Any) -> Tensor:
    """The VJP in x of ``batch_norm_backward(g, x)`` for the cotangent ``h`` (layer norm's, over other dims)."""
    mean, invstd = batch_norm_statistics(x, eps)
    normal = apply("batch_norm", x, eps=eps)
    return second_vjp_in_x(
        h,
        g,
        normal,
        _per_channel(invstd, x),
        _channels(x),
        _count(x),
        lambda c: apply("batch_norm_backward", c, x, mean, invstd, eps=eps),
    )


def _bn_backward_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, invstd: Tensor, *w, eps: Any):
    backward_h = apply("batch_norm_backward", h, x, mean, invstd, eps=eps)
    if not w:
        return backward_h, _bn_second_x(h, g, x, eps), None, None
    scale = _per_channel(w[0], x)
    grad_w = (g * backward_h).sum(dim=_channels(x))
    return backward_h * scale, _bn_second_x(h, g * scale, x, eps), None, None, grad_w


def _bn_weight_grad_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, invstd: Tensor, *, eps: Any):
    scale = _per_channel(h, x)
    normal = apply("batch_norm", x, eps=eps)
    return normal * scale, apply("batch_norm_backward", g * scale, x, mean, invstd, eps=eps), None, None


def _bn_bias_grad_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, invstd: Tensor, *, eps: Any):
    return _per_channel(h, x).expand(*g.shape), None, None, None


def _channel_batched(name: str, per_channel_result: bool):
    """A batch rule: the batch dims fold into the channel dim (each batch entry normalizes its own channels), the
    op applies, and they unfold again. Unbatched operands repeat along the batch first."""

    def rule(inputs: list, flags: list, nb: int, **attrs) -> Tensor:
        sizes = batch_sizes(inputs, flags, nb)
        count = math.prod(sizes)
        folded = []
        for t, f in zip(inputs, flags):
            t = (t if f else repeated(t, sizes)).reshape(count, *t.shape[nb:] if f else t.shape)
            if t.ndim == 2:  # a per-channel (B, C) operand
                folded.append(t.reshape(-1))
            else:
                n, c, *spatial = t.shape[1:]
                folded.append(t.transpose(0, 1).reshape(n, count * c, *spatial))
        out = apply(name, *folded, **attrs)
        if per_channel_result:
            return out.reshape(*sizes, -1)
        n, _, *spatial = out.shape
        return out.reshape(n, count, -1, *spatial).transpose(0, 1).reshape(*sizes, n, -1, *spatial)

    return rule


def _bn_forward_spelling(attrs: dict, inputs: tuple) -> dict:
    """No running statistics; emitted code that updates a model's passes them to the same call (see
    ``emit.codegen``), as torch's batch_norm does."""
    return {"running": "None, None, True", "momentum": "0.0"}


def _native_statistic(torch: Any, x: Any, eps: float, position: int) -> Any:
    return torch.ops.aten.native_batch_norm(x, None, None, None, None, True, 0.0, eps)[position]


def _count(x: Tensor) -> Any:
    return math.prod(x.shape[d] for d in _channels(x))


# The statistics' own derivatives: backward rules read them as the kernel's saved values and give them no
# gradient (the rules differentiate through x), so these hold for a proof's rule check, not for emitted code
_bn_statistic_vjp = {
    1: lambda g, out, x, eps: ((_per_channel(g, x) / _count(x)).expand(*x.shape),),
    2: lambda g, out, x, eps: (-_per_channel(g * out * out, x) * apply("batch_norm", x, eps=eps) / _count(x),),
}


def _bn_rule_shapes(*shapes: tuple, **attrs: Any) -> tuple:
    """Two samples of two channels, each spatial size 2: the rule's check reads every entry of a channel."""
    x = next(s for s in shapes if len(s) > 1)
    channels = min(2, x[1]) if isinstance(x[1], int) else 2
    return tuple((channels,) if len(s) == 1 else (2, channels, *(2 for _ in s[2:])) for s in shapes)


def _torch_parameter_grad(torch: Any, g: Any, x: Any, mean: Any, invstd: Any, eps: float, which: int) -> Any:
    dims = (0, *range(2, x.dim()))
    if which == 2:
        return g.sum(dims)
    return (g * torch.nn.functional.batch_norm(x, None, None, training=True, eps=eps)).sum(dims)


# Alone (when the input gets no gradient) they are written out: torch's backward kernel with no weight cannot be
# differentiated for the weight's gradient, and the saved mean and 1/std are constants to torch's autograd (its
# native_batch_norm does not differentiate them), so the normalized input is computed again from x
_PARAMETER_GRAD_CODE = {
    1: "({0} * torch.nn.functional.batch_norm({1}, None, None, training=True, eps={eps})).sum({dims})",
    2: "{0}.sum({dims})",
}


def _bn_spelling(attrs: dict, inputs: tuple) -> dict:
    x = inputs[1]
    return {"dims": tuple(_channels(x)), "view": ", ".join(["1", "-1", *["1"] * (x.ndim - 2)])}


_BN_BACKWARD = "torch.ops.aten.native_batch_norm_backward({0}, {1}, {w}, None, None, {2}, {3}, True, {eps}, {mask})"


def _bn_backward_code(weight: bool, mask: str, index: int) -> str:
    return _BN_BACKWARD.replace("{w}", "{4}" if weight else "None").replace("{mask}", mask) + f"[{index}]"


register(
    Op(
        "batch_norm",
        lambda x, *weights, eps: x,
        _bn_meaning,
        lambda torch, x, eps: torch.nn.functional.batch_norm(x, None, None, training=True, eps=eps),
        "torch.nn.functional.batch_norm({0}, None, None, training=True, eps={eps})",
        r"\operatorname{{BN}}\left({0}\right)",
        "NativeBatchNormBackward0",
        vjp=_bn_vjp,
        tuple_code="torch.ops.aten.native_batch_norm({0}, None, None, {running}, {momentum}, {eps})",
        spell=_bn_forward_spelling,
        float_result=True,
        rule_shapes=_bn_rule_shapes,
        float64=_bn_float64,
        batch=_channel_batched("batch_norm", False),
        tags=frozenset({"kernel"}),  # torch's fused x·α + β rounds to 1e-15 where x is its channel's mean
    )
)
register(
    Op(
        "batch_norm_affine",
        lambda x, w, b, eps: x,
        _bn_meaning,
        lambda torch, x, w, b, eps: torch.nn.functional.batch_norm(x, None, None, w, b, True, 0.0, eps),
        "torch.nn.functional.batch_norm({0}, None, None, {1}, {2}, training=True, eps={eps})",
        r"\operatorname{{BN}}_{{{1}, {2}}}\left({0}\right)",
        "NativeBatchNormBackward0",
        vjp=_bn_vjp,
        tuple_code="torch.ops.aten.native_batch_norm({0}, {1}, {2}, {running}, {momentum}, {eps})",
        spell=_bn_forward_spelling,
        float_result=True,
        rule_shapes=_bn_rule_shapes,
        float64=_bn_float64,
        batch=_channel_batched("batch_norm_affine", False),
        tags=frozenset({"kernel"}),
    )
)
for _name, _position, _latex in (("batch_norm_mean", 1, r"\mu"), ("batch_norm_invstd", 2, r"\sigma^{{-1}}")):
    register(
        Op(
            _name,
            lambda x, eps: (x[1],),
            functools.partial(_bn_statistic_meaning, which=_position),
            functools.partial(_native_statistic, position=_position),
            f"torch.ops.aten.native_batch_norm({{0}}, None, None, None, None, True, 0.0, {{eps}})[{_position}]",
            _latex + r"\left({0}\right)",
            "none",
            vjp=_bn_statistic_vjp[_position],
            companion_of=(("batch_norm", _position), ("batch_norm_affine", _position)),
            float_result=True,
            batch=_channel_batched(_name, True),
        )
    )
register(
    Op(
        "batch_norm_backward",
        lambda g, x, mean, invstd, eps: x,
        _bn_input_grad_meaning,
        lambda torch, g, x, mean, invstd, eps: torch.ops.aten.native_batch_norm_backward(
            g, x, None, None, None, mean, invstd, True, eps, [True, False, False]
        )[0],
        _bn_backward_code(False, "[True, False, False]", 0),
        r"\operatorname{{BN}}'_{{{1}}}\left({0}\right)",
        "NativeBatchNormBackwardBackward0",
        vjp=_bn_backward_vjp,
        float_result=True,
        rule_shapes=_bn_rule_shapes,
        float64=_bn_input_grad_float64,
        batch=_channel_batched("batch_norm_backward", False),
    )
)
register(
    Op(
        "batch_norm_affine_backward",
        lambda g, x, mean, invstd, w, eps: x,
        _bn_input_grad_meaning,
        lambda torch, g, x, mean, invstd, w, eps: torch.ops.aten.native_batch_norm_backward(
            g, x, w, None, None, mean, invstd, True, eps, [True, False, False]
        )[0],
        _bn_backward_code(True, "[True, False, False]", 0),
        r"\operatorname{{BN}}'_{{{1}}}\left({4} \odot {0}\right)",
        "NativeBatchNormBackwardBackward0",
        vjp=_bn_backward_vjp,
        tuple_code=_bn_backward_code(True, "[True, True, True]", 0)[: -len("[0]")],
        float_result=True,
        rule_shapes=_bn_rule_shapes,
        float64=_bn_input_grad_float64,
        batch=_channel_batched("batch_norm_affine_backward", False),
    )
)
for _name, _position, _latex, _vjp in (
    (
        "batch_norm_weight_grad",
        1,
        r"\sum_{{{dims}}} {0} \odot \operatorname{{BN}}\left({1}\right)",
        _bn_weight_grad_vjp,
    ),
    ("batch_norm_bias_grad", 2, r"\sum_{{{dims}}} {0}", _bn_bias_grad_vjp),
):
    register(
        Op(
            _name,
            lambda g, x, mean, invstd, eps: (x[1],),
            functools.partial(_bn_parameter_grad_meaning, which=_position),
            functools.partial(_torch_parameter_grad, which=_position),
            _PARAMETER_GRAD_CODE[_position],
            _latex,
            "NativeBatchNormBackwardBackward0",
            vjp=_vjp,
            spell=_bn_spelling,
            companion_of=(("batch_norm_affine_backward", _position),),
            float_result=True,
            rule_shapes=_bn_rule_shapes,
            float64=functools.partial(_bn_parameter_grad_float64, which=_position),
            batch=_channel_batched(_name, True),
        )
    )
