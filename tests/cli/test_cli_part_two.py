"""The command line on what the trust review found: commands that stopped on a valid input now give torch's
answer, in English and Chinese."""

from __future__ import annotations

import pytest

from symgrad.cli import main

pytest.importorskip("torch")

CROSS_ENTROPY = [
    "F.cross_entropy(X @ W, y)", "--shape", "X=3,n", "--shape", "W=n,c", "--value", "y=[0,2,1]", "--wrt", "W",
]  # fmt: skip


def test_derive_of_cross_entropy_with_fixed_targets_proves_its_law(capsys):
    assert main(["derive", *CROSS_ENTROPY]) == 0
    out = capsys.readouterr().out
    assert "proof: held" in out and "FAILED" not in out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_of_cross_entropy_with_fixed_targets(tmp_path, lang):
    target = tmp_path / f"ce_{lang}.md"
    assert main(["explain", *CROSS_ENTROPY, "--lang", lang, "--no-graph", "-o", str(target)]) == 0
    assert "softmax" in target.read_text(encoding="utf-8")
