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


class NoDerivativeError(UnsupportedError):
    """A gradient torch does not define (``derivative for aten::floor_divide is not implemented``): asked for,
    torch raises at backward, and so does symgrad."""


class CheckError(SymgradError, AssertionError):
    """A symbolic result disagrees with torch.autograd."""


class InternalError(SymgradError):
    """An exception that escaped symgrad's own code: a bug in symgrad, reported in one line that names the op and
    the call site (never a traceback in the command line)."""


class TorchError(SymgradError):
    """A mistake that torch rejects too, raised with torch's message as a subclass of the built-in exception torch
    raises, so that ``except RuntimeError`` keeps working; any other exception from inside symgrad is a bug."""


class TorchRuntimeError(TorchError, RuntimeError):
    """torch's RuntimeError for the same input."""


class TorchValueError(TorchError, ValueError):
    """torch's (or Python's) ValueError for the same input."""


class TorchIndexError(TorchError, IndexError):
    """torch's IndexError for the same input."""


class TorchTypeError(TorchError, TypeError):
    """torch's (or Python's) TypeError for the same input."""


class TorchKeyError(TorchError, KeyError):
    """torch's KeyError for the same input (nn.Module's names)."""


class TorchNotImplementedError(TorchError, NotImplementedError):
    """torch's NotImplementedError for the same input."""


class TorchAssertionError(TorchError, AssertionError):
    """torch's AssertionError for the same input (nn modules check their arguments with assert)."""


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
    InternalError,
    TorchError,
    TorchRuntimeError,
    TorchValueError,
    TorchIndexError,
    TorchTypeError,
    TorchKeyError,
    TorchNotImplementedError,
    TorchAssertionError,
):
    _public.__module__ = "symgrad"


class WorkBudgetError(SymgradError):
    """Entrywise work too large to start (see :mod:`symgrad.core.budget`); the message names the way out."""


WorkBudgetError.__module__ = "symgrad"
