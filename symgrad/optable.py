"""The table of operations: one row per op.

A row says everything symgrad knows about an op: its shape rule, its meaning
entry by entry in SymPy, how torch computes it (for the cross-check), how it is
spelled in torch code and in LaTeX, and what torch calls its backward node.
Adding an op means adding a row here (and a test); nothing else changes.

Templates use ``{0}``, ``{1}`` for the inputs and ``{name}`` for attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from . import functions
from .arrays import elementwise, matmul, reduce_sum
from .dims import (
    Shape,
    broadcast_shapes,
    format_shape,
    matmul_shape,
    normalize_dim,
    numel,
    reshape_target,
)
from .errors import ShapeError
from .indexing import apply_index, format_index, index_grad_fn, index_shape


@dataclass(frozen=True)
class Op:
    """One operation. ``scalar`` is the SymPy function of one entry, for elementwise ops."""

    name: str
    shape: Callable[..., Shape]
    meaning: Callable[..., np.ndarray]
    torch: Callable[..., Any]
    code: str
    latex: str
    grad_fn: str | Callable[..., str]
    saves: bool = True  # torch's node keeps tensors, so a second backward needs retain_graph
    scalar: Callable[..., sympy.Expr] | None = None
    precedence: int = 9  # Python's binding strength of the torch spelling, for parentheses

    def grad_fn_name(self, inputs: tuple, attrs: dict) -> str:
        return self.grad_fn if isinstance(self.grad_fn, str) else self.grad_fn(inputs, **attrs)


OPS: dict[str, Op] = {}


def row(op: Op) -> Op:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


def _same(shape: Shape, **_: Any) -> Shape:
    return shape


def unary(name: str, scalar: Callable, latex: str, *, grad_fn: str | None = None) -> Op:
    """A row for an elementwise function of one tensor, spelled ``torch.<name>``."""
    return row(
        Op(
            name=name,
            shape=_same,
            meaning=lambda a: elementwise(scalar, a),
            torch=lambda torch, a: getattr(torch, name)(a),
            code=f"torch.{name}({{0}})",
            latex=latex,
            grad_fn=grad_fn or f"{name.capitalize()}Backward0",
            scalar=scalar,
        )
    )


def binary(name: str, scalar: Callable, torch_fn: Callable, code: str, latex: str, grad_fn, *, saves: bool,
           precedence: int) -> Op:
    """A row for a broadcasting elementwise function of two tensors."""
    return row(
        Op(
            name=name,
            shape=lambda a, b: broadcast_shapes(a, b),
            meaning=lambda a, b: elementwise(scalar, a, b),
            torch=torch_fn,
            code=code,
            latex=latex,
            grad_fn=grad_fn,
            saves=saves,
            scalar=scalar,
            precedence=precedence,
        )
    )


def _scalar_kinds(inputs: tuple) -> tuple[bool, bool]:
    return tuple(getattr(t, "is_python_scalar", False) for t in inputs)  # type: ignore[return-value]


# ── elementwise arithmetic (broadcasting) ──────────────────────────────────
binary("add", lambda a, b: a + b, lambda torch, a, b: a + b, "{0} + {1}", "{0} + {1}", "AddBackward0", saves=False,
       precedence=4)
binary("sub", lambda a, b: a - b, lambda torch, a, b: a - b, "{0} - {1}", "{0} - {1}",
       lambda inputs: "RsubBackward1" if _scalar_kinds(inputs)[0] else "SubBackward0", saves=False, precedence=4)
binary("mul", lambda a, b: a * b, lambda torch, a, b: a * b, "{0} * {1}", r"{0} \odot {1}", "MulBackward0", saves=True,
       precedence=5)
binary("div", lambda a, b: a / b, lambda torch, a, b: a / b, "{0} / {1}", r"{0} \oslash {1}", "DivBackward0", saves=True,
       precedence=5)
binary("pow", lambda a, b: a**b, lambda torch, a, b: a**b, "{0} ** {1}", "{0}^{{{1}}}",
       lambda inputs: {(False, True): "PowBackward0", (True, False): "PowBackward2"}.get(_scalar_kinds(inputs), "PowBackward1"),
       saves=True, precedence=7)
row(Op("neg", _same, lambda a: elementwise(lambda x: -x, a), lambda torch, a: -a, "-{0}", "-{0}", "NegBackward0",
       saves=False, scalar=lambda x: -x, precedence=6))

# ── elementwise functions ──────────────────────────────────────────────────
unary("exp", sympy.exp, r"\exp\left({0}\right)")
unary("log", sympy.log, r"\log\left({0}\right)")
unary("sin", sympy.sin, r"\sin\left({0}\right)")
unary("cos", sympy.cos, r"\cos\left({0}\right)")
unary("tanh", sympy.tanh, r"\tanh\left({0}\right)")
unary("sigmoid", functions.sigmoid, r"\sigma\left({0}\right)")
unary("relu", functions.relu, r"\operatorname{{relu}}\left({0}\right)")
unary("abs", sympy.Abs, r"\left|{0}\right|")
unary("sqrt", sympy.sqrt, r"\sqrt{{{0}}}")
row(Op(
    name="map",  # any SymPy-expressible scalar function, given as a Lambda
    shape=_same,
    meaning=lambda a, fn, label: elementwise(fn, a),
    torch=lambda torch, a, fn, label: _evaluate_lambda(torch, fn, a),
    code="{label}({0})",
    latex=r"\operatorname{{{label}}}\left({0}\right)",
    grad_fn=lambda inputs, fn, label: f"{label}Backward",
))


def _evaluate_lambda(torch: Any, fn: sympy.Lambda, a: Any) -> Any:
    from .sympy_torch import evaluate

    (variable,) = fn.variables
    return evaluate(fn.expr, {variable: a}, torch) + 0 * a  # keeps shape for constant functions


# ── products ───────────────────────────────────────────────────────────────
row(Op("mm", lambda a, b: matmul_shape(a, b, strict_2d=True), matmul, lambda torch, a, b: torch.mm(a, b),
       "{0} @ {1}", "{0} {1}", "MmBackward0", precedence=5))
row(Op("matmul", lambda a, b: matmul_shape(a, b), matmul, lambda torch, a, b: torch.matmul(a, b),
       "{0} @ {1}", "{0} {1}", lambda inputs: "MmBackward0" if all(len(t.shape) == 2 for t in inputs) else "MatmulBackward",
       precedence=5))


# ── reductions ─────────────────────────────────────────────────────────────
def _reduced_shape(shape: Shape, dim: tuple[int, ...], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if axis in dim else d for axis, d in enumerate(shape))
    return tuple(d for axis, d in enumerate(shape) if axis not in dim)


def _mean(a: np.ndarray, dim: tuple[int, ...], keepdim: bool) -> np.ndarray:
    count = int(np.prod([a.shape[axis] for axis in dim if axis < a.ndim], dtype=int))  # a 0-d tensor has dim 0
    return elementwise(lambda s: s / count, reduce_sum(a, dim, keepdim))


def _torch_dim(dim: tuple[int, ...] | None) -> Any:
    return list(dim) if dim is not None else None


row(Op("sum", _reduced_shape, lambda a, dim, keepdim: reduce_sum(a, dim, keepdim),
       lambda torch, a, dim, keepdim: torch.sum(a, dim=list(dim), keepdim=keepdim),
       "{0}.sum({reduce_args})", r"\sum {0}",
       lambda inputs, dim, keepdim: "SumBackward1" if len(dim) < len(inputs[0].shape) or keepdim else "SumBackward0",
       saves=False))
row(Op("mean", _reduced_shape, _mean,
       lambda torch, a, dim, keepdim: torch.mean(a, dim=list(dim), keepdim=keepdim),
       "{0}.mean({reduce_args})", r"\operatorname{{mean}} {0}",
       lambda inputs, dim, keepdim: "MeanBackward1" if len(dim) < len(inputs[0].shape) or keepdim else "MeanBackward0",
       saves=False))


# ── shape and layout ───────────────────────────────────────────────────────
def _transpose_shape(shape: Shape, dim0: int, dim1: int) -> Shape:
    if not shape:  # torch allows transpose(0, 0) and transpose(-1, 0) of a 0-d tensor
        return ()
    out = list(shape)
    out[dim0], out[dim1] = out[dim1], out[dim0]
    return tuple(out)


def _transpose(a: np.ndarray, dim0: int, dim1: int) -> np.ndarray:
    return np.swapaxes(a, dim0, dim1) if a.ndim else a


def _permute_shape(shape: Shape, dims: tuple[int, ...]) -> Shape:
    if len(dims) != len(shape):
        raise ShapeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
            f"ordering of dimensions i.e. input.dim() = {len(shape)} is not equal to len(dims) = {len(dims)} "
            f"(shape {format_shape(shape)}, dims {dims})"
        )
    if len(set(dims)) != len(dims):
        raise ShapeError(f"permute(): duplicate dims are not allowed. (shape {format_shape(shape)}, dims {dims})")
    return tuple(shape[d] for d in dims)


row(Op("transpose", _transpose_shape, _transpose,
       lambda torch, a, dim0, dim1: a.transpose(dim0, dim1),
       "{0}.transpose({dim0}, {dim1})", "{0}^\\top", "TransposeBackward0", saves=False))
row(Op("permute", _permute_shape, lambda a, dims: np.transpose(a, dims),
       lambda torch, a, dims: a.permute(tuple(dims)),  # a.permute() (no dims) fails for 0-d tensors
       "{0}.permute{dims}", "{0}^\\top", "PermuteBackward0", saves=False))
row(Op("reshape", lambda a, shape: reshape_target(a, shape),
       lambda a, shape: a.reshape(shape), lambda torch, a, shape: a.reshape(shape),
       "{0}.reshape{shape}", "{0}", "ViewBackward0", saves=False))
row(Op("index", lambda a, index, via: index_shape(a, index),
       lambda a, index, via: apply_index(a, index),
       lambda torch, a, index, via: a[index],
       "{0}[{index_text}]", "{0}_{{{index_text}}}",
       lambda inputs, index, via: "UnbindBackward0" if via == "unbind" else index_grad_fn(index),
       saves=False))


def describe(op: Op, attrs: dict, inputs: tuple = ()) -> dict:
    """Attributes as they appear in the code and LaTeX templates."""
    out = dict(attrs)
    if "index" in attrs:
        out["index_text"] = format_index(attrs["index"])
    if "keepdim" in attrs:
        dim, keepdim = attrs["dim"], attrs["keepdim"]
        every = inputs and len(dim) == len(inputs[0].shape)
        args = [] if every and not keepdim else [f"dim={dim[0] if len(dim) == 1 else dim}"]
        out["reduce_args"] = ", ".join(args + (["keepdim=True"] if keepdim else []))
    return out


__all__ = ["OPS", "Op", "describe", "normalize_dim", "numel"]
