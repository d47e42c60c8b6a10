"""``sg.trace``: run existing torch code — real ``torch`` calls, real ``nn.Module`` objects — symbolically.

The function runs as it is, on the real example inputs, under a :class:`torch.overrides.TorchFunctionMode`
that sees every torch call. Each call is also made in :mod:`symgrad.torch` on the symbolic tensors that
stand for its arguments: the inputs, the module's parameters (named as the module names them), and
constants for any other tensor. Python control flow (loops over time steps, shapes) runs on the real
values, exactly as it would without symgrad; the symbolic graph records what happened.

>>> import torch, symgrad as sg
>>> torch.manual_seed(0)  # doctest: +ELLIPSIS
<torch._C.Generator object at ...>
>>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
>>> traced = sg.trace(model, torch.randn(4, 3))
>>> sorted(traced.parameters)
['0.bias', '0.weight']
>>> traced.output.shape
(4, 2)
"""

from __future__ import annotations

import functools
import inspect
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import torch as symbolic_torch
from ..core.assignment import assigned
from ..core.constructors import deferred_tensor, symbols, tensor
from ..core.dims import dims
from ..core.errors import (
    InternalError,
    ShapeError,
    SymbolicShapeError,
    SymgradError,
    TorchError,
    UnsupportedError,
    ValuesUnknownError,
    WorkBudgetError,
)
from ..core.graph import dims_of
from ..core.tensor import Tensor
from ..core.tensor import method as tensor_method
from .builtin_arguments import as_functional
from .leaf_values import distrust, snapshot_of, symgrad_alone
from .masked_selection import COUNTS, assigned_selection, carried, count_refusal, mask_of, selection
from .nn.modules.module import leaf_name
from .nn.normalization import running_statistics
from .sizes import Guard, Guards, SizeFloat, SizeInt, holds_size, sizes_answer
from .torch_numbers import TORCH_NUMBERS, constant_of
from .trace_autocast import again_in_autocast_state, as_autocast_computes, autocast_state
from .trace_decomposed import decomposed
from .trace_draws import attention_call, attention_draws, draws_noise, dropout_call, random_call
from .trace_effects import (
    VALUE_READS,
    Assign,
    BatchNormUpdate,
    batch_norm_arguments,
    batch_norm_updates,
    check_update,
    check_value_read,
    draws_random,
    modes_that_matter,
    out_of_place,
    without_inplace,
)
from .trace_lookup import (
    PLAIN,
    failing_line,
    function_name,
    holds_tensor,
    returns_indices,
    symbolic_function,
    symbolic_function_named,
    user_line,
)
from .trace_owners import holder, owners, tensor_attributes
from .trace_probes import probe
from .trace_runs import flat, made_from_numbers, rebuilt, state_kept


@dataclass
class Trace:
    """What :func:`trace` returns: the symbolic output, the leaves for the inputs and the parameters."""

    output: Any
    inputs: list[Tensor]
    parameters: dict[str, Tensor] = field(default_factory=dict)
    buffers: dict[str, Tensor] = field(default_factory=dict)
    # the model's plain tensor attributes the code read (a fixed positional embedding), by path: read-only state
    attributes: dict[str, Tensor] = field(default_factory=dict)
    guards: list[Guard] = field(default_factory=list)  # decisions on symbolic sizes its graph holds under
    # what a run of the model does to its buffers (trace_effects.BatchNormUpdate, Assign), in the order it does it
    updates: list[Any] = field(default_factory=list)
    # the training flag, at trace time, of each submodule whose computation depends on it (BatchNorm, Dropout, …)
    modes: dict[str, bool] = field(default_factory=dict)
    updated_inputs: list[str] = field(default_factory=list)  # inputs the traced code changed in place
    autocast: tuple[tuple[str, str], ...] = ()  # the torch.autocast it ran under: (device type, dtype) pairs
    random_draws: list[str] = field(default_factory=list)  # random numbers drawn (not dropout's): where
    # the nn.Module whose parameter and buffer paths are the names above: the traced model, or one holding the
    # modules a loss function closes over (``model`` for ``model.fc1.weight``); an emitted drop-in takes it
    model: Any = None
    # the same trace() call again, as the model now is: how a drop-in gets the model's other mode (see in_modes)
    again: Callable[[], Trace] | None = field(default=None, repr=False, compare=False)

    def in_modes(self, modes: Mapping[str, bool]) -> Trace:
        """The same code traced again with the given submodules (paths of :attr:`modes`) in the given training
        modes; the model's modes are restored afterwards."""
        modules = {path: self.model.get_submodule(path) for path in modes}
        before = {path: module.training for path, module in modules.items()}
        try:
            for path, module in modules.items():
                module.training = modes[path]
            return self.again()
        finally:
            for path, module in modules.items():
                module.training = before[path]


class _Recorder:
    """Maps real tensors to the symbolic tensors that stand for them, call by call."""

    def __init__(self) -> None:
        self.symbolic: dict[int, Tensor] = {}
        self.kept: list[Any] = []  # the real tensors mapped, kept alive so that their ids stay theirs
        self.sites: dict[int, str] = {}  # id of a symbolic result -> the user's line that made it
        self.viewed: set[int] = set()  # ids of real tensors that some view shares storage with
        self.buffer_paths: dict[int, str] = {}  # id of a real buffer -> its path in the model
        self.effects: list[Any] = []  # running statistics' updates (trace_effects.BatchNormUpdate)
        self.draws = 0  # dropouts drawn so far in this run: their noise is numbered in this order
        self.random_sites: list[str] = []  # other random draws: their numbers are constants of the graph
        self.leaves: set[int] = set()  # ids of the symbolic leaves of the inputs and parameters
        self.without_grad: set[int] = set()  # ids of real tensors computed under torch.no_grad(): no history
        self.mode: Any = None  # the TorchFunctionMode that calls _call: torch's decompositions run under it
        # the calls (name, torch function) whose decompositions are running, outermost first
        self.decomposing: list[tuple[str, Any]] = []
        self.decomposed = False  # whether a decomposition ran (deciding on plain sizes, which the probe checks)
        self.autocast = autocast_state()  # torch.autocast's devices and dtypes: the graph holds its casts

    def differentiable(self, real: Any) -> bool:
        """Whether the tensor's symbolic value depends on an input or a parameter (torch.func's view: every input
        can be differentiated by)."""
        symbolic = self.symbolic.get(id(real))
        return isinstance(symbolic, Tensor) and any(id(leaf) in self.leaves for leaf in symbolic.leaves().values())

    def note_views(self, real: Any) -> None:
        """Remember the storage a view shares, so that an in-place update of either is refused."""
        import torch

        for value in flat(real):
            if isinstance(value, torch.Tensor) and value._is_view():
                self.viewed.add(id(value._base))
                self.kept.append(value._base)

    def bind(self, real: Any, symbolic: Tensor) -> None:
        self.symbolic[id(real)] = symbolic
        self.kept.append(real)

    def symbolic_call_args(self, args: tuple, kwargs: dict) -> tuple[Any, dict]:
        return self.to_symbolic(args), {k: self.to_symbolic(v) for k, v in kwargs.items()}

    def to_symbolic(self, value: Any) -> Any:
        import torch

        if isinstance(value, torch.Tensor):
            known = self.symbolic.get(id(value))
            if known is None:  # a tensor made inside the function, or a constant: its numbers
                if value.is_leaf and value.requires_grad:  # a parameter where symgrad did not look: never frozen
                    raise UnsupportedError(
                        f"the traced code ({user_line()}) uses a tensor that requires grad (shape "
                        f"{tuple(value.shape)}) which is neither an input nor a parameter symgrad found: pass it "
                        "as an input, or name what holds it with modules={'name': module_or_parameter}"
                    )
                known = constant_of(value)
                self.bind(value, known)
            return known
        if isinstance(value, torch.Size):  # a tuple too, but one of ints: its symbolic sizes make a plain tuple
            return tuple(self.to_symbolic(v) for v in value)
        if isinstance(value, (list, tuple)):
            return rebuilt(value, (self.to_symbolic(v) for v in value))
        if isinstance(value, torch.dtype):
            return str(value).replace("torch.", "")
        if isinstance(value, (SizeInt, SizeFloat)):
            return value.symbolic
        if isinstance(value, slice):  # x[: x.shape[0] // 2]: the bounds of a slice may be sizes too
            return slice(*(self.to_symbolic(v) for v in (value.start, value.stop, value.step)))
        return value

    def record(self, real: Any, symbolic: Any) -> None:
        import torch

        if isinstance(real, torch.Tensor) and isinstance(symbolic, Tensor):
            self.bind(real, symbolic)
        elif isinstance(real, (tuple, list)) and isinstance(symbolic, (tuple, list)):
            for r, s in zip(real, symbolic, strict=False):
                self.record(r, s)


# What symgrad says on purpose when it cannot follow a call torch made: a refusal. Anything else it raises there
# (torch's own errors for a call torch ran, a TypeError from inside) is a bug, reported as InternalError.
REFUSALS = (UnsupportedError, WorkBudgetError, SymbolicShapeError, ValuesUnknownError)


def _dims_in(value: Any, recorder: _Recorder) -> list[str]:
    """The symbolic dims of the traced tensors among a call's arguments, by name."""
    found = {str(s) for t in flat(recorder.to_symbolic(value)) if isinstance(t, Tensor) for s in dims_of([t])}
    return sorted(found)


def _dims_named(message: str, recorder: _Recorder) -> list[str]:
    """The trace's symbolic dims that an error message names (a size made from one, passed as a number)."""
    known = {
        str(s)
        for t in recorder.symbolic.values()
        if isinstance(t, Tensor)
        for d in t.shape
        for s in getattr(d, "free_symbols", ())
    }
    return sorted(known & set(re.findall(r"[A-Za-z_]\w*", message)))


def _mode(recorder: _Recorder) -> Any:
    from torch.overrides import TorchFunctionMode

    class SymbolicMode(TorchFunctionMode):
        def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            return _call(recorder, func, args, kwargs or {})

    recorder.mode = SymbolicMode()
    return recorder.mode


def _call(recorder: _Recorder, func: Callable, args: tuple, kwargs: dict) -> Any:
    """One torch call under the trace: run it for real, and make the same call on the symbolic tensors."""
    import torch

    kind, target = symbolic_function(func)
    name = function_name(func)
    if "out" in kwargs:  # torch.norm(x, out=None) and friends: only a given out writes anywhere
        if kwargs["out"] is not None:
            raise UnsupportedError(f"{name} ({user_line()}): out= writes into a tensor in place; use the result")
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    if kind in ("attribute", "method") and target in VALUE_READS:
        check_value_read(f"{target}()", recorder.symbolic.get(id(args[0])), user_line())
    if kind in ("attribute", "method") and target == "__len__":
        _check_len(recorder.symbolic.get(id(args[0])))
    if kind in ("attribute", "method") and target in COUNTS and mask_of(recorder.symbolic.get(id(args[0]))) is not None:
        raise UnsupportedError(f"{name} ({user_line()}): {count_refusal()}")
    # the arguments as torch.nn.functional takes them (torch.batch_norm takes them in another order); the real
    # call keeps torch's own
    named = as_functional(name, args, kwargs) if kind == "function" and not inspect.isfunction(func) else (args, kwargs)
    if kind == "function" and name == "batch_norm" and batch_norm_updates(*named):
        return _batch_norm(recorder, functools.partial(func, *args, **kwargs), *named)
    if kind == "function" and name == "dropout" and draws_noise(*named):
        return dropout_call(recorder, functools.partial(func, *args, **kwargs), *named)
    if kind == "function" and name == "scaled_dot_product_attention" and attention_draws(*named):
        return attention_call(recorder, functools.partial(func, *args, **kwargs), *named)
    if draws_random(kind, name, target):
        return random_call(recorder, func, kind, target, args, kwargs)
    updated = out_of_place(kind, target if kind != "function" else name)
    if kind == "method" and target == "__setitem__":  # x[index] = value: x becomes what assigned() says
        kind, target, updated = "function", assigned, "setitem"
    if updated is not None and kind == "function" and target is None:
        target = symbolic_function_named(func, updated)
    if updated is not None and kind == "method":
        target = updated
    if updated == "copy":  # x.copy_(src): src's values, in x's shape and dtype
        kind, target = "function", _copied
    destination = None
    if updated is not None or kwargs.get("inplace"):
        destination = args[0]
        check_update(destination, recorder.viewed, name, user_line())
        tracked = recorder.differentiable(destination) and id(destination) not in recorder.without_grad
        if not torch.is_grad_enabled() and tracked:  # a tensor made under no_grad has no history to keep
            raise UnsupportedError(
                f"{name} ({user_line()}) changes a tensor that requires grad in place under torch.no_grad(): torch "
                "then keeps its gradient as if its values had not changed, which a formula cannot say"
            )
        symbolic = (
            recorder.to_symbolic(named[0]),
            {k: recorder.to_symbolic(v) for k, v in without_inplace(named[1]).items()},
        )
    else:
        symbolic = None
    grad_enabled = torch.is_grad_enabled()
    if destination is None and _lacks_rule(kind, target) and holds_tensor((args, kwargs)):
        recorder.decomposed = True
        real, result = decomposed(recorder, func, target if kind == "method" else name, args, kwargs)
        if result is None:  # a plain answer (x.is_complex()): the real answer is the answer
            return real
    else:
        real = func(*args, **kwargs) if holds_tensor((args, kwargs)) else made_from_numbers(func, args, kwargs)
        if target is assigned:  # __setitem__ returns None; the tensor it changed is the one that now stands for x
            real = destination
        if kind in ("attribute", "method") and not holds_tensor(real) and (target in PLAIN or real is not None):
            # what a tensor says of itself (x.is_nested, x.dim()): the real answer is the answer
            return sizes_answer(real, recorder.symbolic.get(id(args[0])), target, args, kwargs)
        if kind == "function" and not holds_tensor((args, kwargs)):
            if target is None or not holds_size((args, kwargs)):
                return real  # made from numbers alone (torch.zeros(2, 3)): a constant when it is used
            if isinstance(real, torch.Tensor) and "dtype" not in kwargs:  # torch's default dtype, whatever it is
                named = (named[0], {**named[1], "dtype": real.dtype})
        call = functools.partial(
            _symbolic_call, recorder, func, kind, target, *named, indices=returns_indices(func, name)
        )
        if recorder.autocast:  # the precision torch's autocast chose for the call, read off its real result
            result = as_autocast_computes(name, user_line, real, symbolic or recorder.symbolic_call_args(*named), call)
        else:
            result = call(symbolic)
    recorder.note_views(real)
    if destination is not None and isinstance(result, Tensor):
        result = _as_dtype(result, str(destination.dtype).replace("torch.", ""))  # x += y keeps x's dtype
    if not grad_enabled:  # computed under torch.no_grad(): no gradient flows through it, as in torch
        result = _detached(result)
    recorder.record(real, result)
    if not grad_enabled and destination is None:
        recorder.without_grad.update(id(value) for value in flat(real) if isinstance(value, torch.Tensor))
    if isinstance(result, Tensor):
        recorder.sites[id(result)] = user_line()
    return real


def _lacks_rule(kind: str, target: Any) -> bool:
    if kind == "function":
        return target is None
    return kind == "method" and target not in PLAIN and _method(target) is None


def _method(name: str) -> Any:
    """symgrad's ``Tensor.<name>``, or else its function of that name taking the tensor first (torch's methods are
    its functions: ``x.kron(y)`` is ``torch.kron(x, y)``)."""
    found = tensor_method(name)
    if found is None and not name.startswith("_"):
        found = getattr(symbolic_torch, name, None)
    return found if callable(found) else None


def _copied(destination: Tensor, source: Any, non_blocking: bool = False) -> Tensor:
    """What ``destination.copy_(source)`` leaves in ``destination``."""
    from ..core.tensor import wrap

    source = wrap(source)
    if tuple(source.shape) != tuple(destination.shape):
        source = source.expand(*destination.shape)
    return _as_dtype(source, destination.dtype)


def _as_dtype(t: Tensor, dtype: str) -> Tensor:
    return t if t.dtype == dtype else t.to(dtype)


def _detached(value: Any) -> Any:
    if isinstance(value, Tensor):  # whatever it was computed from: vjp differentiates by any leaf, as torch.func does
        if not value.leaves():
            return value
        detached, mask = value.detach(), mask_of(value)
        if mask is not None:  # x[mask] under no_grad is still a selection by that mask
            detached.selected_by = mask
        return detached
    if isinstance(value, (list, tuple)):
        return rebuilt(value, (_detached(v) for v in value))
    return value


def _check_len(symbolic: Any) -> None:
    """len(x) is a plain number for Python: at a symbolic first size, the graph would hold at this size only."""
    if isinstance(symbolic, Tensor) and symbolic.shape and not isinstance(symbolic.shape[0], int):
        raise UnsupportedError(
            f"len() ({user_line()}) reads the symbolic size {symbolic.shape[0]} as a plain number, so the graph "
            f"would hold at this size only: use x.shape[0], or leave {symbolic.shape[0]} out of dynamic_shapes"
        )


def _symbolic_call(
    recorder: _Recorder,
    func: Callable,
    kind: str,
    target: Any,
    args: tuple,
    kwargs: dict,
    symbolic: tuple | None,
    indices: bool = False,
) -> Any:
    """The call on the symbolic tensors (``symbolic``: the arguments, converted before an in-place call ran;
    ``indices``: torch's function returns a pooling's indices, whatever its ``return_indices`` says)."""
    try:
        sym_args, sym_kwargs = symbolic or recorder.symbolic_call_args(args, kwargs)
        if indices and target is not None:
            bound = inspect.signature(target).bind_partial(*sym_args, **sym_kwargs)
            bound.arguments["return_indices"] = True
            sym_args, sym_kwargs = bound.args, bound.kwargs
        if kind == "attribute":
            return getattr(sym_args[0], target)
        if kind == "method" and target == "__getitem__" and len(sym_args) == 2 and isinstance(sym_args[0], Tensor):
            picked = selection(*sym_args)  # x[mask] of a mask computed from the inputs
            if picked is not None:
                return picked
        if target is assigned:
            done = assigned_selection(*sym_args)  # out[mask] = f(x[mask])
            if done is not None:
                return done
        if kind == "method":
            found = _method(target)
            if found is None:
                raise UnsupportedError(f"symgrad has no Tensor.{target}")
            result = found(*sym_args, **sym_kwargs)
        elif target is None:
            raise UnsupportedError(f"symgrad has no {function_name(func)}")
        else:
            result = target(*sym_args, **sym_kwargs)
        carried(result, [*flat(list(sym_args)), *flat(sym_kwargs)])
        return result
    except REFUSALS as error:
        raise UnsupportedError(f"{function_name(func)} ({user_line()}): {error}") from None
    except (ShapeError, TorchError) as error:  # torch's own checks, which symgrad makes for every size
        symbolic_dims = _dims_in((args, kwargs), recorder) or _dims_named(str(error), recorder)
        if not symbolic_dims:
            raise InternalError(
                f"{function_name(func)} ({user_line()}): symgrad failed where torch did not, with {error} "
                "(a bug in symgrad: please report it)"
            ) from error
        raise UnsupportedError(
            f"{function_name(func)} ({user_line()}): torch runs it at the example's sizes, but not for every "
            f"{', '.join(symbolic_dims)} ({error}); leave {', '.join(symbolic_dims)} out of the symbolic sizes"
        ) from None
    except Exception as error:  # torch ran this call: any other error of symgrad's is a bug of symgrad's
        # the sizes reach the call as tensors' shapes, or as Python numbers that SymPy's message names (a count)
        symbolic_dims = _dims_in((args, kwargs), recorder) or _dims_named(str(error), recorder)
        cause = _symbolic_cause(error) if symbolic_dims else None
        if cause is not None:
            named = ", ".join(symbolic_dims)
            raise UnsupportedError(
                f"{function_name(func)} ({user_line()}): symgrad follows it at the example's sizes only, as it "
                f"{cause.format(named)}; leave {named} out of the symbolic sizes"
            ) from None
        raise InternalError(
            f"{function_name(func)} ({user_line()}): symgrad failed where torch did not, with "
            f"{type(error).__name__}: {' '.join(str(error).split())} (a bug in symgrad: please report it)"
        ) from error


# SymPy's TypeErrors where a call needs a symbolic size's value, and what the call does with it
_SYMBOLIC_CAUSES = {
    "Cannot convert expression": "needs {} as a number",  # float() of a size
    "truth value of Relational": "branches on the value of {}",  # bool() of a comparison of a size
}


def _symbolic_cause(error: Exception) -> str | None:
    """What a call did with a symbolic size that SymPy refused, as a template for the sizes' names; None for
    another error."""
    if not isinstance(error, TypeError):
        return None
    return next((cause for text, cause in _SYMBOLIC_CAUSES.items() if text in str(error)), None)


def _batch_norm(recorder: _Recorder, call: Callable[[], Any], args: tuple, kwargs: dict) -> Any:
    """F.batch_norm in training mode: the output from the batch's statistics, and the running statistics'
    update, recorded for emitted code (torch's own kernel does it there) and followed by the buffers.
    ``call`` makes the real call; ``args`` and ``kwargs`` are F.batch_norm's."""
    given = batch_norm_arguments(args, kwargs)
    sym = {key: recorder.to_symbolic(value) for key, value in given.items()}
    real = call()
    plain = {**sym, "running_mean": None, "running_var": None}
    result = _symbolic_call(recorder, call, "function", symbolic_torch.nn.functional.batch_norm, (), {}, ((), plain))
    new_mean, new_var = running_statistics(sym["input"], sym["running_mean"], sym["running_var"], given["momentum"])
    paths = {}
    for key, new in (("running_mean", new_mean), ("running_var", new_var)):
        if given[key] is not None:
            paths[key] = recorder.buffer_paths.get(id(given[key]))
            recorder.record(given[key], new)
    if all(path is not None for path in paths.values()):  # else inputs updated in place: see _run
        recorder.effects.append(
            BatchNormUpdate(
                sym["input"], paths.get("running_mean"), paths.get("running_var"), given["momentum"], given["eps"]
            )
        )
    recorder.record(real, result)
    recorder.sites[id(result)] = user_line()
    return real


def _leaf(
    real: Any, name: str, symbolic_dims: Mapping[int, str] | None, requires_grad: bool, symbolic: bool = False
) -> Tensor:
    """The leaf that stands for ``real``; its graph computes numbers below float64 as torch does."""
    leaf = _bare_leaf(real, name, symbolic_dims, requires_grad, symbolic)
    leaf.numbers_by = TORCH_NUMBERS
    return leaf


def _bare_leaf(
    real: Any, name: str, symbolic_dims: Mapping[int, str] | None, requires_grad: bool, symbolic: bool
) -> Tensor:
    dtype = str(real.dtype).replace("torch.", "")
    if symbolic_dims or (symbolic and real.dtype.is_floating_point):
        shape = tuple(
            dims(symbolic_dims[axis])[0] if axis in (symbolic_dims or {}) else int(size)
            for axis, size in enumerate(real.shape)
        )
        return symbols(name, shape, requires_grad=requires_grad, dtype=dtype)
    if real.dtype.is_floating_point:  # numbers made only if entrywise work asks for them
        return deferred_tensor(
            real.shape, snapshot_of(real).float64, name=name, dtype=dtype, requires_grad=requires_grad
        )
    return tensor(snapshot_of(real).float64(), name=name, dtype=dtype)


def trace(
    fn: Callable,
    *example_inputs: Any,
    dynamic_shapes: Mapping[str, Mapping[int, str]] | None = None,
    modules: Mapping[str, Any] | None = None,
    symbolic_values: bool | Collection[str] = False,
) -> Trace:
    """Run ``fn(*example_inputs)`` — real torch code, possibly an ``nn.Module`` — and return its symbolic graph.

    The inputs are named after ``fn``'s parameters (``forward``'s for a module); ``dynamic_shapes`` makes
    sizes symbolic in torch.export's spelling, ``{"x": {0: "m"}}``, so the result has laws for every batch
    size. A torch function symgrad does not have stops the trace with its name and the line that called it.

    The model is left as it was: its buffers (running statistics) and torch's random state are restored after
    the run. With ``dynamic_shapes``, the code runs a second time at other sizes, and a trace whose calls depend
    on the example's sizes (a loop over ``range(x.shape[1])``) is refused; decisions such as ``T <= block_size``
    are kept in :attr:`Trace.guards`, which emitted modules check.

    The parameters are a module's own, or those of the modules and ``nn.Parameter`` objects a loss function closes
    over, named by where they were found (``model.fc1.weight``); ``modules={"model": model}`` names them
    explicitly. :attr:`Trace.model` is the module an emitted drop-in takes.

    With ``symbolic_values``, floating inputs stand for symbols at every size (the code still runs on the
    example's values), so that what the graph says holds for every value, not the example's alone; a collection
    of input names makes those inputs symbols and keeps the others' values (data, such as targets).
    """
    import torch

    signature = inspect.signature(fn.forward if isinstance(fn, torch.nn.Module) else fn)
    names = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names += [f"x{i}" for i in range(len(names), len(example_inputs))]
    for name, real in zip(names, example_inputs, strict=False):
        if not isinstance(real, torch.Tensor):
            raise SymgradError(f"trace() takes tensors as example inputs; {name} is a {type(real).__name__}")
    repeated = [
        name
        for k, (name, real) in enumerate(zip(names, example_inputs))
        if any(real is other for other in example_inputs[:k])
    ]
    if repeated:  # one tensor would stand for two inputs, and a gradient by one of them would miss the other's share
        raise SymgradError(
            f"trace() was given the same tensor twice (as {repeated[0]} and an earlier input): pass a copy, "
            "x.clone(), for each input"
        )
    shapes = {name: dict(axes) for name, axes in (dynamic_shapes or {}).items()}
    unknown = sorted(set(shapes) - set(names[: len(example_inputs)]))
    if unknown:
        raise SymgradError(f"dynamic_shapes names {unknown[0]!r}, which is not an input of the traced function")
    roots = owners(fn, modules)
    model = holder(roots) if roots else None
    with symgrad_alone():
        started = time.process_time()
        with state_kept(model):
            first = _run(fn, model, example_inputs, names, shapes, symbolic_values)
        first.seconds = time.process_time() - started
        first.guards.check_symbolic()
        if any(shapes.values()):
            probe(fn, model, example_inputs, names, shapes, first, _run)
    autocast = autocast_state()  # the state the runs above had, read once
    return Trace(
        output=first.output,
        inputs=first.inputs,
        parameters=first.parameters,
        buffers=first.buffers,
        attributes=first.attributes,
        guards=list(first.guards.items),
        updates=first.updates,
        modes=modes_that_matter(model),
        updated_inputs=first.updated_inputs,
        random_draws=first.random_draws,
        autocast=autocast,
        model=model,
        again=functools.partial(
            again_in_autocast_state,
            autocast,
            functools.partial(
                trace,
                fn,
                *example_inputs,
                dynamic_shapes=dynamic_shapes,
                modules=modules,
                symbolic_values=symbolic_values,
            ),
        ),
    )


@dataclass
class _Run:
    """One run of the traced function: its graph, and the user's line for each node it made."""

    output: Any
    inputs: list[Tensor]
    parameters: dict[str, Tensor]
    buffers: dict[str, Tensor]
    guards: Guards
    sites: dict[int, str]
    updates: list[Any]
    updated_inputs: list[str]
    random_draws: list[str]
    decomposed: bool = False
    attributes: dict[str, Tensor] = field(default_factory=dict)
    seconds: float = 0.0  # the CPU time the run took


def _input_name(name: str, names: Sequence[str]) -> str:
    """The tensor name of the input the traced code calls ``name``: the same, or for a name a tensor cannot have
    (``_``, ``_unused``: symgrad keeps names that start with "_" for its own) one made from it, unlike the others."""
    if not name.startswith("_"):
        return name
    base = leaf_name(name.lstrip("_") or "unnamed")
    candidate, k = base, 1
    while candidate in names:
        candidate, k = f"{base}_{k}", k + 1
    return candidate


def _run(
    fn: Callable,
    model: Any,
    example_inputs: Sequence[Any],
    names: list[str],
    shapes: dict,
    symbolic: bool | Collection[str] = False,
) -> _Run:

    recorder = _Recorder()
    inputs = []
    for name, real in zip(names, example_inputs, strict=False):
        tensor_name = _input_name(name, names)
        if isinstance(symbolic, bool) or name in symbolic or shapes.get(name):
            symbolic_here = symbolic if isinstance(symbolic, bool) else name in symbolic
            leaf = _leaf(real, tensor_name, shapes.get(name), requires_grad=real.requires_grad, symbolic=symbolic_here)
        else:  # data: its numbers, as a constant of the graph under the input's name
            leaf = constant_of(real, name=tensor_name)
        recorder.bind(real, leaf)
        recorder.leaves.add(id(leaf))
        inputs.append(leaf)
    parameters, buffers = {}, {}
    if model is not None:
        for name, real in model.named_parameters():
            parameters[name] = _leaf(real, leaf_name(name), None, requires_grad=True)
            recorder.bind(real, parameters[name])
            recorder.leaves.add(id(parameters[name]))
        for name, real in model.named_buffers():
            buffers[name] = _leaf(real, leaf_name(name), None, requires_grad=False)
            recorder.bind(real, buffers[name])
            recorder.buffer_paths[id(real)] = name
    attributes = {}
    for name, real in tensor_attributes(model):
        if id(real) not in recorder.symbolic:
            attributes[name] = _leaf(real, leaf_name(name), None, requires_grad=False)
            recorder.bind(real, attributes[name])
    guards = Guards(site=user_line)
    distrust()  # the user's code may change a parameter through .data: its snapshot is compared again
    try:
        with guards.recording(), _mode(recorder):
            real_output = fn(*example_inputs)
    except TypeError as error:
        if "unhashable type: 'SizeInt'" not in str(error):
            raise
        raise UnsupportedError(
            f"the code at {failing_line(error)} uses a symbolic size as a key (of a dict, a set or a cache), which "
            "would hold the graph at one size; leave that size out of dynamic_shapes"
        ) from None
    output = recorder.to_symbolic(real_output)
    updated = [leaf.name for leaf, real in zip(inputs, example_inputs) if recorder.symbolic[id(real)] is not leaf]
    updates = list(recorder.effects)
    owned = list(model.named_buffers()) if model is not None else []
    by_kernel = {id(recorder.symbolic[id(real)]) for real in _updated_by_kernel(owned, recorder)}
    for name, real in owned:
        final = recorder.symbolic[id(real)]
        if final is not buffers[name] and id(final) not in by_kernel:
            updates.append(Assign(name, final))
    read = {name: leaf for name, leaf in attributes.items() if leaf.name in _leaf_names(output)}
    return _Run(output, inputs, parameters, buffers, guards, recorder.sites, updates, updated, recorder.random_sites,
                recorder.decomposed, read)  # fmt: skip


def _leaf_names(output: Any) -> set[str]:
    return {name for t in flat(output) if isinstance(t, Tensor) for name in t.leaves()}


def _updated_by_kernel(owned: list[tuple[str, Any]], recorder: _Recorder) -> list[Any]:
    """The real buffers whose last update was a batch_norm's (emitted code runs torch's kernel for those)."""
    paths = {p for e in recorder.effects for p in (e.running_mean, e.running_var) if p is not None}
    return [real for name, real in owned if name in paths]
