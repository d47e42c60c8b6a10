"""The work budget: entrywise work is estimated before it is done, and refused when it is too large; and long
work runs against a clock.

An entry of a symbolic tensor is a SymPy expression; building them costs about one object per
term, so a matrix product of n×n matrices costs n³ and a determinant of an n×n matrix of symbols
n!·n. Above :data:`MAX_TERMS` symgrad refuses in one line and names the ways out: symbolic shapes
(the matrix law costs the same at every size), smaller sizes, or numbers alone.

Work whose cost an estimate cannot bound (differentiating, simplifying, proving) runs under
:func:`time_limit`: the loops that do it call :func:`tick`, which, past about 2 seconds, reports progress in one
line on stderr and, past the limit, refuses with :class:`WorkBudgetError` naming the way out. A limit counts the
CPU time of this process (all its threads), not the wall clock: a verdict must not depend on how busy the machine
is. A wall-clock backstop, :data:`WALL_BACKSTOP` times the limit, ends work that waits instead of computing.

>>> import symgrad as sg
>>> x = sg.symbols("x", (100_000, 100_000))
>>> x.sum().sympy()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
symgrad.WorkBudgetError: the entries of x.sum() would take about ... terms (symgrad's limit is 2,000,000): ...
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import WorkBudgetError

if TYPE_CHECKING:
    from .tensor import Tensor

MAX_TERMS = 2_000_000
"""The largest entrywise work symgrad starts, in SymPy terms (a product of 1000×1000 matrices is 10⁹)."""


def _numel(shape: tuple) -> int:
    return math.prod(int(d) for d in shape)


def node_cost(node: Tensor) -> int:
    """About how many terms building ``node``'s entries from its inputs' takes (0 for symbolic shapes, which
    have no entries: asking for them raises SymbolicShapeError)."""
    if not all(isinstance(d, int) for part in (node, *node.inputs) for d in part.shape):
        return 0
    if node.op is None:
        return _numel(node.shape)
    inputs = [tuple(int(d) for d in part.shape) for part in node.inputs]
    if node.op.cost is not None:
        return int(node.op.cost(*inputs, **node.attrs))
    return _numel(node.shape) + sum(_numel(shape) for shape in inputs)


def check_budget(nodes: Iterable[Tensor], what: Callable[[], str]) -> None:
    """Refuse, in one line, when building the entries of ``nodes`` would exceed :data:`MAX_TERMS`.
    ``what`` names them, called only then: a tensor's name may print its whole expression."""
    total = sum(node_cost(node) for node in nodes)
    if total > MAX_TERMS:
        raise WorkBudgetError(
            f"the entries of {what()} would take about {total:,} terms (symgrad's limit is {MAX_TERMS:,}): "
            "give symbolic shapes (e.g. --shape A=n,m) for the law that holds at every size, or smaller sizes"
        )


PROGRESS_AFTER = 2.0  # seconds of work before the first progress line
PROGRESS_EVERY = 5.0  # seconds between progress lines
WALL_BACKSTOP = 10.0  # a limit of s seconds of CPU time also ends the work after 10·s + 30 s on the wall clock
_BACKSTOP_EXTRA = 30.0


@dataclass
class _Clock:
    seconds: float | None
    what: str
    way_out: str
    report: Callable[[str], None]
    start: float = field(default_factory=time.monotonic)
    cpu_start: float = field(default_factory=time.process_time)
    reported: float = 0.0
    status: str = ""  # the last tick's status, for the alarm's message (formatted only then)
    status_args: tuple = ()


class _Running(threading.local):
    """The clocks running in this thread (each thread's work has its own limits)."""

    def __init__(self) -> None:
        self.clocks: list[_Clock] = []


_RUNNING = _Running()


def _stderr(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed stderr is no reason to stop the work
        pass


@contextlib.contextmanager
def time_limit(
    seconds: float | None, what: str, way_out: str, *, report: Callable[[str], None] | None = _stderr
) -> Iterator[None]:
    """Run the block against a clock: :func:`tick` refuses past ``seconds`` (None: no limit, progress only) with
    ``what`` and ``way_out`` in the message, and reports progress with ``report`` (None: quietly).

    >>> with time_limit(0.0, "a slow proof", "pass --no-check", report=None):
    ...     tick("entry 1 of 9")
    Traceback (most recent call last):
    ...
    symgrad.WorkBudgetError: a slow proof did not finish within 0 s (at entry 1 of 9): pass --no-check
    """
    clock = _Clock(seconds, what, way_out, report or (lambda line: None))
    _RUNNING.clocks.append(clock)
    alarm = _arm()
    try:
        yield
    except (SystemError, TypeError):
        # the alarm's refusal, raised inside C code (NumPy summing SymPy terms), comes out as one of these
        if _over(clock, time.monotonic(), time.process_time()):
            raise _refuse(clock, clock.status.format(*clock.status_args)) from None
        raise
    finally:
        _RUNNING.clocks.remove(clock)
        if alarm:
            _arm()


def _over(clock: _Clock, now: float, cpu: float) -> bool:
    if clock.seconds is None:
        return False
    return cpu - clock.cpu_start > clock.seconds or now - clock.start > WALL_BACKSTOP * clock.seconds + _BACKSTOP_EXTRA


def _expired(now: float) -> _Clock | None:
    cpu = time.process_time()
    return next((c for c in _RUNNING.clocks if _over(c, now, cpu)), None)


def _refuse(clock: _Clock, status: str) -> WorkBudgetError:
    at = f" (at {status})" if status else ""
    return WorkBudgetError(f"{clock.what} did not finish within {clock.seconds:g} s{at}: {clock.way_out}")


def _next_check(clock: _Clock, now: float, cpu: float) -> float:
    """The wall-clock time at which ``clock`` may run out: its CPU time cannot grow faster than the wall clock
    times the threads that compute, so the alarm checks again at least every second."""
    assert clock.seconds is not None
    cpu_left = clock.seconds - (cpu - clock.cpu_start)
    backstop = clock.start + WALL_BACKSTOP * clock.seconds + _BACKSTOP_EXTRA
    return min(now + max(min(cpu_left, 1.0), 0.0), backstop)


def _on_alarm(signum: int, frame: object) -> None:
    """A single SymPy call can run for many seconds between two ticks: the alarm reports progress then, and stops
    it at the limit."""
    now = time.monotonic()
    clock = _expired(now)
    if clock is not None:
        signal.setitimer(signal.ITIMER_REAL, 0.5)  # again, should some code catch the error and carry on
        raise _refuse(clock, clock.status.format(*clock.status_args))
    if _RUNNING.clocks:
        _progress(_RUNNING.clocks[0], now, _RUNNING.clocks[0].status.format(*_RUNNING.clocks[0].status_args))
    _arm()


def _progress(clock: _Clock, now: float, where: str) -> None:
    """One progress line, when the work has run past PROGRESS_AFTER and the last line is PROGRESS_EVERY old."""
    elapsed = now - clock.start
    if elapsed >= PROGRESS_AFTER and now - clock.reported >= PROGRESS_EVERY:
        clock.reported = now
        limit = f", limit {clock.seconds:g} s" if clock.seconds is not None else ""
        used = time.process_time() - clock.cpu_start
        clock.report(f"symgrad: {clock.what}: {where or 'working'} ({used:.0f} s of CPU time{limit})")


def _arm() -> bool:
    """Set the real-time alarm for the nearest limit, in the main thread, unless someone else uses SIGALRM (a test
    harness's own time limits): then the ticks alone keep the limits. Returns whether the alarm is symgrad's."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    current = signal.getsignal(signal.SIGALRM)
    if current not in (signal.SIG_DFL, _on_alarm, None):
        return False
    now, cpu = time.monotonic(), time.process_time()
    deadlines = [_next_check(c, now, cpu) for c in _RUNNING.clocks if c.seconds is not None]
    if _RUNNING.clocks:  # the next progress line, too
        outer = _RUNNING.clocks[0]
        deadlines.append(max(outer.start + PROGRESS_AFTER, outer.reported + PROGRESS_EVERY))
    if not deadlines:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        return True
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, max(min(deadlines) - time.monotonic(), 0.0) + 0.05)
    return True


def tick(status: str = "", *args: object) -> None:
    """Where long work checks its clocks (see :func:`time_limit`); ``status`` says how far it is, formatted with
    ``args`` (``str.format``) only when a line is written. Costs a clock read when no limit is running."""
    if not _RUNNING.clocks:
        return
    now = time.monotonic()
    expired = _expired(now)
    if expired is not None:
        raise _refuse(expired, status.format(*args))
    if status:
        for running in _RUNNING.clocks:
            running.status, running.status_args = status, args
    clock = _RUNNING.clocks[0]  # the outermost clock speaks for the whole command
    if now - clock.start >= PROGRESS_AFTER and now - clock.reported >= PROGRESS_EVERY:
        _progress(clock, now, status.format(*args))
