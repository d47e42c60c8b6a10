"""Sizes read off traced tensors whose dimensions are symbolic, and the decisions Python code makes on them.

``x.shape[0]`` of a tensor traced with ``dynamic_shapes={"x": {0: "m"}}`` is a :class:`SizeInt`: the example's
number for torch and Python, and the dimension ``m`` for symgrad. Arithmetic keeps both (``x.shape[0] * 2`` is
``2 m``). A comparison whose answer depends on m (``T <= block_size``) is a decision the traced graph holds
only where it goes the same way: it is recorded in the trace's :class:`Guards`, and emitted code checks it.

>>> m = sympy.Symbol("m", integer=True, positive=True)
>>> guards = Guards()
>>> with guards.recording():
...     size = SizeInt(3, m)
...     small, positive = size <= 8, size > 0
>>> small, positive, [str(g.relation) for g in guards.items]
(True, True, ['m <= 8'])
>>> size == 3  # decided outside a trace: nothing is recorded
True
"""

from __future__ import annotations

import contextlib
import operator
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sympy

from ..core.errors import UnsupportedError


@dataclass(frozen=True)
class Guard:
    """A relation between sizes that held at the example's sizes, and where the code decided on it."""

    relation: sympy.Basic
    site: str


@dataclass
class Guards:
    """The decisions on symbolic sizes one trace made (see the module docstring); ``site`` names the code that
    decides, as the tracer sees it."""

    items: list[Guard] = field(default_factory=list)
    site: Callable[[], str] = lambda: "an unknown place"

    @contextlib.contextmanager
    def recording(self) -> Iterator[Guards]:
        _ACTIVE.traces.append(self)
        try:
            yield self
        finally:
            _ACTIVE.traces.remove(self)

    def add(self, relation: sympy.Basic) -> None:
        if not any(g.relation == relation for g in self.items):
            self.items.append(Guard(relation, self.site()))

    def check_symbolic(self) -> None:
        """Refuse a trace whose code took a path only one value of a size takes (``if T == 4``)."""
        for guard in self.items:
            if isinstance(guard.relation, sympy.Eq):
                size, value = guard.relation.lhs, guard.relation.rhs
                raise UnsupportedError(
                    f"the code at {guard.site} decides on the symbolic size {size} by its value "
                    f"({size} == {value}), so the traced graph would hold only there: leave "
                    f"{', '.join(sorted(map(str, guard.relation.free_symbols)))} out of dynamic_shapes"
                )


@contextlib.contextmanager
def unguarded() -> Iterator[None]:
    """Sizes compared here record no guard: torch's own decompositions check shapes against plain numbers, and
    what they decide is checked by the probe instead (a second run at other sizes gives the same calls)."""
    saved, _ACTIVE.traces = _ACTIVE.traces, []
    try:
        yield
    finally:
        _ACTIVE.traces = saved


class _Recording(threading.local):
    def __init__(self) -> None:
        self.traces: list[Guards] = []  # the traces recording now in this thread (innermost last)


_ACTIVE = _Recording()
_RELATIONS: dict[Callable, Callable] = {
    operator.lt: sympy.Lt,
    operator.le: sympy.Le,
    operator.gt: sympy.Gt,
    operator.ge: sympy.Ge,
    operator.eq: sympy.Eq,  # SymPy's == compares structure; Eq is the relation
    operator.ne: sympy.Ne,
}


def _decide(relation: sympy.Basic, answer: bool) -> None:
    """Record ``relation`` (or its negation, whichever held) unless SymPy decides it for every size."""
    if relation in (sympy.true, sympy.false) or not _ACTIVE.traces:
        return
    held = relation if answer else relation.negated
    _ACTIVE.traces[-1].add(held.canonical)


class _Compared:
    """A number that carries a symbolic value: its sums, differences and products through ``_both`` (which keeps
    both values), and its six comparisons through ``_compare`` (which records the decision it makes)."""

    def _both(self, other: Any, combine: Callable) -> Any:
        raise NotImplementedError

    def _compare(self, other: Any, compare: Callable[[Any, Any], Any]) -> Any:
        raise NotImplementedError

    def __add__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a - b)

    def __rsub__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b - a)

    def __mul__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a * b)

    __rmul__ = __mul__

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)

    def __eq__(self, other: Any) -> Any:
        return self._compare(other, operator.eq)

    def __ne__(self, other: Any) -> Any:
        return self._compare(other, operator.ne)


class SizeInt(_Compared, int):
    """A size read off a traced tensor whose dimension is symbolic (see the module docstring)."""

    def __new__(cls, value: int, symbolic: Any) -> SizeInt:
        out = super().__new__(cls, value)
        out.symbolic = symbolic
        return out

    def _both(self, other: Any, combine: Callable) -> Any:
        if isinstance(other, SizeFloat) or (isinstance(other, float) and not isinstance(other, bool)):
            return SizeFloat(combine(int(self), float(other)), combine(self.symbolic, _symbolic_number(other)))
        if isinstance(other, bool) or not isinstance(other, int):
            return combine(int(self), other)
        theirs = other.symbolic if isinstance(other, SizeInt) else other
        return SizeInt(combine(int(self), int(other)), combine(self.symbolic, theirs))

    def __floordiv__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a // b)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b // a)

    def __mod__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a % b)

    def __rmod__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b % a)

    def __neg__(self) -> Any:
        return SizeInt(-int(self), -self.symbolic)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return self  # a size is positive

    def __pow__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, (bool, SizeInt)) and other >= 0:
            return SizeInt(int(self) ** other, self.symbolic**other)
        return SizeFloat(self).__pow__(other)

    def __rpow__(self, other: Any) -> Any:
        return SizeFloat(self).__rpow__(other)

    def __truediv__(self, other: Any) -> Any:
        return SizeFloat(self).__truediv__(other)

    def __rtruediv__(self, other: Any) -> Any:
        return SizeFloat(self).__rtruediv__(other)

    def _compare(self, other: Any, compare: Callable[[Any, Any], Any]) -> Any:
        # two sizes compare as numbers (int's comparison would hand a SizeInt back to its own, reflected, method)
        answer = compare(int(self), int(other) if isinstance(other, SizeInt) else other)
        if isinstance(other, bool) or not isinstance(other, (int, float)) or not isinstance(answer, bool):
            return answer
        if isinstance(other, SizeInt):
            theirs = other.symbolic
        else:
            theirs = sympy.Integer(other) if isinstance(other, int) else sympy.nsimplify(other, rational=True)
        _decide(_RELATIONS[compare](self.symbolic, theirs), answer)
        return answer

    # Not hashable: a cache keyed on sizes (einops' recipes, functools.lru_cache in user code) would take a symbolic
    # size for the example's number (equal, with the same hash) and reuse a result that holds at that size only, or
    # hand a symbolic result to a later trace at fixed sizes. Code with such a cache falls back to computing (einops
    # has that path), and a size that must be a key gets a one-line refusal.
    __hash__ = None  # type: ignore[assignment]


def _symbolic_number(value: Any) -> Any:
    """A number as symgrad writes it: a size's symbol, or a float as the exact rational it stands for."""
    if isinstance(value, (SizeInt, SizeFloat)):
        return value.symbolic
    if isinstance(value, float):
        return sympy.nsimplify(value, rational=True)
    return sympy.Integer(value)


class SizeFloat(_Compared, float):
    """A number computed from sizes, such as ``1 / x.shape[-1]`` or ``x.size(1) ** -0.5``: the example's value
    for torch and Python, and its expression in the symbolic sizes for symgrad (see :class:`SizeInt`).

    >>> n = sympy.Symbol("n", integer=True, positive=True)
    >>> coeff = 1 / SizeInt(4, n)
    >>> float(coeff), coeff.symbolic, (coeff * 2).symbolic
    (0.25, 1/n, 2/n)
    """

    def __new__(cls, value: Any, symbolic: Any = None) -> SizeFloat:
        out = super().__new__(cls, float(value))
        out.symbolic = value.symbolic if symbolic is None else symbolic
        return out

    def _both(self, other: Any, combine: Callable) -> Any:
        if isinstance(other, bool) or not isinstance(other, (int, float)):
            return NotImplemented
        return SizeFloat(combine(float(self), float(other)), combine(self.symbolic, _symbolic_number(other)))

    def __truediv__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a / b)

    def __rtruediv__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b / a)

    def __pow__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: a**b)

    def __rpow__(self, other: Any) -> Any:
        return self._both(other, lambda a, b: b**a)

    def __neg__(self) -> Any:
        return SizeFloat(-float(self), -self.symbolic)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return SizeFloat(abs(float(self)), sympy.Abs(self.symbolic))

    def _compare(self, other: Any, compare: Callable[[Any, Any], Any]) -> Any:
        answer = compare(float(self), float(other) if isinstance(other, (SizeInt, SizeFloat)) else other)
        if isinstance(other, bool) or not isinstance(other, (int, float)) or not isinstance(answer, bool):
            return answer
        _decide(_RELATIONS[compare](self.symbolic, _symbolic_number(other)), answer)
        return answer

    __hash__ = None  # type: ignore[assignment]  # as SizeInt's, for the same reason


def holds_size(value: Any) -> bool:
    """Whether ``value`` (or a list, tuple or dict in it) holds a :class:`SizeInt` or :class:`SizeFloat`."""
    if isinstance(value, (SizeInt, SizeFloat)):
        return True
    if isinstance(value, dict):
        return any(holds_size(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_size(v) for v in value)
    return False


def sizes_answer(real: Any, symbolic: Any, what: str, args: tuple, kwargs: dict) -> Any:
    """``x.shape`` / ``x.size(...)``: the real sizes, carrying the symbolic dimensions of a traced tensor."""
    import torch

    if (
        symbolic is None
        or what not in ("shape", "size", "numel", "nelement")
        or all(isinstance(d, int) for d in symbolic.shape)
    ):
        return real
    if what in ("numel", "nelement"):  # a product of sizes, some symbolic
        return SizeInt(int(real), sympy.Mul(*symbolic.shape))
    sizes = [
        SizeInt(int(n), d) if not isinstance(d, int) else int(n) for n, d in zip(tuple(args[0].shape), symbolic.shape)
    ]
    if isinstance(real, torch.Size):
        return torch.Size(sizes)
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    return sizes[dim] if isinstance(real, int) and dim is not None else real
