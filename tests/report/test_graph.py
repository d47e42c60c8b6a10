"""Graph pictures: every node's op and shape, every edge's VJP rule (run with torch and compared with
torch.autograd.grad), the marks, the grad_tensor node, byte-identical DOT text, and drawings by Graphviz.

Drawing needs Graphviz's dot (Debian: graphviz); those tests skip without it unless SYMGRAD_REQUIRE_TOOLS=1
(as in CI), where a missing tool fails the test.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import unicodedata

import pytest
import torch
from tools import require_tool

import symgrad as sg
import symgrad.torch as storch
from symgrad.reader import parse_shape
from symgrad.report.graph import WIDTH, Graph, bar, file_format, fold, shorten

SEED = "torch.tanh(w @ x).sum()"
SEED_SHAPES = {"w": (2, 3), "x": (3,)}


def require_dot() -> None:
    require_tool("dot", "graphviz")


def seed_graph(**options) -> Graph:
    return sg.graph(sg.parse(SEED, shapes=SEED_SHAPES), **options)


def rules(picture: Graph) -> list[str]:
    return [edge.rule for edge in picture.edges]


def test_the_dot_names_each_op_and_shape():
    picture = seed_graph()
    source = picture.source
    for line in ("w  2×3", "x  3", "matmul  2", "Z₁ = w @ x", "tanh  2", "Z₂ = torch.tanh(Z₁)", "sum  scalar"):
        assert line in source, line
    assert [node.label[0] for node in picture.nodes] == [
        "w  2×3",
        "x  3",
        "matmul  2",
        "tanh  2",
        "sum  scalar",
        "v = 1",
    ]


def test_edges_carry_the_vjp_rules_of_matmul_tanh_and_sum():
    picture = seed_graph()
    assert rules(picture) == [
        "w̄ = torch.outer(Z̄₁, x)",
        "x̄ = w.T @ Z̄₁",
        "Z̄₁ = Z̄₂ * (1 - Z₂ ** 2)",
        "Z̄₂ = o̅u̅t̅[None].expand(2)",
        "o̅u̅t̅ = v",
    ]
    for rule in rules(picture):
        assert rule in picture.source
    matrix = sg.graph(sg.symbols("w", (2, 3)) @ sg.symbols("x", (3, 4)))
    assert rules(matrix)[:2] == ["w̄ = o̅u̅t̅ @ x.T", "x̄ = w.T @ o̅u̅t̅"]


def test_edges_run_from_each_input_to_the_op_using_it():
    picture = seed_graph()
    keys = {node.name: node.key for node in picture.nodes}
    assert [(e.tail, e.head) for e in picture.edges] == [
        (keys["w"], keys["Z₁"]),
        (keys["x"], keys["Z₁"]),
        (keys["Z₁"], keys["Z₂"]),
        (keys["Z₂"], keys["out"]),
        (keys["out"], keys["v"]),
    ]
    assert f"{keys['w']} -> {keys['Z₁']}" in picture.source


@pytest.mark.parametrize(
    ("expression", "shapes"),
    [
        (SEED, {"w": "2,3", "x": "3"}),
        ("torch.tanh(W @ X + b)", {"W": "2,3", "X": "3,4", "b": "2,1"}),
        ("torch.softmax(z, dim=1) * 2", {"z": "4,3"}),
        ("(x * x).mean() + (x.exp() / (1 + x ** 2)).sum()", {"x": "3"}),
        ("torch.sigmoid(x).exp().norm() ** 0.5", {"x": "3"}),
        ("(A @ B).T.reshape(-1).abs().max()", {"A": "2,3", "B": "3,2"}),
    ],
)
def test_every_rule_is_torchs_vector_jacobian_product(expression, shapes):
    """Each edge's rule, run as torch code, equals torch.autograd.grad of its op (inputs detached, so the
    rule is checked locally), for a random cotangent."""
    out = sg.parse(expression, shapes={name: parse_shape(text) for name, text in shapes.items()})
    picture = sg.graph(out)
    generator = torch.Generator().manual_seed(0)
    values: dict[str, torch.Tensor] = {}

    def run(text: str, names: dict[str, torch.Tensor]) -> torch.Tensor:
        """Python reads ``Z̄₁`` as ``t̄1`` (NFKC) once the subscript is a digit; our own output, not user text."""
        scope = {unicodedata.normalize("NFKC", k): v for k, v in names.items()}
        return eval(unicodedata.normalize("NFKC", text), {"torch": torch, "F": torch.nn.functional, **scope})

    checked = 0
    for node in picture.nodes:
        if node.kind == "leaf":
            values[node.name] = torch.randn(node.shape, dtype=torch.float64, generator=generator)
        if node.kind != "op":
            continue
        incoming = [e for e in picture.edges if e.head == node.key]
        inputs = {n.name: n for n in picture.nodes if any(e.tail == n.key for e in incoming)}
        local = {name: values[name].clone().requires_grad_() for name in inputs}
        definition = node.label[1].split(" = ", 1)[1]
        value = run(definition, {**values, **local})
        values[node.name] = value.detach()
        cotangent = torch.randn(value.shape, dtype=torch.float64, generator=generator)
        expected = torch.autograd.grad(value, list(local.values()), cotangent, allow_unused=True)
        for (name, node_in), want in zip(inputs.items(), expected):
            pieces = [e.rule for e in incoming if e.tail == node_in.key and e.kind == "rule"]
            if not pieces:
                continue
            got = sum(run(p.split("= ", 1)[1], {**values, bar(node.name): cotangent}) for p in pieces)
            assert torch.allclose(torch.as_tensor(got, dtype=torch.float64).expand(want.shape), want), (name, pieces)
            checked += 1
    assert checked == len({(e.tail, e.head) for e in picture.edges if e.kind == "rule"})


def test_tensors_that_require_grad_or_are_in_wrt_are_marked():
    w = sg.symbols("w", (2, 3), requires_grad=True)
    x, b = sg.symbols("x", (3,)), sg.symbols("b", (2,))
    picture = sg.graph(storch.tanh(w @ x + b).sum(), wrt=["x"])
    marked = {node.name: node.marked for node in picture.nodes if node.kind == "leaf"}
    assert marked == {"w": True, "x": True, "b": False}
    leaves = {node.name: node for node in picture.nodes if node.kind == "leaf"}
    assert leaves["w"].label[1:] == ("requires grad",)
    assert leaves["x"].label[1:] == ("wrt",)
    assert 'style="filled,bold"' in picture.source
    needed = {picture.nodes[int(e.tail[1:])].name: e.needed for e in picture.edges if e.kind == "rule"}
    assert needed["x"] is True and needed["b"] is False  # backward for x never computes b̄ (nor w̄)


def test_the_output_gets_a_grad_tensor_node_feeding_back():
    picture = seed_graph()
    v = picture.nodes[-1]
    assert (v.kind, v.label) == ("grad_tensor", ("v = 1", "grad_tensor (implicit)"))
    last = picture.edges[-1]
    assert (last.kind, last.rule) == ("grad_tensor", "o̅u̅t̅ = v")
    assert "dir=back" in picture.source and "style=dashed" in picture.source
    vector = sg.graph(sg.symbols("W", (2, 3)) @ sg.symbols("x", (3,)), grad_tensor="u")
    assert vector.nodes[-1].label == ("u  2", "grad_tensor")
    assert vector.edges[-1].rule == "o̅u̅t̅ = u"
    ones = sg.graph(sg.symbols("W", (2, 3)) @ sg.symbols("x", (3,)), grad_tensor="ones")
    assert ones.nodes[-1].label[0] == "v = ones  2"


def test_an_input_used_twice_gets_two_pieces_that_add_up():
    x = sg.symbols("x", (3,), requires_grad=True)
    picture = sg.graph((x * x).sum())
    assert rules(picture)[:2] == ["x̄ += Z̄₁ * x", "x̄ += Z̄₁ * x"]


def test_an_integer_target_gets_no_gradient():
    out = sg.parse("F.cross_entropy(z, y)", shapes={"z": (4, 3)}, values={"y": [0, 2, 1, 1]})
    picture = sg.graph(out)
    edge = next(e for e in picture.edges if picture.nodes[int(e.tail[1:])].name == "y")
    assert (edge.kind, edge.rule) == ("none", "no gradient to y")
    assert "style=dotted" in picture.source
    z_rule = rules(picture)[0]
    assert z_rule.startswith("z̄ = (torch.softmax(z, dim=1) - torch.nn.functional.one_hot(y, 3))")
    assert "F.one_hot(y, 3)" in picture.source  # shortened in the picture


def test_symbolic_shapes_show_dims_and_the_law_rules():
    k, n, m = sg.dims("k n m")
    W, X, b = sg.symbols("W", (k, n)), sg.symbols("X", (n, m)), sg.symbols("b", (k, 1))
    picture = sg.graph(storch.tanh(W @ X + b))
    assert [node.label[0] for node in picture.nodes][:3] == ["W  k×n", "X  n×m", "matmul  k×m"]
    assert rules(picture)[:2] == ["W̄ = Z̄₁ @ X.T", "X̄ = W.T @ Z̄₁"]
    assert "b̄ = Z̄₂.sum(dim=1, keepdim=True)" in rules(picture)
    assert picture.nodes[-1].label == ("v  k×m", "grad_tensor")


def test_long_labels_are_folded_and_cut_with_the_full_text_as_tooltip():
    name = "weights_of_a_layer_with_a_long_descriptive_name_that_goes_on_and_on_and_on_for_ever_and_ever"
    long = sg.symbols(name, (2, 3), requires_grad=True)
    other = sg.symbols("another_quite_long_input_name", (3, 4))
    out = (long @ other).exp() * long.sum()
    for _ in range(3):
        out = out * long.sum() + (long @ other).sigmoid()
    picture = sg.graph(out.mean())
    for line in picture.source.splitlines():
        if 'label="' in line:  # a node's plain label, its lines joined by \n
            parts = line.split('label="', 1)[1].split('"', 1)[0].split("\\n")
        elif "label=<" in line:  # an edge's HTML-like label, a row per line
            parts = [html.unescape(row) for row in re.findall(r"<TD>\u00a0(.*?)\u00a0</TD>", line)]
            assert parts, line
        else:
            continue
        for part in parts:
            assert sum(not unicodedata.combining(c) for c in part) <= WIDTH + WIDTH // 2, part
    assert "…" in picture.source and f'tooltip="{name}  2×3' in picture.source
    assert fold("x̄ = " + "t₁ * " * 30 + "t₂")[-1].endswith("…")
    assert shorten("o̅u̅t̅ = v", 3) == "o̅u̅…"  # a cut never parts a letter from its bar


def test_names_do_not_collide_with_the_tensors():
    t1, y = sg.symbols("t1", (3,)), sg.symbols("y", (3,))
    picture = sg.graph(((t1 * y).exp() * 2).sum())
    names = [node.name for node in picture.nodes]
    assert len(set(names)) == len(names)
    assert "t₁" not in names and "y" in names and names[-2] == "out"


def test_bars_and_formats():
    assert bar("w") == "w\u0304" and bar("y") == "ȳ" and bar("t₁₂") == "t\u0304₁₂"
    assert bar("W1") == "W\u03051\u0305"
    assert [file_format(p) for p in ("a.svg", "b.PNG", "c.pdf", "d.dot", "e.gv")] == ["svg", "png", "pdf", "dot", "dot"]
    with pytest.raises(sg.SymgradError, match=r"\.svg, \.png, \.pdf, \.dot or \.gv"):
        file_format("g.jpg")


def test_bad_arguments_are_symgrad_errors():
    with pytest.raises(sg.SymgradError, match="expects a symgrad tensor"):
        sg.graph(3.0)
    with pytest.raises(sg.SymgradError, match="'z', which is not a tensor of the graph"):
        seed_graph(wrt=["z"])
    with pytest.raises(sg.SymgradError, match="not in the graph"):
        seed_graph(wrt=[sg.symbols("q", (2,))])
    with pytest.raises(sg.SymgradError, match="already a tensor"):
        seed_graph(grad_tensor="w")


_SCRIPT = """
import symgrad as sg
for text, shapes in [
    ("torch.tanh(w @ x).sum()", {"w": (2, 3), "x": (3,)}),
    ("F.cross_entropy(torch.softmax(z, dim=1) @ A, y) + z.norm()", {"z": (4, 3), "A": (3, 3)}),
    ("(x * x).mean() + torch.sigmoid(x).exp().norm() ** 0.5", {"x": (3,)}),
]:
    values = {"y": [0, 2, 1, 1]} if "y)" in text else {}
    print(sg.graph(sg.parse(text, shapes=shapes, values=values)).source)
"""


def test_the_dot_text_is_the_same_under_any_hash_seed():
    outputs = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, env=env, check=True, timeout=300)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"digraph symgrad {") == 3


def test_the_source_needs_no_dot_but_drawing_says_to_install_graphviz(monkeypatch, tmp_path):
    picture = seed_graph()
    monkeypatch.setenv("PATH", str(tmp_path))  # a real run of a machine without Graphviz
    assert picture.source.startswith("// symgrad graph of")
    assert picture.save(tmp_path / "g.dot").read_text(encoding="utf-8") == picture.source
    with pytest.raises(sg.SymgradError) as error:
        picture.draw("svg")
    message = str(error.value)
    assert "\n" not in message and "install graphviz" in message
    with pytest.raises(sg.SymgradError):
        picture.save(tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_repr_svg_is_svg_text_naming_each_op():
    require_dot()
    svg = seed_graph()._repr_svg_()
    assert isinstance(svg, str) and "<svg" in svg
    for op in ("matmul", "tanh", "sum"):
        assert op in svg


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG\r\n\x1a\n"), (".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_save_draws_by_the_extension(tmp_path, suffix, magic):
    require_dot()
    path = seed_graph().save(tmp_path / f"g{suffix}")
    assert path.read_bytes().startswith(magic)


def test_the_graph_and_the_explanation_call_each_intermediate_alike():
    """One set of names: the graph's nodes are the explanation's Z₁, Z₂, …, out (H when an input is Z1)."""
    (n,) = sg.dims("n")
    for first, letter in (("W", "Z"), ("Z1", "H")):
        out = (sg.symbols(first, (n,)) * sg.symbols("x", (n,))).tanh().sum()
        explanation = sg.explain(out, ["x"])
        in_text = [step.lhs for step in explanation.law.forward]
        in_graph = [node.name for node in explanation.graph().nodes if node.kind in ("op", "output") or node.output]
        assert in_text == [f"{letter}_{{1}}", f"{letter}_{{2}}", r"\mathrm{out}"]
        assert [name for name in in_graph if name != "v"][-3:] == [f"{letter}₁", f"{letter}₂", "out"]


def test_an_explanation_takes_wrt_by_name_and_refuses_an_unknown_one_in_one_line():
    x = sg.symbols("x", (2,), requires_grad=True)
    assert sg.explain(x.tanh().sum(), ["x"]).wrt[0].name == "x"
    with pytest.raises(sg.SymgradError, match=r"wrt names 'b', which is not a tensor of the expression \(x\)"):
        sg.explain(x.sum(), ["b"])
