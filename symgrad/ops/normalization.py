"""Layer normalization as two ops that close under differentiation, so that laws read ``LN`` and emitted code runs
torch's ``native_layer_norm`` kernels, forward and backward:

- ``layer_norm(x)``: x̂ = (x − mean) · r over the trailing ``n`` dims, r = 1 / √(var + eps) (var biased); the
  affine weight and bias stay products and sums of their own;
- ``layer_norm_backward(g, x)``: its VJP, r · (g − mean(g) − x̂ · mean(g x̂)), which is symmetric in ``g``.

The VJP of ``layer_norm_backward`` is itself for ``g`` and, for ``x``, a formula in ``layer_norm``,
``layer_norm_backward`` and arithmetic (the module's tests and every proof check it against its entries):
with S = r (⟨h − mean(h), g⟩ − ⟨h, x̂⟩⟨g, x̂⟩ / N), ∇ₓS = −r² x̂ / N · (…) − r / N (⟨g, x̂⟩ B(h) + ⟨h, x̂⟩ B(g)).

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> x = sg.tensor([[1.0, 3.0]], name="x")
>>> apply("layer_norm", x, n=1, eps=0.0).tolist()
[[-1.0, 1.0]]
"""

from __future__ import annotations

import math
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


def _normalized(row: Any, eps: Any) -> tuple[list, Any]:
    """(x̂ for each entry, and r = 1 / √(var + eps)), for one group of SymPy entries."""
    mean = sympy.Add(*row) / len(row)
    centered = [e - mean for e in row]
    rstd = 1 / sympy.sqrt(sympy.Add(*(c**2 for c in centered)) / len(row) + sympy.sympify(eps))
    return [c * rstd for c in centered], rstd


def _layer_norm_meaning(a: np.ndarray, *, n: int, eps: Any) -> np.ndarray:
    out = np.empty(_rows(a, n).shape, dtype=object)
    for i, row in enumerate(_rows(a, n)):
        out[i] = _normalized(row, eps)[0]
    return out.reshape(a.shape)


def _layer_norm_backward_meaning(g: np.ndarray, x: np.ndarray, *, n: int, eps: Any) -> np.ndarray:
    out = np.empty(_rows(x, n).shape, dtype=object)
    for i, (grad, row) in enumerate(zip(_rows(g, n), _rows(x, n))):
        normal, rstd = _normalized(row, eps)
        count = len(row)
        mean_g = sympy.Add(*grad) / count
        mean_gx = sympy.Add(*(a * b for a, b in zip(grad, normal))) / count
        out[i] = [rstd * (a - mean_g - b * mean_gx) for a, b in zip(grad, normal)]
    return out.reshape(x.shape)


def _statistics(x: np.ndarray, n: int, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, their means, 1 / √(var + eps)) in float64, as torch computes them."""
    rows = _rows(x, n)
    mean = rows.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((rows - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    return rows, mean, rstd


def _layer_norm_float64(a: np.ndarray, *, n: int, eps: float) -> np.ndarray:
    rows, mean, rstd = _statistics(a, n, float(eps))
    return ((rows - mean) * rstd).reshape(a.shape)


def _layer_norm_backward_float64(g: np.ndarray, x: np.ndarray, *, n: int, eps: float) -> np.ndarray:
    rows, mean, rstd = _statistics(x, n, float(eps))
    normal, grad = (rows - mean) * rstd, _rows(g, n)
    mean_g, mean_gx = grad.mean(axis=1, keepdims=True), (grad * normal).mean(axis=1, keepdims=True)
    return (rstd * (grad - mean_g - normal * mean_gx)).reshape(x.shape)


def _dims(x: Tensor, n: int) -> tuple[int, ...]:
    return tuple(range(x.ndim - n, x.ndim))


def layer_norm_backward(g: Tensor, x: Tensor, n: int, eps: Any) -> Tensor:
    """The VJP of ``layer_norm(x)`` for the cotangent ``g``."""
    return apply("layer_norm_backward", g, x, n=n, eps=eps)


def _second_vjp(h: Tensor, out: Tensor, g: Tensor, x: Tensor, *, n: int, eps: Any) -> tuple[Tensor, Tensor]:
    """The VJP of ``layer_norm_backward(g, x)`` for the cotangent ``h`` (see the module docstring)."""
    dims = _dims(x, n)
    count = math.prod(x.shape[d] for d in dims) if n else 1

    def inner(a: Tensor, b: Tensor) -> Tensor:
        return (a * b).sum(dim=dims, keepdim=True)

    normal = apply("layer_norm", x, n=n, eps=eps)
    rstd = apply("rsqrt", x.var(dims, correction=0, keepdim=True) + eps)
    hx, gx = inner(h, normal), inner(g, normal)
    centered = inner(h - h.mean(dim=dims, keepdim=True), g)
    grad_x = -(rstd * rstd * normal / count) * (centered - hx * gx / count) - (rstd / count) * (
        gx * layer_norm_backward(h, x, n, eps) + hx * layer_norm_backward(g, x, n, eps)
    )
    return layer_norm_backward(h, x, n, eps), grad_x


def _backward_batch(inputs: list, flags: list, nb: int, *, n: int, eps: Any) -> Tensor:
    """Batch dims in front of either input: the other repeats along them (the op reads them side by side)."""
    sizes = batch_sizes(inputs, flags, nb)
    g, x = (t if f else repeated(t, sizes) for t, f in zip(inputs, flags))
    return layer_norm_backward(g, x, n, eps)


def _normalized_shape(attrs: dict, inputs: tuple) -> dict:
    x = inputs[-1]
    return {"normalized": tuple_text([str(d) for d in x.shape[x.ndim - attrs["n"] :]])}


register(
    Op(
        "layer_norm",
        lambda a, *, n, eps: a,
        _layer_norm_meaning,
        lambda torch, a, *, n, eps: torch.nn.functional.layer_norm(a, tuple(a.shape[a.dim() - n :]), eps=eps),
        "torch.nn.functional.layer_norm({0}, {normalized}, eps={eps})",
        r"\operatorname{{LN}}\left({0}\right)",
        "NativeLayerNormBackward0",
        vjp=lambda g, out, a, *, n, eps: (layer_norm_backward(g, a, n, eps),),
        spell=_normalized_shape,
        float_result=True,
        float64=_layer_norm_float64,
        batch="trailing",
    )
)

register(
    Op(
        "layer_norm_backward",
        lambda g, x, *, n, eps: x,
        _layer_norm_backward_meaning,
        lambda torch, g, x, *, n, eps: torch.ops.aten.native_layer_norm_backward(
            g,
            x,
            tuple(x.shape[x.dim() - n :]),
            *torch.ops.aten.native_layer_norm(x, tuple(x.shape[x.dim() - n :]), None, None, eps)[1:],
            None,
            None,
            [True, False, False],
        )[0],
        "torch.ops.aten.native_layer_norm_backward({0}, {1}, {normalized}, *torch.ops.aten.native_layer_norm({1}, "
        "{normalized}, None, None, {eps})[1:], None, None, [True, False, False])[0]",
        r"\operatorname{{LN}}'_{{{1}}}\left({0}\right)",
        "NativeLayerNormBackwardBackward0",
        vjp=_second_vjp,
        spell=_normalized_shape,
        float_result=True,
        float64=_layer_norm_backward_float64,
        batch=_backward_batch,
    )
)
