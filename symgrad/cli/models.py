"""``--module FILE.py:NAME --input x=m,3``: a model from a file, traced as it runs.

NAME is an ``nn.Module`` class (built with no arguments), an ``nn.Module`` instance, or a function of
tensors. The file is the user's own code and runs as Python, as ``torch.load`` of a model would; symgrad
runs nothing else from the command line. Each ``--input`` gives one argument of ``forward`` (or of the
function) in order, with sizes or symbolic names: a name makes that size symbolic (torch.export's
``dynamic_shapes``), so the result carries laws. The model runs in float64, on random inputs drawn with a
fixed seed, and a class's initial parameters after ``torch.manual_seed(0)``, so the same command gives the
same numbers.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "net.py").write_text("import torch\\ndef f(x):\\n    return torch.tanh(x).sum()\\n")
>>> model = load_model(f"{folder / 'net.py'}:f", {"x": (2, "m")})
>>> model.description, model.trace.output.shape
('f(x) from net.py', ())
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import re
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import SymgradError
from ..core.tensor import Tensor
from ..reader import parse_shape
from ..torch.tracing import Trace, trace

SEED = 0
FIRST_SIZE = 3  # symbolic sizes are traced at 3, 4, … (distinct, so that a transposed size shows)


@dataclass
class Model:
    """A traced model from a file: its trace, its leaves by name (inputs and parameter paths) and a title."""

    trace: Trace
    leaves: dict[str, Tensor]
    description: str

    @property
    def parameters(self) -> list[Tensor]:
        return list(self.trace.parameters.values())


def read_module(path: Path, option: str = "--module") -> Any:
    """Import the file as a fresh module (its own name, so two models never collide), with its folder on
    ``sys.path`` as ``python FILE.py`` has it (so that it imports its neighbours)."""
    name = f"symgrad_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SymgradError(f"{option}: cannot import {path}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file failed: say where, in one line
        del sys.modules[name]
        raise SymgradError(f"{option}: running {path.name} failed: {type(error).__name__}: {error}") from error
    return module


def _callable(found: Any, name: str, path: Path) -> Any:
    import torch

    if isinstance(found, type) and issubclass(found, torch.nn.Module):
        torch.manual_seed(SEED)  # its initial parameters: the same for the same command
        try:
            found = found()
        except TypeError as error:
            raise SymgradError(
                f"--module: {name}() needs arguments ({error}); name an instance or a function in {path.name} instead"
            ) from error
    if isinstance(found, torch.nn.Module):
        return found.double()
    if callable(found):
        return found
    raise SymgradError(f"--module: {name} in {path.name} is a {type(found).__name__}, not a model or a function")


@dataclass(frozen=True)
class InputSpec:
    """One ``--input``: its shape, and its kind of numbers (float64 normals, or integers drawn in [low, high))."""

    shape: tuple
    dtype: str = "float64"
    low: int = 0
    high: int = 2


_KINDS = {"float64": "float64", "double": "float64", "float32": "float32", "float": "float32",
          "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "bool": "bool"}  # fmt: skip
_KIND = re.compile(r"(?P<dtype>[a-z0-9]+)(?:\[\s*(?P<low>-?\d{1,9})\s*,\s*(?P<high>-?\d{1,9})\s*\))?")


def parse_input(text: str) -> InputSpec:
    """``DIMS`` or ``DIMS:KIND``: ``m,4``, ``m:int64[0,10)`` (class targets in 0..9), ``m,4:bool``, ``3:float32``.

    >>> parse_input("m:int64[0,10)")
    InputSpec(shape=(m,), dtype='int64', low=0, high=10)
    """
    dims_text, _, kind = text.partition(":")
    shape = parse_shape(dims_text)
    if not kind:
        return InputSpec(shape)
    found = _KIND.fullmatch(kind.strip())
    if found is None or found["dtype"] not in _KINDS:
        raise SymgradError(
            f"--input kind {kind!r}: use float64, float32, bool, or int64[LOW,HIGH) for integers in LOW..HIGH-1"
        )
    dtype = _KINDS[found["dtype"]]
    if found["low"] is not None:
        if not dtype.startswith("int"):
            raise SymgradError(f"--input kind {kind!r}: a range [LOW,HIGH) goes with an integer kind")
        low, high = int(found["low"]), int(found["high"])
        if high <= low:
            raise SymgradError(f"--input kind {kind!r}: the range [{low},{high}) is empty")
        return InputSpec(shape, dtype, low, high)
    if dtype.startswith("int"):
        raise SymgradError(f"--input kind {kind!r}: give the integers' range, e.g. {found['dtype']}[0,10)")
    return InputSpec(shape, dtype)


def _examples(fn: Any, shapes: dict[str, InputSpec]) -> tuple[list, dict]:
    """Random example inputs in ``forward``'s order (float64 normals, or integers in their range), and
    torch.export's dynamic_shapes for the names."""
    import torch

    signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    positional = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    wanted = [p.name for p in positional]
    required = sum(p.default is p.empty for p in positional)
    if list(shapes) != wanted[: len(shapes)] or len(shapes) < required:
        given = ", ".join(shapes) or "none"
        raise SymgradError(f"--input names the arguments {', '.join(wanted)} in order; got {given}")
    draw = InputDraws()
    return [draw(name, spec) for name, spec in shapes.items()], draw.dynamic


class InputDraws:
    """Random example inputs drawn with a fixed seed (float normals, or integers in their range), the same
    symbolic size name always drawn at the same size (3, 4, … in order of first use), and torch.export's
    dynamic_shapes for those names (:attr:`dynamic`)."""

    def __init__(self, floor: int = 0) -> None:
        """``floor``: the smallest size a symbolic name is drawn at (past the largest index a given value holds)."""
        import torch

        self.generator = torch.Generator().manual_seed(SEED)
        self.sizes = itertools.count(max(FIRST_SIZE, floor))
        self.symbolic: dict[str, int] = {}
        self.dynamic: dict[str, dict[int, str]] = {}

    def __call__(self, name: str, spec: InputSpec) -> Any:
        import torch

        concrete = []
        for axis, size in enumerate(spec.shape):
            if isinstance(size, int):
                concrete.append(size)
                continue
            label = str(size)
            self.symbolic.setdefault(label, next(self.sizes))
            concrete.append(self.symbolic[label])
            self.dynamic.setdefault(name, {})[axis] = label
        if spec.dtype.startswith("float"):
            return torch.randn(concrete, dtype=getattr(torch, spec.dtype), generator=self.generator)
        drawn = torch.randint(spec.low, spec.high, concrete, generator=self.generator, dtype=torch.int64)
        return drawn.bool() if spec.dtype == "bool" else drawn.to(getattr(torch, spec.dtype))


def option_pairs(items: Sequence[str], option: str) -> dict[str, str]:
    """``--shape x=2,3 --shape w=3``: the values of a repeated NAME=... option by name, each name once, in the NFKC
    form Python reads the expression's names in (``ｘ`` is ``x``)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise SymgradError(f"{option} expects NAME=..., got {item!r}")
        name = unicodedata.normalize("NFKC", name.strip())
        if name in out:
            raise SymgradError(f"{option} gives {name!r} twice")
        out[name] = text
    return out


def wrt_option(text: str) -> list[str]:
    """``--wrt W,b``: the names, in the NFKC form Python reads the expression's names in."""
    return [unicodedata.normalize("NFKC", name.strip()) for name in text.split(",") if name.strip()]


def find_in_file(spec: str, option: str = "--module") -> tuple[Any, str, Path]:
    """What ``FILE.py:NAME`` names (the file runs as Python), its name and the file."""
    where, _, name = spec.rpartition(":")
    if not where or not name.isidentifier():
        raise SymgradError(f"{option} takes FILE.py:NAME, such as model.py:Net; got {spec!r}")
    path = Path(where)
    if path.suffix != ".py" or not path.is_file():
        raise SymgradError(f"{option}: {where} is not a Python file")
    module = read_module(path, option)
    if not hasattr(module, name):
        found = sorted(n for n in vars(module) if not n.startswith("_"))
        raise SymgradError(f"{option}: {path.name} has no {name} (it defines {', '.join(found) or 'nothing'})")
    return getattr(module, name), name, path


def load_model(spec: str, shapes: dict[str, Any]) -> Model:
    """Load ``FILE.py:NAME``, run it on ``--input`` examples under :func:`symgrad.trace`, and name its leaves."""
    found, name, path = find_in_file(spec)
    fn = _callable(found, name, path)
    specs = {k: v if isinstance(v, InputSpec) else InputSpec(tuple(v)) for k, v in shapes.items()}
    examples, dynamic = _examples(fn, specs)
    traced = trace(fn, *examples, dynamic_shapes=dynamic)
    if not isinstance(traced.output, Tensor):
        raise SymgradError(f"--module: {name} returns a {type(traced.output).__name__}; symgrad needs one tensor")
    leaves = {t.name: t for t in traced.inputs} | dict(traced.parameters)
    return Model(traced, leaves, f"{name}({', '.join(shapes)}) from {path.name}")
