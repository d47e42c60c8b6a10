"""The grad_tensor ``v`` a verb uses when ``--grad-tensor`` is not given: the same rule in ``derive``, ``explain``
and ``graph``, and each says which one it used.

torch's ``out.backward()`` refuses a non-scalar ``out`` ("grad can be implicitly created only for scalar outputs").
symgrad explains that refusal rather than repeating it, so without ``--grad-tensor``:

- a one-element output gets torch's implicit 1, silently, as in torch;
- any other output gets ones, what ``torch.ones_like(out)`` gives, when the shapes are numbers, or a symbolic ``V``
  of out's shape when they are symbolic (a law in ``V`` holds for every grad_tensor, ones among them).

``derive`` and ``graph`` say so in a note on stderr (their output is data: text, JSON, DOT), with how to choose
another; ``explain``'s document says it in its own words, in the section on why a non-scalar output needs a
grad_tensor and where it shows ``v``.

(``codegen`` emits a ``vjp`` that takes the grad_tensor as an argument, and ``verify`` proves a backward for every
grad_output: neither chooses one.)

>>> import symgrad as sg
>>> out = sg.symbols("w", (1, 2)) * 2
>>> default_grad_tensor(out, symbolic=False), default_grad_tensor(out, symbolic=True)
('ones', 'V')
>>> print(default_grad_tensor(out.sum(), symbolic=False))
None
>>> print(default_note(out, "ones"))  # doctest: +NORMALIZE_WHITESPACE
symgrad: note: out has shape 1×2, for which torch's out.backward() stops (grad can be implicitly created only for
scalar outputs); using the grad_tensor v = ones, what torch.ones_like(out) gives; pass --grad-tensor to choose
another (ones, a name such as v, or values)
"""

from __future__ import annotations

from typing import Any

from ..core.constructors import fresh_name
from ..core.dims import format_shape
from ..core.errors import SymgradError
from ..core.tensor import Tensor
from ..reader import parse_values
from .errors import say


def default_grad_tensor(output: Tensor, *, symbolic: bool) -> str | None:
    """None for a one-element output (torch's implicit 1); else ``ones``, or with ``symbolic`` (shapes with symbolic
    sizes, whose result is a law) a fresh name for a symbolic grad_tensor, ``V`` unless the expression has a V."""
    if all(d == 1 for d in output.shape):
        return None
    return fresh_name("V", output.leaves()) if symbolic else "ones"


def default_note(output: Tensor, used: str) -> str:
    """The one line that says which grad_tensor a verb chose for a non-scalar output, and how to choose another."""
    stops = (
        f"out has shape {format_shape(output.shape)}, for which torch's out.backward() stops (grad can be implicitly "
        "created only for scalar outputs)"
    )
    if used == "ones":
        chosen = "the grad_tensor v = ones, what torch.ones_like(out) gives"
        other = "pass --grad-tensor to choose another (ones, a name such as v, or values)"
    else:
        chosen = f"a symbolic grad_tensor {used} of out's shape"
        other = "the law holds for every grad_tensor, ones among them"
    return f"symgrad: note: {stops}; using {chosen}; {other}"


def grad_tensor_option(given: str | None, output: Tensor, *, symbolic: bool) -> str | None:
    """``--grad-tensor`` as given, else :func:`default_grad_tensor`, with its note on stderr when it chose one."""
    if given is not None:
        return given
    chosen = default_grad_tensor(output, symbolic=symbolic)
    if chosen is not None:
        say(default_note(output, chosen))
    return chosen


def parsed_grad_tensor(text: str | None, output: Tensor) -> Any:
    """``--grad-tensor``: ones, a symbol name, or values (read by the safe parser); None keeps torch's rule for
    one-element outputs (ones)."""
    if text is not None and text != "ones" and not text.isidentifier():
        return parse_values(text)
    if text is None and output.numel() == 1:
        return "ones"
    return text


def symbolic_grad_tensor(text: str | None, output: Tensor) -> str | None:
    """``--grad-tensor`` at symbolic sizes, where the result is a law: a name for a symbolic grad_tensor (``ones``
    only for a one-element output), checked alike in every verb; None when not given."""
    if text is None:
        return None
    if text != "ones" and not text.isidentifier():
        raise SymgradError("with symbolic shapes, --grad-tensor is a name (e.g. V) or ones")
    if text == "ones" and not all(d == 1 for d in output.shape):
        raise SymgradError("with symbolic shapes, a non-scalar output needs a symbolic --grad-tensor such as V")
    if text in output.leaves():
        raise SymgradError(f"--grad-tensor {text} names a tensor of the expression: choose another name")
    return text
