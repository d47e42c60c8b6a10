"""Read torch-style expression strings into symbolic tensors, safely.

The text is split into a syntax tree by :func:`ast.parse` and walked by a small
visitor that knows a whitelist of constructs, functions and methods; nothing in
the text is ever evaluated by Python, so ``__import__('os')`` and friends are
refused before any work is done. Accepted: names of tensors, numbers, ``+ - * / ** @``,
calls of whitelisted ``torch.*`` / ``torch.nn.functional.*`` (``F.*``) / ``torch.linalg.*``
functions and tensor methods with literal keyword values, ``.T``/``.mT``, basic indexing,
the fields ``.values`` of ``max(x, dim)`` and ``.sign``/``.logabsdet`` of ``slogdet(A)``,
and ``torch.tensor([[1, 2]])`` constants. String literals are refused except as the
equation of ``torch.einsum("ij,jk->ik", a, b)`` and as the value of the string-valued
keywords ``reduction=``, ``ord=``, ``p=`` and ``approximate=``; ``torch.inf`` is allowed
only as ``ord=``/``p=``. Sizes, nesting and exponents are bounded.

>>> y = parse("torch.tanh(w @ x + b)", shapes={"w": (1, 2), "b": (1, 1)}, values={"x": [[1], [2]]})
>>> y.sympy()
[[tanh(b_0_0 + w_0_0*x_0_0 + w_0_1*x_1_0)]]
>>> sorted(y.leaves())
['b', 'w', 'x']
>>> parse("x.sum(dim=0)", values={"x": [[1, 2], [3, 4]]}).tolist()
[4.0, 6.0]
>>> parse_values("[[1, -2], [3.5, 4]]"), parse_shape("k, 3")
([[1, -2], [3.5, 4]], (k, 3))
"""

from __future__ import annotations

import ast
import keyword
import math
import operator
import warnings
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import numpy as np
import sympy

from . import torch as _torch
from .arrays import object_array
from .dims import Shape, as_shape, dims, format_shape, is_concrete
from .errors import ParseError, ShapeError, SymbolicShapeError, SymgradError, UnknownNameError, UnsupportedError
from .tensor import Tensor, check_name, constant, symbols, tensor

MAX_CHARS = 10_000  # length of an expression
MAX_VALUE_CHARS = 200_000  # length of a parse_values() literal
MAX_DEPTH = 64  # nesting of the syntax tree
MAX_NODES = 5_000  # syntax nodes in an expression
MAX_EXPONENT = 64  # |constant exponent| of ** and pow
MAX_INT = 10**12  # |integer| literals and folded integer arithmetic
MAX_LITERAL = 10_000  # entries of a literal tensor or value list
MAX_STRING = 64  # characters of an allowed string literal (an einsum equation, reduction='mean', ...)


def _literal_tensor(data: Any) -> Tensor:
    """``torch.tensor([[1, 2]])``: a constant (its entries are numbers, not symbols)."""
    flat, shape = _flatten(data, "torch.tensor()")
    if len(flat) > MAX_LITERAL:
        raise ParseError(f"torch.tensor() literal has {len(flat)} entries (limit {MAX_LITERAL})")
    floats = any(isinstance(v, float) for v in flat)
    entries = [sympy.Float(v) if floats else sympy.Integer(v) for v in flat]
    return constant(object_array(entries, shape), dtype="float32" if floats else "int64")


_TORCH_NAMES = (
    "abs add addmm amax atan2 bmm clamp clip cos cumsum det div dot einsum eq erf exp flatten flip full_like ge ger "
    "gt inverse le log log1p log_softmax logdet logsumexp lt matmul max maximum mean minimum mm mul neg norm "
    "ones_like outer permute pow reciprocal relu reshape rsqrt sigmoid sign sin slogdet softmax sqrt std sub sum t "
    "tanh trace transpose unsqueeze var where zeros_like"
).split()
_TORCH: dict[str, Callable] = {name: getattr(_torch, name) for name in _TORCH_NAMES} | {"tensor": _literal_tensor}
_FUNCTIONAL_NAMES = (
    "binary_cross_entropy binary_cross_entropy_with_logits cross_entropy gelu hardtanh layer_norm leaky_relu linear "
    "log_softmax logsigmoid mse_loss nll_loss one_hot relu sigmoid silu softmax softplus tanh threshold"
).split()
_FUNCTIONAL: dict[str, Callable] = {name: getattr(_torch.nn.functional, name) for name in _FUNCTIONAL_NAMES}
_LINALG: dict[str, Callable] = {
    name: getattr(_torch.linalg, name) for name in ("det", "inv", "matrix_norm", "norm", "slogdet", "vector_norm")
}
_NAMESPACES: dict[tuple[str, ...], dict[str, Callable]] = {
    ("torch",): _TORCH,
    ("torch", "nn", "functional"): _FUNCTIONAL,
    ("nn", "functional"): _FUNCTIONAL,
    ("F",): _FUNCTIONAL,
    ("torch", "linalg"): _LINALG,
}
_ROOTS = {path[0] for path in _NAMESPACES}
_METHOD_NAMES = (
    "abs add amax cos cumsum div erf exp expand flatten flip log log1p log_softmax logsumexp matmul mean mm mul neg "
    "permute pow reciprocal relu reshape rsqrt sigmoid sign sin softmax sqrt sub sum t tanh trace transpose "
    "unsqueeze view"
).split()
_METHODS: dict[str, Callable] = {name: getattr(Tensor, name) for name in _METHOD_NAMES} | {
    # torch's method signatures where symgrad's Tensor method is narrower (or missing, as clip)
    "clamp": _torch.clamp,
    "clip": _torch.clamp,
    "max": _torch.max,
    "norm": _torch.norm,
    "std": _torch.std,
    "var": _torch.var,
}
_STRING_KEYWORDS = {"reduction", "ord", "p", "approximate"}  # keywords whose values may be string literals
_INF_KEYWORDS = {"ord", "p"}  # keywords whose values may be torch.inf or -torch.inf
_STRING_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,->. ")
_EQUATION_FUNCTIONS = {("torch", "einsum")}  # functions whose first positional argument is a string
_TENSOR_KEYWORDS = {"input", "other", "target", "weight", "bias"}  # keywords whose values may be tensors
_RESULT_FIELDS = {"values", "sign", "logabsdet"}  # fields of max(x, dim) and slogdet(A) results
_ARITHMETIC = {"add", "sub", "mul", "div", "pow"}  # these also take numbers, as in torch.add(2, x)

_BINOPS: dict[type, tuple[str, Callable]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.Pow: ("**", operator.pow),
    ast.MatMult: ("@", operator.matmul),
}
_UNARY: dict[type, tuple[str, Callable]] = {ast.USub: ("-", operator.neg), ast.UAdd: ("+", operator.pos)}
_ALLOWED = {
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Attribute, ast.Name, ast.Constant, ast.Subscript,
    ast.Slice, ast.Tuple, ast.List, ast.keyword, ast.Load, *_BINOPS, *_UNARY,
}  # fmt: skip
_REFUSED = {
    ast.Lambda: "lambda", ast.ListComp: "list comprehension", ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression",
    ast.IfExp: "conditional expression (a if c else b)", ast.Compare: "comparison", ast.BoolOp: "and/or",
    ast.Starred: "starred argument (*x)", ast.JoinedStr: "f-string", ast.FormattedValue: "f-string",
    ast.NamedExpr: "assignment expression (:=)", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Dict: "dict", ast.Set: "set", ast.Store: "assignment", ast.Del: "deletion", ast.FloorDiv: "operator //",
    ast.Mod: "operator %", ast.LShift: "operator <<", ast.RShift: "operator >>", ast.BitOr: "operator |",
    ast.BitXor: "operator ^", ast.BitAnd: "operator &", ast.Invert: "operator ~", ast.Not: "operator not",
}  # fmt: skip


# ── reading and checking the syntax tree ─────────────────────────────────────
def _read(text: str, *, max_chars: int, max_nodes: int) -> ast.Expression:
    """The syntax tree of ``text``, after the size, depth and whitelist checks."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, not {type(text).__name__}")
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
    places: list[ast.AST] = [k.value for k in node.keywords if k.arg in _STRING_KEYWORDS]
    if node.args and _dotted(node.func) in _EQUATION_FUNCTIONS:
        places.append(node.args[0])
    return places


def _where(node: ast.AST) -> str:
    return f" (column {node.col_offset + 1})" if hasattr(node, "col_offset") else ""


def _check_node(node: ast.AST, string_allowed: bool = False) -> None:
    kind = type(node)
    if kind not in _ALLOWED:
        raise UnsupportedError(f"{_REFUSED.get(kind, kind.__name__)} is not supported{_where(node)}")
    if kind is ast.Constant:
        if string_allowed and isinstance(node.value, str):
            _check_string(node)
        else:
            _check_constant(node)
    elif kind is ast.keyword and node.arg is None:
        raise UnsupportedError(f"keyword unpacking (**kwargs) is not supported{_where(node)}")
    name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "arg", None)
    if isinstance(name, str) and name.startswith("_"):
        raise UnsupportedError(f"names starting with '_' are not allowed: {name}{_where(node)}")


def _check_string(node: ast.Constant) -> None:
    """A string literal where one is allowed: short, and only letters, ``, - > .`` and spaces."""
    if len(node.value) > MAX_STRING:
        raise ParseError(f"string literal too long{_where(node)}: {len(node.value)} characters (limit {MAX_STRING})")
    bad = sorted(set(node.value) - _STRING_CHARS)
    if bad:
        raise UnsupportedError(f"character {bad[0]!r} is not allowed in a string literal{_where(node)}")


def _check_constant(node: ast.Constant) -> None:
    value = node.value
    if value is None or value is Ellipsis or isinstance(value, bool):
        return
    if isinstance(value, int):
        if abs(value) > MAX_INT:
            raise ParseError(f"integer literal too large{_where(node)}: limit is 10**12 in absolute value")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParseError(f"number literal is not finite{_where(node)}")
    else:
        kind = {str: "string", bytes: "bytes", complex: "complex number"}.get(type(value), type(value).__name__)
        raise UnsupportedError(f"{kind} literals are not supported{_where(node)}")


# ── numbers and literals ─────────────────────────────────────────────────────
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number, sympy.Number)) and not isinstance(value, (bool, np.bool_))


def _show(value: Any) -> str:
    """A number as written in Python: ``-8`` in parentheses, SymPy's ``100.000`` as ``100.0``."""
    text = str(float(value) if isinstance(value, sympy.Float) else value)
    return f"({text})" if text.startswith("-") else text


def _check_number(value: Any, what: str) -> Any:
    """A folded Python number, kept within the literal limits."""
    if isinstance(value, complex):
        raise ParseError(f"{what} is a complex number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(f"{what} is not finite")
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ParseError(f"{what} is too large (limit 10**12 in absolute value)")
    return value


def _check_exponent(value: Any) -> float:
    """A constant exponent must be a real number within ±MAX_EXPONENT; returns how much it can grow a number."""
    try:
        size = abs(float(value))
    except (TypeError, OverflowError):  # complex, zoo, or too big for a float
        size = math.inf
    if not size <= MAX_EXPONENT:  # also refuses nan
        raise ParseError(f"exponent {_show(value)} is too large: exponents must be real numbers within ±{MAX_EXPONENT}")
    return max(1.0, size)


def _exponent_growth(exponent: Tensor) -> float:
    """Check the numbers among a pow node's exponent entries; a leaf of symbols needs no check."""
    if exponent.op is None and exponent.leaves().get(exponent.name) is exponent:
        return 1.0
    if not is_concrete(exponent.shape):
        return 1.0  # nobody can compute these entries
    if exponent.op is not None and exponent.numel() > MAX_LITERAL:
        raise ParseError(f"an exponent with {exponent.numel()} computed entries is too large to check")
    try:
        entries = exponent.entries().reshape(-1)
    except SymbolicShapeError:
        return 1.0  # symbolic sizes further down: nobody can compute these entries
    except ArithmeticError as exc:
        raise ParseError(f"the exponent cannot be computed: {type(exc).__name__}") from exc
    return max((_check_exponent(v) for v in entries if v.is_number), default=1.0)


def _check_powers(root: Tensor) -> None:
    """Refuse exponents beyond ±MAX_EXPONENT, also when powers nest: ``((2 ** 64) ** 64) ** 64``
    has small exponents but a number SymPy would never finish computing."""
    growth: dict[int, float] = {}
    for node in _graph(root):
        is_pow = node.op is not None and node.op.name == "pow"
        parts = node.inputs[:1] if is_pow else node.inputs
        total = max((growth[id(p)] for p in parts), default=1.0)
        total *= _exponent_growth(node.inputs[1]) if is_pow else 1.0
        if total > MAX_EXPONENT:
            raise ParseError(f"powers nested too deeply: their exponents multiply to {total:g} (limit {MAX_EXPONENT})")
        growth[id(node)] = total


def _graph(root: Tensor) -> list[Tensor]:
    """The tensors ``root`` is built from, inputs before the nodes using them (no recursion)."""
    order: list[Tensor] = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if ready:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((part, False) for part in node.inputs)
    return order


def _flatten(data: Any, what: str) -> tuple[list, tuple[int, ...]]:
    """Numbers of a rectangular nested list, flat, and its shape."""
    if isinstance(data, (list, tuple)):
        parts = [_flatten(item, what) for item in data]
        shapes = {shape for _, shape in parts}
        if len(shapes) > 1:
            raise ParseError(f"{what}: nested lists of different lengths (shapes {sorted(shapes)})")
        return [v for flat, _ in parts for v in flat], (len(data), *(shapes.pop() if shapes else ()))
    if _is_number(data):
        return [data], ()
    raise ParseError(f"{what} must hold only numbers, not {type(data).__name__}")


def _is_literal(value: Any) -> bool:
    """Plain argument data: numbers, bools, None and (nested) tuples or lists of them."""
    if isinstance(value, (list, tuple)):
        return all(_is_literal(v) for v in value)
    return value is None or isinstance(value, (bool, int, float))


# ── the visitor ──────────────────────────────────────────────────────────────
class _Builder:
    """Walks a checked tree, building the graph with symgrad's own operations."""

    def __init__(self, tensors: dict[str, Tensor], functions: dict[str, Callable]) -> None:
        self.tensors = tensors
        self.functions = functions

    def visit(self, node: ast.AST) -> Any:
        return getattr(self, f"_visit_{type(node).__name__}")(node)  # node types are whitelisted by _check_tree

    def _known(self) -> str:
        return ", ".join(sorted(self.tensors)) or "none"

    def _tensor(self, value: Any, what: str) -> Tensor:
        if not isinstance(value, Tensor):
            raise UnsupportedError(f"{what} needs a tensor, not {type(value).__name__}")
        return value

    def _operand(self, value: Any, what: str) -> Any:
        if isinstance(value, Tensor) or _is_number(value):
            return value
        raise UnsupportedError(f"{what} needs tensors or numbers, not {type(value).__name__}")

    def _visit_Expression(self, node: ast.Expression) -> Any:
        return self.visit(node.body)

    def _visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _visit_Name(self, node: ast.Name) -> Tensor:
        if node.id in self.tensors:
            return self.tensors[node.id]
        if node.id in self.functions:
            raise UnsupportedError(f"{node.id} is a function; call it, as in {node.id}(x)")
        if node.id in _ROOTS:
            raise UnsupportedError(f"{node.id} is a module; call its functions, as in torch.tanh(x)")
        raise UnknownNameError(f"unknown name {node.id!r}; known tensors: {self._known()}")

    def _visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    def _visit_List(self, node: ast.List) -> list:
        return [self.visit(e) for e in node.elts]

    def _visit_Slice(self, node: ast.Slice) -> Any:
        raise UnsupportedError(f"a slice is only allowed inside brackets, as in x[1:]{_where(node)}")

    def _visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        symbol, fn = _UNARY[type(node.op)]
        value = self._operand(self.visit(node.operand), f"operator {symbol}")
        return fn(value)

    def _visit_BinOp(self, node: ast.BinOp) -> Any:
        symbol, fn = _BINOPS[type(node.op)]
        left = self._operand(self.visit(node.left), f"operator {symbol}")
        right = self._operand(self.visit(node.right), f"operator {symbol}")
        if isinstance(left, Tensor) or isinstance(right, Tensor):
            return fn(left, right)  # exponents of tensors are checked on the finished graph
        if symbol == "**":
            _check_exponent(right)
        try:
            return _check_number(fn(left, right), f"the result of {_show(left)} {symbol} {_show(right)}")
        except (ArithmeticError, TypeError) as exc:
            raise ParseError(f"cannot compute {_show(left)} {symbol} {_show(right)}: {exc}") from exc

    def _visit_Attribute(self, node: ast.Attribute) -> Tensor:
        if node.attr in ("T", "mT"):
            value = self._tensor(self.visit(node.value), f".{node.attr}")
            return value.T if node.attr == "T" else value.mT
        path = _dotted(node)
        if path and path[0] in _ROOTS and path[0] not in self.tensors:
            raise UnsupportedError(f"{'.'.join(path)} is not a tensor; call functions, as in torch.tanh(x)")
        if node.attr in _RESULT_FIELDS:
            value = self.visit(node.value)
            if _is_result(value) and node.attr in value._fields:
                return self._tensor(getattr(value, node.attr), f".{node.attr}")
        raise UnsupportedError(
            f"attribute .{node.attr} is not supported; only .T, .mT, method calls, and .values of max(x, dim) or "
            f".sign/.logabsdet of slogdet(A){_where(node)}"
        )

    def _visit_Subscript(self, node: ast.Subscript) -> Tensor:
        base = self.visit(node.value)
        if _is_result(base):  # max(x, 0)[0], slogdet(A)[1]
            position = self._index_item(node.slice)
            if not isinstance(position, int) or not -len(base) <= position < len(base):
                raise UnsupportedError(f"a result of {len(base)} fields takes an index 0 to {len(base) - 1}")
            return self._tensor(base[position], f"field {base._fields[position]}")
        base = self._tensor(base, "indexing")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        index = tuple(self._index_item(item) for item in items)
        return base[index if isinstance(node.slice, ast.Tuple) else index[0]]

    def _index_item(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Slice):
            return slice(
                *(None if part is None else self._index_item(part) for part in (node.lower, node.upper, node.step))
            )
        value = self.visit(node)
        if value is None or value is Ellipsis or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise UnsupportedError(f"indices must be integers, slices, None or ..., not {type(value).__name__}")

    def _visit_Call(self, node: ast.Call) -> Any:
        fn, label = self._callee(node.func)
        args = [self._argument(self.visit(a), label, position) for position, a in enumerate(node.args)]
        kwargs = {k.arg: self._keyword(k, label) for k in node.keywords}
        self._check_inputs(label, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except (TypeError, AttributeError) as exc:
            raise ParseError(f"bad arguments to {label}(): {' '.join(str(exc).split())}") from exc

    def _check_inputs(self, label: str, args: list, kwargs: dict) -> None:
        """Arithmetic takes tensors or numbers (``torch.add(2, x)``); other functions take a tensor first."""
        name = label.rsplit(".", 1)[-1]
        operands = [*args, *(kwargs[k] for k in ("input", "other", "exponent") if k in kwargs)]
        if name in _ARITHMETIC or label in self.functions:
            for value in operands:
                self._operand(value, f"{label}()")
        elif label == "torch.einsum":
            for value in args[1:]:
                for operand in value if isinstance(value, (list, tuple)) else [value]:
                    self._tensor(operand, f"{label}()")
        elif not label.startswith(".") and label != "torch.tensor":
            self._tensor(args[0] if args else kwargs.get("input"), f"{label}()")

    def _callee(self, func: ast.AST) -> tuple[Callable, str]:
        """The whitelisted function or bound method a call names, and how it is spelled."""
        if isinstance(func, ast.Name):
            if func.id in self.functions:
                return self.functions[func.id], func.id
            if func.id in self.tensors:
                raise UnsupportedError(f"{func.id} is a tensor, not a function")
            extra = ", ".join(sorted(self.functions))
            raise UnsupportedError(
                f"unsupported function {func.id}(); use torch.<name>(...) with one of {', '.join(sorted(_TORCH))}"
                + (f", or one of {extra}" if extra else "")
            )
        if not isinstance(func, ast.Attribute):
            raise UnsupportedError("only functions of torch and torch.nn.functional, and tensor methods, can be called")
        path = _dotted(func.value)
        if path and path[0] in _ROOTS and path[0] not in self.tensors:
            spelled = ".".join(path)
            namespace = _NAMESPACES.get(path)
            if namespace is None:
                raise UnsupportedError(
                    f"unsupported module {spelled}; use torch, torch.nn.functional (F) or torch.linalg"
                )
            if func.attr not in namespace:
                raise UnsupportedError(
                    f"unsupported function {spelled}.{func.attr}(); supported: {', '.join(sorted(namespace))}"
                )
            return namespace[func.attr], f"{spelled}.{func.attr}"
        if func.attr not in _METHODS:
            raise UnsupportedError(f"unsupported method .{func.attr}(); supported: {', '.join(sorted(_METHODS))}")
        receiver = self._tensor(self.visit(func.value), f".{func.attr}()")
        return partial(_METHODS[func.attr], receiver), f".{func.attr}"

    def _argument(self, value: Any, label: str, position: int) -> Any:
        if isinstance(value, Tensor) or _is_literal(value):
            return value
        if tuple(label.split(".")) in _EQUATION_FUNCTIONS:
            if isinstance(value, str) and position == 0:
                return value  # the tree check let this string through, and only here
            if isinstance(value, (list, tuple)) and position == 1 and all(isinstance(v, Tensor) for v in value):
                return value  # torch.einsum("ij,jk", [a, b])
        raise UnsupportedError(f"{label}() arguments must be tensors, numbers or tuples of numbers")

    def _keyword(self, node: ast.keyword, label: str) -> Any:
        if node.arg in _INF_KEYWORDS and _is_torch_inf(node.value):
            return -math.inf if isinstance(node.value, ast.UnaryOp) else math.inf
        value = self.visit(node.value)
        if _is_literal(value) or (isinstance(value, str) and node.arg in _STRING_KEYWORDS):
            return value
        if isinstance(value, Tensor) and node.arg in _TENSOR_KEYWORDS:
            return value
        raise UnsupportedError(f"{label}(): keyword {node.arg}= needs a literal (a number, bool, None or tuple)")


def _is_torch_inf(node: ast.AST) -> bool:
    """``torch.inf`` or ``-torch.inf``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return _dotted(node) == ("torch", "inf")


def _is_result(value: Any) -> bool:
    """A named tuple of tensors from max(x, dim) or slogdet(A)."""
    return isinstance(value, tuple) and set(getattr(value, "_fields", ())) & _RESULT_FIELDS != set()


def _dotted(node: ast.AST) -> tuple[str, ...] | None:
    """``torch.nn.functional`` as ('torch', 'nn', 'functional'); None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, *reversed(parts)) if isinstance(node, ast.Name) else None


# ── leaves ───────────────────────────────────────────────────────────────────
def _grad_names(requires_grad: bool | Iterable[str], names: Iterable[str]) -> set[str]:
    names = set(names)
    if isinstance(requires_grad, bool):
        return names if requires_grad else set()
    wanted = {requires_grad} if isinstance(requires_grad, str) else set(requires_grad)
    unknown = sorted(wanted - names)
    if unknown:
        raise UnknownNameError(
            f"requires_grad names unknown tensors {', '.join(unknown)}; known tensors: {', '.join(sorted(names))}"
        )
    return wanted


def _leaves(
    shapes: Mapping[str, Any], values: Mapping[str, Any], requires_grad: bool | Iterable[str]
) -> dict[str, Tensor]:
    """One tensor per name: with values as :func:`tensor` (floats), else as :func:`symbols`."""
    names = sorted(set(shapes) | set(values))
    wanted = _grad_names(requires_grad, names)
    out = {}
    for name in names:
        check_name(name)
        shape = shapes.get(name)
        shape = None if shape is None else parse_shape(shape) if isinstance(shape, str) else as_shape(shape)
        if name in values:
            data = values[name]
            data = parse_values(data) if isinstance(data, str) else data
            data = data.tolist() if isinstance(data, np.ndarray) else data
            _, value_shape = _flatten(data, f"values of {name}")  # also keeps strings away from sympify
            if shape is not None and shape != value_shape:
                raise ShapeError(
                    f"values of {name} have shape {format_shape(value_shape)}, but its shape is given as "
                    f"{format_shape(shape)}"
                )
            out[name] = tensor(data, name=name, dtype="float32", requires_grad=name in wanted)
        else:
            out[name] = symbols(name, shape, requires_grad=name in wanted)
    return out


# ── public API ───────────────────────────────────────────────────────────────
def parse(
    text: str,
    shapes: Mapping[str, Any] | None = None,
    values: Mapping[str, Any] | None = None,
    *,
    requires_grad: bool | Iterable[str] = True,
    functions: Mapping[str, Callable] | None = None,
) -> Tensor:
    """Build the tensor a torch-style expression describes, e.g. ``"torch.tanh(W @ x + b).sum()"``.

    Names are tensors: symbols of ``shapes[name]`` (ints, dimension symbols or
    names like ``"n"``), or ``values[name]`` (nested lists; floats). Each name is
    one tensor, however often it appears. ``requires_grad`` is True (all leaves),
    False or the names that need gradients; ``functions`` adds elementwise
    functions made with :func:`symgrad.function`, called by their bare name.
    """
    tree = _read(text, max_chars=MAX_CHARS, max_nodes=MAX_NODES)
    functions = dict(functions or {})
    tensors = _leaves(shapes or {}, values or {}, requires_grad)
    for name in functions:
        check_name(name)
        if name in tensors:
            raise ParseError(f"{name} is both a tensor and a function")
    try:
        result = _Builder(tensors, functions).visit(tree)
        if isinstance(result, Tensor):
            _check_powers(result)
            return result
    except (SymgradError, LookupError, RuntimeError, ValueError) as exc:
        if len(exc.args) == 1 and isinstance(exc.args[0], str):
            exc.args = (" ".join(exc.args[0].split()),)  # one line, even if a tensor's repr got into it
        raise
    if _is_number(result):
        return constant(result, dtype="float32" if isinstance(result, float) else "int64")
    raise UnsupportedError(f"the expression must give a tensor, not {type(result).__name__}")


def _value(node: ast.AST) -> Any:
    """A number or nested list of numbers from a checked tree."""
    if isinstance(node, ast.Constant) and _is_number(node.value):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        number = _value(node.operand)
        if _is_number(number):
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_value(e) for e in node.elts]
    raise UnsupportedError(f"values must be numbers or nested lists of numbers{_where(node)}")


def parse_values(text: str) -> Any:
    """Read ``"[[1, 1], [2, 2]]"`` or ``"3.5"`` as nested lists of numbers (no evaluation)."""
    tree = _read(text, max_chars=MAX_VALUE_CHARS, max_nodes=4 * MAX_LITERAL + 2)
    data = _value(tree.body)
    flat, _ = _flatten(data, "values")
    if len(flat) > MAX_LITERAL:
        raise ParseError(f"values have {len(flat)} entries (limit {MAX_LITERAL})")
    return data


def parse_shape(text: str) -> Shape:
    """Read ``"1,2"``, ``"k, n"`` or ``"(k, 3)"``; names become dimension symbols (``dims``)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, not {type(text).__name__}")
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


__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_EXPONENT", "MAX_LITERAL", "MAX_NODES", "parse", "parse_shape", "parse_values"]
