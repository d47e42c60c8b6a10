"""Emitted source made tidy: statements whose results nothing reads are dropped, and the text is formatted by
``ruff format``, the formatter the emitted code is promised to be stable under.

>>> print(formatted("def f(x):\\n    t_1 = x*2\\n    return x*3\\n"), end="")
def f(x):
    return x * 3
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import textwrap
from collections import Counter
from functools import lru_cache

from ..core.errors import SymgradError

LINE_LENGTH = 120


@lru_cache(maxsize=256)  # emitting the same module twice (a determinism check, a cache miss upstream) is common
def formatted(source: str, *, keep: frozenset[str] = frozenset()) -> str:
    """``source`` without dead statements (:func:`without_dead_statements`), formatted by ``ruff format``."""
    return ruff_format(with_comments_folded(with_docstrings_folded(without_dead_statements(source, keep=keep))))


def with_comments_folded(source: str, width: int = LINE_LENGTH) -> str:
    """``source`` with each comment line (a line that is only a comment) longer than ``width`` folded at spaces."""
    out: list[str] = []
    for line in source.split("\n"):
        stripped = line.lstrip()
        if len(line) <= width or not stripped.startswith("# "):
            out.append(line)
            continue
        prefix = line[: len(line) - len(stripped)] + "# "
        out += textwrap.wrap(
            stripped[2:],
            width=width,
            initial_indent=prefix,
            subsequent_indent=prefix,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out)


def with_docstrings_folded(source: str, width: int = LINE_LENGTH) -> str:
    """``source`` with each docstring line longer than ``width`` folded at spaces (ruff format leaves the text
    of docstrings as it is, and ruff check asks for lines of at most ``width``)."""
    lines = source.split("\n")
    spans = []
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                indent = " " * (body[0].col_offset if not isinstance(node, ast.Module) else 0)
                spans.append((body[0].lineno, body[0].end_lineno or body[0].lineno, indent))
    for first, last, indent in sorted(spans, reverse=True):
        folded: list[str] = []
        for line in lines[first - 1 : last]:
            if len(line) <= width:
                folded.append(line)
                continue
            own = line[: len(line) - len(line.lstrip())]
            folded += textwrap.wrap(
                line.strip(),
                width=width,
                initial_indent=own,
                subsequent_indent=max(own, indent, key=len),
                break_long_words=False,
                break_on_hyphens=False,
            )
        lines[first - 1 : last] = folded
    return "\n".join(lines)


def without_dead_statements(source: str, *, keep: frozenset[str] = frozenset()) -> str:
    """``source`` with each ``name = expression`` that its function never reads removed, until none is left.
    Statements whose text contains one of ``keep`` (a random draw, whose removal would change the stream of
    random numbers) stay."""
    lines = source.split("\n")
    dead: list[tuple[int, int]] = []
    for function in ast.walk(ast.parse(source)):
        if isinstance(function, ast.FunctionDef):
            dead += _dead_statements(function, lines, keep)
    for first, last in sorted(dead, reverse=True):
        del lines[first - 1 : last]
    return "\n".join(lines)


def _dead_statements(function: ast.FunctionDef, lines: list[str], keep: frozenset[str]) -> list[tuple[int, int]]:
    """The line spans of ``function``'s assignments whose name nothing left in it reads: each removal takes its
    own reads away, which may leave another assignment unread, until none is."""
    reads = Counter(_loads(function))
    removable = []
    for statement in function.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            text = "\n".join(lines[statement.lineno - 1 : statement.end_lineno])
            if isinstance(target, ast.Name) and not any(word in text for word in keep):
                removable.append((target.id, statement))
    dead: list[tuple[int, int]] = []
    while True:
        unread = [(name, s) for name, s in removable if reads[name] == 0]
        if not unread:
            return dead
        for _, statement in unread:
            reads.subtract(_loads(statement))
            dead.append((statement.lineno, statement.end_lineno or statement.lineno))
        removable = [(name, s) for name, s in removable if reads[name] != 0]


def _loads(node: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def ruff_format(source: str) -> str:
    """``source`` as ``ruff format`` writes it (line length 120, Python 3.11), whatever configuration the
    current directory has."""
    ruff = _ruff()
    done = subprocess.run(
        [ruff, "format", "--isolated", f"--line-length={LINE_LENGTH}", "--target-version=py311", "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:  # a bug of the emitter: the source does not parse
        raise SymgradError(f"ruff could not format the emitted module: {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


def _ruff() -> str:
    try:
        from ruff.__main__ import find_ruff_bin

        return find_ruff_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("ruff")
        if found is None:
            raise SymgradError("emitting code needs ruff, which formats it: pip install ruff") from None
        return found
