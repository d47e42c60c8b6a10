"""Making tensors: filled (``zeros``, ``ones``, ``full``, ``eye``, the ``*_like`` ones), ranges (``arange``,
``linspace``), and random numbers (``rand``, ``randn``, ``randint``) drawn by a real ``torch.Generator`` that
:func:`manual_seed` seeds as torch seeds its global one, so the same seed gives the same numbers.

Filled tensors of symbolic size (``zeros(n, m)``) are ``full`` nodes, usable in laws; the others are
constants (or leaves, with ``requires_grad=True``). torch is imported by the random functions only.

>>> import symgrad.torch as torch
>>> torch.arange(0.0, 1.0, 0.25).tolist(), torch.linspace(0, 1, 3).tolist(), torch.eye(2).tolist()
([0.0, 0.25, 0.5, 0.75], [0.0, 0.5, 1.0], [[1.0, 0.0], [0.0, 1.0]])
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import sympy

from ..core.constructors import dtype_name, tensor
from ..core.dims import as_shape, is_concrete
from ..core.dims import require_concrete as _require_concrete
from ..core.dtypes import is_floating
from ..core.errors import TorchRuntimeError, TorchTypeError, UnsupportedError
from ..core.methods import relabel
from ..core.tensor import Tensor, apply, constant

_LANES = 4  # float64 lanes of torch's vectorised CPU kernels (AVX2): arange's numbers depend on them


# Where a tensor lives and how it is laid out does not change its numbers: symgrad keeps the maths and drops these
# (emitted code makes its tensors on its inputs' device).
_PLACEMENT = {"device", "layout", "pin_memory", "memory_format", "out", "names"}


def _placement(options: dict[str, Any], what: str) -> None:
    unknown = sorted(set(options) - _PLACEMENT)
    if unknown:
        raise TorchTypeError(f"{what}() got an unexpected keyword argument '{unknown[0]}'")
    if options.get("out") is not None:
        raise UnsupportedError(f"{what}(out=...) writes into a tensor in place; use the result instead")
    layout = options.get("layout")
    if layout is not None and "strided" not in str(layout):
        raise UnsupportedError(f"{what}(layout={layout}) is not supported: symgrad tensors are dense")


def _size(size: tuple) -> tuple:
    """``f(2, 3)``, ``f((2, 3))`` or ``f([n, m])``: the shape, ints or dimension symbols."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return as_shape(size)


def _filled(shape: tuple, value: Any, dtype: str, requires_grad: bool) -> Tensor:
    """Known numbers of one value: a constant, a leaf that requires grad, or a ``full`` node of symbolic size."""
    if not is_concrete(shape):
        if requires_grad:
            raise UnsupportedError("a tensor of symbolic size that requires grad is a leaf: use sg.symbols")
        return relabel(apply("full", shape=shape, value=value), dtype)
    if requires_grad:
        return tensor(np.full(shape, float(value)), requires_grad=True, dtype=dtype)
    return constant(value, shape=shape, dtype=dtype)


def _number_dtype(value: Any) -> str:
    """torch's dtype for a Python number: bool, int64, or the default float32."""
    if isinstance(value, bool):
        return "bool"
    return "int64" if isinstance(value, (int, np.integer)) else "float32"


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    """Zeros of ``size`` (ints, or dimension symbols for a ``full`` node a law can use)."""
    _placement(placement, "zeros")
    return _filled(_size(size), 0, dtype_name(dtype) or "float32", requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    _placement(placement, "ones")
    return _filled(_size(size), 1, dtype_name(dtype) or "float32", requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    """``fill_value`` everywhere; the dtype follows the value (int64, bool, float32) unless given."""
    _placement(placement, "full")
    return _filled(_size((size,)), fill_value, dtype_name(dtype) or _number_dtype(fill_value), requires_grad)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    """Memory not yet written: to be filled before it is read (``torch.empty(3).uniform_()``); reading it is
    refused, its entries being whatever the memory held."""
    _placement(placement, "empty")
    kind = dtype_name(dtype) or "float32"
    node = apply("empty_new", shape=_size(size), dtype=kind)
    node.dtype = kind
    return node


def empty_like(input: Tensor, *, dtype: Any = None, **placement: Any) -> Tensor:
    """Memory of input's shape, not yet written (see :func:`empty`)."""
    return input.new_empty(input.shape, dtype=dtype)


def eye(n: Any, m: Any = None, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    """The n×m identity (n×n by default; an ``eye`` node for a symbolic n)."""
    _placement(placement, "eye")
    kind = dtype_name(dtype) or "float32"
    if m is None and not isinstance(n, int):
        if requires_grad:
            raise UnsupportedError("a tensor of symbolic size that requires grad is a leaf: use sg.symbols")
        return relabel(apply("eye", n=as_shape((n,))[0]), kind)
    rows, cols = _require_concrete(as_shape((n, n if m is None else m)), "eye")
    values = np.eye(rows, cols)
    if requires_grad:
        return tensor(values, requires_grad=True, dtype=kind)
    return constant(values.astype(int).tolist(), shape=(rows, cols), dtype=kind)


def arange(
    start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, requires_grad: bool = False, **placement: Any
) -> Tensor:
    """start, start + step, … below end (int64 for integers, else float32), with torch's numbers: each is
    rounded once from the exact start + i·step, per vector of its CPU kernel."""
    _placement(placement, "arange")
    if end is None:
        start, end = 0, start
    if any(not isinstance(v, (int, float)) and getattr(v, "free_symbols", None) for v in (start, end, step)):
        raise UnsupportedError("arange() to a symbolic size is not supported: its entries are numbers to list")
    if step == 0:
        raise TorchRuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise TorchRuntimeError("upper bound and larger bound inconsistent with step sign")
    kind = dtype_name(dtype) or ("int64" if all(isinstance(v, int) for v in (start, end, step)) else "float32")
    count = max(0, math.ceil((end - start) / step))
    if not is_floating(kind):
        values: list = [int(start + i * step) for i in range(count)]
    else:
        values = _vectorised_range(float(start), float(step), count)
    return _values(values, (count,), kind, requires_grad)


def _vectorised_range(start: float, step: float, count: int) -> list[float]:
    """torch's arange kernel: vectors of _LANES entries, each base + k·step from a base start + i·step (both
    fused multiply-adds), in pairs of vectors; the rest one by one."""
    exact_step, out = Fraction(step), []
    whole = count - count % (2 * _LANES)
    for i in range(0, whole, _LANES):
        base = Fraction(float(Fraction(start) + exact_step * i))
        out += [float(base + exact_step * k) for k in range(_LANES)]
    out += [float(Fraction(start) + exact_step * i) for i in range(whole, count)]
    return out


def linspace(
    start: Any, end: Any, steps: int, *, dtype: Any = None, requires_grad: bool = False, **placement: Any
) -> Tensor:
    """``steps`` evenly spaced numbers from start to end, as torch computes them: from start for the first
    half, from end for the second."""
    _placement(placement, "linspace")
    if steps < 0:
        raise TorchRuntimeError("linspace(): number of steps must be non-negative")
    kind = dtype_name(dtype) or "float32"
    if steps == 1:
        values = [float(start)]
    else:
        step = (float(end) - float(start)) / (steps - 1) if steps > 1 else 0.0
        exact = (Fraction(float(start)), Fraction(float(end)), Fraction(step))
        values = [
            float(exact[0] + exact[2] * i) if i < steps // 2 else float(exact[1] - exact[2] * (steps - 1 - i))
            for i in range(steps)
        ]
    return _values(values, (steps,), kind, requires_grad)


def _values(values: list, shape: tuple, kind: str, requires_grad: bool) -> Tensor:
    if requires_grad:
        return tensor(np.array(values, dtype=float).reshape(shape), requires_grad=True, dtype=kind)
    numbers = [sympy.Integer(v) if isinstance(v, int) else sympy.Float(v) for v in values]
    return constant(np.array(numbers, dtype=object).reshape(shape), dtype=kind)


def full_like(
    input: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False, **placement: Any
) -> Tensor:
    """``fill_value`` shaped like ``input`` (a ``full`` node when its shape is symbolic)."""
    _placement(placement, "full_like")
    return _filled(tuple(input.shape), fill_value, dtype_name(dtype) or input.dtype, requires_grad)


def ones_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    _placement(placement, "ones_like")
    return full_like(input, 1, dtype=dtype, requires_grad=requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    _placement(placement, "zeros_like")
    return full_like(input, 0, dtype=dtype, requires_grad=requires_grad)


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


# ── random numbers, from a real torch.Generator ───────────────────────────
def random_generator(given: Any = None) -> Any:
    """``given``, or torch's default generator: symgrad.torch draws what torch draws, from the same random state
    (``torch.manual_seed`` and ``symgrad.torch.manual_seed`` seed the same generator)."""
    if given is not None:
        return given
    import torch

    return torch.default_generator


def manual_seed(seed: int) -> Any:
    """Seed torch's default generator, as ``torch.manual_seed(s)``: rand, randn, randint and dropout then draw what
    torch draws after it (the same calls in the same order, same sizes and dtypes)."""
    import torch

    return torch.manual_seed(int(seed))


def _drawn(draw: str, shape: tuple, kind: str, requires_grad: bool, generator: Any, **bounds: Any) -> Tensor:
    """Numbers from torch's ``draw`` (randn, rand, randint) with the generator, as constants of ``kind``."""
    import torch

    if not is_concrete(shape):
        raise UnsupportedError(f"torch.{draw} needs concrete sizes: random numbers are drawn when it is called")
    shape = tuple(int(d) for d in shape)
    drawn = getattr(torch, draw)(
        *bounds.values(), shape, generator=random_generator(generator), dtype=getattr(torch, kind)
    )
    values = drawn.tolist() if drawn.numel() else np.zeros(shape)
    if requires_grad:
        return tensor(values, requires_grad=True, dtype=kind)
    if not is_floating(kind):
        return constant(np.asarray(values, dtype=int).tolist(), shape=shape, dtype=kind)
    return constant(np.asarray(values, dtype=float).tolist(), shape=shape, dtype=kind)


def bernoulli_noise(shape: tuple, dtype: str, p: float) -> Any:
    """A dropout's noise, ``bernoulli(1 - p) / (1 - p)`` of ``shape`` and ``dtype``, drawn from the generator of
    :func:`manual_seed` as torch's F.dropout draws it (None at symbolic sizes: a formula then holds for every
    draw)."""
    import torch

    if not is_concrete(shape):
        return None
    kind = getattr(torch, dtype if is_floating(dtype) else "float32")
    noise = torch.empty(tuple(int(d) for d in shape), dtype=kind).bernoulli_(1 - p, generator=random_generator())
    return noise.div_(1 - p).double().numpy()


def randn(
    *size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False, **placement: Any
) -> Tensor:
    """Standard normal numbers (float32 by default, as torch's: the same bits, held as float64)."""
    _placement(placement, "randn")
    return _drawn("randn", _size(size), dtype_name(dtype) or "float32", requires_grad, generator)


def rand(*size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    """Uniform numbers in [0, 1), as torch's."""
    _placement(placement, "rand")
    return _drawn("rand", _size(size), dtype_name(dtype) or "float32", requires_grad, generator)


def randint(
    *args: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False, **placement: Any
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``, int64 by default."""
    _placement(placement, "randint")
    low, high, size = (0, *args) if len(args) == 2 else args
    return _drawn("randint", _size((size,)), dtype_name(dtype) or "int64", requires_grad, generator, low=low, high=high)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    _placement(placement, "randn_like")
    return _drawn("randn", tuple(input.shape), dtype_name(dtype) or input.dtype, requires_grad, None)


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False, **placement: Any) -> Tensor:
    _placement(placement, "rand_like")
    return _drawn("rand", tuple(input.shape), dtype_name(dtype) or input.dtype, requires_grad, None)


__all__ = [
    "arange", "empty", "empty_like", "eye", "full", "full_like", "is_tensor", "linspace", "manual_seed", "ones",
    "ones_like", "rand", "rand_like", "randint", "randn", "randn_like", "zeros", "zeros_like",
]  # fmt: skip
