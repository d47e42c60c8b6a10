"""``torch.autograd.functional``: Jacobians, Hessians and products with them, with torch's signatures
and result layouts (a tensor for one input and one output, tuples otherwise).

>>> import symgrad.torch as torch
>>> x = torch.tensor([1.0, 2.0], name="x")
>>> torch.autograd.functional.hessian(lambda x: (x**3).sum(), x).tolist()
[[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core.errors import TorchRuntimeError, UnsupportedError
from ...core.tensor import Tensor
from ...derive.jacobians import jacobian_tensor
from ...derive.reverse import implicit_grad
from ...derive.transforms import as_tensors, jacobian_vector, vector_jacobian


def _shaped(values: list, like: Any) -> Any:
    """A list back in the structure of ``like``: a tensor for a tensor, a tuple for a tuple."""
    return tuple(values) if isinstance(like, (tuple, list)) else values[0]


def _outputs(func: Callable, inputs: list[Tensor]) -> tuple[Any, list[Tensor]]:
    result = func(*inputs)
    return result, as_tensors(result, "the function's outputs")


def _no_options(create_graph: bool, strict: bool) -> None:
    if strict:
        raise UnsupportedError("strict=True is not supported: symgrad does not track which outputs ignore the inputs")
    del create_graph  # symgrad's gradients are graphs anyway: they can always be differentiated again


def jacobian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """d func / d inputs: a tensor of shape ``out.shape + in.shape`` (nested tuples for tuples)."""
    _no_options(create_graph, strict)
    xs = as_tensors(inputs, "inputs")
    result, outs = _outputs(func, xs)
    rows = [_shaped([jacobian_tensor(out, x) for x in xs], inputs) for out in outs]
    return _shaped(rows, result)


def hessian(
    func: Callable,
    inputs: Any,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a one-element ``func``: shape ``in.shape + in.shape`` (tuples of tuples for tuples)."""
    _no_options(create_graph, strict)
    xs = as_tensors(inputs, "inputs")
    _, outs = _outputs(func, xs)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise TorchRuntimeError("The function given to hessian should return a single Tensor with a single element.")
    out = outs[0].reshape(()) if outs[0].shape else outs[0]
    gradients = vector_jacobian([out], xs, [implicit_grad(out)])
    rows = [_shaped([jacobian_tensor(g, x) for x in xs], inputs) for g in gradients]
    return _shaped(rows, inputs)


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), vᵀJ) with vᵀJ shaped like ``inputs``."""
    _no_options(create_graph, strict)
    xs = as_tensors(inputs, "inputs")
    result, outs = _outputs(func, xs)
    vs = [implicit_grad(o) for o in outs] if v is None else as_tensors(v, "v")
    return result, _shaped(vector_jacobian(outs, xs, vs), inputs)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J·v) with J·v shaped like the outputs."""
    _no_options(create_graph, strict)
    xs = as_tensors(inputs, "inputs")
    if v is None:
        if any(x.numel() != 1 for x in xs):
            raise TorchRuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        v = [implicit_grad(x) for x in xs]
    result, outs = _outputs(func, xs)
    return result, _shaped(jacobian_vector(outs, xs, as_tensors(v, "v")), result)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), vᵀH) for a one-element ``func``, shaped like ``inputs``."""
    _no_options(create_graph, strict)
    xs = as_tensors(inputs, "inputs")
    result, outs = _outputs(func, xs)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise TorchRuntimeError("The function given to vhp should return a single Tensor with a single element.")
    vs = as_tensors(v, "v") if v is not None else [implicit_grad(x) for x in xs]
    gradients = vector_jacobian(outs, xs, [implicit_grad(outs[0])])
    pairing = None
    for g, u in zip(gradients, vs, strict=True):
        term = (g * u).sum()
        pairing = term if pairing is None else pairing + term
    return result, _shaped(vector_jacobian([pairing], xs, [implicit_grad(pairing)]), inputs)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H·v): the same as :func:`vhp`, the Hessian being symmetric."""
    return vhp(func, inputs, v, create_graph, strict)


__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
