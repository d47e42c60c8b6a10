"""How the command line fails: one line on stderr per failure, and its exit code.

>>> one_line(ValueError("a message   on  one line"))
'a message on one line'
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

from ..core.errors import CheckError, SymgradError
from ..core.files import OutputError
from ..core.tensor import Tensor

EXIT_MISMATCH = 1
EXIT_USAGE = 2


def say(line: str) -> None:
    """Print one line on stderr; a closed stderr is not an error worth a traceback."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def one_line(error: BaseException, limit: int = 1000) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


BAD_INPUT = (SymgradError, RuntimeError, IndexError, ValueError, TypeError)


def report_error(error: Exception) -> int:
    """The one line for an error, and the exit code (see the module docstring)."""
    if isinstance(error, CheckError):
        say(f"symgrad: error: {str(error).splitlines()[0] if str(error) else 'the check against torch failed'}")
        return EXIT_MISMATCH
    if isinstance(error, MemoryError | RecursionError):
        kind = "out of memory" if isinstance(error, MemoryError) else "the expression nests too deeply"
        say(
            f"symgrad: error: the work is too large ({kind}): use smaller sizes, or symbolic shapes "
            "(e.g. --shape x=n,m) to derive the law for every size"
        )
        return EXIT_USAGE
    if isinstance(error, OutputError):
        say(f"symgrad: error: {one_line(error)}")
        return EXIT_USAGE
    if isinstance(error, OSError):
        where = f"{error.filename}: " if error.filename else ""
        say(f"symgrad: error: {where}{error.strerror or one_line(error)}")
        return EXIT_USAGE
    if isinstance(error, ModuleNotFoundError) and error.name == "torch":
        say("symgrad: error: this needs torch (pip install torch==2.13.0), or pass --no-check")
        return EXIT_USAGE
    if type(error).__name__.lstrip("_") == "LinAlgError":  # the user's values: a singular matrix, say
        where = f"torch's {blamed_op(error)}" if blamed_op(error) else "torch's linear algebra"
        say(f"symgrad: error: at these values {where} fails: {one_line(error)}")
        return EXIT_USAGE
    if isinstance(error, SymgradError) or (isinstance(error, BAD_INPUT) and not raised_inside_symgrad(error)):
        say(f"symgrad: error: {one_line(error)}")  # torch's own error for the user's model is the user's to fix
        return EXIT_USAGE
    where = f" in {blamed_op(error)}" if blamed_op(error) else ""
    say(
        f"symgrad: error: internal error{where}: {type(error).__name__}: {one_line(error)} (a bug in symgrad: please "
        "report it; --debug shows the traceback)"
    )
    return EXIT_USAGE


_PACKAGE = Path(__file__).resolve().parents[1]


def raised_inside_symgrad(error: BaseException) -> bool:
    """Whether the innermost frame of ``error``'s traceback is symgrad's own code (not torch's, not the user's)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and _PACKAGE in Path(frames[-1].filename).resolve().parents


def blamed_op(error: BaseException) -> str | None:
    """The op symgrad was working on when ``error`` escaped: a tensor node found in the innermost frames."""
    tb, found = error.__traceback__, None
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, Tensor) and value.op is not None:
                found = value.op.name
        tb = tb.tb_next
    return found
