"""``torch.func``: grad, grad_and_value, vjp, jvp, jacrev, jacfwd and hessian on symgrad tensors.

Each transform takes a function and returns one; calling it calls the function once on the given
(symbolic) tensors and differentiates the result, with torch.func's argument conventions
(``argnums``, ``has_aux``) and result layouts.

>>> import symgrad.torch as torch
>>> x = torch.tensor([1.0, 2.0], name="x")
>>> torch.func.grad(lambda x: (x**3).sum())(x).tolist()
[3.0, 12.0]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import TorchRuntimeError
from ..core.tensor import Tensor
from ..derive.jacobians import jacobian_tensor
from ..derive.reverse import implicit_grad
from ..derive.transforms import as_tensors, jacobian_vector, vector_jacobian


def _selected(args: tuple, argnums: int | tuple[int, ...]) -> list[Tensor]:
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    return as_tensors([args[p] for p in positions], "the differentiated arguments")


def _split(result: Any, has_aux: bool) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not isinstance(result, tuple) or len(result) != 2:
        raise TorchRuntimeError("func with has_aux=True must return a tuple (output, aux)")
    return result


def _layout(values: list, argnums: int | tuple[int, ...]) -> Any:
    return values[0] if isinstance(argnums, int) else tuple(values)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning (gradient, value) of a one-element ``func``."""

    def transformed(*args: Any) -> tuple:
        output, aux = _split(func(*args), has_aux)
        if not isinstance(output, Tensor) or output.numel() != 1:
            raise TorchRuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor")
        xs = _selected(args, argnums)
        grads = _layout(vector_jacobian([output], xs, [implicit_grad(output)]), argnums)
        return (grads, (output, aux)) if has_aux else (grads, output)

    return transformed


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of a one-element ``func`` (and its aux with ``has_aux``)."""
    both = grad_and_value(func, argnums, has_aux)

    def transformed(*args: Any) -> Any:
        grads, value = both(*args)
        return (grads, value[1]) if has_aux else grads

    return transformed


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(output, vjp_fn[, aux]): ``vjp_fn(cotangents)`` gives vᵀJ for every primal, as a tuple."""
    output, aux = _split(func(*primals), has_aux)
    outs = as_tensors(output, "the function's outputs")
    xs = as_tensors(list(primals), "primals")

    def vjp_fn(cotangents: Any) -> tuple:
        return tuple(vector_jacobian(outs, xs, as_tensors(cotangents, "cotangents")))

    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jvp(func: Callable, primals: Any, tangents: Any, has_aux: bool = False) -> tuple:
    """(output, J·tangents[, aux])."""
    xs = as_tensors(primals, "primals")
    output, aux = _split(func(*xs), has_aux)
    outs = as_tensors(output, "the function's outputs")
    moved = jacobian_vector(outs, xs, as_tensors(tangents, "tangents"))
    result = tuple(moved) if isinstance(output, (tuple, list)) else moved[0]
    return (output, result, aux) if has_aux else (output, result)


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """A function returning d func / d args[argnums], shape ``out.shape + arg.shape``."""

    def transformed(*args: Any) -> Any:
        output, aux = _split(func(*args), has_aux)
        xs = _selected(args, argnums)
        outs = as_tensors(output, "the function's outputs")
        per_output = [_layout([jacobian_tensor(o, x) for x in xs], argnums) for o in outs]
        result = tuple(per_output) if isinstance(output, (tuple, list)) else per_output[0]
        return (result, aux) if has_aux else result

    return transformed


jacfwd = jacrev  # the same Jacobian: symgrad derives its entries, whichever mode torch would use


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """A function returning the Hessian of a one-element ``func``: the Jacobian of its gradient, labelled by what it
    is (``d²(torch.sin(x).sum())/dx²``), not by the gradient's graph."""
    both = grad_and_value(func, argnums)

    def transformed(*args: Any) -> Any:
        grads, value = both(*args)
        xs = _selected(args, argnums)
        f = value.name if len(value.name) <= 40 else "f"
        rows = [
            _layout([jacobian_tensor(g, x, name=_second_derivative(f, row, x)) for x in xs], argnums)
            for g, row in zip(as_tensors(grads, "the gradients"), xs)
        ]
        return _layout(rows, argnums)

    return transformed


def _second_derivative(f: str, first: Tensor, second: Tensor) -> str:
    """``d²f/dx²``, or ``d²f/dx dy`` for two inputs: how a Hessian block is labelled."""
    f = f if f.isidentifier() else f"({f})"
    if first is second:
        return f"d²{f}/d{first.name}²"
    return f"d²{f}/d{first.name} d{second.name}"


__all__ = ["grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp"]
