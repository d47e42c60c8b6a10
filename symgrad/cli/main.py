"""The ``symgrad`` command: ``derive`` a gradient formula, ``explain`` it as a document,
``codegen`` a module, or start a ``repl``.

    symgrad derive "w @ x" --value w="[[1.0, 2.0]]" --value x="[[1,1],[2,2]]" --wrt w
    symgrad explain "w @ x" --value w="[[1.0, 2.0]]" --value x="[[1,1],[2,2]]" --wrt w --format pdf -o w.pdf

Bad input never shows a traceback: one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.constructors import fresh_name
from ..core.dims import is_concrete
from ..core.errors import CheckError, SymgradError
from ..core.tensor import Tensor
from ..emit.codegen import codegen, compile_module
from ..emit.module_check import check_module
from ..reader import parse, parse_shape, parse_values
from ..report.derivation import as_text, derive, derive_law, law_as_text
from ..report.explanation import explain
from ..report.render import render_explanation, render_markdown
from ..report.tex import compile_pdf
from . import catalogue
from .repl import run as run_repl

EXIT_MISMATCH = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_USAGE, f"symgrad: error: {message}\n")


def _pairs(items: Sequence[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise SymgradError(f"{option} expects NAME=..., got {item!r}")
        name = name.strip()
        if name in out:
            raise SymgradError(f"{option} gives {name!r} twice")
        out[name] = text
    return out


def _expression_arguments(parser: argparse.ArgumentParser) -> None:
    """The expression and its tensors, as ``derive`` and ``explain`` take them."""
    parser.add_argument("expression", help='a torch expression, e.g. "torch.tanh(W @ x + b)"')
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="a tensor's shape, e.g. w=1,2 (names of dims such as k,n make them symbolic)",
    )
    parser.add_argument(
        "--value", action="append", default=[], metavar="NAME=LIST", help='a tensor\'s values, e.g. x="[[1,1],[2,2]]"'
    )
    parser.add_argument(
        "--wrt",
        default=None,
        metavar="NAME[,NAME]",
        help="the tensors to differentiate with respect to (default: every tensor)",
    )
    parser.add_argument(
        "--grad-tensor",
        default=None,
        metavar="ones|NAME|LIST",
        help="the grad_tensor v: ones (as torch.ones_like), a symbol name such as v, or values",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="symgrad", description="What torch.autograd computes, as formulas.")
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    derive = verbs.add_parser("derive", help="derive the Jacobian and the gradient vᵀJ of an expression")
    _expression_arguments(derive)
    derive.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    derive.add_argument("--no-check", action="store_true", help="skip the cross-check against torch.autograd")

    explain = verbs.add_parser(
        "explain", help="a LaTeX, Markdown or PDF document explaining what backward() computes for an expression"
    )
    _expression_arguments(explain)
    explain.add_argument("--format", choices=["tex", "md", "pdf"], default="md")
    explain.add_argument("--lang", choices=["en", "zh"], default="en", help="English or Chinese (default: en)")
    explain.add_argument("-o", "--output", default=None, help="write the document here (required for pdf)")
    explain.add_argument("--no-check", action="store_true", help="skip the checks against torch and the proofs")
    emit = verbs.add_parser("codegen", help="emit a torch module with the closed-form gradient, checked against torch")
    emit.add_argument("expression")
    emit.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="an input's shape (symbolic names such as k,n or sizes); inputs keep this order",
    )
    emit.add_argument("--value", action="append", default=[], metavar="NAME=LIST")
    emit.add_argument("--wrt", required=True, metavar="NAME[,NAME]")
    emit.add_argument("--style", choices=["function", "autograd-function"], default="autograd-function")
    emit.add_argument("--name", default="Generated", help="CamelCase name of the autograd.Function (…Function)")
    emit.add_argument("-o", "--output", default=None, help="write the module here instead of stdout")
    emit.add_argument("--no-check", action="store_true", help="skip the check against torch.autograd and gradcheck")

    verbs.add_parser("repl", help="an interactive console with `torch` bound to symgrad.torch")

    catalogue = verbs.add_parser("catalogue", help="regenerate generated/ (run from the repository's root)")
    catalogue.add_argument("--check", action="store_true", help="only report files that are out of date (exit 1)")
    catalogue.add_argument("--directory", default="generated", help="where the catalogue lives (default: generated)")
    return parser


def _expression_and_wrt(args: argparse.Namespace) -> tuple[Tensor, list[Tensor]]:
    """The parsed expression (``--shape``, ``--value``) and the tensors named by ``--wrt`` (default: all)."""
    shapes = {name: parse_shape(text) for name, text in _pairs(args.shape, "--shape").items()}
    values = {name: parse_values(text) for name, text in _pairs(args.value, "--value").items()}
    wrt_names = [n.strip() for n in args.wrt.split(",") if n.strip()] if args.wrt else None
    output = parse(args.expression, shapes=shapes, values=values, requires_grad=wrt_names or True)
    leaves = output.leaves()
    for name in wrt_names or []:
        if name not in leaves:
            raise SymgradError(
                f"--wrt names {name!r}, which is not a tensor of the expression (tensors: {', '.join(sorted(leaves))})"
            )
    wrt = [leaves[n] for n in wrt_names] if wrt_names else [leaves[n] for n in leaves]
    return output, wrt


def _grad_tensor_option(text: str | None, output: Tensor) -> Any:
    """``--grad-tensor``: ones, a symbol name, or values; None keeps torch's rule for scalar outputs."""
    if text is not None and text != "ones" and not text.isidentifier():
        return parse_values(text)
    if text is None and output.numel() == 1:
        return "ones"
    return text


def run_derive(args: argparse.Namespace) -> int:
    output, wrt = _expression_and_wrt(args)
    if not all(is_concrete(t.shape) for t in [output, *output.leaves().values()]):
        return _print_law(args, output, wrt)
    grad_tensor = _grad_tensor_option(args.grad_tensor, output)
    if grad_tensor is None:
        raise SymgradError(
            "grad can be implicitly created only for scalar outputs; "
            "pass --grad-tensor ones, --grad-tensor v (symbolic) or values"
        )
    result = derive(output, wrt, grad_tensor=grad_tensor, expression=args.expression, run_check=not args.no_check)
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    elif args.format == "markdown":
        print(render_markdown(result), end="")
    else:
        print(as_text(result))
    if result.check is not None and not result.check.ok:
        print("symgrad: error: the formulas disagree with torch.autograd", file=sys.stderr)
        return EXIT_MISMATCH
    return 0


def _print_law(args: argparse.Namespace, output, wrt) -> int:
    """Symbolic shapes: print the matrix laws (with their proofs) instead of entries."""
    if args.grad_tensor is not None and args.grad_tensor != "ones" and not args.grad_tensor.isidentifier():
        raise SymgradError("with symbolic shapes, --grad-tensor is a name (e.g. V) or ones")
    grad = args.grad_tensor
    if grad in (None, "ones") and not all(d == 1 for d in output.shape):
        if grad == "ones":
            raise SymgradError("with symbolic shapes, a non-scalar output needs a symbolic --grad-tensor such as V")
        grad = fresh_name("V", output.leaves())
    result = derive_law(output, wrt, grad_tensor=grad, expression=args.expression, run_proof=not args.no_check)
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, sort_keys=True, default=str))
    else:
        print(law_as_text(result))
    return 0 if result.proof is None or result.proof.held else EXIT_MISMATCH


def run_explain(args: argparse.Namespace) -> int:
    output, wrt = _expression_and_wrt(args)
    concrete = all(is_concrete(t.shape) for t in [output, *output.leaves().values()])
    grad_tensor = _grad_tensor_option(args.grad_tensor, output) if concrete else None
    if args.format == "pdf" and not args.output:
        raise SymgradError("--format pdf writes a binary file: give its name with -o FILE")
    result = explain(
        output, wrt, grad_tensor=grad_tensor, expression=args.expression, lang=args.lang, run_check=not args.no_check
    )
    if args.format == "pdf":
        Path(args.output).write_bytes(compile_pdf(render_explanation(result, "tex"), args.lang))
    else:
        text = render_explanation(result, args.format)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
        else:
            print(text, end="")
    law_failed = result.law is not None and result.law.proved is False
    if (result.check is not None and not result.check["ok"]) or law_failed:
        print("symgrad: error: the formulas disagree with torch.autograd", file=sys.stderr)
        return EXIT_MISMATCH
    return 0


def run_codegen(args: argparse.Namespace, argv: list[str]) -> int:
    shapes = {name: parse_shape(text) for name, text in _pairs(args.shape, "--shape").items()}
    values = {name: parse_values(text) for name, text in _pairs(args.value, "--value").items()}
    wrt_names = [n.strip() for n in args.wrt.split(",") if n.strip()]
    output = parse(args.expression, shapes=shapes, values=values, requires_grad=wrt_names)
    leaves = output.leaves()
    order = (
        list(shapes)
        + [n for n in values if n not in shapes]
        + [n for n in leaves if n not in shapes and n not in values]
    )
    missing = [n for n in wrt_names if n not in leaves]
    if missing:
        raise SymgradError(f"--wrt names {missing[0]!r}, which is not a tensor of the expression")
    inputs = [leaves[n] for n in order if n in leaves]
    wrt = [leaves[n] for n in wrt_names]
    kept = [
        a
        for i, a in enumerate(argv)
        if a not in ("-o", "--output") and (i == 0 or argv[i - 1] not in ("-o", "--output"))
    ]
    style = "autograd_function" if args.style == "autograd-function" else "function"
    command = shlex.join(["symgrad", *kept])
    source = codegen(
        output, wrt, inputs=inputs, style=style, name=args.name, expression=args.expression, command=command
    )
    if args.output:
        Path(args.output).write_text(source, encoding="utf-8")
    else:
        sys.stdout.write(source)
    if args.no_check:
        return 0
    module = compile_module(
        output, wrt, inputs=inputs, style=style, name=args.name, expression=args.expression, command=command
    )
    result = check_module(module, output, wrt, inputs)
    print(str(result), file=sys.stderr)
    return 0 if result.ok else EXIT_MISMATCH


def run_catalogue(args: argparse.Namespace) -> int:
    directory = Path(args.directory)
    if args.check:
        stale = catalogue.stale(directory)
        for name in stale:
            print(f"out of date: {directory / name}")
        return 1 if stale else 0
    for path in catalogue.write(directory):
        print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2), already printed
        return int(stop.code or 0)
    try:
        if args.verb == "repl":
            return run_repl()
        if args.verb == "catalogue":
            return run_catalogue(args)
        if args.verb == "explain":
            return run_explain(args)
        if args.verb == "codegen":
            return run_codegen(args, list(argv) if argv is not None else sys.argv[1:])
        return run_derive(args)
    except CheckError as error:
        print(f"symgrad: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return EXIT_MISMATCH
    except (SymgradError, RuntimeError, IndexError, ValueError, TypeError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"symgrad: error: {message}", file=sys.stderr)
        return EXIT_USAGE
