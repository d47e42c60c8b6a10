"""Emit second-order code: ``hvp`` (Hessian-vector products) or ``hessian`` modules from the laws of
:mod:`symgrad.derive.second_order`.

An HVP module computes H·v at about the cost of one gradient and never builds H; a Hessian module
returns H with torch's layout (``x.shape + x.shape``; for several inputs, the nested tuple
``torch.autograd.functional.hessian`` returns).

>>> import symgrad as sg
>>> n = sg.dims("n")[0]
>>> A, x = sg.symbols("A", (n, n)), sg.symbols("x", (n,), requires_grad=True)
>>> source = curvature_codegen(x @ A @ x, [x], inputs=[A, x], style="hvp", name="Quadratic")
>>> "hvp_x = (A + A.T) @ v_x" in source
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.constructors import symbols_like
from ..core.dims import format_shape
from ..core.errors import SymgradError
from ..core.graph import dims_of, topological_all
from ..core.printers import LatexPrinter, TorchPrinter, tuple_text
from ..core.tensor import Tensor
from ..derive.reverse import law
from ..derive.second_order import hessian_law, hvp_law
from ..derive.simplify import simplify
from ..version import __version__
from .code_names import code_names, renamed
from .code_text import (
    CodePrinter,
    check_class_name,
    docstring_safe,
    wrapped,
)
from .formatting import formatted
from .shape_checks import dim_lines, shape_checks
from .statements import count_uses, name_statements
from .templates import code_environment

STYLES = ("hvp", "hessian", "newton")


@dataclass
class Function:
    """One emitted function: its arguments, statements and result names (statements as (name, text))."""

    name: str
    arguments: list[str]
    summary: str
    dims: list[tuple[str, str]]
    statements: list[tuple[str, str]]
    returns: str


def _function(
    name: str,
    summary: str,
    arguments: Sequence[Tensor],
    results: Sequence[tuple[str, Tensor]],
    sources: dict,
    like: str,
    returns: str,
) -> tuple[Function, CodePrinter]:
    """Statements computing ``results`` from ``arguments``: shared nodes named once, long ones split."""
    names = {id(t): t.name for t in arguments}
    printer = CodePrinter(names, like, fused=True)  # torch's fused kernels, as the first-order code runs them
    roots = [r for _, r in results]
    uses = count_uses(roots)
    skip = {id(r) for r in roots}
    statements, _ = name_statements(topological_all(roots), names, printer, uses, 0, skip)
    for label, root in results:
        statements.append((label, names.get(id(root)) or printer.doprint(root)))
    return Function(
        name, [t.name for t in arguments], summary, dim_lines(sources, statements), statements, returns
    ), printer


def _second_order_laws(f: Tensor, wrt: Sequence[Tensor], tangents: Sequence[Tensor], style: str) -> list:
    """``(label, law)`` for each H·v (style ``"hvp"``) or Hessian block, derived once and not yet simplified:
    ``hvp_<x>``, or ``hessian_<x>`` for one input and ``hessian_<a>_<b>`` for each pair of several."""
    if style == "hvp":
        return list(zip([f"hvp_{x.name}" for x in wrt], hvp_law(f, wrt, tangents, simplified=False)))
    blocks = hessian_law(f, wrt if len(wrt) > 1 else wrt[0], simplified=False)
    if isinstance(blocks, Tensor):
        return [(f"hessian_{wrt[0].name}", blocks)]
    return [(f"hessian_{a.name}_{b.name}", blocks[i][j]) for i, a in enumerate(wrt) for j, b in enumerate(wrt)]


def _simplified(laws: list, f: Tensor, style: str, *, exact: bool) -> list:
    """``laws`` simplified as hvp_law (together) or hessian_law (block by block) simplifies them. A Hessian drops
    the identity of its basis even where ``exact``: at an infinite input torch's own Hessians disagree with each
    other (see :mod:`symgrad.derive.identities`), so there is no one value of torch's to keep."""
    labels = [label for label, _ in laws]
    if style == "hvp":
        return list(zip(labels, simplify([law for _, law in laws], context=[f], exact=exact)))
    return [(label, simplify([block], context=[f], exact=exact, keep_identities=False)[0]) for label, block in laws]


def _newton_step(
    x: Tensor, inputs: Sequence[Tensor], gradient: Tensor, hessian: Tensor, sources: dict, like: str
) -> tuple[Function, CodePrinter]:
    """``newton_step``: the gradient and the Hessian from one set of statements (what they share computed once),
    then one solve with the Hessian as a (k, k) matrix, k the number of entries of ``x``."""
    grad, block, step = f"grad_{x.name}", f"hessian_{x.name}", f"step_{x.name}"
    # simplified together, so that what both read (sigmoid(X @ w)) is one node, computed once
    gradient, hessian = simplify([gradient, hessian], exact=True, keep_identities=False)
    fn, printer = _function(
        "newton_step",
        f"{step} = H⁻¹ ∇out for {x.name} (the Newton update is {x.name} - {step})",
        inputs,
        [(grad, gradient), (block, hessian)],
        sources,
        like,
        step,
    )
    flat = "" if len(x.shape) == 1 else ".reshape(-1)"
    matrix = "" if len(x.shape) == 1 else f".reshape({x.name}.numel(), {x.name}.numel())"
    shaped = "" if len(x.shape) == 1 else f".reshape({x.name}.shape)"
    if not x.shape:  # one number: the step is a quotient
        fn.statements.append((step, f"{grad} / {block}"))
    else:
        fn.statements.append((step, f"torch.linalg.solve({block}{matrix}, {grad}{flat}){shaped}"))
    return fn, printer


def curvature_codegen(
    f: Tensor,
    wrt: Sequence[Tensor],
    *,
    inputs: Sequence[Tensor] | None = None,
    style: str = "hvp",
    name: str = "Generated",
    expression: str | None = None,
    command: str | None = None,
) -> str:
    """Python source of a module with ``forward``, ``gradient`` and ``hvp`` (style ``"hvp"``: one tangent
    ``v_<x>`` per input of ``wrt``) or ``hessian`` (style ``"hessian"``), for a one-element ``f``. Style
    ``"newton"`` (one input in ``wrt``) adds ``newton_step``: ``H⁻¹ ∇f`` from one pass that computes the gradient
    and the Hessian together and one ``torch.linalg.solve`` (the update is ``x - newton_step(...)``)."""
    if style not in STYLES:
        raise SymgradError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    check_class_name(name)
    wrt = list(wrt)
    if not wrt:
        raise SymgradError(f"--style {style} needs at least one input to differentiate with respect to")
    if style == "newton" and len(wrt) != 1:
        raise SymgradError(f"--style newton takes one input to differentiate with respect to, not {len(wrt)}")
    if not all(isinstance(d, int) and d == 1 for d in f.shape):
        raise SymgradError(
            f"style {style!r} needs a one-element output (a loss); this one has shape {format_shape(f.shape)}: "
            "reduce it first (.sum(), .mean())"
        )
    inputs = list(inputs) if inputs is not None else list(f.leaves().values())
    missing = [leaf.name for leaf in f.leaves().values() if not any(leaf is t for t in inputs)]
    if missing:
        raise SymgradError(f"the expression uses {missing[0]!r}, which is not among the inputs")
    for x in wrt:
        if not any(x is t for t in inputs):
            raise SymgradError(f"wrt names {x.name!r}, which is not an input")
    renames = code_names(inputs, dims_of([f, *inputs]), class_name=name)
    if renames.inputs or renames.sizes:  # the user's names that the code writes otherwise (see code_names)
        rebuilt, _ = renamed([f, *inputs, *wrt], renames)
        f, inputs, wrt = rebuilt[0], rebuilt[1 : 1 + len(inputs)], rebuilt[1 + len(inputs) :]
    tangents = [symbols_like(x, f"v_{x.name}", distinct=True) for x in wrt]

    checks, _ = shape_checks(inputs)
    every_check, sources = shape_checks([*inputs, *tangents] if style == "hvp" else inputs)
    tangent_checks = every_check[len(checks) :]  # the inputs' own checks come first
    expression_text = docstring_safe(expression or TorchPrinter().doprint(f))
    like = wrt[0].name  # new tensors take the dtype and device of a differentiated (floating) input
    forward, forward_printer = _function(
        "forward", f"out = {expression_text}", inputs, [("out", f)], sources, like, "out"
    )
    # the code is printed from laws simplified exactly (every IEEE value kept, as torch's double backward keeps
    # them); the docstring shows the laws as a person writes them
    gradients = law(f.reshape(()) if f.shape else f, wrt, exact=True)
    grad_names = [f"grad_{x.name}" for x in wrt]
    gradient, gradient_printer = _function(
        "gradient",
        f"{tuple_text(grad_names)}: the gradient of out",
        inputs,
        list(zip(grad_names, gradients)),
        sources,
        like,
        tuple_text(grad_names),
    )
    derived = _second_order_laws(f, wrt, tangents, "hvp" if style == "hvp" else "hessian")  # simplified two ways
    results = _simplified(derived, f, style, exact=True)
    readable = _simplified(derived, f, style, exact=False)
    if style == "hvp":
        labels = [label for label, _ in results]
        against = ", ".join(x.name for x in wrt)
        summary = f"{tuple_text(labels)}: the Hessian of out with respect to {against}, times the tangents"
        second, printer = _function("hvp", summary, [*inputs, *tangents], results, sources, like, tuple_text(labels))
    else:
        if len(wrt) == 1:
            returns = results[0][0]
        else:
            rows = [tuple_text([f"hessian_{a.name}_{b.name}" for b in wrt]) for a in wrt]
            returns = tuple_text(rows)
        summary = "H, with torch's layout (x.shape + x.shape" + (
            ")" if len(wrt) == 1 else "; H[i][j] = d/dx_j df/dx_i)"
        )
        second, printer = _function("hessian", summary, inputs, results, sources, like, returns)
    newton = None
    if style == "newton":
        newton = _newton_step(wrt[0], inputs, gradients[0], results[0][1], sources, like)

    torch_text, latex = TorchPrinter(), LatexPrinter()
    formulas = [
        (
            wrapped(f"{label} = {docstring_safe(torch_text.doprint(r))}", "    "),
            wrapped(f"LaTeX: {docstring_safe(latex.doprint(r))}", "    "),
        )
        for label, r in readable
    ]
    functions = [forward, gradient, second] + ([newton[0]] if newton else [])
    printers = [forward_printer, gradient_printer, printer] + ([newton[1]] if newton else [])
    body = " ".join(text for fn in functions for _, text in fn.statements)
    shapes = ", ".join(f"{t.name}: {format_shape(t.shape)}" for t in inputs)
    source = (
        code_environment()
        .get_template("second_order.py.j2")
        .render(
            version=__version__,
            command=wrapped(docstring_safe(command or "symgrad.codegen(...)"), "    "),
            expression_line=wrapped(f"Expression: out = {expression_text}", ""),
            shapes=wrapped("Shapes: " + docstring_safe(shapes), "")
            + (f"\n{wrapped(docstring_safe(renames.note()), '')}" if renames.note() else ""),
            style=style,
            tangents=[v.name for v in tangents],
            formulas=formulas,
            checks=checks,
            tangent_checks=tangent_checks,
            inputs=[t.name for t in inputs],
            functions=functions,
            uses_math=any(p.uses_math for p in printers),
            helpers=sorted(set().union(*(p.helpers for p in printers))),
            aten_kernels=sorted(set().union(*(p.aten_kernels for p in printers))),
            uses_torch="torch." in body,
        )
    )
    source = re.sub(r"\n{4,}", "\n\n\n", source).rstrip() + "\n"
    try:
        compile(source, "<emitted module>", "exec")
    except SyntaxError as error:  # a bug of the emitter: refuse rather than hand out broken code
        raise SymgradError(f"the emitted module is not valid Python ({error.msg}, line {error.lineno})") from None
    return formatted(source)
