"""Explanations of ``create_graph=True``: the gradient as a formula that is differentiated again.

For a one-element ``f`` and one input ``x`` the document derives, for the expression at hand:

1. the gradient law ``g(x)`` that ``backward(create_graph=True)`` keeps as a graph;
2. the Hessian ``H = dg/dx`` as a law (:func:`symgrad.derive.second_order.hessian_law`) and, at small
   sizes, entry by entry with SymPy;
3. a second backward with a grad_tensor ``u``: ``torch.autograd.grad(g, x, u)`` gives ``uᵀH``, a weighted
   sum of the Hessian's rows, which is ``H u`` since ``H`` is symmetric: the HVP law;
4. the check against torch's double backward (float64) and the proofs of the laws.

>>> import symgrad as sg
>>> w = sg.tensor([1.0, 2.0], requires_grad=True, name="w")
>>> e = explain_second_order((w * w * w).sum(), [w], run_check=False)
>>> e.hessian_values
[6.0, 0.0, 0.0, 12.0]
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import sympy

from ..core.constructors import fresh_name, symbols_like
from ..core.dims import format_shape, is_concrete
from ..core.display import to_number
from ..core.errors import SymgradError, ValuesUnknownError
from ..core.graph import dims_of, topological_all
from ..core.latex import ELIDE_AFTER, elided, latex_name, matrix_latex, shape_latex
from ..core.printers import LatexPrinter, TorchPrinter
from ..core.tensor import Tensor
from ..derive.jacobians import jacobian_tensor
from ..derive.reverse import law
from ..derive.second_order import hessian_law, hvp_law
from ..verify.curvature import prove_hessian
from ..verify.instances import instantiate
from ..verify.prove import prove
from ..verify.torch_eval import evaluate_graph
from .explanation import LANGUAGES, InputInfo, describe_proof, input_info, number_cells, sizes_math
from .formats import Step
from .graph import Graph, graph
from .inline_picture import svg_data_uri
from .latex import formula_latex, number_latex
from .naming import wrt_tensors
from .render import notebook_html, render_explanation

# Inputs with more entries than this get no entry-by-entry Hessian (its entries grow as the square).
ENTRY_LIMIT = 6


@dataclass
class SecondOrderExplanation:
    """Everything a "What create_graph does" document says, derived for one expression."""

    expression: str
    lang: str
    inputs: list[InputInfo]
    x: InputInfo
    output_shape: str
    tangent: str  # LaTeX name of the second backward's grad_tensor u
    names: tuple[str, str]  # x's and u's names as code (escaped by the format's code_block, not here)
    laws: list[Step]  # shared definitions, then g, H and H u
    code: list[tuple[str, str]]  # the same laws as torch code
    hessian_shape: str  # LaTeX
    entry_sizes: str = ""  # "$d = 2, n = 3$" when entries are shown at sizes chosen for the document
    gradient_entries: list[Step | None] = field(default_factory=list)
    hessian_entries: list[Step | None] = field(default_factory=list)
    symmetric: bool | None = None  # the Hessian's entries equal their transposes (SymPy)
    rows: list[str | None] = field(default_factory=list)  # u_i · (row i of H) in numbers, summing to hvp_numbers
    tangent_kind: str = "symbolic"  # symbolic, ones, values
    tangent_values: str | None = None
    tangent_weights: list[float] | None = None  # u's numbers, flattened
    gradient_numbers: str | None = None
    hessian_numbers: str | None = None
    hvp_numbers: str | None = None
    gradient_values: list[float] | None = None
    hessian_values: list[float] | None = None  # flattened, (numel of x) squared
    hvp_values: list[float] | None = None
    check: dict[str, Any] | None = None  # torch's double backward at the document's values
    proof: list[dict[str, Any]] = field(default_factory=list)  # the Hessian law's proof lines
    proved: bool | None = None
    hvp_proof: list[dict[str, Any]] = field(default_factory=list)  # the HVP law against the gradient's VJP
    hvp_proved: bool | None = None
    concrete: bool = True
    flattened: bool = False  # x has more than one dimension: H is shown as a (numel × numel) matrix
    wording: str = "explain_second_order"  # the templates' wording files, explain_second_order_<lang>.j2
    picture: str | None = None  # the file name of the graph's drawing, beside the document
    graph: Callable[[], Graph] | None = field(default=None, repr=False, compare=False)  # the graph it explains

    @property
    def failed(self) -> bool:
        """Whether torch or a proof disagrees with the document."""
        return (self.check is not None and not self.check["ok"]) or self.proved is False or self.hvp_proved is False

    def _repr_markdown_(self) -> str:
        """The Markdown document, with the graph's picture inside it when Graphviz's dot can draw it."""
        return render_explanation(replace(self, picture=self.picture or svg_data_uri(self.graph)), "md")

    def _repr_html_(self) -> str:
        """The HTML page, as ``explain --format html`` writes it, in an ``<iframe>`` of the notebook."""
        return notebook_html(self)


def _second(torch: Any, g: Any, x: Any, u: Any = None) -> Any:
    """torch's second backward of ``g`` (with ``u``), or zeros when ``g`` is a constant (the gradient of a linear
    function, where torch.autograd.grad refuses and torch.autograd.functional.hessian gives 0)."""
    if not g.requires_grad:
        return torch.zeros_like(x)
    return torch.autograd.grad(g, x, u, retain_graph=True, materialize_grads=True)[0]


def _one_element(f: Tensor) -> None:
    if not all(isinstance(d, int) and d == 1 for d in f.shape):
        raise SymgradError(
            f"create_graph explains the Hessian of a one-element output; this one has shape {format_shape(f.shape)}: "
            "reduce it first (.sum(), .mean())"
        )


def _laws(f: Tensor, x: Tensor, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    scalar = f.reshape(()) if f.shape else f
    (g,) = law(scalar, [x])
    return g, hessian_law(scalar, x), hvp_law(scalar, x, u)[0]


def _listings(x: Tensor, g: Tensor, h: Tensor, hv: Tensor, u: Tensor) -> tuple[list[Step], list]:
    """The three laws written out in full (a shared σ(Xw) reads better inline than as a named t1)."""
    name = latex_name(x.name)
    lhs = [f"g({name})", "H", f"H {latex_name(u.name)}"]
    steps = [Step(s, LatexPrinter().doprint(t)) for s, t in zip(lhs, (g, h, hv))]
    code = [(f"{kind}_{x.name}", TorchPrinter().doprint(t)) for kind, t in zip(("grad", "hessian", "hvp"), (g, h, hv))]
    return steps, code


def _entries(f: Tensor, x: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The gradient's entries and the Hessian's, (numel × numel), as SymPy formulas."""
    scalar = f.reshape(()) if f.shape else f
    (g,) = law(scalar, [x], simplified=False)
    n = x.numel()
    return g.entries().reshape(-1), jacobian_tensor(g, x).entries().reshape(n, n)


def _entry_steps(name: str, cells: np.ndarray, triangle: bool = False) -> list[Step | None]:
    """``name_{i,j} = …`` for each entry, a sum written one term per line so that long entries fit the page."""
    if cells.ndim == 1:
        indices = [(i,) for i in range(len(cells))]
    else:
        indices = [(i, j) for i in range(cells.shape[0]) for j in range(cells.shape[1]) if not triangle or i <= j]
    steps: list[Step | None] = []
    for index in elided(indices, 2 * ELIDE_AFTER):
        if index is None:
            steps.append(None)
            continue
        expr = sympy.sympify(cells[index])
        terms = list(sympy.Add.make_args(expr)) if isinstance(expr, sympy.Add) else [expr]
        lhs = f"{name}_{{{','.join(map(str, index))}}}"
        for position, term in enumerate(elided(terms, ELIDE_AFTER)):
            if term is None:
                steps.append(Step("", r"\quad + \cdots"))
            elif position == 0:
                steps.append(Step(lhs, formula_latex(term)))
            elif term.could_extract_minus_sign():
                steps.append(Step("", r"\quad - " + formula_latex(-term)))
            else:
                steps.append(Step("", r"\quad + " + formula_latex(term)))
    return steps


def _floats(cells: np.ndarray, values: dict) -> np.ndarray:
    """The entries' numbers (nan where SymPy finds no real value, as the first-order documents show it)."""
    return np.array([to_number(sympy.sympify(c).subs(values)) for c in cells.reshape(-1)], dtype=float).reshape(
        cells.shape
    )


def _leaf_values(f: Tensor) -> dict | None:
    """SymPy substitutions for every entry of every input, or None when some input has no values."""
    subs: dict = {}
    for leaf in f.leaves().values():
        if leaf.symbol_values is None:
            return None
        try:
            values = np.asarray(leaf.values(), dtype=float).reshape(-1)
        except ValuesUnknownError:
            return None
        for entry, value in zip(leaf.entries().reshape(-1), values):
            if isinstance(entry, sympy.Symbol):
                subs[entry] = sympy.Float(value)
    return subs


def _tangent(x: Tensor, spec: Any, f: Tensor) -> tuple[Tensor, str, list[float] | None]:
    """The second backward's grad_tensor u (a symbol of x's shape), its kind, and its numbers if it has any."""
    taken = f.leaves()
    if isinstance(spec, str) and spec != "ones":
        if not spec.isidentifier():
            raise SymgradError(f"the grad_tensor {spec!r} is neither ones, a name, nor a list of numbers")
        if spec in taken:
            raise SymgradError(f"the grad_tensor cannot be called {spec!r}: a tensor of the expression has that name")
        return symbols_like(x, spec, distinct=True), "symbolic", None
    u = symbols_like(x, fresh_name("u", taken), distinct=True)
    if not is_concrete(x.shape) or not all(is_concrete(t.shape) for t in taken.values()):
        if spec is not None and spec != "ones":
            raise SymgradError("with symbolic shapes the second backward's grad_tensor is symbolic: give a name")
        return u, "symbolic", None  # the laws hold for every u
    if spec is None or spec == "ones":
        return u, "ones", [1.0] * x.numel()
    values = np.asarray(spec, dtype=float).reshape(-1)
    if not is_concrete(x.shape) or values.size != x.numel():
        raise SymgradError(
            f"the second backward's grad_tensor has {values.size} entries; {x.name} has shape {format_shape(x.shape)}"
        )
    return u, "values", [float(v) for v in values]


def explain_second_order(
    output: Tensor,
    wrt: list[Tensor] | None = None,
    *,
    grad_tensor: Any = None,
    expression: str = "",
    lang: str = "en",
    run_check: bool = True,
) -> SecondOrderExplanation:
    """What ``backward(create_graph=True)`` and a second backward compute for the one-element ``output``.

    ``wrt`` names one input ``x``. ``grad_tensor`` is ``u``, the grad_tensor of the second backward
    ``torch.autograd.grad(g, x, u)``: ``ones`` (the default), a symbol name, or a list of numbers.
    """
    if lang not in LANGUAGES:
        raise SymgradError(f"unknown language {lang!r}: choose one of {', '.join(LANGUAGES)}")
    _one_element(output)
    leaves = output.leaves()
    targets = wrt_tensors(wrt, leaves) if wrt is not None else [t for t in leaves.values() if t.requires_grad]
    if len(targets) != 1:
        names = ", ".join(t.name for t in targets) or "none"
        raise SymgradError(
            f"create_graph explains the Hessian with respect to one input (got: {names}); pass --wrt NAME"
        )
    (x,) = targets
    if any(d == 0 for t in leaves.values() for d in t.shape):
        raise SymgradError(
            "explanations need tensors with at least one entry (a dimension of size 0 was given); "
            "symgrad derive handles empty tensors"
        )
    u, kind, weights = _tangent(x, grad_tensor, output)
    g, h, hv = _laws(output, x, u)
    steps, code = _listings(x, g, h, hv, u)
    concrete = all(is_concrete(t.shape) for t in leaves.values())
    e = SecondOrderExplanation(
        expression=" ".join((expression or output.name).split()),
        lang=lang,
        inputs=[input_info(t) for t in leaves.values()],
        x=input_info(x),
        output_shape=shape_latex(output.shape),
        tangent=latex_name(u.name),
        names=(x.name, u.name),
        laws=steps,
        code=code,
        hessian_shape=shape_latex((*x.shape, *x.shape)),
        tangent_kind=kind,
        concrete=concrete,
        flattened=len(x.shape) > 1,
        # u, not v, is the grad_tensor one order up: the picture shows the 1
        graph=lambda: graph(output, [x], lang=lang),
    )
    small_f, small_x = output, x
    if not concrete:
        sizes = {d: 2 for d in dims_of([output])}  # the smallest sizes whose entries still show the pattern
        made = instantiate([output, x], sizes)
        small_f, small_x = made[id(output)], made[id(x)]
        e.entry_sizes = sizes_math({str(k): v for k, v in sizes.items()})
    if small_x.numel() <= ENTRY_LIMIT:
        _entrywise(e, small_f, small_x, weights)
    if run_check:
        _prove(e, output, x, u, g, h, hv)
        if e.gradient_values is not None:
            e.check = _double_backward(output, x, e)
        elif concrete:
            e.check = _double_backward(output, x, e, random_values=True, laws=(g, h, hv, u))
    return e


def _entrywise(e: SecondOrderExplanation, f: Tensor, x: Tensor, numbers: list[float] | None) -> None:
    """The gradient's and the Hessian's entries; with the inputs' values and u's numbers, their numbers and
    ``uᵀH`` row by row."""
    gradient, hessian = _entries(f, x)
    e.gradient_entries = _entry_steps("g", gradient)
    e.hessian_entries = _entry_steps("H", hessian, triangle=True)
    e.symmetric = all(sympy.expand(hessian[i, j] - hessian[j, i]) == 0 for i, j in np.ndindex(*hessian.shape) if i < j)
    if not e.concrete:
        return  # at sizes chosen for the document there are no numbers
    if numbers is not None:
        e.tangent_values = matrix_latex(number_cells(np.array(numbers)[None, :]))
        e.tangent_weights = numbers
    values = _leaf_values(f)
    if values is None:
        return  # without the inputs' values each row of uᵀH is a long formula: the law says it better
    grad_numbers = _floats(gradient, values)
    hessian_numbers = _floats(hessian, values)
    e.gradient_values = [float(v) for v in grad_numbers]
    e.hessian_values = [float(v) for v in hessian_numbers.reshape(-1)]
    e.gradient_numbers = matrix_latex(number_cells(grad_numbers[None, :]))
    e.hessian_numbers = matrix_latex(number_cells(hessian_numbers))
    if numbers is not None:
        hvp_numbers = np.array(numbers) @ hessian_numbers
        e.hvp_values = [float(v) for v in hvp_numbers]
        e.hvp_numbers = matrix_latex(number_cells(hvp_numbers[None, :]))
        e.rows = _rows(number_cells(hessian_numbers), numbers)


def _rows(cells: np.ndarray, weights: list[float]) -> list[str | None]:
    """``u_i · (row i of H)``, one term per row (a weight of 1 left out), elided for many rows."""
    terms: list[str | None] = []
    for i in elided(list(range(len(weights))), ELIDE_AFTER - 2):
        if i is None:
            terms.append(None)
            continue
        row = matrix_latex(cells[i : i + 1, :])
        weight = number_latex(weights[i])
        terms.append(row if weight == "1" else rf"{_factor(weight)} {row}")
    return terms


def _factor(weight: str) -> str:
    return rf"\left({weight}\right)" if any(op in weight[1:] for op in "+-") or weight.startswith("-") else weight


def _prove(e: SecondOrderExplanation, f: Tensor, x: Tensor, u: Tensor, g: Tensor, h: Tensor, hv: Tensor) -> None:
    """Both laws proved: exactly at small distinct sizes against SymPy, and numerically against torch."""
    if e.concrete and x.numel() > ENTRY_LIMIT:
        return  # the exact proof would derive every entry at these sizes: the torch check covers it
    scalar = f.reshape(()) if f.shape else f
    sizes = [{}] if e.concrete else None  # concrete shapes: exact once, at their own sizes
    hessian = prove_hessian(scalar, x, h, sizes=sizes)
    e.proof, e.proved = describe_proof(hessian), hessian.held
    second = prove(g, [x], [u], laws=[hv], sizes=sizes)
    e.hvp_proof, e.hvp_proved = describe_proof(second), second.held


def _double_backward(
    f: Tensor,
    x: Tensor,
    e: SecondOrderExplanation,
    *,
    random_values: bool = False,
    laws: tuple[Tensor, Tensor, Tensor, Tensor] | None = None,
) -> dict[str, Any] | None:
    """torch's double backward (float64) against the document: at the inputs' values (the numbers the
    document shows), or, for large concrete shapes, the laws at random values."""
    try:
        import torch
    except ImportError:
        return None
    rng = random.Random(0)
    numbers: dict[Tensor, np.ndarray] = {}
    roots = [f, x] + (list(laws) if laws is not None else [])
    for node in topological_all(roots):
        if node.kind != "symbol" or node in numbers:
            continue
        if random_values:
            size = int(np.prod(node.shape, dtype=int))
            numbers[node] = np.array([rng.uniform(0.25, 1.5) for _ in range(size)]).reshape(node.shape)
        else:
            numbers[node] = np.asarray(node.values(), dtype=float).reshape(node.shape)
    made = evaluate_graph(torch, [f, x], numbers, {}, {id(x)})
    x_t, out = made[id(x)], made[id(f)].reshape(())
    (grad,) = torch.autograd.grad(out, x_t, create_graph=True)
    rows = [_second(torch, entry, x_t) for entry in grad.reshape(-1)]
    n = x_t.numel()
    hessian = torch.stack([r.reshape(-1) for r in rows]).reshape(n, n)
    if random_values:
        assert laws is not None
        g, h, hv, u = laws
        u_t = torch.tensor(numbers[u], dtype=torch.float64)
        product = _second(torch, grad, x_t, u_t)
        ours = evaluate_graph(torch, [g, h, hv], numbers, {}, set())
        pairs = [(ours[id(g)], grad), (ours[id(h)].reshape(n, n), hessian), (ours[id(hv)], product)]
    else:
        pairs = [
            (torch.tensor(e.gradient_values, dtype=torch.float64), grad.reshape(-1)),
            (torch.tensor(e.hessian_values, dtype=torch.float64).reshape(n, n), hessian),
        ]
        if e.tangent_weights is not None:  # a symbolic u has no numbers to check
            u_t = torch.tensor(e.tangent_weights, dtype=torch.float64).reshape(x_t.shape)
            product = _second(torch, grad, x_t, u_t)
            pairs.append((torch.tensor(e.hvp_values, dtype=torch.float64), product.reshape(-1)))
    worst = max(_difference(a.detach().reshape(-1), b.detach().reshape(-1)) for a, b in pairs)
    scale = max(1.0, *(float(b.detach().nan_to_num(0.0).abs().max()) for _, b in pairs))
    return {
        "ok": worst <= 1e-9 * scale,
        "max_abs_error": worst,
        "error": r"\le 10^{-12}" if worst <= 1e-12 else number_latex(worst),
        "random": random_values,
        "hvp": len(pairs) == 3,  # the second backward was checked too (u has numbers)
    }


def _difference(ours: Any, theirs: Any) -> float:
    """The largest difference, where nan matches nan (both have no real value there) and nothing else."""
    both = ours.isnan() & theirs.isnan()
    gap = (ours - theirs).abs().masked_fill(both, 0.0).nan_to_num(float("inf"), float("inf"), float("inf"))
    return float(gap.max()) if gap.numel() else 0.0
