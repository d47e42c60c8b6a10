"""A derivation as data: forward entries, Jacobians, the grad_tensor, vᵀJ, and the torch check.

The CLI prints it as text or JSON; explanations render it through templates.

>>> import symgrad.derive
>>> from symgrad.core import tensor
>>> w = tensor([[1.0, 2.0]], requires_grad=True, name="w")
>>> x = tensor([[1.0, 1.0], [2.0, 2.0]], name="x")
>>> result = derive(w @ x, [w], grad_tensor="ones", run_check=False)
>>> result.gradients[0].entries[0].formula
'x_0_0 + x_0_1'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy

from ..core.constructors import fresh_name, symbols_like, tensor
from ..core.dims import format_shape
from ..core.display import formula_states_value, to_number
from ..core.errors import SymgradError, ValuesUnknownError
from ..core.latex import corner_indices, latex_name
from ..core.listing import listing
from ..core.printers import LatexPrinter, TorchPrinter
from ..core.tensor import Tensor, constant
from ..derive.entrywise import sparse_jacobian, vjp
from ..derive.reverse import law
from ..verify.prove import prove
from ..verify.verify import check as torch_check
from .latex import formula_latex, formula_text
from .render import render_markdown


@dataclass
class Entry:
    """One entry: its index, its formula (text and LaTeX) and, when known, its value."""

    index: tuple[int, ...]
    formula: str
    latex: str
    value: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"index": list(self.index), "formula": self.formula, "latex": self.latex, "value": self.value}


JSON_SCHEMA_VERSION = 3
"""The version of ``symgrad derive --format json`` (docs/derive.schema.json); it changes when a field changes
(3: an input's shape is a list of sizes, as every other shape, where it was the printed text)."""


def shape_list(shape: Sequence[Any]) -> list[int | str]:
    """A shape as JSON writes it: numbers where a size is fixed, names where it is symbolic.

    >>> import symgrad as sg
    >>> shape_list((2, *sg.dims("n")))
    [2, 'n']
    """
    return [int(d) if isinstance(d, int) or d.is_Integer else str(d) for d in shape]


def _json_inputs(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inputs as JSON writes them: each shape a list of sizes."""
    return [{**{k: v for k, v in info.items() if k != "dims"}, "shape": info["dims"]} for info in inputs]


SHOWN = 8  # entries (and Jacobian non-zeros) a report writes out by default: the first ones and the last


@dataclass
class TensorReport:
    """A tensor's entries: all of them, or the first ones and the last two of ``count``."""

    name: str
    shape: tuple
    entries: list[Entry]
    latex_name: str = ""
    count: int = 0

    @property
    def elided(self) -> int:
        return self.count - len(self.entries)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "shape": shape_list(self.shape),
            "entries": [e.as_dict() for e in self.entries],
            "count": self.count,
        }


@dataclass
class JacobianReport:
    """The non-zero entries of d output / d input, indexed ``output index + input index``."""

    wrt: str
    shape: tuple
    nonzeros: list[Entry]
    matrix: sympy.Matrix | None  # None when it has more than MATRIX_CELLS cells
    wrt_latex: str = ""
    count: int = 0  # non-zeros in all
    rows: int = 0
    cols: int = 0

    @property
    def elided(self) -> int:
        return self.count - len(self.nonzeros)

    def as_dict(self) -> dict[str, Any]:
        return {
            "wrt": self.wrt,
            "shape": list(self.shape),
            "nonzeros": [e.as_dict() for e in self.nonzeros],
            "count": self.count,
        }


@dataclass
class Derivation:
    expression: str
    inputs: list[dict[str, Any]]
    output: TensorReport
    jacobians: list[JacobianReport]
    grad_tensor: TensorReport
    grad_tensor_kind: str
    gradients: list[TensorReport]
    check: Any = None
    notes: list[str] = field(default_factory=list)

    def _repr_markdown_(self) -> str:
        return render_markdown(self)

    def as_dict(self) -> dict[str, Any]:
        check = None
        if self.check is not None:
            check = {
                "ok": self.check.ok,
                "max_abs_error": self.check.max_abs_error,
                "max_rel_error": self.check.max_rel_error,
                "compared": [c.label for c in self.check.comparisons],
            }
        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "kind": "entrywise",
            "expression": self.expression,
            "inputs": _json_inputs(self.inputs),
            "output": self.output.as_dict(),
            "jacobians": [j.as_dict() for j in self.jacobians],
            "grad_tensor": {"kind": self.grad_tensor_kind, **self.grad_tensor.as_dict()},
            "gradients": [g.as_dict() for g in self.gradients],
            "check": check,
        }


def _value_array(t: Tensor) -> np.ndarray | None:
    try:
        return t.values()
    except ValuesUnknownError:
        return None


MATRIX_CELLS = 1024  # a Jacobian is also built as a matrix up to this many cells


def _shown(count: int, limit: int | None) -> list[int]:
    """Positions written out: all, or the first ``limit - 2`` and the last."""
    if limit is None:
        return list(range(count))
    return [i for i in corner_indices(count, limit) if i is not None]


def _text(expr: sympy.Expr, limit: int | None) -> tuple[str, str]:
    """A formula as text and LaTeX in SymPy's own argument order (sorting long sums is slow); with
    ``limit``, sums longer than that keep their first terms and their last."""
    if limit is None:
        return sympy.sstr(expr, order="none"), sympy.latex(expr, order="none")
    return formula_text(expr, limit), formula_latex(expr, limit)


def tensor_report(
    t: Tensor, name: str | None = None, latex: str | None = None, *, limit: int | None = None
) -> TensorReport:
    """Entries as formulas and numbers; with ``limit``, only that many are written out."""
    entries = t.entries()
    values = _value_array(t)
    out = []
    for position in _shown(entries.size, limit):
        index = tuple(int(i) for i in np.unravel_index(position, entries.shape)) if entries.shape else ()
        expr = sympy.sympify(entries[index])
        value = to_number(values[index]) if values is not None else None
        out.append(Entry(index, *_text(expr, limit), value))
    return TensorReport(name or t.name, t.shape, out, latex or latex_name(name or t.name), entries.size)


def jacobian_report(y: Tensor, x: Tensor, *, limit: int | None = None, found: list | None = None) -> JacobianReport:
    """The non-zeros of d y / d x (``found``: already derived); with ``limit``, only that many are written out."""
    y_shape, x_shape = y.entries().shape, x.entries().shape
    n_out, n_in = int(np.prod(y_shape, dtype=int)), int(np.prod(x_shape, dtype=int))
    found = list(sparse_jacobian(y, x)) if found is None else found
    nonzeros = []
    for position in _shown(len(found), limit):
        o, i, derivative = found[position]
        index = np.unravel_index(o, y_shape) + np.unravel_index(i, x_shape) if y_shape or x_shape else ()
        nonzeros.append(Entry(tuple(int(k) for k in index), *_text(derivative, limit), None))
    matrix = None
    if n_out * n_in <= MATRIX_CELLS:
        matrix = sympy.Matrix(sympy.SparseMatrix(n_out, n_in, {(o, i): d for o, i, d in found}))
    return JacobianReport(x.name, y_shape + x_shape, nonzeros, matrix, latex_name(x.name), len(found), n_out, n_in)


def make_grad_tensor(output: Tensor, spec: str | Tensor | None) -> tuple[Tensor, str]:
    """``ones`` (default), a symbol name such as ``v``, a Tensor, or a nested list of numbers."""
    if isinstance(spec, Tensor):
        return spec, "given"
    if spec is None or spec == "ones":
        return constant(1, shape=output.shape, dtype=output.dtype), "ones"
    if isinstance(spec, str) and spec.isidentifier():
        return symbols_like(output, _grad_tensor_name(spec, output), distinct=True), "symbolic"
    return tensor(spec, name=fresh_name("v", output.leaves()), distinct=True), "values"


def _grad_tensor_name(name: str, output: Tensor) -> str:
    """A symbolic grad_tensor's name, which must not be the name of a tensor of the expression."""
    if name in output.leaves():
        raise SymgradError(
            f"the grad_tensor cannot be called {name!r}: a tensor of the expression has that name; "
            f"choose another, e.g. {fresh_name(name, output.leaves())!r}"
        )
    return name


def derive(
    output: Tensor,
    wrt: list[Tensor],
    *,
    grad_tensor: str | Tensor | None = None,
    expression: str = "",
    run_check: bool = True,
    limit: int | None = None,
) -> Derivation:
    """Everything ``symgrad derive`` shows for ``output`` with respect to ``wrt``; with ``limit``, each
    tensor and Jacobian writes out only that many entries (the first ones and the last two)."""
    output.check_budget()  # refused in milliseconds, before any entry is built
    v, kind = make_grad_tensor(output, grad_tensor)
    jacobians = {id(x): list(sparse_jacobian(output, x)) for x in wrt}  # derived once, used three times
    gradients = vjp(output, wrt, v, jacobians=jacobians)
    inputs = []
    for leaf in output.leaves().values():
        values = leaf.tolist() if leaf.has_values() else None
        inputs.append(
            {
                "name": leaf.name,
                "latex_name": latex_name(leaf.name),
                "shape": format_shape(leaf.shape),
                "dims": shape_list(leaf.shape),
                "values": values,
                "requires_grad": leaf.requires_grad,
            }
        )
    check = None
    if run_check:
        formulas = {id(x): g.entries() for x, g in zip(wrt, gradients, strict=True)}
        check = torch_check(output, inputs=wrt, grad_tensors=v, raise_on_mismatch=False, formulas=formulas)
    return Derivation(
        expression=expression or output.name,
        inputs=inputs,
        output=tensor_report(output, "out", limit=limit),
        jacobians=[jacobian_report(output, x, limit=limit, found=jacobians[id(x)]) for x in wrt],
        grad_tensor=tensor_report(v, "v", limit=limit),
        grad_tensor_kind=kind,
        gradients=[tensor_report(g, f"{x.name}.grad", latex_name(x.name), limit=limit) for g, x in zip(gradients, wrt)],
        check=check,
    )


def _format_index(index: tuple[int, ...]) -> str:
    return ",".join(map(str, index))


def _states(formula: str, value: float) -> bool:
    """Whether the formula text is the number ``value`` itself (``1`` is not nan: ``w / w`` at w = 0)."""
    return _is_number(formula) and formula_states_value(sympy.Float(float(formula)), value)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _gap(count: int, what: str) -> list[str]:
    return [f"  ⋮ ({count} more {what}; --full writes them all)"] if count else []


def _entry_lines(report: TensorReport) -> list[str]:
    lines = []
    for e in report.entries:
        if e.value is None or _states(e.formula, e.value):
            value = ""
        elif _is_number(e.formula):  # simplified past a point torch computes (w / w = 1, but nan at w = 0)
            value = f"  (at these values {e.value:.6g}, as torch computes it)"
        else:
            value = f" = {e.value:.6g}"
        lines.append(f"  {report.name}[{_format_index(e.index)}] = {e.formula}{value}")
    if report.elided:  # the last entry follows the gap
        lines[-1:-1] = _gap(report.elided, "entries")
    return lines


def as_text(d: Derivation, *, max_matrix_columns: int = 12) -> str:
    """The derivation as the CLI prints it."""
    lines = [f"expression: {d.expression}", "inputs:"]
    for info in d.inputs:
        given = info["values"]
        count = int(np.size(np.array(given, dtype=object))) if given is not None else 0
        values = "symbolic" if given is None else f"values {given}" if count <= SHOWN else f"{count} values given"
        grad = ", requires grad" if info["requires_grad"] else ""
        lines.append(f"  {info['name']}: {info['shape']}, {values}{grad}")
    lines += ["", f"forward, entry by entry (out has shape {format_shape(d.output.shape)}):", *_entry_lines(d.output)]
    for j in d.jacobians:
        lines += [
            "",
            f"Jacobian d out / d {j.wrt} (shape {format_shape(j.shape)}; "
            f"{j.count} non-zero entries; rows: out entries, columns: {j.wrt} entries):",
        ]
        if j.matrix is not None and j.cols <= max_matrix_columns and j.rows <= 24:
            lines += ["  " + line for line in sympy.pretty(j.matrix, use_unicode=True).split("\n")]
        else:
            lines += [
                f"  d out[{_format_index(e.index[: len(d.output.shape)])}] / d {j.wrt}"
                f"[{_format_index(e.index[len(d.output.shape) :])}] = {e.formula}"
                for e in j.nonzeros
            ]
            if j.elided:
                lines[-1:-1] = _gap(j.elided, "non-zero entries")
    described = {
        "ones": "ones (as torch.ones_like(out))",
        "symbolic": "symbolic",
        "values": "given values",
        "given": "given",
    }[d.grad_tensor_kind]
    lines += ["", f"grad_tensor v: {described}", *_entry_lines(d.grad_tensor)]
    for g in d.gradients:
        lines += [
            "",
            f"gradient {g.name} = vᵀJ (each entry: Σ over out entries of v · d out / d input):",
            *_entry_lines(g),
        ]
    if d.check is not None:
        lines += ["", str(d.check)]
    return "\n".join(lines)


@dataclass
class LawDerivation:
    """The gradient laws for symbolic shapes, printed as torch code and LaTeX, with their proofs."""

    expression: str
    inputs: list[dict[str, Any]]
    grad_tensor: str
    torch_lines: list[tuple[str, str]]
    latex_lines: list[tuple[str, str]]
    proof: Any = None

    def as_dict(self) -> dict[str, Any]:
        proof = None
        if self.proof is not None:
            proof = {"held": self.proof.held, "exact": self.proof.exact, "numeric": self.proof.numeric}
        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "kind": "law",
            "expression": self.expression,
            "inputs": _json_inputs(self.inputs),
            "grad_tensor": self.grad_tensor,
            "laws": [{"name": n, "torch": t} for n, t in self.torch_lines],
            "latex": [{"name": n, "latex": t} for n, t in self.latex_lines],
            "proof": proof,
        }


def derive_law(
    output: Tensor, wrt: list[Tensor], *, grad_tensor: str | None = None, expression: str = "", run_proof: bool = True
) -> LawDerivation:
    """What ``symgrad derive`` shows for symbolic shapes: the laws, named shared parts, and the proofs."""
    if grad_tensor in (None, "ones"):
        v, described = None, "implicit 1 (scalar output)"
    else:
        v = symbols_like(output, _grad_tensor_name(str(grad_tensor), output), distinct=True)
        described = f"{v.name}: {format_shape(v.shape)} (symbolic)"
    laws = law(output, wrt, [v] if v is not None else None)
    named = [(f"grad_{x.name}", g) for x, g in zip(wrt, laws)]
    forward = [("out", output)]
    torch_listing = listing(named, forward=forward, printer=TorchPrinter)
    latex_listing = listing(named, forward=forward, printer=LatexPrinter)
    inputs = [
        {
            "name": leaf.name,
            "shape": format_shape(leaf.shape),
            "dims": shape_list(leaf.shape),
            "requires_grad": leaf.requires_grad,
        }
        for leaf in output.leaves().values()
    ]
    proof = prove(output, wrt, [v] if v is not None else None, laws=laws) if run_proof else None
    return LawDerivation(
        expression or output.name,
        inputs,
        described,
        torch_listing.definitions + torch_listing.results,
        latex_listing.definitions + latex_listing.results,
        proof,
    )


def law_as_text(d: LawDerivation) -> str:
    lines = [f"expression: {d.expression}", "inputs:"]
    lines += [f"  {i['name']}: {i['shape']}" for i in d.inputs]
    lines += ["", f"grad_tensor: {d.grad_tensor}", "", "gradient laws (they hold for every size):"]
    lines += [f"  {name} = {body}" for name, body in d.torch_lines]
    lines += ["", "LaTeX:"]
    lines += [f"  {name} = {body}" for name, body in d.latex_lines]
    if d.proof is not None:
        lines += ["", f"proof: {'held' if d.proof.held else 'FAILED'}"]
        lines += ["  " + line for line in str(d.proof).split("\n")]
    return "\n".join(lines)
