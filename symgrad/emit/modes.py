"""A drop-in for both of a model's modes in one file: the module emitted from the trace in the other mode (eval after
a training trace) is appended to the first, its top-level names renamed (``forward`` → ``eval_forward``,
``_backward`` → ``_eval_backward``, ``NetFunction`` → ``EvalNetFunction``) and the definitions both share word for
word (helpers) written once.

>>> eval_name("_forward"), eval_name("apply"), eval_name("_SHAPES"), eval_name("_EagerNetFunction")
('_eval_forward', 'eval_apply', '_EVAL_SHAPES', '_EvalEagerNetFunction')
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Collection

from ..core.errors import SymgradError


def eval_name(name: str) -> str:
    """The other mode's spelling of a top-level name: its leading underscores, then ``eval_``, ``Eval`` (a class)
    or ``EVAL_`` (a constant)."""
    rest = name.lstrip("_")
    underscores = name[: len(name) - len(rest)]
    if rest.isupper():
        return f"{underscores}EVAL_{rest}"
    if rest[:1].isupper():
        return f"{underscores}Eval{rest}"
    return f"{underscores}eval_{rest}"


def merged(first: str, other: str, drop: Collection[str], heading: str) -> str:
    """``first`` with ``other``'s top-level definitions appended under the comment ``heading``: those ``first``
    has word for word are left out, as are the names in ``drop``; the rest are renamed by :func:`eval_name`
    wherever ``other`` reads them (never an attribute or a method)."""
    renamed = renamed_names(first, other, drop)
    kept = [text for names, text in _definitions(other) if set(names) & renamed]
    comment = "".join(f"# {line}\n" for line in heading.splitlines())
    body = "\n\n\n".join(_renamed(text, renamed) for text in kept)
    return f"{first.rstrip()}\n\n\n{comment}{body.rstrip()}\n"


def renamed_names(first: str, other: str, drop: Collection[str]) -> set[str]:
    """The top-level names of ``other`` that :func:`merged` keeps and renames: those defined otherwise than in
    ``first``, and those that read them (the rest, and ``drop``, are left out)."""
    mine = {name: text for names, text in _definitions(first) for name in names} if first else {}
    definitions = [(names, text) for names, text in _definitions(other) if not set(names) & set(drop)]
    renamed = {name for names, text in definitions if any(mine.get(name) != text for name in names) for name in names}
    while True:  # a definition word for word the first's, that reads one renamed, is renamed too
        reading = {
            name
            for names, text in definitions
            if not set(names) & renamed and _names_read(text) & renamed
            for name in names
        }
        if not reading:
            return renamed
        renamed |= reading


def _definitions(source: str) -> list[tuple[list[str], str]]:
    """Each top-level function, class or assignment after the imports: the names it defines, and its text with the
    comment lines right above it."""
    lines = source.splitlines(keepends=True)
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        else:  # the docstring and the imports
            continue
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        while start > 0 and lines[start - 1].startswith("#"):
            start -= 1
        found.append((names, "".join(lines[start : node.end_lineno])))
    return found


def _names_read(text: str) -> set[str]:
    return {t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.NAME}


def _renamed(text: str, names: set[str]) -> str:
    """``text`` with every read or definition of ``names`` renamed, except attributes (``torch.autograd.Function
    .apply``), methods (``def forward`` inside a class) and keyword arguments."""
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    significant = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    replace = {}
    for k, token in enumerate(significant):
        if token.type != tokenize.NAME or token.string not in names:
            continue
        before = significant[k - 1] if k else None
        after = significant[k + 1] if k + 1 < len(significant) else None
        if before is not None and before.string == ".":
            continue
        if before is not None and before.string in ("def", "class") and before.start[1] > 0:
            continue
        if after is not None and after.string == "=" and before is not None and before.string in ("(", ","):
            continue
        replace[token.start] = token.string
    lines = text.splitlines(keepends=True)
    for (row, column), name in sorted(replace.items(), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:column] + eval_name(name) + line[column + len(name) :]
    return "".join(lines)


def drop_in_arguments(source: str, name: str) -> list[str]:
    """What ``<name>Module._arguments`` of an emitted module passes its Function, as text."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == f"{name}Module":
            for method in node.body:
                if isinstance(method, ast.FunctionDef) and method.name == "_arguments":
                    returned = method.body[-1].value
                    return [ast.unparse(part) for part in returned.elts]
    raise SymgradError(f"the emitted module of the other mode has no {name}Module")
