"""Which dtype an emitted gradient has at run time, when its inputs have a dtype other than torch's default.

Emitted code runs in any dtype: its inputs' dtype is known only when it is called. Most of a gradient follows
the inputs' dtype, but a forward value that torch makes in its default dtype (``torch.where(c, 2.0, 0.5)``)
can carry float32 into a float64 backward, where torch's autograd would cast the gradient back to the input's
dtype. This module replays torch's promotion over the printed graph with the float inputs of one dtype, so that
codegen casts exactly the gradients that need it.

>>> import symgrad as sg
>>> import symgrad.torch as st
>>> x = sg.symbols("x", (3,), requires_grad=True)
>>> out = st.where(x > 0, 2.0, 0.5) * x.sum()
>>> v = sg.symbols_like(out, "v")
>>> (g,) = sg.law(out, [x], [v])
>>> drifts([g], [x], forward={id(node) for node in topological(out)}, grad_output=v, output=out)
[True]
"""

from __future__ import annotations

from ..core.dtypes import DEFAULT_FLOAT, Operand, is_floating, result_dtype
from ..core.graph import topological, topological_all
from ..core.tensor import Tensor

_PROBES = ("float64", "float16")  # dtypes on either side of torch's default


def _selects_numbers(node: Tensor) -> bool:
    return (
        node.op is not None
        and node.op.name == "where"
        and all(part.op is None and not part.shape and part.kind != "symbol" for part in node.inputs[1:])
    )


def run_dtype(
    root: Tensor, dtype: str, *, forward: set[int], grad_output: Tensor | None, output_dtype: str | None = None
) -> str:
    """``root``'s dtype when every float input has ``dtype``: nodes in ``forward`` are printed as torch computes
    them (a select between numbers in torch's default dtype), the others as gradients (such selects and new
    tensors in ``grad_output``'s dtype, which is ``output_dtype``)."""
    return _dtypes([root], dtype, forward=forward, grad_output=grad_output, output_dtype=output_dtype)[id(root)]


def _dtypes(
    roots: list[Tensor], dtype: str, *, forward: set[int], grad_output: Tensor | None, output_dtype: str | None
) -> dict[int, str]:
    """:func:`run_dtype` of every node below ``roots``, in one walk."""
    like_backward = output_dtype or dtype
    known: dict[int, str] = {}
    for node in topological_all(roots):
        in_forward = id(node) in forward
        if node is grad_output:
            known[id(node)] = like_backward
        elif node.op is None:
            if node.kind == "symbol":
                known[id(node)] = dtype if is_floating(node.dtype) else node.dtype
            elif is_floating(node.dtype):  # a constant, printed as <like>.new_full(...) or new_tensor(...)
                known[id(node)] = node.dtype if node.is_python_scalar else (dtype if in_forward else like_backward)
            else:
                known[id(node)] = node.dtype
        elif _selects_numbers(node) and not is_floating(node.dtype):  # where(c, 1, 0): int64, and printed so
            known[id(node)] = node.dtype
        elif _selects_numbers(node):
            known[id(node)] = DEFAULT_FLOAT if in_forward else like_backward
        elif node.op.has("creation"):  # printed as <like>.new_full(...): the dtype of the tensor it is made like
            known[id(node)] = dtype if in_forward else like_backward
        else:
            operands = [Operand(known[id(p)], not p.shape, p.is_python_scalar) for p in node.inputs]
            known[id(node)] = result_dtype(node.op, operands)
    return known


def drifts(
    gradients: list[Tensor], xs: list[Tensor], *, forward: set[int], grad_output: Tensor | None, output: Tensor
) -> list[bool]:
    """For each gradient (of the float input ``x`` beside it), whether it can come out in a dtype other than
    ``x``'s, so that the emitted code must cast it as torch's autograd does. One walk per probe dtype serves
    every gradient (a walk per gradient was quadratic in a network's depth)."""
    found = [False] * len(gradients)
    for probe in _PROBES:
        output_dtype = run_dtype(output, probe, forward=set(forward) | _ids(output), grad_output=None)
        known = _dtypes(gradients, probe, forward=forward, grad_output=grad_output, output_dtype=output_dtype)
        for k, (gradient, x) in enumerate(zip(gradients, xs, strict=True)):
            found[k] = found[k] or (is_floating(x.dtype) and known[id(gradient)] != probe)
    return found


def _ids(root: Tensor) -> set[int]:
    return {id(node) for node in topological(root)}
