"""Reductions and ops along one dimension: sums, means, maxima, norms, variance, softmax, cumsum.

>>> import symgrad as sg
>>> x = sg.tensor([[1.0, 2.0], [3.0, 5.0]], name="x")
>>> x.sum(dim=1).tolist(), x.amax().tolist()
([3.0, 8.0], 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ..core.arrays import elementwise, groups, object_array, reduce_sum
from ..core.dims import Shape, count
from ..core.registry import Op, register
from ..core.tensor import apply
from . import functions
from .calculus import expand_back


# ── reductions ─────────────────────────────────────────────────────────────
def reduced_shape(shape: Shape, dim: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if axis in dim else d for axis, d in enumerate(shape))
    return tuple(d for axis, d in enumerate(shape) if axis not in dim)


def _mean(a: np.ndarray, dim: tuple[int, ...], keepdim: bool) -> np.ndarray:
    total = int(np.prod([a.shape[axis] for axis in dim if axis < a.ndim], dtype=int))  # a 0-d tensor has dim 0
    return elementwise(lambda s: s / total, reduce_sum(a, dim, keepdim))


def reduced_without_dim(shape: Shape, dim: tuple[int, ...], keepdim: bool) -> bool:
    """Whether a reduction is torch's form without a dim (``x.var()``, ``x.prod()``): every dim reduced and none
    kept, as it is printed, or a 0-d input. Some of torch's backward formulas differ on that path."""
    return not shape or (set(dim) >= set(range(len(shape))) and not keepdim)


def reduce_entries(a: np.ndarray, dim: tuple[int, ...], keepdim: bool, combine: Callable) -> np.ndarray:
    """Apply ``combine(list_of_entries)`` over ``dim``."""
    axes = tuple(d for d in dim if d < a.ndim)
    out_shape = tuple(a.shape[d] for d in range(a.ndim) if d not in axes)
    out = object_array([combine(list(r)) for r in groups(a, axes)], out_shape)
    if keepdim:
        out = out.reshape(tuple(1 if d in axes else a.shape[d] for d in range(a.ndim)))
    return out


def slices_along(a: np.ndarray, dim: int, fn: Callable) -> np.ndarray:
    """Apply ``fn(list) -> list`` along one dim (a 0-d tensor is one slice of one entry, as in torch)."""
    if a.ndim == 0:
        return object_array(fn([a.item()]), ())
    moved = np.moveaxis(a, dim, -1)
    rows = moved.reshape(int(np.prod(moved.shape[:-1], dtype=int)), moved.shape[-1])
    out = object_array([v for r in rows for v in fn(list(r))], moved.shape)
    return np.moveaxis(out, -1, dim)


def present_axes(a: np.ndarray, dim: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in dim if d < a.ndim)  # a 0-d tensor can be reduced over dim 0


def reduction_grad_fn(base: str) -> Callable:
    return lambda inputs, dim, keepdim: (
        f"{base}Backward1" if len(dim) < len(inputs[0].shape) or keepdim else f"{base}Backward0"
    )


def few_entries(*shapes: tuple, **attrs: Any) -> tuple:
    """At most 3 along each fixed dim: where a proof checks the rule of a reduction whose every gradient entry reads
    the whole input (the maximum of all entries, a product), as the work grows with the square of its entries."""
    return tuple(tuple(min(d, 3) if isinstance(d, int) else d for d in shape) for shape in shapes)


register(
    Op(
        "sum",
        reduced_shape,
        lambda a, dim, keepdim: reduce_sum(a, dim, keepdim),
        lambda torch, a, dim, keepdim: torch.sum(a, dim=list(dim), keepdim=keepdim),
        "{0}.sum({reduce_args})",
        "{sum_before}{0}{sum_after}",
        reduction_grad_fn("Sum"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim),),
        tags=frozenset({"linear"}),
        float64=lambda a, dim, keepdim: np.sum(a, axis=present_axes(a, dim), keepdims=keepdim),
        batch="dims",
    )
)
register(
    Op(
        "mean",
        reduced_shape,
        _mean,
        lambda torch, a, dim, keepdim: torch.mean(a, dim=list(dim), keepdim=keepdim),
        "{0}.mean({reduce_args})",
        r"\operatorname{{mean}}_{{{dims_text}}} {0}",
        reduction_grad_fn("Mean"),
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim) / count(a.shape, dim),),
        tags=frozenset({"linear"}),
        float_result=True,
        float64=lambda a, dim, keepdim: _mean_float64(a, present_axes(a, dim), keepdim),
        batch="dims",
    )
)
register(
    Op(
        "welford_mean",  # the mean of torch.var_mean and torch.std_mean, which Welford's updates compute
        reduced_shape,
        _mean,
        lambda torch, a, dim, keepdim: torch.var_mean(a, dim=list(dim), keepdim=keepdim)[1],
        "torch.var_mean({0}{reduce_kwargs})[1]",
        r"\operatorname{{mean}}_{{{dims_text}}} {0}",
        "VarMeanBackward0",
        saves=False,
        vjp=lambda g, out, a, dim, keepdim: (expand_back(g, a.shape, dim, keepdim) / count(a.shape, dim),),
        tags=frozenset({"linear"}),
        float_result=True,
        spell=lambda attrs, inputs: dim_spelled_out(attrs, inputs),
        float64=lambda a, dim, keepdim: _welford_float64(a, present_axes(a, dim), keepdim)[1],
        batch="dims",
    )
)
register(
    Op(
        "amax",
        reduced_shape,
        lambda a, dim, keepdim: reduce_entries(a, dim, keepdim, lambda r: functions.amax(*r)),
        lambda torch, a, dim, keepdim: torch.amax(a, dim=list(dim), keepdim=keepdim),
        "{0}.amax({reduce_args})",
        r"\max_{{{dims_text}}} {0}",
        "AmaxBackward0",
        vjp=lambda g, out, a, dim, keepdim: (_tie_share(g, out, a, dim, keepdim),),
        batch="dims",
        rule_shapes=few_entries,
    )
)


def _evenly_distribute(g, out, a):
    """torch's gradient of ``x.max()``: g shared evenly among the entries equal to the maximum, or among the
    nan entries when the maximum is nan; a select, so a nan or infinite g stays off the other entries."""
    ties = apply("where", apply("eq", a, out), 1, apply("where", apply("isnan", a), 1, 0))
    return apply("where", apply("eq", ties, 1), g / ties.sum(), 0)


def _max_all_batch(inputs: list, flags: list, nb: int) -> Any:
    (a,) = inputs
    return a.amax(dim=tuple(range(nb, a.ndim)))


register(
    Op(
        "max_all",
        lambda a: (),
        lambda a: reduce_entries(a, tuple(range(a.ndim)), False, lambda r: functions.amax(*r)),
        lambda torch, a: torch.max(a),
        "{0}.max()",
        r"\max {0}",
        "MaxBackward1",
        vjp=lambda g, out, a: (_evenly_distribute(g, out, a),),
        float64=lambda a: np.max(a) if a.size else np.array(np.nan),
        batch=_max_all_batch,
        rule_shapes=few_entries,
    )
)


def _tie_share(g, out, a, dim, keepdim):
    """Gradient of amax: split evenly among the entries equal to the maximum."""
    ties = apply("where", apply("eq", a, expand_back(out, a.shape, dim, keepdim)), 1, 0)
    return expand_back(g, a.shape, dim, keepdim) * ties / ties.sum(dim=dim, keepdim=True)


register(
    Op(
        "max_dim",
        lambda a, dim, keepdim: reduced_shape(a, (dim,), keepdim),
        lambda a, dim, keepdim: reduce_entries(a, (dim,), keepdim, functions.first_max),
        lambda torch, a, dim, keepdim: torch.max(a, dim=dim, keepdim=keepdim).values,
        "{0}.max(dim={dim}, keepdim={keepdim}).values",
        r"\max_{{{dim}}} {0}",
        "MaxBackward0",
        # torch scatters g into zeros at the index: a select, so a nan or infinite g stays off the other entries
        vjp=lambda g, out, a, dim, keepdim: (
            apply(
                "where",
                apply("eq", apply("first_max_mask", a, dim=dim), 1),
                expand_back(g, a.shape, (dim,), keepdim),
                0,
            ),
        ),
        float64=lambda a, dim, keepdim: np.max(a, axis=dim, keepdims=keepdim) if a.ndim else a,
        batch="dims",
    )
)
register(
    Op(
        "argmax",
        lambda a, dim, keepdim: reduced_shape(a, (dim,), keepdim),
        lambda a, dim, keepdim: reduce_entries(a, (dim,), keepdim, functions.first_argmax),
        lambda torch, a, dim, keepdim: torch.argmax(a, dim=dim, keepdim=keepdim),
        "torch.argmax({0}, dim={dim}, keepdim={keepdim})",
        r"\operatorname{{argmax}}_{{{dim}}} {0}",
        "none",
        saves=False,
        differentiable=False,
        vjp=lambda g, out, a, dim, keepdim: (None,),
        float64=lambda a, dim, keepdim: np.argmax(a, axis=dim, keepdims=keepdim) if a.ndim else np.zeros(()),
        batch="dims",
    )
)
register(
    Op(
        "first_max_mask",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, lambda r: [functions.first_max_indicator(r, i) for i in range(len(r))]),
        lambda torch, a, dim: torch.nn.functional.one_hot(a.argmax(dim), a.shape[dim]).movedim(-1, dim).to(a.dtype),
        "torch.nn.functional.one_hot({0}.argmax({dim}), {0}.shape[{dim}]).movedim(-1, {dim})",
        r"\mathbb{{1}}\left[\operatorname{{argmax}}_{{{dim}}} {0}\right]",
        "none",
        differentiable=False,
        vjp=lambda g, out, a, dim: (None,),
        float64=lambda a, dim: _first_max_mask(a, dim),
        batch="dims",
    )
)


def _first_max_mask(a: np.ndarray, dim: int) -> np.ndarray:
    """1 at the first maximum along ``dim`` (a nan counts as the maximum, as in torch), else 0."""
    if a.ndim == 0:
        return np.ones(())
    first = np.expand_dims(np.argmax(a, axis=dim), dim)
    return (np.arange(a.shape[dim]).reshape([-1 if d == dim else 1 for d in range(a.ndim)]) == first) * 1.0


register(
    Op(
        "norm",
        reduced_shape,
        lambda a, dim, keepdim: reduce_entries(a, dim, keepdim, lambda r: functions.norm2(*r)),
        lambda torch, a, dim, keepdim: torch.linalg.vector_norm(a, 2, dim=list(dim), keepdim=keepdim),
        "torch.linalg.vector_norm({0}{reduce_kwargs})",
        r"\left\|{0}\right\|_{{{dims_text}}}",
        "NormBackward1",
        vjp=lambda g, out, a, dim, keepdim: (_norm_vjp(g, out, a, dim, keepdim),),
        batch="dims",
    )
)


def _norm_vjp(g, out, a, dim, keepdim):
    """x / ‖x‖, and 0 where the norm is 0 (torch's convention)."""
    n = expand_back(out, a.shape, dim, keepdim)
    return expand_back(g, a.shape, dim, keepdim) * apply("where", apply("eq", n, 0), 0, a / n)


def _inf_norm_vjp(g, out, a, largest: bool, dim: tuple, keepdim: bool):
    """torch's norm backward for ord ±inf (not amax's): sgn(x) · (g / count) · mask, the mask of the entries
    whose |x| is the norm or nan, so a nan entry takes the share and gives 0 (sgn(nan) is 0 in torch)."""
    size, norm = a.abs(), expand_back(out, a.shape, dim, keepdim)
    mask = apply("where", apply("eq", size, norm), 1, apply("where", apply("isnan", size), 1, 0))
    return apply("sign", a) * ((expand_back(g, a.shape, dim, keepdim) / mask.sum(dim=dim, keepdim=True)) * mask)


def _inf_norm(values: list, largest: bool) -> sympy.Expr:
    sizes = [sympy.Abs(v) for v in values]
    return functions.amax(*sizes) if largest else -functions.amax(*[-v for v in sizes])


register(
    Op(
        "inf_norm",
        lambda a, largest, dim, keepdim: reduced_shape(a, dim, keepdim),
        lambda a, largest, dim, keepdim: reduce_entries(a, dim, keepdim, lambda r: _inf_norm(r, largest)),
        lambda torch, a, largest, dim, keepdim: torch.linalg.vector_norm(
            a, math.inf if largest else -math.inf, dim=list(dim), keepdim=keepdim
        ),
        "torch.linalg.vector_norm({0}, {ord}{reduce_kwargs})",
        r"\left\|{0}\right\|_{{{ord_latex}}}",
        "LinalgVectorNormBackward0",
        vjp=lambda g, out, a, largest, dim, keepdim: (_inf_norm_vjp(g, out, a, largest, dim, keepdim),),
        spell=lambda attrs, inputs: {
            "ord": 'float("inf")' if attrs["largest"] else '-float("inf")',
            "ord_latex": r"\infty" if attrs["largest"] else r"-\infty",
        },
        float_result=True,
        batch="dims",
    )
)


def dim_spelled_out(attrs: dict, inputs: tuple) -> dict:
    """The dim written out, even over every dim: torch.logsumexp has no default dim, and var's and std's
    backward differs between no dim and every dim."""
    dim, keepdim = attrs["dim"], attrs["keepdim"]
    return {"reduce_kwargs": f", dim={dim[0] if len(dim) == 1 else dim}" + (", keepdim=True" if keepdim else "")}


def _var_grad(g, a, dim: tuple, keepdim: bool, correction, whole: bool):
    """torch's var backward: 2 (x − mean) / (N − correction) times the incoming gradient spread back over
    ``dim``. Called without a dim (``whole``) and with N − correction <= 0, torch gives g·nan where x is its
    mean and g·inf elsewhere; given a dim, it divides by N − correction itself (a negative number, or 0)."""
    spread = expand_back(g, a.shape, dim, keepdim)
    mean = a.mean(dim=dim, keepdim=True)
    n = count(a.shape, dim)
    general = spread * 2 * (a - mean) / (n - correction)
    if not (whole or not a.shape):
        return general
    degenerate = apply("where", apply("eq", a, mean), math.nan, math.inf)
    if isinstance(n, int):
        return spread * degenerate if n - correction <= 0 else general
    # a symbolic N: the emitted code decides at run time, as torch does. The select is of the factor, not of the
    # product with g: a second derivative of where(c, g·inf, …) would meet the unselected inf as 0·inf = nan
    no_freedom = apply("le", apply("full", shape=(), value=n - correction), 0)
    return spread * apply("where", no_freedom, degenerate, 2 * (a - mean) / (n - correction))


def _var_spelling(attrs: dict, inputs: tuple) -> dict:
    """``torch.var(x)`` only for the call without a dim (torch's backward differs from ``dim=(0, 1)``); the
    variance of a ``var_mean`` call is spelled as its first result (torch computes it another way)."""
    pair = {"paired": "_mean", "first": "[0]"} if attrs.get("welford") else {"paired": "", "first": ""}
    if attrs.get("whole") and inputs and len(attrs["dim"]) == len(inputs[0].shape):
        return {"reduce_kwargs": ", keepdim=True" if attrs["keepdim"] else "", **pair}
    return {**dim_spelled_out(attrs, inputs), **pair}


def _mean_float64(a: np.ndarray, axes: tuple, keepdims: bool) -> np.ndarray:
    """Σ x / N in float64: the mean of no entries is 0/0 = nan, as torch's, without NumPy's warning."""
    count = math.prod(a.shape[d] for d in axes)
    return (
        np.sum(a, axis=axes, keepdims=keepdims) / count if count else np.sum(a, axis=axes, keepdims=keepdims) * np.nan
    )


def _torch_spread(torch, name: str, a, dim: tuple, keepdim: bool, correction, whole: bool, welford: bool = False):
    dims = None if whole and len(dim) == a.dim() else list(dim)
    if welford:
        return getattr(torch, f"{name}_mean")(a, dim=dims, correction=correction, keepdim=keepdim)[0]
    return getattr(torch, name)(a, dim=dims, correction=correction, keepdim=keepdim)


def _welford_float64(a: np.ndarray, axes: tuple, keepdims: bool) -> tuple[np.ndarray, np.ndarray]:
    """(Σ (x − mean)², mean) by Welford's updates over the reduced entries in order, as torch's ``var_mean`` and
    ``std_mean`` compute them on the CPU (equal entries give a variance of exactly 0, where the two-pass
    ``torch.var`` may leave a residue of 1e-35)."""
    kept = [d for d in range(a.ndim) if d not in axes]
    count = math.prod(a.shape[d] for d in axes)
    moved = np.transpose(a, kept + list(axes)).reshape([a.shape[d] for d in kept] + [count])
    mean, m2 = np.zeros(moved.shape[:-1]), np.zeros(moved.shape[:-1])
    for k in range(moved.shape[-1]):
        x = moved[..., k]
        delta = x - mean
        mean = mean + delta / (k + 1)
        m2 = m2 + delta * (x - mean)
    if moved.shape[-1] == 0:
        mean = mean * np.nan
    shape = [1 if d in axes else a.shape[d] for d in range(a.ndim)] if keepdims else mean.shape
    return m2.reshape(shape), mean.reshape(shape)


def _var_float64(a: np.ndarray, dim: tuple, keepdim: bool, correction, welford: bool = False) -> np.ndarray:
    """Σ (x − mean)² / max(N − correction, 0) in float64, as torch computes it: a nan stays nan (SymPy
    would cancel x − x to 0 first), and a divisor of 0 gives inf or nan."""
    axes = present_axes(a, dim)
    n = math.prod(a.shape[d] for d in axes)
    if welford:
        return _welford_float64(a, axes, keepdim)[0] / max(n - correction, 0)
    deviations = a - _mean_float64(a, axes, True)
    return np.sum(deviations**2, axis=axes, keepdims=keepdim) / max(n - correction, 0)


register(
    Op(
        "var",
        lambda a, dim, keepdim, correction, whole=False, welford=False: reduced_shape(a, dim, keepdim),
        lambda a, dim, keepdim, correction, whole=False, welford=False: reduce_entries(
            a, dim, keepdim, lambda r: functions.variance(r, correction)
        ),
        lambda torch, a, dim, keepdim, correction, whole=False, welford=False: _torch_spread(
            torch, "var", a, dim, keepdim, correction, whole, welford
        ),
        "torch.var{paired}({0}{reduce_kwargs}, correction={correction}){first}",
        r"\operatorname{{Var}}_{{{dims_text}}} {0}",
        "VarBackward0",
        vjp=lambda g, out, a, dim, keepdim, correction, whole=False, welford=False: (
            _var_grad(g, a, dim, keepdim, correction, whole),
        ),
        spell=_var_spelling,
        float_result=True,
        float64=lambda a, dim, keepdim, correction, whole=False, welford=False: _var_float64(
            a, dim, keepdim, correction, welford
        ),
        batch="dims",
    )
)
register(
    Op(
        "std",
        lambda a, dim, keepdim, correction, whole=False, welford=False: reduced_shape(a, dim, keepdim),
        lambda a, dim, keepdim, correction, whole=False, welford=False: reduce_entries(
            a, dim, keepdim, lambda r: functions.stdev(correction, *r)
        ),
        lambda torch, a, dim, keepdim, correction, whole=False, welford=False: _torch_spread(
            torch, "std", a, dim, keepdim, correction, whole, welford
        ),
        "torch.std{paired}({0}{reduce_kwargs}, correction={correction}){first}",
        r"\operatorname{{std}}_{{{dims_text}}} {0}",
        "StdBackward0",
        # torch's std backward: the gradient of the variance, scaled by g / (2 std), and 0 where std is 0
        vjp=lambda g, out, a, dim, keepdim, correction, whole=False, welford=False: (
            _var_grad(apply("masked_div", g, out * 2), a, dim, keepdim, correction, whole),
        ),
        spell=_var_spelling,
        float_result=True,
        float64=lambda a, dim, keepdim, correction, whole=False, welford=False: np.sqrt(
            _var_float64(a, dim, keepdim, correction, welford)
        ),
        batch="dims",
    )
)


def _cumsum(values: list) -> list:
    return [sympy.Add(*values[: i + 1]) for i in range(len(values))]


register(
    Op(
        "cumsum",
        lambda a, dim: a,
        lambda a, dim: slices_along(a, dim, _cumsum),
        lambda torch, a, dim: torch.cumsum(a, dim=dim),
        "torch.cumsum({0}, dim={dim})",
        r"\operatorname{{cumsum}}_{{{dim}}} {0}",
        "CumsumBackward0",
        saves=False,
        vjp=lambda g, out, a, dim: (apply("cumsum", g.flip(dim), dim=dim).flip(dim) if a.ndim else g,),
        tags=frozenset({"linear"}),
        float64=lambda a, dim: np.cumsum(a, axis=dim) if a.ndim else a,
        batch="dims",
    )
)


# ── p-norms (other than 1, 2 and ±inf, which are sums, norm and amax of |x|) ──
def _pnorm(values: list, p) -> sympy.Expr:
    if p == 0:
        return sympy.Add(*[sympy.Piecewise((0, sympy.Eq(v, 0)), (1, True)) for v in values])
    return sympy.Add(*[sympy.Abs(v) ** p for v in values]) ** (1 / sympy.sympify(p))


def _pnorm_float64(a: np.ndarray, p, dim: tuple, keepdim: bool) -> np.ndarray:
    axes = present_axes(a, dim)
    if p == 0:
        return np.sum(a != 0, axis=axes, keepdims=keepdim) * 1.0
    return np.sum(np.abs(a) ** p, axis=axes, keepdims=keepdim) ** (1.0 / p)


def _pnorm_vjp(g, out, a, p, dim: tuple, keepdim: bool):
    """torch's norm backward for p ∉ {1, 2, ±inf}: 0 for p = 0; sgn(x)|x|^(p−1) (0 at x = 0) · g · ‖x‖^(1−p)
    for p < 1; sgn(x)|x|^(p−1) · g / ‖x‖^(p−1), 0 where the norm is 0, for p > 1."""
    if p == 0:
        return None
    g, norm = expand_back(g, a.shape, dim, keepdim), expand_back(out, a.shape, dim, keepdim)
    if p < 1:
        scaled = apply("where", apply("eq", a, 0), 0, apply("sign", a) * a.abs() ** (p - 1))
        return scaled * g * norm ** (1 - p)
    scaled = apply("sign", a) * a.abs() ** (p - 1) if p < 2 else a * a.abs() ** (p - 2)
    return scaled * apply("masked_div", g, norm ** (p - 1))


register(
    Op(
        "pnorm",
        lambda a, p, dim, keepdim: reduced_shape(a, dim, keepdim),
        lambda a, p, dim, keepdim: reduce_entries(a, dim, keepdim, lambda r: _pnorm(r, p)),
        lambda torch, a, p, dim, keepdim: torch.linalg.vector_norm(a, p, dim=list(dim), keepdim=keepdim),
        "torch.linalg.vector_norm({0}, {p}{reduce_kwargs})",
        r"\left\|{0}\right\|_{{{p}}}",
        "LinalgVectorNormBackward0",
        vjp=lambda g, out, a, p, dim, keepdim: (_pnorm_vjp(g, out, a, p, dim, keepdim),),
        float_result=True,
        float64=_pnorm_float64,
        batch="dims",
    )
)


# ── entries picked along a dim at positions known when the graph is built (topk) ──
def _take_at(a: np.ndarray, dim: int, positions: tuple) -> np.ndarray:
    return np.take_along_axis(a, np.array(positions, dtype=int), axis=dim) if a.ndim else a.copy()


def _put_at(g: np.ndarray, shape: tuple, dim: int, positions: tuple) -> np.ndarray:
    """Zeros of ``shape`` with g added at the positions along ``dim`` (the adjoint of take_at)."""
    if not shape:
        return g.copy()
    out = np.full(shape, sympy.S.Zero, dtype=object)
    index = np.array(positions, dtype=int)
    for where in np.ndindex(index.shape):
        target = where[:dim] + (int(index[where]),) + where[dim + 1 :]
        out[target] = out[target] + g[where]
    return out


def _positions_text(attrs: dict, inputs: tuple) -> dict:
    return {"positions_text": f"torch.tensor({np.array(attrs['positions']).tolist()})"}


register(
    Op(
        "take_at",
        lambda a, dim, positions: tuple(np.shape(positions)) if a else a,
        lambda a, dim, positions: _take_at(a, dim, positions),
        lambda torch, a, dim, positions: torch.take_along_dim(a, torch.tensor(positions), dim) if a.ndim else a,
        "torch.take_along_dim({0}, {positions_text}, {dim})",
        "{0}_{{\\mathrm{{top}}}}",
        "TopkBackward0",
        saves=False,
        vjp=lambda g, out, a, dim, positions: (apply("put_at", g, shape=a.shape, dim=dim, positions=positions),),
        tags=frozenset({"linear", "positions"}),
        spell=_positions_text,
        float64=_take_at,
    )
)
register(
    Op(
        "put_at",
        lambda g, shape, dim, positions: tuple(shape),
        _put_at,
        lambda torch, g, shape, dim, positions: (
            torch.zeros(shape, dtype=g.dtype).scatter_add(dim, torch.tensor(positions), g) if shape else g
        ),
        "torch.zeros({shape}, dtype=torch.float64).scatter_add({dim}, {positions_text}, {0})",
        r"\operatorname{{scatter}}\left({0}\right)",
        "none",
        saves=False,
        vjp=lambda g, out, x, shape, dim, positions: (apply("take_at", g, dim=dim, positions=positions),),
        tags=frozenset({"linear", "positions"}),
        spell=_positions_text,
    )
)
