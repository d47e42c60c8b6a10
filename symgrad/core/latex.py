"""LaTeX that a tensor needs to show itself: escaped names, shapes and (elided) matrices.

Everything a user types reaches LaTeX through these functions, so a tensor name
can never leave math mode or start a TeX command.

>>> text_latex("a_b & {c}")
'a\\\\_b \\\\& \\\\{c\\\\}'
>>> latex_name("w"), latex_name("alpha"), latex_name("w_1"), latex_name("x}$")
('w', '\\\\alpha', '\\\\mathrm{w\\\\_1}', '\\\\mathrm{x\\\\}\\\\$}')
>>> matrix_latex([["1", "2"], ["3", "4"]])
'\\\\begin{pmatrix} 1 & 2 \\\\\\\\ 3 & 4 \\\\end{pmatrix}'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

# In TeX's text mode; math mode gets the same characters through \mathrm{} via ``latex_name``.
_TEXT_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "%": r"\%",
    "_": r"\_",
    "^": r"\^{}",
    "~": r"\~{}",
}

# In math mode (inside \mathrm{}), where text-mode accents and \textbackslash are errors.
_MATH_ESCAPES = {**_TEXT_ESCAPES, "\\": r"\backslash{}", "^": r"\wedge{}", "~": r"\sim{}"}

ELIDE_AFTER = 6  # rows or columns shown in full; beyond this a matrix keeps its corners

GREEK = {"alpha", "beta", "gamma", "delta", "epsilon", "theta", "lambda", "mu", "sigma", "tau", "phi", "omega"}


# Greek letters LaTeX spells as commands; the capitals that look like Latin ones (Α, Β, …) have none.
_SMALL = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lamda mu nu xi pi rho sigma tau upsilon phi chi psi omega"
)
_CAPITAL = "gamma delta theta lamda xi pi sigma upsilon phi psi omega"
_GREEK_COMMANDS = {
    unicodedata.lookup(f"GREEK {case} LETTER {name.upper()}"): "\\"
    + (name.capitalize() if case == "CAPITAL" else name).replace("amda", "ambda")
    for case, names in (("SMALL", _SMALL), ("CAPITAL", _CAPITAL))
    for name in names.split()
}


def _spelled(char: str, math: bool) -> str:
    """A character outside printable ASCII: a Greek letter as its command, anything else by its code
    point inside angle brackets, which no identifier can contain (``ω`` and ``u3c9`` stay apart)."""
    command = _GREEK_COMMANDS.get(char)
    if command is not None:
        return f"{{{command}}}" if math else f"${command}$"
    point = f"U+{ord(char):04X}"
    return rf"{{\langle}}{point}{{\rangle}}" if math else rf"$\langle${point}$\rangle$"


def text_latex(text: str, *, math: bool = False) -> str:
    """``text`` for TeX's text mode (``\\texttt{…}``, prose), or inside ``\\mathrm{}`` with ``math=True``:
    every special character escaped.

    Characters outside printable ASCII are spelled so that pdflatex can print them and distinct names
    stay distinct: Greek letters as ``\\omega``, anything else as ``⟨U+3C9⟩``.
    """
    escapes = _MATH_ESCAPES if math else _TEXT_ESCAPES
    out = []
    for char in str(text):
        if char in escapes:
            out.append(escapes[char])
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(_spelled(char, math))
    return "".join(out)


def latex_name(name: str) -> str:
    """A tensor name as LaTeX math: one ASCII letter as is, a Greek letter's name as the letter,
    anything longer upright, with every TeX special character escaped (names can be labels such
    as ``(w @ x).sum()``, and nothing in a name may start a command or close a group)."""
    if len(name) == 1 and name.isascii() and name.isalpha():
        return name
    if name in _GREEK_COMMANDS:
        return _GREEK_COMMANDS[name]
    if name in GREEK:
        return "\\" + name
    return rf"\mathrm{{{text_latex(name, math=True)}}}"


def shape_latex(shape: Sequence[Any]) -> str:
    """``1 \\times 2``, ``k \\times n``; a 0-d shape is ``()``."""
    if not shape:
        return "()"
    return r" \times ".join(sympy.latex(sympy.sympify(d)) for d in shape)


def corner_indices(size: int, limit: int) -> list[int | None]:
    """All indices, or the first ``limit - 1`` and the last with ``None`` marking the gap."""
    if size <= limit:
        return list(range(size))
    return list(range(limit - 2)) + [None, size - 1]


def elided(items: Sequence[Any], limit: int = ELIDE_AFTER) -> list[Any]:
    """The items, or the first ``limit - 1`` and the last with ``None`` standing for the rest."""
    return [None if i is None else items[i] for i in corner_indices(len(items), limit)]


def matrix_latex(cells: Any, limit: int = ELIDE_AFTER) -> str:
    """A pmatrix of LaTeX strings; beyond ``limit`` rows or columns the middle becomes ⋯ / ⋮ / ⋱.

    A 1-d array is one row; a 0-d one is its entry; more dimensions are shown as
    rows of the first index with the rest flattened.
    """
    arr = np.asarray(cells, dtype=object)
    if arr.ndim == 0:
        return str(arr.item())
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(arr.shape[0], -1)
    rows = corner_indices(arr.shape[0], limit)
    cols = corner_indices(arr.shape[1], limit)
    lines = []
    for r in rows:
        line = []
        for c in cols:
            if r is None:
                line.append(r"\ddots" if c is None else r"\vdots")
            else:
                line.append(r"\cdots" if c is None else str(arr[r, c]))
        lines.append(" & ".join(line))
    return r"\begin{pmatrix} " + r" \\ ".join(lines) + r" \end{pmatrix}"


_COMMAND = re.compile(r"\\(?:[A-Za-z]+|.)")
_SPACING = frozenset({r"\,", r"\;", r"\:", r"\!", r"\ ", r"\quad", r"\qquad"})
_BINARY = frozenset({r"\cdot", r"\odot", r"\times", r"\wedge", r"\vee", r"\oplus", r"\neg", r"\leq", r"\geq", r"\neq"})
_SEPARATORS = frozenset("+-=<>,;&|")


def group_end(text: str, at: int) -> int:
    """Where the brace group opening at ``at`` closes (escaped braces do not count)."""
    depth, i = 0, at
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
        i += 1
    raise ValueError(f"unbalanced braces in {text!r}")


def _delimited_end(text: str, at: int) -> int:
    r"""Where the ``\left … \right`` pair opening at ``at`` closes, its closing delimiter included."""
    depth, i = 0, at
    while i < len(text):
        match = _COMMAND.match(text, i) if text[i] == "\\" else None
        if match is None:
            i += 1
            continue
        depth += {r"\left": 1, r"\right": -1}.get(match.group(), 0)
        i = match.end()
        if depth == 0:
            delimiter = _COMMAND.match(text, i) if text[i : i + 1] == "\\" else None
            return delimiter.end() if delimiter else i + 1
    raise ValueError(f"unbalanced \\left in {text!r}")


def _tokens(text: str) -> list[str]:
    r"""``text`` at its top level: brace groups and ``\left … \right`` pairs are one token each, a run of
    spaces (or a spacing command) is ``" "``."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            end = len(text) - len(text[i:].lstrip())
            token = " "
        elif char == "{":
            end = group_end(text, i)
            token = text[i:end]
        elif char == "\\":
            command = _COMMAND.match(text, i)
            end = _delimited_end(text, i) if command.group() == r"\left" else command.end()
            token = " " if command.group() in _SPACING else text[i:end]
        else:
            end, token = i + 1, char
        out.append(token)
        i = end
    return out


def script_tail(text: str) -> str | None:
    r"""The scripts that end ``text`` (``"^"``, ``"_"``, ``"_^"``, or ``""``) when it is one unit a script can
    attach to; None when it is several (``W X``, ``\sum_{i} x``, ``a + b``), which a script would split.

    >>> script_tail("X"), script_tail(r"X^{\top}"), script_tail("Z_{1}"), script_tail(r"\left(W X\right)^{2}")
    ('', '^', '_', '^')
    >>> script_tail(r"\operatorname{relu}\left(x\right)"), script_tail(r"\textstyle\sum x"), script_tail("-x")
    ('', None, None)
    """
    try:
        tokens = _tokens(text.strip())
    except ValueError:
        return None
    tail, argument = "", False
    for token in tokens:
        if argument:  # the script's own argument: X^{\top}, x_i
            argument = False
        elif token == " " or token in _SEPARATORS or token in _BINARY:
            return None
        elif token in ("^", "_"):
            tail, argument = tail + token, True
        elif token == "'":  # a prime is a superscript
            tail += "^"
        else:
            tail = ""
    return tail


def takes_script(text: str, script: str) -> bool:
    r"""Whether ``script`` (``^`` or a prime, or ``_``) can follow ``text`` without brackets, and reads as
    applying to all of it: ``X`` and ``Z_{1}`` take a ``^``, but ``X^{\top}`` would be a double superscript.
    A subscript follows no script at all, since ``X^{\top}_{i}`` reads as ``(X_i)^⊤`` as easily as ``(X^⊤)_i``.

    >>> takes_script("Z_{1}", "^"), takes_script(r"X^{\top}", "^"), takes_script(r"X^{\top}", "_")
    (True, False, False)
    """
    tail = script_tail(text)
    if tail is None:
        return False
    return not tail if script == "_" else "^" not in tail


def bar_latex(name: str) -> str:
    r"""The cotangent of the tensor ``name`` in LaTeX: a bar over one letter (``\bar{W}``, ``\bar{\alpha}``), a line
    over a longer name (``\overline{\mathrm{fc1\_weight}}``), where a bar sat as a short dash over its middle.

    >>> bar_latex("W"), bar_latex("fc1")
    ('\\bar{W}', '\\overline{\\mathrm{fc1}}')
    """
    text = latex_name(name)
    one_symbol = len(name) == 1 or re.fullmatch(r"\\[A-Za-z]+", text) is not None
    return rf"\bar{{{text}}}" if one_symbol else rf"\overline{{{text}}}"
