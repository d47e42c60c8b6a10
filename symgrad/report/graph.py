"""Pictures of the computation graph, each edge labelled with its local VJP rule.

:func:`graph` walks the graph below a tensor in the order it was built: leaves show their name and
shape, ops their name (as torch spells it), shape and definition, and each edge, from an input to the
op that uses it, the bar of the input in terms of the bar of the op's output. The rule is the op
table's own VJP rule, applied to stand-ins named after the nodes (so it reads locally) and printed
with the torch printer. Tensors that require grad (or are in ``wrt``) are filled; the output gets one
more node, the grad_tensor ``v``, which feeds ``o̅u̅t̅`` back. Intermediates are named as the explanation's text
names them (``Z₁``, ``Z₂``, …, ``out``; see :mod:`.naming`). The picture is Graphviz DOT text
(``.source``, the same bytes in every run); ``dot`` draws it as SVG, PNG or PDF.

>>> import symgrad as sg
>>> import symgrad.torch as torch
>>> w, x = sg.symbols("w", (2, 3), requires_grad=True), sg.symbols("x", (3,))
>>> picture = sg.graph(torch.tanh(w @ x).sum())
>>> [node.label[0] for node in picture.nodes]
['w  2×3', 'x  3', 'matmul  2', 'tanh  2', 'sum  scalar', 'v = 1']
>>> print("\\n".join(edge.rule for edge in picture.edges))
w̄ = torch.outer(Z̄₁, x)
x̄ = w.T @ Z̄₁
Z̄₁ = Z̄₂ * (1 - Z₂ ** 2)
Z̄₂ = o̅u̅t̅[None].expand(2)
o̅u̅t̅ = v
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import graphviz

from ..core.constructors import fresh_name
from ..core.dims import Shape, format_shape, same_dim
from ..core.dtypes import is_floating
from ..core.errors import SymgradError, WorkBudgetError
from ..core.files import write_file
from ..core.graph import topological, uniform_constant
from ..core.printers import TorchPrinter
from ..core.tensor import Tensor, apply
from ..derive import needed_nodes, simplify
from ..ops.calculus import NoDerivative
from .naming import intermediate_names, wrt_tensors

WIDTH, LINES = 48, 3
"""A label's text is folded into at most LINES lines of about WIDTH letters; what is cut ends in ``…`` (the
full text is then the SVG tooltip)."""

FONT_SIZE = "10.5"
"""Points, for every label: the body text of a Chinese document (ctexart's 五号; English ones use 10), so that a
document shows the drawing at its natural size and its labels read like the text around them."""

LAYOUT = {"nodesep": "0.2", "ranksep": "0.15", "ratio": "compress", "size": "5.5,100"}
"""Tight spacing, and a layout packed to about 5.5 in across, so that it fits a document's text width (16 cm,
6.3 in): ratio=compress rearranges the nodes rather than shrink the labels (it lands within about 0.7 in of the
target; only a graph that cannot be packed at all is scaled down)."""

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
"""What a file's extension asks for: a drawing by ``dot``, or the DOT source itself."""

NEEDS_DOT = (
    "drawing a graph needs Graphviz's dot program, which is not installed: apt-get install graphviz "
    "(Debian, Ubuntu), brew install graphviz (macOS) or https://graphviz.org/download/; "
    "the DOT source (.source, or a .dot file) needs no dot"
)
_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_LEAF_STYLE = {"shape": "ellipse"}
_MARKED_STYLE = {"shape": "ellipse", "style": "filled,bold", "fillcolor": "#cfe2ff"}
_OP_STYLE = {"shape": "box", "style": "rounded"}
_OUTPUT_STYLE = {"shape": "box", "style": "rounded,bold", "peripheries": "2"}
_GRAD_TENSOR_STYLE = {"shape": "note", "style": "filled,dashed", "fillcolor": "#fff3bf"}


@dataclass(frozen=True)
class GraphNode:
    """One node: ``key`` (its DOT id), ``name`` (what the rules call it), ``kind`` (leaf, op or
    grad_tensor), the lines of its ``label`` (in full: the DOT text folds them), its ``shape``, and whether it
    is ``marked`` (requires grad, or in wrt) or the ``output``."""

    key: str
    name: str
    kind: str
    label: tuple[str, ...]
    shape: Shape = ()
    marked: bool = False
    output: bool = False


@dataclass(frozen=True)
class GraphEdge:
    """From ``tail`` (an input) to ``head`` (the op using it): its VJP ``rule``, e.g. ``w̄ = ȳ @ x.T``
    (``+=`` where the input feeds several ops: their pieces add up). ``kind`` is ``rule``, ``none`` (no
    gradient flows, e.g. to an integer target) or ``grad_tensor``; ``needed``: backward computes it."""

    tail: str
    head: str
    rule: str
    kind: str = "rule"
    needed: bool = True


class Graph:
    """A computation graph as data (``nodes``, ``edges``), as DOT text (``source``) and as a drawing.

    >>> import symgrad as sg
    >>> picture = sg.graph(sg.symbols("W", (2, 3)) @ sg.symbols("x", (3, 1)))
    >>> [edge.rule for edge in picture.edges]
    ['W̄ = o̅u̅t̅ @ x.T', 'x̄ = W.T @ o̅u̅t̅', 'o̅u̅t̅ = v']
    >>> picture.source.splitlines()[0]
    '// symgrad graph of W @ x'
    """

    def __init__(self, nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], title: str) -> None:
        self.nodes, self.edges, self.title = list(nodes), list(edges), title

    def digraph(self, links: Mapping[str, str] | None = None) -> graphviz.Digraph:
        """The picture as a :class:`graphviz.Digraph`, to restyle before drawing. With ``links`` (a node's key
        to a URL), every node has the id ``g-KEY`` and those in ``links`` link to their URL (an HTML page's)."""
        dot = graphviz.Digraph("symgrad", comment=f"symgrad graph of {shorten(self.title)}")
        dot.attr("graph", **LAYOUT)
        dot.attr("node", fontsize=FONT_SIZE, margin="0.05,0.03")
        dot.attr("edge", fontsize=FONT_SIZE)
        for node in self.nodes:
            style = _node_style(node)
            if links is not None:
                style = style | {"id": f"g-{node.key}"}
                style |= {"URL": links[node.key], "target": "_self"} if node.key in links else {}
            dot.node(node.key, _label(node.label), **style, **_tooltip(node.label))
        for edge in self.edges:
            attrs = _tooltip((edge.rule,))
            attrs |= {"labeltooltip": attrs["tooltip"]} if attrs else {}
            if edge.kind == "grad_tensor":  # v is drawn below the output and feeds its bar back
                attrs |= {"dir": "back", "style": "dashed", "color": "#b08800", "fontcolor": "#b08800"}
            elif edge.kind == "none":
                attrs |= {"style": "dotted"}
            if not edge.needed:
                attrs |= {"color": "gray60", "fontcolor": "gray60"}
            dot.edge(edge.tail, edge.head, label=_edge_label(edge.rule), **attrs)
        return dot

    @property
    def source(self) -> str:
        """The DOT text: the same bytes in every run (no ids, hashes or dates)."""
        return self.digraph().source

    def draw(self, format: str = "svg", *, links: Mapping[str, str] | None = None) -> bytes:  # noqa: A002 - dot's name
        """The drawing by Graphviz's ``dot``: ``"svg"``, ``"png"`` or ``"pdf"`` (``links``: see :meth:`digraph`)."""
        if format not in ("svg", "png", "pdf"):
            raise SymgradError(f"a graph is drawn as svg, png or pdf, not {format!r}")
        try:
            return self.digraph(links).pipe(format=format, quiet=True)
        except graphviz.ExecutableNotFound:
            raise SymgradError(NEEDS_DOT) from None
        except graphviz.CalledProcessError as error:
            said = error.stderr.decode(errors="replace") if isinstance(error.stderr, bytes) else str(error.stderr)
            raise SymgradError(f"dot failed: {' '.join(said.split()) or error.returncode}") from None

    def save(self, path: str | Path) -> Path:
        """Write the graph to ``path``: .svg, .png or .pdf drawn by ``dot``, .dot or .gv its source."""
        path = Path(path)
        kind = file_format(path)
        return write_file(path, self.source if kind == "dot" else self.draw(kind))  # whole, or not at all

    def _repr_svg_(self) -> str:
        return self.draw("svg").decode("utf-8")

    def __repr__(self) -> str:
        return f"<symgrad graph of {shorten(self.title)}: {len(self.nodes)} nodes, {len(self.edges)} edges>"


def file_format(path: str | Path) -> str:
    """``svg``, ``png``, ``pdf`` or ``dot``, from the extension of ``path``.

    >>> file_format("g.svg"), file_format("g.gv")
    ('svg', 'dot')
    """
    kind = FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        raise SymgradError(f"cannot tell the format of {str(path)!r}: name it .svg, .png, .pdf, .dot or .gv")
    return kind


def bar(name: str) -> str:
    """The adjoint's name: ``ȳ``, ``t̄₁``; longer names are overlined whole (``W̅1̅``).

    >>> bar("y"), bar("t₁")
    ('ȳ', 't̄₁')
    """
    head = name.rstrip("₀₁₂₃₄₅₆₇₈₉")
    if len(head) == 1:
        return unicodedata.normalize("NFC", head + "\u0304") + name[1:]
    return "".join(c + "\u0305" for c in name)


def shorten(text: str, limit: int = 2 * WIDTH) -> str:
    """``text`` with ``torch.nn.functional.`` as ``F.``, cut to ``limit`` letters (bars do not count) by ``…``.

    >>> shorten("F.one_hot(y, 3) * " * 3, 24)
    'F.one_hot(y, 3) * F.one…'
    """
    text = text.replace("torch.nn.functional.", "F.").replace("\n", " ")
    if _width(text) <= limit:
        return text
    cut, width = 0, 0
    while width < limit - 1:  # a letter keeps its bar: the cut falls before a letter, never before a mark
        width += not unicodedata.combining(text[cut])
        cut += 1
    while cut < len(text) and unicodedata.combining(text[cut]):
        cut += 1
    return text[:cut].rstrip() + "…"


def fold(text: str, width: int = WIDTH, lines: int = LINES) -> list[str]:
    """``text`` broken at spaces into at most ``lines`` lines of even length, about ``width`` letters at
    most; what does not fit is cut (see :func:`shorten`).

    >>> fold("t̄₂ = t̄₃ * torch.where(t₃ == 0, 0, t₂ / t₃)", 40)
    ['t̄₂ = t̄₃ * torch.where(t₃', '== 0, 0, t₂ / t₃)']
    """
    text = shorten(text, width * lines)
    if _width(text) <= width:
        return [text]
    words = re.split(r"(?<=\S) (?=\S)", text)  # at single spaces: "w  2×3" stays whole
    count = min(lines, -(-_width(text) // width))
    target = -(-_width(text) // count)
    while True:  # the narrowest even fold into ``count`` lines; a word longer than the target widens it
        out: list[str] = []
        for word in words:
            if out and _width(out[-1]) + 1 + _width(word) <= target:
                out[-1] += " " + word
            else:
                out.append(word)
        if len(out) <= count:
            return [shorten(line, width + width // 2) for line in out]
        target += 1


def _width(text: str) -> int:
    return sum(not unicodedata.combining(c) for c in text)


# the graph's own words, by language (its formulas are torch code in every language)
WORDS = {
    "en": {"requires grad": "requires grad", "wrt": "wrt", "implicit": "grad_tensor (implicit)",
           "constant": "constant", "no gradient": "no gradient", "no gradient rule": "no gradient rule",
           "no derivative in torch": "no derivative in torch", "no rule here": "no gradient rule here",
           "to": "{} to {}"},
    "zh": {"requires grad": "需要梯度", "wrt": "求导对象", "implicit": "grad_tensor（隐式）", "constant": "常量",
           "no gradient": "无梯度", "no gradient rule": "无梯度规则", "no derivative in torch": "torch 中无导数",
           "no rule here": "此处无梯度规则", "to": "{1}：{0}"},
}  # fmt: skip


def graph(
    t: Tensor, wrt: Tensor | Sequence[Tensor | str] | None = None, *, grad_tensor: Any = None, lang: str = "en"
) -> Graph:
    """The computation graph below ``t``, with each edge's VJP rule; see the module docstring. ``lang``: the
    language of its words (``"en"`` or ``"zh"``).

    ``wrt``: tensors (or leaf names) to mark besides those that require grad; edges backward does not
    need for them are grey. ``grad_tensor``: what the ``v`` node shows: None (torch's implicit 1 for a
    one-element output, else a symbolic ``v``), ``"ones"``, a name, a tensor or values.
    """
    if not isinstance(t, Tensor):
        raise SymgradError(f"graph expects a symgrad tensor, not {type(t).__name__}")
    if lang not in WORDS:
        raise SymgradError(f"unknown language {lang!r}: choose one of {', '.join(WORDS)}")
    words = WORDS[lang]
    order = [node for node in topological(t) if node is t or not _inline(node)]
    chosen = _chosen(t, order, wrt)
    targets = chosen or [n for n in order if n.op is None and n.requires_grad]  # what backward computes
    marked = {id(x) for x in targets} | {id(n) for n in order if n.op is None and n.requires_grad}
    needed = needed_nodes([t], targets) if targets else {id(node) for node in order}
    names = _names(t, order)
    keys = {id(node): f"n{position}" for position, node in enumerate(order)}
    uses: dict[int, int] = {}
    for node in order:
        for part in node.inputs:
            uses[id(part)] = uses.get(id(part), 0) + (id(part) in keys)
    nodes, edges = [], []
    for node in order:
        if node.op is None:
            nodes.append(_leaf(node, keys[id(node)], names, id(node) in marked, node is t, words))
            continue
        out, parts, local = _stand_ins(node, names)
        definition = TorchPrinter(ChainMap(local, names)).doprint(out)
        label = (f"{node.op.name}  {format_shape(node.shape)}", f"{names[id(node)]} = {definition}")
        nodes.append(GraphNode(keys[id(node)], names[id(node)], "op", label, node.shape, output=node is t))
        for part, (kind, rule) in zip(node.inputs, _rules(node, out, parts, ChainMap(local, names), words)):
            if id(part) not in keys:
                continue  # a number, printed inside the rules
            if kind == "none":  # no gradient flows, or the op has no rule here
                text = words["to"].format(rule, names[id(part)])
            else:
                text = f"{bar(names[id(part)])} {'+=' if uses[id(part)] > 1 else '='} {rule}"
            flows = id(part) in needed and (part.op is None or part.op.differentiable)
            edges.append(GraphEdge(keys[id(part)], keys[id(node)], text, kind, flows))
    v_name, v_label = _grad_tensor(t, grad_tensor, set(names.values()), words)
    nodes.append(GraphNode(f"n{len(order)}", v_name, "grad_tensor", v_label, t.shape))
    edges.append(GraphEdge(keys[id(t)], f"n{len(order)}", f"{bar(names[id(t)])} = {v_name}", "grad_tensor"))
    return Graph(nodes, edges, t.name)


def _inline(t: Tensor) -> bool:
    """A number the printer writes inside an expression (``x * 2``), not a node of its own."""
    return t.op is None and (t.is_python_scalar or not t.shape) and uniform_constant(t) is not None


def _chosen(t: Tensor, order: list[Tensor], wrt: Any) -> list[Tensor]:
    """The tensors ``wrt`` names (tensors or leaf names), each a node of the graph."""
    items = [] if wrt is None else [wrt] if isinstance(wrt, (Tensor, str)) else list(wrt)
    chosen = wrt_tensors(items, t.leaves(), of="the graph")
    for target in chosen:
        if not any(target is node for node in order):
            raise SymgradError(f"wrt holds {target.name!r}, which is not in the graph")
    return chosen


def _names(t: Tensor, order: list[Tensor]) -> dict[int, str]:
    """What the rules call each node: leaves by name, the output ``out``, other ops ``Z₁``, ``Z₂``, … (see
    :mod:`.naming`)."""
    taken = {unicodedata.normalize("NFKC", node.name) for node in order if node.op is None}
    shared = intermediate_names(t)
    names: dict[int, str] = {}
    counters = {"t": 0, "c": 0}

    def fresh(base: str) -> str:
        while True:
            counters[base] += 1
            name = f"{base}{str(counters[base]).translate(_SUBSCRIPTS)}"
            if unicodedata.normalize("NFKC", name) not in taken:
                taken.add(unicodedata.normalize("NFKC", name))
                return name

    for node in order:
        given = node.given_name
        if node.op is None:
            names[id(node)] = node.name if given is not None or node.kind == "symbol" else fresh("c")
        elif given is not None and given not in taken:
            names[id(node)] = given
            taken.add(given)
        elif unicodedata.normalize("NFKC", shared[id(node)].text) not in taken:  # Z₁, …, out: as the text names them
            names[id(node)] = shared[id(node)].text
            taken.add(unicodedata.normalize("NFKC", shared[id(node)].text))
        else:  # a name a tensor of the user's already has
            names[id(node)] = fresh("t")
    return names


def _leaf(
    node: Tensor, key: str, names: dict[int, str], marked: bool, output: bool, words: dict[str, str]
) -> GraphNode:
    name, shape = names[id(node)], format_shape(node.shape)
    extra = (words["requires grad"] if node.requires_grad else words["wrt"],) if marked else ()
    leaf = node.name if node.kind != "formula" or node.given_name is not None else f"{name} = {words['constant']}"
    return GraphNode(key, name, "leaf", (f"{leaf}  {shape}", *extra), node.shape, marked, output)


def _stand_ins(node: Tensor, names: dict[int, str]) -> tuple[Tensor, list[Tensor], dict[int, str]]:
    """The op applied afresh to its inputs, with the inputs that are ops replaced by plain leaves, and the
    names of those leaves: a rule applied to them reads locally (``1 - t₂ ** 2``, not the whole graph)."""
    assert node.op is not None
    local: dict[int, str] = {}
    taken = set(node.leaves())
    parts = []
    for part in node.inputs:
        if part.op is None or not part.inputs or id(part) not in names:
            parts.append(part)  # leaves, numbers and constants keep themselves: rules read their values
            continue
        stand_in = Tensor(shape=part.shape, name=fresh_name("node_input", taken), dtype=part.dtype, distinct=True)
        taken.add(stand_in.name)
        local[id(stand_in)] = names[id(part)]
        parts.append(stand_in)
    return apply(node.op.name, *parts, **node.attrs), parts, local


def _rules(
    node: Tensor, out: Tensor, parts: list[Tensor], names: ChainMap[int, str], words: dict[str, str]
) -> list[tuple[str, str]]:
    """The op's VJP rule for each input, applied to the stand-ins (``out`` and ``parts``), printed in torch
    spelling (simplified where that reads shorter): ``("rule", text)``, or ``("none", why)`` where no
    gradient flows or the op has no rule."""
    assert node.op is not None
    if node.op.vjp is None:
        return [("none", words["no gradient rule" if node.op.differentiable else "no gradient"])] * len(parts)
    dtype = node.dtype if is_floating(node.dtype) else "float32"
    g = Tensor(shape=node.shape, name=fresh_name("grad_output", out.leaves()), dtype=dtype, distinct=True)
    printer = TorchPrinter(names.new_child({id(out): names[id(node)], id(g): bar(names[id(node)])}))
    try:
        pieces = list(node.op.vjp(g, out, *parts, **node.attrs))
    except SymgradError as error:
        if isinstance(error, WorkBudgetError):  # out of time is not "no rule"
            raise
        return [("none", f"{words['no rule here']} ({error})")] * len(parts)
    texts = []
    for piece in pieces + [None] * (len(parts) - len(pieces)):
        if piece is None:
            texts.append(("none", words["no gradient"]))
            continue
        if isinstance(piece, NoDerivative):
            texts.append(("none", words["no derivative in torch"]))
            continue
        text = printer.doprint(piece)
        try:
            simpler = printer.doprint(simplify([piece], context=[out])[0])
        except SymgradError:
            simpler = text
        texts.append(("rule", simpler if len(simpler) < len(text) else text))
    return texts


def _grad_tensor(t: Tensor, grad_tensor: Any, taken: set[str], words: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """The grad_tensor node's name and label: v, a name, ones, a tensor or values."""
    shape = format_shape(t.shape)
    name = fresh_name("v", taken)
    if isinstance(grad_tensor, Tensor):
        if len(grad_tensor.shape) != len(t.shape) or not all(map(same_dim, grad_tensor.shape, t.shape)):
            raise SymgradError(f"the grad_tensor has shape {format_shape(grad_tensor.shape)}, the output {shape}")
        if not grad_tensor.name.isidentifier() or grad_tensor.name in taken:
            return name, (f"{name} = {grad_tensor.name}", "grad_tensor")
        grad_tensor = grad_tensor.name
    if grad_tensor is None and all(d == 1 for d in t.shape):
        return name, (f"{name} = 1", words["implicit"])
    if grad_tensor is None:
        return name, (f"{name}  {shape}", "grad_tensor")
    if grad_tensor == "ones":
        return name, (f"{name} = ones  {shape}", "grad_tensor")
    if isinstance(grad_tensor, str) and grad_tensor.isidentifier():
        if grad_tensor in taken:
            raise SymgradError(f"the grad_tensor's name {grad_tensor!r} is already a tensor of the graph")
        return grad_tensor, (f"{grad_tensor}  {shape}", "grad_tensor")
    if isinstance(grad_tensor, str):
        raise SymgradError(f"grad_tensor {grad_tensor!r} is neither ones, a name nor values")
    return name, (shorten(f"{name} = {grad_tensor}"), "grad_tensor")


def _node_style(node: GraphNode) -> dict[str, str]:
    if node.kind == "grad_tensor":
        return _GRAD_TENSOR_STYLE
    if node.kind == "leaf":
        return _MARKED_STYLE if node.marked else _LEAF_STYLE
    return _OUTPUT_STYLE if node.output else _OP_STYLE


def _label(lines: Sequence[str], folded: bool = True) -> str:
    """DOT text of some lines (each folded, or in full): backslashes kept as such (DOT reads ``\\n`` as an
    escape), never read as HTML."""
    text = [part for line in lines for part in (fold(line) if folded else [line])]
    return graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in text))


def _edge_label(rule: str) -> str:
    """An edge's rule as a DOT HTML-like label: each folded line in a row of its own, a space of clearance on
    either side, on a white ground, so that the edge it labels runs beside its text and an edge that crosses it
    passes behind, where plain text ran into both."""
    rows = "".join(f"<TR><TD>\u00a0{html.escape(line, quote=False)}\u00a0</TD></TR>" for line in fold(rule))
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" BGCOLOR="white">{rows}</TABLE>>'


def _tooltip(lines: Sequence[str]) -> dict[str, str]:
    """The full text, where the label had to cut it."""
    cut = any(part.endswith("…") for line in lines for part in fold(line))
    return {"tooltip": _label(lines, folded=False)} if cut else {}
