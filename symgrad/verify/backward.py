"""Prove a hand-written backward: ``sg.verify_backward(Fn, *example_inputs)`` for a ``torch.autograd.Function``
(or a ``torch.library`` custom op with ``register_autograd``).

The Function's code runs as it is, on the example inputs, under :func:`symgrad.trace` with symbols for every
floating input and for each incoming gradient. Its forward, run with gradients on, is the truth: symgrad derives
its vector-Jacobian product. Its forward and backward, run as torch runs them (the forward under ``no_grad``,
``ctx`` saving what it saves), give the gradients the backward claims. Each claimed gradient is then proved equal
to the true one the way :func:`symgrad.prove` proves a law: exactly, entry by entry, at the example's sizes (or at
small distinct sizes for ``dynamic_shapes``), and numerically against torch at larger ones. Where they differ the
verdict names the input, the first entry that differs, both formulas there and a small input where the numbers
differ. Where the code cannot be traced, it says so in one line and proves nothing.

>>> import torch, symgrad as sg
>>> class Square(torch.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, g):
...         (x,) = ctx.saved_tensors
...         return g * x  # the 2 is missing
>>> verdict = sg.verify_backward(Square, torch.tensor([1.0, 2.0], dtype=torch.float64))
>>> verdict.held, verdict.gradients[0].name, verdict.gradients[0].index
(False, 'x', (0,))
"""

from __future__ import annotations

import inspect
import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath
import sympy

from ..core.display import law_text
from ..core.errors import SymgradError, UnsupportedError
from ..core.graph import dims_of
from ..core.tensor import Tensor
from ..derive.forward import jvp
from ..derive.reverse import law
from ..ops.calculus import unbroadcast
from ..torch.creation import zeros
from ..torch.tracing import trace
from .applied import applied_function
from .evaluate import to_mpmath
from .functions import (
    Context,
    as_tuple,
    function_class,
    input_names,
    is_function_like,
    is_once_differentiable,
    overrides,
    run_forward,
)
from .instances import instantiate, size_assignments, size_floors
from .numbers import run_at_larger_sizes
from .prove import prove
from .zeros import differ_by, float_spelling, rounded_constants

SECOND_ORDER_CAUSES = {
    "once_differentiable": "the backward is once_differentiable: torch refuses to differentiate it again",
    "saved intermediate": "cause: a saved intermediate (the forward saves a tensor that is neither an input nor an "
    "output; torch keeps it as a constant, so nothing flows back through it)",
    "non-differentiable output": "cause: a saved output marked non-differentiable (ctx.mark_non_differentiable); "
    "torch keeps it as a constant, so nothing flows back through it",
    "detach": "cause: a .detach(), a torch.no_grad() region or an in-place change in the backward",
    "in place": "cause: torch's double backward refuses: the backward changes in place a tensor that one of its "
    "own ops saved (for instance p *= g after p = torch.softmax(z, 1)); write that step out of place (p = p * g)",
}


@dataclass
class GradientVerdict:
    """The verdict on one input's gradient."""

    name: str
    held: bool
    proof: str = ""  # what the proof says, one line per size
    index: tuple | None = None  # the first entry that differs
    claimed: str = ""  # the backward's formula there
    true: str = ""  # the true one
    example: str = ""  # a small input where the numbers differ, and both numbers
    formulas: tuple = ()  # (the backward's, the true one) at that entry, as SymPy expressions
    laws: tuple = ()  # at symbolic sizes: (the backward's, the true one) as laws, tensors of symbolic shape
    torch_refused: str = ""  # torch's message, where running the Function's own code raised


@dataclass
class BackwardVerdict:
    """What :func:`verify_backward` found: ``held`` when every gradient is proved equal to the true one."""

    function: str
    order: int
    gradients: list[GradientVerdict] = field(default_factory=list)
    second: list[GradientVerdict] = field(default_factory=list)  # the derivatives of Σ ⟨gradient, u⟩
    second_note: str = ""  # why the second order was not proved, or why it differs
    second_cause: str = ""  # the same as a key of SECOND_ORDER_CAUSES
    jvp: list[GradientVerdict] = field(default_factory=list)  # the Function's jvp, output by output
    data: list[str] = field(default_factory=list)  # inputs held at their given values (no requires_grad)

    @property
    def held(self) -> bool:
        return all(g.held for g in [*self.gradients, *self.second, *self.jvp])

    def __bool__(self) -> bool:
        return self.held

    def report(self) -> str:
        """The verdict as text: one line per gradient, and the counterexample of each that differs."""
        first = all(g.held for g in self.gradients)
        orders = "first and second order" if self.second else "first order"
        if self.held:
            verdict = f"proved ({orders})"
        elif not first:
            verdict = "WRONG at first order"
        elif not all(g.held for g in self.second):
            verdict = "WRONG at second order (first order proved)"
        else:
            verdict = f"WRONG in its jvp ({orders} proved)"
        lines = [f"{self.function}.backward: {verdict}"]
        if self.data:
            names = ", ".join(self.data)
            lines.append(f"the verdict holds for the given values of {names} (data: no gradient is checked for it)")
        lines += self._lines(self.gradients, "grad of")
        if self.second:
            lines.append("second order (differentiating through the backward, as create_graph=True does):")
            lines += self._lines(self.second, "d/d")
        elif self.order == 2 and not first:
            lines.append("second order: not checked, since the first is wrong")
        if self.second_note:
            lines.append(self.second_note)
        if self.jvp:
            lines.append("forward mode (the Function's jvp against J·t):")
            lines += self._lines(self.jvp, "jvp of", "the jvp gives")
        return "\n".join(lines)

    @staticmethod
    def _lines(verdicts: list[GradientVerdict], label: str, gives: str = "the backward gives") -> list[str]:
        lines = []
        for g in verdicts:
            lines.append(f"- {label} {g.name}: {'proved' if g.held else 'differs'}")
            lines += [f"    {line}" for line in g.proof.splitlines()]
            if not g.held and g.index is not None:
                lines.append(f"    first entry that differs: {g.name}{list(g.index)}")
                lines.append(f"    {gives}: {g.claimed}")
                lines.append(f"    {'the true one is:'.ljust(len(gives) + 1)} {g.true}")
                if g.example:
                    lines += [f"    {line}" for line in g.example.splitlines()]
                if g.laws:
                    mine, true = (law_text(t).replace("\n", "\n    ") for t in g.laws)
                    lines.append(f"    as a law, {gives}: {mine}")
                    lines.append(f"    {'the true one is:'.rjust(len(gives) + 11)} {true}")
        return lines

    __str__ = report


def verify_backward(
    fn: Any,
    *example_inputs: Any,
    dynamic_shapes: Mapping[str, Mapping[int, str]] | None = None,
    order: int = 2,
    numeric: bool = True,
) -> BackwardVerdict:
    """Prove that ``fn.backward`` (a ``torch.autograd.Function``) returns the vector-Jacobian product of its
    ``forward`` for every value of the floating inputs (see the module docstring). ``dynamic_shapes`` makes sizes
    symbolic, in torch.export's spelling (``{"x": {0: "m"}}``): then for every size. Integer inputs (targets,
    indices) keep the example's values. The gradients checked are those of the inputs that require grad (of every
    floating input when none does), as ``ctx.needs_input_grad`` tells the backward.

    With ``order=2`` (unless the backward is ``once_differentiable``), differentiating through the backward as
    ``create_graph=True`` does must give the true second derivative too; where it does not, the verdict says
    why: a saved intermediate (a tensor the forward saves that is neither an input nor an output, which torch
    keeps as a constant), or a ``.detach()``, ``torch.no_grad()`` region or in-place change in the backward."""
    import torch

    if callable(fn) and not is_function_like(fn):
        cls, example_inputs, dynamic_shapes = applied_function(fn, example_inputs, dynamic_shapes)
    else:
        cls = function_class(fn)
    if order not in (1, 2):
        raise UnsupportedError(f"verify_backward(order={order}): the order is 1 or 2")
    names = input_names(cls, len(example_inputs))
    tensors = [isinstance(x, torch.Tensor) for x in example_inputs]
    # the inputs that need a gradient: those that require grad, or, if none does, every floating one
    chosen = any(x.requires_grad for x, tensor in zip(example_inputs, tensors) if tensor)
    needs = tuple(
        tensor and x.is_floating_point() and (x.requires_grad or not chosen)
        for x, tensor in zip(example_inputs, tensors)
    )
    inputs = tuple(
        x.detach().clone().requires_grad_(need) if tensor else x
        for x, need, tensor in zip(example_inputs, needs, tensors)
    )
    probe_ctx = Context(needs)
    plain = tuple(x.detach() if t else x for x, t in zip(inputs, tensors))
    try:
        with torch.no_grad():
            outputs = as_tuple(run_forward(cls, probe_ctx, plain))
    except Exception as error:  # the user's forward failed as Python code, before symgrad ran anything
        raise SymgradError(f"{cls.__name__}'s forward raised {type(error).__name__}: {error}") from error
    generator = torch.Generator().manual_seed(0)
    cotangents = tuple(
        torch.randn(out.shape, dtype=out.dtype, generator=generator)
        if out.is_floating_point()
        else torch.zeros(out.shape, dtype=torch.float64)
        for out in outputs
    )
    grad_names = ["grad_output"] if len(outputs) == 1 else [f"grad_output{k}" for k in range(len(outputs))]
    run = _Runs(cls, needs, names, grad_names, inputs, cotangents)
    run.data = [n for n, x, need, t in zip(names, inputs, needs, tensors) if t and chosen and not need]
    if dynamic_shapes:  # the incoming gradients have the outputs' symbolic sizes
        run.dynamic_shapes = {**dynamic_shapes, **run.output_dims(dynamic_shapes)}
    run.silent = [k for k, out in enumerate(outputs) if _marked(out, probe_ctx) or not out.is_floating_point()]
    truth, claimed, leaves, gs = run.traced(as_torch=False)
    differentiable = [k for k, out in enumerate(outputs) if out.is_floating_point() and not _marked(out, probe_ctx)]
    truth, gs = [truth[i] for i in differentiable], [gs[i] for i in differentiable]
    once = is_once_differentiable(cls)
    verdict = BackwardVerdict(cls.__name__, order if not once else 1, data=[n for n in run.data if n])
    for k, (leaf, grad) in enumerate(zip(leaves, claimed)):
        if needs[k]:
            verdict.gradients.append(_verdict_for(leaf, grad, truth, gs, numeric))
        elif not tensors[k] and grad is not None:  # torch's own error, raised when backward returns
            verdict.gradients.append(GradientVerdict(names[k], False, (
                f"Function {cls.__name__}Backward returned a gradient different than None at position {k + 1}, but "
                "the corresponding forward input was not a Variable"
            )))  # fmt: skip
    if numeric and run.dynamic_shapes and verdict.held:
        run_at_larger_sizes(run, verdict.gradients, differentiable, "gradient")
    if order == 2 and once:
        verdict.second_cause = "once_differentiable"
    elif order == 2 and verdict.held:
        verdict.second = _second_order(run, differentiable, as_torch=True)
        if numeric and all(g.held for g in verdict.second):  # at the given sizes too: torch may refuse (in place)
            run_at_larger_sizes(run, verdict.second, differentiable, "second")
        refused = next((g.torch_refused for g in verdict.second if g.torch_refused), "")
        if "modified by an inplace operation" in refused:
            verdict.second_cause = "in place"
        elif not all(g.held for g in verdict.second):
            attached = _second_order(run, differentiable, as_torch=False)
            verdict.second_cause = (
                _constant_cause(probe_ctx, plain, outputs) if all(g.held for g in attached) else "detach"
            )
    verdict.second_note = SECOND_ORDER_CAUSES.get(verdict.second_cause, "")
    if overrides(cls, "jvp"):
        verdict.jvp = _jvp_verdicts(run, differentiable, numeric)
    return verdict


def _jvp_verdicts(run: _Runs, differentiable: list[int], numeric: bool) -> list[GradientVerdict]:
    """The Function's ``jvp`` on symbolic tangents against symgrad's J·t, entry by entry (at small distinct sizes
    for symbolic ones, and then the Function's own code against torch.func.jvp at larger sizes)."""
    truth, claimed, leaves = run.traced_jvp()
    tangents = run.forward_inputs(tuple(leaves[run.count :]))
    wrt = [leaf for leaf, need in zip(leaves[: run.count], run.needs) if need]
    moved = [t for t, need in zip(tangents, run.needs) if need]
    true = jvp([truth[i] for i in differentiable], wrt, moved, simplified=False)
    verdicts = []
    for i, expected in zip(differentiable, true):
        mine = claimed[i] if i < len(claimed) else None
        verdicts.append(_entries_verdict(f"output {i}" if len(truth) > 1 else "the output", mine, expected))
    if numeric and run.dynamic_shapes and all(v.held for v in verdicts):
        run_at_larger_sizes(run, verdicts, differentiable, "jvp")
    return verdicts


def _entries_verdict(name: str, mine: Any, expected: Tensor) -> GradientVerdict:
    if mine is None:
        mine = zeros(*expected.shape, dtype=expected.dtype)
    if not isinstance(mine, Tensor) or tuple(map(str, mine.shape)) != tuple(map(str, expected.shape)):
        return GradientVerdict(name, False, f"the jvp returned {getattr(mine, 'shape', mine)} for {name}")
    dims = dims_of([mine, expected])
    assignments = list(size_assignments(dims)) if dims else [{}]
    for assignment in assignments:
        found = _first_difference(mine, expected, assignment)
        if found is not None:
            index, a, e = found
            return GradientVerdict(name, False, "exact: FAILED", index, _short(a), _short(e), formulas=(a, e))
    sizes = "; ".join(", ".join(f"{k}={v}" for k, v in s.items()) or "the given sizes" for s in assignments)
    return GradientVerdict(name, True, f"exact at {sizes}: held")


class _Runs:
    """The Function's code under :func:`symgrad.trace`, as the truth (its forward differentiated) and as what it
    claims (its forward, then its backward). Inputs that are no tensors (numbers, None, ...) are constants: the
    traced code takes the tensors, and the forward gets the constants back at their places."""

    def __init__(self, cls: type, needs: tuple, names: list[str], grad_names: list[str], inputs: tuple, grads: tuple):
        import torch

        self.cls, self.needs, self.grad_names = cls, needs, grad_names
        self.count = len(needs)
        self.constants = {k: x for k, x in enumerate(inputs) if not isinstance(x, torch.Tensor)}
        self.tensor_names = [n for k, n in enumerate(names) if k not in self.constants]
        self.tensor_inputs = tuple(x for k, x in enumerate(inputs) if k not in self.constants)
        self.names = [*self.tensor_names, *grad_names]
        self.examples = (*self.tensor_inputs, *grads)
        self.dynamic_shapes: Any = None
        self.data: list[str] = []  # inputs that keep their values (they do not require grad, and another does)
        self.cache: dict[bool, tuple] = {}
        self.silent: list[int] = []  # outputs marked non-differentiable: torch gives the backward zeros for them

    def forward_inputs(self, tensors: tuple) -> tuple:
        """The forward's inputs: these tensors, with the constants at their places."""
        given = iter(tensors)
        return tuple(self.constants[k] if k in self.constants else next(given) for k in range(self.count))

    def output_dims(self, dynamic_shapes: Mapping) -> dict[str, dict[int, str]]:
        """``dynamic_shapes`` entries for the incoming gradients: each output's symbolic sizes, from a trace of the
        forward alone."""
        cls, needs = self.cls, self.needs

        def forward(*xs: Any) -> tuple:
            return as_tuple(run_forward(cls, Context(needs), self.forward_inputs(xs)))

        _name_arguments(forward, self.tensor_names)
        outputs = as_tuple(trace(forward, *self.tensor_inputs, dynamic_shapes=dynamic_shapes).output)
        return {name: _symbolic_axes(out) for name, out in zip(self.grad_names, outputs)}

    def user_code(self, run: Any) -> tuple:
        """``run()``, with an exception the Function's own code raises said as the Function's, in one line."""
        try:
            return run()
        except SymgradError:
            raise
        except Exception as error:  # the user's forward, setup_context, backward or jvp failed as Python code
            raise SymgradError(f"{self.cls.__name__}'s code raised {type(error).__name__}: {error}") from error

    def traced(self, *, as_torch: bool) -> tuple:
        """(true outputs, claimed gradients, input leaves, incoming-gradient leaves). ``as_torch``: the forward under
        no_grad as torch runs it, so that what it saves is a constant but for its inputs and outputs, and the
        backward recorded as ``create_graph=True`` records it; else the forward's graph kept throughout (the values
        are the same, and a graph at concrete sizes is kept for a proof to instantiate)."""
        if as_torch not in self.cache:
            self.cache[as_torch] = self.user_code(lambda: self._trace(as_torch))
        return self.cache[as_torch]

    def traced_jvp(self) -> tuple:
        """(true outputs, the tangents the Function's jvp gives, the leaves: inputs, then one tangent per input)."""
        import torch

        cls, count = self.cls, len(self.tensor_inputs)

        def both(*args: Any) -> tuple:
            xs, ts = self.forward_inputs(args[:count]), self.forward_inputs(args[count:])
            ts = tuple(None if k in self.constants else t for k, t in enumerate(ts))
            truth = as_tuple(run_forward(cls, Context(self.needs), xs))
            ctx = Context(self.needs)
            run_forward(cls, ctx, xs)
            ctx.saved = getattr(ctx, "saved_for_forward", ctx.saved)  # jvp reads what save_for_forward kept
            return (*truth, *as_tuple(cls.jvp(ctx, *ts)))

        inputs = self.tensor_inputs
        tangents = tuple(torch.randn_like(x) if x.is_floating_point() else torch.zeros_like(x) for x in inputs)
        names = [*self.tensor_names, *(f"tangent_{n}" for n in self.tensor_names)]
        _name_arguments(both, names)
        given = self.dynamic_shapes or {}
        shapes = {n: given[n] for n in self.tensor_names if n in given}
        shapes.update({f"tangent_{n}": given[n] for n in self.tensor_names if n in given})
        traced = self.user_code(
            lambda: trace(
                both, *inputs, *tangents, dynamic_shapes=shapes or None, symbolic_values=self.symbolic_names(names)
            )
        )
        results = as_tuple(traced.output)
        outputs = len(self.grad_names)
        return results[:outputs], results[outputs:], (*self._leaves(traced.inputs[:count]), *traced.inputs[count:])

    def symbolic_names(self, names: list[str]) -> set[str]:
        """The traced arguments that stand for symbols: all but the data inputs, which keep their values."""
        return {n for n in names if n not in self.data}

    def _leaves(self, traced: tuple) -> tuple:
        """The traced leaves of the forward's inputs, None for the constants."""
        return tuple(None if k in self.constants else x for k, x in enumerate(self.forward_inputs(traced)))

    def _trace(self, as_torch: bool) -> tuple:
        import torch

        cls, count = self.cls, len(self.tensor_inputs)
        backward = inspect.unwrap(cls.backward) if is_once_differentiable(cls) else cls.backward

        def both(*args: Any) -> tuple:
            xs, gs = self.forward_inputs(args[:count]), args[count:]
            truth = as_tuple(run_forward(cls, Context(self.needs), xs))
            ctx = Context(self.needs)
            if as_torch:
                with torch.no_grad():
                    mine = as_tuple(run_forward(cls, ctx, xs))
                # a saved output is the output itself (its gradient flows through this Function again), unless it is
                # marked non-differentiable: then, as an intermediate, it is a constant
                ctx.saved = tuple(t if _marked(t, ctx) else _same_as(t, mine, truth) for t in ctx.saved)
            else:
                run_forward(cls, ctx, xs)
            gs = tuple(torch.zeros_like(g) if k in self.silent else g for k, g in enumerate(gs))
            return (*truth, *as_tuple(backward(ctx, *gs)))

        _name_arguments(both, self.names)
        symbolic = self.symbolic_names(self.names)
        traced = trace(both, *self.examples, dynamic_shapes=self.dynamic_shapes, symbolic_values=symbolic)
        results = as_tuple(traced.output)
        outputs = len(self.grad_names)
        truth, claimed = results[:outputs], results[outputs:]
        if len(claimed) != self.count:
            raise SymgradError(
                f"function backward returned an incorrect number of gradients (expected {self.count}, got "
                f"{len(claimed)})"
            )
        return truth, claimed, self._leaves(traced.inputs[:count]), traced.inputs[count:]


def _name_arguments(fn: Any, names: list[str]) -> None:
    """Give ``fn(*args)`` these argument names, which :func:`symgrad.trace` names its inputs after."""
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])


def _constant_cause(ctx: Context, inputs: tuple, outputs: tuple) -> str:
    """Which saved tensor torch keeps as a constant: an output marked non-differentiable, or an intermediate."""
    marked = [t for t in ctx.saved if _marked(t, ctx)]
    others = [t for t in ctx.saved if not any(t is x for x in (*inputs, *outputs))]
    return "non-differentiable output" if marked and not others else "saved intermediate"


def _same_as(t: Any, mine: tuple, truth: tuple) -> Any:
    return next((real for out, real in zip(mine, truth) if t is out), t)


def _second_order(run: _Runs, differentiable: list[int], *, as_torch: bool) -> list[GradientVerdict]:
    """Differentiating Σ ⟨claimed gradient, u⟩ by each input and incoming gradient against the same for the true
    gradients (symbolic u), all from one trace (a law differentiates by the very leaves it was built on)."""
    from ..core.constructors import symbols_like

    truth, claimed, leaves, gs = run.traced(as_torch=as_torch)
    truth, gs = [truth[i] for i in differentiable], [gs[i] for i in differentiable]
    wrt = [leaf for leaf, need in zip(leaves, run.needs) if need]
    mine = [g for g, need in zip(claimed, run.needs) if need]
    true = list(law(truth, wrt, gs))
    directions = [symbols_like(t, f"u_{leaf.name}", distinct=True) for t, leaf in zip(true, wrt)]
    claimed_sum = sum((_full(c, leaf) * u).sum() for c, leaf, u in zip(mine, wrt, directions))
    true_sum = sum((t * u).sum() for t, u in zip(true, directions))
    targets = [*wrt, *gs]
    laws = list(law([claimed_sum], targets))
    # exact proofs only: torch cannot differentiate a sum that does not read a target (a bias, one order up)
    return [_verdict_for(target, found, [true_sum], [None], False) for target, found in zip(targets, laws)]


def _full(grad: Any, leaf: Tensor) -> Tensor:
    if grad is None:
        return zeros(*leaf.shape, dtype=leaf.dtype)
    return grad if tuple(map(str, grad.shape)) == tuple(map(str, leaf.shape)) else unbroadcast(grad, leaf.shape)


def _symbolic_axes(out: Any) -> dict[int, str]:
    """The axes of a traced output whose sizes are dimension names, by name."""
    axes = {}
    for axis, size in enumerate(getattr(out, "shape", ())):
        if isinstance(size, int):
            continue
        if not isinstance(size, sympy.Symbol):
            raise UnsupportedError(
                f"the forward's output has a size {size} that is no dimension name; give that size its own name in "
                "dynamic_shapes, or leave it out"
            )
        axes[axis] = str(size)
    return axes


def _marked(out: Any, ctx: Context) -> bool:
    return any(out is t for t in ctx.non_differentiable)


def _verdict_for(leaf: Tensor, grad: Any, outs: list, gs: list, numeric: bool) -> GradientVerdict:
    name = leaf.name
    if grad is None:
        grad = zeros(*leaf.shape, dtype=leaf.dtype)
    if not isinstance(grad, Tensor):
        return GradientVerdict(name, False, f"the backward returned a {type(grad).__name__} for {name}")
    summed = ""
    if tuple(str(d) for d in grad.shape) != tuple(str(d) for d in leaf.shape):
        if not _expandable(leaf.shape, grad.shape):
            got, expected = (", ".join(map(str, s)) for s in (grad.shape, leaf.shape))
            return GradientVerdict(
                name,
                False,
                f"Function backward returned an invalid gradient for {name} - got [{got}] but expected shape "
                f"compatible with [{expected}]",
            )
        summed = f"the backward returns shape ({', '.join(map(str, grad.shape))}) for {name}; torch sums it down"
        grad = unbroadcast(grad, leaf.shape)  # torch sums a gradient of a broadcast shape down, as here
    # at the example's sizes the exact proof covers every value; numbers against torch add nothing there, and a
    # .detach() at concrete sizes keeps formulas, not a graph that other sizes can be made of
    symbolic = bool(dims_of([leaf, *outs]))
    with rounded_constants() as rounded:
        proof = prove(outs, [leaf], gs, laws=[grad], numeric=numeric and symbolic, sizes=None if symbolic else [{}])
    text = str(proof) + (f"\n{summed}, as here" if summed else "")
    if rounded and proof.held:
        taken = ", ".join(f"{written} for {exact}" for written, exact in rounded)
        text += f"\ndecimal constants taken as roundings, within one unit of their last digit: {taken}"
    verdict = GradientVerdict(name, proof.held, text)
    if not proof.held:
        _counterexample(verdict, leaf, grad, outs, gs)
    return verdict


def _expandable(shape: tuple, to: tuple) -> bool:
    """Whether ``shape`` broadcasts to ``to`` (torch then sums a gradient of shape ``to`` down to it)."""
    if len(shape) > len(to):
        return False
    return all(str(a) == str(b) or a == 1 for a, b in zip(shape[::-1], to[::-1]))


def _counterexample(verdict: GradientVerdict, leaf: Tensor, grad: Tensor, outs: list, gs: list) -> None:
    """The first entry that differs at the smallest sizes, both formulas there, and numbers at a random point."""
    (true,) = law(outs, [leaf], gs)
    dims = dims_of([grad, true, leaf])
    found = None
    floors = size_floors([grad, true, leaf, *outs])  # above the index values given (a class count)
    for assignment in size_assignments(dims, floors=floors) if dims else [{}]:  # (the proof may fail at the second)
        found = _first_difference(grad, true, assignment)
        if found is not None:
            break
    if found is None:
        return
    index, a, e = found
    verdict.index, verdict.claimed, verdict.true, verdict.formulas = index, _short(a), _short(e), (a, e)
    if dims:
        verdict.laws = (grad, true)
    point = _random_point(a, e)
    if point:
        mine, theirs = _apart(*(float(_real_value(side, point)) for side in (a, e)))
        shown = ", ".join(f"{s} = {v}" for s, v in sorted(point.items(), key=lambda p: str(p[0]))[:12])
        verdict.example = (
            f"at {shown}{' …' if len(point) > 12 else ''}"
            + (f" ({', '.join(f'{k}={v}' for k, v in assignment.items())})" if assignment else "")
            + f":\nthe backward gives {mine}, the true one {theirs}"
        )


def _apart(mine: float, theirs: float) -> tuple[str, str]:
    """Two numbers with as many digits as it takes to tell them apart (6 at least, 17 at most)."""
    for digits in range(6, 18):
        shown = f"{mine:.{digits}g}", f"{theirs:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return shown


def _first_difference(claimed: Tensor, true: Tensor, sizes: dict) -> tuple | None:
    """(index, claimed entry, true entry) of the first entry where the two differ at ``sizes`` (a size
    assignment, empty for concrete shapes), or None."""
    made = instantiate([claimed, true], sizes) if sizes else {id(claimed): claimed, id(true): true}
    a, e = made[id(claimed)].entries(), made[id(true)].entries()
    for index in _indices(a.shape):
        mine, expected = sympy.sympify(a[index]), sympy.sympify(e[index])
        if differ_by(mine, expected) is None:
            return index, mine, expected
    return None


def _indices(shape: tuple) -> list[tuple]:
    return list(itertools.product(*(range(n) for n in shape)))


def _short(expr: sympy.Expr, limit: int = 160) -> str:
    text = str(_as_written(sympy.sympify(expr)))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _as_written(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with each float constant (held as its exact binary fraction) spelled as Python writes it: 1e-05,
    not 5902958103587057/590295810358705651712."""
    spelled = {}
    for r in expr.atoms(sympy.Rational):
        found = float_spelling(r) if int(r.q) > 2**10 else None  # 1/2 and 3/4 read better as fractions
        if found is not None:
            spelled[r] = sympy.Float(found[0], max(found[1], 1))
    return expr.xreplace(spelled) if spelled else expr


def _random_point(claimed: sympy.Expr, true: sympy.Expr) -> dict:
    """Small rational values for the symbols of both formulas at which they differ (a few tries)."""
    rng = random.Random(0)
    symbols = sorted(claimed.free_symbols | true.free_symbols, key=str)
    for _ in range(8):
        point = {s: sympy.Rational(rng.randint(-20, 20), 10) for s in symbols}
        try:  # numerically, at 30 digits: SymPy's exact substitution took seconds on a second-order formula
            mine, theirs = _real_value(claimed, point), _real_value(true, point)
        except (KeyError, ArithmeticError, TypeError, ValueError):
            continue
        if mine is not None and theirs is not None and abs(mine - theirs) > 1e-12 * (1 + abs(theirs)):
            return point
    return {}


def _real_value(expr: sympy.Expr, point: dict[Any, sympy.Rational]) -> Any:
    """``expr`` at ``point`` (30 digits), None where it is not a finite real number."""
    value = to_mpmath(expr, {s: Fraction(int(v.p), int(v.q)) for s, v in point.items()}, digits=30)
    if isinstance(value, mpmath.mpc) or not mpmath.isfinite(value):
        return None
    return value
