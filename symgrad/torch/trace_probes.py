"""The trace's probes at other sizes: the traced code runs again with each symbolic size changed, and a trace whose
calls depend on the example's sizes (a loop over ``range(x.shape[1])``) is refused; Python numbers made from the
sizes where Python gives no hook (``1.0 / x.size(-1)``) become expressions in them (:mod:`.size_numbers`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..core.errors import SymgradError, UnsupportedError
from ..core.tensor import Tensor
from .size_numbers import confirmed, fitted, power_of, scalar_differences, with_expressions
from .trace_runs import example_sizes, first_difference, flat, resized, state_kept, within

# the CPU seconds a first run takes from which the probes run on fake tensors: their first use in a process costs
# about a second, so that they pay only where the model's own numbers cost more
_FAKE_WORTH = 1.0


def probe(
    fn: Callable, model: Any, example_inputs: Sequence[Any], names: list[str], shapes: dict, first: Any, run: Callable
) -> None:
    """Run the code again with each symbolic dim at another size (one more, else one fewer, within the guards)
    and refuse the trace if it made other calls there: then its graph holds at the example's sizes only. Where
    torch's decompositions ran (they decide on plain sizes, unseen by the guards), two larger sizes are tried too."""
    sizes = example_sizes(example_inputs, names, shapes)
    numbers: dict[str, tuple[int, dict]] = {}  # dim -> its probe's size, and the Python numbers that changed
    for dim in sorted(sizes):
        _probe_dim(fn, model, example_inputs, names, shapes, first, sizes, dim, run, numbers=numbers)
        if first.decomposed:
            for larger in (sizes[dim] + 3, 2 * sizes[dim] + 5):
                step = (larger - sizes[dim],)
                _probe_dim(fn, model, example_inputs, names, shapes, first, sizes, dim, run, steps=step, required=False)
    if numbers:
        _numbers_of_sizes(fn, model, example_inputs, names, shapes, first, sizes, numbers, run)


def _numbers_of_sizes(
    fn: Callable, model: Any, example_inputs: Sequence[Any], names: list[str], shapes: dict, first: Any,
    sizes: dict[str, int], numbers: dict[str, tuple[int, dict]], run: Callable,
) -> None:  # fmt: skip
    """Make the Python numbers that changed with a size (``1.0 / x.size(-1)``) expressions in the sizes, where a
    power of the size explains them and a run at other sizes confirms it (see :mod:`.size_numbers`); else refuse
    as any other call that changes with a size."""
    symbol = {str(d): d for t in flat(first.inputs) if isinstance(t, Tensor) for d in t.shape if hasattr(d, "name")}
    example = {symbol[d]: n for d, n in sizes.items() if d in symbol}
    nodes = {p: node for _, (_, found) in numbers.items() for p, (node, _, _) in found.items()}
    expressions = {}
    for position, node in nodes.items():
        value = next(found[position][1] for _, found in numbers.values() if position in found)
        site = first.sites.get(id(node))
        where = f"the number {value!r}" + (f" at {site}" if site else ", made from the sizes, changes otherwise")
        powers = {}
        for dim, (other, found) in numbers.items():
            if position in found:
                power = power_of(sizes[dim], other, found[position][1], found[position][2])
                if power is None or dim not in symbol:
                    _refuse_changed(dim, other, sizes, where)
                powers[symbol[dim]] = power
        expression = fitted(value, example, powers)
        if expression is None or first.updates:
            dim = next(d for d, (_, found) in numbers.items() if position in found)
            _refuse_changed(dim, numbers[dim][0], sizes, where)
        expressions[position] = expression
    third = {d: n + 2 for d, n in sizes.items()}
    inputs = [resized(x, shapes.get(n, {}), third) for n, x in zip(names, example_inputs, strict=False)]
    try:
        with state_kept(model):
            third_run = run(fn, model, inputs, names, shapes) if within(first.guards.items, third) else None
    except SymgradError:
        raise
    except Exception:  # the code rejects these sizes: the numbers stay unconfirmed
        third_run = None
    at_third = {symbol[d]: n for d, n in third.items() if d in symbol}
    if third_run is None or not confirmed(expressions, first.output, third_run.output, at_third):
        dim = next(iter(numbers))
        _refuse_changed(dim, numbers[dim][0], sizes, "a Python number computed from the sizes")
    first.output = with_expressions(first.output, nodes, expressions)


def _without_numbers(
    fn: Callable, model: Any, inputs: Sequence[Any], names: list[str], shapes: dict, first: Any, run: Callable
) -> Any:
    """The run at other sizes on torch's fake tensors, which compute shapes and no numbers: the same graph as the
    first run's, or None where the code reads a number, makes a constant, or the graph differs (a real run then
    decides, so that nothing fake ever refuses a trace). For GPT-2 small the real runs took half the trace."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        # only the inputs are fake: what they touch is, a constant made from numbers is not; the user's warnings were
        # given by the first run, and torch warns of its own reads while it makes fakes
        with state_kept(model), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            second = run(fn, model, [fake.from_tensor(x) for x in inputs], names, shapes)
    except Exception:  # a number read, a constant made, or anything torch's fake tensors do not follow
        return None
    return second if first_difference(first.output, second.output, first.sites) is None else None


def _refuse_changed(dim: str, other: int, sizes: dict[str, int], difference: str) -> NoReturn:
    raise UnsupportedError(
        f"the traced code makes other calls at {dim} = {other} than at {dim} = {sizes[dim]} "
        f"({difference}): Python code that loops or decides on a symbolic size unrolls at the example's "
        f"size, so the graph would hold only there; leave {dim} out of the symbolic sizes"
    )


def _probe_dim(
    fn: Callable,
    model: Any,
    example_inputs: Sequence[Any],
    names: list[str],
    shapes: dict,
    first: Any,
    sizes: dict[str, int],
    dim: str,
    run: Callable,
    steps: tuple[int, ...] = (1, -1),
    required: bool = True,
    numbers: dict[str, tuple[int, dict]] | None = None,
) -> None:
    """One probe of ``dim`` (see :func:`probe`): at the first of ``steps`` the code runs at, or, if none and
    ``required``, a refusal."""
    failures = []
    for step in steps:
        other = {**sizes, dim: sizes[dim] + step}
        if other[dim] < 1 or not within(first.guards.items, other):
            continue
        inputs = [resized(x, shapes.get(n, {}), other) for n, x in zip(names, example_inputs, strict=False)]
        second = None
        if first.seconds >= _FAKE_WORTH:
            second = _without_numbers(fn, model, inputs, names, shapes, first, run)
        if second is None:  # the code reads numbers (or the graph differs): a real run decides
            try:
                with state_kept(model):
                    second = run(fn, model, inputs, names, shapes)
            except SymgradError:
                raise
            except Exception as error:  # the code itself rejects this size: try the other one
                failures.append(f"at {dim} = {other[dim]}: {type(error).__name__}: {' '.join(str(error).split())}")
                continue
        difference = first_difference(first.output, second.output, first.sites)
        if difference is not None:
            changed = scalar_differences(first.output, second.output) if numbers is not None else None
            if not changed:
                _refuse_changed(dim, other[dim], sizes, difference)
            numbers[dim] = (other[dim], changed)  # Python numbers made from the size: see _numbers_of_sizes
        break
    else:
        if not required:
            return
        reason = "; ".join(failures) or "other sizes break the conditions it checks"
        raise UnsupportedError(
            f"the traced code runs only at {dim} = {sizes[dim]} ({reason}), so its graph cannot be symbolic "
            f"in {dim}: leave it out of dynamic_shapes"
        )
