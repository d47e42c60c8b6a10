"""Emit gradient code: a torch module with ``forward``, ``vjp`` and a ``torch.autograd.Function``.

The gradient is the law from :mod:`symgrad.derive.reverse`, printed statement by
statement; nodes used twice are computed once, and forward results the
backward needs (such as ``tanh(W @ X + b)``) are saved rather than recomputed.

>>> import symgrad as sg
>>> k, n, m = sg.dims("k n m")
>>> W, X = sg.symbols("W", (k, n)), sg.symbols("X", (n, m))
>>> source = codegen(W @ X, [W], inputs=[W, X], name="Linear")
>>> "grad_W = grad_output @ X.T" in source
True
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import sympy

from ..core.constructors import symbols_like
from ..core.dims import format_shape
from ..core.errors import SymgradError
from ..core.graph import dims_of, topological, uniform_constant
from ..core.printers import LatexPrinter, TorchPrinter, number_precedence
from ..core.tensor import Tensor
from ..derive.reverse import law
from ..ops.sympy_torch import python_source
from ..torch.tracing import Trace
from ..version import __version__
from .templates import code_environment

# Every name an emitted module defines or reads besides its inputs and sizes; ``t_*`` and ``grad_*``
# are its intermediates and gradients.
RESERVED = {
    "torch", "math", "F", "ctx", "grad_output", "output", "forward", "vjp", "forward_and_vjp", "inputs", "apply",
    "self", "once_differentiable",
}  # fmt: skip
RESERVED_PREFIXES = ("_", "grad_", "t_")
MAX_INLINE = 72  # longer subexpressions get a name of their own, so every line stays readable


def check_identifier(name: str, what: str) -> str:
    """Names reach the emitted file: identifiers that, once Python has NFKC-normalised them (as it does
    with every identifier it reads), clash with nothing the module defines."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SymgradError(f"{what} {name!r} is not a Python identifier")
    normal = unicodedata.normalize("NFKC", name)
    if normal in RESERVED or normal.startswith(RESERVED_PREFIXES) or keyword.iskeyword(normal):
        spelled = f" (Python reads it as {normal!r})" if normal != name else ""
        raise SymgradError(f"{what} {name!r}{spelled} clashes with a name the emitted module uses; rename it")
    return name


class CodePrinter(TorchPrinter):
    """torch code that runs on any device and dtype, formatted the way ``ruff format`` writes it."""

    def __init__(self, names: dict[int, str], like: str) -> None:
        super().__init__(names)
        self.like = like  # a tensor whose dtype and device new tensors take
        self.uses_math = False
        self.uses_index_backward = False

    def _print_number(self, value: sympy.Expr):
        if value.is_Float:
            return repr(float(value)), number_precedence(value)
        if value.is_Number:
            text = str(value) if value.is_Integer else f"{value.p} / {value.q}"
            return text, (5 if not value.is_Integer else number_precedence(value))
        text = size_source(value)
        self.uses_math = self.uses_math or "math." in text
        return text, number_precedence(value)

    def _print_leaf(self, t: Tensor) -> str:
        """A constant tensor as torch code, on the inputs' device (and, for floats, their dtype)."""
        if t.kind == "symbol":  # an input, or grad_output
            return t.name
        entries = t.entries()
        numbers = [sympy.sympify(e) for e in entries.reshape(-1)]
        if not all(n.is_Number and n.is_finite for n in numbers):
            raise SymgradError(f"cannot write {t.name} as torch code: it is not an input, nor a tensor of numbers")
        shape = ", ".join(str(d) for d in entries.shape) + ("," if entries.ndim == 1 else "")
        if t.dtype.startswith("float"):
            value = uniform_constant(t)
            if value is not None:
                return f"{self.like}.new_full(({shape}), {float(value)!r})"
            data = np.array([float(n) for n in numbers], dtype=float).reshape(entries.shape).tolist()
            text = f"{self.like}.new_tensor({data!r})"
        else:
            data = np.array([int(n) for n in numbers], dtype=object).reshape(entries.shape).tolist()
            kind = "torch.bool" if t.dtype == "bool" else "torch.long"
            text = f"torch.tensor({data!r}, dtype={kind}, device={self.like}.device)"
        if len(text) > MAX_INLINE + 20:
            raise SymgradError(
                f"the constant {t.name} is too large to write inline ({entries.size} entries); make it an input"
            )
        return text

    def _print_pow(self, t: Tensor):
        base, exponent = (self._print(part) for part in t.inputs)
        base_text = base[0] if base[1] > 7 else f"({base[0]})"
        exp_text = exponent[0] if exponent[1] > 7 else f"({exponent[0]})"
        simple = _SIMPLE.fullmatch(base_text) and _SIMPLE.fullmatch(exp_text)
        return (f"{base_text}**{exp_text}" if simple else f"{base_text} ** {exp_text}"), 7

    def _print_full(self, t: Tensor):
        shape = ", ".join(str(d) for d in t.attrs["shape"])
        value, _ = self._print_number(sympy.sympify(t.attrs["value"]))
        return f"{self.like}.new_full(({shape}{',' if len(t.attrs['shape']) == 1 else ''}), {value})", 9

    def _print_eye(self, t: Tensor):
        return f"torch.eye({t.attrs['n']}, dtype={self.like}.dtype, device={self.like}.device)", 9

    def _print_one_hot(self, t: Tensor):
        (y,) = t.inputs
        text, _ = self._print(y)
        classes = t.attrs["num_classes"]
        return f"torch.nn.functional.one_hot({text}.long(), {classes}).to({self.like}.dtype)", 9

    def _print_step(self, t: Tensor):
        (x,) = t.inputs
        text, precedence = self._print(x)
        inner = text if precedence > 3 else f"({text})"
        if t.attrs["at_zero"] == 0:
            return f"({inner} > 0).to({self.like}.dtype)", 9
        return f"torch.heaviside({text}, {self.like}.new_tensor({float(t.attrs['at_zero'])!r}))", 9

    def _print_where(self, t: Tensor):
        condition, a, b = (self._print(part)[0] for part in t.inputs)
        return f"torch.where({condition}, {a}, {b})", 9

    def _print_index_backward(self, t: Tensor):
        self.uses_index_backward = True
        (g,) = t.inputs
        shape = ", ".join(str(d) for d in t.attrs["shape"])
        return f"_index_backward({self._print(g)[0]}, ({shape},), {t.attrs['index']!r})", 9

    def _print_map(self, t: Tensor):
        (x,) = t.inputs
        variable = t.attrs["fn"].variables[0]
        self.uses_math = True
        return python_source(t.attrs["fn"].expr, {variable: self._print(x)[0]}), 9


def size_source(value: sympy.Expr) -> str:
    """A number made of sizes as Python, spaced the way ``ruff format`` spaces it: ``1 / math.sqrt(d)``."""
    if value.is_Integer or value.is_Symbol:
        return str(value)
    if value.is_Rational:
        return f"{value.p} / {value.q}"
    if value.is_Float:
        return repr(float(value))
    if value == sympy.pi:
        return "math.pi"
    if value.is_Add:
        return " + ".join(size_source(a) for a in sympy.Add.make_args(value)).replace("+ -", "- ")
    if value.is_Pow and value.exp == sympy.S.Half:
        return f"math.sqrt({size_source(value.base)})"
    numerator, denominator = sympy.fraction(value)
    if denominator != 1:
        top, bottom = size_source(numerator), size_source(denominator)
        top = top if numerator.is_Atom or numerator.is_Pow else f"({top})"
        simple_bottom = denominator.is_Atom or (denominator.is_Pow and denominator.exp == sympy.S.Half)
        return f"{top} / {bottom if simple_bottom else f'({bottom})'}"
    if value.is_Mul:
        return " * ".join(size_source(a) if not a.is_Add else f"({size_source(a)})" for a in value.args)
    if value.is_Pow:
        return f"{size_source(value.base)}**{size_source(value.exp)}"
    return sympy.pycode(value, fully_qualified_modules=True)


_SIMPLE = re.compile(r"-?[A-Za-z_][A-Za-z_0-9.]*|-?\d+(\.\d+)?")


@dataclass
class Plan:
    """Statements of the emitted functions, as (name, expression) pairs."""

    inputs: list[str]
    forward_dims: list[tuple[str, str]]
    backward_dims: list[tuple[str, str]]
    checks: list[str]
    forward: list[tuple[str, str]]
    forward_result: str
    backward: list[tuple[str, str]]
    results: list[str]
    saved_inputs: list[str]
    saved_intermediates: list[str]
    uses_math: bool = False
    uses_index_backward: bool = False
    gradients_text: list[tuple[str, str, str]] = field(default_factory=list)


def _uses(roots: Sequence[Tensor]) -> Counter:
    uses: Counter = Counter()
    seen: set[int] = set()
    for root in roots:
        for node in topological(root):
            if id(node) in seen:
                continue
            seen.add(id(node))
            for part in node.inputs:
                uses[id(part)] += 1
    return uses


def _shape_checks(inputs: Sequence[Tensor]) -> tuple[list[str], dict]:
    """``if`` statements that reject inputs of the wrong shape, and where each symbolic size is read."""
    checks, sources = [], {}
    for t in inputs:
        expected = format_shape(t.shape)
        checks.append(
            (f"{t.name}.dim() != {len(t.shape)}", f"{t.name} has shape {{tuple({t.name}.shape)}}, expected {expected}")
        )
        for axis, d in enumerate(t.shape):
            here = f"{t.name}.shape[{axis}]"
            if isinstance(d, int):
                checks.append((f"{here} != {d}", f"{t.name} has shape {{tuple({t.name}.shape)}}, expected {expected}"))
            elif d in sources:
                other = sources[d].split(".")[0]
                checks.append(
                    (
                        f"{here} != {sources[d]}",
                        f"{t.name} has shape {{tuple({t.name}.shape)}} and {other} has shape "
                        f"{{tuple({other}.shape)}}: their sizes {d} differ",
                    )
                )
            else:
                sources[d] = here
    lines = [f'if {cond}:\n        raise ValueError(f"{msg}")' for cond, msg in checks]
    return lines, sources


def _dim_lines(sources: dict, statements: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """``k = W.shape[0]`` for the symbolic sizes the statements use."""
    text = " ".join(body for _, body in statements)
    return [
        (str(d), where)
        for d, where in sorted(sources.items(), key=lambda item: str(item[0]))
        if re.search(rf"\b{d}\b", text)
    ]


def plan(output: Tensor, wrt: Sequence[Tensor], inputs: Sequence[Tensor]) -> Plan:
    """Decide which nodes get names, which forward results are saved, and print every statement."""
    names = [check_identifier(t.name, "input name") for t in inputs]
    sizes = [check_identifier(str(d), "dimension name") for d in dims_of([output, *inputs])]
    seen: dict[str, str] = {}
    for name, what in [(n, "input") for n in names] + [(d, "dimension") for d in sizes]:
        normal = unicodedata.normalize("NFKC", name)
        if normal in seen:
            raise SymgradError(f"the {what} name {name!r} is read by Python as the {seen[normal]} name {normal!r}")
        seen[normal] = what
    missing = [leaf for leaf in output.leaves().values() if not any(leaf is t for t in inputs)]
    if missing:
        raise SymgradError(f"the expression uses {missing[0].name!r}, which is not among the inputs")
    for x in wrt:
        if not any(x is t for t in inputs):
            raise SymgradError(f"wrt names {x.name!r}, which is not an input")
    v = symbols_like(output, "grad_output", distinct=True)
    laws = law([output], list(wrt), [v])
    forward_nodes = {id(n): n for n in topological(output)}
    law_nodes: dict[int, Tensor] = {}
    for g in laws:
        for node in topological(g):
            law_nodes.setdefault(id(node), node)
    uses = _uses([output, *laws])
    frontier = set()  # forward values the backward reads
    for key, node in law_nodes.items():
        if key in forward_nodes:
            continue
        frontier |= {id(part) for part in node.inputs if id(part) in forward_nodes}
    frontier |= {id(g) for g in laws if id(g) in forward_nodes}
    checks, sources = _shape_checks(inputs)
    like = names[0]

    def needs_name(node: Tensor, pool: dict, text_of) -> bool:
        if node.op is None or (uniform_constant(node) is not None and not node.shape):
            return False
        if node.op.name in ("full",):
            return False
        return uses[id(node)] > 1 or len(text_of(node)) > MAX_INLINE

    # forward: name shared nodes and the intermediates the backward needs
    names_map: dict[int, str] = {id(t): t.name for t in inputs}
    printer = CodePrinter(names_map, like)
    forward_lines: list[tuple[str, str]] = []
    counter = 0
    intermediates: list[str] = []
    for key, node in forward_nodes.items():
        if node is output or node.op is None:
            continue
        if key in frontier or needs_name(node, forward_nodes, printer.doprint):
            counter += 1
            label = f"t_{counter}"
            forward_lines.append((label, printer.doprint(node)))
            names_map[key] = label
            if key in frontier:
                intermediates.append(label)
    forward_result = printer.doprint(output)
    names_map[id(output)] = "output"

    printer.like = "grad_output"  # new tensors in the backward follow the incoming gradient's dtype and device
    backward_lines: list[tuple[str, str]] = []
    results: list[str] = []
    law_ids = {id(g) for g in laws}
    for key, node in law_nodes.items():
        if key in names_map or node.op is None or key in law_ids:
            continue
        if needs_name(node, law_nodes, printer.doprint):
            counter += 1
            label = f"t_{counter}"
            backward_lines.append((label, printer.doprint(node)))
            names_map[key] = label
    for x, g in zip(wrt, laws):
        text = names_map.get(id(g)) or printer.doprint(g)
        backward_lines.append((f"grad_{x.name}", text))
        results.append(f"grad_{x.name}")
    saved_inputs = [names_map[id(t)] for t in inputs if id(t) in frontier]
    latex = LatexPrinter()
    gradients_text = [(f"grad_{x.name}", TorchPrinter().doprint(g), latex.doprint(g)) for x, g in zip(wrt, laws)]
    return Plan(
        inputs=names,
        forward_dims=_dim_lines(sources, [*forward_lines, ("", forward_result)]),
        backward_dims=_dim_lines(sources, backward_lines),
        checks=checks,
        forward=forward_lines,
        forward_result=forward_result,
        backward=backward_lines,
        results=results,
        saved_inputs=saved_inputs,
        saved_intermediates=intermediates + (["output"] if id(output) in frontier else []),
        uses_math=printer.uses_math,
        uses_index_backward=printer.uses_index_backward,
        gradients_text=gradients_text,
    )


def codegen(
    output: Tensor | Trace,
    wrt: Sequence[Tensor] | None = None,
    *,
    inputs: Sequence[Tensor] | None = None,
    style: str = "function",
    name: str = "Generated",
    expression: str | None = None,
    command: str | None = None,
    parameters: Mapping[str, str] | None = None,
    buffers: Mapping[str, str] | None = None,
) -> str:
    """Python source of a module computing ``output`` and the gradients of ``wrt``.

    ``style="function"`` emits ``forward``, ``vjp`` and ``forward_and_vjp`` (one pass that computes
    the forward values once); ``"autograd_function"`` (or ``"autograd-function"``) adds
    ``class <name>Function(torch.autograd.Function)`` and ``apply``. Given the result of
    :func:`symgrad.trace` instead of a tensor, the gradients are the module's parameters', and the
    module also gets ``class <name>Module(torch.nn.Module)``: a drop-in for the traced model whose
    forward runs the Function with the model's own parameters (``parameters`` and ``buffers`` map
    input names to the model's names, ``fc1.weight``).
    """
    if isinstance(output, Trace):
        traced = output
        leaves = {**traced.parameters, **traced.buffers}
        output = traced.output
        wrt = list(traced.parameters.values()) if wrt is None else wrt
        inputs = [*traced.inputs, *leaves.values()] if inputs is None else inputs
        parameters = {leaf.name: path for path, leaf in traced.parameters.items()}
        buffers = {leaf.name: path for path, leaf in traced.buffers.items()}
        style = "autograd_function"
    if wrt is None:
        raise SymgradError("codegen() needs wrt: the tensors to differentiate with respect to")
    style = style.replace("-", "_")
    if style not in ("function", "autograd_function"):
        raise SymgradError(f"style must be 'function' or 'autograd_function' (or 'autograd-function'), not {style!r}")
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name or ""):
        raise SymgradError(f"module name {name!r} must be a CamelCase identifier")
    inputs = list(inputs) if inputs is not None else list(output.leaves().values())
    p = plan(output, list(wrt), inputs)
    shapes = ", ".join(f"{t.name}: {format_shape(t.shape)}" for t in inputs)
    owned = {**(parameters or {}), **(buffers or {})}
    module_args = [
        f'self.model.get_parameter("{owned[t.name]}")'
        if t.name in (parameters or {})
        else f'self.model.get_buffer("{owned[t.name]}")'
        if t.name in owned
        else t.name
        for t in inputs
    ]
    context = {
        "module_args": module_args if owned and style == "autograd_function" else [],
        "data_inputs": [t.name for t in inputs if t.name not in owned],
        "plan": p,
        "name": name,
        "style": style,
        "expression": _docstring_safe(expression or TorchPrinter().doprint(output)),
        "expression_line": _wrapped(
            "Expression: out = " + _docstring_safe(expression or TorchPrinter().doprint(output)), ""
        ),
        "shapes": _wrapped("Shapes: " + _docstring_safe(shapes), ""),
        "version": __version__,
        "command": _wrapped(_docstring_safe(command or "symgrad.codegen(...)"), "    "),
        "wrt": [x.name for x in wrt],
        "wrt_positions": {x.name: i for i, x in enumerate(inputs) if any(x is w for w in wrt)},
        "gradients": [
            (_wrapped(f"{n} = {_docstring_safe(t)}", "    "), _wrapped(f"LaTeX: {_docstring_safe(lt)}", "    "))
            for n, t, lt in p.gradients_text
        ],
        "vjp_forward": _needed_forward(p),
        "vjp_dims": _dims_for(p, _needed_forward(p) + p.backward),
        "fused_dims": _dims_for(p, [*p.forward, ("", p.forward_result), *p.backward]),
        "dim_names": [d for d, _ in _function_dims(p)],
        "function_dims": _function_dims(p),
        "recompute_inputs": [name for name in _function_saved_inputs(p) if name not in p.saved_inputs],
        "fixed_positions": [str(i) for i, t in enumerate(inputs) if not any(t is x for x in wrt)],
        "recompute": _needed_forward(p),
        "plan_intermediates": [t for t in p.saved_intermediates if t != "output"],
        "saved": _function_saved_inputs(p) + p.saved_intermediates,
        "unpack_inputs": _unpack_targets(p),
        "uses_torch": style == "autograd_function"
        or "torch." in " ".join(body for _, body in [*p.forward, ("", p.forward_result), *p.backward]),
        "backward_returns": [f"grad_{t.name}" if any(t is x for x in wrt) else "None" for t in inputs],
    }
    source = code_environment().get_template("module.py.j2").render(**context)
    source = re.sub(r"\n{4,}", "\n\n\n", source).rstrip() + "\n"  # at most two blank lines, as ruff format keeps
    try:
        compile(source, "<emitted module>", "exec")
    except SyntaxError as error:  # a bug of the emitter: refuse rather than hand out broken code
        raise SymgradError(f"the emitted module is not valid Python ({error.msg}, line {error.lineno})") from None
    return source


def _function_saved_inputs(p: Plan) -> list[str]:
    """The inputs the Function saves: those its backward reads, and those from which a backward under
    ``create_graph=True`` recomputes the forward values it needs (so that autograd can differentiate it)."""
    text = " ".join(body for _, body in _needed_forward(p))
    return [name for name in p.inputs if name in p.saved_inputs or re.search(rf"\b{name}\b", text)]


def _function_dims(p: Plan) -> list[tuple[str, str]]:
    """The sizes the Function's backward reads, in its formulas or in the forward values it recomputes."""
    return _dims_for(p, _needed_forward(p) + p.backward)


def _unpack_targets(p: Plan) -> list[str]:
    """``_, X, _ = inputs``: the inputs setup_context saves or reads sizes from, the rest as ``_``."""
    wanted = set(_function_saved_inputs(p)) | {where.split(".")[0] for _, where in _function_dims(p)}
    if not wanted:
        return []
    return [name if name in wanted else "_" for name in p.inputs]


def _dims_for(p: Plan, statements: list[tuple[str, str]]) -> list[tuple[str, str]]:
    known = dict(p.forward_dims + p.backward_dims)
    text = " ".join(body for _, body in statements)
    return [(d, where) for d, where in sorted(known.items()) if re.search(rf"\b{d}\b", text)]


def _needed_forward(p: Plan) -> list[tuple[str, str]]:
    """The forward statements the backward statements read (directly or through each other)."""
    text = " ".join(body for _, body in p.backward)
    lines = list(p.forward) + ([("output", p.forward_result)] if "output" in p.saved_intermediates else [])
    kept: list[tuple[str, str]] = []
    for label, body in reversed(lines):
        if re.search(rf"\b{label}\b", text):
            kept.append((label, body))
            text += " " + body
    return list(reversed(kept))


def _wrapped(text: str, indent: str, width: int = 110) -> str:
    """A long docstring line folded at spaces, continuation lines indented a further four spaces."""
    import textwrap

    return "\n".join(
        textwrap.wrap(
            text,
            width=width,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def _docstring_safe(text: str) -> str:
    """Text placed inside a raw docstring: one line, no double quote that could end it, and no
    backslash right before the closing quotes."""
    line = " ".join(text.replace('"', "'").split())
    return line + " " if line.endswith("\\") else line


def compile_module(output: Tensor | Trace, wrt: Sequence[Tensor] | None = None, **kwargs) -> ModuleType:
    """The emitted module (see :func:`codegen`), loaded: its source is compiled in memory, no file is written."""
    return load_source(codegen(output, wrt, **kwargs), kwargs.get("name", "Generated"))


_loads = itertools.count(1)


def load_source(source: str, name: str, filename: str | None = None) -> ModuleType:
    """Import emitted source as a module, without a file or a temporary folder.

    The source is registered with :mod:`linecache`, so tracebacks and ``inspect.getsource``
    (which torch.compile uses) see it as if it were a file. Raises SyntaxError for source
    that is not Python.
    """
    filename = filename or f"<symgrad {name}>"
    code = compile(source, filename, "exec")
    module = ModuleType(f"symgrad_emitted_{name.lower()}_{next(_loads)}")
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    sys.modules[module.__name__] = module  # torch looks Functions' modules up by name
    exec(code, module.__dict__)  # symgrad's own emitted code; user text reaches it only as checked identifiers
    module.__symgrad_source__ = source
    return module
