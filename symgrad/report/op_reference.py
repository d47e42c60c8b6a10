"""The reference of supported ops, generated from the code: ``generated/ops.md``.

Two tables, neither kept by hand: the torch functions and ``nn`` modules of :mod:`symgrad.torch` (what each
does, from its docstring, and the options it refuses, read from the ``UnsupportedError`` it raises), and the
op table itself (each row's torch and LaTeX spellings, and which rules it has).

>>> text = op_reference()
>>> "| `linalg.matrix_norm` |" in text and "| `exp` | `torch.exp({0})` |" in text
True
"""

from __future__ import annotations

import ast
import inspect
import string
import textwrap
from dataclasses import dataclass
from typing import Any

from .. import torch as symbolic_torch
from ..core.registry import OPS
from ..emit.templates import text_environment

NAMESPACES = (
    ("torch", symbolic_torch, ""),
    ("torch.nn.functional", symbolic_torch.nn.functional, "F."),
    ("torch.linalg", symbolic_torch.linalg, "linalg."),
)
NOT_FUNCTIONS = {"Tensor", "autograd", "func", "linalg", "nn", "inf"}  # submodules, the class, constants


@dataclass(frozen=True)
class Entry:
    """One public name: how it is spelled, what it does, and the options it refuses."""

    name: str
    summary: str
    refusals: tuple[str, ...]


def _cell(text: str) -> str:
    """Text that keeps a Markdown table cell whole."""
    return " ".join(text.split()).replace("|", "\\|")


def _summary(obj: Any) -> str:
    """The first paragraph of obj's own docstring (a class's, not one it inherits)."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    doc = inspect.cleandoc(doc) if isinstance(doc, str) else ""
    return _cell(doc.split("\n\n")[0]) if doc else ""


def _template(text: str) -> str:
    """An op's spelling as it reads (format templates double their literal braces): fields stay ``{0}``."""
    parts = string.Formatter().parse(text)
    return _cell("".join(literal + ("" if field is None else f"{{{field}}}") for literal, field, _, _ in parts))


def _message(node: ast.expr) -> str | None:
    """The text of an error message: literal parts kept, computed parts as ``…``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(p.value if isinstance(p, ast.Constant) else "…" for p in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _message(node.left), _message(node.right)
        return None if left is None or right is None else left + right
    return None


def refusals(obj: Any) -> tuple[str, ...]:
    """The messages of the ``UnsupportedError`` raised in ``obj``'s own body (not in what it calls)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return ()
    found = []
    for node in ast.walk(tree):
        call = node.exc if isinstance(node, ast.Raise) else None
        if not isinstance(call, ast.Call) or not call.args:
            continue
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        text = _message(call.args[0]) if name == "UnsupportedError" else None
        if text:
            found.append(_cell(text))
    return tuple(dict.fromkeys(found))


def functions() -> list[tuple[str, list[Entry]]]:
    """The public functions of each namespace, sorted by name."""
    tables = []
    for title, module, prefix in NAMESPACES:
        entries = []
        for name in sorted(getattr(module, "__all__", [])):
            obj = getattr(module, name, None)
            if name in NOT_FUNCTIONS or not callable(obj) or isinstance(obj, type):
                continue
            summary = _summary(obj) or f"as `{title}.{name}`"
            entries.append(Entry(prefix + name, summary, refusals(obj)))
        tables.append((title, entries))
    return tables


def modules() -> list[Entry]:
    """The ``nn`` module classes."""
    nn = symbolic_torch.nn
    names = sorted(n for n in nn.modules.__all__ if isinstance(getattr(nn, n, None), type))
    return [Entry(f"nn.{n}", _summary(getattr(nn, n)) or f"as `torch.nn.{n}`", refusals(getattr(nn, n))) for n in names]


def op_rows() -> list[dict[str, str]]:
    """Every row of the op table, sorted by name."""
    rows = []
    for name in sorted(OPS):
        op = OPS[name]
        rows.append(
            {
                "name": name,
                "code": _template(op.code),
                "latex": _template(op.latex),
                "vjp": "not differentiable" if not op.differentiable else ("yes" if op.vjp is not None else "no"),
                "jvp": "—"
                if not op.differentiable
                else ("own rule" if op.jvp is not None else ("from the VJP" if op.vjp is not None else "none")),
                "batch": op.batch if isinstance(op.batch, str) else ("rule" if op.batch is not None else "—"),
                "tags": ", ".join(sorted(op.tags)),
            }
        )
    return rows


def _followed() -> list[tuple[str, str]]:
    """The functions sg.trace follows through torch's own decomposition (torch is needed to say where each is)."""
    from ..torch.decompositions import followed

    try:
        return followed()
    except ImportError:  # pragma: no cover - torch is installed wherever the catalogue is generated
        return []


def op_reference() -> str:
    """``generated/ops.md``: the functions, modules and op rows, as Markdown tables."""
    tables = functions()
    return (
        text_environment()
        .get_template("ops.md.j2")
        .render(
            tables=tables,
            modules=modules(),
            rows=op_rows(),
            followed=_followed(),
            function_count=sum(len(entries) for _, entries in tables),
        )
    )
