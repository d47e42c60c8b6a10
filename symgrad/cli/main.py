"""The ``symgrad`` command: ``derive`` a gradient formula, ``explain`` it as a document,
``codegen`` a module, draw its computation ``graph``, ``verify`` a hand-written backward, or start a ``repl``.

    symgrad derive "w @ x" --value w="[[1.0, 2.0]]" --value x="[[1,1],[2,2]]" --wrt w
    symgrad explain "w @ x" --value w="[[1.0, 2.0]]" --value x="[[1,1],[2,2]]" --wrt w --format pdf -o w.pdf
    symgrad explain "(w * w * w).sum()" --value w="[1.0, 2.0]" --wrt w --create-graph
    symgrad graph "torch.tanh(w @ x).sum()" --shape w=2,3 --shape x=3 --wrt w -o graph.svg
    symgrad verify layers.py:LayerNorm --input x=m,n

No Python traceback reaches the user: every failure is one line on stderr, and ``--debug`` (or the
environment variable ``SYMGRAD_DEBUG=1``) shows the traceback instead. Exit codes:

- 0: ok;
- 1: the result disagrees with torch (a failed cross-check, proof or check of an emitted module, which is
  then not written); ``catalogue --check``: generated/ is out of date;
- 2: bad input, an unwritable output, or the work budget exceeded (including running out of memory);
- 2 as well for an internal error, a bug in symgrad (one line naming the op it was working on): please report it
  with the ``--debug`` traceback;
- 130: interrupted (Ctrl-C), quietly;
- 141: stdout was closed before the output was complete (``symgrad ... | head -1``). As Python's documentation
  recommends for SIGPIPE, the rest of the output goes to ``os.devnull``, quietly; the code is the one a shell
  reports for a program ended by SIGPIPE (128 + 13), as ``yes | head -1`` gives, since 1 means a disagreement.

Every ``-o FILE`` is written atomically: to a temporary file in FILE's folder, renamed into place only
once it is complete (and, for ``codegen``, only once the module imports and passes its check).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.budget import PROGRESS_AFTER, time_limit
from ..core.dims import is_concrete
from ..core.errors import SymgradError, WorkBudgetError
from ..core.files import check_writable
from ..core.tensor import Tensor
from ..emit import codegen, load_source
from ..emit.module_check import check_curvature_module, check_module
from ..reader import parse, parse_shape, parse_values
from ..report.derivation import SHOWN, as_text, derive, derive_law, law_as_text
from ..report.documents import explain
from ..report.graph import file_format, graph
from ..report.render import render_explanation, render_markdown
from ..report.tex import compile_pdf
from ..report.verification import render_verification
from ..torch.tracing import Trace
from . import catalogue, serve
from . import verify as verification
from .catalogue import strict_json
from .errors import EXIT_MISMATCH, EXIT_USAGE, one_line, report_error, say
from .grad_tensors import default_grad_tensor, grad_tensor_option, parsed_grad_tensor, symbolic_grad_tensor
from .limits import DEFAULT_TIME_LIMIT, seconds, time_limit_of, way_out
from .models import Model, load_model, option_pairs, parse_input, wrt_option
from .outputs import document_format, put_result, saved, write_page
from .pictures import picture_name
from .repl import run as run_repl

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class _JoinedNames(argparse.Action):
    """``--wrt a --wrt b`` means ``--wrt a,b``: a repeated option adds names rather than replacing them."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        previous = getattr(namespace, self.dest)
        setattr(namespace, self.dest, f"{previous},{values}" if previous else values)


EPILOG = """\
exit codes:
  0    ok
  1    the result disagrees with torch (a failed check, proof or module check; a failed module is not
       written); catalogue --check: generated/ is out of date
  2    bad input, an unwritable output, the work budget or time limit exceeded, or an internal error (a bug in
       symgrad, please report it; --debug shows the traceback)
  130  interrupted (Ctrl-C)
  141  stdout was closed early (e.g. `symgrad ... | head -1`): the rest is dropped quietly

Every failure is one line on stderr; --debug (or SYMGRAD_DEBUG=1) shows the Python traceback instead.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, like every other bad input
        self.exit(EXIT_USAGE, f"symgrad: error: {message}\n")


def _expression_arguments(parser: argparse.ArgumentParser) -> None:
    """The expression and its tensors, as ``derive`` and ``explain`` take them."""
    parser.add_argument("expression", nargs="?", help='a torch expression, e.g. "torch.tanh(W @ x + b)"')
    _module_arguments(parser)
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
        action=_JoinedNames,
        metavar="NAME[,NAME]",
        help="the tensors to differentiate with respect to (default: every tensor)",
    )
    parser.add_argument(
        "--grad-tensor",
        default=None,
        metavar="ones|NAME|LIST",
        help="the grad_tensor v: ones (as torch.ones_like), a symbol name such as v, or values",
    )


def _module_arguments(parser: argparse.ArgumentParser) -> None:
    """--module and --input: a model from a file instead of an expression."""
    parser.add_argument(
        "--module",
        default=None,
        metavar="FILE.py:NAME",
        help="instead of an expression: an nn.Module class (built with no arguments), instance or function in a "
        "Python file, traced as it runs (the file runs as Python); --wrt names its parameters as the module does "
        "(fc1.weight; default: all of them)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=DIMS[:KIND]",
        help="with --module: the shape of one argument of forward, in order, e.g. x=m,3 (names make sizes symbolic); "
        "KIND gives integers or booleans instead of float64 normals: y=m:int64[0,10) (class targets 0..9), m:bool",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="symgrad",
        description="What torch.autograd computes, as formulas.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the Python traceback of an error instead of one line"
    )
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    derive = verbs.add_parser("derive", help="derive the Jacobian and the gradient vᵀJ of an expression")
    _expression_arguments(derive)
    derive.add_argument(
        "--format",
        choices=["text", "json", "markdown", "md"],
        default="text",
        help="text (default), markdown (or md), or strict JSON: a value that is nan is null, and ±inf the strings "
        '"inf" and "-inf" (JSON has no NaN or Infinity); null also marks a value that is not known',
    )
    derive.add_argument("--no-check", action="store_true", help="skip the cross-check against torch.autograd")
    derive.add_argument("-o", "--output", default=None, help="write the result here instead of stdout")
    derive.add_argument(
        "--full",
        action="store_true",
        help="write out every entry (by default, large tensors show their first and last)",
    )

    explain = verbs.add_parser(
        "explain", help="a LaTeX, Markdown or PDF document explaining what backward() computes for an expression"
    )
    _expression_arguments(explain)
    explain.add_argument(
        "--format",
        choices=["tex", "md", "markdown", "pdf", "html"],
        default=None,
        help="md (or markdown; the default), tex, pdf or html (one page that works offline); without it, -o FILE's "
        "suffix decides (.pdf, .tex, .md, .html)",
    )
    explain.add_argument("--lang", choices=["en", "zh"], default="en", help="English or Chinese (default: en)")
    explain.add_argument("-o", "--output", default=None, help="write the document here (required for pdf)")
    explain.add_argument("--no-check", action="store_true", help="skip the checks against torch and the proofs")
    explain.add_argument("--in-playground", action="store_true", help=argparse.SUPPRESS)  # refusals name the form
    explain.add_argument(
        "--no-graph",
        action="store_true",
        help="leave out the picture of the graph (with -o, drawn by dot beside the document as NAME-graph.svg for "
        "md, NAME-graph.pdf for tex, and inside a pdf)",
    )
    explain.add_argument(
        "--verify",
        metavar="FILE.py:NAME",
        default=None,
        help="instead of an expression: the proof (or the counterexample) for a hand-written torch.autograd.Function's "
        "backward, as a document; its inputs with --input NAME=DIMS and --value NAME=LIST",
    )
    explain.add_argument(
        "--create-graph",
        action="store_true",
        help="explain what backward(create_graph=True) does for a one-element expression and one --wrt input: the "
        "gradient as a formula, the Hessian as its Jacobian, and a second backward with the grad_tensor u "
        "(--grad-tensor: ones, a name, or values of the input's shape) as the Hessian-vector product",
    )
    emit = verbs.add_parser("codegen", help="emit a torch module with the closed-form gradient, checked against torch")
    emit.add_argument("expression", nargs="?")
    _module_arguments(emit)
    emit.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="an input's shape (symbolic names such as k,n or sizes); inputs keep this order",
    )
    emit.add_argument("--value", action="append", default=[], metavar="NAME=LIST")
    emit.add_argument(
        "--wrt",
        default=None,
        action=_JoinedNames,
        metavar="NAME[,NAME]",
        help="required with an expression; with --module: parameters",
    )
    emit.add_argument(
        "--style",
        choices=["function", "autograd-function", "autograd_function", "hvp", "hessian", "newton"],
        default="autograd-function",
        help="autograd-function (or autograd_function; the default) adds a torch.autograd.Function; "
        "function emits only forward, vjp and forward_and_vjp; hvp emits forward, gradient and "
        "hvp(<inputs>, <a tangent v_<x> per --wrt input>), the Hessian-vector product of a one-element "
        "expression; hessian emits forward, gradient and hessian(<inputs>); newton adds newton_step(<inputs>), the "
        "Newton step H⁻¹∇f for one --wrt input",
    )
    emit.add_argument(
        "--name",
        default="Generated",
        help="class name the emitted classes are named after (…Function), e.g. Net or CNN_noTRS",
    )
    emit.add_argument(
        "-o", "--output", default=None, help="write the module here (once it passes its check) instead of stdout"
    )
    emit.add_argument("--no-check", action="store_true", help="skip the check against torch.autograd and gradcheck")

    picture = verbs.add_parser(
        "graph", help="draw the computation graph, each edge labelled with its VJP rule (Graphviz)"
    )
    _expression_arguments(picture)
    picture.add_argument(
        "-o",
        "--output",
        default=None,
        help="write the picture here: .svg, .png or .pdf (drawn by Graphviz's dot), .dot or .gv (its source); "
        "without it, print the DOT source",
    )

    verify = verification.add_parser(verbs)
    verbs.add_parser("repl", help="an interactive console with `torch` bound to symgrad.torch")

    catalogue = verbs.add_parser("catalogue", help="regenerate the checkout's generated/ folder")
    catalogue.add_argument("--check", action="store_true", help="only report files that are out of date (exit 1)")
    catalogue.add_argument(
        "--directory",
        default=None,
        help="where the catalogue lives (default: generated/ of the checkout symgrad runs from, from any directory)",
    )
    serve.add_parser(verbs)
    for verb in verbs.choices.values():  # --debug is accepted after the verb too; -o FILE goes with --force
        verb.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        if any(action.dest == "output" for action in verb._actions):
            verb.add_argument("--force", action="store_true", help="write -o FILE even where it is a symlink")
    for verb in (derive, explain, emit, picture, verify):
        verb.add_argument(
            "--time-limit",
            type=seconds,
            default=None,
            metavar="SECONDS",
            help=f"stop with one line after this many seconds of deriving and proving (default: the environment's "
            f"SYMGRAD_TIME_LIMIT, else {DEFAULT_TIME_LIMIT:g}); past {PROGRESS_AFTER:g} s a progress line goes "
            "to stderr",
        )
    return parser


def _model(args: argparse.Namespace) -> Model | None:
    """The ``--module`` model, traced (None for an expression); exactly one of the two is given."""
    if (args.expression is None) == (args.module is None):
        raise SymgradError("give an expression or --module FILE.py:NAME (with --input), not both or neither")
    if args.module is None:
        if args.input:
            raise SymgradError("--input goes with --module; an expression takes --shape and --value")
        return None
    if args.shape or args.value:
        raise SymgradError("--module takes --input NAME=DIMS for its arguments, not --shape or --value")
    model = load_model(
        args.module, {name: parse_input(text) for name, text in option_pairs(args.input, "--input").items()}
    )
    args.expression = model.description
    return model


def _model_wrt(model: Model, wrt: str | None) -> list[Tensor]:
    """--wrt of a model: parameter paths or input names; by default every parameter."""
    names = [n.strip() for n in wrt.split(",") if n.strip()] if wrt else list(model.trace.parameters)
    for name in names:
        if name not in model.leaves:
            known = ", ".join(model.leaves)
            raise SymgradError(f"--wrt names {name!r}, which the model does not have (it has {known})")
    if not names:
        raise SymgradError("the model has no parameters: name its inputs with --wrt")
    chosen = [model.leaves[n] for n in names]
    for t in chosen:
        t.requires_grad = True
    return chosen


def _expression_and_wrt(args: argparse.Namespace) -> tuple[Tensor, list[Tensor]]:
    """The parsed expression (``--shape``, ``--value``) and the tensors named by ``--wrt`` (default: all),
    or the ``--module`` model's output and parameters."""
    model = _model(args)
    if model is not None:
        return model.trace.output, _model_wrt(model, args.wrt)
    shapes = {name: parse_shape(text) for name, text in option_pairs(args.shape, "--shape").items()}
    values = {name: parse_values(text) for name, text in option_pairs(args.value, "--value").items()}
    wrt_names = wrt_option(args.wrt) if args.wrt else None
    output = parse(args.expression, shapes=shapes, values=values, requires_grad=wrt_names or True)
    leaves = output.leaves()
    for name in wrt_names or []:
        if name not in leaves:
            raise SymgradError(
                f"--wrt names {name!r}, which is not a tensor of the expression (tensors: {', '.join(sorted(leaves))})"
            )
    wrt = [leaves[n] for n in wrt_names] if wrt_names else [leaves[n] for n in leaves]
    return output, wrt


def run_derive(args: argparse.Namespace) -> int:
    if args.output:
        check_writable(Path(args.output))  # before the work, not after it
    output, wrt = _expression_and_wrt(args)
    concrete = all(is_concrete(t.shape) for t in [output, *output.leaves().values()])
    args.grad_tensor = grad_tensor_option(args.grad_tensor, output, symbolic=not concrete)
    if not concrete:
        return _print_law(args, output, wrt)
    grad_tensor = parsed_grad_tensor(args.grad_tensor, output)
    result = derive(
        output,
        wrt,
        grad_tensor=grad_tensor,
        expression=args.expression,
        run_check=not args.no_check,
        limit=None if args.full else SHOWN,
    )
    if args.format == "json":
        put_result(args, json.dumps(strict_json(result.as_dict()), indent=2, sort_keys=True, allow_nan=False) + "\n")
    elif args.format in ("markdown", "md"):
        put_result(args, render_markdown(result))
    else:
        put_result(args, as_text(result) + "\n")
    if result.check is not None and not result.check.ok:
        say("symgrad: error: the formulas disagree with torch.autograd")
        return EXIT_MISMATCH
    return 0


def _print_law(args: argparse.Namespace, output, wrt) -> int:
    """Symbolic shapes: print the matrix laws (with their proofs) instead of entries."""
    grad = symbolic_grad_tensor(args.grad_tensor, output) or args.grad_tensor  # None given: a V (see grad_tensors)
    result = derive_law(output, wrt, grad_tensor=grad, expression=args.expression, run_proof=not args.no_check)
    if args.format == "json":
        put_result(
            args,
            json.dumps(strict_json(result.as_dict()), indent=2, sort_keys=True, default=str, allow_nan=False) + "\n",
        )
    else:
        put_result(args, law_as_text(result) + "\n")
    return 0 if result.proof is None or result.proof.held else EXIT_MISMATCH


def run_explain(args: argparse.Namespace) -> int:
    document_format(args)
    if args.verify is not None:
        return _explain_verification(args)
    target = Path(args.output) if args.output else None
    if args.format == "pdf" and target is None:
        raise SymgradError("--format pdf writes a binary file: give its name with -o FILE")
    if target is not None:
        check_writable(target)  # before the work, not after it
    output, wrt = _expression_and_wrt(args)
    concrete = all(is_concrete(t.shape) for t in [output, *output.leaves().values()])
    chosen = default_grad_tensor(output, symbolic=not concrete) if args.grad_tensor is None else None
    if args.create_graph:  # the grad_tensor is u, of the input's shape, for the second backward
        grad_tensor = parsed_grad_tensor(args.grad_tensor, output) if args.grad_tensor else None
    elif concrete:
        grad_tensor = parsed_grad_tensor(args.grad_tensor or chosen, output)
    else:  # the law's symbolic grad_tensor: the name given, else V; named in the picture too
        grad_tensor = symbolic_grad_tensor(args.grad_tensor, output) or chosen
    result = explain(
        output,
        wrt,
        grad_tensor=grad_tensor,
        expression=args.expression,
        lang=args.lang,
        run_check=not args.no_check,
        create_graph=args.create_graph,
    )
    if chosen is not None and not args.create_graph and result.entrywise is None:  # the law's V, in the picture too
        grad_tensor = default_grad_tensor(output, symbolic=True)
    if args.format == "html":
        write_page(target, result, None if args.no_graph else _page_graph(output, wrt, grad_tensor, args), args)
        return _explained(result)
    pictures: dict[str, bytes] = {}
    if target is not None and not args.no_graph:
        kind = "svg" if args.format == "md" else "pdf"
        pictured = None if args.create_graph else grad_tensor  # u is x's shape: the picture shows the 1
        drawing = _graph_drawing(output, wrt, pictured, kind, args.lang)
        if drawing is not None:
            name = "graph.pdf" if args.format == "pdf" else picture_name(target, kind)
            pictures[name] = drawing
            result.picture = name
    if args.format == "pdf":
        saved(target, compile_pdf(render_explanation(result, "tex"), args.lang, files=pictures), args)
    else:
        text = render_explanation(result, args.format)
        if target is not None:  # the document first: a failure names the file asked for, not its picture
            saved(target, text, args)
        else:
            print(text, end="")
        for name, drawing in pictures.items():
            saved(target.parent / name, drawing, args)
    return _explained(result)


def _explained(result: Any) -> int:
    if result.failed:
        say("symgrad: error: the formulas disagree with torch.autograd")
        return EXIT_MISMATCH
    return 0


def _page_graph(output: Tensor, wrt: list[Tensor], grad_tensor: Any, args: argparse.Namespace) -> Any:
    """The graph an HTML page draws inside itself (u, not v, is the grad_tensor one order up)."""
    return graph(output, wrt or None, grad_tensor=None if args.create_graph else grad_tensor, lang=args.lang)


def _graph_drawing(output: Tensor, wrt: list[Tensor], grad_tensor: Any, kind: str, lang: str) -> bytes | None:
    """The graph drawn by dot for the document, or None with a one-line note (no dot, or a graph it can't draw)."""
    try:
        return graph(output, wrt or None, grad_tensor=grad_tensor, lang=lang).draw(kind)
    except SymgradError as error:
        if isinstance(error, WorkBudgetError):
            raise
        say(f"symgrad: note: the document has no graph picture: {error}")
        return None


def run_graph(args: argparse.Namespace) -> int:
    target = Path(args.output) if args.output else None
    kind = file_format(target) if target is not None else "dot"  # an unknown extension fails before the work
    if target is not None:
        check_writable(target)
    output, wrt = _expression_and_wrt(args)
    concrete = all(is_concrete(t.shape) for t in [output, *output.leaves().values()])
    grad_tensor = grad_tensor_option(args.grad_tensor, output, symbolic=not concrete)
    if grad_tensor is not None and grad_tensor != "ones" and not grad_tensor.isidentifier():
        grad_tensor = parse_values(grad_tensor)
    picture = graph(output, wrt if args.wrt or args.module else None, grad_tensor=grad_tensor)
    if target is None:
        print(picture.source, end="")
    else:
        saved(target, picture.source if kind == "dot" else picture.draw(kind), args)
    return 0


def codegen_command(args: argparse.Namespace) -> str:
    """The command that regenerates the module, for its docstring: the parsed options, spelled in full
    (so neither ``-o`` nor ``--debug`` nor an abbreviated option reaches the module)."""
    if args.module is not None:
        parts = ["symgrad", "codegen", "--module", args.module]
        for shape in args.input:
            parts += ["--input", shape]
        parts += ["--wrt", args.wrt] if args.wrt else []
        parts += ["--style", args.style.replace("_", "-"), "--name", args.name]
        return shlex.join(parts + (["--no-check"] if args.no_check else []))
    parts = ["symgrad", "codegen", args.expression]
    for shape in args.shape:
        parts += ["--shape", shape]
    for value in args.value:
        parts += ["--value", value]
    parts += ["--wrt", args.wrt, "--style", args.style.replace("_", "-"), "--name", args.name]
    if args.no_check:
        parts.append("--no-check")
    return shlex.join(parts)


def run_codegen(args: argparse.Namespace) -> int:
    target = Path(args.output) if args.output else None
    if target is not None:
        check_writable(target)  # before the work, not after it
    model = _model(args)
    style = args.style.replace("-", "_")
    if model is not None:
        wrt = _model_wrt(model, args.wrt)
        traced = model.trace
        output, inputs = traced.output, [*traced.inputs, *traced.parameters.values(), *traced.buffers.values()]
        target_graph: Tensor | Trace = traced  # a Trace: the module also gets a drop-in nn.Module wrapper
    else:
        output, inputs, wrt = _parsed_for_codegen(args)
        target_graph = output
    source = codegen(
        target_graph,
        wrt,
        inputs=inputs,
        style=style,
        name=args.name,
        expression=args.expression,
        command=codegen_command(args),
    )
    where = str(target) if target is not None else "<symgrad codegen>"
    try:  # even with --no-check, a module that is not Python is never written
        compile(source, where, "exec")
    except SyntaxError as error:
        return _module_failed(target, f"is not valid Python ({error.msg}, line {error.lineno})")
    report = None
    if not args.no_check:
        try:
            module = load_source(source, args.name, where)
            if style in ("hvp", "hessian", "newton"):
                report = check_curvature_module(module, output, wrt, inputs)
            else:
                report = check_module(module, output, wrt, inputs)
        except (SymgradError, MemoryError, RecursionError):
            raise
        except ModuleNotFoundError as error:
            if error.name != "torch":
                raise
            raise SymgradError(
                "checking the module needs torch (pip install torch==2.13.0), or pass --no-check"
            ) from error
        except Exception as error:
            return _module_failed(target, f"fails its check: {type(error).__name__}: {one_line(error)}")
        if not report.ok:
            return _module_failed(target, f"fails its {report}")
    if target is not None:
        saved(target, source, args)
    else:
        sys.stdout.write(source)
    if report is not None:
        say(str(report))
    return 0


def _parsed_for_codegen(args: argparse.Namespace) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """The expression, its inputs in the order of --shape then --value, and the --wrt tensors."""
    if not args.wrt:
        raise SymgradError("codegen of an expression needs --wrt: the tensors to differentiate with respect to")
    shapes = {name: parse_shape(text) for name, text in option_pairs(args.shape, "--shape").items()}
    values = {name: parse_values(text) for name, text in option_pairs(args.value, "--value").items()}
    wrt_names = wrt_option(args.wrt)
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
    return output, [leaves[n] for n in order if n in leaves], [leaves[n] for n in wrt_names]


def _module_failed(target: Path | None, why: str) -> int:
    """A module that is not right is neither written nor printed: one line, exit 1."""
    kept = f"{target} was not written" if target is not None else "it was not printed"
    say(f"symgrad: error: the emitted module {why}; {kept}")
    return EXIT_MISMATCH


def run_catalogue(args: argparse.Namespace) -> int:
    directory = Path(args.directory) if args.directory else catalogue.default_directory()
    if directory is None:
        raise SymgradError(
            "cannot find the generated/ folder: symgrad does not run from a checkout of its repository; "
            "pass --directory DIR"
        )
    if args.check:
        stale = catalogue.stale(directory)
        for name in stale:
            print(f"out of date: {directory / name}")
        return 1 if stale else 0
    for path in catalogue.write(directory):
        print(f"wrote {path}")
    return 0


def _debug_from_environment() -> bool:
    return os.environ.get("SYMGRAD_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def _silence_stdout() -> None:
    """Python's recommendation for SIGPIPE: point stdout at devnull, so that the flush at exit is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file descriptor (e.g. captured in tests)
        pass


def _run(args: argparse.Namespace) -> int:
    if args.verb == "repl":
        return run_repl()
    if args.verb == "catalogue":
        return run_catalogue(args)
    if args.verb == "serve":
        return serve.run_serve(args, main)
    seconds = time_limit_of(args)
    if args.verb == "verify" and verification.names_a_path(args.function):  # a limit for each Function in it
        args.each_limit = (
            seconds,
            "order = 1 in its spec skips the second order, and --time-limit SECONDS allows more",
        )
        seconds = None
    with time_limit(seconds, f"symgrad {args.verb}", way_out(args)):
        return _run_verb(args)


def _explain_verification(args: argparse.Namespace) -> int:
    """``explain --verify FILE.py:NAME``: the verdict of ``symgrad verify`` as a document (md, tex or pdf)."""
    if args.expression is not None or args.module is not None or args.shape or args.create_graph:
        raise SymgradError("--verify takes FILE.py:NAME with --input and --value, not an expression or --module")
    target = Path(args.output) if args.output else None
    if args.format == "pdf" and target is None:
        raise SymgradError("--format pdf writes a binary file: give its name with -o FILE")
    if target is not None:
        check_writable(target)
    verdict = verification.verified(args.verify, args.input, args.value, 2)
    text = render_verification(verdict, args.lang, "tex" if args.format == "pdf" else args.format)
    if args.format == "pdf":
        saved(target, compile_pdf(text, args.lang), args)
    elif target is not None:
        saved(target, text, args)
    else:
        print(text, end="")
    return 0 if verdict.held else EXIT_MISMATCH


def _run_verb(args: argparse.Namespace) -> int:
    if args.verb == "verify":
        return verification.run_verify(args)
    if args.verb == "explain":
        return run_explain(args)
    if args.verb == "codegen":
        return run_codegen(args)
    if args.verb == "graph":
        return run_graph(args)
    return run_derive(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit code (see the module docstring). Never raises, except with --debug."""
    debug = _debug_from_environment()
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as stop:  # --help (0) or a usage error (2), already printed
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else EXIT_USAGE)
        else:
            debug = debug or args.debug
            code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's own flush at exit
        return code
    except KeyboardInterrupt:
        if debug:
            raise
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        if debug:
            raise
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as error:
        if debug:
            raise
        return report_error(error)
