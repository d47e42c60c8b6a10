"""``nn.Module``: parameters, buffers and submodules registered by assignment, as in torch.

Assigning a :class:`~.parameter.Parameter`, a buffer or a module to an attribute registers it; ``__call__`` runs
``forward``. A parameter is a leaf of symbols named by its path in the model (:func:`leaf_name`: ``fc1.weight``
is ``fc1_weight``, ``0.bias`` is ``p0_bias``), renamed whenever its module is assigned into another, so that the
names are unique in a model and its formulas read ``fc1_weight_0_1``. ``load_state_dict`` takes symgrad tensors
or a real torch ``state_dict``: their numbers become the parameters'.

>>> import symgrad.torch as torch
>>> class Scale(torch.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.w = torch.nn.Parameter(torch.tensor([2.0]))
...     def forward(self, x):
...         return self.w * x
>>> net = torch.nn.Sequential(Scale())
>>> [(name, p.name) for name, p in net.named_parameters()]
[('0.w', 'p0_w')]
>>> net(torch.tensor([3.0])).tolist()
[6.0]
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ....core.constructors import dtype_name
from ....core.errors import (
    TorchKeyError,
    TorchNotImplementedError,
    TorchRuntimeError,
    TorchTypeError,
    TorchValueError,
    UnsupportedError,
)
from ....core.tensor import Tensor
from .parameter import Buffer, Parameter, is_real_tensor, leaf_of, placed, recast


def leaf_name(name: str) -> str:
    """A module's parameter name (``fc1.weight``, ``0.bias``) as a tensor name: ``fc1_weight``, ``p0_bias``."""
    spelled = re.sub(r"\W", "_", name)
    return spelled if spelled[:1].isalpha() else f"p{spelled}"


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` returns: the keys it missed and the keys it did not expect."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _size(shape: Any) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"


def _quoted(keys: list[str]) -> str:
    return ", ".join(f'"{k}"' for k in keys)


def _indent(text: str) -> str:
    first, *rest = text.split("\n")
    return "\n".join([first] + [("  " + line) if line.strip() else "" for line in rest])


class Module:
    """The base class of layers and models: subclass it, assign parameters and submodules in ``__init__``,
    compute in ``forward``."""

    training: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TorchTypeError(f"{type(self).__name__}.__init__() takes no arguments")
        setter = super().__setattr__
        setter("training", True)
        setter("_parameters", {})
        setter("_buffers", {})
        setter("_non_persistent_buffers_set", set())
        setter("_modules", {})
        setter("_path", "")  # where this module sits in the model it was last assigned into, e.g. "fc1."

    # ── registration ─────────────────────────────────────────────────────
    def _check_new(self, kind: str, name: Any, table: str) -> None:
        if table not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TorchTypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise TorchKeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise TorchKeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise TorchKeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Add a parameter (or None) under ``name``; it is renamed after its path in the model."""
        self._check_new("parameter", name, "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TorchTypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        self._parameters[name] = None if param is None else placed(param, leaf_name(self._path + name))

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Add a buffer (a tensor that is not a parameter, such as running statistics) under ``name``."""
        self._check_new("buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor) and not is_real_tensor(tensor):
            raise TorchTypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or None required)"
            )
        self._set_buffer(name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _set_buffer(self, name: str, tensor: Any) -> None:
        if is_real_tensor(tensor):
            tensor = leaf_of(tensor, leaf_name(self._path + name), False)
        self._buffers[name] = None if tensor is None else placed(tensor, leaf_name(self._path + name))

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``; its parameters are renamed after their paths."""
        if module is not None and not isinstance(module, Module):
            raise TorchTypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_new("module", name, "_modules")
        self._set_module(name, module)

    register_module = add_module

    def _set_module(self, name: str, module: Module | None) -> None:
        self._modules[name] = module
        if module is not None:
            module._place(self._path + name + ".")

    def _place(self, path: str, seen: set[int] | None = None) -> None:
        """Rename every parameter and buffer below this module after its path ``path`` + name."""
        seen = set() if seen is None else seen
        if id(self) in seen:
            return
        seen.add(id(self))
        object.__setattr__(self, "_path", path)
        for table in (self._parameters, self._buffers):
            for name, t in table.items():
                if t is not None:
                    table[name] = placed(t, leaf_name(path + name))
        for name, child in self._modules.items():
            if child is not None:
                child._place(path + name + ".", seen)

    def __setattr__(self, name: str, value: Any) -> None:
        params, modules, buffers = (self.__dict__.get(k) for k in ("_parameters", "_modules", "_buffers"))
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TorchTypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._set_module(name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TorchTypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(torch.nn.Module or None expected)"
                )
            self._set_module(name, value)
        elif isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor) and not is_real_tensor(value):
                raise TorchTypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(torch.nn.Buffer, torch.Tensor or None expected)"
                )
            persistent = getattr(value, "buffer_persistent", name not in self._non_persistent_buffers_set)
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value, persistent)
        else:
            super().__setattr__(name, value)

    def _forget(self, name: str, keep: str) -> None:
        """Drop ``name`` from the other tables (a re-assigned name keeps its place in its own table)."""
        for table in ("_parameters", "_buffers", "_modules"):
            if table != keep:
                self.__dict__[table].pop(name, None)
        self.__dict__.pop(name, None)
        if keep != "_buffers":
            self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        for table in ("_parameters", "_buffers", "_modules"):
            members = self.__dict__.get(table)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                del self.__dict__[table][name]
                self._non_persistent_buffers_set.discard(name)
                return
        super().__delattr__(name)

    # ── running ──────────────────────────────────────────────────────────
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TorchNotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def train(self, mode: bool = True) -> Module:
        """Set training mode (batch statistics, dropout) on this module and every submodule."""
        if not isinstance(mode, bool):
            raise TorchValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    # ── what a module holds ──────────────────────────────────────────────
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if remove_duplicate and id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named_members(
        self, table: Callable[[Module], Mapping[str, Any]], prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Tensor]]:
        memo: set[int] = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, t in table(module).items():
                if t is None or id(t) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(t))
                yield module_prefix + ("." if module_prefix else "") + name, t

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(path, parameter) pairs, ``fc1.weight`` first-seen order, each tensor once."""
        yield from self._named_members(lambda m: m._parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""`` is the module itself)."""
        module: Module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def _owner(self, target: str) -> tuple[Module, str]:
        """The submodule holding the attribute at the dotted path ``target``, and the attribute's name."""
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        return module, name

    def get_parameter(self, target: str) -> Tensor:
        """The parameter at the dotted path ``target``, e.g. ``fc1.weight``."""
        module, name = self._owner(target)
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``, e.g. ``norm.running_mean``."""
        module, name = self._owner(target)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # ── state ────────────────────────────────────────────────────────────
    def _local_state(self) -> dict[str, Tensor]:
        state = {name: p for name, p in self._parameters.items() if p is not None}
        state.update(
            (name, b)
            for name, b in self._buffers.items()
            if b is not None and name not in self._non_persistent_buffers_set
        )
        return state

    def state_dict(self, *, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> dict[str, Tensor]:
        """Every parameter and persistent buffer by its path: the tensors themselves (symgrad leaves)."""
        destination = OrderedDict() if destination is None else destination
        for name, t in self._local_state().items():
            destination[prefix + name] = t
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Take the numbers of ``state_dict`` (symgrad tensors or a real torch ``state_dict``) as the parameters'
        and buffers': each becomes a fresh leaf of the same name with those numbers and that dtype (symgrad
        computes in float64 whatever the dtype, so nothing is rounded)."""
        if not isinstance(state_dict, Mapping):
            raise TorchTypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        for prefix, module in self.named_modules(remove_duplicate=False):
            prefix = prefix + "." if prefix else ""
            module._load_local(state_dict, prefix, missing, unexpected, errors)
        if strict and unexpected:
            errors.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected)}. ")
        if strict and missing:
            errors.insert(0, f"Missing key(s) in state_dict: {_quoted(missing)}. ")
        if errors:
            raise TorchRuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors)
            )
        return IncompatibleKeys(missing, unexpected)

    def _load_local(self, state: Mapping[str, Any], prefix: str, missing: list, unexpected: list, errors: list) -> None:
        local = self._local_state()
        for name, current in local.items():
            key = prefix + name
            if key not in state:
                missing.append(key)
                continue
            given = state[key]
            if tuple(given.shape) != tuple(current.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {_size(given.shape)} from checkpoint, "
                    f"the shape in current model is {_size(current.shape)}."
                )
                continue
            fresh = leaf_of(given, leaf_name(self._path + name), current.requires_grad)
            if name in self._parameters:
                fresh.is_parameter = True
                self._parameters[name] = fresh
            else:
                self._buffers[name] = fresh
        for key in state:
            if not key.startswith(prefix):
                continue
            head, dot, _ = key[len(prefix) :].partition(".")
            if (dot and head not in self._modules) or (not dot and head not in local):
                unexpected.append(key)

    # ── bulk changes ─────────────────────────────────────────────────────
    def apply(self, fn: Callable[[Module], Any]) -> Module:
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad`` (None, or zeros with ``set_to_none=False``)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def _cast(self, dtype: str) -> Module:
        for module in self.modules():
            for table in (module._parameters, module._buffers):
                for name, t in table.items():
                    if t is not None:
                        table[name] = recast(t, dtype)
        return self

    def double(self) -> Module:
        return self._cast("float64")

    def float(self) -> Module:
        return self._cast("float32")

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``: a float dtype relabels (float32 rounds); symgrad
        computes on the CPU only."""
        dtype = kwargs.pop("dtype", None)
        for arg in [*args, kwargs.pop("device", None)]:
            if arg is None or str(arg) == "cpu":
                continue
            name = dtype_name(arg)  # "float64", symgrad.torch.float64 or a real torch.float64
            if name not in ("float32", "float64"):
                raise UnsupportedError(f"Module.to({arg!r}): symgrad computes on the CPU in float32/float64 only")
            dtype = name
        return self._cast(dtype_name(dtype)) if dtype is not None else self

    def cpu(self) -> Module:
        return self

    # ── printing ─────────────────────────────────────────────────────────
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_indent(repr(module))}" for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{type(self).__name__}({body})"


__all__ = ["IncompatibleKeys", "Module", "leaf_name"]
