"""Write symgrad/reader/torch_names.py: the public names of torch, torch.nn.functional, torch.linalg,
torch.special and Tensor methods in the torch installed here, so that a misspelt or unsupported name gets a
suggestion without importing torch. Run from the repository root: ``python build_support/torch_names.py``
(tests/reader/test_torch_names.py checks it against the installed torch; ``--print`` writes the text to stdout
instead)."""

from __future__ import annotations

from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "symgrad" / "reader" / "torch_names.py"


def names() -> dict[str, list[str]]:
    """Each namespace's public names, sorted."""
    import torch

    spaces = {
        "torch": torch,
        "torch.nn.functional": torch.nn.functional,
        "torch.linalg": torch.linalg,
        "torch.special": torch.special,
    }
    found = {label: sorted(n for n in dir(space) if not n.startswith("_")) for label, space in spaces.items()}
    found["Tensor"] = sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))
    return found


def source() -> str:
    """The module's text."""
    import torch

    lines = [
        f'"""The public names of torch {torch.__version__.split("+")[0]}, by namespace: written by '
        'build_support/torch_names.py; do not edit."""',
        "",
        "NAMES: dict[str, frozenset[str]] = {",
    ]
    for label, found in names().items():
        lines += [f'    "{label}": frozenset(', "        ("]
        chunk = ""
        for name in found:  # space-separated names, in string literals of at most 100 characters
            if len(chunk) + len(name) + 1 > 100:
                lines.append(f'            "{chunk}"')
                chunk = ""
            chunk += name + " "
        lines += [f'            "{chunk.rstrip()}"', "        ).split()", "    ),"]
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # a fresh process: torch's namespace grows as its submodules load (torch._dynamo)
    import sys

    if sys.argv[1:] == ["--print"]:
        sys.stdout.write(source())
    else:
        TARGET.write_text(source(), encoding="utf-8")
