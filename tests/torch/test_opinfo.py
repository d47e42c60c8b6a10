"""PyTorch's own OpInfo sample inputs through ``symgrad.torch``: forward values and VJPs against torch, float64.

For each entry of :data:`ENTRIES` (an OpInfo of ``torch.testing._internal.common_methods_invocations.op_db``,
named by ``op.name`` and ``op.variant_test_name``), the harness takes the op's sample inputs, converts every
torch tensor to a symgrad tensor with the same values (``storch.tensor(t.tolist(), ...)``), calls the symgrad
spelling of the op (``storch.<name>``, ``storch.nn.functional.<name>``, ``storch.linalg.<name>``, or the Tensor
method for method-only ops), and compares

* the forward outputs (shape, dtype and ``.tolist()`` values, every output of a tuple or namedtuple), and
* the VJP: a seeded random float64 ``v`` per differentiable output, ``torch.autograd.grad`` against
  ``sg.vjp(outputs, leaves, v)``,

to rtol = atol = 1e-7 (nan matches nan, an infinity the same infinity). Each entry gets one status:

=========  ==========================================================================  ===========
status     meaning                                                                     test
=========  ==========================================================================  ===========
pass       every sample agrees                                                         passes
partial    some samples are refused (``sg.UnsupportedError``), every other one agrees  xfail
refused    every sample is refused                                                     xfail
missing    symgrad has no such function or method                                      xfail
crash      an exception other than a refusal (TypeError, ShapeError on input torch     fails
           accepts, ...)
differs    a number, shape, dtype or output count differs from torch                   fails
skipped    no sample could be compared (all abandoned as too slow, say)                skipped
harness    the harness's spelling of the op, run on real torch, does not reproduce     fails
           the OpInfo's output: a bug of this file, never reported against symgrad
=========  ==========================================================================  ===========

A refusal is ``sg.UnsupportedError`` (or a symgrad error saying "not supported"); a crash, differs or harness
status fails the entry's test, missing, refused and partial make it xfail with the reason, so the list doubles
as the acceptance test of the ops still to come.

Budget (:data:`CI`, :data:`FULL`): the CI run compares forward values and VJPs of 4 samples per entry (spread
over the op's samples) and of the tiny ones (empty, 0-d, at most 8 entries), and the forward values of the
others; each sample has at most 150 tensor entries in its inputs and its output; the smallest go first, within
about 2 s per entry, and a sample is abandoned after 1.5 s (symgrad's engine is SymPy; abandoned samples are
reported, never failed). ``SYMGRAD_OPINFO_FULL=1`` compares forward values and VJPs of every sample within 400
entries (a sample is abandoned after 60 s). ``python tests/torch/test_opinfo.py [--full] [-v] [ids...]`` prints
the table of statuses. torch's OpInfo database needs the ``expecttest`` package; without it the tests skip.
"""

from __future__ import annotations

import functools
import operator
import os
import random
import signal
import sys
import time
import warnings
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import symgrad as sg  # noqa: E402
import symgrad.torch as storch  # noqa: E402

RTOL = ATOL = 1e-7
FALLBACK_NUMEL = 2000  # an op with no sample within the size limit runs its smallest one if it is at most this big
TINY_NUMEL = 8  # samples this small (inputs and output) always get their VJP compared, beyond the budget's count


@dataclass(frozen=True)
class Budget:
    samples: int | None  # samples per entry, spread over the op's list (None: all)
    max_numel: int  # tensor entries in a sample's inputs (all tensors together), and in its outputs
    sample_seconds: float  # a sample still running after this is abandoned (reported, not failed)
    entry_seconds: float | None  # no new sample starts after this, for the forward-only ones and for the others
    forward_rest: bool  # compare the forward values of the samples beyond ``samples`` (cheap: no VJP)


# symgrad's engine is SymPy: a VJP through a reduction of 125 entries can take minutes. CI runs the smallest
# samples first and stops an entry at its time budget; the full run takes every sample within 400 entries.
CI = Budget(samples=4, max_numel=150, sample_seconds=1.5, entry_seconds=2.0, forward_rest=True)
FULL = Budget(samples=None, max_numel=400, sample_seconds=60.0, entry_seconds=None, forward_rest=False)
BUDGET = FULL if os.environ.get("SYMGRAD_OPINFO_FULL", "") == "1" else CI
# Through sg.trace, in CI: one sample an entry with its VJP (the namespace run above covers the rest)
TRACED = (
    FULL
    if BUDGET is FULL
    else Budget(samples=2, max_numel=150, sample_seconds=1.5, entry_seconds=2.0, forward_rest=False)
)


@dataclass(frozen=True)
class Entry:
    name: str  # op.name in op_db
    variant: str = ""  # op.variant_test_name
    skip_sample: Callable | None = None  # sample -> reason to leave it out (e.g. random), or None
    # How the OpInfo calls the op when its ``op`` is not torch's function itself: adapt(f, *args, **kwargs) with
    # f the op's function (torch's or symgrad's), e.g. ``where``'s OpInfo takes (self, condition, other).
    adapt: Callable | None = None

    @property
    def id(self) -> str:
        return f"{self.name}:{self.variant}" if self.variant else self.name


def _random_dropout(sample: Any) -> str | None:
    p, training = sample.kwargs.get("p", 0.5), sample.kwargs.get("training", True)
    return "random mask (training=True, 0 < p < 1)" if training and 0 < p < 1 else None


def _random_attention(sample: Any) -> str | None:
    return "random dropout (dropout_p > 0)" if sample.kwargs.get("dropout_p", 0.0) > 0 else None


# The OpInfo entries most ML code uses. A bare string is an entry with no variant; "name:variant" has one.
_ENTRY_SPECS: list[str | Entry] = [
    # ── elementwise, unary ──
    "abs", "neg", "exp", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "erf",
    "sign",
    # ── elementwise, binary and ternary ──
    "add", "sub", "mul", "div:no_rounding_mode", "div:trunc_rounding", "div:floor_rounding", "pow", "atan2",
    "maximum", "minimum", "max:binary", "clamp", "clamp_min",
    Entry("where", adapt=lambda where, self, condition, other: where(condition, self, other)),
    "eq", "gt", "ge", "lt", "le",
    # ── reductions, scans, softmax ──
    "sum", "mean", "prod", "amax", "amin", "max:reduction_with_dim", "max:reduction_no_dim",
    "min:reduction_with_dim", "min:reduction_no_dim", "argmax", "var", "var:unbiased", "std", "std:unbiased",
    "var_mean", "norm", "norm:fro", "norm:inf", "logsumexp", "cumsum", "cumprod", "softmax", "log_softmax",
    "nn.functional.softmin", "topk",
    # ── shapes and indexing ──
    "reshape", "view", "flatten", "unflatten", "permute", "transpose", "t", "T", "mT", "unsqueeze", "squeeze",
    "expand", "expand_as", "flip", "cat", "stack", "split", "chunk", "narrow", "select", "__getitem__", "repeat",
    "index_select", "gather", "scatter", "scatter_add", "take_along_dim", "masked_fill", "tril", "triu", "diag",
    "diagonal",
    # ── linear algebra ──
    "mm", "matmul", "bmm", "baddbmm", "addmm",
    Entry("einsum", adapt=lambda einsum, tensors, equation: einsum(equation, tensors)),
    "dot", "outer", "trace", "linalg.det", "linalg.inv", "logdet", "linalg.slogdet", "linalg.solve",
    "linalg.cholesky", "linalg.eigh", "linalg.qr", "linalg.svd", "linalg.vector_norm", "linalg.matrix_norm",
    "linalg.norm",
    # ── torch.nn.functional ──
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.elu", "nn.functional.mish",
    "nn.functional.hardswish", "nn.functional.softplus", "nn.functional.logsigmoid", "nn.functional.leaky_relu",
    "nn.functional.hardtanh", "nn.functional.threshold", "nn.functional.linear", "nn.functional.layer_norm",
    "nn.functional.batch_norm", "nn.functional.group_norm", "nn.functional.rms_norm", "nn.functional.normalize",
    "nn.functional.cosine_similarity",
    Entry("nn.functional.embedding", adapt=lambda embedding, weight, idx, **kw: embedding(idx, weight, **kw)),
    Entry("nn.functional.dropout", skip_sample=_random_dropout),
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.max_pool1d", "nn.functional.max_pool2d",
    "nn.functional.avg_pool1d", "nn.functional.avg_pool2d", "nn.functional.adaptive_avg_pool1d",
    "nn.functional.adaptive_avg_pool2d", "nn.functional.pad:constant", "nn.functional.pad:reflect",
    "nn.functional.cross_entropy", "nn.functional.nll_loss", "nn.functional.mse_loss", "nn.functional.l1_loss",
    "nn.functional.smooth_l1_loss", "nn.functional.huber_loss", "nn.functional.kl_div",
    "nn.functional.binary_cross_entropy", "nn.functional.binary_cross_entropy_with_logits",
    "nn.functional.one_hot", Entry("nn.functional.scaled_dot_product_attention", skip_sample=_random_attention),
]  # fmt: skip


def _entry(spec: str | Entry) -> Entry:
    if isinstance(spec, Entry):
        return spec
    name, _, variant = spec.partition(":")
    return Entry(name, variant)


ENTRIES: list[Entry] = [_entry(spec) for spec in _ENTRY_SPECS]


# ── torch's OpInfo database (imported once, lazily: it takes seconds) ─────────────────────────────────────────
@functools.cache
def _load_op_db() -> dict[tuple[str, str], Any] | str:
    """{(name, variant): OpInfo}, or the reason it cannot be imported."""
    frozen = torch.backends.flags_frozen()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as error:  # torch's testing internals need expecttest (and import it at module level)
        return f"torch's OpInfo database cannot be imported ({error}); pip install expecttest"
    finally:
        # torch's common_utils freezes torch.backends' flags on import; leave them as the other tests had them
        flags = getattr(torch.backends.flags_frozen, "__globals__", {})
        if not frozen and "__allow_nonbracketed_mutation_flag" in flags:
            flags["__allow_nonbracketed_mutation_flag"] = True
    return {(op.name, op.variant_test_name): op for op in op_db}


def op_db_index() -> dict[tuple[str, str], Any]:
    index = _load_op_db()
    if isinstance(index, str):
        pytest.skip(index)
    return index


# ── the symgrad spelling of an op ────────────────────────────────────────────────────────────────────────────
def _walk(root: Any, path: list[str]) -> Any:
    for part in path:
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def resolve(name: str, namespace: Any, tensor_type: type) -> tuple[Callable | None, str]:
    """The function for OpInfo ``name`` in ``namespace`` (torch or symgrad.torch) and its spelling; None if absent.

    Real torch decides the spelling: an op that torch has as a function (``torch.X``, ``torch.nn.functional.X``,
    ``torch.linalg.X``) must be that function; a method-only op (``view``, ``expand``...) must be the Tensor
    method; ``T``/``mT`` are properties and ``__getitem__`` is indexing."""
    prefix = "torch." if namespace is torch else "storch."
    if name in ("T", "mT", "mH", "H"):
        return (operator.attrgetter(name) if hasattr(tensor_type, name) else None), f"Tensor.{name}"
    if name == "__getitem__":
        return (operator.getitem if hasattr(tensor_type, "__getitem__") else None), "Tensor.__getitem__"
    path = name.split(".")
    if callable(_walk(torch, path)):
        fn = _walk(namespace, path)
        return (fn if callable(fn) else None), prefix + name
    if not callable(getattr(tensor_type, name, None)):
        return None, f"Tensor.{name}"
    return (lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)), f"Tensor.{name}"


def entry_callable(entry: Entry, namespace: Any, tensor_type: type) -> tuple[Callable | None, str]:
    fn, spelling = resolve(entry.name, namespace, tensor_type)
    if fn is not None and entry.adapt is not None:
        fn = functools.partial(entry.adapt, fn)
    return fn, spelling


# ── converting a sample's arguments ──────────────────────────────────────────────────────────────────────────
class SampleSkipError(Exception):
    """The sample is outside what this harness compares (complex numbers, float32 inputs...)."""


_DTYPES = {
    torch.float64: "float64",
    torch.float32: "float32",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.bool: "bool",
}


def _values(t: Any) -> Any:
    """``t.tolist()``; an empty tensor as a numpy array, as its ``.tolist()`` loses the shape ([[]] for (1, 0, 3))."""
    return t.detach().tolist() if t.numel() else np.zeros(tuple(t.shape))


class Converter:
    """torch objects -> symgrad objects, the same torch tensor always to the same symgrad tensor."""

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.leaves: list[tuple[Any, Any]] = []  # (torch tensor, symgrad tensor) pairs that require grad

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj)
        if isinstance(obj, torch.dtype):
            if obj not in _DTYPES:
                raise SampleSkipError(f"dtype argument {obj}")
            return getattr(storch, _DTYPES[obj], _DTYPES[obj])
        if isinstance(obj, torch.Size):
            return tuple(obj)
        if isinstance(obj, (torch.device, torch.memory_format, torch.layout)):
            raise SampleSkipError(f"argument {obj!r}")
        if type(obj) in (list, tuple):
            return type(obj)(self(x) for x in obj)
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        return obj

    def tensor(self, t: Any) -> Any:
        if id(t) in self.memo:
            return self.memo[id(t)][1]
        if t.is_complex():
            raise SampleSkipError("complex tensor")
        if t.is_floating_point() and t.dtype != torch.float64:
            raise SampleSkipError(f"{t.dtype} tensor (the harness compares float64)")
        if t.dtype not in _DTYPES:
            raise SampleSkipError(f"{t.dtype} tensor")
        values = _values(t)
        if t.dtype == torch.bool:  # symgrad.tensor takes 0/1 for bool tensors, not Python bools
            out = storch.tensor(_values(t.to(torch.int64)), dtype="bool")
        elif t.dtype == torch.float64:
            out = storch.tensor(values, dtype=storch.float64, requires_grad=t.requires_grad)
            if t.requires_grad:
                self.leaves.append((t, out))
        else:
            out = storch.tensor(values, dtype=_DTYPES[t.dtype])
        self.memo[id(t)] = (t, out)  # keep t alive so that its id is not reused
        return out


def _tensors(obj: Any) -> list[Any]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in _tensors(x)]
    return []


def _numel(sample: Any) -> int:
    return sum(t.numel() for t in _tensors([sample.input, sample.args, sample.kwargs]))


def _flatten(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flatten(x)]
    return [out]


# ── comparing ────────────────────────────────────────────────────────────────────────────────────────────────
class MismatchError(Exception):
    """symgrad's result differs from torch's."""


def _as_array(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=np.complex128)
    return array.real if not np.any(array.imag) else array


def _compare_values(what: str, expected: Any, actual_list: Any, shape: tuple) -> None:
    want = _as_array(expected).reshape(shape)
    try:
        got = _as_array(actual_list).reshape(shape)
    except (TypeError, ValueError) as error:
        raise MismatchError(f"{what}: .tolist() is not {len(shape)}-D numbers of shape {shape}: {error}") from None
    close = np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    if not close.all():
        bad = np.argwhere(~close) if close.ndim else [()]
        index = tuple(int(i) for i in bad[0])
        raise MismatchError(
            f"{what}: {int((~close).sum())} of {close.size} entries differ, e.g. at {list(index)}: "
            f"symgrad {got[index]!r}, torch {want[index]!r}"
        )


def _compare_output(what: str, t: Any, s: Any) -> None:
    if not isinstance(t, torch.Tensor):  # a Python number or bool
        if isinstance(s, sg.Tensor):
            if s.ndim != 0:
                raise MismatchError(f"{what}: torch returns the number {t!r}, symgrad a tensor of shape {s.shape}")
            s = s.tolist()
        _compare_values(what, t, s, ())
        return
    if not isinstance(s, sg.Tensor):
        raise MismatchError(f"{what}: torch returns a tensor of shape {tuple(t.shape)}, symgrad {type(s).__name__}")
    if tuple(s.shape) != tuple(t.shape):
        raise MismatchError(f"{what}: shape {tuple(s.shape)}, torch {tuple(t.shape)}")
    want_dtype = str(t.dtype).removeprefix("torch.")
    if str(s.dtype) != want_dtype:
        raise MismatchError(f"{what}: dtype {s.dtype}, torch {want_dtype}")
    _compare_values(what, t.detach().tolist(), s.tolist(), tuple(t.shape))


# ── running one sample ───────────────────────────────────────────────────────────────────────────────────────
class SampleTimeout(BaseException):  # BaseException: not caught by a library's `except Exception`
    pass


@contextmanager
def _time_limit(seconds: float):
    if not hasattr(signal, "setitimer") or seconds <= 0:
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        # An exception raised inside a gc callback (hypothesis installs one) is printed and dropped, and pytest
        # then fails the test for it: try again a moment later, once back in ordinary code.
        if frame is not None and frame.f_code.co_name == "gc_callback":
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        raise SampleTimeout

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Outcome:
    kind: str  # "pass", "refused", "crash", "differs", "harness"; "skipped" (not compared), "slow" (abandoned)
    detail: str = ""
    seconds: float = 0.0


def _is_identity(sample: Any) -> bool:
    """Whether the sample's output_process_fn_grad is SampleInput's default (``lambda x: x``). Compared by code:
    eigh's returns non-tuples unchanged, and a behaviour test would take it for the identity."""
    default = type(sample)(torch.empty(0)).output_process_fn_grad
    return getattr(sample.output_process_fn_grad, "__code__", None) is getattr(default, "__code__", None)


def _hermitian(fn: Callable) -> Callable:
    """torch's gradcheck_wrapper_hermitian_input, ``op(A + A.mH)``: for real inputs, A + A.mT."""
    return lambda a, *args, **kwargs: fn(a + a.mT, *args, **kwargs)


def _symgrad_error(error: BaseException, stage: str) -> Outcome:
    message = f"{stage}: {type(error).__name__}: {error}".strip()
    message = " ".join(message.split())[:300]
    refusal = isinstance(error, sg.UnsupportedError) or (
        isinstance(error, sg.SymgradError) and "not supported" in str(error)
    )
    return Outcome("refused" if refusal else "crash", message)


def _same(a: Any, b: Any) -> bool:
    a, b = _flatten(a), _flatten(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if not isinstance(x, torch.Tensor):
            if x != y:
                return False
        elif x.shape != y.shape or x.dtype != y.dtype or not torch.allclose(x, y, rtol=0, atol=0, equal_nan=True):
            return False
    return True


def _traced_call(torch_fn: Callable, args: list, kwargs: dict) -> tuple[Any, list] | Outcome:
    """``torch_fn(*args, **kwargs)`` traced by sg.trace, its tensors the traced inputs: (the symbolic output,
    [(torch tensor, symgrad leaf)] of the float inputs that require grad), or the Outcome of a failure."""
    real = _tensors([args, kwargs])
    for t in real:
        if t.is_complex() or (t.is_floating_point() and t.dtype != torch.float64):
            return Outcome("skipped", f"{t.dtype} tensor (the harness compares float64)")

    def call(*tensors: Any) -> Any:
        swap = {id(r): t for r, t in zip(real, tensors, strict=True)}
        return torch_fn(*_swapped(args, swap), **_swapped(kwargs, swap))

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = sg.trace(call, *real)
    except Exception as error:
        return _symgrad_error(error, "trace")
    leaves = [(r, s) for r, s in zip(real, traced.inputs, strict=True) if r.requires_grad and r.is_floating_point()]
    return traced.output, leaves


def _swapped(obj: Any, swap: dict[int, Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return swap.get(id(obj), obj)
    if type(obj) in (list, tuple):
        return type(obj)(_swapped(x, swap) for x in obj)
    if isinstance(obj, dict):
        return {k: _swapped(v, swap) for k, v in obj.items()}
    return obj


def torch_reference(op: Any, torch_fn: Callable, sample: Any) -> Any:
    """torch's output for ``sample`` (processed by its output_process_fn_grad), after checking that the harness's
    spelling ``torch_fn`` of the op reproduces it exactly; an Outcome ("skipped" or "harness") if not."""
    args = [sample.input, *sample.args]
    hermitian = op.gradcheck_wrapper.__name__ == "gradcheck_wrapper_hermitian_input"
    process = (lambda out: out) if _is_identity(sample) else sample.output_process_fn_grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t_out = process(op.gradcheck_wrapper(op, *args, **sample.kwargs))
        except Exception as error:
            return Outcome("skipped", f"torch raises {type(error).__name__}: {error}")
        try:
            check = process((_hermitian(torch_fn) if hermitian else torch_fn)(*args, **sample.kwargs))
            same = _same(t_out, check)
        except Exception as error:
            return Outcome("harness", f"the spelling on torch raises {type(error).__name__}: {error}")
    if not same:
        return Outcome("harness", "the spelling on torch does not reproduce the OpInfo's output")
    return t_out


def run_sample(
    op: Any,
    entry: Entry,
    fn: Callable,
    torch_fn: Callable,
    sample: Any,
    seed: int,
    max_numel: int,
    vjp: bool = True,
    traced: bool = False,
) -> Outcome:
    """Compare one sample: torch first (the reference), then symgrad, forward and (if ``vjp``) VJP. With
    ``traced``, symgrad runs torch's own spelling of the op through ``sg.trace`` instead of its own namespace.

    ``torch_fn`` is the spelling ``fn`` of symgrad, on real torch: it must give exactly the OpInfo's output, or
    the harness is calling symgrad differently from the OpInfo (an outcome "harness", which fails the test)."""
    if entry.skip_sample is not None and (reason := entry.skip_sample(sample)):
        return Outcome("skipped", reason)
    args = [sample.input, *sample.args]
    process = sample.output_process_fn_grad
    identity = _is_identity(sample)
    hermitian = op.gradcheck_wrapper.__name__ == "gradcheck_wrapper_hermitian_input"

    t_out = torch_reference(op, torch_fn, sample)
    if isinstance(t_out, Outcome):
        return t_out
    t_outs = _flatten(t_out)
    limit = max(max_numel, _numel(sample))  # the output may be as large as the inputs (a fallback sample)
    if sum(t.numel() for t in t_outs if isinstance(t, torch.Tensor)) > limit:
        return Outcome("skipped", f"output larger than {limit} entries")

    # symgrad, forward
    convert = Converter()
    if traced:  # the real torch call, run by sg.trace: what users do with their own code
        traced_call = _traced_call(_hermitian(torch_fn) if hermitian else torch_fn, args, dict(sample.kwargs))
        if isinstance(traced_call, Outcome):
            return traced_call
        s_out, convert.leaves = traced_call
    else:
        try:
            s_args = convert(args)
            s_kwargs = convert(dict(sample.kwargs))
        except SampleSkipError as reason:
            return Outcome("skipped", str(reason))
        except Exception as error:
            return _symgrad_error(error, "converting the inputs")
        call = _hermitian(fn) if hermitian else fn
        try:
            s_out = call(*s_args, **s_kwargs)
        except Exception as error:
            return _symgrad_error(error, "forward")
    if not identity:
        try:
            s_out = process(s_out)
        except Exception as error:
            return _symgrad_error(error, "the sample's output_process_fn_grad")
    s_outs = _flatten(s_out)
    if len(s_outs) != len(t_outs):
        return Outcome("differs", f"forward: {len(s_outs)} outputs, torch {len(t_outs)}")
    # An integer output given as None (symgrad's max(x, dim).indices) differs, but the other outputs and the VJP
    # are still compared, so that the report says whether they agree.
    missing = [
        i
        for i, (t, s) in enumerate(zip(t_outs, s_outs))
        if s is None and isinstance(t, torch.Tensor) and not t.is_floating_point()
    ]
    try:
        for i, (t, s) in enumerate(zip(t_outs, s_outs)):
            if i not in missing:
                _compare_output(f"output {i}" if len(t_outs) > 1 else "output", t, s)
    except MismatchError as mismatch:
        return Outcome("differs", f"forward {mismatch}")
    except Exception as error:
        return _symgrad_error(error, "forward values")

    # VJP
    t_leaves = [t for t, _ in convert.leaves]
    s_leaves = [s for _, s in convert.leaves]
    picked = [
        i for i, t in enumerate(t_outs) if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()
    ]
    if missing:
        nones = Outcome("differs", f"forward output {missing[0]}: None, torch a {t_outs[missing[0]].dtype} tensor")
    if not vjp or not picked or not t_leaves:
        why = "forward only" if not vjp else "forward only (nothing differentiable)"
        return nones if missing else Outcome("pass", why)
    generator = torch.Generator().manual_seed(seed)
    vs = [torch.randn(t_outs[i].shape, generator=generator, dtype=torch.float64) for i in picked]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_grads = torch.autograd.grad([t_outs[i] for i in picked], t_leaves, vs, allow_unused=True)
    for i in picked:
        if not s_outs[i].requires_grad:
            return Outcome("differs", f"output {i} does not require grad; torch's does")
    try:
        s_vs = [storch.tensor(_values(v), dtype=storch.float64) for v in vs]
        s_grads = sg.vjp([s_outs[i] for i in picked], s_leaves, s_vs)
        if isinstance(s_grads, sg.Tensor) or s_grads is None:
            s_grads = (s_grads,)
        for k, (leaf, t_grad, s_grad) in enumerate(zip(t_leaves, t_grads, s_grads)):
            if t_grad is None:
                t_grad = torch.zeros_like(leaf)
            what = f"vjp wrt input {k}"
            if s_grad is None:
                _compare_values(what, t_grad.tolist(), np.zeros(tuple(leaf.shape)), tuple(leaf.shape))
                continue
            if tuple(s_grad.shape) != tuple(leaf.shape):
                raise MismatchError(f"{what}: shape {tuple(s_grad.shape)}, the input's {tuple(leaf.shape)}")
            _compare_values(what, t_grad.tolist(), s_grad.tolist(), tuple(leaf.shape))
        if len(s_grads) != len(t_leaves):
            raise MismatchError(f"vjp: {len(s_grads)} gradients for {len(t_leaves)} inputs")
    except MismatchError as mismatch:
        return Outcome("differs", str(mismatch))
    except Exception as error:
        return _symgrad_error(error, "vjp")
    if missing:
        nones.detail += " (the other outputs and the VJP agree)"
        return nones
    return Outcome("pass")


# ── running one entry ────────────────────────────────────────────────────────────────────────────────────────
@dataclass
class EntryResult:
    entry: Entry
    status: str
    spelling: str
    outcomes: list[tuple[int, Outcome]] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    def reason(self) -> str:
        """A one-line reason: the first sample of the deciding kind."""
        if self.status == "missing":
            return f"{self.spelling} does not exist"
        want = {"partial": "refused"}.get(self.status, self.status)
        slow = sum(1 for _, o in self.outcomes if o.kind == "slow")
        slow_note = f" ({slow} slow sample{'s' * (slow > 1)} abandoned)" if slow else ""
        for index, outcome in self.outcomes:
            if outcome.kind == want:
                count = sum(1 for _, o in self.outcomes if o.kind == want)
                return f"[{count}/{self.ran} samples; sample {index}] {outcome.detail}{slow_note}"
        return self.note + slow_note

    @property
    def ran(self) -> int:
        """Samples compared (not skipped, not abandoned)."""
        return sum(1 for _, o in self.outcomes if o.kind not in ("skipped", "slow"))

    def details(self) -> str:
        lines = [f"{self.entry.id} -> {self.spelling}: {self.status} ({self.seconds:.1f} s) {self.note}".rstrip()]
        lines += [f"  sample {i} ({o.seconds:.1f} s): {o.kind} {o.detail}".rstrip() for i, o in self.outcomes]
        return "\n".join(lines)


def _seed(entry: Entry) -> int:
    return zlib.crc32(entry.id.encode())


@contextmanager
def _seeded(seed: int):
    """Seed torch, random and numpy (sample generators use all three), restoring their states afterwards."""
    state, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        try:
            yield
        finally:
            random.setstate(state)
            np.random.set_state(np_state)


def sample_dtype(op: Any) -> Any:
    """float64, or int64 for integer-only ops (one_hot)."""
    dtypes = op.supported_dtypes("cpu")
    return torch.float64 if torch.float64 in dtypes else torch.int64


def _output_numel(op: Any, sample: Any) -> int | None:
    """The number of entries of torch's output for ``sample``, None if torch raises."""
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            out = op.gradcheck_wrapper(op, sample.input, *sample.args, **sample.kwargs)
    except Exception:
        return None
    return sum(t.numel() for t in _flatten(out) if isinstance(t, torch.Tensor))


def select_samples(op: Any, entry: Entry, budget: Budget) -> tuple[list[tuple[int, Any]], list[tuple[int, Any]], str]:
    """(picks, rest, note): the samples to compare with their VJP and the others, (index, sample) pairs, smallest
    first. A sample's inputs and torch's output have at most ``budget.max_numel`` entries (an op with no such
    sample has its smallest one). The picks are all samples, or ``budget.samples`` of them spread over the op's
    list (which orders its samples by option rather than by size) and the tiny ones."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dtype = sample_dtype(op)
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=dtype.is_floating_point))
    usable = [(i, s) for i, s in enumerate(samples) if entry.skip_sample is None or not entry.skip_sample(s)]
    sized = []
    for i, s in usable:
        n_in = _numel(s)
        n_out = _output_numel(op, s) if n_in <= FALLBACK_NUMEL else None
        if n_out is not None:
            sized.append((i, s, max(n_in, n_out)))
    small = [(i, s, n) for i, s, n in sized if n <= budget.max_numel]
    note = f"{len(small)} of {len(samples)} samples within {budget.max_numel} entries"
    if not small and sized:
        smallest = min(sized, key=lambda x: x[2])
        if smallest[2] <= FALLBACK_NUMEL:
            small, note = [smallest], f"no sample within {budget.max_numel} entries: the smallest ({smallest[2]})"
    chosen = set(range(len(small)))
    if budget.samples is not None and len(small) > budget.samples:
        chosen = set(np.linspace(0, len(small) - 1, budget.samples).round().astype(int).tolist())
        # tiny samples (empty, 0-d, 1x1: where the edge cases are) are cheap: their VJPs too
        chosen |= {k for k, (_, _, n) in enumerate(small) if n <= TINY_NUMEL}
    picks = sorted((x for k, x in enumerate(small) if k in chosen), key=lambda x: x[2])
    rest = sorted((x for k, x in enumerate(small) if k not in chosen), key=lambda x: x[2])
    return [(i, s) for i, s, _ in picks], [(i, s) for i, s, _ in rest], note


_SELECTED: dict[tuple[str, Budget], tuple[list, list, str]] = {}


def selected_samples(op: Any, entry: Entry, budget: Budget) -> tuple[list, list, str]:
    """:func:`select_samples` with the entry's seed, made once per process (no op in the list changes its
    inputs in place)."""
    key = (entry.id, budget)
    if key not in _SELECTED:
        with _seeded(_seed(entry)):
            _SELECTED[key] = select_samples(op, entry, budget)
    return _SELECTED[key]


def run_entry(entry: Entry, budget: Budget = BUDGET, traced: bool = False) -> EntryResult:
    op = op_db_index()[(entry.name, entry.variant)]
    fn, spelling = entry_callable(entry, storch, sg.Tensor)
    if fn is None:
        return EntryResult(entry, "missing", spelling)
    torch_fn, _ = entry_callable(entry, torch, torch.Tensor)
    if torch_fn is None:
        return EntryResult(entry, "harness", spelling, note=f"{spelling} has no torch counterpart")
    start = time.perf_counter()
    result = EntryResult(entry, "pass", spelling)

    def run(index: int, sample: Any, vjp: bool) -> None:
        begin = time.perf_counter()
        try:
            with _time_limit(budget.sample_seconds):
                outcome = run_sample(
                    op, entry, fn, torch_fn, sample, _seed(entry) + index, budget.max_numel, vjp, traced
                )
        except SampleTimeout:
            outcome = Outcome("slow", f"abandoned after {budget.sample_seconds} s")
        outcome.seconds = time.perf_counter() - begin
        result.outcomes.append((index, outcome))

    if traced and budget is TRACED and budget is not BUDGET:  # the namespace run's choice (made once), cut short
        picks, rest, result.note = selected_samples(op, entry, BUDGET)
        picks, rest = picks[: budget.samples], []
    else:
        picks, rest, result.note = selected_samples(op, entry, budget)
    with _seeded(_seed(entry)):
        # CI: the forward values of the samples that are not picked (cheap: no VJP), in the entry's time budget
        if budget.forward_rest:
            for position, (index, sample) in enumerate(rest):
                if budget.entry_seconds is not None and time.perf_counter() - start > budget.entry_seconds:
                    result.note += f"; the forward values of {len(rest) - position} samples not compared (time)"
                    break
                run(index, sample, vjp=False)
        # the picks, forward and VJP, in a time budget of their own
        begin = time.perf_counter()
        for index, sample in picks:
            if budget.entry_seconds is not None and time.perf_counter() - begin > budget.entry_seconds:
                result.outcomes.append((index, Outcome("slow", f"not run: {budget.entry_seconds} s used up")))
                continue
            run(index, sample, vjp=True)
    result.seconds = time.perf_counter() - start
    kinds = {o.kind for _, o in result.outcomes}
    for status in ("harness", "crash", "differs"):
        if status in kinds:
            result.status = status
            break
    else:
        if "refused" in kinds:
            result.status = "partial" if "pass" in kinds else "refused"
        elif "pass" not in kinds:
            result.status = "skipped"
            result.note = "no sample could be compared: " + "; ".join(o.detail for _, o in result.outcomes[:3])
    return result


# ── the tests ────────────────────────────────────────────────────────────────────────────────────────────────
def test_entries_are_op_db_entries() -> None:
    """Every entry names exactly one OpInfo; prints the matched list (``-s``)."""
    index = op_db_index()
    assert len({e.id for e in ENTRIES}) == len(ENTRIES), "an entry is listed twice"
    unknown = [e.id for e in ENTRIES if (e.name, e.variant) not in index]
    assert not unknown, f"not in op_db: {unknown}"
    print(f"\n{len(ENTRIES)} OpInfo entries:")
    for e in ENTRIES:
        op = index[(e.name, e.variant)]
        print(f"  {e.id:50s} aten {op.aten_name}")


@pytest.mark.slow
def test_spellings_reproduce_op_db_on_torch() -> None:
    """The harness calls each op as the OpInfo does: its spelling, run on real torch (with the entry's ``adapt``),
    gives exactly the OpInfo's output, for the entries symgrad lacks too (their acceptance test is ready)."""
    index = op_db_index()
    wrong = []
    for entry in ENTRIES:
        op = index[(entry.name, entry.variant)]
        torch_fn, spelling = entry_callable(entry, torch, torch.Tensor)
        if torch_fn is None:
            wrong.append(f"{entry.id}: no {spelling} in torch")
            continue
        picks, rest, _ = selected_samples(op, entry, BUDGET)
        for index_, sample in (picks + rest)[:2]:  # two samples an entry: the harness, not symgrad, is tested
            outcome = torch_reference(op, torch_fn, sample)
            if isinstance(outcome, Outcome) and outcome.kind == "harness":
                wrong.append(f"{entry.id} sample {index_}: {outcome.detail}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_opinfo(entry: Entry) -> None:
    result = run_entry(entry)
    if result.status == "harness":  # a bug of this file, not of symgrad
        pytest.fail(f"HARNESS BUG: {result.reason()}\n{result.details()}", pytrace=False)
    if result.status in ("crash", "differs"):
        pytest.fail(f"{result.status}: {result.reason()}\n{result.details()}", pytrace=False)
    if result.status in ("missing", "refused", "partial"):
        pytest.xfail(f"{result.status}: {result.reason()}")
    if result.status == "skipped":
        pytest.skip(result.note)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_opinfo_traced(entry: Entry) -> None:
    """The same samples, with torch's own spelling of the op run through sg.trace, as users run their code."""
    result = run_entry(entry, TRACED, traced=True)
    if result.status == "harness":
        pytest.fail(f"HARNESS BUG: {result.reason()}\n{result.details()}", pytrace=False)
    if result.status in ("crash", "differs"):
        pytest.fail(f"{result.status}: {result.reason()}\n{result.details()}", pytrace=False)
    if result.status in ("missing", "refused", "partial"):
        pytest.xfail(f"{result.status}: {result.reason()}")
    if result.status == "skipped":
        pytest.skip(result.note)


# ── the table (python tests/torch/test_opinfo.py [--full] [--trace] [ids...]) ───────────────────────────────
def main(argv: list[str]) -> int:
    traced = "--trace" in argv
    budget = FULL if "--full" in argv else (TRACED if traced else BUDGET)
    wanted = [a for a in argv if not a.startswith("-")]
    entries = [e for e in ENTRIES if not wanted or e.id in wanted]
    start = time.perf_counter()
    results = []
    for entry in entries:
        result = run_entry(entry, budget, traced=traced)
        results.append(result)
        reason = "" if result.status == "pass" else result.reason()
        print(f"| {entry.id} | {result.status} | {result.ran} | {result.seconds:.1f} | {reason} |", flush=True)
        if "-v" in argv:
            print(result.details())
    totals: dict[str, int] = {}
    for result in results:
        totals[result.status] = totals.get(result.status, 0) + 1
    print("totals:", ", ".join(f"{k} {v}" for k, v in sorted(totals.items())), f"({len(results)} entries)")
    mode = "full" if budget is FULL else "CI"
    print(f"{time.perf_counter() - start:.1f} s ({mode} mode{', through sg.trace' if traced else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
