"""Symbolic tensors: one SymPy symbol per entry, optional values, a torch-like graph.

>>> import symgrad.ops  # the op table
>>> from symgrad.core import tensor
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0], [1.0]], name="x")
>>> loss = w @ x
>>> loss.sympy()
[[w_0_0*x_0_0 + w_0_1*x_1_0]]
>>> loss.tolist()
[[3.0]]
"""

from __future__ import annotations

import functools
import itertools
import keyword
import unicodedata
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from . import display
from .arrays import as_object_array, numbers_only
from .budget import check_budget, tick
from .dims import Shape, as_shape, format_shape, is_concrete, normalize_dim, numel, require_concrete
from .dtypes import Operand, is_floating, result_dtype
from .errors import (
    AutogradError,
    InternalError,
    ShapeError,
    SymbolicShapeError,
    SymgradError,
    TorchRuntimeError,
    TorchTypeError,
    UnsupportedError,
    ValuesUnknownError,
)
from .graph import topological
from .methods import TensorMethods
from .numbers import NumbersBy, approximations_by, as_entries, in_lower_precision, node_numbers, numeric_dtype
from .registry import Op, engine, lookup, spelled
from .symbols import entry_symbols

_counters: dict[str, itertools.count] = {}
_owners = itertools.count(1)  # each leaf of symbols owns its symbols (see symbols.EntrySymbol)

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead."
)


def auto_name(prefix: str) -> str:
    """``t1``, ``t2``, …: the next automatic name with ``prefix``."""
    counter = _counters.setdefault(prefix, itertools.count(1))
    return f"{prefix}{next(counter)}"


def check_name(name: str) -> str:
    """A tensor name: a Python identifier, not a keyword, not starting with '_', in the NFKC form
    Python itself reads identifiers in (``ｔ1`` is ``t1``), which is returned."""
    if not isinstance(name, str) or not name.isidentifier():
        raise SymgradError(f"invalid tensor name {name!r}: use a Python identifier that is not a keyword")
    normal = unicodedata.normalize("NFKC", name)
    if keyword.iskeyword(normal) or normal.startswith("_"):
        raise SymgradError(f"invalid tensor name {name!r}: use a Python identifier that is not a keyword")
    return normal


class GradFn:
    """The backward node torch would create; it only tracks names and freed buffers."""

    def __init__(self, name: str, saves_tensors: bool) -> None:
        self.name = name
        self.saves_tensors = saves_tensors
        self.freed_by: str | None = None

    def name_(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


class Tensor(TensorMethods):
    """A tensor whose entries are SymPy expressions, built like a torch tensor.

    Leaves carry symbols named after the tensor (``w_0_1``) and, optionally,
    values. Results of operations remember their op and inputs, like
    ``grad_fn`` chains in torch. Use :func:`tensor`, :func:`symbols` or the
    functions of :mod:`symgrad.torch` to make them.
    """

    __array_ufunc__ = None  # NumPy scalars defer to our operators

    def __init__(
        self,
        *,
        shape: Shape,
        name: str | None = None,
        op: Op | None = None,
        inputs: tuple[Tensor, ...] = (),
        attrs: dict | None = None,
        requires_grad: bool = False,
        values: np.ndarray | Callable[[], np.ndarray] | None = None,
        entries: np.ndarray | Callable[[], np.ndarray] | None = None,
        sources: tuple[Tensor, ...] = (),
        dtype: str = "float32",
        is_python_scalar: bool = False,
        distinct: bool = False,
        numeric: Tensor | None = None,
    ) -> None:
        self.shape: Shape = tuple(shape)
        self.op = op
        self.inputs = inputs
        self.attrs = attrs or {}
        self.dtype = dtype
        self.is_python_scalar = is_python_scalar
        self._requires_grad = requires_grad
        self._values = values
        self._entries = entries
        self._value_cache: np.ndarray | None = None
        self._numeric = numeric  # a formula's numbers come from this graph when it is given
        # who computes numbers in lower precision (see numbers.NumbersBy): a trace's leaves' own, inherited
        parts = (*inputs, *sources, *((numeric,) if numeric is not None else ()))
        self.numbers_by: NumbersBy | None = next((t.numbers_by for t in parts if t.numbers_by is not None), None)
        self._sources = sources
        self._grad: Tensor | None = None
        self._name_frozen = False
        # Tensors a user names share symbols by name (w_0_1 is w_0_1 in every graph); tensors symgrad
        # names itself, or that have no name yet, own symbols no other tensor can have.
        self._distinct = distinct
        self._owner = next(_owners) if distinct or name is None else 0
        if op is None and entries is None and isinstance(values, np.ndarray) and values.shape != tuple(shape):
            raise ShapeError(f"values of shape {format_shape(values.shape)} given for shape {format_shape(shape)}")
        self._kind = "op" if op is not None else ("formula" if entries is not None else "symbol")
        if name is not None and entries is None:
            name = check_name(name)  # leaves' names become symbol names; formula labels such as "w.grad" are free text
        self._name = name if name is not None else (None if op is not None or entries is not None else auto_name("t"))
        self.auto_named = name is None and entries is None  # the REPL may still name it after its variable
        self.grad_fn: GradFn | None = None
        if op is not None and requires_grad:
            self.grad_fn = GradFn(op.grad_fn_name(inputs, self.attrs), op.saves)
        self._leaves = self._collect_leaves()
        self.fill_value: Any = None  # a constant made by repeating one number: that number

    def __getattr__(self, name: str) -> Any:
        """A method the op table spells (``x.acos()``, registered by its row), bound to this tensor."""
        build = spelled("Tensor", name) if not name.startswith("__") else None
        if build is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        return functools.partial(build, self)

    # ── identity ──────────────────────────────────────────────────────────
    @property
    def kind(self) -> str:
        """``"symbol"`` (a leaf of symbols), ``"formula"`` (explicit entries, e.g. a gradient) or ``"op"``."""
        return self._kind

    @property
    def given_name(self) -> str | None:
        """The name given to this tensor, or None when it is called by its expression."""
        return self._name

    @property
    def symbol_values(self) -> np.ndarray | None:
        """A symbol leaf's own values (None when it is symbolic, or not a leaf of symbols)."""
        if callable(self._values):  # values made when first asked for (a traced parameter's float64 copy)
            made = self._values()
            if made.shape != tuple(self.shape):
                raise InternalError(f"values of shape {format_shape(made.shape)} made for {self.name} of shape "
                                    f"{format_shape(self.shape)} (a bug in symgrad: please report it)")  # fmt: skip
            self._values = made
        return self._values

    @property
    def name(self) -> str:
        """The tensor's name; an unnamed result is called by its expression, e.g. ``w @ x``."""
        return self._name if self._name is not None else display.expression_text(self)

    def rename(self, name: str) -> Tensor:
        """Give the tensor a new name (used by the REPL); leaves keep theirs once formulas exist."""
        name = check_name(name)
        if self._kind == "symbol" and self._name_frozen and name != self.name:
            return self
        self._name = name
        if self._kind == "symbol":
            self._leaves = {name: self}
            self._owner = 0 if not self._distinct else self._owner  # named by its user now: symbols by name
        return self

    def _collect_leaves(self) -> dict[str, Tensor]:
        if self._kind == "symbol" or self.is_named_constant:
            return {self.name: self}
        merged: dict[str, Tensor] = {}
        for part in self.inputs + self._sources:
            for name, leaf in part._leaves.items():
                if merged.setdefault(name, leaf) is not leaf:
                    raise SymgradError(
                        f"two different tensors are both named {name!r} in one expression; give them distinct names"
                    )
        return merged

    def leaves(self) -> dict[str, Tensor]:
        """The leaves this tensor is made of, by name: tensors of symbols, and named integer tensors
        (class targets, indices), which are inputs like the others but are never differentiated."""
        return dict(self._leaves)

    @property
    def is_named_constant(self) -> bool:
        """An integer tensor with a name and known entries (class targets given as values)."""
        return self._kind == "formula" and self._name is not None and not self._sources and not is_floating(self.dtype)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if not self.is_leaf:
            raise AutogradError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        if flag and not is_floating(self.dtype):
            raise AutogradError("Only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(flag)
        return self

    # ── shape ─────────────────────────────────────────────────────────────
    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim: int | None = None):
        return self.shape if dim is None else self.shape[normalize_dim(dim, self.ndim)]

    def numel(self):
        return numel(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TorchTypeError("len() of a 0-d tensor")
        return int(require_concrete(self.shape[:1], "len()")[0])

    # ── formulas and numbers ──────────────────────────────────────────────
    def entries(self) -> np.ndarray:
        """The entries as a NumPy object array of SymPy expressions."""
        if self._entries is None:
            pending = [node for node in topological(self) if node._entries is None]
            check_budget(pending, lambda: self.name)
            for position, node in enumerate(pending):
                tick("building entries, node {} of {}", position + 1, len(pending))
                node._entries = node._compute_entries()
        elif callable(self._entries):  # a formula derived only when its formulas are asked for
            self._entries = self._entries()
        return self._entries  # type: ignore[return-value]

    def check_budget(self) -> None:
        """Refuse now, with :class:`WorkBudgetError`, when building the entries would exceed the work budget."""
        check_budget([node for node in topological(self) if node._entries is None], lambda: self.name)

    def _compute_entries(self) -> np.ndarray:
        if self._kind == "symbol":
            self._name_frozen = True
            return entry_symbols(self.name, require_concrete(self.shape, f"the entries of {self.name}"), self._owner)
        require_concrete(self.shape, f"the entries of {self.name}")
        assert self.op is not None
        return self.op.meaning(*(i.entries() for i in self.inputs), **self.attrs)

    def sympy(self) -> sympy.Expr | sympy.Array:
        """The entry formulas: a SymPy ``Array`` (a single expression for 0-d tensors)."""
        arr = self.entries()
        return arr.reshape(()).item() if arr.ndim == 0 else sympy.ImmutableDenseNDimArray(arr.tolist(), arr.shape)

    def matrix(self) -> sympy.Matrix:
        """A 1-D or 2-D tensor's formulas as a SymPy ``Matrix`` (1-D becomes a column)."""
        arr = self.entries()
        if arr.ndim > 2:
            raise ShapeError(f"matrix() needs at most 2 dimensions, {self.name} has shape {format_shape(self.shape)}")
        return sympy.Matrix(arr.reshape(arr.shape[0], -1) if arr.ndim else arr.reshape(1, 1))

    def numbers(self) -> np.ndarray:
        """The numbers as a NumPy array (float64 for every floating dtype, int64, or bool); raises if any is
        unknown. They are computed node by node as torch computes them (see :mod:`symgrad.core.numbers`), or are
        the numbers torch computed, for a node a trace recorded."""
        if self._value_cache is None:
            pending = [node for node in topological(self) if node._value_cache is None]
            check_budget([node for node in pending if node.op is None or node.op.float64 is None], lambda: self.name)
            for node in pending:
                numbers = node._compute_values()
                if np.shape(numbers) != tuple(node.shape):  # never hand out numbers of another shape
                    raise InternalError(
                        f"the numbers of {node.op.name if node.op is not None else node.kind} came out of shape "
                        f"{format_shape(np.shape(numbers))} for a tensor of shape {format_shape(node.shape)} "
                        "(a bug in symgrad: please report it)"
                    )
                node._value_cache = numbers
        return self._value_cache  # type: ignore[return-value]

    def values(self) -> np.ndarray:
        """The numbers as an object array of SymPy numbers (for formulas and documents); raises if any is unknown."""
        return as_entries(self.numbers())

    def _compute_values(self) -> np.ndarray:
        """Numbers as torch computes them: node by node, in IEEE float64 (see :mod:`symgrad.core.numbers`)."""
        if self._kind == "symbol":
            if self._values is None:
                raise ValuesUnknownError(
                    f"{self.name} has no values (it is symbolic); give it values to get numbers, "
                    "or use .sympy() for the formulas"
                )
            return self.symbol_values
        if self.fill_value is not None and self._kind == "formula" and self._numeric is None:
            one = node_numbers(constant(self.fill_value, dtype=self.dtype), lambda t: t.numbers())
            return np.full(self.shape, one.reshape(()), dtype=one.dtype)
        by = self.numbers_by if self.op is not None and in_lower_precision(self) else None
        if by is None and self.op is not None and self.op.has("kernel"):
            by = approximations_by()  # torch's value defines it, in any graph (when torch is at hand)
        if by is not None:
            found = by.node_numbers(self, lambda t: t.numbers())
            if found is not None:
                return found
        return node_numbers(self, lambda t: t.numbers())

    def know_numbers(self, numbers: np.ndarray) -> None:
        """Take ``numbers`` (of this tensor's shape) as its numbers: torch's own, which a trace recorded."""
        self._value_cache = np.asarray(numbers, dtype=numeric_dtype(self.dtype)).reshape(self.shape)

    @property
    def numeric_source(self) -> Tensor | None:
        """For a formula: the graph its numbers come from (a gradient's backward graph), if any."""
        return self._numeric

    def has_values(self) -> bool:
        """Whether every leaf has values, so that numbers can be computed."""
        return all(leaf._kind != "symbol" or leaf._values is not None for leaf in self._leaves.values())

    def tolist(self) -> Any:
        """Numbers as nested lists of Python floats (ints for integer tensors, bools for boolean ones)."""
        return display.numbers_to_python(self.numbers())

    def item(self) -> float:
        if numel(self.shape) != 1:
            raise TorchRuntimeError(f"a Tensor with {numel(self.shape)} elements cannot be converted to Scalar")
        return display.numbers_to_python(self.numbers().reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __bool__(self) -> bool:
        raise TorchTypeError("the truth value of a symbolic tensor is not defined")

    # ── printing ──────────────────────────────────────────────────────────
    def __repr__(self) -> str:
        return display.tensor_repr(self)

    def _repr_latex_(self) -> str:
        return display.tensor_latex(self)

    # ── autograd ──────────────────────────────────────────────────────────
    @property
    def grad(self) -> Tensor | None:
        if not self.is_leaf:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TorchTypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value.shape != self.shape:
                raise TorchRuntimeError("assigned grad has data of a different size")
        self._grad = value

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Sequence[Tensor] | None = None,
    ) -> None:
        """Accumulate d(self)/d(leaf), contracted with ``gradient``, into each leaf's ``.grad``."""
        target = self.name if self._name is not None or self.op is None or self.op.precedence > 7 else f"({self.name})"
        arguments = ["gradient"] if gradient is not None else []
        arguments += ["retain_graph=True"] if retain_graph else []
        call = f"{target}.backward({', '.join(arguments)})"
        engine("backward")(
            self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs, call=call
        )

    def detach(self) -> Tensor:
        """The same formulas, cut from the graph (no grad_fn, no requires_grad), each entry marked ``detached``
        so that a derivative of a formula that reads it takes it as a constant, as torch does (the gradient of
        ``x * x.detach()`` is ``x.detach()``, not ``2 x``); at symbolic sizes, where there are no formulas to
        copy, the ``stop_gradient`` op (torch spells both ``x.detach()``)."""
        if not is_concrete(self.shape):
            return apply("stop_gradient", self)
        try:
            entries = self.entries()
        except SymbolicShapeError:  # a mean over symbolic sizes: one number, but no formula for it
            return apply("stop_gradient", self)
        if self._leaves:
            entries = lookup("stop_gradient").meaning(entries)
        return Tensor(
            shape=self.shape,
            name=auto_name(f"{self.name}_detached"),
            entries=entries,
            sources=tuple(self._leaves.values()),
            dtype=self.dtype,
            numeric=self,
        )

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def fill_(self, value: Any) -> Tensor:
        """Every entry ``value`` (a number, or a 0-d tensor), whatever the tensor held (uninitialised memory too)."""
        return self._inplace(lambda t: t.fill(value), reads=False)

    def zero(self) -> Tensor:
        """Zeros of this tensor's shape and dtype: what ``zero_()`` leaves (the tracer follows in-place ops so)."""
        return self.fill(0)

    def fill(self, value: Any) -> Tensor:
        """A tensor of this one's shape and dtype, ``value`` everywhere (torch.fill)."""
        if isinstance(value, Tensor):
            if value.shape:
                raise TorchRuntimeError(
                    f"fill_ only supports 0-dimension value tensor but got tensor with {len(value.shape)} dimensions."
                )
            return value.to(self.dtype).expand(*self.shape) if is_floating(self.dtype) else value.expand(*self.shape)
        node = apply("full", shape=self.shape, value=value)
        node.dtype = self.dtype
        return node

    def _snapshot(self) -> Tensor:
        if self._kind == "symbol":
            copy = Tensor(shape=self.shape, name=self.name, values=self._values, dtype=self.dtype)
            copy._owner, copy._distinct = self._owner, self._distinct  # the same symbols
            return copy
        return Tensor(
            shape=self.shape,
            name=auto_name("old"),
            entries=self.entries(),
            sources=tuple(self._leaves.values()),
            dtype=self.dtype,
            numeric=self._numeric,
        )

    def _inplace(self, compute, *, reads: bool = True) -> Tensor:
        """Make this tensor ``compute(its old self)`` (``reads=False``: a fill, which never reads the old one)."""
        if self.requires_grad:
            if self.is_leaf:
                raise AutogradError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise UnsupportedError("symgrad supports in-place operations only on tensors that do not require grad")
        before = self._snapshot() if reads else self
        result = compute(before)
        if result.shape != self.shape:
            raise ShapeError(
                f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(result.shape)}"
            )
        self._kind, self.op, self.inputs, self.attrs = "formula", None, (), {}
        self._entries = result.entries()
        self._sources = tuple(result._leaves.values())
        self._leaves = self._collect_leaves()
        self._value_cache = None
        self._numeric = result
        self.dtype = result.dtype
        return self

    def __iadd__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t + other)

    def __isub__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t - other)

    def __imul__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t * other)

    def __itruediv__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t / other)

    __idiv__ = __itruediv__

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t // other)

    def __imod__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t % other)

    def __ipow__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t**other)

    def __imatmul__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t @ other)

    def __iand__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t & other)

    def __ior__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t | other)

    def __ixor__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t ^ other)

    def __ilshift__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t << other)

    def __irshift__(self, other: Any) -> Tensor:
        return self._inplace(lambda t: t >> other)

    def add_(self, other: Any) -> Tensor:
        return self.__iadd__(other)

    def mul_(self, other: Any) -> Tensor:
        return self.__imul__(other)


def method(name: str) -> Callable[..., Any] | None:
    """``Tensor.<name>``: a method of the class, or one a row of the op table spells (None if neither)."""
    found = getattr(Tensor, name, None)
    return found if found is not None else spelled("Tensor", name)


def wrap(value: Any, like: Tensor | None = None) -> Tensor:
    """A Tensor as is; a Python number as a 0-d constant (as torch wraps scalars)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, np.bool_)):  # a Python bool is a bool scalar, as in torch (True + mask is bool)
        return constant(np.array(bool(value)), dtype="bool", python_scalar=True)
    if isinstance(value, (int, float, sympy.Number, np.number)):
        number = sympy.sympify(value)
        floating = number.is_Float or isinstance(value, float) or not number.is_finite  # nan and inf are floats
        dtype = "float32" if (floating or (like is not None and is_floating(like.dtype))) else "int64"
        return constant(number, dtype=dtype, python_scalar=True)
    if isinstance(value, sympy.Expr) and value.free_symbols and all(s.is_integer for s in value.free_symbols):
        # a number made of symbolic sizes, such as N or 1/sqrt(d)
        dtype = "int64" if value.is_integer else "float32"
        return Tensor(shape=(), entries=np.array(value, dtype=object), dtype=dtype, is_python_scalar=True)
    raise TorchTypeError(f"unsupported operand: a symgrad Tensor cannot be combined with {type(value).__name__}")


def _result_dtype(inputs: Sequence[Tensor], op: Op) -> str:
    return result_dtype(op, [Operand(t.dtype, not t.shape, t.is_python_scalar) for t in inputs])


def apply(op_name: str, *args: Any, **attrs: Any) -> Tensor:
    """Build the node ``op(*args, **attrs)`` after checking shapes with the op's rule."""
    op = lookup(op_name)
    tensors = [a for a in args if isinstance(a, Tensor)]
    like = tensors[0] if tensors else None
    inputs = tuple(wrap(a, like) for a in args)
    if op.has("one_dtype"):  # its kernel takes one dtype: torch refuses others, or converts them (see TAGS)
        floats = {t.dtype for t in inputs if is_floating(t.dtype) and not t.is_python_scalar}
        if len(floats) > 1:
            refusal = op.mixed_dtypes and op.mixed_dtypes(*(t.dtype for t in inputs), **attrs)
            if refusal:
                raise TorchRuntimeError(refusal)
            common = _result_dtype(inputs, op)
            inputs = tuple(t.to(common) if t.dtype in floats and t.dtype != common else t for t in inputs)
    shape = op.shape(*(t.shape for t in inputs), **attrs)
    return Tensor(
        shape=shape,
        op=op,
        inputs=inputs,
        attrs=attrs,
        requires_grad=op.differentiable and any(t.requires_grad for t in inputs),
        dtype=_result_dtype(inputs, op),
    )


Tensor.apply_op = staticmethod(apply)


def with_inputs(node: Tensor, inputs: Sequence[Tensor], attrs: dict | None = None) -> Tensor:
    """``node``'s op applied to ``inputs`` (and ``attrs``, else its own); ``node`` itself when they are its own
    (rebuilds keep identity). The rebuilt node keeps ``node``'s dtype where its inputs keep theirs: a dtype given
    as an argument (``.to(torch.int64)``, ``new_zeros(dtype=...)``) labels the node, not its op."""
    if attrs is None and all(a is b for a, b in zip(inputs, node.inputs)):
        return node
    if node.op.has("one_dtype"):  # an equivalent input of another float dtype (a simplified constant) takes the old
        inputs = [
            new.to(old.dtype) if new.dtype != old.dtype and is_floating(new.dtype) and is_floating(old.dtype) else new
            for new, old in zip(inputs, node.inputs)
        ]
    out = apply(node.op.name, *inputs, **(node.attrs if attrs is None else attrs))
    if all(a.dtype == b.dtype for a, b in zip(inputs, node.inputs)):
        out.dtype = node.dtype
    return out


def constant(
    value: Any,
    *,
    shape: Shape | None = None,
    dtype: str = "float32",
    python_scalar: bool = False,
    name: str | None = None,
) -> Tensor:
    """A tensor of known numbers with no symbols of its own (``ones_like``, Python scalars). Numbers given as a
    numeric NumPy array (a trace's constants, which may be large) stay numbers: their SymPy entries are made only
    if formulas ask for them."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fiub" and shape is None:
        numbers = value.astype(numeric_dtype(dtype))
        out = Tensor(shape=numbers.shape, name=name, entries=lambda: as_entries(numbers), dtype=dtype,
                     is_python_scalar=python_scalar)  # fmt: skip
        out.know_numbers(numbers)
        return out
    arr = as_object_array(numbers_only(value))
    if shape is not None and arr.size == 1:  # one number repeated: entries made only if formulas ask for them
        concrete = require_concrete(as_shape(shape), "a constant")
        out = Tensor(shape=concrete, name=name, entries=lambda: np.broadcast_to(arr.reshape(()), concrete).copy(),
                     dtype=dtype, is_python_scalar=python_scalar)  # fmt: skip
        out.fill_value = arr.reshape(-1)[0]
        return out
    if shape is not None:
        arr = np.broadcast_to(arr, require_concrete(as_shape(shape), "a constant")).copy()
    return Tensor(shape=arr.shape, name=name, entries=arr, dtype=dtype, is_python_scalar=python_scalar)
