"""``symgrad verify PATH``: every hand-written backward in a folder, a package or a file, one line each, the way a
linter runs over a codebase.

It finds each ``torch.autograd.Function`` subclass a file defines, and each ``torch.library`` custom op with a
registered backward, and verifies it at the inputs its spec gives (see :func:`symgrad.verify_backward`). A spec is
an entry of the ``[tool.symgrad.verify]`` table of the nearest ``pyproject.toml`` above PATH, keyed by the file
(relative to that ``pyproject.toml``) or the dotted module, and the name::

    [tool.symgrad.verify]
    "layers.py:RMSNormFn" = { input = ["x=m,n", "w=n"], order = 2 }
    "pkg.losses:SoftTargets" = { input = ["z=m,c"], value = ["t=[[0.5, 0.5]]"] }

or the same fields on the Function itself, with :func:`symgrad.testing.verify_spec` (``input``, ``value`` and
``number`` as on the command line, ``order`` 1 or 2). A Function without a spec is listed as not checked. The exit
code is the worst found: 1 when a backward is wrong, else 2 when one could not be checked, else 0.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.budget import time_limit
from ..core.errors import SymgradError
from .models import read_module

SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist", "venv", "env"})
SPEC_FIELDS = frozenset({"input", "value", "number", "order"})


@dataclass
class Found:
    """One Function (or custom op) a file defines: how the report and the spec name it, and where it is."""

    key: str  # FILE.py:NAME relative to the project (the pyproject.toml's folder)
    dotted: str  # package.module:NAME
    path: Path
    name: str
    spec: dict | None = None


def python_files(root: Path) -> list[Path]:
    """The Python files under ``root`` (or ``root`` itself), in a stable order, without hidden folders, caches and
    virtual environments."""
    if root.is_file():
        return [root]
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts[:-1]
        if any(p.startswith(".") or p in SKIPPED_FOLDERS for p in parts) or path.name in ("setup.py", "conftest.py"):
            continue
        found.append(path)
    return found


def project_of(root: Path) -> tuple[Path, dict]:
    """The folder of the nearest ``pyproject.toml`` at or above ``root``, and its ``[tool.symgrad.verify]`` table."""
    start = root.resolve() if root.is_dir() else root.resolve().parent
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
                raise SymgradError(f"verify: {candidate} is not valid TOML: {error}") from None
            table = data.get("tool", {}).get("symgrad", {}).get("verify", {})
            if not isinstance(table, dict):
                raise SymgradError(f"verify: [tool.symgrad.verify] in {candidate} is not a table")
            return folder, table
    return start, {}


def functions_in(path: Path, project: Path) -> list[Found]:
    """The Functions and custom ops ``path`` defines (not those it imports), with their names."""
    import torch

    module = read_module(path, "verify")
    try:
        relative = path.resolve().relative_to(project)
    except ValueError:
        relative = Path(path.name)
    dotted = ".".join(relative.with_suffix("").parts)
    found = []
    for name, value in vars(module).items():
        own_class = (
            isinstance(value, type)
            and issubclass(value, torch.autograd.Function)
            and value.__module__ == module.__name__
            and name == value.__name__
        )
        custom_op = isinstance(value, torch.library.CustomOpDef) and getattr(value, "_backward_fn", None) is not None
        if own_class or custom_op:
            spec = getattr(value, "symgrad_verify", None)
            found.append(Found(f"{relative.as_posix()}:{name}", f"{dotted}:{name}", path, name, spec))
    return found


def spec_for(item: Found, table: dict) -> dict | None:
    """``item``'s spec: its entry in the table (by file, then by module), else its own ``symgrad_verify``."""
    spec = table.get(item.key, table.get(item.dotted, item.spec))
    if spec is None:
        return None
    if not isinstance(spec, dict) or not set(spec) <= SPEC_FIELDS:
        unknown = sorted(set(spec) - SPEC_FIELDS) if isinstance(spec, dict) else [type(spec).__name__]
        raise SymgradError(f"the spec of {item.key} has {unknown[0]!r}; it takes {', '.join(sorted(SPEC_FIELDS))}")
    return spec


def _as_list(spec: dict, field: str) -> list[str]:
    value = spec.get(field, [])
    return [value] if isinstance(value, str) else [str(v) for v in value]


def spec_lists(spec: dict) -> tuple[list[str], list[str], int, list[str]]:
    """A spec as the command line's options: (inputs, values, order, numbers)."""
    return _as_list(spec, "input"), _as_list(spec, "value"), int(spec.get("order", 2)), _as_list(spec, "number")


def verify_path(
    root: Path, verified: Any, seconds: float | None = None, way_out: str = ""
) -> Iterator[tuple[str, int]]:
    """One line per Function under ``root``, as each is done, with the exit code so far; ``verified(spec, inputs,
    values, order, numbers)`` gives one verdict (the command line's), each within ``seconds`` of CPU time."""
    if not root.exists():
        raise SymgradError(f"verify: {root} does not exist")
    project, table = project_of(root)
    wrong = unchecked = found = False

    def code() -> int:
        return 1 if wrong else 2 if unchecked else 0

    for path in python_files(root):
        try:
            items = functions_in(path, project)
        except SymgradError as error:
            unchecked = True
            yield f"{path}: could not check: {error}", code()
            continue
        for item in items:
            found = True
            try:
                spec = spec_for(item, table)
                if spec is None:
                    yield f"{item.key}: not checked (no spec in [tool.symgrad.verify] or verify_spec)", code()
                    continue
                with time_limit(seconds, f"symgrad verify {item.key}", way_out):
                    verdict = verified(f"{item.path}:{item.name}", *spec_lists(spec))
            except SymgradError as error:
                unchecked = True
                yield f"{item.key}: could not check: {error}", code()
                continue
            wrong = wrong or not verdict.held
            yield f"{item.key}: {verdict.report().splitlines()[0].split(': ', 1)[-1]}", code()
    if not found:
        yield f"{root}: no torch.autograd.Function or custom op with a backward found", code()
