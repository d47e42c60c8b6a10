"""Explanations: what ``backward()`` computes for one expression, as data for the document templates.

Every statement a document makes is derived here for the expression at hand:
the forward entries and the Jacobian (entrywise engine), the contraction vᵀJ
row by row, the two equivalent ways of getting the same gradient (backward of
``(v * out).sum()``, and per-element backward with accumulation), the error
torch raises for an implicit grad, and, for symbolic or large shapes, the
matrix law derived op by op through the chain rule and proved.

>>> import symgrad.derive
>>> from symgrad.core import tensor
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
>>> e = explain(w @ x, [w], expression="torch.mm(w, x)", run_check=False)
>>> e.entrywise.gradients[0].numbers
'\\\\begin{pmatrix} 2 & 4 \\\\end{pmatrix}'
>>> "scalar outputs" in e.implicit_error
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import sympy

from ..core.constructors import fresh_name, symbols_like
from ..core.dims import is_concrete
from ..core.display import formula_states_value, to_number
from ..core.errors import NoDerivativeError, SymgradError, ValuesUnknownError
from ..core.graph import topological
from ..core.latex import ELIDE_AFTER, bar_latex, elided, latex_name, shape_latex, text_latex
from ..core.listing import listing
from ..core.printers import LatexPrinter, TorchPrinter
from ..core.tensor import Tensor
from ..derive.entrywise import vjp
from ..derive.reverse import implicit_grad, law, needed_nodes
from ..derive.simplify import simplify
from ..ops.calculus import NoDerivative
from ..verify.prove import Proof, check_numerically, prove
from ..verify.verify import check
from .derivation import jacobian_report, make_grad_tensor
from .formats import Step
from .graph import Graph, graph
from .inline_picture import svg_data_uri
from .latex import MATRIX_BUDGET, fit_formula_matrix, fit_matrix_latex, formula_latex, latex_width, number_latex
from .naming import intermediate_names, wrt_tensors
from .render import notebook_html, render_explanation

# Jacobians with more cells than this are not derived entry by entry: the document gives the law.
ENTRYWISE_LIMIT = 1024
PER_ELEMENT_LIMIT = 16  # outputs with more entries get the per-element picture from the Jacobian's rows
LANGUAGES = ("en", "zh")


@dataclass
class InputInfo:
    name: str  # LaTeX
    label: str  # escaped for \texttt: the name torch code uses
    shape: str  # LaTeX
    values: str | None  # LaTeX matrix, or None when symbolic
    requires_grad: bool


@dataclass
class GradientEntrywise:
    """The gradient with respect to one input, entry by entry, with the row-by-row picture."""

    name: str  # LaTeX name of the input
    label: str  # \texttt-safe name of the input (for ``w.grad``)
    jacobian: str  # LaTeX matrix (elided)
    jacobian_rows: int
    jacobian_cols: int
    nonzeros: int
    terms: list[str | None]  # v_i · (∂out_i/∂x), elided with None
    formula: str  # LaTeX matrix of the gradient's formulas
    numbers: str | None  # LaTeX matrix of its values
    values: list[float] | None  # the same values, flattened, for tests and JSON
    sum_formula: str  # (v * out).sum() written out
    sum_agrees: bool
    per_element: list[Step | None]  # running totals after each element's backward
    per_element_exact: bool  # True when each step is a real backward of out[i]; False: the Jacobian's rows
    per_element_agrees: bool
    flattened: bool = False  # the input has more than 2 dimensions: matrices show the rest as columns
    code_name: str = ""  # the name as torch code spells it (for prose: each format escapes it itself)


@dataclass
class Entrywise:
    forward: list[Step | None]
    output_values: str | None  # LaTeX matrix of out's values
    grad_tensor: str  # LaTeX matrix of v
    grad_tensor_kind: str  # ones, symbolic, values, given
    gradients: list[GradientEntrywise]


@dataclass
class Law:
    """The matrix law: forward and backward op by op, the simplified results, their proof."""

    forward: list[Step]
    backward: list[Step]
    results: list[Step]
    definitions: list[Step]
    code: list[tuple[str, str]]  # torch spelling: (name, expression)
    grad_tensor: str  # LaTeX name of V, or "" for an implicit 1
    sum_agrees: bool | None  # law of (V * out).sum() proved equal to the VJP law
    proof_lines: list[dict[str, Any]]  # one per proof: kind (exact/torch), sizes, held, entries, methods, difference
    proved: bool | None
    concrete: bool = False  # sizes given: checked against torch at those sizes only


@dataclass
class Explanation:
    expression: str
    lang: str
    inputs: list[InputInfo]
    wrt: list[InputInfo]
    output_shape: str
    output_numel: int | None  # None for symbolic shapes
    implicit_error: str | None  # torch's message when backward() gets no grad_tensor, or None for a scalar
    entrywise: Entrywise | None
    law: Law | None
    check: dict[str, Any] | None = None
    too_big: int | None = None  # Jacobian entries, when too many to show entry by entry
    per_element_call: str = "out[i].backward(v[i], retain_graph=True)"
    wording: str = "explain"  # the templates: explain_body.j2 and explain_<lang>.j2
    picture: str | None = None  # the file name of the graph's drawing, beside the document
    graph: Callable[[], Graph] | None = field(default=None, repr=False, compare=False)  # the graph it explains

    @property
    def failed(self) -> bool:
        """Whether torch or a proof disagrees with the document."""
        return (self.check is not None and not self.check["ok"]) or (self.law is not None and self.law.proved is False)

    @property
    def leads_with_law(self) -> bool:
        """Whether the matrix law comes before the entry-by-entry part (large tensors)."""
        return self.law is not None and self.entrywise is not None

    def _repr_markdown_(self) -> str:
        """The Markdown document, with the graph's picture inside it when Graphviz's dot can draw it."""
        return render_explanation(replace(self, picture=self.picture or svg_data_uri(self.graph)), "md")

    def _repr_html_(self) -> str:
        """The HTML page, as ``explain --format html`` writes it, in an ``<iframe>`` of the notebook."""
        return notebook_html(self)


def input_info(t: Tensor) -> InputInfo:
    values = None
    if (t.symbol_values is not None or t.is_named_constant) and is_concrete(t.shape):
        values = fit_matrix_latex(number_cells(t.values()))
    return InputInfo(latex_name(t.name), text_latex(t.name), shape_latex(t.shape), values, t.requires_grad)


def number_cells(values: np.ndarray) -> np.ndarray:
    flat = [number_latex(v) for v in np.asarray(values, dtype=float).reshape(-1)]
    return np.array(flat, dtype=object).reshape(np.shape(values))


def _entry_latex(name: str, index: tuple[int, ...]) -> str:
    return f"{name}_{{{','.join(map(str, index))}}}" if index else name


def _values_or_none(t: Tensor) -> np.ndarray | None:
    """The numbers (nan where SymPy finds no real value, as ``symgrad derive`` shows it); None when symbolic."""
    try:
        raw = np.asarray(t.values(), dtype=object)
    except ValuesUnknownError:
        return None
    return np.array([to_number(value) for value in raw.reshape(-1)], dtype=float).reshape(raw.shape)


def _implicit_error(output: Tensor) -> str | None:
    """The message symgrad's backward() (which mirrors torch's) raises without a grad_tensor."""
    try:
        implicit_grad(output)
    except SymgradError as error:
        return str(error)
    return None


def _same(a: Any, b: Any) -> bool:
    return all(sympy.expand(sympy.sympify(p) - q) == 0 for p, q in zip(np.ravel(a), np.ravel(b)))


def _grad_tensor_latex(v: Tensor, entries: np.ndarray, kind: str) -> str:
    """``v`` as the document shows it: its numbers when they were given (a float's entry is a symbol standing for
    its value, so that the formulas keep their structure), else its entries."""
    values = _values_or_none(v) if kind == "values" else None
    return fit_matrix_latex(number_cells(values)) if values is not None else fit_formula_matrix(entries)


def _entrywise(output: Tensor, wrt: list[Tensor], v: Tensor, kind: str) -> Entrywise:
    out_entries = output.entries()
    out_values = _values_or_none(output)
    indices = list(np.ndindex(*out_entries.shape)) if out_entries.shape else [()]
    forward: list[Step | None] = []
    for index in elided(indices, 2 * ELIDE_AFTER):
        if index is None:
            forward.append(None)
            continue
        rhs = formula_latex(out_entries[index])
        if out_values is not None and not formula_states_value(out_entries[index], out_values[index]):
            # a simplified number that torch does not compute there (w / w is 1, but nan at w = 0) gets an arrow
            joint = r" \;\to\; " if sympy.sympify(out_entries[index]).is_Number else " = "
            rhs += joint + number_latex(out_values[index])
        forward.append(Step(_entry_latex(r"\mathrm{out}", index), rhs))
    v_entries = v.entries()
    v_flat = list(v_entries.reshape(-1))
    v_cells = v.reshape(-1) if v.shape else v
    gradients = []
    for x in wrt:
        (grad,) = vjp(output, [x], v)
        grad_entries = grad.entries()
        report = jacobian_report(output, x)
        x_shape = x.entries().shape
        rows = _jacobian_rows(report.matrix, x_shape)
        terms: list[str | None] = []
        for i in elided(list(range(len(rows))), ELIDE_AFTER - 2):
            if i is None:
                terms.append(None)
            else:
                weight = sympy.latex(sympy.sympify(v_flat[i]))
                room = MATRIX_BUDGET - latex_width(_factor(weight))
                terms.append(rf"{_factor(weight)} {fit_formula_matrix(rows[i], room)}")
        grad_values = _values_or_none(grad)
        weighted = (v * output).sum()
        (sum_grad,) = vjp(weighted, [x])
        per_element, exact, agrees = _per_element(output, x, v_cells, v_flat, rows, grad_entries)
        gradients.append(
            GradientEntrywise(
                name=latex_name(x.name),
                label=text_latex(x.name),
                code_name=x.name,
                jacobian=fit_formula_matrix(np.array(report.matrix.tolist(), dtype=object)),
                jacobian_rows=report.matrix.rows,
                jacobian_cols=report.matrix.cols,
                nonzeros=len(report.nonzeros),
                terms=terms,
                formula=fit_formula_matrix(grad_entries),
                numbers=fit_matrix_latex(number_cells(grad_values)) if grad_values is not None else None,
                values=[float(g) for g in grad_values.reshape(-1)] if grad_values is not None else None,
                sum_formula=formula_latex(weighted.entries().reshape(-1)[0]),
                sum_agrees=_same(sum_grad.entries(), grad_entries),
                per_element=per_element,
                per_element_exact=exact,
                per_element_agrees=agrees,
                flattened=len(x.shape) > 2,
            )
        )
    return Entrywise(
        forward=forward,
        output_values=fit_matrix_latex(number_cells(out_values)) if out_values is not None else None,
        grad_tensor=_grad_tensor_latex(v, v_entries, kind),
        grad_tensor_kind=kind,
        gradients=gradients,
    )


def _factor(weight: str) -> str:
    """A weight in front of a matrix: bracketed when it is a sum."""
    return rf"\left({weight}\right)" if any(op in weight[1:] for op in "+-") else weight


def _jacobian_rows(matrix: sympy.Matrix, x_shape: tuple[int, ...]) -> list[np.ndarray]:
    """Row i of the Jacobian, ∂out_i/∂x, in x's shape."""
    return [np.array(matrix.row(i).tolist()[0], dtype=object).reshape(x_shape) for i in range(matrix.rows)]


def _per_element(
    output: Tensor, x: Tensor, v_cells: Tensor, weights: list[Any], rows: list[np.ndarray], grad_entries: np.ndarray
) -> tuple[list[Step | None], bool, bool]:
    """Running totals of ``out.flatten()[i].backward(v.flatten()[i], retain_graph=True)`` into ``x.grad``."""
    flat = output.reshape(-1) if output.shape else output
    exact = len(weights) <= PER_ELEMENT_LIMIT
    total = np.zeros(rows[0].shape, dtype=object) if rows else np.array(0, dtype=object)
    steps: list[Step | None] = []
    shown = set(i for i in elided(list(range(len(weights))), ELIDE_AFTER) if i is not None)
    for i, weight in enumerate(weights):
        if exact:
            element = flat[i] if output.shape else flat
            (row,) = vjp(element, [x], v_cells[i] if output.shape else v_cells)
            contribution = row.entries()
        else:
            contribution = rows[i] * weight
        total = total + contribution
        if i in shown:
            steps.append(Step(str(i), fit_formula_matrix(total)))
        elif steps and steps[-1] is not None:
            steps.append(None)
    return steps, exact, _same(total, grad_entries)


def _chain(output: Tensor, wrt: list[Tensor], v: Tensor | None) -> tuple[list[Step], list[Step]]:
    """The forward pass op by op with named intermediates, then the backward pass op by op:
    each intermediate's cotangent (written with a bar) from the VJP rule of the op that used it."""
    needed = needed_nodes([output], wrt)
    order = [n for n in topological(output) if n.op is not None]
    leaves = output.leaves()
    shared = intermediate_names(output)  # the graph's names too
    names = {key: name.latex for key, name in shared.items()}
    bars = {key: name.bar_latex for key, name in shared.items()}
    forward = []
    for node in order:
        inner = LatexPrinter({k: n for k, n in names.items() if k != id(node)})
        forward.append(Step(names[id(node)], inner.doprint(node)))

    def bar(node: Tensor) -> str:
        return bars.get(id(node)) or bar_latex(node.name)

    contributions: dict[int, list[str]] = {}
    backward = [Step(bar(output), latex_name(v.name) if v is not None else "1")]
    printer_names = dict(names)
    for node in reversed(order):
        if id(node) not in needed:
            continue
        g = symbols_like(node, fresh_name("g_bar", leaves), distinct=True)
        printer_names[id(g)] = bar(node)
        pieces = node.op.vjp(g, node, *node.inputs, **node.attrs)
        printer = LatexPrinter(printer_names)
        for part, piece in zip(node.inputs, pieces):
            if piece is None or id(part) not in needed:
                continue
            if isinstance(piece, NoDerivative):
                raise NoDerivativeError(piece.message)
            (piece,) = simplify([piece], context=[output])
            contributions.setdefault(id(part), []).append(printer.doprint(piece))
    for node in [*reversed(order), *wrt]:  # intermediates from the output down, then the inputs
        if node is output or id(node) not in contributions:
            continue
        backward.append(Step(bar(node), " + ".join(contributions.pop(id(node)))))
    return forward, backward


def _law(output: Tensor, wrt: list[Tensor], run_proof: bool, concrete: bool, v_name: str | None = None) -> Law:
    scalar = all(d == 1 for d in output.shape)
    v = None if scalar else symbols_like(output, v_name or fresh_name("V", output.leaves()), distinct=True)
    laws = law(output, wrt, [v] if v is not None else None)
    named = [(f"grad_{x.name}", g) for x, g in zip(wrt, laws)]
    latex_listing = listing(named, forward=[("out", output)], printer=LatexPrinter)
    torch_listing = listing(named, forward=[("out", output)], printer=TorchPrinter)
    results = [Step(bar_latex(x.name), body) for x, (_, body) in zip(wrt, latex_listing.results)]
    forward, backward = _chain(output, wrt, v)
    sum_agrees = None
    proof_lines: list[dict[str, Any]] = []
    proved = None
    if run_proof and concrete:  # sizes too large to prove entry by entry: torch at these sizes only
        numeric = check_numerically([output], wrt, [v], list(laws), {})
        proof_lines, proved = describe_proof(Proof(list(laws), numeric=[numeric])), numeric["held"]
    elif run_proof:
        proof = prove(output, wrt, [v] if v is not None else None, laws=laws)
        proof_lines, proved = describe_proof(proof), proof.held
        if v is not None:
            sum_agrees = prove((v * output).sum(), wrt, laws=laws, numeric=False).held
    return Law(
        forward=forward,
        backward=backward,
        results=results,
        definitions=[Step(n, b) for n, b in latex_listing.definitions],
        code=torch_listing.definitions + torch_listing.results,
        grad_tensor=latex_name(v.name) if v is not None else "",
        sum_agrees=sum_agrees,
        proof_lines=proof_lines,
        proved=proved,
        concrete=concrete,
    )


def _difference_text(error: float) -> str:
    """A float64 rounding difference, stated so that it reads the same on every machine."""
    return "at most 1e-12" if error <= 1e-12 else f"{error:.3g}"


def sizes_math(sizes: dict[str, int]) -> str:
    """``$k_{a} = 3, n = 4$``: sizes as inline math, the same in Markdown and LaTeX ("" for none)."""
    if not sizes:
        return ""
    return "$" + ", ".join(f"{sympy.latex(sympy.Symbol(k))} = {v}" for k, v in sizes.items()) + "$"


def describe_proof(proof: Any) -> list[dict[str, Any]]:
    """The proofs as data for the wording files (which name the methods in their language)."""
    lines = []
    for e in proof.exact:
        lines.append(
            {
                "kind": "exact",
                "sizes": sizes_math(e["sizes"]),
                "held": e["held"],
                "entries": e["entries"],
                "rules": e.get("rules"),  # proved rule by rule: how many VJP rules were checked
                "rewrites": e.get("rewrites"),  # and the simplifier's distinct rewrites, each on its own
                "methods": [(count, method) for method, count in sorted(e["methods"].items())],
            }
        )
    for n in proof.numeric:
        lines.append(
            {
                "kind": "torch",
                "sizes": sizes_math(n["sizes"]),
                "held": n["held"],
                "difference": _difference_text(n["max_abs_error"]),
            }
        )
    return lines


def explain(
    output: Tensor,
    wrt: list[Tensor] | None = None,
    *,
    grad_tensor: Any = None,
    expression: str = "",
    lang: str = "en",
    run_check: bool = True,
) -> Explanation:
    """Everything an explanation document says about ``output``, derived for it.

    ``grad_tensor`` as in :func:`symgrad.report.derive` (``ones`` by default for
    concrete shapes; symbolic shapes use a symbolic ``V``).
    """
    if any(d == 0 for t in [output, *output.leaves().values()] for d in t.shape):
        raise SymgradError(
            "explanations need tensors with at least one entry (a dimension of size 0 was given); "
            "symgrad derive handles empty tensors"
        )
    if lang not in LANGUAGES:
        raise SymgradError(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}")
    leaves = output.leaves()
    targets = wrt_tensors(wrt, leaves) if wrt is not None else [t for t in leaves.values() if t.requires_grad]
    if not targets:
        raise SymgradError("nothing to differentiate: no input requires grad (pass wrt)")
    concrete = all(is_concrete(t.shape) for t in [output, *leaves.values()])
    cells = sum(output.numel() * x.numel() for x in targets) if concrete else None
    entrywise = None
    check = None
    if concrete and cells <= ENTRYWISE_LIMIT:
        v, kind = make_grad_tensor(output, grad_tensor)
        entrywise = _entrywise(output, targets, v, kind)
        if run_check and kind != "symbolic":
            check = _check(output, targets, v)
    big = concrete and (cells > ENTRYWISE_LIMIT or any(d > ELIDE_AFTER for t in leaves.values() for d in t.shape))
    named = grad_tensor if isinstance(grad_tensor, str) and grad_tensor != "ones" and not concrete else None
    law = _law(output, targets, run_proof=run_check, concrete=concrete, v_name=named) if (not concrete or big) else None
    pictured = _pictured_grad_tensor(output, grad_tensor, entrywise is not None)
    return Explanation(
        expression=" ".join((expression or output.name).split()),
        lang=lang,
        inputs=[input_info(t) for t in leaves.values()],
        wrt=[input_info(t) for t in targets],
        output_shape=shape_latex(output.shape),
        output_numel=output.numel() if concrete else None,
        implicit_error=_implicit_error(output),
        entrywise=entrywise,
        law=law,
        check=check,
        too_big=cells if concrete and entrywise is None else None,
        per_element_call=(
            "out[i].backward(v[i], retain_graph=True)"
            if len(output.shape) == 1
            else "out.flatten()[i].backward(v.flatten()[i], retain_graph=True)"
        ),
        graph=lambda: graph(output, targets, grad_tensor=pictured, lang=lang),
    )


def _pictured_grad_tensor(output: Tensor, grad_tensor: Any, entrywise: bool) -> Any:
    """The grad_tensor the document uses, as its picture names it: the one given, else torch's implicit 1 for one
    element, ones for the entries, or the law's symbolic V."""
    if grad_tensor is not None and entrywise:
        return grad_tensor
    if all(d == 1 for d in output.shape):
        return None
    return "ones" if entrywise else fresh_name("V", output.leaves())


def _has_symbolic_entries(output: Tensor) -> bool:
    """Whether some input has no values, so that a check against torch draws random ones for it."""
    return any(t.kind == "symbol" and t.symbol_values is None for t in output.leaves().values())


def _check(output: Tensor, wrt: list[Tensor], v: Tensor) -> dict[str, Any] | None:
    """torch.autograd.backward on the same inputs and grad_tensor (float64), or None without torch
    or values."""
    try:
        report = check(output, inputs=wrt, grad_tensors=v, raise_on_mismatch=False)
    except (ImportError, ValuesUnknownError):
        return None
    error = report.max_abs_error
    return {
        "ok": report.ok,
        "random": _has_symbolic_entries(output),
        "max_abs_error": error,
        "error": r"\le 10^{-12}" if error <= 1e-12 else number_latex(error),
    }
