"""One SymPy symbol per tensor entry, named after the tensor.

>>> w_01 = entry_symbol("w", (0, 1))
>>> str(w_01), sympy.latex(w_01)
('w_0_1', 'w_{0,1}')
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import sympy

from .latex import latex_name


class EntrySymbol(sympy.Symbol):
    """A real symbol that remembers its tensor and index, for LaTeX ``w_{0,1}``.

    ``owner`` identifies the tensor the symbol belongs to. It takes part in equality (as
    a :class:`sympy.Dummy`'s index does), so the symbols of two different tensors are never
    the same symbol, even when the tensors share a name: a derivation can never confuse a
    tensor symgrad makes (a grad_tensor, say) with one of the user's.
    """

    def __new__(cls, tensor_name: str, index: tuple[int, ...], owner: int = 0) -> EntrySymbol:
        name = "_".join([tensor_name, *map(str, index)])
        obj = sympy.Symbol.__xnew__(cls, name, real=True)  # uncached: the owner makes each symbol distinct
        obj.tensor_name = tensor_name
        obj.index = tuple(index)
        obj.owner = owner
        return obj

    def _hashable_content(self) -> tuple:
        return (*super()._hashable_content(), self.owner)

    def __getnewargs_ex__(self):  # pickling/copy rebuild through __new__
        return ((self.tensor_name, self.index, self.owner), {})

    def _latex(self, printer) -> str:
        base = latex_name(self.tensor_name)
        if not self.index:
            return base
        return f"{base}_{{{','.join(map(str, self.index))}}}"

    def _pretty(self, printer):
        from sympy.printing.pretty.stringpict import prettyForm

        return prettyForm(str(self))


def entry_symbol(tensor_name: str, index: tuple[int, ...], owner: int = 0) -> EntrySymbol:
    return EntrySymbol(tensor_name, tuple(index), owner)


def entry_symbols(tensor_name: str, shape: tuple[int, ...], owner: int = 0) -> np.ndarray:
    """An object array of shape ``shape`` holding ``name_i_j`` symbols of one tensor."""
    out = np.empty(shape, dtype=object)
    for index in itertools.product(*(range(d) for d in shape)):
        out[index] = entry_symbol(tensor_name, index, owner)
    return out


@cache
def value_symbols(position: int, shape: tuple[int, ...]) -> np.ndarray:
    """Stand-ins for the values of an op's input ``position``: the op's meaning is built on them
    and then evaluated in float64, the way torch computes the op (names no user can give)."""
    return entry_symbols(f"_input{position}", shape, owner=-1)
