"""Where a traced function's parameters live: the model itself, or the modules a loss function closes over.

People write losses as closures, ``lambda x, y: F.cross_entropy(model(x), y)``, so ``sg.trace`` looks for
modules and parameters in what the function reads: its closure, the globals it names, the
object a bound method belongs to, a ``functools.partial``'s function, and the plain functions it calls in turn.
Each is named by where it was found (``model``, so ``model.fc1.weight``), or by ``modules={"model": model}``.

>>> import torch
>>> model = torch.nn.Linear(2, 1)
>>> sorted(owners(lambda x: model(x).sum()))
['model']
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..core.errors import SymgradError

_DEPTH = 3  # how many calls deep a closure's functions are searched


def owners(fn: Callable, modules: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The modules and parameters ``fn`` computes with, by name: ``{"": fn}`` for a module, ``modules`` when
    given, else what ``fn`` closes over (see the module docstring); the first name found for an object wins."""
    import torch

    if modules is not None:
        for name, value in modules.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise SymgradError(f"modules takes names that are Python identifiers, not {name!r}")
            if not isinstance(value, torch.nn.Module | torch.nn.Parameter):
                raise SymgradError(f"modules[{name!r}] is a {type(value).__name__}, not an nn.Module or nn.Parameter")
        return dict(modules)
    if isinstance(fn, torch.nn.Module):
        return {"": fn}
    found: dict[str, Any] = {}
    _search(fn, found, set(), _DEPTH)
    found = _without_nested(found)
    if "" in found and len(found) > 1:  # a module's method that also reads other modules: the module is self
        found = {("self" if name == "" else name): value for name, value in found.items()}
    return found


def _search(fn: Any, found: dict[str, Any], seen: set[int], depth: int) -> None:
    import torch

    if id(fn) in seen or depth == 0:
        return
    seen.add(id(fn))
    if isinstance(fn, functools.partial):
        _search(fn.func, found, seen, depth)
        return
    if isinstance(fn, types.MethodType):
        owner = fn.__self__
        if isinstance(owner, torch.nn.Module):
            found.setdefault("", owner)
        else:  # a plain object's: named through self, apart from the globals the method reads
            _attributes("self", owner, found)
        _search(fn.__func__, found, seen, depth)
        return
    if not isinstance(fn, types.FunctionType) or _is_torchs(fn):
        return
    try:
        variables = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return
    for name, value in [*variables.nonlocals.items(), *variables.globals.items()]:
        if isinstance(value, torch.nn.Module | torch.nn.Parameter):
            found.setdefault(name, value)
        elif isinstance(value, types.FunctionType | functools.partial | types.MethodType):
            _search(value, found, seen, depth - 1)
        elif not isinstance(value, type | types.ModuleType) and hasattr(value, "__dict__"):
            _attributes(name, value, found)


def _attributes(prefix: str, owner: Any, found: dict[str, Any]) -> None:
    """The modules and parameters a plain object (not a module) holds as attributes: ``prefix.attr``."""
    import torch

    try:
        attributes = vars(owner)
    except TypeError:
        return
    for attribute, value in attributes.items():
        if isinstance(value, torch.nn.Module | torch.nn.Parameter) and not attribute.startswith("__"):
            found.setdefault(f"{prefix}.{attribute}" if prefix else attribute, value)


def _is_torchs(fn: types.FunctionType) -> bool:
    module = getattr(fn, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def _without_nested(found: dict[str, Any]) -> dict[str, Any]:
    """Each object once, under its first name; a module inside another found module is named through it."""
    import torch

    inside = {id(m) for value in found.values() if isinstance(value, torch.nn.Module) for m in value.modules()
              if m is not value}  # fmt: skip
    inside |= {id(p) for value in found.values() if isinstance(value, torch.nn.Module) for p in value.parameters()}
    kept: dict[str, Any] = {}
    ids: set[int] = set()
    for name, value in found.items():
        if id(value) in ids or id(value) in inside:
            continue
        ids.add(id(value))
        kept[name] = value
    return kept


def holder(roots: Mapping[str, Any]) -> Any:
    """One ``nn.Module`` whose parameter and buffer paths are the trace's names: the model itself for ``{"": m}``,
    else a module holding each root under its name (``holder(...).get_parameter("model.fc1.weight")``)."""
    import torch

    if set(roots) == {""}:
        return roots[""]
    container = torch.nn.Module()
    for name, value in roots.items():
        *path, last = name.split(".")
        node = container
        for part in path:
            if not hasattr(node, part):
                node.add_module(part, torch.nn.Module())
            node = getattr(node, part)
        if isinstance(value, torch.nn.Parameter):
            node.register_parameter(last, value)
        else:
            node.add_module(last, value)
    return container


def tensor_attributes(model: Any) -> list[tuple[str, Any]]:
    """The plain tensors a model keeps as attributes (neither parameters nor buffers: a fixed positional embedding
    made in ``__init__``), by path: state of the model that its ``state_dict`` leaves out, and that a drop-in reads
    from the model as it reads its buffers."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return []
    found, seen = [], set()
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) and id(value) not in seen:
                seen.add(id(value))
                found.append((f"{prefix}.{name}" if prefix else name, value))
    return found
