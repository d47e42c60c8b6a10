"""Reading expression text safely: a syntax tree checked against a whitelist, and literal numbers.

:func:`ast.parse` splits the text into a tree; nothing in it is ever evaluated. The
tree is refused before any work is done when it is too long, too deep, or uses a
construct outside the whitelist (``lambda``, comprehensions, ``__dunder__`` names,
string literals except where a keyword takes one). Numbers and shapes given on
the command line (``--value``, ``--shape``) are read the same way.

>>> parse_values("[[1, -2], [3.5, 4]]"), parse_shape("k, 3")
([[1, -2], [3.5, 4]], (k, 3))
>>> read_expression("x.__class__", max_chars=100, max_nodes=100)
Traceback (most recent call last):
...
symgrad.UnsupportedError: names starting with '_' are not allowed: __class__ (column 1)
"""

from __future__ import annotations

import ast
import keyword
import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from ..core.dims import Shape, dims
from ..core.errors import ParseError, TorchTypeError, UnsupportedError

MAX_CHARS = 10_000  # length of an expression
MAX_VALUE_CHARS = 200_000  # length of a parse_values() literal
MAX_DEPTH = 64  # nesting of the syntax tree
MAX_NODES = 5_000  # syntax nodes in an expression
MAX_EXPONENT = 64  # |constant exponent| of ** and pow
MAX_INT = 10**12  # |integer| literals and folded integer arithmetic
MAX_LITERAL = 10_000  # entries of a literal tensor or value list
MAX_STRING = 64  # characters of an allowed string literal (an einsum equation, reduction='mean', ...)


# keywords whose values may be string literals
STRING_KEYWORDS = {"reduction", "ord", "p", "approximate", "mode", "reduce", "rounding_mode", "padding"}
_STRING_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,->. ")
EQUATION_FUNCTIONS = {("torch", "einsum")}  # functions whose first positional argument is a string
BINOPS: dict[type, tuple[str, Callable]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.Pow: ("**", operator.pow),
    ast.MatMult: ("@", operator.matmul),
}
UNARY_OPS: dict[type, tuple[str, Callable]] = {ast.USub: ("-", operator.neg), ast.UAdd: ("+", operator.pos)}
COMPARISONS: dict[type, tuple[str, Callable]] = {
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    # a symgrad Tensor's == is identity (tensors are dict keys); torch's elementwise == is the .eq method
    ast.Eq: ("==", lambda a, b: a.eq(b) if hasattr(a, "eq") else b.eq(a)),
    ast.NotEq: ("!=", lambda a, b: a.ne(b) if hasattr(a, "ne") else b.ne(a)),
}
_ALLOWED = {
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Attribute, ast.Name, ast.Constant, ast.Subscript,
    ast.Slice, ast.Tuple, ast.List, ast.keyword, ast.Load, ast.Compare, *BINOPS, *UNARY_OPS, *COMPARISONS,
}  # fmt: skip
_REFUSED = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension", ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression",
    ast.IfExp: "conditional expression (a if c else b)", ast.BoolOp: "and/or (use torch.logical_and)",
    ast.Is: "operator is", ast.IsNot: "operator is not", ast.In: "operator in", ast.NotIn: "operator not in",
    ast.Starred: "starred argument (*x)", ast.JoinedStr: "f-string", ast.FormattedValue: "f-string",
    ast.NamedExpr: "assignment expression (:=)", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Dict: "dict", ast.Set: "set", ast.Store: "assignment", ast.Del: "deletion", ast.FloorDiv: "operator //",
    ast.Mod: "operator %", ast.LShift: "operator <<", ast.RShift: "operator >>", ast.BitOr: "operator |",
    ast.BitXor: "operator ^", ast.BitAnd: "operator &", ast.Invert: "operator ~", ast.Not: "operator not",
}  # fmt: skip


# ── reading and checking the syntax tree ─────────────────────────────────────
def read_expression(text: str, *, max_chars: int, max_nodes: int) -> ast.Expression:
    """The syntax tree of ``text``, after the size, depth and whitelist checks."""
    if not isinstance(text, str):
        raise TorchTypeError(f"expected a string, not {type(text).__name__}")
    if len(text) > max_chars:
        raise ParseError(f"expression too long: {len(text)} characters (limit {max_chars})")
    depth = deepest = 0
    for char in text:  # brackets add no tree nodes, but Python's own parser should not see 200 of them either
        depth += (char in "([{") - (char in ")]}")
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise ParseError(f"expression nested too deeply: {deepest} levels of brackets (limit {MAX_DEPTH})")
    source = text.strip()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of refused constructs are noise
            tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        lead = text[: len(text) - len(text.lstrip())]
        column = (exc.offset or len(source) + 1) + (len(lead) if "\n" not in lead else 0)
        where = f"line {exc.lineno}, column {exc.offset}" if (exc.lineno or 1) > 1 else f"column {column}"
        raise ParseError(f"syntax error at {where}: {exc.msg}") from None
    except (RecursionError, MemoryError) as exc:
        raise ParseError(f"expression too complex to parse (nested more than {MAX_DEPTH} levels?)") from exc
    except ValueError as exc:
        raise ParseError(f"expression could not be read: {' '.join(str(exc).split())}") from exc
    _check_tree(tree, max_nodes)
    return tree


def _check_tree(tree: ast.AST, max_nodes: int) -> None:
    """Refuse big, deep or non-whitelisted trees without recursion."""
    stack, count = [(tree, 1)], 0
    strings: set[int] = set()  # string constants in the places that take them (a parent is checked before its children)
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > max_nodes:
            raise ParseError(f"expression too large: more than {max_nodes} syntax nodes")
        if depth > MAX_DEPTH:
            raise ParseError(f"expression nested too deeply (limit {MAX_DEPTH} levels)")
        _check_node(node, id(node) in strings)
        if isinstance(node, ast.Call):
            strings.update(id(place) for place in _string_places(node))
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _string_places(node: ast.Call) -> list[ast.AST]:
    """The argument nodes of a call that may be string literals: an einsum equation, ``reduction='mean'``, ..."""
    places: list[ast.AST] = [k.value for k in node.keywords if k.arg in STRING_KEYWORDS]
    if node.args and dotted(node.func) in EQUATION_FUNCTIONS:
        places.append(node.args[0])
    return places


def where_text(node: ast.AST) -> str:
    return f" (column {node.col_offset + 1})" if hasattr(node, "col_offset") else ""


def _check_node(node: ast.AST, string_allowed: bool = False) -> None:
    kind = type(node)
    if kind not in _ALLOWED:
        raise UnsupportedError(f"{_REFUSED.get(kind, kind.__name__)} is not supported{where_text(node)}")
    if kind is ast.Constant:
        if string_allowed and isinstance(node.value, str):
            _check_string(node)
        else:
            _check_constant(node)
    elif kind is ast.keyword and node.arg is None:
        raise UnsupportedError(f"keyword unpacking (**kwargs) is not supported{where_text(node)}")
    name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "arg", None)
    if isinstance(name, str) and name.startswith("_"):
        raise UnsupportedError(f"names starting with '_' are not allowed: {name}{where_text(node)}")


def _check_string(node: ast.Constant) -> None:
    """A string literal where one is allowed: short, and only letters, ``, - > .`` and spaces."""
    if len(node.value) > MAX_STRING:
        raise ParseError(
            f"string literal too long{where_text(node)}: {len(node.value)} characters (limit {MAX_STRING})"
        )
    bad = sorted(set(node.value) - _STRING_CHARS)
    if bad:
        raise UnsupportedError(f"character {bad[0]!r} is not allowed in a string literal{where_text(node)}")


def _check_constant(node: ast.Constant) -> None:
    value = node.value
    if value is None or value is Ellipsis or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ParseError(f"integer literal too large{where_text(node)}: limit is 10**12 in absolute value")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParseError(f"number literal is not finite{where_text(node)}")
    else:
        kind = {str: "string", bytes: "bytes", complex: "complex number"}.get(type(value), type(value).__name__)
        raise UnsupportedError(f"{kind} literals are not supported{where_text(node)}")


# ── numbers and literals ─────────────────────────────────────────────────────
def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, sympy.Number)) and not isinstance(value, (bool, np.bool_))


def show_number(value: Any) -> str:
    """A number as written in Python: ``-8`` in parentheses, SymPy's ``100.000`` as ``100.0``."""
    text = str(float(value) if isinstance(value, sympy.Float) else value)
    return f"({text})" if text.startswith("-") else text


def check_number(value: Any, what: str) -> Any:
    """A folded Python number, kept within the literal limits."""
    if isinstance(value, complex):
        raise ParseError(f"{what} is a complex number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(f"{what} is not finite")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ParseError(f"{what} is too large (limit 10**12 in absolute value)")
    return value


def check_exponent(value: Any) -> float:
    """A constant exponent must be a real number within ±MAX_EXPONENT; returns how much it can grow a number."""
    try:
        size = abs(float(value))
    except (TypeError, OverflowError):  # complex, zoo, or too big for a float
        size = math.inf
    if not size <= MAX_EXPONENT:  # also refuses nan
        raise ParseError(
            f"exponent {show_number(value)} is too large: exponents must be real numbers within ±{MAX_EXPONENT}"
        )
    return max(1.0, size)


def flatten_numbers(data: Any, what: str) -> tuple[list, tuple[int, ...]]:
    """Numbers of a rectangular nested list, flat, and its shape."""
    if isinstance(data, (list, tuple)):
        parts = [flatten_numbers(item, what) for item in data]
        shapes = {shape for _, shape in parts}
        if len(shapes) > 1:
            raise ParseError(f"{what}: nested lists of different lengths (shapes {sorted(shapes)})")
        return [v for flat, _ in parts for v in flat], (len(data), *(shapes.pop() if shapes else ()))
    if is_number(data):
        return [data], ()
    raise ParseError(f"{what} must hold only numbers, not {type(data).__name__}")


def dotted(node: ast.AST) -> tuple[str, ...] | None:
    """``torch.nn.functional`` as ('torch', 'nn', 'functional'); None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, *reversed(parts)) if isinstance(node, ast.Name) else None


# ── leaves ───────────────────────────────────────────────────────────────────
def _value(node: ast.AST) -> Any:
    """A number or nested list of numbers from a checked tree."""
    if isinstance(node, ast.Constant) and is_number(node.value):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        number = _value(node.operand)
        if is_number(number):
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e) for e in node.elts]
    raise UnsupportedError(f"values must be numbers or nested lists of numbers{where_text(node)}")


def parse_values(text: str) -> Any:
    """Read ``"[[1, 1], [2, 2]]"`` or ``"3.5"`` as nested lists of numbers (no evaluation)."""
    tree = read_expression(text, max_chars=MAX_VALUE_CHARS, max_nodes=4 * MAX_LITERAL + 2)
    data = _value(tree.body)
    flat, _ = flatten_numbers(data, "values")
    if len(flat) > MAX_LITERAL:
        raise ParseError(f"values have {len(flat)} entries (limit {MAX_LITERAL})")
    return data


def parse_shape(text: str) -> Shape:
    """Read ``"1,2"``, ``"k, n"`` or ``"(k, 3)"``; names become dimension symbols (``dims``)."""
    if not isinstance(text, str):
        raise TorchTypeError(f"expected a string, not {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise ParseError(f"shape too long: {len(text)} characters (limit {MAX_CHARS})")
    body = text.strip()
    if body[:1] + body[-1:] in ("()", "[]"):
        body = body[1:-1]
    parts = [part.strip() for part in body.replace("×", ",").split(",")]
    if parts[-1] == "":
        parts.pop()  # "3," and ""
    shape: list = []
    for part in parts:
        if part.isascii() and part.isdigit() and int(part) <= MAX_INT:
            shape.append(int(part))
        elif part.isascii() and part.isidentifier() and not keyword.iskeyword(part) and not part.startswith("_"):
            shape.append(dims(part)[0])
        else:
            raise ParseError(f"bad size {part!r} in shape {text!r}: use integers or names, e.g. '2, n'")
    return tuple(shape)
