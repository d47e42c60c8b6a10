"""Reports never state a number that differs from torch's: a formula SymPy simplified past a point where torch
computes nan (``w / w`` is 1, but 0/0 at w = 0) is shown with torch's value beside it, in the text, the JSON
and the explanation alike."""

from __future__ import annotations

import math

import pytest

import symgrad as sg
from symgrad.report.derivation import as_text, derive

torch = pytest.importorskip("torch")


def _torch_numbers() -> tuple[list[float], list[float]]:
    w = torch.tensor([0.0, 4.0], dtype=torch.float64, requires_grad=True)
    out = w / w
    out.backward(torch.ones_like(out))
    return out.tolist(), w.grad.tolist()


def _derivation():
    w = sg.tensor([0.0, 4.0], requires_grad=True, name="w")
    return derive(w / w, [w], grad_tensor="ones", expression="w / w")


def test_text_shows_torchs_nan_beside_a_simplified_constant():
    out, grad = _torch_numbers()
    assert math.isnan(out[0]) and math.isnan(grad[0]) and out[1] == 1.0 and grad[1] == 0.0
    text = as_text(_derivation())
    assert "out[0] = 1  (at these values nan, as torch computes it)" in text
    assert "w.grad[0] = 0  (at these values nan, as torch computes it)" in text
    # where the formula's number is torch's number, nothing is added
    assert "  out[1] = 1\n" in text and "  w.grad[1] = 0\n" in text


def test_json_values_are_the_texts_values():
    data = _derivation().as_dict()
    out = [e["value"] for e in data["output"]["entries"]]
    grad = [e["value"] for e in data["gradients"][0]["entries"]]
    assert math.isnan(out[0]) and out[1] == 1.0 and math.isnan(grad[0]) and grad[1] == 0.0


def test_explanation_shows_torchs_nan_beside_a_simplified_constant():
    w = sg.tensor([0.0, 4.0], requires_grad=True, name="w")
    markdown = sg.explain(w / w, [w])._repr_markdown_()
    assert r"\mathrm{out}_{0} &= 1 \;\to\; \mathrm{nan}" in markdown
    assert "\\mathrm{out}_{1} &= 1\n" in markdown
