"""Symbolic tensors: one SymPy symbol per entry, optional values, a torch-like graph.

>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0], [1.0]], name="x")
>>> loss = w @ x
>>> loss.sympy()
[[w_0_0*x_0_0 + w_0_1*x_1_0]]
>>> loss.tolist()
[[3.0]]
"""

from __future__ import annotations

import itertools
import keyword
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import sympy

from . import display
from .arrays import as_object_array, object_array
from .dims import (
    Shape,
    as_shape,
    format_shape,
    is_concrete,
    normalize_dim,
    normalize_dims,
    numel,
    require_concrete,
    reshape_target,
)
from .errors import AutogradError, ShapeError, SymgradError, UnsupportedError, ValuesUnknownError
from .indexing import normalize_index
from .optable import OPS, Op
from .symbols import entry_symbols

_counters: dict[str, itertools.count] = {}

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead."
)


def _auto_name(prefix: str) -> str:
    counter = _counters.setdefault(prefix, itertools.count(1))
    return f"{prefix}{next(counter)}"


def check_name(name: str) -> str:
    """A tensor name must be a Python identifier that is not a keyword and does not start with '_'."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise SymgradError(f"invalid tensor name {name!r}: use a Python identifier that is not a keyword")
    return name


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


class Tensor:
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
        values: np.ndarray | None = None,
        entries: np.ndarray | None = None,
        sources: tuple[Tensor, ...] = (),
        dtype: str = "float32",
        is_python_scalar: bool = False,
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
        self._sources = sources
        self._grad: Tensor | None = None
        self._name_frozen = False
        if op is None and entries is None and values is not None and values.shape != tuple(shape):
            raise ShapeError(f"values of shape {format_shape(values.shape)} given for shape {format_shape(shape)}")
        self._kind = "op" if op is not None else ("formula" if entries is not None else "symbol")
        if name is not None and entries is None:
            check_name(name)  # leaves' names become symbol names; formula labels such as "w.grad" are free text
        self._name = name if name is not None else (None if op is not None or entries is not None else _auto_name("t"))
        self._auto_named = name is None and entries is None  # the REPL may still name it after its variable
        self.grad_fn: GradFn | None = None
        if op is not None and requires_grad:
            self.grad_fn = GradFn(op.grad_fn_name(inputs, self.attrs), op.saves)
        self._leaves = self._collect_leaves()

    # ── identity ──────────────────────────────────────────────────────────
    @property
    def name(self) -> str:
        """The tensor's name; an unnamed result is called by its expression, e.g. ``w @ x``."""
        return self._name if self._name is not None else display.expression_text(self)

    def rename(self, name: str) -> Tensor:
        """Give the tensor a new name (used by the REPL); leaves keep theirs once formulas exist."""
        check_name(name)
        if self._kind == "symbol" and self._name_frozen and name != self.name:
            return self
        self._name = name
        if self._kind == "symbol":
            self._leaves = {name: self}
        return self

    def _collect_leaves(self) -> dict[str, Tensor]:
        if self._kind == "symbol":
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
        """The symbol leaves this tensor's formulas are made of, by name."""
        return dict(self._leaves)

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
        if flag and not self.dtype.startswith("float"):
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
            raise TypeError("len() of a 0-d tensor")
        return int(require_concrete(self.shape[:1], "len()")[0])

    # ── formulas and numbers ──────────────────────────────────────────────
    def entries(self) -> np.ndarray:
        """The entries as a NumPy object array of SymPy expressions."""
        if self._entries is None:
            for node in _topological(self):
                if node._entries is None:
                    node._entries = node._compute_entries()
        return self._entries  # type: ignore[return-value]

    def _compute_entries(self) -> np.ndarray:
        if self._kind == "symbol":
            self._name_frozen = True
            return entry_symbols(self.name, require_concrete(self.shape, f"the entries of {self.name}"))
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

    def values(self) -> np.ndarray:
        """The values as an object array of SymPy numbers; raises if any is unknown."""
        if self._value_cache is None:
            for node in _topological(self):
                if node._value_cache is None:
                    node._value_cache = node._compute_values()
        return self._value_cache  # type: ignore[return-value]

    def _compute_values(self) -> np.ndarray:
        if self._kind == "symbol":
            if self._values is None:
                raise ValuesUnknownError(
                    f"{self.name} has no values (it is symbolic); give it values to get numbers, "
                    "or use .sympy() for the formulas"
                )
            return self._values
        if self._kind == "formula":
            subs = {}
            for leaf in self._leaves.values():
                subs.update(zip(leaf.entries().reshape(-1), leaf.values().reshape(-1)))
            flat = [sympy.sympify(e).xreplace(subs) for e in self.entries().reshape(-1)]
            return object_array(flat, self.entries().shape)
        assert self.op is not None
        return self.op.meaning(*(i.values() for i in self.inputs), **self.attrs)

    def has_values(self) -> bool:
        return all(leaf._values is not None for leaf in self._leaves.values())

    def tolist(self) -> Any:
        """Numbers as nested lists of Python floats (ints for integer tensors)."""
        return display.to_python(self.values(), integer=self.dtype.startswith("int"))

    def item(self) -> float:
        if numel(self.shape) != 1:
            raise RuntimeError(f"a Tensor with {numel(self.shape)} elements cannot be converted to Scalar")
        return display.to_python(self.values().reshape(()), integer=self.dtype.startswith("int"))

    def __float__(self) -> float:
        return float(self.item())

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a symbolic tensor is not defined")

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
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value.shape != self.shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    def backward(
        self,
        gradient: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Sequence[Tensor] | None = None,
    ) -> None:
        """Accumulate d(self)/d(leaf), contracted with ``gradient``, into each leaf's ``.grad``."""
        from . import autograd

        target = self.name if self._name is not None or self.op is None or self.op.precedence > 7 else f"({self.name})"
        arguments = ["gradient"] if gradient is not None else []
        arguments += ["retain_graph=True"] if retain_graph else []
        call = f"{target}.backward({', '.join(arguments)})"
        autograd.backward(
            self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs, _call=call
        )

    def detach(self) -> Tensor:
        """The same formulas, cut from the graph (no grad_fn, no requires_grad)."""
        return Tensor(
            shape=self.shape,
            name=_auto_name(f"{self.name}_detached"),
            entries=self.entries(),
            sources=tuple(self._leaves.values()),
            dtype=self.dtype,
        )

    def zero_(self) -> Tensor:
        return self._inplace(lambda t: t * 0)

    def _snapshot(self) -> Tensor:
        if self._kind == "symbol":
            return Tensor(shape=self.shape, name=self.name, values=self._values, dtype=self.dtype)
        return Tensor(
            shape=self.shape,
            name=_auto_name("old"),
            entries=self.entries(),
            sources=tuple(self._leaves.values()),
            dtype=self.dtype,
        )

    def _inplace(self, compute) -> Tensor:
        if self.requires_grad:
            if self.is_leaf:
                raise AutogradError("a leaf Variable that requires grad is being used in an in-place operation.")
            raise UnsupportedError("symgrad supports in-place operations only on tensors that do not require grad")
        before = self._snapshot()
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

    def add_(self, other: Any) -> Tensor:
        return self.__iadd__(other)

    def mul_(self, other: Any) -> Tensor:
        return self.__imul__(other)

    # ── arithmetic ────────────────────────────────────────────────────────
    def __add__(self, other: Any) -> Tensor:
        return apply("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return apply("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return apply("sub", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return apply("sub", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return apply("mul", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return apply("mul", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return apply("div", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return apply("div", other, self)

    def __pow__(self, other: Any) -> Tensor:
        return apply("pow", self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return apply("pow", other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return apply("matmul", self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return apply("matmul", other, self)

    def __neg__(self) -> Tensor:
        return apply("neg", self)

    def __pos__(self) -> Tensor:
        return self

    def add(self, other: Any) -> Tensor:
        return self + other

    def sub(self, other: Any) -> Tensor:
        return self - other

    def mul(self, other: Any) -> Tensor:
        return self * other

    def div(self, other: Any) -> Tensor:
        return self / other

    def pow(self, exponent: Any) -> Tensor:
        return self**exponent

    def neg(self) -> Tensor:
        return -self

    def mm(self, other: Tensor) -> Tensor:
        return apply("mm", self, other)

    def matmul(self, other: Tensor) -> Tensor:
        return apply("matmul", self, other)

    def exp(self) -> Tensor:
        return apply("exp", self)

    def log(self) -> Tensor:
        return apply("log", self)

    def sin(self) -> Tensor:
        return apply("sin", self)

    def cos(self) -> Tensor:
        return apply("cos", self)

    def tanh(self) -> Tensor:
        return apply("tanh", self)

    def sigmoid(self) -> Tensor:
        return apply("sigmoid", self)

    def relu(self) -> Tensor:
        return apply("relu", self)

    def abs(self) -> Tensor:
        return apply("abs", self)

    def sqrt(self) -> Tensor:
        return apply("sqrt", self)

    # ── reductions ────────────────────────────────────────────────────────
    def sum(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        return apply("sum", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def mean(self, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        if not self.dtype.startswith("float"):
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
                f"Got: {self.dtype.capitalize()}"
            )
        return apply("mean", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    # ── shape and layout ──────────────────────────────────────────────────
    @property
    def T(self) -> Tensor:
        return apply("permute", self, dims=tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
            )
        return self.transpose(-2, -1)

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        ndim = self.ndim
        return apply("transpose", self, dim0=normalize_dim(dim0, ndim), dim1=normalize_dim(dim1, ndim))

    def permute(self, *dims: int) -> Tensor:
        order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        return apply("permute", self, dims=tuple(normalize_dim(d, self.ndim) for d in order))

    def reshape(self, *shape: Any) -> Tensor:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return apply("reshape", self, shape=reshape_target(self.shape, target))

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    def __getitem__(self, index: Any) -> Tensor:
        return apply("index", self, index=normalize_index(index), via="index")

    def __iter__(self) -> Iterator[Tensor]:
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(len(self)):
            yield apply("index", self, index=(i,), via="unbind")

    def unsqueeze(self, dim: int) -> Tensor:
        dim = normalize_dim(dim, self.ndim + 1)
        return self[(slice(None),) * dim + (None,)]

    def expand(self, *shape: Any) -> Tensor:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        lead = len(target) - self.ndim
        resolved = tuple(self.shape[i - lead] if isinstance(d, int) and d == -1 else d for i, d in enumerate(target))
        return apply("expand", self, shape=as_shape(resolved))

    def expand_as(self, other: Tensor) -> Tensor:
        return self.expand(*other.shape)

    def flip(self, *dims: Any) -> Tensor:
        order = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
        out = self
        for d in order:
            out = apply("flip", out, dim=normalize_dim(d, self.ndim))
        return out

    # ── more functions, as Tensor methods in torch ───────────────────────
    def softmax(self, dim: int) -> Tensor:
        return apply("softmax", self, dim=normalize_dim(dim, self.ndim))

    def log_softmax(self, dim: int) -> Tensor:
        return apply("log_softmax", self, dim=normalize_dim(dim, self.ndim))

    def logsumexp(self, dim: int | Sequence[int], keepdim: bool = False) -> Tensor:
        return apply("logsumexp", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def amax(self, dim: int | Sequence[int] = (), keepdim: bool = False) -> Tensor:
        return apply("amax", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))

    def max(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """``x.max()`` (ties share the gradient) or ``x.max(dim)`` (values, indices; the first max gets it)."""
        if dim is None:
            return self.amax()
        from collections import namedtuple

        values = apply("max_dim", self, dim=normalize_dim(dim, self.ndim), keepdim=bool(keepdim))
        return namedtuple("max", ["values", "indices"])(values, None)

    def norm(self, p: Any = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
        if p in (2, "fro", None):
            return apply("norm", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim))
        if p == 1:
            return self.abs().sum(dim=dim, keepdim=keepdim)
        raise UnsupportedError(f"norm with p={p!r} is not supported (use 1 or 2)")

    def clamp(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        return apply("clamp", self, min=min, max=max)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - torch's spelling
        return self.clamp(min, max)

    def cumsum(self, dim: int) -> Tensor:
        return apply("cumsum", self, dim=normalize_dim(dim, self.ndim))

    def var(
        self,
        dim: int | Sequence[int] | None = None,
        *,
        correction: int = 1,
        keepdim: bool = False,
        unbiased: bool | None = None,
    ) -> Tensor:
        """Σ (x − mean)² / (N − correction), as torch.var."""
        if unbiased is not None:
            correction = int(unbiased)
        return apply("var", self, dim=normalize_dims(dim, self.ndim), keepdim=bool(keepdim), correction=int(correction))

    def std(
        self,
        dim: int | Sequence[int] | None = None,
        *,
        correction: int = 1,
        keepdim: bool = False,
        unbiased: bool | None = None,
    ) -> Tensor:
        return self.var(dim, correction=correction, keepdim=keepdim, unbiased=unbiased).sqrt()

    def erf(self) -> Tensor:
        return apply("erf", self)

    def log1p(self) -> Tensor:
        return apply("log1p", self)

    def reciprocal(self) -> Tensor:
        return apply("reciprocal", self)

    def rsqrt(self) -> Tensor:
        return apply("rsqrt", self)

    def trace(self) -> Tensor:
        return apply("trace", self)

    def sign(self) -> Tensor:
        return apply("sign", self)

    def __gt__(self, other: Any) -> Tensor:
        return apply("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return apply("ge", self, other)

    def __lt__(self, other: Any) -> Tensor:
        return apply("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return apply("le", self, other)


def _topological(root: Tensor) -> list[Tensor]:
    """Op nodes below ``root`` in dependency order (inputs first), without recursion."""
    order: list[Tensor] = []
    seen: set[int] = set()
    stack: list[tuple[Tensor, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for part in reversed(node.inputs):
            if id(part) not in seen:
                stack.append((part, False))
    return order


def wrap(value: Any, like: Tensor | None = None) -> Tensor:
    """A Tensor as is; a Python number as a 0-d constant (as torch wraps scalars)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, sympy.Number, np.number)) and not isinstance(value, np.bool_):
        number = sympy.Integer(int(value)) if isinstance(value, bool) else sympy.sympify(value)
        dtype = "float32" if (number.is_Float or (like is not None and like.dtype.startswith("float"))) else "int64"
        return constant(number, dtype=dtype, python_scalar=True)
    if isinstance(value, sympy.Expr) and value.free_symbols and all(s.is_integer for s in value.free_symbols):
        # a number made of symbolic sizes, such as N or 1/sqrt(d)
        dtype = "int64" if value.is_integer else "float32"
        return Tensor(shape=(), entries=np.array(value, dtype=object), dtype=dtype, is_python_scalar=True)
    raise TypeError(f"unsupported operand: a symgrad Tensor cannot be combined with {type(value).__name__}")


def _result_dtype(inputs: Sequence[Tensor], op: Op) -> str:
    if not op.differentiable and op.name in ("gt", "ge", "lt", "le", "eq"):
        return "bool"
    tensors = [t for t in inputs if not t.is_python_scalar] or list(inputs)
    if not tensors:
        return "float32"
    if any(t.dtype.startswith("float") for t in inputs) or op.name in {
        "div",
        "mean",
        "exp",
        "log",
        "sin",
        "cos",
        "tanh",
        "sigmoid",
        "sqrt",
        "map",
    }:
        floats = [t.dtype for t in tensors if t.dtype.startswith("float")]
        return max(floats) if floats else "float32"
    return tensors[0].dtype


def apply(op_name: str, *args: Any, **attrs: Any) -> Tensor:
    """Build the node ``op(*args, **attrs)`` after checking shapes with the op's rule."""
    op = OPS[op_name]
    tensors = [a for a in args if isinstance(a, Tensor)]
    like = tensors[0] if tensors else None
    inputs = tuple(wrap(a, like) for a in args)
    shape = op.shape(*(t.shape for t in inputs), **attrs)
    return Tensor(
        shape=shape,
        op=op,
        inputs=inputs,
        attrs=attrs,
        requires_grad=op.differentiable and any(t.requires_grad for t in inputs),
        dtype=_result_dtype(inputs, op),
    )


def _infer_dtype(arr: np.ndarray, dtype: str | None) -> str:
    if dtype is not None:
        return dtype
    flat = arr.reshape(-1)
    return "int64" if flat.size and all(v.is_Integer for v in flat) else "float32"


def tensor(data: Any, *, requires_grad: bool = False, name: str | None = None, dtype: Any = None) -> Tensor:
    """A leaf tensor with values: its formulas use its symbols, its numbers use ``data``.

    >>> tensor([[1.0, 2.0]], requires_grad=True, name="w").sympy()
    [[w_0_0, w_0_1]]
    """
    if isinstance(data, Tensor):
        data = data.tolist()
    values = as_object_array(_numbers_only(data))
    bad = [v for v in values.reshape(-1) if not (isinstance(v, sympy.Basic) and v.is_Number)]
    if bad:
        raise SymgradError(f"tensor values must be numbers, not {bad[0]!r}")
    kind = _dtype_name(dtype) or _infer_dtype(values, None)
    if not kind.startswith("float"):
        if requires_grad:
            raise AutogradError("Only Tensors of floating point and complex dtype can require gradients")
        # Integer tensors (class targets, indices) cannot be differentiated: they are named constants.
        values = object_array([sympy.Integer(int(v)) for v in values.reshape(-1)], values.shape)
        return Tensor(shape=values.shape, name=check_name(name) if name else None, entries=values, dtype=kind)
    values = object_array([sympy.Float(float(v)) for v in values.reshape(-1)], values.shape)
    out = Tensor(shape=values.shape, name=name, values=values, dtype=kind)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _numbers_only(data: Any) -> Any:
    """Nested lists of numbers, checked before SymPy sees them (strings would be parsed as code)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, np.ndarray):
            stack.extend(item.reshape(-1).tolist())
        elif not isinstance(item, (int, float, sympy.Number, np.number)) or isinstance(item, np.bool_):
            raise SymgradError(f"tensor values must be numbers, not {type(item).__name__}")
    return data


def _dtype_name(dtype: Any) -> str | None:
    if dtype is None:
        return None
    text = str(dtype).replace("torch.", "")
    aliases = {"float": "float32", "double": "float64", "long": "int64", "int": "int32"}
    return aliases.get(text, text)


def symbols(
    name: str,
    shape: Any,
    *,
    requires_grad: bool = False,
    values: Any = None,
    dtype: str = "float32",
    classes: Any = None,
) -> Tensor:
    """A leaf tensor of symbols, possibly with symbolic dimensions.

    Integer tensors of class targets declare ``classes`` (their number of classes,
    e.g. a dimension ``C``) so that proofs can instantiate them with valid labels.

    >>> n = sympy.Symbol("n", integer=True, positive=True)
    >>> symbols("W", (2, n)).shape
    (2, n)
    """
    shape = as_shape(shape)
    arr = None
    if values is not None:
        arr = object_array(
            [sympy.Float(float(v)) for v in as_object_array(_numbers_only(values)).reshape(-1)],
            np.shape(np.array(values, dtype=object)),
        )
    out = Tensor(shape=shape, name=check_name(name), values=arr, dtype=_dtype_name(dtype) or "float32")
    out.classes = classes
    if requires_grad:
        out.requires_grad_(True)
    return out


def symbols_like(t: Tensor, name: str, *, values: Any = None) -> Tensor:
    """Symbols shaped like ``t``, e.g. a symbolic grad_tensor ``v``."""
    return symbols(name, t.shape, values=values)


def constant(
    value: Any,
    *,
    shape: Shape | None = None,
    dtype: str = "float32",
    python_scalar: bool = False,
    name: str | None = None,
) -> Tensor:
    """A tensor of known numbers with no symbols of its own (``ones_like``, Python scalars)."""
    arr = as_object_array(_numbers_only(value))
    if shape is not None:
        arr = np.broadcast_to(arr, require_concrete(as_shape(shape), "a constant")).copy()
    out = Tensor(shape=arr.shape, name=name or "c", entries=arr, dtype=dtype, is_python_scalar=python_scalar)
    if name is None:
        out._name = None  # printed by value
    return out


def formula(
    entries: np.ndarray, *, sources: Sequence[Tensor], name: str | None = None, dtype: str = "float32"
) -> Tensor:
    """A tensor given by explicit entry formulas (gradients); ``sources`` supply the symbols' values."""
    leaves: dict[str, Tensor] = {}
    for source in sources:
        leaves.update(source._leaves)
    return Tensor(
        shape=entries.shape, name=name or _auto_name("f"), entries=entries, sources=tuple(leaves.values()), dtype=dtype
    )


def full_like(t: Tensor, value: float) -> Tensor:
    shape = t.shape if is_concrete(t.shape) else None
    if shape is None:
        raise UnsupportedError(f"full_like needs a concrete shape; {t.name} has shape {format_shape(t.shape)}")
    number = sympy.Integer(value) if float(value).is_integer() else sympy.Float(value)
    return constant(number, shape=shape, dtype=t.dtype)
