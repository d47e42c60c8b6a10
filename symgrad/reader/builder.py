"""Read torch-style expression strings into symbolic tensors, safely.

The text is split into a syntax tree by :func:`ast.parse` and walked by a small
visitor that knows a whitelist of constructs, functions and methods; nothing in
the text is ever evaluated by Python, so ``__import__('os')`` and friends are
refused before any work is done. Accepted: names of tensors, numbers, ``+ - * / ** @``,
calls of whitelisted ``torch.*`` / ``torch.nn.functional.*`` (``F.*``) / ``torch.linalg.*`` / ``torch.special.*``
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
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np
import sympy

from .. import torch as symbolic_torch
from ..core.arrays import object_array
from ..core.constructors import symbols, tensor
from ..core.dims import as_shape, format_shape, is_concrete
from ..core.errors import (
    InternalError,
    ParseError,
    ShapeError,
    SymbolicShapeError,
    SymgradError,
    UnknownNameError,
    UnsupportedError,
)
from ..core.graph import topological
from ..core.methods import TensorMethods
from ..core.tensor import Tensor, check_name, constant
from .syntax import (
    BINOPS,
    COMPARISONS,
    EQUATION_FUNCTIONS,
    MAX_CHARS,
    MAX_EXPONENT,
    MAX_LITERAL,
    MAX_NODES,
    STRING_KEYWORDS,
    UNARY_OPS,
    check_exponent,
    check_number,
    dotted,
    flatten_numbers,
    is_number,
    parse_shape,
    parse_values,
    read_expression,
    show_number,
    where_text,
)
from .torch_names import NAMES


def _literal_tensor(data: Any) -> Tensor:
    """``torch.tensor([[1, 2]])``: a constant (its entries are numbers, not symbols)."""
    flat, shape = flatten_numbers(data, "torch.tensor()")
    if len(flat) > MAX_LITERAL:
        raise ParseError(f"torch.tensor() literal has {len(flat)} entries (limit {MAX_LITERAL})")
    floats = any(isinstance(v, float) for v in flat)
    entries = [sympy.Float(v) if floats else sympy.Integer(v) for v in flat]
    return constant(object_array(entries, shape), dtype="float32" if floats else "int64")


def _functions(namespace: Any, *, leave_out: frozenset[str] = frozenset()) -> dict[str, Callable]:
    """The functions a namespace of :mod:`symgrad.torch` exports (its ``__all__``): the whitelist is
    what symgrad.torch provides, so a new function there is readable from strings at once."""
    out = {}
    for name in namespace.__all__:
        value = getattr(namespace, name)
        if callable(value) and not isinstance(value, type) and name not in leave_out:
            out[name] = value
    return out


_TORCH: dict[str, Callable] = _functions(symbolic_torch, leave_out=frozenset({"backward", "tensor"})) | {
    "tensor": _literal_tensor
}
_FUNCTIONAL: dict[str, Callable] = _functions(symbolic_torch.nn.functional)
_LINALG: dict[str, Callable] = _functions(symbolic_torch.linalg)
_SPECIAL: dict[str, Callable] = _functions(symbolic_torch.special)
_NAMESPACES: dict[tuple[str, ...], dict[str, Callable]] = {
    ("torch",): _TORCH,
    ("torch", "nn", "functional"): _FUNCTIONAL,
    ("nn", "functional"): _FUNCTIONAL,
    ("F",): _FUNCTIONAL,
    ("torch", "linalg"): _LINALG,
    ("torch", "special"): _SPECIAL,
}
_ROOTS = {path[0] for path in _NAMESPACES}
_PRODUCTS = {"matmul", "mm", "mv", "bmm", "inner", "dot"}  # their shape errors name the sizes they contract
# each spelling's namespace in torch (torch_names.NAMES): which names torch has, for a missing one's message
_TORCH_LABELS = {path: "torch.nn.functional" if "functional" in path or path == ("F",) else ".".join(path)
                 for path in _NAMESPACES}  # fmt: skip


def _missing(spelled: str, prefix: str, name: str, supported: Mapping[str, Any], label: str) -> str:
    """One line for a name symgrad cannot call (``spelled``: ``torch.tnah()``): not supported where torch has it,
    else unknown, with the nearest names symgrad supports, or else torch has, spelled as the user spells them
    (``prefix``: ``torch.``, ``F.`` or ``.``)."""
    if name in NAMES[label]:
        return f"{spelled} is torch's, and symgrad does not support it yet" + _nearest(name, supported, prefix, 0.8)
    return f"unknown {spelled}: torch has no such name" + (
        _nearest(name, supported, prefix) or _nearest(name, NAMES[label], prefix)
    )


def _nearest(name: str, choices: Iterable[str], prefix: str, cutoff: float = 0.6) -> str:
    """``; did you mean torch.tanh?`` for the choices closest to ``name`` (difflib's ratio, case ignored; an
    in-place ``_`` spelling only for a name that has one)."""
    by_lower: dict[str, str] = {}
    for choice in sorted(choices):
        if choice.endswith("_") and not name.endswith("_"):
            continue
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=cutoff)
    return f"; did you mean {' or '.join(prefix + by_lower[c] for c in close)}?" if close else ""


# Tensor methods: every public torch method of symgrad's Tensor (none of them changes a tensor in place)
_METHODS: dict[str, Callable] = {
    name: getattr(TensorMethods, name)
    for name in dir(TensorMethods)
    if not name.startswith("_") and name != "apply_op" and callable(getattr(TensorMethods, name))
} | {
    # torch's method signatures where symgrad's Tensor method is narrower
    "clamp": symbolic_torch.clamp,
    "clip": symbolic_torch.clamp,
    "max": symbolic_torch.max,
    "norm": symbolic_torch.norm,
    "std": symbolic_torch.std,
    "var": symbolic_torch.var,
}
_INF_KEYWORDS = {"ord", "p"}  # keywords whose values may be torch.inf or -torch.inf
_TENSOR_KEYWORDS = {"input", "other", "target", "weight", "bias"}  # keywords whose values may be tensors
_RESULT_FIELDS = {"values", "sign", "logabsdet"}  # fields of max(x, dim) and slogdet(A) results
_ARITHMETIC = {"add", "sub", "mul", "div", "pow"}  # these also take numbers, as in torch.add(2, x)


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
    return max((check_exponent(v) for v in entries if v.is_number), default=1.0)


def _check_powers(root: Tensor) -> None:
    """Refuse exponents beyond ±MAX_EXPONENT, also when powers nest: ``((2 ** 64) ** 64) ** 64``
    has small exponents but a number SymPy would never finish computing."""
    growth: dict[int, float] = {}
    for node in topological(root):
        is_pow = node.op is not None and node.op.name == "pow"
        parts = node.inputs[:1] if is_pow else node.inputs
        total = max((growth[id(p)] for p in parts), default=1.0)
        total *= _exponent_growth(node.inputs[1]) if is_pow else 1.0
        if total > MAX_EXPONENT:
            raise ParseError(f"powers nested too deeply: their exponents multiply to {total:g} (limit {MAX_EXPONENT})")
        growth[id(node)] = total


def _is_literal(value: Any) -> bool:
    """Plain argument data: numbers, bools, None, dimension names (sizes) and (nested) tuples or lists of them."""
    if isinstance(value, (list, tuple)):
        return all(_is_literal(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, sympy.Symbol))


# ── the visitor ──────────────────────────────────────────────────────────────
class _Builder:
    """Walks a checked tree, building the graph with symgrad's own operations."""

    def __init__(self, tensors: dict[str, Tensor], functions: dict[str, Callable], text: str = "") -> None:
        self.tensors = tensors
        self.functions = functions
        self.text = text  # the user's expression, whose own words a shape error quotes
        # the dimension names of the tensors' shapes (k in W: k×n), usable as sizes: X.reshape(k, -1), (k,)
        self.dims = {
            str(s): s for t in tensors.values() for d in t.shape if not isinstance(d, int) for s in d.free_symbols
        }

    def visit(self, node: ast.AST) -> Any:
        return getattr(self, f"_visit_{type(node).__name__}")(node)  # node types are whitelisted by _check_tree

    def _known(self) -> str:
        return ", ".join(sorted(self.tensors)) or "none"

    def _tensor(self, value: Any, what: str) -> Tensor:
        if not isinstance(value, Tensor):
            raise UnsupportedError(f"{what} needs a tensor, not {type(value).__name__}")
        return value

    def _operand(self, value: Any, what: str) -> Any:
        if isinstance(value, Tensor) or is_number(value):
            return value
        raise UnsupportedError(f"{what} needs tensors or numbers, not {type(value).__name__}")

    def _visit_Expression(self, node: ast.Expression) -> Any:
        return self.visit(node.body)

    def _visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.tensors:
            return self.tensors[node.id]
        if node.id in self.dims:
            return self.dims[node.id]
        if node.id in self.functions:
            raise UnsupportedError(f"{node.id} is a function; call it, as in {node.id}(x)")
        if node.id in _ROOTS:
            raise UnsupportedError(f"{node.id} is a module; call its functions, as in torch.tanh(x)")
        near = _nearest(node.id, self.tensors, "")
        known = near.removeprefix("; ") if near else f"known tensors: {self._known()}"
        raise UnknownNameError(f"unknown name {node.id!r}; {known}")

    def _visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    def _visit_List(self, node: ast.List) -> list:
        return [self.visit(e) for e in node.elts]

    def _visit_Slice(self, node: ast.Slice) -> Any:
        raise UnsupportedError(f"a slice is only allowed inside brackets, as in x[1:]{where_text(node)}")

    def _visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        symbol, fn = UNARY_OPS[type(node.op)]
        value = self._operand(self.visit(node.operand), f"operator {symbol}")
        return fn(value)

    def _visit_BinOp(self, node: ast.BinOp) -> Any:
        symbol, fn = BINOPS[type(node.op)]
        left = self._operand(self.visit(node.left), f"operator {symbol}")
        right = self._operand(self.visit(node.right), f"operator {symbol}")
        if isinstance(left, Tensor) or isinstance(right, Tensor):
            with self._shapes_named(node, [(node.left, left), (node.right, right)], matmul=symbol == "@"):
                return fn(left, right)  # exponents of tensors are checked on the finished graph
        if symbol == "**":
            check_exponent(right)
        try:
            return check_number(fn(left, right), f"the result of {show_number(left)} {symbol} {show_number(right)}")
        except (ArithmeticError, TypeError) as exc:
            raise ParseError(f"cannot compute {show_number(left)} {symbol} {show_number(right)}: {exc}") from exc

    def _visit_Compare(self, node: ast.Compare) -> Tensor:
        if len(node.ops) != 1:
            raise UnsupportedError(
                f"a chained comparison is not supported; compare two things at a time{where_text(node)}"
            )
        symbol, fn = COMPARISONS[type(node.ops[0])]
        left = self._operand(self.visit(node.left), f"operator {symbol}")
        right = self._operand(self.visit(node.comparators[0]), f"operator {symbol}")
        if not (isinstance(left, Tensor) or isinstance(right, Tensor)):
            raise UnsupportedError(f"operator {symbol} compares tensors; both sides are numbers{where_text(node)}")
        return fn(left, right)

    def _visit_Attribute(self, node: ast.Attribute) -> Tensor:
        if node.attr in ("T", "mT"):
            value = self._tensor(self.visit(node.value), f".{node.attr}")
            return value.T if node.attr == "T" else value.mT
        path = dotted(node)
        if path and path[0] in _ROOTS and path[0] not in self.tensors:
            raise UnsupportedError(f"{'.'.join(path)} is not a tensor; call functions, as in torch.tanh(x)")
        if node.attr in _RESULT_FIELDS:
            value = self.visit(node.value)
            if _is_result(value) and node.attr in value._fields:
                return self._tensor(getattr(value, node.attr), f".{node.attr}")
        raise UnsupportedError(
            f"attribute .{node.attr} is not supported; only .T, .mT, method calls, and .values of max(x, dim) or "
            f".sign/.logabsdet of slogdet(A){where_text(node)}"
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
            operands = list(zip(node.args, args, strict=True))
            with self._shapes_named(node, operands, matmul=label.rsplit(".", 1)[-1] in _PRODUCTS):
                return fn(*args, **kwargs)
        except SymgradError:
            raise
        except (TypeError, AttributeError) as exc:  # an argument of the wrong kind, as Python says it
            raise ParseError(f"bad arguments to {label}(): {' '.join(str(exc).split())}") from exc
        except Exception as exc:  # anything else from inside symgrad is a bug: one line naming the call
            raise InternalError(
                f"{label}(){where_text(node)}: symgrad failed with {type(exc).__name__}: "
                f"{' '.join(str(exc).split())} (a bug in symgrad: please report it)"
            ) from exc

    @contextlib.contextmanager
    def _shapes_named(self, node: ast.AST, operands: list[tuple[ast.AST, Any]], matmul: bool) -> Iterator[None]:
        """A shape error, in the user's words: the part of the expression, each tensor operand by its own text
        and shape, the sizes a product contracts, then torch's own message (``W @ x: W is k×n, x is m; n and m
        must match; torch: size mismatch, ...``)."""
        try:
            yield
        except ShapeError as error:
            tensors = [(part, value) for part, value in operands if isinstance(value, Tensor)]
            if not self.text or not tensors:
                raise
            said = ", ".join(f"{self._words(part)} is {format_shape(value.shape)}" for part, value in tensors)
            if matmul and len(tensors) == 2 and all(value.shape for _, value in tensors):
                (_, a), (_, b) = tensors
                inner = (a.shape[-1], b.shape[0] if len(b.shape) == 1 else b.shape[-2])
                said += f"; {inner[0]} and {inner[1]} must match" if inner[0] != inner[1] else ""
            where = ast.get_source_segment(self.text, node) or ast.unparse(node)
            raise ShapeError(f"{where}: {said}; torch: {' '.join(str(error).split())}") from error

    def _words(self, node: ast.AST) -> str:
        """The user's text for ``node`` (in parentheses where it is itself an operation)."""
        words = ast.get_source_segment(self.text, node) or ast.unparse(node)
        return words if isinstance(node, ast.Name | ast.Call | ast.Attribute | ast.Subscript) else f"({words})"

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
            if func.id in _TORCH:
                raise UnsupportedError(f"{func.id}() is torch's: call it as torch.{func.id}(...)")
            near = _nearest(func.id, self.functions, "") or _nearest(func.id, _TORCH, "torch.")
            raise UnsupportedError(f"unknown function {func.id}()" + near)
        if not isinstance(func, ast.Attribute):
            raise UnsupportedError("only functions of torch and torch.nn.functional, and tensor methods, can be called")
        path = dotted(func.value)
        if path and path[0] in _ROOTS and path[0] not in self.tensors:
            spelled = ".".join(path)
            namespace = _NAMESPACES.get(path)
            if namespace is None:
                raise UnsupportedError(
                    f"unsupported module {spelled}; use torch, torch.nn.functional (F), torch.linalg or torch.special"
                )
            if func.attr not in namespace:
                missing = _missing(f"{spelled}.{func.attr}()", f"{spelled}.", func.attr, namespace, _TORCH_LABELS[path])
                raise UnsupportedError(missing)
            return namespace[func.attr], f"{spelled}.{func.attr}"
        if func.attr not in _METHODS:
            raise UnsupportedError(_missing(f"method .{func.attr}()", ".", func.attr, _METHODS, "Tensor"))
        receiver = self._tensor(self.visit(func.value), f".{func.attr}()")
        return partial(_METHODS[func.attr], receiver), f".{func.attr}"

    def _argument(self, value: Any, label: str, position: int) -> Any:
        if isinstance(value, Tensor) or _is_literal(value):
            return value
        if tuple(label.split(".")) in EQUATION_FUNCTIONS:
            if isinstance(value, str) and position == 0:
                return value  # the tree check let this string through, and only here
            if isinstance(value, (list, tuple)) and position == 1 and all(isinstance(v, Tensor) for v in value):
                return value  # torch.einsum("ij,jk", [a, b])
        raise UnsupportedError(f"{label}() arguments must be tensors, numbers or tuples of numbers")

    def _keyword(self, node: ast.keyword, label: str) -> Any:
        if node.arg in _INF_KEYWORDS and _is_torch_inf(node.value):
            return -math.inf if isinstance(node.value, ast.UnaryOp) else math.inf
        value = self.visit(node.value)
        if _is_literal(value) or (isinstance(value, str) and node.arg in STRING_KEYWORDS):
            return value
        if isinstance(value, Tensor) and node.arg in _TENSOR_KEYWORDS:
            return value
        raise UnsupportedError(f"{label}(): keyword {node.arg}= needs a literal (a number, bool, None or tuple)")


def _is_torch_inf(node: ast.AST) -> bool:
    """``torch.inf`` or ``-torch.inf``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return dotted(node) == ("torch", "inf")


def _is_result(value: Any) -> bool:
    """A named tuple of tensors from max(x, dim) or slogdet(A)."""
    return isinstance(value, tuple) and set(getattr(value, "_fields", ())) & _RESULT_FIELDS != set()


def _grad_names(requires_grad: bool | Iterable[str], names: Iterable[str]) -> set[str]:
    names = set(names)
    if isinstance(requires_grad, bool):
        return names if requires_grad else set()
    wanted = {requires_grad} if isinstance(requires_grad, str) else set(requires_grad)
    unknown = sorted(wanted - names)
    if unknown:
        first = unknown[0]
        near = _nearest(first, names, "")
        if near:  # a typo or another case of a tensor's name, not a tensor to add
            raise UnknownNameError(f"requires_grad (--wrt on the command line) names {first}, not a tensor here{near}")
        raise UnknownNameError(
            f"requires_grad names unknown tensors {', '.join(unknown)}; known tensors: "
            f"{', '.join(sorted(names)) or 'none'}; give each tensor a shape or values "
            f"(shapes={{{first!r}: (2, 3)}} or values={{{first!r}: [...]}}; on the command line "
            f"--shape {first}=2,3 or --value {first}=[...])"
        )
    return wanted


def _normal_names(given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` by each name's NFKC form; two names with one form are refused (Python reads them as one)."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for name, value in given.items():
        normal = check_name(name)
        if normal in spelled and spelled[normal] != name:
            raise ParseError(f"{spelled[normal]} and {name} are one name to Python ({normal}): give it once")
        spelled[normal], out[normal] = name, value
    return out


def _leaves(
    shapes: Mapping[str, Any], values: Mapping[str, Any], requires_grad: bool | Iterable[str]
) -> dict[str, Tensor]:
    """One tensor per name: with values as :func:`tensor` (floats), else as :func:`symbols`. Names are taken in
    the NFKC form Python reads identifiers in, as the expression's are (``ｘ`` is ``x``)."""
    shapes, values = _normal_names(shapes), _normal_names(values)
    if not isinstance(requires_grad, bool):
        wanted_names = [requires_grad] if isinstance(requires_grad, str) else list(requires_grad)
        requires_grad = [check_name(name) for name in wanted_names]
    names = sorted(set(shapes) | set(values))
    wanted = _grad_names(requires_grad, names)
    out = {}
    for name in names:
        shape = shapes.get(name)
        shape = None if shape is None else parse_shape(shape) if isinstance(shape, str) else as_shape(shape)
        if name in values:
            data = values[name]
            data = parse_values(data) if isinstance(data, str) else data
            data = data.tolist() if isinstance(data, np.ndarray) else data
            _, value_shape = flatten_numbers(data, f"values of {name}")  # also keeps strings away from sympify
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
    tree = read_expression(text, max_chars=MAX_CHARS, max_nodes=MAX_NODES)
    functions = dict(functions or {})
    tensors = _leaves(shapes or {}, values or {}, requires_grad)
    for name in functions:
        check_name(name)
        if name in tensors:
            raise ParseError(f"{name} is both a tensor and a function")
    try:
        result = _Builder(tensors, functions, text).visit(tree)
        if isinstance(result, Tensor):
            _check_powers(result)
            return result
    except (SymgradError, LookupError, RuntimeError, ValueError) as exc:
        if len(exc.args) == 1 and isinstance(exc.args[0], str):
            exc.args = (" ".join(exc.args[0].split()),)  # one line, even if a tensor's repr got into it
        raise
    if is_number(result):
        return constant(result, dtype="float32" if isinstance(result, float) else "int64")
    raise UnsupportedError(f"the expression must give a tensor, not {type(result).__name__}")


__all__ = ["parse"]
