"""Printers for tensor expressions: torch text and LaTeX.

Printers dispatch on the node, the way SymPy's do: a method ``_print_<op>``
when one exists, otherwise the op row's template (``code`` or ``latex``). A
tensor uses them to name itself (``(w @ x).sum()``); :mod:`symgrad.emit` builds
code printers and listings on top of them.

>>> from symgrad.core import symbols
>>> import symgrad.ops  # the op table
>>> W, X = symbols("W", (2, 3)), symbols("X", (3, 4))
>>> TorchPrinter().doprint(2 * (W @ X).T)
'2 * (W @ X).T'
>>> LatexPrinter().doprint(2 * (W @ X).T)
'2 \\\\left(W X\\\\right)^{\\\\top}'
"""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

import sympy

from .dims import count
from .dtypes import is_floating
from .graph import in_dependency_order, uniform_constant
from .indexing import index_shape
from .latex import latex_name, takes_script
from .spelling import describe

if TYPE_CHECKING:
    from .tensor import Tensor

ATOM = 10


class Printer:
    """Shared machinery: precedence-aware templates and names for shared nodes."""

    template_field = "code"

    def __init__(self, names: dict[int, str] | None = None) -> None:
        self.names = names if names is not None else {}

    def doprint(self, t: Tensor) -> str:
        return self._print(t)[0]

    def _print(self, t: Tensor) -> tuple[str, int]:
        if id(t) in self.names:
            return self.names[id(t)], ATOM
        if t.given_name is not None and t.op is not None:  # a named result (e.g. in the REPL) prints by its name
            return t.given_name, ATOM
        if t.op is None:
            value = uniform_constant(t)
            if value is not None and (t.is_python_scalar or not t.shape):
                return self._print_number(value)
            return self._print_leaf(t), ATOM
        method = getattr(self, f"_print_{t.op.name}", None)
        if method is not None:
            return method(t)
        return self._print_template(t)

    def _print_div(self, t: Tensor) -> tuple[str, int]:
        """A sum divided by the number of entries it adds is written as the mean it is (``X.mean(dim=0)``)."""
        mean = _as_mean(t)
        return self._print(mean) if mean is not None else self._print_template(t)

    def _print_number(self, value: sympy.Expr) -> tuple[str, int]:
        if value in (sympy.nan, sympy.oo, -sympy.oo):
            text = {sympy.nan: "math.nan", sympy.oo: "math.inf"}.get(value, "-math.inf")
        elif value.is_Float:
            text = repr(float(value))
        elif value.is_Number:
            text = str(value)
        else:  # made of symbolic sizes, or sqrt(2): torch code sees them as Python numbers (math.sqrt(2))
            text = size_source(value)
        return text, number_precedence(value)

    def _print_leaf(self, t: Tensor) -> str:
        return t.name

    def _wrap(self, text: str) -> str:
        return f"({text})"

    def label(self, name: str) -> str:
        """How a name given to a shared subexpression is written."""
        return name

    def _print_template(self, t: Tensor) -> tuple[str, int]:
        assert t.op is not None
        mine = t.op.precedence
        template = getattr(t.op, self.template_field)
        # the template with its attributes filled in and a marker for each input: what surrounds an input is
        # known even when an attribute's field writes it (``{sum_before}{0}{sum_after}``)
        markers = [f"\x00{position}\x00" for position in range(len(t.inputs))]
        fields = {"inputs": ", ".join(markers), **describe(t.op, t.attrs, t.inputs)}  # {inputs}: any number
        skeleton = template.format(*markers, **fields)
        parts = []
        for position, part in enumerate(t.inputs):
            text, theirs = self._print(part)
            bracketed = enclosed(skeleton, position, markers[position])
            # x * y @ z reads badly; a + b - c does not
            mixed = theirs == mine == 5 and part.op is not None and part.op.name != t.op.name
            prefix = template.startswith("-")  # -(-x) and -(x ** 2) keep their parentheses, as ruff writes them
            nested_prefix = prefix and part.op is not None and (theirs <= mine or part.op.name == "pow")
            same_level = (theirs == mine and (position > 0 or mixed)) and mine < ATOM - 1
            followed = [after for before, after in _around(skeleton, markers[position])]
            if (not bracketed and (nested_prefix or theirs < mine or same_level)) or self._splits(text, followed):
                text = self._wrap(text)
            parts.append(text)
        if template == "{0} + {1}" and parts[1].startswith("-"):  # a + -2 * b reads as a - 2 * b
            return f"{parts[0]} - {parts[1][1:]}", mine
        for marker, text in zip(markers, parts):
            skeleton = skeleton.replace(marker, text)
        return skeleton, mine

    def _splits(self, text: str, followed: list[str]) -> bool:
        """Whether what follows an input in its template (``^{2}`` in LaTeX) would attach to a part of it only."""
        return False


def number_precedence(value: sympy.Expr) -> int:
    """How tightly a printed number binds, on the scale of the op table's precedences."""
    if value is sympy.nan:
        return ATOM
    if value.is_Number:
        return ATOM if value >= 0 else 6
    if value.is_Add:
        return 4
    if value.is_Mul or (value.is_Pow and value.exp.is_negative):
        return 5
    if value.is_Pow:
        return 7
    return ATOM


def _index_latex(item: object) -> str:
    """One index item in a subscript: ``3``, ``\\cdot`` for a whole dimension, ``1{:}4`` for a range."""
    if isinstance(item, slice):
        if item == slice(None):
            return r"\cdot"
        ends = ["" if end is None else str(end) for end in (item.start, item.stop)]
        step = "" if item.step is None else f"{{:}}{item.step}"
        return f"{ends[0]}{{:}}{ends[1]}{step}"
    return str(item)


def enclosed(template: str, position: int, marker: str | None = None) -> bool:
    """Whether the template already brackets this argument: ``f({0})``, ``\\sqrt{{{0}}}``, ``g({0}, {1})``
    (the argument is written ``marker``, by default ``{position}``)."""
    around = _around(template, f"{{{position}}}" if marker is None else marker)
    opens = [before.endswith(("(", ",", "{", "left(", "[")) or before.endswith("{{") for before, _ in around]
    closes = [after.startswith((")", ",", "}", "\\right", "]")) for _, after in around]
    return all(opens) and all(closes)


def _around(text: str, marker: str) -> list[tuple[str, str]]:
    """What stands before and after each place ``marker`` is in ``text``, spaces stripped."""
    pieces = text.split(marker)
    return [(before.rstrip(), after.lstrip()) for before, after in itertools.pairwise(pieces)]


class TorchPrinter(Printer):
    """torch spelling: ``V @ X.T``.

    Tensors a law makes (zeros, a select between numbers) take the dtype of a tensor it reads (``like``: by
    default the first floating-point input met), so the printed law runs in float64 as in float32:

    >>> from symgrad.core import apply, symbols
    >>> import symgrad.ops
    >>> x = symbols("x", (2, 3))
    >>> TorchPrinter().doprint(apply("where", apply("le", x, 0), 0, 1.0))
    'torch.where(x <= 0, 0, 1.0).to(x.dtype)'
    """

    template_field = "code"
    like: str | None = None

    def doprint(self, t: Tensor) -> str:
        if self.like is not None:
            return super().doprint(t)
        self.like = first_float_input(t, self.names)
        try:
            return super().doprint(t)
        finally:
            self.like = None

    def _print_full(self, t: Tensor) -> tuple[str, int]:
        if self.like is None:
            return self._print_template(t)
        value, _ = self._print_number(sympy.sympify(t.attrs["value"]))
        shape = tuple_text([self._size(d) for d in t.attrs["shape"]])
        return f"{self.like}.new_full({shape}, {value})", ATOM - 1

    def _print_where(self, t: Tensor) -> tuple[str, int]:
        """A select between numbers (relu's derivative under an implicit gradient of 1) makes a tensor of
        torch's default dtype: it is cast to ``like``'s."""
        text, precedence = self._print_template(t)
        branches = t.inputs[1:]
        numbers = all(part.op is None and not part.shape and uniform_constant(part) is not None for part in branches)
        if numbers and self.like is not None:
            return f"{text}.to({self.like}.dtype)", ATOM - 1
        return text, precedence

    def _print_step(self, t: Tensor) -> tuple[str, int]:
        """relu's step (0 at 0 and at nan) as ``torch.sign(torch.relu(x))`` and the step with 1/2 at 0 of
        maximum's ties as ``(torch.sign(d) + 1) / 2``: runnable torch in x's dtype, which
        ``torch.heaviside(x, 0)`` is not (its second argument must be a tensor of x's dtype), and which
        ``x > 0`` is not everywhere (``3 * (x > 0)`` is an integer tensor that ``@`` refuses with floats)."""
        text, _ = self._print(t.inputs[0])
        at_zero = sympy.sympify(t.attrs["at_zero"])
        if at_zero == 0:
            return f"torch.sign(torch.relu({text}))", ATOM
        if at_zero == sympy.S.Half:
            return f"(torch.sign({text}) + 1) / 2", 5
        return f"torch.heaviside({text}, torch.tensor({float(at_zero)!r}))", ATOM

    def _print_index_backward(self, t: Tensor) -> tuple[str, int]:
        """``x[i, a:b]``'s gradient as torch spells the scatter: zeros of x's shape with g put back, one
        ``select_scatter`` or ``slice_scatter`` per index (``g.new_zeros((k, n)).select_scatter(g, 0, 0)``).
        An index with lists, ``None`` or ``...`` keeps symgrad's ``index_backward`` spelling."""
        (g,) = t.inputs
        index, shape = tuple(t.attrs["index"]), tuple(t.attrs["shape"])
        if not index or not all(isinstance(i, (int, slice)) and not isinstance(i, bool) for i in index):
            return self._print_template(t)
        return scatter_text(self._print(g)[0], shape, index, self._size, self.like), ATOM - 1  # no brackets needed

    def _size(self, value: object) -> str:
        return str(value) if isinstance(value, int) else self._print_number(sympy.sympify(value))[0]


def tuple_text(parts: Sequence[str]) -> str:
    """Items as a Python tuple, written as ruff writes it: ``()``, ``(n,)``, ``(2, 3)``."""
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def scatter_text(grad: str, shape: tuple, index: tuple, size, like: str | None = None) -> str:
    """``grad`` put back where ``x[index]`` took it from, in zeros of ``shape``: ints and slices, item by item.

    >>> scatter_text("g", (3, 4), (1, slice(2, None)), str)
    'g.new_zeros((3, 4)).select_scatter(g.new_zeros((4,)).slice_scatter(g, 0, 2, None, 1), 0, 1)'
    >>> scatter_text("2 * h", (3, 4), (slice(None), 0), str)
    'torch.zeros((3, 4)).select_scatter(2 * h, 1, 0)'
    """
    views, dims = [shape], []
    for item in index:  # each item acts on the next dim of the view the items before it left
        dim = sum(1 for earlier in index[: len(dims)] if not isinstance(earlier, int))
        dims.append(dim)
        views.append(index_shape(views[-1], (slice(None),) * dim + (item,)))
    out = grad
    # zeros of g's dtype and device (or those of ``like``, a tensor the expression reads)
    maker = f"{grad}.new_zeros" if grad.isidentifier() else f"{like}.new_zeros" if like else "torch.zeros"
    for item, dim, view in reversed(list(zip(index, dims, views))):
        if item == slice(None):
            continue  # x[:, 1] takes all of dim 0: nothing to put back there
        zeros = f"{maker}({tuple_text([size(d) for d in view])})"
        if isinstance(item, int):
            out = f"{zeros}.select_scatter({out}, {dim}, {item})"
        else:
            start = 0 if item.start is None else item.start
            out = f"{zeros}.slice_scatter({out}, {dim}, {start}, {item.stop}, {item.step or 1})"
    return out


def first_float_input(t: Tensor, names: dict[int, str] | None = None) -> str | None:
    """How the printer names the first floating-point input ``t`` reads (a tensor whose dtype new tensors can
    take): its name in ``names`` if it has one there, else its own."""
    for node in in_dependency_order([t]):
        if node.op is None and is_floating(node.dtype) and uniform_constant(node) is None:
            name = (names or {}).get(id(node), node.name)
            if unicodedata.normalize("NFKC", name).isidentifier():
                return name
    return None


class LatexPrinter(Printer):
    """LaTeX: ``V X^{\\top}``, ``\\odot`` for elementwise products."""

    template_field = "latex"

    def _print_leaf(self, t: Tensor) -> str:
        return latex_name(t.name)

    def label(self, name: str) -> str:
        return latex_name(name)

    def _print_number(self, value: sympy.Expr) -> tuple[str, int]:
        if value.is_Float and float(value).is_integer():  # 1.0 is a float in code for its dtype; in math it is 1
            value = sympy.Integer(int(value))
        return sympy.latex(value), number_precedence(value)

    def _wrap(self, text: str) -> str:
        return rf"\left({text}\right)"

    def _print_index(self, t: Tensor) -> tuple[str, int]:
        """``x[i, :]`` as ``x_{i,\\cdot}``; a pure broadcast (``None``, ``:``, ``...``) adds nothing in maths,
        so ``g[None][:, None]`` is ``g``. A base that already has a script is bracketed."""
        (base,) = t.inputs
        index = t.attrs["index"]
        text, precedence = self._print(base)
        parts = [_index_latex(item) for item in index if item is not None and item is not Ellipsis]
        if all(part == r"\cdot" for part in parts):
            return text, precedence
        if precedence < ATOM or self._splits(text, ["_"]):
            text = self._wrap(text)
        return f"{text}_{{{','.join(parts)}}}", ATOM

    def _splits(self, text: str, followed: list[str]) -> bool:
        """A script after an input must apply to all of it, and never be a second one: ``X^{\\top}`` squared
        is ``\\left(X^{\\top}\\right)^{2}``, not a double superscript, and ``\\sum x`` transposed is bracketed."""
        return any(after[:1] in ("^", "_", "'") and not takes_script(text, after[:1]) for after in followed)

    def _print_mul(self, t: Tensor) -> tuple[str, int]:
        """A scalar factor is juxtaposed (``2 X``); two tensors get the Hadamard product ``\\odot``."""
        a, b = t.inputs
        if a.shape and b.shape:
            return self._print_template(t)
        left, right = (self._print(part) for part in (a, b))
        parts = [text if prec >= 5 else self._wrap(text) for text, prec in (left, right)]
        return " ".join(parts), 5


def size_source(value: sympy.Expr) -> str:
    """A number made of sizes as Python, spaced the way ``ruff format`` spaces it: ``1 / math.sqrt(d)``."""
    if value.is_Integer or value.is_Symbol:
        return str(value)
    if value.is_Rational:
        return f"{value.p} / {value.q}"
    if value.is_Float:
        return repr(float(value))
    if value == sympy.pi:
        return "math.pi"
    if value.is_Add:
        return " + ".join(size_source(a) for a in sympy.Add.make_args(value)).replace("+ -", "- ")
    if value.is_Pow and value.exp == sympy.S.Half:
        return f"math.sqrt({size_source(value.base)})"
    numerator, denominator = sympy.fraction(value)
    if denominator != 1:
        top, bottom = size_source(numerator), size_source(denominator)
        top = top if numerator.is_Atom or numerator.is_Pow else f"({top})"
        simple_bottom = denominator.is_Atom or (denominator.is_Pow and denominator.exp == sympy.S.Half)
        return f"{top} / {bottom if simple_bottom else f'({bottom})'}"
    if value.is_Mul:
        return " * ".join(size_source(a) if not a.is_Add else f"({size_source(a)})" for a in value.args)
    if value.is_Pow:
        return f"{size_source(value.base)}**{size_source(value.exp)}"
    return sympy.pycode(value, fully_qualified_modules=True)


def _as_mean(t: Tensor) -> Tensor | None:
    """``x.sum(dims) / n`` as ``x.mean(dims)`` where ``n`` is the number of entries the sum adds, else None."""
    total, divisor = t.inputs
    if total.op is None or total.op.name != "sum" or not total.attrs["dim"] or divisor.shape:
        return None
    summed = total.inputs[0]
    value = uniform_constant(divisor)
    added = count(summed.shape, total.attrs["dim"])
    if value is None or not is_floating(summed.dtype) or sympy.simplify(value - added) != 0:
        return None
    return summed.mean(dim=tuple(total.attrs["dim"]), keepdim=total.attrs["keepdim"])
