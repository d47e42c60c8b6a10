"""Containers of modules: ``Sequential``, ``ModuleList`` and ``ModuleDict``, keyed as torch keys them.

A module kept at position 0 has its parameters named ``p0_weight`` (``0.weight``); a container assigned to
``self.layers`` makes that ``layers_0_weight``.

>>> import symgrad.torch as torch
>>> net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
>>> [p.name for p in net.parameters()]
['p0_weight', 'p0_bias', 'p2_weight', 'p2_bias']
>>> net(torch.zeros(4, 2)).shape
(4, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ....core.errors import TorchIndexError
from .module import Module


def _index(idx: int, size: int) -> int:
    if not -size <= idx < size:
        raise TorchIndexError(f"index {idx} is out of range")
    return idx % size


class _Ordered(Module):
    """Modules keyed "0", "1", …: renumbered (and so renamed) after an insertion or a deletion."""

    def _view(self, items: Iterable[tuple[str, Module]]) -> Any:
        """A container of the same type holding ``items`` as they are: a slice or a sum shares the modules, so
        their parameters keep the names of the model they sit in (assigning the view into a model renames them)."""
        view = type(self).__new__(type(self))
        Module.__init__(view)
        view._modules.update(items)
        return view

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for i, module in enumerate(modules):
            self._set_module(str(i), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx: int | slice) -> None:
        modules = list(self._modules.values())
        del modules[idx]
        self._renumber(modules)

    def append(self, module: Module) -> _Ordered:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> _Ordered:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)

    def pop(self, key: int | slice) -> Module:
        picked = self[key]
        del self[key]
        return picked


class Sequential(_Ordered):
    """Modules applied one after the other: ``Sequential(m1, m2)`` or ``Sequential(OrderedDict(name=m))``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], Mapping):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return self._view(items[idx])
        return items[_index(idx, len(items))][1]

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


class ModuleList(_Ordered):
    """A list of modules whose parameters the model holds (``self.layers = ModuleList([...])``)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        modules = list(self._modules.values())
        if isinstance(idx, slice):
            return self._view((str(i), m) for i, m in enumerate(modules[idx]))
        return modules[_index(idx, len(modules))]

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)  # type: ignore[return-value]

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return self._view((str(i), m) for i, m in enumerate([*self, *other]))


class ModuleDict(Module):
    """A dict of modules whose parameters the model holds (``self.heads = ModuleDict({"a": ...})``)."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, module in pairs:
            self[key] = module


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
