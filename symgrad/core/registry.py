"""The op registry: what an op is, and the tables the op families fill.

The core never names an op. Each family module in :mod:`symgrad.ops` builds its
rows as :class:`Op` values and registers them here; a tensor method such as
``x.exp()`` looks its op up by name when it is called. In the same way the
autograd engine of :mod:`symgrad.derive` registers itself in :data:`ENGINES`, so
``Tensor.backward`` reaches it without the core importing the layers above.

>>> sorted(TAGS)  # doctest: +NORMALIZE_WHITESPACE
['bilinear', 'broadcasting', 'comparison', 'creation', 'input_dtype', 'kernel', 'layout', 'linear', 'one_dtype',
 'positions', 'random']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .dims import Shape
from .errors import SymgradError, TorchValueError

TAGS = frozenset(
    {
        "bilinear",
        "broadcasting",
        "comparison",
        "creation",
        "input_dtype",
        "kernel",
        "layout",
        "linear",
        "one_dtype",
        "positions",
        "random",
    }
)
"""Structure an op can declare: ``layout`` ops only move entries around (transpose, reshape,
index), ``broadcasting`` ops combine operands elementwise with torch's broadcasting,
``comparison`` ops give booleans, ``creation`` ops make tensors from their attributes alone,
``linear`` and ``bilinear`` ops are linear in their input (in each input), and a ``kernel`` op's numbers are what
torch's kernel computes, wherever torch is at hand: its own approximation (a Bessel function, to about 1e-8) or
rounding (batch norm's fused multiply-add, which leaves 1e-15 where the exact value is 0); a ``random`` op draws from
torch's generator (emitted code draws it in the model's order, once), and a ``one_dtype`` op's kernel takes
operands of one dtype (a matrix product, einsum, a convolution): where torch refuses operands of two floating
dtypes, its row's ``mixed_dtypes`` says how; where torch accepts them (``outer``, an einsum that sums nothing), they
are converted to the result's dtype first, so that its backward's products see one dtype too. A ``positions`` op's
attributes name positions along its input's dims (a slice's bounds, a start, a diagonal's offset, positions to take):
a proof checks it at stand-in sizes only where its output's shape follows them (see :mod:`symgrad.verify.stand_ins`).
An ``input_dtype`` op is one of torch's mixed-precision kernels: a bfloat16 or float16 first input with float32
parameters gives the first input's dtype (a layer norm of a bfloat16 activation, as autocast runs it)."""


@dataclass(frozen=True)
class Op:
    """One row of the op table.

    - ``shape(*input_shapes, **attrs)``: the output shape, with torch's error messages;
    - ``meaning(*input_entries, **attrs)``: the output entries as SymPy expressions (NumPy object arrays);
    - ``torch(torch_module, *input_tensors, **attrs)``: how torch computes it, for the cross-check;
    - ``code`` and ``latex``: templates of the spelling, ``{0}``, ``{1}`` for inputs, ``{name}`` for attributes;
    - ``grad_fn``: the name of torch's backward node (or a function of the inputs and attributes);
    - ``vjp(g, out, *inputs, **attrs)``: one gradient (a symgrad tensor, or None) per input;
    - ``jvp(tangents, out, *inputs, **attrs)``: the forward-mode derivative (tangents: one per input, or None);
      without one, forward mode transposes the VJP rule;
    - ``scalar``: the SymPy function of one entry, for elementwise ops;
    - ``spell(attrs, inputs)``: extra template fields, for ops whose spelling depends on their attributes;
    - ``cost(*input_shapes, **attrs)``: about how many SymPy terms its entries take (default: the sizes);
    - ``float64(*input_arrays, **attrs)``: the op on float64 NumPy arrays, where it is exactly IEEE arithmetic
      (sums, products, layout): numbers then skip building the meaning from symbols;
    - ``batch``: how the op acts on inputs with extra leading (batch) dims, so that a law can be taken for a
      whole basis of cotangents at once (Jacobian and Hessian laws): ``"pointwise"`` (the same op),
      ``"broadcast"`` (the same op, batched operands aligned), ``"dims"`` (its dim attributes shifted past the
      batch dims), ``"trailing"`` (it acts on trailing dims only), or ``batch(inputs, batched, nb, **attrs)``
      returning the batched result (``batched``: which inputs carry the ``nb`` leading dims); None: no rule.
    - ``indexes(*inputs, **attrs)``: the sizes that an index tensor among the inputs picks entries along, as
      ``(size, index)`` pairs (the class count of cross-entropy's targets, gather's dim): a proof at concrete
      sizes must make each such size larger than the index values given.
    - ``rule_shapes(*input_shapes, **attrs)``: smaller input shapes at which a proof checks this op's rule, for
      ops each of whose entries reads a whole slice of the input (batch norm reads a channel over the batch): the
      rule is written for every size, and at a model's sizes its entrywise check would take minutes;
    - ``stand_in_attrs(mapping, *input_shapes, **attrs)``: the attributes at stand-in sizes, for an op whose
      attributes name sizes (a reshape's target): ``mapping`` takes large fixed sizes to the small ones a proof
      checks the rule at (see :mod:`symgrad.verify.stand_ins`); raises ShapeError where none fit;
    - ``readable(*inputs, **attrs)``: the same value in the ops a person reads (a fused kernel's formula), which laws
      to read show, where emitted code and numbers keep the kernel;
    - ``tuple_code``: a template of one kernel call that returns this op's value first and others after it
      (torch's ``native_batch_norm`` returns the mean and 1/std with the result); ``companion_of``: ``(op,
      position)`` pairs for an op whose value is output ``position`` of that op's call on the same inputs (or the
      first of them) and attributes, so that emitted code computes them with one call and saves what the backward
      reads, as autograd does.
    """

    name: str
    shape: Callable[..., Shape]
    meaning: Callable[..., Any]
    torch: Callable[..., Any]
    code: str
    latex: str
    grad_fn: str | Callable[..., str]
    saves: bool = True  # torch's node keeps tensors, so a second backward needs retain_graph
    scalar: Callable[..., Any] | None = None
    precedence: int = 9  # Python's binding strength of the torch spelling, for parentheses
    vjp: Callable[..., tuple] | None = None
    differentiable: bool = True  # False for comparisons, masks and one-hot encodings
    tags: frozenset[str] = frozenset()
    float_result: bool = False  # the result is floating even when the inputs are integers (div, mean, exp, ...)
    spell: Callable[[dict, tuple], dict] | None = None
    float64: Callable[..., Any] | None = None
    cost: Callable[..., int] | None = None  # terms to build the entries, from the input shapes (default: sizes)
    jvp: Callable[..., Any] | None = None  # (tangents, out, *inputs, **attrs) -> J·t; default: the VJP transposed
    batch: str | Callable[..., Any] | None = None  # see above: "pointwise", "broadcast", "dims", "trailing"
    indexes: Callable[..., list] | None = None  # (*inputs, **attrs) -> [(size, index tensor)]: see below
    rule_shapes: Callable[..., tuple] | None = None  # (*input shapes, **attrs) -> smaller ones: see below
    stand_in_attrs: Callable[..., dict] | None = None  # (mapping, *input shapes, **attrs) -> attrs: see below
    readable: Callable[..., Any] | None = None  # (*inputs, **attrs) -> the formula, for laws to read
    # (*input dtypes, **attrs) -> torch's error for floating operands of two dtypes, or None if it takes them
    mixed_dtypes: Callable[..., str | None] | None = None
    tuple_code: str | None = None  # one call returning (this op's value, its companions' values, ...)
    companion_of: tuple[tuple[str, int], ...] = ()  # (op, position)s: this value comes with that op's tuple_code

    def __post_init__(self) -> None:
        unknown = set(self.tags) - TAGS
        if unknown:
            raise TorchValueError(f"op {self.name!r} has unknown tags {sorted(unknown)}; known: {sorted(TAGS)}")

    def grad_fn_name(self, inputs: tuple, attrs: dict) -> str:
        return self.grad_fn if isinstance(self.grad_fn, str) else self.grad_fn(inputs, **attrs)

    def has(self, tag: str) -> bool:
        return tag in self.tags


OPS: dict[str, Op] = {}
"""Every registered op, by name."""

ENGINES: dict[str, Callable[..., Any]] = {}
"""Engines of the layers above, by job: ``"backward"`` is torch.autograd.backward's mirror."""

SPELLINGS: dict[str, dict[str, Callable[..., Any]]] = {}
"""torch's names for the functions that build ops, by namespace (``"torch"``, ``"torch.special"``,
``"torch.nn.functional"``, ``"Tensor"`` for methods) and name. The rows register them beside themselves, and
:mod:`symgrad.torch` and :class:`~symgrad.core.tensor.Tensor`'s methods are made from this table, so that adding an
op with its torch names touches its row alone."""


def register_spelling(path: str, build: Callable[..., Any]) -> None:
    """Register ``build`` under torch's name ``path`` (``"torch.special.i0e"``, ``"Tensor.acos"``), once."""
    namespace, _, name = path.rpartition(".")
    table = SPELLINGS.setdefault(namespace, {})
    if name in table and table[name] is not build:
        raise TorchValueError(f"{path} is spelled twice")
    table[name] = build


def spelled(namespace: str, name: str) -> Callable[..., Any] | None:
    """The function registered as ``namespace.name``, or None."""
    return SPELLINGS.get(namespace, {}).get(name)


def register(op: Op) -> Op:
    """Add a row to the table (each name once)."""
    if op.name in OPS:
        raise TorchValueError(f"op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


def lookup(name: str) -> Op:
    """The op called ``name``, with a clear message when the op families have not been loaded."""
    try:
        return OPS[name]
    except KeyError:
        raise SymgradError(
            f"no op named {name!r} is registered; import symgrad (or symgrad.ops) to load the op table"
        ) from None


def engine(job: str) -> Callable[..., Any]:
    """The engine registered for ``job`` (e.g. ``"backward"``)."""
    try:
        return ENGINES[job]
    except KeyError:
        raise SymgradError(f"no {job} engine is loaded; import symgrad (or symgrad.derive) first") from None
