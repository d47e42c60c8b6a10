"""How tensors print: numbers as torch prints them, formulas as SymPy's pretty printer does.

>>> format_numbers([[2.0, 4.0]])
'[[2., 4.]]'
>>> format_numbers([[2.5, 1.0]])
'[[2.5000, 1.0000]]'
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from .dims import format_shape, is_concrete
from .errors import SymbolicShapeError, SymgradError, TorchTypeError
from .graph import dims_of
from .latex import latex_name, matrix_latex, shape_latex
from .listing import listing
from .printers import LatexPrinter, TorchPrinter

if TYPE_CHECKING:
    from .tensor import Tensor

MAX_FORMULA_ENTRIES = 36


def to_number(value: Any, *, integer: bool = False) -> float | int:
    """One number as a Python float (int for integer tensors): ``oo`` is inf, anything undefined
    or not real (``zoo``, ``nan``, ``I``) is nan, as in torch's real tensors; zero is shown without a sign."""
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        # a negative zero is kept while computing (1 / -0.0 is -inf) and shown as 0.0: where torch's kernels and
        # symgrad's formulas reach a zero by different routes its sign can differ, and only 1 / x would tell
        return int(value) if integer and float(value).is_integer() else float(value) + 0.0
    number = sympy.sympify(value)
    if isinstance(number, sympy.logic.boolalg.BooleanAtom):
        return bool(number)
    if integer and number.is_Integer:
        return int(number)
    if not number.is_number:
        raise TorchTypeError(f"{number} is a formula, not a number")
    return _float(number)


def _float(number: sympy.Expr) -> float:
    if number is sympy.oo:
        return math.inf
    if number is sympy.S.NegativeInfinity:
        return -math.inf
    if number.is_extended_real is False or number.has(sympy.zoo, sympy.nan):
        return math.nan
    try:
        return float(number)
    except TypeError:
        value = complex(number)
        return value.real if value.imag == 0 else math.nan


def formula_states_value(formula: Any, value: Any) -> bool:
    """Whether a formula that is a plain number already says ``value`` (a float, nan included), so that a report
    may leave the value out; ``w / w`` is the formula 1 but the value nan at w = 0, and a report must show it.

    >>> formula_states_value(sympy.Integer(1), 1.0), formula_states_value(sympy.Integer(1), math.nan)
    (True, False)
    """
    number = sympy.sympify(formula)
    if not number.is_Number or value is None:
        return False
    stated = to_number(number)
    return stated == value or (math.isnan(stated) and math.isnan(value))


def numbers_to_python(numbers: np.ndarray) -> Any:
    """A numeric array as nested lists of Python numbers, a negative zero shown as 0.0 (see :func:`to_number`):
    the numbers keep their signed zeros (``signbit``, ``copysign`` and ``1 / x`` read them), but where torch's
    backward kernels write a zero gradient their sign is not followed, so none is shown."""
    if numbers.dtype.kind == "f":
        numbers = numbers + 0.0
    return numbers.tolist()


def to_python(arr: np.ndarray, *, integer: bool = False) -> Any:
    """An object array of SymPy numbers as nested lists of Python numbers."""
    flat = [to_number(v, integer=integer) for v in arr.reshape(-1)]
    if arr.ndim == 0:
        return flat[0]
    return np.array(flat, dtype=object).reshape(arr.shape).tolist()


def _number_strings(flat: list[float], integer: bool) -> list[str]:
    if integer:
        return [str(int(v)) for v in flat]
    finite = [abs(v) for v in flat if math.isfinite(v)]
    if all(math.isfinite(v) and float(v).is_integer() for v in flat) and max(finite, default=0) < 1e8:
        return [f"{v:.0f}." for v in flat]
    nonzero = [v for v in finite if v != 0]
    if nonzero and (
        max(nonzero) >= 1e8 or min(nonzero) < 1e-4 or (max(nonzero) / min(nonzero) > 1e3 and min(nonzero) < 1e-2)
    ):
        return [f"{v:.4e}" for v in flat]
    return [f"{v:.4f}" if math.isfinite(v) else str(v) for v in flat]


def format_numbers(values: Any, *, integer: bool = False, indent: int = 0) -> str:
    """Nested lists of numbers laid out the way torch prints tensors."""
    arr = np.array(values, dtype=float if not integer else object)
    flat = arr.reshape(-1).tolist()
    strings = _number_strings([float(v) for v in flat], integer)
    width = max((len(s) for s in strings), default=0)
    cells = np.array([s.rjust(width) for s in strings], dtype=object).reshape(arr.shape)
    return _nest(cells, indent)


def _nest(cells: np.ndarray, indent: int) -> str:
    if cells.ndim == 0:
        return str(cells.item())
    if cells.ndim == 1:
        return "[" + ", ".join(cells.tolist()) + "]"
    pad = " " * (indent + 1)
    sep = "," + "\n" * (cells.ndim - 1) + pad
    return "[" + sep.join(_nest(sub, indent + 1) for sub in cells) + "]"


MAX_EXPRESSION_TEXT = 80


def expression_text(t: Tensor) -> str:
    """A readable label for an unnamed tensor: its expression in torch spelling, e.g. ``(w @ x).sum()``."""
    if t.op is None:
        arr = t.entries()
        if arr.size == 1:
            return str(arr.reshape(-1)[0])
        numbers = all(sympy.sympify(v).is_number for v in arr.reshape(-1))
        if arr.size <= 4 and numbers:
            return f"tensor({to_python(arr)})"
        # a detached tensor keeps its formulas: a constant of the graph, though not of numbers
        return f"<{'constant' if numbers else 'formulas'} {'×'.join(map(str, arr.shape))}>"
    shape = f" ({'×'.join(map(str, t.shape))})" if t.shape else ""
    if _tree_size(t, MAX_EXPRESSION_TEXT) <= MAX_EXPRESSION_TEXT:  # else printing it may never end
        text = TorchPrinter().doprint(t)
        if len(text) <= MAX_EXPRESSION_TEXT:
            return text
        return f"{text[: MAX_EXPRESSION_TEXT - 1].rstrip()}…{shape}"  # its start, said to be cut
    return f"<{t.op.name} result{shape}>"


def _tree_size(t: Tensor, limit: int) -> int:
    """How many nodes ``t``'s expression has written out as a tree (a shared part counted at each use), counted
    up to just past ``limit``: a deep network's is astronomically large, and printing it would never end."""
    count, stack = 0, [t]
    while stack and count <= limit:
        node = stack.pop()
        count += 1
        stack.extend(node.inputs)
    return count


def _suffix(t: Tensor) -> str:
    parts = []
    if t.dtype not in ("float32", "int64"):
        parts.append(f"dtype=torch.{t.dtype}")
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{t.grad_fn.name}>")
    elif t.requires_grad:
        parts.append("requires_grad=True")
    return "".join(", " + p for p in parts)


def value_repr(t: Tensor) -> str:
    """``tensor([[5., 5.]], grad_fn=<MmBackward0>)``, or the shape when values are unknown."""
    try:
        numbers = format_numbers(t.tolist(), integer=t.dtype.startswith("int"), indent=len("tensor("))
    except SymgradError:
        numbers = f"<symbolic {format_shape(t.shape)}>"
    return f"tensor({numbers}{_suffix(t)})"


def formula_text(t: Tensor) -> str:
    """The entry formulas with SymPy's pretty printer, labelled with the tensor's name."""
    arr = t.entries()
    if arr.size > MAX_FORMULA_ENTRIES:
        first = sympy.pretty(arr.reshape(-1)[0], use_unicode=True)
        return f"{t.name}: {arr.size} entries, e.g. {t.name}[{', '.join('0' * 1 for _ in arr.shape)}] = {first}"
    if arr.ndim == 0:
        body = sympy.pretty(arr.item(), use_unicode=True)
    elif arr.size == 0:
        body = f"(no entries: shape {format_shape(t.shape)})"
    elif arr.ndim <= 2:
        body = sympy.pretty(sympy.Matrix(arr.reshape(arr.shape[0], -1)), use_unicode=True)
    else:
        body = str(arr.tolist())
    lines = body.split("\n")
    label = f"{t.name} = "
    middle = (len(lines) - 1) // 2
    return "\n".join((label if i == middle else " " * len(label)) + line for i, line in enumerate(lines))


def law_text(t: Tensor) -> str:
    """A tensor at symbolic sizes (a law) as its name, or its whole expression, never cut short: when that is
    long, the parts it uses more than once are named first (``t1 = torch.tanh(W1 @ X + b1)``), as the CLI does."""
    if t.op is None or t.given_name is not None:
        return t.name
    text = None
    if _tree_size(t, MAX_EXPRESSION_TEXT) <= MAX_EXPRESSION_TEXT:  # else written out as a tree it never ends
        text = TorchPrinter().doprint(t)
        if len(text) <= MAX_EXPRESSION_TEXT:
            return text
    found = listing([("", t)])
    if text is None and not found.definitions:
        text = TorchPrinter().doprint(t)  # a tree after all: nothing is shared
    if not found.definitions:
        return text
    return "".join(f"\n    {name} = {body}" for name, body in found.definitions) + f"\n    {found.results[0][1]}"


def tensor_repr(t: Tensor) -> str:
    # a law (its shape, or a size it sums over, is symbolic): no numbers and no entries at every size
    if not all(isinstance(d, int) for d in t.shape) or dims_of([t]):
        text = law_text(t)
        return f"tensor(<symbolic {format_shape(t.shape)}>{_suffix(t)}) named{'' if text[0] == chr(10) else ' '}{text}"
    try:
        return value_repr(t) + "\n" + formula_text(t)
    except SymbolicShapeError:
        return f"tensor(<symbolic {format_shape(t.shape)}>{_suffix(t)}) named {t.name}"


def tensor_latex(t: Tensor) -> str:
    """``$w = \\begin{pmatrix}…\\end{pmatrix}$`` for notebooks; a symbolic shape shows the expression
    (``$W X + b \\in \\mathbb{R}^{k \\times 1}$``), a large tensor keeps its corners."""
    try:
        arr = t.entries() if is_concrete(t.shape) else None
    except SymbolicShapeError:  # a concrete result of symbolic-size inputs (a bias's gradient over a batch n)
        arr = None
    if arr is None:
        body = latex_name(t.name) if t.op is None else LatexPrinter().doprint(t)
        return rf"${body} \in \mathbb{{R}}^{{{shape_latex(t.shape)}}}$" if t.shape else f"${body}$"
    cells = np.array([sympy.latex(sympy.sympify(e)) for e in arr.reshape(-1)], dtype=object).reshape(arr.shape)
    return f"${latex_name(t.name)} = {matrix_latex(cells)}$"
