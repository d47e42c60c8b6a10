"""``symgrad repl``: a Python console where ``torch`` is symgrad.torch.

A tensor takes the name of the variable it is first assigned to, so
``w = torch.tensor([[1.0, 2.0]], requires_grad=True)`` has entries ``w_0_0, w_0_1``.
"""

from __future__ import annotations

import code
import sys
from typing import Any

import sympy

import symgrad

from .. import torch as symbolic_torch
from ..core.errors import SymgradError
from ..core.tensor import Tensor

BANNER = (
    "symgrad repl: `torch` is symgrad.torch, `sg` is symgrad, `sympy` is SymPy.\n"
    "Tensors are named after the variable they are first assigned to. Try:\n"
    "  w = torch.tensor([[1.0, 2.0]], requires_grad=True)\n"
    "  x = torch.tensor([[1.0, 1.0], [2.0, 2.0]])\n"
    "  loss = torch.mm(w, x); loss.backward(torch.ones_like(loss)); w.grad"
)


def name_new_tensors(namespace: dict[str, Any]) -> None:
    """Give every tensor still carrying an automatic name the name of its variable."""
    for variable, value in list(namespace.items()):
        if isinstance(value, Tensor) and not variable.startswith("_") and value.auto_named:
            value.rename(variable)
            value.auto_named = False


class NamingConsole(code.InteractiveConsole):
    """An InteractiveConsole that names tensors after each statement."""

    def runcode(self, code_object) -> None:
        super().runcode(code_object)
        name_new_tensors(self.locals)

    def showtraceback(self) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, SymgradError):  # symgrad's own errors are messages, not bugs: no traceback
            self.write(f"{type(error).__name__}: {error}\n")
        else:
            super().showtraceback()


def namespace() -> dict[str, Any]:
    return {"torch": symbolic_torch, "sg": symgrad, "sympy": sympy, "__name__": "__symgrad_repl__"}


def run() -> int:
    console = NamingConsole(namespace())
    console.interact(banner=BANNER if sys.stdin.isatty() else "", exitmsg="")
    return 0
