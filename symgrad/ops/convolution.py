"""Convolutions as three ops that close under differentiation, the way torch's ``convolution_backward`` does:

- ``convolution(x, w)``: torch's cross-correlation, ``y[n, o, l] = Σ_c,k w[o, c, k] · x_pad[n, g·C/groups + c,
  l·stride + k·dilation]``;
- ``convolution_input_grad(g, w)``: its adjoint in ``x`` (torch's ``conv_transpose``), the input's gradient;
- ``convolution_weight_grad(x, g)``: the kernel's gradient, ``Σ_n,l g[n, o, l] · x_pad[n, c, l·stride + k·dilation]``.

Each is linear in each input, and the gradients of each are the other two, so laws print as ``conv_transpose2d``
of the gradient (never as the unrolled pieces) and emitted code runs torch's kernels. Attributes: ``stride``,
``padding`` and ``dilation`` are tuples (one entry per spatial dim, symmetric zero padding), ``groups`` an int;
the gradients also carry the spatial size they give back (``size``).

>>> import symgrad as sg
>>> from symgrad.core.tensor import apply
>>> x = sg.tensor([[[1.0, 2.0, 3.0]]], name="x")
>>> w = sg.tensor([[[1.0, -1.0]]], name="w")
>>> y = apply("convolution", x, w, stride=(1,), padding=(0,), dilation=(1,), groups=1)
>>> y.tolist()
[[[-1.0, -1.0]]]
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from ..core.arrays import add_last, products
from ..core.dims import format_shape, is_concrete
from ..core.dtypes import scalar_type_message
from ..core.errors import TorchRuntimeError, UnsupportedError
from ..core.registry import Op, register
from ..core.tensor import Tensor, apply
from .batched import batch_sizes


def _out_size(size: Any, k: int, stride: int, padding: int, dilation: int) -> Any:
    return (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1


def _conv_shape(x: tuple, w: tuple, *, stride, padding, dilation, groups) -> tuple:
    if len(x) != len(w) or len(x) < 3:
        raise TorchRuntimeError(f"convolution of an input of {len(x)} dims with a weight of {len(w)} dims")
    return (x[0], w[0], *(_out_size(s, k, *a) for s, k, *a in zip(x[2:], w[2:], stride, padding, dilation)))


def _windows(out: tuple, kernel_index: tuple, stride: tuple, dilation: tuple) -> tuple:
    """The slices of the padded input that kernel offset ``kernel_index`` meets over the output positions."""
    return tuple(slice(d * k, d * k + s * (o - 1) + 1, s) for o, k, s, d in zip(out, kernel_index, stride, dilation))


def _group(g: int, per: int) -> slice:
    """The channels of group ``g`` (``per`` of them)."""
    return slice(g * per, (g + 1) * per)


def _padded(x: np.ndarray, padding: tuple) -> np.ndarray:
    return np.pad(x, [(0, 0), (0, 0), *((p, p) for p in padding)], constant_values=0)


def _zeros(shape: tuple, like: np.ndarray) -> np.ndarray:
    return np.zeros(shape, dtype=like.dtype) if like.dtype != object else np.full(shape, 0, dtype=object)


def _convolution(x: np.ndarray, w: np.ndarray, *, stride, padding, dilation, groups) -> np.ndarray:
    """The convolution on arrays (SymPy entries or float64 numbers)."""
    shape = _conv_shape(x.shape, w.shape, stride=stride, padding=padding, dilation=dilation, groups=groups)
    xp, out = _padded(x, padding), _zeros(shape, x if x.dtype == object else w)
    per_in, per_out = w.shape[1], w.shape[0] // groups
    for g in range(groups):
        terms = []  # SymPy entries: each kernel offset's products, summed once at the end
        for kernel_index in itertools.product(*map(range, w.shape[2:])):
            window = xp[
                (slice(None), slice(g * per_in, (g + 1) * per_in), *_windows(shape[2:], kernel_index, stride, dilation))
            ]
            taps = w[(slice(g * per_out, (g + 1) * per_out), slice(None), *kernel_index)]
            if out.dtype == object:
                terms.append(np.moveaxis(products(window, taps, ([1], [1])), -2, 1))
            else:
                out[:, g * per_out : (g + 1) * per_out] += np.moveaxis(
                    np.tensordot(window, taps, axes=([1], [1])), -1, 1
                )
        if terms:
            out[:, g * per_out : (g + 1) * per_out] = add_last(np.concatenate(terms, axis=-1))
    return out


def _input_grad(gy: np.ndarray, w: np.ndarray, *, size, stride, padding, dilation, groups) -> np.ndarray:
    """The adjoint of the convolution in its input: each output's gradient spread back over its window."""
    per_in, per_out = w.shape[1], w.shape[0] // groups
    padded = (gy.shape[0], per_in * groups, *(s + 2 * p for s, p in zip(size, padding)))
    offsets = list(itertools.product(*map(range, w.shape[2:])))
    symbolic = gy.dtype == object or w.dtype == object
    # SymPy entries: each kernel offset's products in a slot of their own along a last axis, summed once
    gxp = _zeros((*padded, len(offsets) * per_out) if symbolic else padded, gy if gy.dtype == object else w)
    for g, (k, kernel_index) in itertools.product(range(groups), enumerate(offsets)):
        taps = w[(slice(g * per_out, (g + 1) * per_out), slice(None), *kernel_index)]
        where = (
            slice(None),
            slice(g * per_in, (g + 1) * per_in),
            *_windows(gy.shape[2:], kernel_index, stride, dilation),
        )
        part = gy[:, g * per_out : (g + 1) * per_out]
        if symbolic:
            gxp[(*where, slice(k * per_out, (k + 1) * per_out))] = np.moveaxis(products(part, taps, ([1], [0])), -2, 1)
        else:
            gxp[where] += np.moveaxis(np.tensordot(part, taps, axes=([1], [0])), -1, 1)
    inside = gxp[(slice(None), slice(None), *(slice(p, p + s) for s, p in zip(size, padding)))]
    return add_last(inside) if symbolic else inside


def _weight_grad(x: np.ndarray, gy: np.ndarray, *, size, stride, padding, dilation, groups) -> np.ndarray:
    """The kernel's gradient: each kernel offset's window of the input against the output's gradient."""
    per_in, per_out = x.shape[1] // groups, gy.shape[1] // groups
    xp = _padded(x, padding)
    gw = _zeros((gy.shape[1], per_in, *size), x if x.dtype == object else gy)
    spatial = list(range(2, gy.ndim))
    for g, kernel_index in itertools.product(range(groups), itertools.product(*map(range, size))):
        window = xp[
            (slice(None), slice(g * per_in, (g + 1) * per_in), *_windows(gy.shape[2:], kernel_index, stride, dilation))
        ]
        part = gy[:, g * per_out : (g + 1) * per_out]
        axes = ([0, *spatial], [0, *spatial])
        gw[(slice(g * per_out, (g + 1) * per_out), slice(None), *kernel_index)] = (
            add_last(products(part, window, axes)) if gw.dtype == object else np.tensordot(part, window, axes=axes)
        )
    return gw


def _output_padding(size: tuple, out: tuple, kernel: tuple, stride, padding, dilation) -> tuple:
    """What conv_transpose adds after its output to give back ``size`` (the rows a stride skipped)."""
    return tuple(
        s - ((o - 1) * st - 2 * p + d * (k - 1) + 1)
        for s, o, k, st, p, d in zip(size, out, kernel, stride, padding, dilation)
    )


def _n(attrs: dict) -> int:
    return len(attrs["stride"])


def _options(attrs: dict, names: tuple[str, ...]) -> str:
    """The keyword arguments that differ from torch's defaults (stride 1, no padding, dilation 1, one group)."""
    defaults = {"stride": 1, "padding": 0, "output_padding": 0, "dilation": 1, "groups": 1}
    shown = []
    for name in names:
        value = attrs[name]
        if value != defaults[name] and (not isinstance(value, tuple) or set(value) != {defaults[name]}):
            shown.append(f", {name}={value}")
    return "".join(shown)


def _conv_spelling(attrs: dict, inputs: tuple) -> dict:
    return {"n": _n(attrs), "options": _options(attrs, ("stride", "padding", "dilation", "groups"))}


def _input_grad_spelling(attrs: dict, inputs: tuple) -> dict:
    g, w = inputs
    geometry = (attrs["stride"], attrs["padding"], attrs["dilation"])
    extra = _output_padding(attrs["size"], g.shape[2:], w.shape[2:], *geometry)
    names = ("stride", "padding", "output_padding", "groups", "dilation")
    return {"n": _n(attrs), "options": _options({**attrs, "output_padding": extra}, names)}


def _weight_grad_spelling(attrs: dict, inputs: tuple) -> dict:
    x, g = inputs
    return {
        "n": _n(attrs),
        "weight_shape": (g.shape[1], x.shape[1] // attrs["groups"], *attrs["size"]),
        "options": _options(attrs, ("stride", "padding", "dilation", "groups")),
    }


def _geometry(attrs: dict) -> dict:
    return {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}


def convolution_input_grad(g: Tensor, w: Tensor, size: tuple, **geometry: Any) -> Tensor:
    """The input's gradient of a convolution (``size``: the input's spatial size)."""
    return apply("convolution_input_grad", g, w, size=tuple(size), **geometry)


def convolution_weight_grad(x: Tensor, g: Tensor, size: tuple, **geometry: Any) -> Tensor:
    """The kernel's gradient of a convolution (``size``: the kernel's spatial size)."""
    return apply("convolution_weight_grad", x, g, size=tuple(size), **geometry)


def _cropped(t: Tensor, shape: tuple) -> Tensor:
    """``t`` cut to ``shape`` in its spatial dims: a transposed convolution's output_padding adds rows after its
    output that no input entry reaches, and the convolution back from them gives an entry too many there."""
    if tuple(t.shape[2:]) == tuple(shape[2:]):
        return t
    return apply("index", t, index=(slice(None), slice(None), *(slice(0, d) for d in shape[2:])), via="index")


def _torch_input_grad(torch, g, w, *, size, stride, padding, dilation, groups):
    extra = _output_padding(size, tuple(g.shape[2:]), tuple(w.shape[2:]), stride, padding, dilation)
    transpose = getattr(torch.nn.functional, f"conv_transpose{len(stride)}d")
    return transpose(g, w, None, stride, padding, extra, groups, dilation)


def _torch_weight_grad(torch, x, g, *, size, stride, padding, dilation, groups):
    weight_grad = getattr(torch.nn.grad, f"conv{len(stride)}d_weight")
    shape = (g.shape[1], x.shape[1] // groups, *size)
    return weight_grad(x, shape, g, stride, padding, dilation, groups)


def _batched(name: str, folds: bool):
    """The ``batch`` rule of a convolution op (see :mod:`symgrad.derive.batching`): extra leading dims on the
    operand that carries the convolution's own batch are folded into it (``folds``: the op does not sum over that
    batch); any other batched operand is taken one batch entry at a time, at concrete batch sizes."""

    def rule(inputs: list, flags: list, nb: int, **attrs: Any) -> Tensor:
        sizes = batch_sizes(inputs, flags, nb)
        if folds and flags == [True, False]:
            first = inputs[0]
            folded = first.reshape(math.prod(sizes) * first.shape[nb], *first.shape[nb + 1 :])
            out = apply(name, folded, inputs[1], **attrs)
            return out.reshape(*sizes, first.shape[nb], *out.shape[1:])
        if not is_concrete(sizes):
            raise UnsupportedError(f"{name} of a batch of symbolic size {format_shape(sizes)} has no tensor law yet")
        entries = [
            apply(name, *(t[index] if f else t for t, f in zip(inputs, flags)), **attrs).unsqueeze(0)
            for index in itertools.product(*map(range, sizes))
        ]
        out = entries[0] if len(entries) == 1 else apply("cat", *entries, dim=0)
        return out.reshape(*sizes, *out.shape[1:])

    return rule


def _cost(a: tuple, b: tuple, **attrs: Any) -> int:
    sizes = [d for d in (*a, *b) if isinstance(d, int)]
    return math.prod(sizes) if sizes else 1


register(
    Op(
        "convolution",
        _conv_shape,
        _convolution,
        lambda torch, x, w, stride, padding, dilation, groups: torch.convolution(
            x, w, None, stride, padding, dilation, False, [0] * len(stride), groups
        ),
        "torch.nn.functional.conv{n}d({0}, {1}{options})",
        r"\operatorname{{conv{n}d}}\left({0}, {1}\right)",
        "ConvolutionBackward0",
        vjp=lambda g, out, x, w, **attrs: (
            convolution_input_grad(g, w, x.shape[2:], **_geometry(attrs)),
            convolution_weight_grad(x, g, w.shape[2:], **_geometry(attrs)),
        ),
        tags=frozenset({"bilinear", "one_dtype"}),
        mixed_dtypes=lambda x, w, **attrs: scalar_type_message(x, w),
        spell=_conv_spelling,
        float64=_convolution,
        batch=_batched("convolution", folds=True),
        cost=_cost,
    )
)

register(
    Op(
        "convolution_input_grad",
        lambda g, w, *, size, **_: (g[0], w[1] * _["groups"], *size),
        _input_grad,
        _torch_input_grad,
        "torch.nn.functional.conv_transpose{n}d({0}, {1}{options})",
        r"\operatorname{{conv\_transpose{n}d}}\left({0}, {1}\right)",
        "ConvolutionBackward0",
        vjp=lambda h, out, g, w, size, **attrs: (
            _cropped(apply("convolution", h, w, **_geometry(attrs)), g.shape),
            convolution_weight_grad(h, g, w.shape[2:], **_geometry(attrs)),
        ),
        tags=frozenset({"bilinear", "one_dtype"}),
        spell=_input_grad_spelling,
        float64=_input_grad,
        batch=_batched("convolution_input_grad", folds=True),
        cost=_cost,
    )
)

register(
    Op(
        "convolution_weight_grad",
        lambda x, g, *, size, groups, **_: (g[1], x[1] // groups, *size),
        _weight_grad,
        _torch_weight_grad,
        "torch.nn.grad.conv{n}d_weight({0}, {weight_shape}, {1}{options})",
        r"\operatorname{{conv{n}d\_weight}}\left({0}, {1}\right)",
        "ConvolutionBackward0",
        vjp=lambda h, out, x, g, size, **attrs: (
            convolution_input_grad(g, h, x.shape[2:], **_geometry(attrs)),
            apply("convolution", x, h, **_geometry(attrs)),
        ),
        tags=frozenset({"bilinear", "one_dtype"}),
        spell=_weight_grad_spelling,
        float64=_weight_grad,
        batch=_batched("convolution_weight_grad", folds=False),
        cost=_cost,
    )
)
