"""The names emitted code gives the user's inputs and sizes: their own, except where one is a name the module
uses itself (``output``, ``ctx``, ``t_1``, ``grad_x`` beside an input ``x``, ``_``) or the name of another input
or size (a size ``b`` beside an input ``b``). Such a name gets a variant in the code alone, which the module's
docstring states; nothing is refused, and the user renames nothing.

>>> import symgrad as sg
>>> b = sg.dims("b")[0]
>>> x, output = sg.symbols("x", (b,)), sg.symbols("output", (b,))
>>> names = code_names([x, output], [b])
>>> names.inputs, names.sizes, names.note()
({'output': 'output_1'}, {}, 'In this code, the input output is output_1 (output is a name the module uses itself).')
"""

from __future__ import annotations

import dataclasses
import keyword
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy

from ..core.graph import topological_all
from ..core.tensor import Tensor, with_inputs

# Every name an emitted module defines or reads, besides the user's inputs and sizes, in a scope where the user's
# names are bound too (tests/emit/test_code_names.py reads every emitted style to keep this list whole).
VOCABULARY = frozenset({
    "torch", "math", "F", "ctx", "self", "model", "module", "grad_output", "output", "out", "output_tangent",
    "tangents", "inputs", "arguments", "one", "grads", "grad", "taken", "parameter", "forward", "vjp",
    "forward_and_vjp", "forward_and_backward", "apply", "backward", "jvp", "setup_context", "gradient", "hvp",
    "hessian", "newton_step", "once_differentiable", "generate_vmap_rule", "shapes", "expected", "tensor", "wanted",
    # the drop-in's functions for the model's other mode (see emit/modes.py)
    "eval_apply", "eval_forward", "eval_vjp", "eval_forward_and_vjp",
    # Python's own names that emitted code reads
    "any", "tuple", "getattr", "staticmethod", "super", "isinstance", "len", "range", "zip", "int", "float",
    "RuntimeError", "ValueError", "TypeError",
})  # fmt: skip
# names made from an input's: its gradient, tangent, Hessian-vector product, Newton step, Hessian blocks
_DERIVED = ("grad_", "tangent_", "v_", "hvp_", "step_", "hessian_")
_TEMPORARY = re.compile(r"t_\d+")


@dataclass
class CodeNames:
    """The code names of the inputs and sizes that need one other than their own (by their own names)."""

    inputs: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def note(self) -> str:
        """One sentence for the module's docstring, or ''."""
        parts = [f"the input {old} is {new}" for old, new in self.inputs.items()]
        parts += [f"the size {old} is {new}" for old, new in self.sizes.items()]
        if not parts:
            return ""
        why = "; ".join(self.reasons[old] for old in [*self.inputs, *self.sizes])
        return f"In this code, {', '.join(parts)} ({why})."


def _normal(name: str) -> str:
    return unicodedata.normalize("NFKC", name)  # what Python reads an identifier as


def _clash(name: str, inputs: Sequence[str], class_name: str | None) -> str | None:
    """Why ``name`` cannot stand in the code for itself, or None."""
    if not name.isidentifier() or keyword.iskeyword(name):
        return f"{name!r} is not a Python name"
    normal = _normal(name)
    if keyword.iskeyword(normal):
        return f"Python reads {name} as the keyword {normal}"
    if normal in VOCABULARY or normal.startswith("_") or _TEMPORARY.fullmatch(normal):
        return f"{name} is a name the module uses itself"
    if class_name and normal.startswith(class_name):
        return f"{name} is close to the names of the module's classes"
    others = [_normal(n) for n in inputs if _normal(n) != normal]
    for prefix in _DERIVED:
        rest = normal.removeprefix(prefix)
        if rest != normal and any(rest == o or rest.startswith(o + "_") for o in [*others, normal]):
            return f"{name} is the name of another input's {prefix.rstrip('_')} in the module"
    return None


def code_names(inputs: Sequence[Tensor], dims: Sequence[sympy.Symbol], class_name: str | None = None) -> CodeNames:
    """The code names ``inputs`` and ``dims`` need (see the module docstring); ``class_name``: the name the
    module's classes start with."""
    names = CodeNames()
    input_names = [t.name for t in inputs]
    taken = {_normal(n) for n in input_names} | {_normal(str(d)) for d in dims} | VOCABULARY
    seen: set[str] = set()

    def fresh(name: str) -> str:
        base = re.sub(r"\W", "_", _normal(name)).strip("_") or "unnamed"
        base = base if base.isidentifier() and not keyword.iskeyword(base) else f"x_{base}"
        if base.startswith(_DERIVED):  # grad_x_1 would read as the gradient of an input x_… whatever k is
            base = f"arg_{base}"
        k = 1
        while _normal(f"{base}_{k}") in taken or _clash(f"{base}_{k}", input_names, class_name):
            k += 1
        taken.add(f"{base}_{k}")
        return f"{base}_{k}"

    for name in input_names:
        why = _clash(name, input_names, class_name)
        if why is None and _normal(name) in seen:
            why = f"Python reads {name} as {_normal(name)}, another input's name"
        if why is not None and name not in names.inputs:
            names.inputs[name], names.reasons[name] = fresh(name), why
        seen.add(_normal(name))
    for d in dims:
        name = str(d)
        why = _clash(name, input_names, class_name)
        if why is None and _normal(name) in seen:
            why = f"{name} is also the name of an input"
        if why is not None:
            names.sizes[name], names.reasons[name] = fresh(name), why
        seen.add(_normal(name))
    return names


def _renamed_size(value: Any, sizes: dict) -> Any:
    if isinstance(value, sympy.Basic):
        return value.xreplace(sizes)
    if isinstance(value, (tuple, list)):
        return type(value)(_renamed_size(v, sizes) for v in value)
    return value


def _renamed_leaf(leaf: Tensor, name: str | None, sizes: dict) -> Tensor:
    copy = Tensor.__new__(Tensor)
    copy.__dict__.update(leaf.__dict__)
    copy.shape = _renamed_size(tuple(leaf.shape), sizes)
    if name is not None:
        copy._name = name
    copy._leaves = copy._collect_leaves()
    return copy


def renamed(roots: Sequence[Any], names: CodeNames) -> tuple[list[Any], dict[int, Tensor]]:
    """``roots`` (tensors, or a trace's guards and buffer updates that hold tensors and sizes) with the inputs and
    sizes renamed as ``names`` says; and the rebuilt tensors by the ids of the old ones."""
    sizes = {sympy.Symbol(old, **_assumptions(roots, old)): sympy.Symbol(new, **_assumptions(roots, old))
             for old, new in names.sizes.items()}  # fmt: skip
    tensors = [t for root in roots for t in _tensors_in(root)]
    made: dict[int, Tensor] = {}
    if not names.inputs and not sizes:
        return list(roots), {id(t): t for t in topological_all(tensors)}
    for node in topological_all(tensors):
        if node.op is None:
            made[id(node)] = (_renamed_leaf(node, names.inputs.get(node.name), sizes)
                              if node.kind == "symbol" or sizes else node)  # fmt: skip
        else:
            attrs = {k: _renamed_size(v, sizes) for k, v in node.attrs.items()}
            made[id(node)] = with_inputs(node, [made[id(i)] for i in node.inputs], attrs if sizes else None)
    return [_rebuilt(root, made, sizes) for root in roots], made


def _assumptions(roots: Sequence[Any], name: str) -> dict:
    for root in roots:
        for t in _tensors_in(root):
            for d in t.shape:
                if isinstance(d, sympy.Symbol) and d.name == name:
                    return d.assumptions0
    return {"integer": True, "positive": True}


def _tensors_in(root: Any) -> list[Tensor]:
    if isinstance(root, Tensor):
        return [root]
    if dataclasses.is_dataclass(root):
        return [v for v in (getattr(root, f.name) for f in dataclasses.fields(root)) if isinstance(v, Tensor)]
    return []


def _rebuilt(root: Any, made: dict[int, Tensor], sizes: dict) -> Any:
    if isinstance(root, Tensor):
        return made[id(root)]
    if dataclasses.is_dataclass(root):
        changes = {f.name: _rebuilt(getattr(root, f.name), made, sizes) for f in dataclasses.fields(root)}
        return dataclasses.replace(root, **changes)
    return _renamed_size(root, sizes)
