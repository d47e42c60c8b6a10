"""Products and linear algebra at the top of torch: ``mm``, ``matmul``, ``einsum``, ``det``, ``inverse``."""

from __future__ import annotations

import string
from typing import Any

from ..core.dims import format_shape as _format_shape
from ..core.dims import normalize_dims
from ..core.errors import ShapeError as _ShapeError
from ..core.errors import TorchRuntimeError, TorchTypeError, TorchValueError
from ..core.errors import UnsupportedError as _UnsupportedError
from ..core.tensor import Tensor, apply, wrap
from ..ops.linalg import LETTERS as _LETTERS
from ..ops.linalg import einsum_op
from ..ops.linalg import einsum_parts as _einsum_parts
from . import linalg as _linalg

_MAX_OPERANDS = 8
_builtins_max = max


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    return apply("mm", input, mat2)


def matmul(input: Tensor, other: Tensor) -> Tensor:
    return apply("matmul", input, other)


def trace(input: Tensor) -> Tensor:
    return input.trace()


def det(input: Tensor) -> Tensor:
    return apply("det", input)


def logdet(input: Tensor) -> Tensor:
    return apply("logdet", input)


def inverse(input: Tensor) -> Tensor:
    return apply("inv", input)


def _einsum_subscripts(equation: str, shapes: list) -> str:
    """The equation in symgrad's form: an explicit output, and each ``...`` spelled with letters of its own
    (torch's rules: ellipsis dims broadcast from the right, the implicit output is the ellipsis dims and then
    the letters used once, in alphabetical order)."""
    text = equation.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    subscripts = inputs.split(",")
    if len(subscripts) != len(shapes):
        more = "more" if len(shapes) > len(subscripts) else "fewer"
        raise TorchRuntimeError(
            f"einsum(): {more} operands were provided than specified in the equation (the equation {equation!r} "
            f"has {len(subscripts)}, {len(shapes)} were given)"
        )
    for part in [*subscripts, output]:
        letters = part.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in letters):
            raise TorchRuntimeError(
                f"einsum(): invalid subscript given at index {text.find(part)} in the equation string"
            )
    ellipsis_dims = []
    for position, (part, shape) in enumerate(zip(subscripts, shapes)):
        letters = len(part) - 3 if "..." in part else len(part)
        if ("..." in part and letters > len(shape)) or ("..." not in part and letters != len(shape)):
            raise TorchRuntimeError(
                f"einsum(): the number of subscripts in the equation ({letters}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {position}"
                + ("" if "..." in part else " and no ellipsis was given")
            )
        ellipsis_dims.append(len(shape) - letters if "..." in part else 0)
    used = set(text)
    spare = "".join(c for c in _LETTERS if c not in used)[: _builtins_max(ellipsis_dims, default=0)]
    subscripts = [p.replace("...", spare[len(spare) - e :] if e else "") for p, e in zip(subscripts, ellipsis_dims)]
    letters = "".join(subscripts)
    if not arrow:
        output = spare + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in spare))
    else:
        output = output.replace("...", spare)
        if len(set(output)) != len(output) or not set(output) <= set(letters):
            raise TorchRuntimeError(f"einsum(): output subscripts {output!r} must be distinct and appear in the inputs")
    return f"{','.join(subscripts)}->{output}"


def _sublist_equation(arguments: tuple) -> tuple[str, tuple]:
    """torch's sublist form, ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as an equation and its operands."""
    output = arguments[-1] if len(arguments) % 2 else None  # (operand, sublist) pairs, then maybe the output's
    pairs = arguments[:-1] if output is not None else arguments
    operands, subscripts = pairs[0::2], pairs[1::2]

    def letters(sublist: Any) -> str:
        if not isinstance(sublist, (list, tuple)):
            raise TorchTypeError(f"einsum(): a sublist must be a list of ints, not {type(sublist).__name__}")
        out = ""
        for item in sublist:
            if item is Ellipsis:
                out += "..."
            elif isinstance(item, int) and not isinstance(item, bool) and 0 <= item < 52:
                out += string.ascii_letters[item]
            else:
                raise TorchValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return out

    equation = ",".join(letters(sub) for sub in subscripts)
    if output is not None:
        equation += "->" + letters(output)
    return equation, tuple(operands)


def einsum(equation: Any, *operands: Any) -> Tensor:
    """Einstein summation of any number of operands, e.g. ``einsum("ij,jk->ik", a, b)``, with ``...``,
    diagonals (``"ii->i"``) and torch's broadcasting of size-1 dims; also in torch's sublist form,
    ``einsum(a, [0, 1], b, [1, 2])``."""
    if isinstance(equation, Tensor):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TorchTypeError(f"einsum(): the equation must be a string, not {type(equation).__name__}")
    if not operands or not all(isinstance(t, Tensor) for t in operands):
        raise TorchTypeError("einsum(): operands must be tensors")
    if len(operands) > _MAX_OPERANDS:
        raise _UnsupportedError(f"einsum() with {len(operands)} operands is not supported (at most {_MAX_OPERANDS})")
    explicit = _einsum_subscripts(equation, [t.shape for t in operands])
    factored = _factored(operands, explicit)
    return factored if factored is not None else einsum_op(*operands, equation=explicit)


def _factored(operands: tuple, equation: str) -> Tensor | None:
    """An einsum whose operands fall into groups that share no subscript, as the product of each group's own
    einsum (``a,b->`` is ``a.sum() * b.sum()``): the same numbers, without a sum over every combination of the
    groups' entries (eight vectors of 3 made 6,561 terms); None when the operands are all connected."""
    subscripts, output = _einsum_parts(equation)
    groups: list[tuple[set[str], list[int]]] = []
    for k, letters in enumerate(subscripts):
        joined = [g for g in groups if g[0] & set(letters)]
        merged = (set(letters).union(*(g[0] for g in joined)), sorted([k, *(i for g in joined for i in g[1])]))
        groups = [g for g in groups if all(g is not j for j in joined)] + [merged]
    if len(groups) < 2:
        return None
    result = None
    for letters, members in sorted(groups, key=lambda g: g[1]):
        own = "".join(c for c in output if c in letters)
        part = einsum_op(*(operands[i] for i in members), equation=f"{','.join(subscripts[i] for i in members)}->{own}")
        part = part.reshape(*(part.shape[own.index(c)] if c in own else 1 for c in output))
        result = part if result is None else result * part
    return result


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract the last ``dims`` dims of a with the first ``dims`` of b, or the dims of two lists."""
    if isinstance(dims, int):
        if dims < 0:
            raise TorchRuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        left, right = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        left, right = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(left) != len(right):
        raise TorchRuntimeError("both dimension lists should have same length")
    left = [normalize_dims(d, a.ndim)[0] for d in left]
    right = [normalize_dims(d, b.ndim)[0] for d in right]
    for i, j in zip(left, right):
        if a.shape[i] != b.shape[j] and 1 not in (a.shape[i], b.shape[j]):  # a size-1 dim broadcasts, as in torch
            raise _ShapeError(
                f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} and second has "
                f"size {b.shape[j]} in dim {j}"
            )
    first = _LETTERS[: a.ndim]
    second = [None] * b.ndim
    for i, j in zip(left, right):
        second[j] = first[i]
    free = iter(_LETTERS[a.ndim :])
    second = "".join(c if c is not None else next(free) for c in second)
    output = "".join(c for k, c in enumerate(first) if k not in left) + "".join(
        c for k, c in enumerate(second) if k not in right
    )
    return einsum_op(a, b, equation=f"{first},{second}->{output}")


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """``input[:, None] * vec2[None, :]`` for 1-D tensors."""
    return apply("outer", input, vec2)


ger = outer


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # torch's keyword names
    """``(input * tensor).sum()`` for 1-D tensors of the same size."""
    other = tensor
    if input.ndim != 1 or other.ndim != 1:
        raise _ShapeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    (n,), (m,) = input.shape, other.shape
    if n != m:
        raise _ShapeError(
            f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number of elements, "
            f"but got {n} and {m} elements respectively"
        )
    return (input * other).sum()


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Batched matrix product of two 3-D tensors with the same batch size."""
    for what, t in (("batch1", input), ("batch2", mat2)):
        if t.ndim != 3:
            raise _ShapeError(f"{what} must be a 3D tensor")
    if mat2.shape[:2] != (input.shape[0], input.shape[2]):
        expected = [input.shape[0], input.shape[2]]
        raise _ShapeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{expected[0]}, {expected[1]}] but got: "
            f"[{mat2.shape[0]}, {mat2.shape[1]}]. (shapes {_format_shape(input.shape)} and "
            f"{_format_shape(mat2.shape)})"
        )
    return apply("matmul", input, mat2)


def addmm(input: Any, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; with beta = 0, ``input`` is ignored (as in torch)."""
    product = apply("mm", mat1, mat2)
    if alpha != 1:
        product = alpha * product
    return _plus_scaled(product, input, beta)


def baddbmm(input: Any, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for 3-D batches; with beta = 0, ``input`` is ignored."""
    product = bmm(batch1, batch2)
    if alpha != 1:
        product = alpha * product
    return _plus_scaled(product, input, beta)


def _plus_scaled(product: Tensor, input: Any, beta: Any) -> Tensor:
    """``beta * input + product``; with beta = 0, input's values are ignored (a nan in it does not show), but a
    tensor that requires grad still gets torch's gradient g * 0."""
    if beta != 0:
        return (wrap(input) if beta == 1 else beta * wrap(input)) + product
    if isinstance(input, Tensor) and input.requires_grad:
        return product + apply("ignored", input)
    return product


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise _ShapeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    return apply("matmul", input, vec)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """torch.cholesky (deprecated in torch for torch.linalg.cholesky, which it equals)."""
    return _linalg.cholesky(input, upper=upper)


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """Refused, as torch.linalg.svd."""
    return _linalg.svd(input)


__all__ = [
    "addmm", "baddbmm", "bmm", "cholesky", "det", "dot", "einsum", "ger", "inverse", "logdet", "matmul", "mm", "mv",
    "outer", "svd", "tensordot", "trace",
]  # fmt: skip
