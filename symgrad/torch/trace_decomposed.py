"""Following a torch call through torch's own decomposition of it, for the calls symgrad has no rule for (see
:mod:`.decompositions`): torch's kernel runs on copies of the arguments, the decomposition on the arguments
themselves under the tracer, and the two must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import InternalError, SymgradError, UnsupportedError, WorkBudgetError
from . import decompositions
from .sizes import unguarded
from .trace_lookup import holds_tensor, user_line
from .trace_runs import flat, rebuilt


class _DecompositionError(UnsupportedError):
    """A refusal inside torch's decomposition of a call, already worded for the user's call."""


def decomposed(recorder: Any, func: Callable, name: str, args: tuple, kwargs: dict) -> tuple[Any, Any]:
    """A call symgrad has no rule for, followed through torch's own decomposition of it (see
    :mod:`.decompositions`): (the real result, its symbolic value), or (the real answer, None) for a call whose
    answer holds no tensor.

    torch's kernel runs first, on copies of the arguments; then the decomposition runs on the arguments
    themselves under the tracer, from the same random state, and must agree with the kernel: in its results,
    in what it changed in place (a running statistic) and in the random numbers it drew. Its results are the
    ones the traced code goes on with."""
    import torch

    site = user_line()
    before = torch.random.get_rng_state()
    copies = _copies((args, kwargs))
    try:
        with torch.no_grad():
            reference = func(*copies[0], **copies[1])
    except Exception as error:  # the call reads more than its arguments' values (a view's storage): not followed
        raise UnsupportedError(
            f"{name} ({site}): torch's kernel does not run on copies of its arguments ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:160]}), so symgrad cannot follow it"
        ) from None
    if not holds_tensor(reference):
        return reference, None
    torch.random.set_rng_state(before)
    differentiable = _differentiable_outputs(recorder, func, args, kwargs)
    torch.random.set_rng_state(before)
    with torch.no_grad():
        func(*_copies((args, kwargs))[0], **_copies((args, kwargs))[1])  # the kernel's draws, for the check below
    chain = [*(called for called, _ in recorder.decomposing), name]
    found = decompositions.find(func, name, args, kwargs)
    if found is None or any(func is running for _, running in recorder.decomposing):
        if len(chain) == 1:
            raise UnsupportedError(f"{name} ({site}): symgrad has no rule for it, and torch has no decomposition of it")
        raise _DecompositionError(
            f"{chain[0]} ({site}): torch decomposes it ({' → '.join(chain)}), and symgrad has no rule for {name}"
            + (", nor torch a decomposition of it" if found is None else ", whose decomposition calls itself")
        )
    origin, decomposition = found
    after = torch.random.get_rng_state()
    torch.random.set_rng_state(before)
    recorder.decomposing.append((name, func))
    try:
        with recorder.mode, unguarded():  # its shape checks decide on sizes: the probe checks what they decide
            mine = decomposition(*args, **kwargs)
    except (InternalError, WorkBudgetError, _DecompositionError):
        raise
    except SymgradError as error:
        raise _DecompositionError(
            f"{chain[0]} ({site}): in torch's decomposition ({' → '.join(chain)}, by {origin}): {error}"
        ) from None
    except Exception as error:
        raise _DecompositionError(
            f"{chain[0]} ({site}): torch's decomposition ({' → '.join(chain)}, by {origin}) fails on this call with "
            f"{type(error).__name__}: {' '.join(str(error).split())}"
        ) from None
    finally:
        recorder.decomposing.pop()
    drawn = torch.random.get_rng_state()
    if not torch.equal(drawn, after):
        torch.random.set_rng_state(after)
        raise UnsupportedError(
            f"{name} ({site}): torch's decomposition ({origin}) draws other random numbers than its kernel"
        )
    difference = _disagreement(reference, mine) or _disagreement(copies, (args, kwargs), "argument")
    difference = difference or _gradient_disagreement(func, decomposition, args, kwargs)
    if difference is not None:
        raise UnsupportedError(
            f"{name} ({site}): torch's decomposition ({origin}) disagrees with its kernel here ({difference})"
        )
    symbolic = recorder.to_symbolic(mine)
    if differentiable is not None:  # outputs torch's autograd does not differentiate (a saved mean) are constants
        symbolic = _detached_where(symbolic, iter(differentiable))
    return mine, symbolic


def _differentiable_outputs(recorder: Any, func: Callable, args: tuple, kwargs: dict) -> list[bool] | None:
    """Which tensors among the kernel's outputs torch's autograd differentiates when the arguments the traced
    graph differentiates require grad, or (if the kernel refuses that: it updates one of them in place, such as
    a running statistic) when the first of them does; None if the kernel cannot say."""
    import torch

    tensors = [t for t in _flat_tensors((args, kwargs)) if t.is_floating_point() and recorder.differentiable(t)]
    for chosen in (tensors, tensors[:1]):
        wanted = {id(t) for t in chosen}
        copied = _copies((args, kwargs), grad=True, only=lambda t, wanted=wanted: id(t) in wanted)
        if not chosen:
            return None
        try:
            with torch.enable_grad():
                outputs = _flat_tensors(func(*copied[0], **copied[1]))
        except Exception:
            continue
        return [t.requires_grad or not t.is_floating_point() for t in outputs]
    return None


def _detached_where(value: Any, differentiable: Any) -> Any:
    """``value`` with each tensor whose flag (read in order) says torch does not differentiate it detached."""
    from ..core.tensor import Tensor

    if isinstance(value, Tensor):
        flag = next(differentiable, True)
        return value if flag or not value.requires_grad else value.detach()
    if isinstance(value, (list, tuple)):
        return rebuilt(value, (_detached_where(v, differentiable) for v in value))
    return value


def _gradient_disagreement(func: Callable, decomposition: Callable, args: tuple, kwargs: dict) -> str | None:
    """How the decomposition's gradient differs from the kernel's, by torch's autograd on copies of the arguments
    with one random cotangent (a decomposition can agree in values and not in gradient: torch's reference of
    ``pdist`` takes the square root of the zero diagonal too, whose gradient is nan); None if they agree, or if
    there is no gradient to compare."""
    import torch

    state = torch.random.get_rng_state()
    try:
        runs = []
        for call in (func, decomposition):
            torch.random.set_rng_state(state)
            copied = _copies((args, kwargs), grad=True)
            leaves = [t for t in _flat_tensors(copied) if t.requires_grad]
            with torch.enable_grad():
                outputs = [t for t in _flat_tensors(call(*copied[0], **copied[1])) if t.requires_grad]
            runs.append((leaves, outputs))
        (leaves, outputs), (mine_leaves, mine_outputs) = runs
        if not leaves or not outputs or len(outputs) != len(mine_outputs):
            return None
        generator = torch.Generator().manual_seed(0)
        cotangents = [torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs]
        theirs = torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
        ours = torch.autograd.grad(mine_outputs, mine_leaves, cotangents, allow_unused=True)
    except Exception:  # no derivative to compare (a kernel without one, or a decomposition that cannot run so)
        return None
    finally:
        torch.random.set_rng_state(state)
    for k, (a, b) in enumerate(zip(theirs, ours)):
        a = torch.zeros_like(leaves[k]) if a is None else a
        b = torch.zeros_like(leaves[k]) if b is None else b
        tolerance = _CLOSE.get(str(a.dtype).replace("torch.", ""), 1e-4)
        if not torch.allclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True):
            return f"the gradient of argument {k} differs by up to {(a - b).abs().max().item():.3g}"
    return None


def _flat_tensors(value: Any) -> list[Any]:
    import torch

    return [t for t in flat(value) if isinstance(t, torch.Tensor)]


def _copies(value: Any, grad: bool = False, only: Callable[[Any], bool] | None = None) -> Any:
    """``value`` with each tensor in it replaced by a detached copy (the structure kept); with ``grad``, the
    floating copies require grad (symgrad differentiates by any of them), or those of the tensors ``only``
    accepts."""
    import torch

    if isinstance(value, torch.Tensor):
        copy = _in_same_memory(value)
        wanted = grad and copy.is_floating_point() and (only is None or only(value))
        return copy.requires_grad_() if wanted else copy
    if isinstance(value, dict):
        return {k: _copies(v, grad, only) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return rebuilt(value, (_copies(v, grad, only) for v in value))
    return value


def _in_same_memory(t: Any) -> Any:
    """A detached copy of ``t`` that lies in its memory as ``t`` does (a view of a copy of its base): a kernel that
    reads memory (``as_strided``) reads the same numbers from it."""
    base = t._base
    if base is None or t.layout != base.layout or base.is_nested:
        return t.detach().clone()
    return base.detach().clone().as_strided(t.shape, t.stride(), t.storage_offset())


# how far a decomposition's numbers may be from the kernel's: rounding in another order
_CLOSE = {"float64": 1e-7, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def _disagreement(reference: Any, mine: Any, what: str = "result") -> str | None:
    """How a decomposition's results (or its arguments, after it ran) differ from the kernel's: in structure,
    shape, dtype or numbers; None if they agree."""
    import torch

    theirs, ours = flat(reference), flat(mine)
    if len(theirs) != len(ours):
        return f"{len(ours)} {what}s where the kernel gives {len(theirs)}"
    for k, (a, b) in enumerate(zip(theirs, ours)):
        if not isinstance(a, torch.Tensor):
            continue
        if not isinstance(b, torch.Tensor):
            return f"{what} {k} is a {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{what} {k}: {b.dtype} of shape {tuple(b.shape)}, the kernel's {a.dtype} of {tuple(a.shape)}"
        a, b = a.detach(), b.detach()
        if a.is_floating_point():
            tolerance = _CLOSE.get(str(a.dtype).replace("torch.", ""), 1e-4)
            if not torch.allclose(a, b, rtol=tolerance, atol=tolerance, equal_nan=True):
                return f"{what} {k} differs by up to {(a - b).abs().nan_to_num().max().item():.3g}"
        elif not torch.equal(a, b):
            return f"{what} {k} has other values"
    return None
