"""Reductions and ops along one dimension: sums, means, maxima, norms, variance, softmax, cumsum.

>>> import symgrad as sg
>>> x = sg.tensor([[1.0, 2.0], [3.0, 5.0]], name="x")
>>> x.sum(dim=1).tolist(), x.amax().tolist()
([3.0, 8.0], 5.0)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import sympy

from ..core.arrays import elementwise, object_array, reduce_sum
from ..core.dims import Shape
from ..core.registry import Op, register
from ..core.tensor import apply
from . import functions
from .calculus import count, expand_back


# ── reductions ─────────────────────────────────────────────────────────────
def _reduced_shape(shape: Shape, dim: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if axis in dim else d for axis, d in enumerate(shape))
    return tuple(d for axis, d in enumerate(shape) if axis not in dim)


def _mean(a: np.ndarray, dim: tuple[int, ...], keepdim: bool) -> np.ndarray:
    total = int(np.prod([a.shape[axis] for axis in dim if axis < a.ndim], dtype=int))  # a 0-d tensor has dim 0
    return elementwise(lambda s: s / total, reduce_sum(a, dim, keepdim))


def _reduce(a: np.ndarray, dim: tuple[int, ...], keepdim: bool, combine: Callable) -> np.ndarray:
    """Apply ``combine(list_of_entries)`` over ``dim``."""
    axes = tuple(d for d in dim if d < a.ndim)
    keep = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, keep + list(axes))
    out_shape = tuple(a.shape[d] for d in keep)
    rows = moved.reshape(int(np.prod(out_shape, dtype=int)), -1)
    out = object_array([combine(list(r)) for r in rows], out_shape)
    if keepdim:
        out = out.reshape(tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
    return out


def _slices(a: np.ndarray, dim: int, fn: Callable) -> np.ndarray:
    """Apply ``fn(list) -> list`` along one dim (a 0-d tensor is one slice of one entry, as in torch)."""
    if a.ndim == 0:
        return object_array(fn([a.item()]), ())
    moved = np.moveaxis(a, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    out = object_array([v for r in rows for v in fn(list(r))], moved.shape)
    return np.moveaxis(out, -1, dim)


def _axes(a: np.ndarray, dim: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in dim if d < a.ndim)  # a 0-d tensor can be reduced over dim 0


def _reduction_grad_fn(base: str) -> Callable:
    return lambda inputs, dim, keepdim: (
        f"{base}Backward1" if len(dim) < len(inputs[0].shape) or keepdim else f"{base}Backward0"
    )


register(
    Op(
        "sum",
        _reduced_shape,
        lambda a, dim, keepdim: reduce_sum(a, dim, keepdim),
        lambda torch, a, dim, keepdim: torch.sum(a, dim=list(dim), keepdim=keepdim),
        "{0}.sum({reduce_args})",
        "{sum_before}{0}{sum_after}",
        _reduction_grad_fn("Sum"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim),),
        tags=frozenset({"linear"}),
        float64=lambda a, dim, keepdim: np.sum(a, axis=_axes(a, dim), keepdims=keepdim),
    )
)
register(
    Op(
        "mean",
        _reduced_shape,
        _mean,
        lambda torch, a, dim, keepdim: torch.mean(a, dim=list(dim), keepdim=keepdim),
        "{0}.mean({reduce_args})",
        r"\operatorname{{mean}}_{{{dims_text}}} {0}",
        _reduction_grad_fn("Mean"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim) / count(a.shape, dim),),
        tags=frozenset({"linear"}),
        float_result=True,
        float64=lambda a, dim, keepdim: np.mean(a, axis=_axes(a, dim), keepdims=keepdim),
    )
)
register(
    Op(
        "amax",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: functions.amax(*r)),
        lambda torch, a, dim, keepdim: torch.amax(a, dim=list(dim), keepdim=keepdim),
        "{0}.amax({reduce_args})",
        r"\max_{{{dims_text}}} {0}",
        "AmaxBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_tie_share(g, out, a, dim, keepdim),),
    )
)


def _tie_share(g, out, a, dim, keepdim):
    """Gradient of amax: split evenly among the entries equal to the maximum."""
    ties = apply("where", apply("eq", a, expand_back(out, a.shape, dim, keepdim)), 1, 0)
    return expand_back(g, a.shape, dim, keepdim) * ties / ties.sum(dim=dim, keepdim=True)


register(
    Op(
        "max_dim",
        lambda a, dim, keepdim: _reduced_shape(a, (dim,), keepdim),
        lambda a, dim, keepdim: _reduce(a, (dim,), keepdim, functions.first_max),
        lambda torch, a, dim, keepdim: torch.max(a, dim=dim, keepdim=keepdim).values,
        "{0}.max(dim={dim}, keepdim={keepdim}).values",
        r"\max_{{{dim}}} {0}",
        "MaxBackward0",
        vjp=lambda g, out, a, dim, keepdim: (
            expand_back(g, a.shape, (dim,), keepdim) * apply("first_max_mask", a, dim=dim),
        ),
    )
)
register(
    Op(
        "first_max_mask",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, lambda r: [functions.first_max_indicator(r, i) for i in range(len(r))]),
        lambda torch, a, dim: torch.nn.functional.one_hot(a.argmax(dim), a.shape[dim]).movedim(-1, dim).to(a.dtype),
        "torch.nn.functional.one_hot({0}.argmax({dim}), {0}.shape[{dim}]).movedim(-1, {dim})",
        r"\mathbb{{1}}\left[\operatorname{{argmax}}_{{{dim}}} {0}\right]",
        "none",
        differentiable=False,
        vjp=lambda g, out, a, dim: (None,),
    )
)
register(
    Op(
        "norm",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: functions.norm2(*r)),
        lambda torch, a, dim, keepdim: torch.linalg.vector_norm(a, 2, dim=list(dim), keepdim=keepdim),
        "torch.linalg.vector_norm({0}{reduce_kwargs})",
        r"\left\|{0}\right\|_{{{dims_text}}}",
        "NormBackward1",
        vjp=lambda g, out, a, dim, keepdim: (_norm_vjp(g, out, a, dim, keepdim),),
    )
)


def _norm_vjp(g, out, a, dim, keepdim):
    """x / ‖x‖, and 0 where the norm is 0 (torch's convention)."""
    n = expand_back(out, a.shape, dim, keepdim)
    return expand_back(g, a.shape, dim, keepdim) * apply("where", apply("eq", n, 0), 0, a / n)


def _softmax(values: list) -> list:
    exps = [sympy.exp(v) for v in values]
    total = sympy.Add(*exps)
    return [e / total for e in exps]


def _log_softmax(values: list) -> list:
    lse = sympy.log(sympy.Add(*[sympy.exp(v) for v in values]))
    return [v - lse for v in values]


register(
    Op(
        "softmax",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _softmax),
        lambda torch, a, dim: torch.softmax(a, dim=dim),
        "torch.softmax({0}, dim={dim})",
        r"\operatorname{{softmax}}\left({0}\right)",
        "SoftmaxBackward0",
        vjp=lambda g, out, a, dim: (out * (g - (g * out).sum(dim=dim, keepdim=True)),),
    )
)
register(
    Op(
        "log_softmax",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _log_softmax),
        lambda torch, a, dim: torch.log_softmax(a, dim=dim),
        "torch.log_softmax({0}, dim={dim})",
        r"\log\operatorname{{softmax}}\left({0}\right)",
        "LogSoftmaxBackward0",
        vjp=lambda g, out, a, dim: (g - apply("softmax", a, dim=dim) * g.sum(dim=dim, keepdim=True),),
    )
)
register(
    Op(
        "logsumexp",
        _reduced_shape,
        lambda a, dim, keepdim: _reduce(a, dim, keepdim, lambda r: sympy.log(sympy.Add(*[sympy.exp(v) for v in r]))),
        lambda torch, a, dim, keepdim: torch.logsumexp(a, dim=list(dim), keepdim=keepdim),
        "torch.logsumexp({0}{reduce_kwargs})",
        r"\operatorname{{logsumexp}}_{{{dims_text}}} {0}",
        "LogsumexpBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_logsumexp_vjp(g, out, a, dim, keepdim),),
        spell=lambda attrs, inputs: _logsumexp_spelling(attrs, inputs),
    )
)


def _logsumexp_spelling(attrs: dict, inputs: tuple) -> dict:
    """torch.logsumexp has no default dim: it is always written out, even over every dim."""
    dim, keepdim = attrs["dim"], attrs["keepdim"]
    return {"reduce_kwargs": f", dim={dim[0] if len(dim) == 1 else dim}" + (", keepdim=True" if keepdim else "")}


def _logsumexp_vjp(g, out, a, dim: tuple, keepdim: bool):
    """g times the softmax over ``dim`` (written as a softmax when ``dim`` is one dimension)."""
    weights = (
        apply("softmax", a, dim=dim[0]) if len(dim) == 1 else apply("exp", a - expand_back(out, a.shape, dim, keepdim))
    )
    return expand_back(g, a.shape, dim, keepdim) * weights


def _var_grad(g, a, dim: tuple, keepdim: bool, correction):
    """2 (x − mean) / (N − correction), times the incoming gradient spread back over ``dim``."""
    return (
        expand_back(g, a.shape, dim, keepdim)
        * 2
        * (a - a.mean(dim=dim, keepdim=True))
        / divisor(a.shape, dim, correction)
    )


def divisor(shape: tuple, dim: tuple, correction):
    """N − correction, and 0 when the correction is N or more (torch then divides by 0: inf or nan)."""
    n = count(shape, dim)
    if isinstance(n, int):
        return max(n - correction, 0)
    return n - correction


register(
    Op(
        "var",
        lambda a, dim, keepdim, correction: _reduced_shape(a, dim, keepdim),
        lambda a, dim, keepdim, correction: _reduce(a, dim, keepdim, lambda r: functions.variance(r, correction)),
        lambda torch, a, dim, keepdim, correction: torch.var(a, dim=list(dim), correction=correction, keepdim=keepdim),
        "torch.var({0}{reduce_kwargs}, correction={correction})",
        r"\operatorname{{Var}}_{{{dims_text}}} {0}",
        "VarBackward0",
        vjp=lambda g, out, a, dim, keepdim, correction: (_var_grad(g, a, dim, keepdim, correction),),
        float_result=True,
    )
)
register(
    Op(
        "std",
        lambda a, dim, keepdim, correction: _reduced_shape(a, dim, keepdim),
        lambda a, dim, keepdim, correction: _reduce(a, dim, keepdim, lambda r: functions.stdev(correction, *r)),
        lambda torch, a, dim, keepdim, correction: torch.std(a, dim=list(dim), correction=correction, keepdim=keepdim),
        "torch.std({0}{reduce_kwargs}, correction={correction})",
        r"\operatorname{{std}}_{{{dims_text}}} {0}",
        "StdBackward0",
        # torch's std backward: the gradient of the variance, scaled by g / (2 std), and 0 where std is 0
        vjp=lambda g, out, a, dim, keepdim, correction: (
            _var_grad(
                apply("masked_div", g, out * 2),
                a,
                dim,
                keepdim,
                correction,
            ),
        ),
        float_result=True,
    )
)


def _cumsum(values: list) -> list:
    return [sympy.Add(*values[: i + 1]) for i in range(len(values))]


register(
    Op(
        "cumsum",
        lambda a, dim: a,
        lambda a, dim: _slices(a, dim, _cumsum),
        lambda torch, a, dim: torch.cumsum(a, dim=dim),
        "torch.cumsum({0}, dim={dim})",
        r"\operatorname{{cumsum}}_{{{dim}}} {0}",
        "CumsumBackward0",
        saves=False,
        vjp=lambda g, out, a, dim: (apply("cumsum", g.flip(dim), dim=dim).flip(dim),),
        tags=frozenset({"linear"}),
    )
)
