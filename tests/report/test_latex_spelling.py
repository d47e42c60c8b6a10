"""Every op of the table has its own LaTeX spelling, and no composition gives a double sub- or superscript.

Each op is printed with inputs that already carry scripts (``Y^{\\top}``, ``Y^{2}``, ``Y_{1}``, a named
``Z_{1}``) and composed with transposes, permutes, reshapes, indexing and powers. Every formula is checked
for stacked scripts, parsed by KaTeX, and compiled: one document per language (pdflatex for English,
xelatex with ctex for Chinese), so that the whole table costs two TeX runs.

Ops whose spelling reads attributes (a convolution's geometry, a layer norm's dims) are taken from real
graphs (``_harvest_graphs`` and their laws); any other op is printed as a node of the table with placeholder
attributes, which is all its LaTeX template reads.
"""

from __future__ import annotations

import math
import re
import string
from functools import cache

import pytest
from markdown_math import katex_errors, require_katex
from tools import require_engine

import symgrad as sg
import symgrad.ops
import symgrad.torch as storch
from symgrad import cli
from symgrad.core import OPS, Tensor, symbols, symbols_like, topological
from symgrad.core.printers import LatexPrinter
from symgrad.derive import law
from symgrad.report.tex import compile_pdf

F = storch.nn.functional


def _harvest_graphs() -> list[Tensor]:
    """Real graphs of the ops whose spelling reads their attributes or their inputs' shapes."""
    x3 = symbols("x", (2, 3, 4), requires_grad=True)
    x4 = symbols("x", (2, 3, 4, 4), requires_grad=True)
    m = symbols("m", (3, 3), requires_grad=True)
    w = symbols("w", (3,), requires_grad=True)
    b = symbols("b", (3,), requires_grad=True)
    k = symbols("k", (2, 3, 2), requires_grad=True)
    target = sg.tensor([0, 2], name="t")
    return [
        F.batch_norm(x3, None, None, training=True),
        F.batch_norm(x3, None, None, w, b, training=True),
        F.layer_norm(x3, (4,)),
        F.layer_norm(x3, (4,), symbols("lw", (4,), requires_grad=True), symbols("lb", (4,), requires_grad=True)),
        F.conv1d(x3, k, padding=1),
        F.conv_transpose1d(x3, symbols("kt", (3, 2, 2), requires_grad=True), stride=2),
        F.max_pool2d(x4, 2),
        x3.narrow(2, 1, 2),
        F.pad(x3, (1, 2)),
        F.cross_entropy(m[:2], target),
        F.nll_loss(m[:2], target),
        storch.diagonal(m, offset=1),
        storch.logsumexp(x3, dim=1),
        x3.std(dim=2),
        x3.var(dim=(0, 2)),
        storch.var_mean(x3, dim=1)[1],
        x3.permute(2, 0, 1).reshape(4, 6)[1:, ::2],
        x3.transpose(0, 2).mT,
        F.dropout(x3, 0.5),
        storch.topk(sg.tensor([0.5, 2.0, 1.0], name="u", requires_grad=True), 2).values,
        x3.prod(dim=1),
        storch.cumprod(x3, dim=2),
        x3.amax(dim=1),
        storch.linalg.vector_norm(x3, ord=float("inf"), dim=1),
    ]


@cache
def harvested() -> dict[str, Tensor]:
    """One real node per op, from the graphs above and from their laws (which reach the backward ops)."""
    found: dict[str, Tensor] = {}
    for out in _harvest_graphs():
        leaves = [leaf for leaf in topological(out) if leaf.op is None and leaf.requires_grad]
        cotangent = symbols("g", out.shape, requires_grad=True)
        grads = [g for g in law(out, leaves, [cotangent]) if g is not None]
        try:  # a law's own law reaches max_pool_gather
            second = law(grads[0], [cotangent], [symbols_like(grads[0], "h")])
        except sg.UnsupportedError:  # cumprod's law has no law yet
            second = []
        for root in [out, *grads, *(g for g in second if g is not None)]:
            for node in topological(root):
                if node.op is not None:
                    found.setdefault(node.op.name, node)
    return found


def _inputs_of(template: str) -> int:
    fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    numbered = [int(field) for field in fields if field.isdigit()]
    return max(numbered, default=-1) + 1 if "inputs" not in fields else 2


def _placeholder(op_name: str) -> Tensor:
    """A node of ``op_name`` over ``X`` (2×3), its attributes filled with placeholders as its template asks."""
    op = OPS[op_name]
    attrs: dict = {}
    inputs = tuple(symbols(f"X{i}", (2, 3)) for i in range(_inputs_of(op.latex)))
    for _ in range(10):
        node = Tensor(shape=(2, 3), op=op, inputs=inputs, attrs=dict(attrs))
        try:
            LatexPrinter().doprint(node)
            return node
        except KeyError as missing:  # a field of the template: any printable value shows how it is spelled
            attrs[missing.args[0]] = 1
    raise AssertionError(f"{op_name}: add a real graph of it to _harvest_graphs (its spelling reads {sorted(attrs)})")


def sample(op_name: str) -> Tensor:
    found = harvested().get(op_name)
    return _placeholder(op_name) if found is None else found


def _scripted(shape: tuple) -> list[Tensor]:
    """Inputs of ``shape`` that already carry scripts, or are transposed, reshaped or indexed."""
    numel = math.prod(shape)
    out = [
        symbols("Y", shape) ** 2,  # Y^{2}
        symbols("Y", (2, *shape))[1],  # Y_{1}
        symbols("Y", (numel,)).reshape(*shape) if shape else symbols("Y", (1,)).reshape(()),
    ]
    if len(shape) == 2:
        out += [symbols("Y", shape[::-1]).T, symbols("Y", (2, *shape[::-1])).mT[0], symbols("Y", shape[::-1]).T ** 2]
    if len(shape) >= 3:
        swapped = (*shape[:-2], shape[-1], shape[-2])
        out += [symbols("Y", swapped).mT, symbols("Y", (shape[1], shape[0], *shape[2:])).transpose(0, 1)]
    return out


def _composed(node: Tensor) -> list[Tensor]:
    """``node`` under transposes, permutes, reshapes, indexing and powers."""
    shape = node.shape
    out = [node, node**2, node.reshape(-1)]
    if shape:
        out += [node[0], node[0] ** 2]
    if len(shape) >= 2:
        out += [node.mT, node.transpose(0, 1), node.permute(*reversed(range(len(shape)))), node.mT[0], node.mT**2]
        out += [node.mT.mT, node.reshape(-1, *shape[2:]).mT if len(shape) > 2 else node.T.reshape(-1)]
    return out


def formulas(op_name: str) -> list[str]:
    """The LaTeX of ``op_name`` with scripted inputs, composed with layout ops, and as a named ``Z_{1}``."""
    node = sample(op_name)
    out = []
    for composed in _composed(node):
        out += [LatexPrinter().doprint(composed), LatexPrinter({id(node): "Z_{1}"}).doprint(composed)]
    for position, part in enumerate(node.inputs):
        for scripted in _scripted(part.shape):
            inputs = list(node.inputs)
            inputs[position] = scripted
            variant = Tensor(shape=node.shape, op=node.op, inputs=tuple(inputs), attrs=node.attrs)
            out += [LatexPrinter().doprint(variant), LatexPrinter().doprint(variant**2)]
    return list(dict.fromkeys(out))


@cache
def every_formula() -> dict[str, list[str]]:
    return {name: formulas(name) for name in sorted(OPS)}


# ── stacked scripts, found without the printer's own helper ──────────────────────────────────────────────────
def _group_end(text: str, at: int) -> int:
    depth, i = 0, at
    while i < len(text):
        if text[i] == "\\":  # \{ and \} are characters, not braces
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
        i += 1
    raise AssertionError(f"unbalanced braces in {text!r}")


def stacked_scripts(latex: str) -> list[str]:
    """Places where a script follows a script of the same kind (``X^{a}^{b}``, ``X_{i}_{j}``, ``X^{a}'``), or a
    subscript follows a superscript (``X^{\\top}_{i}``, whose base is ambiguous), at any depth. A prime may
    come first: ``f'_{x}`` and ``f'^{2}`` are one base's scripts."""
    found = []
    i, last = 0, ""  # last: the scripts attached to the current base
    while i < len(latex):
        char = latex[i]
        if char == "\\":
            command = re.match(r"\\([A-Za-z]+|.)", latex[i:]).group()
            i += len(command)
            last = ""
            continue
        if char in "^_'":  # a prime is a superscript that may come before another (f'^{2}, f'_{x}), not after
            if "^" in last or (char == "_" and "_" in last):
                found.append(latex[max(0, i - 30) : i + 10])
            last += char
            i += 1
            if char == "'":
                continue
            while i < len(latex) and latex[i] == " ":
                i += 1
            if latex[i : i + 1] == "{":
                inner_end = _group_end(latex, i)
                found += stacked_scripts(latex[i + 1 : inner_end - 1])
                i = inner_end
            elif latex[i : i + 1] == "\\":
                i += len(re.match(r"\\([A-Za-z]+|.)", latex[i:]).group())
            else:
                i += 1
            continue
        if char == "{":
            end = _group_end(latex, i)
            found += stacked_scripts(latex[i + 1 : end - 1])
            i, last = end, ""
            continue
        last = "" if char != " " or not last else last
        i += 1
    return found


def test_stacked_scripts_finds_what_tex_refuses():
    assert stacked_scripts(r"X^{\top}^{\top}") and stacked_scripts(r"\left(x\right)_{i}_{j}")
    assert stacked_scripts(r"\tanh\left(X^{\top}_{0}\right)") and stacked_scripts(r"X^{2}'")
    assert not stacked_scripts(r"Z_{1}^{\top} + \left(X^{\top}\right)^{2} + \mathrm{w\_1}_{0} + e^{x_{0}} + f'_{x}")


# ── distinct spellings ──────────────────────────────────────────────────────────────────────────────────────
def test_layout_ops_print_distinctly():
    """transpose(i, j), permute, mT, .T and reshape are different ops, and print differently; the same op
    spelt two ways (``.mT`` and ``.transpose(1, 2)`` of a 3-d tensor) prints the same."""
    X, M = symbols("X", (4, 3, 2)), symbols("M", (3, 2))
    printed = {
        "transpose(0, 1)": X.transpose(0, 1),
        "mT": X.mT,
        "transpose(0, 2)": X.transpose(0, 2),
        "permute(2, 0, 1)": X.permute(2, 0, 1),
        "permute(1, 2, 0)": X.permute(1, 2, 0),
        "reshape(4, 6)": X.reshape(4, 6),
        "reshape(6, 4)": X.reshape(6, 4),
        "M.T": M.T,
    }
    latex = {label: LatexPrinter().doprint(t) for label, t in printed.items()}
    assert len(set(latex.values())) == len(latex), latex
    assert latex["M.T"] == "M^{\\top}" and LatexPrinter().doprint(M.permute(1, 0)) == "M^{\\top}"
    assert latex["mT"] == LatexPrinter().doprint(X.transpose(2, 1)) == r"\operatorname{transpose}_{1,2}\left(X\right)"
    assert latex["permute(2, 0, 1)"] == r"\operatorname{permute}_{2,0,1}\left(X\right)"
    assert latex["reshape(4, 6)"] == r"\operatorname{reshape}_{(4,6)}\left(X\right)"
    assert LatexPrinter().doprint(symbols("S", ("n", 3)).reshape(-1)) == r"\operatorname{reshape}_{(3 n)}\left(S\right)"


def test_a_script_on_a_scripted_base_is_bracketed():
    M = symbols("M", (3, 2))
    assert LatexPrinter().doprint(M.T.T) == r"\left(M^{\top}\right)^{\top}"
    assert LatexPrinter().doprint(M.T**2) == r"\left(M^{\top}\right)^{2}"
    assert LatexPrinter().doprint(M.T[0]) == r"\left(M^{\top}\right)_{0}"
    assert LatexPrinter().doprint(M.sum(0, keepdim=True).T) == r"\left(\mathbf{1}^{\top} M\right)^{\top}"
    assert LatexPrinter({id(M): "Z_{1}"}).doprint(M.T) == r"Z_{1}^{\top}"  # a sub- then a superscript is fine


def test_every_op_is_printed():
    assert set(every_formula()) == set(OPS)
    assert all(len(f) >= 3 for f in every_formula().values())


@pytest.mark.parametrize("name", sorted(OPS))
def test_no_op_stacks_scripts(name):
    stacked = {f: stacked_scripts(f) for f in every_formula()[name] if stacked_scripts(f)}
    assert not stacked, stacked


# ── KaTeX and TeX over the whole table ──────────────────────────────────────────────────────────────────────
def test_every_formula_parses_with_katex():
    require_katex()
    labelled = [(name, f) for name, fs in every_formula().items() for f in fs]
    markdown = "\n\n".join(f"$${f}$$" for _, f in labelled)
    assert katex_errors(markdown) == []


def table_document(lang: str) -> tuple[str, dict[int, str]]:
    """Every formula in one document, and the op each source line shows (to name the op TeX stops at)."""
    head = [
        r"\documentclass[UTF8]{ctexart}" if lang == "zh" else r"\documentclass{article}",
        r"\usepackage{amsmath}",
        r"\usepackage{amssymb}",
        r"\begin{document}",
        "每个算子的公式。" if lang == "zh" else "The formulas of every op.",
    ]
    lines, owner = list(head), {}
    for name, fs in every_formula().items():
        for f in fs:
            lines.append(rf"\[ {f} \]")
            owner[len(lines)] = name
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n", owner


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_formula_compiles(lang):
    require_engine(lang)
    source, owner = table_document(lang)
    try:
        pdf = compile_pdf(source, lang)
    except sg.SymgradError as error:
        line = re.search(r"l\.(\d+)", str(error))
        op = owner.get(int(line.group(1))) if line else None
        raise AssertionError(f"op {op!r}: {error}") from None
    assert pdf.startswith(b"%PDF")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_transposed_and_indexed_explanations_build(tmp_path, lang):
    """The issue's case: a batched transpose of a transpose under tanh, as a PDF through the CLI."""
    require_engine(lang)
    out = tmp_path / f"t_{lang}.pdf"
    args = ["explain", "torch.tanh(X.transpose(0, 1).mT[0]).sum()", "--shape", "X=m,3,2", "--wrt", "X"]
    assert cli.main([*args, "--no-graph", "--format", "pdf", "--lang", lang, "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"%PDF")
