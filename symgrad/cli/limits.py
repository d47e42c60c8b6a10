"""The command line's time limit: ``--time-limit SECONDS``, else the environment's ``SYMGRAD_TIME_LIMIT``, else
:data:`DEFAULT_TIME_LIMIT` (see :func:`symgrad.core.budget.time_limit`).

>>> seconds("2.5")
2.5
"""

from __future__ import annotations

import argparse
import os

from ..core.errors import SymgradError


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"a time limit must be a positive number of seconds, not {text}")
    return value


DEFAULT_TIME_LIMIT = 12.0  # seconds of work: with start-up, a command answers or says why in about 15 s


def time_limit_of(args: argparse.Namespace) -> float:
    """--time-limit, else the environment's SYMGRAD_TIME_LIMIT, else :data:`DEFAULT_TIME_LIMIT`."""
    if getattr(args, "time_limit", None) is not None:
        return args.time_limit
    given = os.environ.get("SYMGRAD_TIME_LIMIT", "").strip()
    if given:
        try:
            return seconds(given)
        except argparse.ArgumentTypeError as error:
            raise SymgradError(f"SYMGRAD_TIME_LIMIT: {error}") from None
    return DEFAULT_TIME_LIMIT


def way_out(args: argparse.Namespace) -> str:
    """What a refusal at the time limit suggests, in the terms the request was made in: the command line's options,
    or the playground's form, which has a box that skips the proofs and no time limit. Symbolic sizes are suggested
    only where a size is a number.

    >>> way_out(argparse.Namespace(verb="explain", shape=["W=k,n"], in_playground=True))
    "tick 'skip the proofs and checks' (the formulas stay)"
    """
    numbers = any(any(d.strip().isdigit() for d in s.partition("=")[2].split(",")) for s in getattr(args, "shape", []))
    sizes = "smaller sizes (or symbolic ones, for the law instead of the entries) take less" if numbers else ""
    if getattr(args, "in_playground", False):
        return ", or ".join(part for part in ("tick 'skip the proofs and checks' (the formulas stay)", sizes) if part)
    skip = "--no-check skips the proofs and checks" if args.verb not in ("graph", "verify") else ""
    if args.verb == "verify":
        skip = "--order 1 skips the second order"
    return ", ".join(part for part in (skip, sizes, "--time-limit SECONDS allows more") if part)
