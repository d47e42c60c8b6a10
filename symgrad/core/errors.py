"""Exceptions raised by symgrad.

Where torch raises for the same mistake, symgrad raises a subclass of the same
built-in exception with torch's message, so ``except RuntimeError`` code keeps
working when it is pointed at :mod:`symgrad.torch`.
"""

from __future__ import annotations


class SymgradError(Exception):
    """Base class of every error symgrad raises on purpose."""


class ShapeError(SymgradError, RuntimeError):
    """Shapes that do not fit together; the message names both shapes."""


class AutogradError(SymgradError, RuntimeError):
    """A misuse of backward that torch also rejects (same message as torch)."""


class SymbolicShapeError(SymgradError, ValueError):
    """An operation needs concrete sizes but got symbolic dimensions."""


class ValuesUnknownError(SymgradError, ValueError):
    """Numbers were asked for, but some entries have no value."""


class ParseError(SymgradError, ValueError):
    """A string expression could not be read (syntax, size or depth limits)."""


class UnknownNameError(ParseError):
    """A string expression uses a name that is neither a tensor nor a function."""


class UnsupportedError(ParseError):
    """A construct or function outside symgrad's whitelist."""


class CheckError(SymgradError, AssertionError):
    """A symbolic result disagrees with torch.autograd."""


# Tracebacks name each error by its public name (``symgrad.ShapeError``), not by this module.
for _public in (
    SymgradError,
    ShapeError,
    AutogradError,
    SymbolicShapeError,
    ValuesUnknownError,
    ParseError,
    UnknownNameError,
    UnsupportedError,
    CheckError,
):
    _public.__module__ = "symgrad"


class WorkBudgetError(SymgradError):
    """Entrywise work too large to start (see :mod:`symgrad.core.budget`); the message names the way out."""


WorkBudgetError.__module__ = "symgrad"
