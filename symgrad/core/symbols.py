"""One SymPy symbol per tensor entry, named after the tensor.

>>> w_01 = entry_symbol("w", (0, 1))
>>> str(w_01), sympy.latex(w_01)
('w_0_1', 'w_{0,1}')
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy

from .latex import latex_name


class EntrySymbol(sympy.Symbol):
    """A real symbol that remembers its tensor and index, for LaTeX ``w_{0,1}``."""

    def __new__(cls, tensor_name: str, index: tuple[int, ...]) -> EntrySymbol:
        name = "_".join([tensor_name, *map(str, index)])
        obj = sympy.Symbol.__new__(cls, name, real=True)
        obj.tensor_name = tensor_name
        obj.index = tuple(index)
        return obj

    def __getnewargs_ex__(self):  # pickling/copy rebuild through __new__
        return ((self.tensor_name, self.index), {})

    def _latex(self, printer) -> str:
        base = latex_name(self.tensor_name)
        if not self.index:
            return base
        return f"{base}_{{{','.join(map(str, self.index))}}}"

    def _pretty(self, printer):
        from sympy.printing.pretty.stringpict import prettyForm

        return prettyForm(str(self))


def entry_symbol(tensor_name: str, index: tuple[int, ...]) -> EntrySymbol:
    return EntrySymbol(tensor_name, tuple(index))


def entry_symbols(tensor_name: str, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of shape ``shape`` holding ``name_i_j`` symbols."""
    out = np.empty(shape, dtype=object)
    for index in itertools.product(*(range(d) for d in shape)):
        out[index] = entry_symbol(tensor_name, index)
    return out
