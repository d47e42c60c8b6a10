"""How reports name an expression's tensors. One set of names for its intermediates, which the explanation's text
and its graph both use: ``Z₁``, ``Z₂``, … in dependency order (the first of Z, H, U, T, Q that no input is
called), and ``out`` for the result; and the tensors a ``wrt`` of names stands for.

>>> import symgrad as sg
>>> W, x = sg.symbols("W", (2, 2)), sg.symbols("x", (2,))
>>> out = (W @ x).tanh()
>>> names = intermediate_names(out)
>>> names[id(out.inputs[0])].text, names[id(out)].text
('Z₁', 'out')
>>> print(names[id(out.inputs[0])].bar_latex)
\\bar{Z}_{1}
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.constructors import fresh_name
from ..core.errors import SymgradError
from ..core.graph import topological
from ..core.latex import bar_latex, latex_name
from ..core.tensor import Tensor

_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


@dataclass(frozen=True)
class Name:
    """An intermediate's name as plain text (the graph's), as LaTeX (the text's), and its cotangent's LaTeX."""

    text: str
    latex: str
    bar_latex: str


def intermediate_names(output: Tensor) -> dict[int, Name]:
    """The name of each op node below ``output`` (by ``id``), ``output`` included."""
    leaves = output.leaves()
    taken = {unicodedata.normalize("NFKC", name) for name in leaves}  # Z₁ reads as Z1 in Python
    letter = next(c for c in "ZHUTQ" if not any(re.fullmatch(rf"{c}\d*", name) for name in taken))
    result = fresh_name("out", leaves)
    names: dict[int, Name] = {}
    counter = 0
    for node in topological(output):
        if node.op is None:
            continue
        if node is output:
            names[id(node)] = Name(result, latex_name(result), bar_latex(result))
            continue
        counter += 1
        text = f"{letter}{str(counter).translate(_SUBSCRIPTS)}"
        names[id(node)] = Name(text, f"{letter}_{{{counter}}}", rf"\bar{{{letter}}}_{{{counter}}}")
    return names


def wrt_tensors(wrt: Sequence[Tensor | str], leaves: Mapping[str, Tensor], of: str = "the expression") -> list[Tensor]:
    """The tensors ``wrt`` names: tensors, or the names of ``leaves``; anything else is refused in one line."""
    found = []
    for item in wrt:
        if isinstance(item, str):
            if item not in leaves:
                raise SymgradError(f"wrt names {item!r}, which is not a tensor of {of} ({', '.join(leaves)})")
            item = leaves[item]
        elif not isinstance(item, Tensor):
            raise SymgradError(f"wrt holds {item!r}, which is not a tensor")
        found.append(item)
    return found
