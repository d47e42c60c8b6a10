"""Layer normalization as ops that close under differentiation, so that laws read ``LN`` and emitted code runs
torch's ``native_layer_norm`` kernels, forward and backward:

- ``layer_norm(x)``: x̂ = (x − mean) · r over the trailing ``n`` dims, r = 1 / √(var + eps) (var biased), and
  ``layer_norm_affine(x, w, b)``: x̂ · w + b, torch's one kernel with its weight and bias;
- ``layer_norm_mean(x)`` and ``layer_norm_rstd(x)``: the statistics that kernel returns with its result, which
  the backward ops read (emitted code saves them, as autograd does);
- ``layer_norm_backward(g, x, mean, rstd)``: the VJP, B(g) = r · (g − mean(g) − x̂ · mean(g x̂)), symmetric in ``g``;
  ``layer_norm_affine_backward(g, x, mean, rstd, w, b)`` = B(g · w); ``layer_norm_weight_grad`` (Σ g · x̂ over the
  leading dims) and ``layer_norm_bias_grad`` (Σ g): one backward kernel call gives all three.

The VJP of ``layer_norm_backward`` is itself for ``g`` and, for ``x``, a formula in ``layer_norm``,
``layer_norm_backward`` and arithmetic (the module's tests and every proof check it against its entries):
with S = r (⟨h − mean(h), g⟩ − ⟨h, x̂⟩⟨g, x̂⟩ / N), ∇ₓS = −r² x̂ / N · (…) − r / N (⟨g, x̂⟩ B(h) + ⟨h, x̂⟩ B(g)).
The statistics' inputs get no gradient from the backward ops, whose rules differentiate through x.

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> x = sg.tensor([[1.0, 3.0]], name="x")
>>> apply("layer_norm", x, n=1, eps=0.0).tolist()
[[-1.0, 1.0]]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ..core.printers import tuple_text
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from .batched import batch_sizes, repeated


def _rows(a: np.ndarray, n: int) -> np.ndarray:
    """The entries grouped by normalized slice: (groups, N)."""
    return a.reshape(-1, math.prod(a.shape[a.ndim - n :]) if n else 1)


def normalized_entries(row: Any, eps: Any) -> tuple[list, Any]:
    """(x̂ for each entry, and r = 1 / √(var + eps)), for one group of SymPy entries."""
    mean = sympy.Add(*row) / len(row)
    centered = [e - mean for e in row]
    rstd = 1 / sympy.sqrt(sympy.Add(*(c**2 for c in centered)) / len(row) + sympy.sympify(eps))
    return [c * rstd for c in centered], rstd


def _layer_norm_meaning(a: np.ndarray, *weights: np.ndarray, n: int, eps: Any) -> np.ndarray:
    out = np.empty(_rows(a, n).shape, dtype=object)
    for i, row in enumerate(_rows(a, n)):
        out[i] = normalized_entries(row, eps)[0]
    if weights:
        out = out * weights[0].reshape(1, -1) + weights[1].reshape(1, -1)
    return out.reshape(a.shape)


def backward_entries(grad: Any, row: Any, eps: Any) -> list:
    """r · (g − mean(g) − x̂ · mean(g x̂)) for one group of SymPy entries: the VJP of its normalization."""
    normal, rstd = normalized_entries(list(row), eps)
    mean_g = sympy.Add(*grad) / len(row)
    mean_gx = sympy.Add(*(a * b for a, b in zip(grad, normal))) / len(row)
    return [rstd * (a - mean_g - b * mean_gx) for a, b in zip(grad, normal)]


def _layer_norm_backward_meaning(g: np.ndarray, x: np.ndarray, *rest: np.ndarray, n: int, eps: Any) -> np.ndarray:
    out = np.empty(_rows(x, n).shape, dtype=object)
    grads = _rows(g, n) if len(rest) < 3 else _rows(g, n) * rest[2].reshape(1, -1)
    for i, (grad, row) in enumerate(zip(grads, _rows(x, n))):
        out[i] = backward_entries(grad, row, eps)
    return out.reshape(x.shape)


def _statistic_meaning(x: np.ndarray, *, n: int, eps: Any, which: int) -> np.ndarray:
    out = []
    for row in _rows(x, n):
        row = list(row)
        out.append(sympy.Add(*row) / len(row) if which == 1 else normalized_entries(row, eps)[1])
    return np.array(out, dtype=object).reshape(_statistic_shape(x.shape, n=n, eps=eps))


def _statistic_shape(x: tuple, *, n: int, eps: Any) -> tuple:
    """The shape of native_layer_norm's mean and 1/std: x's leading dims, then 1s."""
    return (*x[: len(x) - n], *(1 for _ in range(n)))


def _parameter_grad_meaning(g: np.ndarray, x: np.ndarray, *stats: np.ndarray, n: int, eps: Any, which: int):
    grads = _rows(g, n)
    if which == 1:
        grads = grads * _rows(_layer_norm_meaning(x, n=n, eps=eps), n)
    return np.array([sympy.Add(*column) for column in grads.T], dtype=object).reshape(x.shape[x.ndim - n :])


def _parameter_grad_float64(g: np.ndarray, x: np.ndarray, *stats: np.ndarray, n: int, eps: float, which: int):
    grads = _rows(g, n).astype(float)
    if which == 1:
        grads = grads * _rows(_layer_norm_float64(x, n=n, eps=eps), n)
    return grads.sum(axis=0).reshape(x.shape[x.ndim - n :])


def row_statistics64(rows: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """(the means, 1 / √(var + eps)) of the rows of a (groups, N) float64 array, as torch computes them."""
    mean = rows.mean(axis=1, keepdims=True)
    return mean, 1 / np.sqrt(((rows - mean) ** 2).mean(axis=1, keepdims=True) + float(eps))


def backward_rows64(grad: np.ndarray, rows: np.ndarray, eps: float) -> np.ndarray:
    """:func:`backward_entries` of each row, in float64."""
    mean, rstd = row_statistics64(rows, eps)
    normal = (rows - mean) * rstd
    mean_g, mean_gx = grad.mean(axis=1, keepdims=True), (grad * normal).mean(axis=1, keepdims=True)
    return rstd * (grad - mean_g - normal * mean_gx)


def _statistics(x: np.ndarray, n: int, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, their means, 1 / √(var + eps)) in float64, as torch computes them."""
    rows = _rows(x, n)
    return (rows, *row_statistics64(rows, eps))


def _layer_norm_float64(a: np.ndarray, *weights: np.ndarray, n: int, eps: float) -> np.ndarray:
    rows, mean, rstd = _statistics(a, n, float(eps))
    out = (rows - mean) * rstd
    if weights:
        out = out * weights[0].reshape(1, -1) + weights[1].reshape(1, -1)
    return out.reshape(a.shape)


def _layer_norm_backward_float64(g: np.ndarray, x: np.ndarray, *rest: np.ndarray, n: int, eps: float) -> np.ndarray:
    grad = _rows(g, n)
    if len(rest) == 4:
        grad = grad * rest[2].reshape(1, -1)
    return backward_rows64(grad, _rows(x, n), eps).reshape(x.shape)


def _dims(x: Tensor, n: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - n, x.ndim))


def _count(x: Tensor, n: int) -> Any:
    return math.prod(x.shape[d] for d in _dims(x, n)) if n else 1


def layer_norm_statistics(x: Tensor, n: int, eps: Any) -> tuple[Tensor, Tensor]:
    """(the mean, 1 / √(var + eps)) of each normalized slice, as torch's native_layer_norm returns them."""
    return apply("layer_norm_mean", x, n=n, eps=eps), apply("layer_norm_rstd", x, n=n, eps=eps)


def layer_norm_backward(g: Tensor, x: Tensor, n: int, eps: Any) -> Tensor:
    """The VJP of ``layer_norm(x)`` for the cotangent ``g``."""
    return apply("layer_norm_backward", g, x, *layer_norm_statistics(x, n, eps), n=n, eps=eps)


def _vjp(g: Tensor, out: Tensor, x: Tensor, *weights: Tensor, n: int, eps: Any) -> tuple:
    if not weights:
        return (layer_norm_backward(g, x, n, eps),)
    parts = (g, x, *layer_norm_statistics(x, n, eps))
    return (
        apply("layer_norm_affine_backward", *parts, *weights, n=n, eps=eps),
        apply("layer_norm_weight_grad", *parts, n=n, eps=eps),
        apply("layer_norm_bias_grad", *parts, n=n, eps=eps),
    )


def second_vjp_in_x(
    h: Tensor, g: Tensor, normal: Tensor, rstd: Tensor, dims: tuple, count: Any, backward: Callable[[Tensor], Tensor]
) -> Tensor:
    """The VJP in x of a normalization's backward B(g) for the cotangent ``h`` (see the module docstring), over
    the ``dims`` it normalizes (``count`` entries each): ``normal`` is x̂, ``rstd`` r shaped to broadcast against
    x, and ``backward(c)`` is B(c)."""

    def inner(a: Tensor, b: Tensor) -> Tensor:
        return (a * b).sum(dim=dims, keepdim=True)

    hx, gx = inner(h, normal), inner(g, normal)
    centered = inner(h - h.mean(dim=dims, keepdim=True), g)
    return -(rstd * rstd * normal / count) * (centered - hx * gx / count) - (rstd / count) * (
        gx * backward(h) + hx * backward(g)
    )


def _second_x(h: Tensor, g: Tensor, x: Tensor, n: int, eps: Any) -> Tensor:
    """The VJP in x of ``layer_norm_backward(g, x)`` for the cotangent ``h``."""
    normal = apply("layer_norm", x, n=n, eps=eps)
    rstd = layer_norm_statistics(x, n, eps)[1]
    return second_vjp_in_x(h, g, normal, rstd, _dims(x, n), _count(x, n), lambda c: layer_norm_backward(c, x, n, eps))


def _backward_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, *wb, n: int, eps: Any):
    backward_h = layer_norm_backward(h, x, n, eps)
    if not wb:
        return backward_h, _second_x(h, g, x, n, eps), None, None
    w = wb[0]
    return backward_h * w, _second_x(h, g * w, x, n, eps), None, None, _lead_sum(g * backward_h, n), None


def _lead_sum(t: Tensor, n: int) -> Tensor:
    """``t`` summed over its leading dims (all but the trailing ``n``)."""
    lead = tuple(range(t.ndim - n))
    return t.sum(dim=lead) if lead else t


def _weight_grad_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, *, n: int, eps: Any):
    normal = apply("layer_norm", x, n=n, eps=eps)
    return normal * h, layer_norm_backward(g * h, x, n, eps), None, None


def _bias_grad_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, *, n: int, eps: Any):
    return h.expand(*g.shape), None, None, None


# The statistics' own derivatives: the backward ops read them as the kernel's saved values and give them no
# gradient (their rules differentiate through x), so these hold for a proof's rule check, not for emitted code
_statistic_vjp = {
    1: lambda g, out, x, n, eps: ((g / _count(x, n)).expand(*x.shape),),
    2: lambda g, out, x, n, eps: (-(g * out * out) * apply("layer_norm", x, n=n, eps=eps) / _count(x, n),),
}


def _repeated_all(inputs: list, flags: list, nb: int) -> list:
    sizes = batch_sizes(inputs, flags, nb)
    return [t if f else repeated(t, sizes) for t, f in zip(inputs, flags)]


def _backward_batch(inputs: list, flags: list, nb: int, *, n: int, eps: Any) -> Tensor:
    """Batch dims in front of any input: the others repeat along them (the op reads them side by side)."""
    return apply("layer_norm_backward", *_repeated_all(inputs, flags, nb), n=n, eps=eps)


def _lifted(p: Tensor, nb: int, lead: int) -> Tensor:
    """A stack of parameters (nb batch dims, then the normalized shape) broadcast against the batched input."""
    return p.reshape(*p.shape[:nb], *(1 for _ in range(lead)), *p.shape[nb:])


def _affine_batch(inputs: list, flags: list, nb: int, *, n: int, eps: Any) -> Tensor:
    x, w, b = inputs
    if not flags[1] and not flags[2]:  # the parameters broadcast along any leading dims
        return apply("layer_norm_affine", x, w, b, n=n, eps=eps)
    x = _repeated_all(inputs, flags, nb)[0]
    lead = x.ndim - nb - n
    w, b = (_lifted(p, nb, lead) if f else p for p, f in zip((w, b), flags[1:]))
    return apply("layer_norm", x, n=n, eps=eps) * w + b


def _affine_backward_batch(inputs: list, flags: list, nb: int, *, n: int, eps: Any) -> Tensor:
    if not flags[4] and not flags[5]:
        g, x, mean, rstd = _repeated_all(inputs[:4], flags[:4], nb)
        return apply("layer_norm_affine_backward", g, x, mean, rstd, *inputs[4:], n=n, eps=eps)
    g, x, mean, rstd, w, _ = _repeated_all(inputs, flags, nb)
    return apply("layer_norm_backward", g * _lifted(w, nb, x.ndim - nb - n), x, mean, rstd, n=n, eps=eps)


def _parameter_grad_batch(which: int):
    def rule(inputs: list, flags: list, nb: int, *, n: int, eps: Any) -> Tensor:
        g, x, _, _ = _repeated_all(inputs, flags, nb)
        value = g * apply("layer_norm", x, n=n, eps=eps) if which == 1 else g
        lead = tuple(range(nb, x.ndim - n))
        return value.sum(dim=lead) if lead else value

    return rule


def _spelling(position: int):
    """Template fields: the normalized shape, and the sum over the leading dims of the input at ``position``."""

    def spell(attrs: dict, inputs: tuple) -> dict:
        x = inputs[position]
        lead = tuple(range(x.ndim - attrs["n"]))
        return {
            "normalized": tuple_text([str(d) for d in x.shape[x.ndim - attrs["n"] :]]),
            "lead_sum": f".sum(dim={lead[0] if len(lead) == 1 else lead})" if lead else "",
        }

    return spell


def _native_backward(torch: Any, g, x, mean, rstd, w=None, b=None, *, n: int, eps: Any, mask=(True, False, False)):
    shape = tuple(x.shape[x.dim() - n :])
    return torch.ops.aten.native_layer_norm_backward(
        g, x, shape, mean.contiguous(), rstd.contiguous(), w, b, list(mask)
    )


def _torch_parameter_grad(torch: Any, g: Any, x: Any, mean: Any, rstd: Any, *, n: int, eps: Any, which: int) -> Any:
    lead = tuple(range(x.dim() - n))
    value = g if which == 2 else g * torch.nn.functional.layer_norm(x, tuple(x.shape[x.dim() - n :]), eps=eps)
    return value.sum(lead) if lead else value


# the kernel reads the statistics as contiguous memory whatever their strides (a Hessian's batch expands them)
_NATIVE_BACKWARD = (
    "torch.ops.aten.native_layer_norm_backward({0}, {1}, {normalized}, {2}.contiguous(), {3}.contiguous(), "
)

register(
    Op(
        "layer_norm",
        lambda a, *, n, eps: a,
        _layer_norm_meaning,
        lambda torch, a, *, n, eps: torch.nn.functional.layer_norm(a, tuple(a.shape[a.dim() - n :]), eps=eps),
        "torch.nn.functional.layer_norm({0}, {normalized}, eps={eps})",
        r"\operatorname{{LN}}\left({0}\right)",
        "NativeLayerNormBackward0",
        vjp=_vjp,
        spell=_spelling(0),
        tuple_code="torch.ops.aten.native_layer_norm({0}, {normalized}, None, None, {eps})",
        float_result=True,
        float64=_layer_norm_float64,
        batch="trailing",
    )
)
register(
    Op(
        "layer_norm_affine",
        lambda a, w, b, *, n, eps: a,
        _layer_norm_meaning,
        lambda torch, a, w, b, *, n, eps: torch.nn.functional.layer_norm(a, tuple(w.shape), w, b, eps=eps),
        "torch.nn.functional.layer_norm({0}, {normalized}, {1}, {2}, eps={eps})",
        r"\operatorname{{LN}}_{{{1}, {2}}}\left({0}\right)",
        "NativeLayerNormBackward0",
        vjp=_vjp,
        spell=_spelling(0),
        tuple_code="torch.ops.aten.native_layer_norm({0}, {normalized}, {1}, {2}, {eps})",
        tags=frozenset({"input_dtype"}),
        float_result=True,
        float64=_layer_norm_float64,
        batch=_affine_batch,
    )
)
for _name, _position, _latex in (("layer_norm_mean", 1, r"\mu"), ("layer_norm_rstd", 2, r"\sigma^{{-1}}")):
    register(
        Op(
            _name,
            _statistic_shape,
            functools.partial(_statistic_meaning, which=_position),
            lambda torch, x, *, n, eps, _p=_position: torch.ops.aten.native_layer_norm(
                x, tuple(x.shape[x.dim() - n :]), None, None, eps
            )[_p],
            f"torch.ops.aten.native_layer_norm({{0}}, {{normalized}}, None, None, {{eps}})[{_position}]",
            _latex + r"\left({0}\right)",
            "none",
            vjp=_statistic_vjp[_position],
            spell=_spelling(0),
            companion_of=(("layer_norm", _position), ("layer_norm_affine", _position)),
            float_result=True,
            batch="trailing",
        )
    )
register(
    Op(
        "layer_norm_backward",
        lambda g, x, mean, rstd, *, n, eps: x,
        _layer_norm_backward_meaning,
        lambda torch, g, x, mean, rstd, *, n, eps: _native_backward(torch, g, x, mean, rstd, n=n, eps=eps)[0],
        _NATIVE_BACKWARD + "None, None, [True, False, False])[0]",
        r"\operatorname{{LN}}'_{{{1}}}\left({0}\right)",
        "NativeLayerNormBackwardBackward0",
        vjp=_backward_vjp,
        spell=_spelling(1),
        float_result=True,
        float64=_layer_norm_backward_float64,
        batch=_backward_batch,
    )
)
register(
    Op(
        "layer_norm_affine_backward",
        lambda g, x, mean, rstd, w, b, *, n, eps: x,
        _layer_norm_backward_meaning,
        lambda torch, g, x, mean, rstd, w, b, *, n, eps: _native_backward(torch, g, x, mean, rstd, w, b, n=n, eps=eps)[
            0
        ],
        _NATIVE_BACKWARD + "{4}, {5}, [True, False, False])[0]",
        r"\operatorname{{LN}}'_{{{1}}}\left({4} \odot {0}\right)",
        "NativeLayerNormBackwardBackward0",
        vjp=_backward_vjp,
        spell=_spelling(1),
        tuple_code=_NATIVE_BACKWARD + "{4}, {5}, [True, True, True])",
        tags=frozenset({"input_dtype"}),
        float_result=True,
        float64=_layer_norm_backward_float64,
        batch=_affine_backward_batch,
    )
)
for _name, _position, _code, _latex, _rule in (
    (
        "layer_norm_weight_grad",
        1,
        "({0} * torch.nn.functional.layer_norm({1}, {normalized}, eps={eps})){lead_sum}",
        r"\sum {0} \odot \operatorname{{LN}}\left({1}\right)",
        _weight_grad_vjp,
    ),
    ("layer_norm_bias_grad", 2, "{0}{lead_sum}", r"\sum {0}", _bias_grad_vjp),
):
    register(
        Op(
            _name,
            lambda g, x, mean, rstd, *, n, eps: tuple(x[len(x) - n :]),
            functools.partial(_parameter_grad_meaning, which=_position),
            functools.partial(_torch_parameter_grad, which=_position),
            # alone (the input gets no gradient), written out: the saved statistics are constants to torch's
            # autograd, so the normalized input is computed again from x
            _code,
            _latex,
            "NativeLayerNormBackwardBackward0",
            vjp=_rule,
            spell=_spelling(1),
            companion_of=(("layer_norm_affine_backward", _position),),
            float_result=True,
            float64=functools.partial(_parameter_grad_float64, which=_position),
            batch=_parameter_grad_batch(_position),
        )
    )
