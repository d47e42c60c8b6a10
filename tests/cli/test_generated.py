"""generated/ is what symgrad emits now (drift check), and emission is deterministic."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from symgrad.cli import catalogue

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def rendered() -> dict[str, str]:
    """The catalogue as this process renders it (once: it takes seconds)."""
    return catalogue.render_all()


def test_generated_folder_is_up_to_date():
    stale = catalogue.stale(ROOT / "generated")
    assert stale == [], f"out of date (run `symgrad catalogue`): {stale}"


def test_no_stray_files_in_generated():
    expected = set(rendered())
    svgs = {name for name in catalogue.drawings() if name.endswith(".svg")}
    present = {p.name for p in (ROOT / "generated").iterdir() if p.is_file()}
    assert expected | svgs <= present <= expected | set(catalogue.drawings())  # the PDFs are drawn, not committed


def test_explanations_show_their_graph_whose_dot_source_is_checked():
    files = rendered()
    for item in catalogue.EXPLAIN_ITEMS:
        for lang in ("en", "zh"):  # each language's document shows the graph in its own words
            stem = f"{item.stem}_{lang}"
            assert files[f"{stem}-graph.dot"].startswith("// symgrad graph of")
            assert f"{stem}-graph.svg" in catalogue.drawings()
            assert f"]({stem}-graph.svg)" in files[f"{stem}.md"]
            assert f"\\includegraphics{{{stem}-graph.pdf}}" in files[f"{stem}.tex"]
    assert "v = ones  1×2" in files["explain_seed_en-graph.dot"] and "V  k×m" in files["explain_mlp_layer_en-graph.dot"]
    assert (
        "requires grad" in files["explain_seed_en-graph.dot"]
        and "requires grad" not in files["explain_seed_zh-graph.dot"]
    )
    assert "需要梯度" in files["explain_seed_zh-graph.dot"]


def test_the_drift_check_compares_the_dot_source_not_the_drawing(tmp_path):
    folder = tmp_path / "generated"
    folder.mkdir()
    for name, text in rendered().items():
        (folder / name).write_text(text, encoding="utf-8")
    svgs = sorted(name for name in catalogue.drawings() if name.endswith(".svg"))
    assert catalogue.stale(folder) == svgs  # a drawing must be there
    for name in svgs:  # as another Graphviz version draws it: not compared
        (folder / name).write_text("<svg>drawn by another dot</svg>", encoding="utf-8")
    assert catalogue.stale(folder) == []
    (folder / "explain_seed_zh-graph.dot").write_text("digraph {}", encoding="utf-8")
    assert catalogue.stale(folder) == ["explain_seed_zh-graph.dot"]


def test_output_is_identical_under_any_hash_seed():
    """Another process, under a hash seed of its own, renders what this one does (under its own, random one)."""
    script = (
        "import sys; from symgrad.cli import catalogue; "
        "sys.stdout.write(''.join(v for _, v in sorted(catalogue.render_all().items())))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345" if os.environ.get("PYTHONHASHSEED") != "12345" else "0"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(v for _, v in sorted(rendered().items()))
