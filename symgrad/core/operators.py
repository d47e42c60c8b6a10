"""Python's operators on tensors, as torch defines them: arithmetic (``+``, ``/``, ``//``, ``%``, ``**``, ``@``, each
with its reflected form for ``1 / x``), comparisons, and ``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` (logical on
booleans, bit operations on integers). A mixin of :class:`symgrad.core.tensor.Tensor`; each operator builds the
node of an op of the table, which gives its meaning and its gradient. (``==`` and ``!=`` keep Python's identity:
tensors are dictionary keys; ``torch.eq`` compares.)

>>> import symgrad as sg
>>> x = sg.tensor([1.5, -2.0], name="x")
>>> (1 / x).tolist(), (x // 1).tolist(), (x % 1).tolist(), (2 ** x).tolist()
([0.6666666666666666, -0.5], [1.0, -2.0], [0.5, 0.0], [2.8284271247461903, 0.25])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .dtypes import is_floating
from .errors import TorchRuntimeError

if TYPE_CHECKING:
    from .tensor import Tensor


class OperatorMethods:
    """Python's operators (see the module docstring)."""

    dtype: str

    @staticmethod
    def apply_op(op_name: str, *args: Any, **attrs: Any) -> Tensor:  # replaced by the tensor module's apply
        raise NotImplementedError

    # ── arithmetic ────────────────────────────────────────────────────────
    def __add__(self, other: Any) -> Tensor:
        return self.apply_op("add", self, other)

    def __radd__(self, other: Any) -> Tensor:
        return self.apply_op("add", other, self)

    def __sub__(self, other: Any) -> Tensor:
        return self.apply_op("sub", self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return self.apply_op("sub", other, self)

    def __mul__(self, other: Any) -> Tensor:
        return self.apply_op("mul", self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return self.apply_op("mul", other, self)

    def __truediv__(self, other: Any) -> Tensor:
        return self.apply_op("div", self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return self.apply_op("div", other, self)

    def __pow__(self, other: Any) -> Tensor:
        return self.apply_op("pow", self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return self.apply_op("pow", other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return self.apply_op("matmul", self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return self.apply_op("matmul", other, self)

    def __div__(self, other: Any) -> Tensor:  # torch's name for its __truediv__
        return self.apply_op("div", self, other)

    def __rdiv__(self, other: Any) -> Tensor:  # torch's name for its __rtruediv__
        return self.apply_op("div", other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return self.apply_op("floor_divide", self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return self.apply_op("floor_divide", other, self)

    def __mod__(self, other: Any) -> Tensor:
        return self.apply_op("remainder", self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return self.apply_op("remainder", other, self)

    def __abs__(self) -> Tensor:
        return self.apply_op("abs", self)

    def __lshift__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_left_shift", self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_left_shift", other, self)

    def __rshift__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_right_shift", self, other)

    def __rrshift__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_right_shift", other, self)

    def __neg__(self) -> Tensor:
        return self.apply_op("neg", self)

    def __pos__(self) -> Tensor:
        return self

    # ── comparisons ───────────────────────────────────────────────────────
    def __gt__(self, other: Any) -> Tensor:
        return self.apply_op("gt", self, other)

    def __ge__(self, other: Any) -> Tensor:
        return self.apply_op("ge", self, other)

    def __lt__(self, other: Any) -> Tensor:
        return self.apply_op("lt", self, other)

    def __le__(self, other: Any) -> Tensor:
        return self.apply_op("le", self, other)

    # ── logical and bit operators ─────────────────────────────────────────
    def _bitwise(self, name: str, *operands: Any) -> Tensor:
        """``&``, ``|``, ``^`` and ``~``: logical on booleans (masks), bit operations on integers (as torch's)."""
        dtypes = [getattr(t, "dtype", "bool" if isinstance(t, bool) else "int64") for t in (self, *operands)]
        if any(is_floating(d) for d in dtypes):
            raise TorchRuntimeError(f"\"bitwise_{name}_cpu\" not implemented for '{dtypes[0].capitalize()}'")
        if all(d == "bool" for d in dtypes):
            return self.apply_op(f"logical_{name}", self, *operands)
        return self.apply_op(f"bitwise_{name}", self, *operands)

    def __and__(self, other: Any) -> Tensor:
        return self._bitwise("and", other)

    def __or__(self, other: Any) -> Tensor:
        return self._bitwise("or", other)

    def __xor__(self, other: Any) -> Tensor:
        return self._bitwise("xor", other)

    def __rand__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_and", other, self) if self.dtype != "bool" else self._bitwise("and", other)

    def __ror__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_or", other, self) if self.dtype != "bool" else self._bitwise("or", other)

    def __rxor__(self, other: Any) -> Tensor:
        return self.apply_op("bitwise_xor", other, self) if self.dtype != "bool" else self._bitwise("xor", other)

    def __invert__(self) -> Tensor:
        return self._bitwise("not")
