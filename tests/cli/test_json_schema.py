"""``symgrad derive --format json`` follows its documented JSON Schema (docs/derive.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symgrad.cli import main
from symgrad.report.derivation import JSON_SCHEMA_VERSION

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "derive.schema.json").read_text(encoding="utf-8"))

CASES = {
    "entrywise_with_values": ["w @ x", "--value", "w=[[1.0, 2.0]]", "--value", "x=[[1.0], [1.0]]", "--wrt", "w"],
    "entrywise_symbolic_grad_tensor": ["torch.tanh(w @ x)", "--shape", "w=2,3", "--shape", "x=3", "--wrt", "w",
                                       "--grad-tensor", "v"],
    "entrywise_no_check": ["x.sqrt().sum()", "--value", "x=[0.0, 4.0]", "--wrt", "x", "--no-check"],
    "entrywise_elided": ["(A @ B).sum()", "--shape", "A=4,4", "--shape", "B=4,4", "--wrt", "A"],
    "law_with_proof": ["torch.tanh(W @ X).sum()", "--shape", "W=k,n", "--shape", "X=n,m", "--wrt", "W"],
    "law_no_check": ["(W @ X).sum(dim=0)", "--shape", "W=k,n", "--shape", "X=n,m", "--wrt", "W", "--no-check"],
}  # fmt: skip


def test_the_schema_is_a_valid_json_schema_of_this_version():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    versions = {SCHEMA["$defs"][kind]["properties"]["schema_version"]["const"] for kind in ("entrywise", "law")}
    assert versions == {JSON_SCHEMA_VERSION}


@pytest.mark.parametrize("case", list(CASES))
def test_derive_json_follows_the_schema(capsys, case):
    code = main(["derive", *CASES[case], "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    document = json.loads(out)
    errors = [f"{list(e.path)}: {e.message}" for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(document)]
    assert not errors, "\n".join(errors)
    assert document["schema_version"] == JSON_SCHEMA_VERSION
    assert document["kind"] == ("law" if case.startswith("law") else "entrywise")


def test_a_field_the_schema_does_not_know_is_caught(capsys):
    """The schema is strict: a renamed or added field fails validation (so the version must change with it)."""
    main(["derive", *CASES["entrywise_with_values"], "--format", "json"])
    document = json.loads(capsys.readouterr()[0])
    document["gradient"] = document.pop("gradients")
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(document))


def test_sizes_are_numbers_where_fixed_and_strings_where_symbolic(capsys):
    """Every shape is written alike, a list of sizes: a gradient's (it was ["2", "3"]), a Jacobian's and an
    input's (it was the printed text, "2×3"); a symbolic size is its name."""
    main(["derive", "torch.tanh(W @ x)", "--shape", "W=2,3", "--shape", "x=3,1", "--wrt", "W", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    (gradient,), (jacobian,) = data["gradients"], data["jacobians"]
    assert gradient["shape"] == [2, 3] and jacobian["shape"] == [2, 1, 2, 3]
    inputs = {entry["name"]: entry["shape"] for entry in data["inputs"]}
    assert inputs == {"W": [2, 3], "x": [3, 1]}
    main(["derive", "W @ x", "--shape", "W=2,n", "--shape", "x=n", "--wrt", "W", "--format", "json"])
    symbolic = json.loads(capsys.readouterr().out)
    assert {entry["name"]: entry["shape"] for entry in symbolic["inputs"]} == {"W": [2, "n"], "x": ["n"]}
