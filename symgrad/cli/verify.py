"""``symgrad verify FILE.py:NAME --input x=m,n --input W=n,k [--value y="[0,3,1]"]``: prove a hand-written
``torch.autograd.Function``'s backward (see :func:`symgrad.verify_backward`). NAME may also be a custom op, or a
plain function that applies a Function: the Function is verified at the arguments it gets there.

Each input of the Function's forward is given once: ``--input NAME=DIMS[:KIND]`` draws it at random (float64
normals, or integers in a range, as ``--module`` inputs are drawn), with a name making a size symbolic, and
``--value NAME=LIST`` gives its numbers (data, held at those values, beside inputs given with --input, which
are checked); ``--number NAME=NUMBER`` passes a plain Python number (an ``eps``), and an
input with a default in the signature takes it when it is not given. The file runs as Python, with its own folder
on ``sys.path``. Exit 0 when every gradient is proved, 1 when one differs (the report names it, with the first entry
that differs and numbers), 2 on bad input or code that cannot be traced (one line).
"""

from __future__ import annotations

import argparse
import inspect
import itertools
from pathlib import Path
from typing import Any

from ..core.errors import SymgradError
from ..reader import parse_values
from ..verify import function_class, input_defaults, input_names, verify_backward
from .errors import EXIT_MISMATCH
from .models import InputDraws, InputSpec, find_in_file, option_pairs, parse_input
from .verify_many import verify_path


def add_parser(verbs: Any) -> argparse.ArgumentParser:
    verify = verbs.add_parser(
        "verify",
        help="prove that a torch.autograd.Function's backward is the vector-Jacobian product of its forward",
    )
    verify.add_argument(
        "function",
        metavar="FILE.py:NAME|PATH",
        help="the Function subclass, custom op, or a function that applies one (the file runs as Python); or a "
        "folder, package or file: every Function in it, at the inputs [tool.symgrad.verify] in pyproject.toml gives",
    )
    verify.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="one input of forward, drawn at random: its sizes (names make them symbolic), e.g. x=m,n or "
        "y=m:int64[0,10)",
    )
    verify.add_argument(
        "--value", action="append", default=[], metavar="NAME=LIST", help='one input\'s numbers, e.g. y="[0,3,1]"'
    )
    verify.add_argument(
        "--number",
        action="append",
        default=[],
        metavar="NAME=NUMBER",
        help="an input that is a plain Python number, not a tensor (eps=1e-5, dim=1); an input with a default "
        "value in forward's signature takes it when it is not given",
    )
    verify.add_argument(
        "--order",
        type=int,
        choices=(1, 2),
        default=2,
        help="1: the gradients; 2 (the default): also differentiating through the backward, as create_graph does",
    )
    return verify


def _named(items: list[str], option: str) -> dict[str, str]:
    """:func:`option_pairs`, each name an identifier (it names an argument of forward)."""
    out = option_pairs(items, option)
    bad = next((name for name in out if not name.isidentifier()), None)
    if bad is not None:
        raise SymgradError(f"{option} takes NAME=... with NAME an argument of forward, got {bad!r}")
    return out


def _examples(
    label: str,
    names: list[str],
    specs: dict[str, InputSpec],
    values: dict[str, Any],
    numbers: dict[str, Any],
    defaults: dict[str, Any],
) -> tuple[list, dict]:
    """The example inputs in forward's order, and torch.export's dynamic_shapes for the symbolic sizes. ``numbers``
    holds the plain numbers given with --number; an input given no other way takes its ``defaults`` value."""
    import torch

    given = {"--input": set(specs), "--value": set(values), "--number": set(numbers)}
    unknown = sorted(set().union(*given.values()) - set(names))
    if unknown:
        raise SymgradError(f"{label} takes {', '.join(names)}; it has no input {unknown[0]}")
    for (first, a), (second, b) in itertools.combinations(given.items(), 2):
        if a & b:
            raise SymgradError(f"{sorted(a & b)[0]} is given by both {first} and {second}: give one")
    numbers = {**{k: v for k, v in defaults.items() if k not in specs and k not in values}, **numbers}
    missing = [n for n in names if n not in specs and n not in values and n not in numbers]
    if missing:
        raise SymgradError(
            f"give each input of {label} with --input NAME=DIMS, --value NAME=LIST or --number NAME=NUMBER; "
            f"missing {missing[0]}"
        )
    # integers given with --value may index a symbolic size (class targets): every symbolic size is drawn past them
    given_ints = [v for data in values.values() for v in _flat(data) if isinstance(v, int) and not isinstance(v, bool)]
    draw = InputDraws(floor=max(given_ints, default=-1) + 1)
    examples = []
    for name in names:
        if name in numbers:
            examples.append(numbers[name])
        elif name in values:
            data = values[name]
            floating = any(isinstance(v, float) for v in _flat(data))
            examples.append(torch.tensor(data, dtype=torch.float64 if floating else torch.int64))
        else:
            examples.append(draw(name, specs[name]))
    # numbers given with --value are data (a target that sums to 1) where other inputs are drawn: those require
    # grad, and the verdict holds for the data's values (see verify_backward)
    if any(n in values and examples[k].is_floating_point() for k, n in enumerate(names)):
        for k, name in enumerate(names):
            if name in specs and examples[k].is_floating_point():
                examples[k].requires_grad_()
    return examples, draw.dynamic


def _number(name: str, text: str) -> Any:
    """``--number NAME=NUMBER``: a Python int or float (read by the safe parser)."""
    value = parse_values(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SymgradError(f"--number {name}= takes one number, e.g. {name}=1e-5, got {text!r}")
    return value


def _flat(data: Any) -> list:
    return [v for item in data for v in _flat(item)] if isinstance(data, list) else [data]


def names_a_path(function: str) -> bool:
    """Whether ``symgrad verify``'s argument is a PATH (every Function in it), not FILE.py:NAME."""
    _, colon, name = function.rpartition(":")
    return not colon or not name.isidentifier() or Path(function).exists()


def run_verify(args: argparse.Namespace) -> int:
    if names_a_path(args.function):
        if args.input or args.value or args.number:
            raise SymgradError(
                "verify PATH takes each Function's inputs from its spec ([tool.symgrad.verify] in pyproject.toml, or "
                "symgrad.testing.verify_spec), not from --input, --value or --number: name one with FILE.py:NAME"
            )
        seconds, way_out = getattr(args, "each_limit", (None, ""))
        code = 0
        for line, worst in verify_path(Path(args.function), verified, seconds, way_out):
            print(line, flush=True)
            code = worst
        return code
    verdict = verified(args.function, args.input, args.value, args.order, args.number)
    print(verdict.report())
    return 0 if verdict.held else EXIT_MISMATCH


def verified(spec: str, inputs: list[str], values: list[str], order: int, numbers: list[str] = ()) -> Any:
    """The verdict on ``FILE.py:NAME`` with the ``--input``, ``--value`` and ``--number`` options (see the module
    docstring)."""
    import torch

    found, name, path = find_in_file(spec, "verify")
    is_function = isinstance(found, type) and issubclass(found, torch.autograd.Function)
    plain = inspect.isfunction(found)
    if not is_function and not plain and not isinstance(found, torch.library.CustomOpDef):
        raise SymgradError(
            f"verify: {name} in {path.name} is a {type(found).__name__}, not a torch.autograd.Function, a "
            "torch.library custom op or a function that applies one"
        )
    specs = {k: parse_input(v) for k, v in _named(inputs, "--input").items()}
    given = {k: parse_values(v) for k, v in _named(values, "--value").items()}
    label = name if plain else f"{name}.forward"
    fn = found if plain else function_class(found)
    explicit = {k: _number(k, v) for k, v in _named(list(numbers), "--number").items()}
    examples, dynamic = _examples(label, input_names(fn), specs, given, explicit, input_defaults(fn))
    return verify_backward(found, *examples, dynamic_shapes=dynamic or None, order=order)
