"""The pieces every emitted module is printed with: torch code for nodes, checked names, shape checks,
docstring lines, and loading emitted source in memory.

>>> size_source(sympy.sympify("1/sqrt(d)"))
'1 / math.sqrt(d)'
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import sympy

from ..core.dims import same_dim
from ..core.dtypes import is_floating
from ..core.errors import SymgradError
from ..core.graph import uniform_constant
from ..core.printers import TorchPrinter, number_precedence, size_source, tuple_text
from ..core.spelling import describe
from ..core.tensor import Tensor
from ..ops.sympy_torch import python_source

# Every name an emitted module defines or reads besides its inputs and sizes; ``t_*`` and ``grad_*``
# are its intermediates and gradients.
RESERVED = {
    "torch", "math", "F", "ctx", "grad_output", "output", "forward", "vjp", "forward_and_vjp", "inputs", "apply",
    "self", "once_differentiable",
}  # fmt: skip
RESERVED_PREFIXES = ("_", "grad_", "t_", "tangent_")


MAX_INLINE = 72  # longer subexpressions get a name of their own, so every line stays readable
LINE_LENGTH = 120  # the project's ruff line length; see statements.fit_statement


def check_identifier(name: str, what: str) -> str:
    """Names reach the emitted file: identifiers that, once Python has NFKC-normalised them (as it does
    with every identifier it reads), clash with nothing the module defines."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SymgradError(f"{what} {name!r} is not a Python identifier")
    normal = unicodedata.normalize("NFKC", name)
    if normal in RESERVED or normal.startswith(RESERVED_PREFIXES) or keyword.iskeyword(normal):
        spelled = f" (Python reads it as {normal!r})" if normal != name else ""
        raise SymgradError(f"{what} {name!r}{spelled} clashes with a name the emitted module uses; rename it")
    return name


def check_class_name(name: str) -> str:
    """The module name the emitted classes are named after (``CNN_noTRS`` gives ``CNN_noTRSFunction``): an ASCII
    identifier that starts with a capital letter."""
    if not re.fullmatch(r"[A-Z][A-Za-z0-9_]*", name or ""):
        raise SymgradError(
            f"module name {name!r} must be a class name: a capital letter, then letters, digits or underscores"
        )
    return name


def shape_tuple(sizes: Sequence) -> str:
    """A shape as a Python tuple, written as ruff writes it: ``()``, ``(n,)``, ``(2, 3)``."""
    return tuple_text([str(d) for d in sizes])


class CodePrinter(TorchPrinter):
    """torch code that runs on any device and dtype, formatted the way ``ruff format`` writes it."""

    def __init__(
        self,
        names: dict[int, str],
        like: str,
        *,
        fused: bool = False,
        derivatives: bool = True,
        like_dtype: str | None = None,
    ) -> None:
        super().__init__(names)
        self.like = like  # a tensor whose dtype and device new tensors take
        self.like_dtype = like_dtype  # its dtype in the trace, when known: a constant of another float dtype says so
        # derivatives take their input's dtype (torch casts them so); a forward computes what torch computes, and
        # torch.where(c, 2.0, 0.5) there is of torch's default dtype whatever the inputs' dtype
        self.derivatives = derivatives
        self.fused = fused  # torch's fused kernels where it has them: see _fused_backward, _fused_sub, _fused_loss
        self.uses_math = False
        self.helpers: set[str] = set()  # the module's own helper functions printed (``_index_backward``, ...)
        self.aten_kernels: set[str] = set()  # the torch.ops.aten kernels printed (the module says why it uses them)
        self.fused_parts: dict[int, list[Tensor]] = {}  # a fused node's printed operands, for fit_statement

    def _print_number(self, value: sympy.Expr):
        if value.is_Float:
            return repr(float(value)), number_precedence(value)
        if value in (sympy.nan, sympy.oo, -sympy.oo):  # a 0/0 (std of one entry) or a division by zero
            self.uses_math = True
            return super()._print_number(value)
        if value.is_Number:
            text = str(value) if value.is_Integer else f"{value.p} / {value.q}"
            return text, (5 if not value.is_Integer else number_precedence(value))
        numerator, denominator = sympy.fraction(sympy.together(value))
        if not denominator.is_Number:
            # a size that can be 0 (an empty batch m, or n - 1 at n = 1): divided as a tensor, it gives inf or
            # nan as torch does, where Python's 2 / 0 raises ZeroDivisionError
            self.uses_math = True
            self.helpers.add("_size_ratio")
            return f"_size_ratio({size_source(numerator)}, {size_source(denominator)})", 9
        text = size_source(value)
        self.uses_math = self.uses_math or "math." in text
        return text, number_precedence(value)

    def _print_leaf(self, t: Tensor) -> str:
        """A constant tensor as torch code, on the inputs' device (and, for floats, their dtype)."""
        if t.kind == "symbol":  # an input, or grad_output
            return t.name
        entries = t.entries()
        numbers = [sympy.sympify(e) for e in entries.reshape(-1)]
        if not all(n.is_Number and n.is_finite for n in numbers):
            raise SymgradError(f"cannot write {t.name} as torch code: it is not an input, nor a tensor of numbers")
        shape = shape_tuple(entries.shape)
        if is_floating(t.dtype):
            value = uniform_constant(t)
            if value is not None:
                return f"{self.like}.new_full({shape}, {float(value)!r}{self._own_dtype(t)})"
            data = np.array([float(n) for n in numbers], dtype=float).reshape(entries.shape).tolist()
            text = f"{self.like}.new_tensor({data!r}{self._own_dtype(t)})"
        else:
            data = np.array([int(n) for n in numbers], dtype=object).reshape(entries.shape).tolist()
            kind = "torch.bool" if t.dtype == "bool" else "torch.long"
            text = f"torch.tensor({data!r}, dtype={kind}, device={self.like}.device)"
        if len(text) > MAX_INLINE + 20:
            structured = self._structured(np.array(numbers, dtype=object).reshape(entries.shape), t.dtype)
            if structured is not None:  # its length does not grow with its size
                return structured
            raise SymgradError(
                f"the constant {t.name} is too large to write inline ({entries.size} entries); make it an input"
            )
        return text

    def _structured(self, numbers: np.ndarray, dtype: str) -> str | None:
        """A large constant written by how it is made, where it is one of the usual ones: positions
        ``torch.arange(0, 5)``, or a triangle (a causal mask, boolean or of one value) ``….tril(k)``."""
        device = f"device={self.like}.device"
        if numbers.ndim == 1 and not is_floating(dtype) and dtype != "bool" and numbers.size > 1:
            start, step = int(numbers[0]), int(numbers[1] - numbers[0])
            if step != 0 and all(int(v) == start + step * i for i, v in enumerate(numbers)):
                stop = start + step * numbers.size
                bounds = f"{start}, {stop}" if step == 1 else f"{start}, {stop}, {step}"
                return f"torch.arange({bounds}, {device})"
        if numbers.ndim < 2 or any(d != 1 for d in numbers.shape[:-2]):
            return None
        square = numbers.reshape(numbers.shape[-2:])
        rows, cols = square.shape
        values = {v for v in square.reshape(-1) if v != 0}
        if len(values) != 1:
            return None
        (value,) = values
        filled = square != 0
        for side, k in itertools.product(("tril", "triu"), range(-rows, cols + 1)):
            if (filled == getattr(np, side)(np.ones((rows, cols), dtype=bool), k)).all():
                break
        else:
            return None
        if dtype == "bool":
            full = f"torch.ones({rows}, {cols}, dtype=torch.bool, {device})"
        elif is_floating(dtype):
            full = f"{self.like}.new_full(({rows}, {cols}), {float(value)!r})"
        else:
            full = f"torch.full(({rows}, {cols}), {int(value)}, dtype=torch.long, {device})"
        text = f"{full}.{side}({k})" if k else f"{full}.{side}()"
        lead = numbers.shape[:-2]
        return f"{text}.reshape({shape_tuple(numbers.shape)})" if lead else text

    def _print_template(self, t: Tensor) -> tuple[str, int]:
        template = getattr(t.op, self.template_field)
        if template.startswith("_"):  # an op spelled as one of the module's helpers (_cross_entropy_grad)
            self.helpers.add(template.split("(")[0])
        first = t.inputs[0] if t.inputs else None
        numbers_only = all(p.op is None and not p.shape and uniform_constant(p) is not None for p in t.inputs)
        if first is None or not template.startswith("torch.") or not numbers_only or id(first) in self.names:
            return super()._print_template(t)
        # torch functions take tensors: torch.log(0.0) is a TypeError, torch.log(x.new_tensor(0.0)) is -inf
        self.names[id(first)] = f"{self.like}.new_tensor({float(uniform_constant(first))!r})"
        try:
            return super()._print_template(t)
        finally:
            del self.names[id(first)]

    def _print_add(self, t: Tensor):
        fused = (self._linear(t) or self._convolution_with_bias(t)) if self.fused else None
        return fused if fused is not None else self._print_template(t)

    def _convolution_with_bias(self, t: Tensor) -> tuple[str, int] | None:
        """``conv2d(x, w) + b.reshape(C, 1, 1)`` as ``conv2d(x, w, b)``: the bias added by the convolution's own
        kernel, as an ``nn.Conv2d`` runs it, where a separate sum takes another pass over the output."""
        for conv, shaped in (t.inputs, t.inputs[::-1]):
            if conv.op is None or conv.op.name != "convolution" or not self._inline(conv):
                continue
            if shaped.op is None or shaped.op.name != "reshape" or tuple(t.shape) != tuple(conv.shape):
                continue
            (bias,) = shaped.inputs
            channels = conv.shape[1]
            ones = shaped.shape[len(shaped.shape) - len(conv.shape) + 2 :] if len(shaped.shape) >= 2 else None
            if len(bias.shape) != 1 or bias.shape[0] != channels or ones is None or any(d != 1 for d in ones):
                continue
            if shaped.shape[len(shaped.shape) - len(conv.shape) + 1] != channels or bias.dtype != conv.dtype:
                continue
            self.fused_parts[id(t)] = [*conv.inputs, bias]
            x, w, b = (self._print(p)[0] for p in (*conv.inputs, bias))
            fields = describe(conv.op, conv.attrs, conv.inputs)
            return f"torch.nn.functional.conv{fields['n']}d({x}, {w}, {b}{fields['options']})", 9
        return None

    def _linear(self, t: Tensor) -> tuple[str, int] | None:
        """``x @ W.T + b`` (b a vector of W's rows) as ``torch.nn.functional.linear(x, W, b)``: the one
        ``addmm`` kernel an ``nn.Linear`` runs, where a product and a sum take two passes."""
        for product, bias in (t.inputs, t.inputs[::-1]):
            if product.op is None or product.op.name != "matmul" or not self._inline(product):
                continue
            x, transposed = product.inputs
            # a named transpose too (a weight shared by a loop's steps): linear reads the weight itself
            if transposed.op is None or transposed.op.name != "transpose":
                continue
            (w,) = transposed.inputs
            if len(w.shape) != 2 or len(x.shape) < 1 or tuple(bias.shape) != (w.shape[0],):
                continue
            if not all(is_floating(p.dtype) and p.dtype == t.dtype for p in (x, w, bias)):
                continue
            if tuple(product.shape) != tuple(t.shape):
                continue
            self.fused_parts[id(t)] = [x, w, bias]
            parts = ", ".join(self._print(p)[0] for p in (x, w, bias))
            return f"torch.nn.functional.linear({parts})", 9
        return None

    def _print_transpose(self, t: Tensor):
        swapped = self._swapped_product(t) if self.fused else None
        return swapped if swapped is not None else self._print_template(t)

    def _swapped_product(self, t: Tensor) -> tuple[str, int] | None:
        """``(A @ B).T`` of matrices as ``B.T @ A.T`` (a transposed ``A.T`` read as ``A``): the product comes out
        in the layout it is used in, as autograd computes a weight's gradient ``G.T @ X``, where a transposed
        view of a tall skinny product is slower to make and to accumulate."""
        (product,) = t.inputs
        if product.op is not None and product.op.name == "sum" and self._inline(product):
            folded = self._folded_batch_product(product, transposed=True)
            if folded is not None:
                self.fused_parts[id(t)] = self.fused_parts.pop(id(product))
                return folded
        if len(t.shape) != 2 or product.op is None or product.op.name != "matmul" or not self._inline(product):
            return None
        if not all(len(p.shape) == 2 and is_floating(p.dtype) for p in product.inputs):
            return None
        parts, texts = [], []
        for factor in product.inputs[::-1]:
            unwrapped = factor.op is not None and factor.op.name == "transpose" and self._inline(factor)
            parts.append(factor.inputs[0] if unwrapped else factor)
            texts.append(self._operand(parts[-1]) + ("" if unwrapped else ".T"))
        self.fused_parts[id(t)] = parts
        return f"{texts[0]} @ {texts[1]}", 5

    def _print_pow(self, t: Tensor):
        base, exponent = (self._print(part) for part in t.inputs)
        base_text = base[0] if base[1] > 7 else f"({base[0]})"
        exp_text = exponent[0] if exponent[1] > 7 else f"({exponent[0]})"
        simple = _SIMPLE.fullmatch(base_text) and _SIMPLE.fullmatch(exp_text)
        return (f"{base_text}**{exp_text}" if simple else f"{base_text} ** {exp_text}"), 7

    def _print_full(self, t: Tensor):
        value, _ = self._print_number(sympy.sympify(t.attrs["value"]))
        shape = shape_tuple(t.attrs["shape"])
        if not is_floating(t.dtype):  # an index or a mask keeps its integer or boolean dtype
            kind = "torch.bool" if t.dtype == "bool" else f"torch.{t.dtype}"
            return f"torch.full({shape}, {value}, dtype={kind}, device={self.like}.device)", 9
        return f"{self.like}.new_full({shape}, {value}{self._own_dtype(t)})", 9

    def _own_dtype(self, t: Tensor) -> str:
        """``, dtype=torch.float32`` for a float constant whose dtype in the trace is not the like tensor's."""
        if self.like_dtype is None or t.dtype == self.like_dtype or not is_floating(t.dtype):
            return ""
        return f", dtype=torch.{t.dtype}"

    def _print_eye(self, t: Tensor):
        return f"torch.eye({t.attrs['n']}, dtype={self.like}.dtype, device={self.like}.device)", 9

    def _print_one_hot(self, t: Tensor):
        (y,) = t.inputs
        text, _ = self._print(y)
        classes = t.attrs["num_classes"]
        return f"torch.nn.functional.one_hot({text}.long(), {classes}).to({self.like}.dtype)", 9

    def _print_inv(self, t: Tensor):
        """An unchecked inverse (inside det's rule, where torch.where masks a singular matrix) must not raise
        there: torch.linalg.inv_ex reports instead of raising; the docstring keeps torch.linalg.inv."""
        if t.attrs.get("check", True):
            return self._print_template(t)
        text, _ = self._print(t.inputs[0])
        return f"torch.linalg.inv_ex({text}).inverse", 9

    def _print_gelu_derivative(self, t: Tensor):
        """GELU'(x) alone (an incoming gradient of ones) as torch's gelu_backward kernel, not its six pieces."""
        if not self.fused:
            return self._print_template(t)
        text, _ = self._print(t.inputs[0])
        self.aten_kernels.add("gelu_backward")
        arguments = ", ".join([f"torch.ones_like({text})", text, *GELU_KERNEL_ARGUMENTS[t.op.name]])
        return f"torch.ops.aten.gelu_backward({arguments})", 9

    _print_gelu_tanh_derivative = _print_gelu_derivative

    def _print_step(self, t: Tensor):
        (x,) = t.inputs
        text, precedence = self._print(x)
        inner = text if precedence > 3 else f"({text})"
        if t.attrs["at_zero"] == 0:
            return f"({inner} > 0).to({self.like}.dtype)", 9
        return f"torch.heaviside({text}, {self.like}.new_tensor({float(t.attrs['at_zero'])!r}))", 9

    def _print_where(self, t: Tensor):
        fused = (self._fused_threshold(t) or self._fused_at_targets(t)) if self.fused else None
        if fused is not None:
            return fused
        condition, a, b = (self._print(part)[0] for part in t.inputs)
        if not self.derivatives or not is_floating(t.dtype):
            return f"torch.where({condition}, {a}, {b})", 9
        # a number float32 does not hold (1/3, or 1/n for a size n) is a tensor of the input's dtype: torch.where
        # between two numbers computes in torch's default dtype, float32, and a .to() after it is too late
        inexact = [not _exact_in_float32(part) for part in t.inputs[1:]]
        a, b = (f"{self.like}.new_tensor({text})" if lost else text for text, lost in zip((a, b), inexact))
        text = f"torch.where({condition}, {a}, {b})"
        numbers = all(
            part.op is None and not part.shape and uniform_constant(part) is not None for part in t.inputs[1:]
        )
        if numbers and not any(inexact):
            return f"{text}.to({self.like}.dtype)", 9  # two numbers make a float32 tensor
        return text, 9

    def _fused_threshold(self, t: Tensor) -> tuple[str, int] | None:
        """``torch.where(z <= c, 0, g)`` as ``threshold_backward(g, z, c)``: relu's and threshold's backward in
        the one kernel torch's own autograd runs (it selects as the where does: a nan z passes g on)."""
        condition, zero, grad = t.inputs
        if condition.op is None or condition.op.name != "le" or not self._inline(condition) or not _constant(zero, 0):
            return None
        z, threshold = condition.inputs
        value = uniform_constant(threshold)
        if threshold.shape or value is None or not value.is_Number:
            return None
        if not all(is_floating(p.dtype) and tuple(p.shape) == tuple(t.shape) for p in (z, grad)):
            return None
        if grad.op is None and uniform_constant(grad) is not None:  # a number: the kernel takes tensors only
            return None
        self.fused_parts[id(t)] = [grad, z]
        self.aten_kernels.add("threshold_backward")
        return f"torch.ops.aten.threshold_backward({self._print(grad)[0]}, {self._print(z)[0]}, {value})", 9

    def _fused_at_targets(self, t: Tensor) -> tuple[str, int] | None:
        """``torch.where(one_hot(y) == 1, v, 0)`` as ``_at_targets(v, y, shape)``: v's entries at the targets
        scattered into zeros, as torch's NLL backward places them, without building the m×c one-hot."""
        condition, value, zero = t.inputs
        if condition.op is None or condition.op.name != "eq" or not self._inline(condition) or not _constant(zero, 0):
            return None
        one_hot = condition.inputs[0]
        if one_hot.op is None or one_hot.op.name != "one_hot" or not self._inline(one_hot):
            return None
        if not _constant(condition.inputs[1], 1) or len(t.shape) != 2 or not is_floating(value.dtype):
            return None
        self.helpers.add("_at_targets")
        self.fused_parts[id(t)] = [value, one_hot.inputs[0]]
        parts = [self._print(value)[0], self._print(one_hot.inputs[0])[0], shape_tuple(t.shape), self.like]
        return f"_at_targets({', '.join(parts)})", 9

    def _print_index_backward(self, t: Tensor):
        self.helpers.add("_index_backward")
        (g,) = t.inputs
        return f"_index_backward({self._print(g)[0]}, {shape_tuple(t.attrs['shape'])}, {t.attrs['index']!r})", 9

    def _print_mul(self, t: Tensor):
        fused = self._fused_backward(t) if self.fused else None
        return fused if fused is not None else self._print_template(t)

    def _print_sub(self, t: Tensor):
        fused = self._fused_sub(t) if self.fused else None
        return fused if fused is not None else self._print_template(t)

    def _print_mean(self, t: Tensor):
        fused = self._fused_loss(t, "mean") if self.fused else None
        return fused if fused is not None else self._print_template(t)

    def _print_sum(self, t: Tensor):
        fused = (self._fused_loss(t, "sum") or self._folded_batch_product(t)) if self.fused else None
        return fused if fused is not None else self._print_template(t)

    def _folded_batch_product(self, t: Tensor, transposed: bool = False) -> tuple[str, int] | None:
        """``(X @ Y).sum(dim=0)`` over a batch of matrices (a weight's gradient over a batch of sequences) as one
        matrix product of the batch laid side by side, ``X.transpose(0, 1).reshape(m, -1) @ Y.reshape(-1, n)``
        (``A.reshape(-1, m).T`` for ``X = A.mT``): one GEMM, where a batched product and a sum over its result
        build b products of small matrices and a (b, m, n) tensor. ``transposed``: the product's transpose,
        ``Y.reshape(-1, n).T @ A.reshape(-1, m)``, which reads both factors in place."""
        (product,) = t.inputs
        if t.attrs.get("keepdim") or tuple(t.attrs.get("dim", ())) != (0,) or not self._inline(product):
            return None
        if product.op is None or product.op.name != "matmul" or len(t.shape) != 2:
            return None
        x, y = product.inputs
        m, n = t.shape
        if len(x.shape) != 3 or len(y.shape) != 3 or not isinstance(m, int) or not isinstance(n, int):
            return None
        if not same_dim(x.shape[0], y.shape[0]) or not all(is_floating(p.dtype) for p in (x, y)):
            return None
        swapped = x.op is not None and x.op.name == "transpose" and self._inline(x)
        swapped = swapped and sorted(d % 3 for d in (x.attrs.get("dim0", 0), x.attrs.get("dim1", 0))) == [1, 2]
        left = x.inputs[0] if swapped else x
        self.fused_parts[id(t)] = [left, y]
        left_text, right_text = self._operand(left), f"{self._operand(y)}.reshape(-1, {n})"
        if transposed:
            left_text = (
                f"{left_text}.reshape(-1, {m})" if swapped else f"{left_text}.transpose(0, 1).reshape({m}, -1).T"
            )
            return f"{right_text}.T @ {left_text}", 5
        left_text = f"{left_text}.reshape(-1, {m}).T" if swapped else f"{left_text}.transpose(0, 1).reshape({m}, -1)"
        return f"({left_text} @ {right_text})", 9

    def _operand(self, t: Tensor) -> str:
        """``t`` printed as the receiver of a method call: in parentheses unless it binds tighter."""
        text, precedence = self._print(t)
        return text if precedence >= 9 else f"({text})"

    def _inline(self, t: Tensor) -> bool:
        """Whether a node is printed in place (no statement of its own computes it), so a fused form may absorb it."""
        return id(t) not in self.names and t.op is not None

    def _fused_backward(self, t: Tensor) -> tuple[str, int] | None:
        """``g * (1 - y**2)``, ``g * (s * (1 - s))`` and ``g * (z > 0)`` as torch's own backward kernels
        (``tanh_backward``, ``sigmoid_backward``, ``threshold_backward``): one kernel instead of three.
        They are the kernels torch's own autograd runs for tanh, sigmoid and relu, reached through the
        operator namespace ``torch.ops.aten`` (there is no ``torch.*`` spelling of them); torch differentiates
        each of them twice and in forward mode (the tests check double backward and torch.func.hessian
        through every emitted Function)."""
        if not all(is_floating(p.dtype) and tuple(p.shape) == tuple(t.shape) for p in t.inputs):
            return None
        for grad, factor in (t.inputs, t.inputs[::-1]):
            if not self._inline(factor) or (grad.op is None and uniform_constant(grad) is not None):
                continue
            kernel = _backward_kernel(factor, self._inline)
            if kernel is not None:
                name, operand, extra = kernel
                self.fused_parts[id(t)] = [grad, operand]
                self.aten_kernels.add(name)
                parts = [self._print(grad)[0], self._print(operand)[0], *extra]
                return f"torch.ops.aten.{name}({', '.join(parts)})", 9
        return None

    def _fused_sub(self, t: Tensor) -> tuple[str, int] | None:
        """``p - one_hot(y)`` as ``p`` with -1 added at each target: no m×c one-hot is built."""
        a, b = t.inputs
        if b.op is None or b.op.name != "one_hot" or not self._inline(b) or tuple(a.shape) != tuple(b.shape):
            return None
        if not is_floating(a.dtype):
            return None
        self.helpers.add("_minus_one_hot")
        self.fused_parts[id(t)] = [a, b.inputs[0]]
        return f"_minus_one_hot({self._print(a)[0]}, {self._print(b.inputs[0])[0]})", 9

    def _fused_loss(self, t: Tensor, reduction: str) -> tuple[str, int] | None:
        """The mean (or sum) of ``binary_cross_entropy_with_logits(z, y, reduction="none")``, or of its spelling
        out ``softplus(z) - y * z``, as one ``binary_cross_entropy_with_logits(z, y)`` call."""
        (losses,) = t.inputs
        everything = tuple(range(len(losses.shape)))
        if t.attrs.get("keepdim") or tuple(sorted(t.attrs.get("dim", ()))) != everything or not losses.shape:
            return None
        if not self._inline(losses):
            return None
        operands = _logits_and_target(losses, self._inline)
        if operands is None:
            return None
        z, target = operands
        if target.op is None and uniform_constant(target) is not None:
            return None
        if tuple(target.shape) != tuple(z.shape) or not is_floating(target.dtype):
            return None
        self.fused_parts[id(t)] = [z, target]
        arguments = f"{self._print(z)[0]}, {self._print(target)[0]}"
        if reduction != "mean":
            arguments += f', reduction="{reduction}"'
        return f"torch.nn.functional.binary_cross_entropy_with_logits({arguments})", 9

    def _print_map(self, t: Tensor):
        (x,) = t.inputs
        variable = t.attrs["fn"].variables[0]
        self.uses_math = True
        return python_source(t.attrs["fn"].expr, {variable: self._print(x)[0]}), 9


def _logits_and_target(losses: Tensor, inline: Callable[[Tensor], bool]) -> tuple[Tensor, Tensor] | None:
    """``(z, y)`` of the elementwise losses ``binary_cross_entropy_with_logits(z, y)`` or ``softplus(z) - y * z``."""
    if losses.op.name == "binary_cross_entropy_with_logits":
        return losses.inputs[0], losses.inputs[1]
    if losses.op.name != "sub":
        return None
    softplus, product = losses.inputs
    if softplus.op is None or softplus.op.name != "softplus" or not inline(softplus):
        return None
    if product.op is None or product.op.name != "mul" or not inline(product):
        return None
    (z,) = softplus.inputs
    target = next((b for a, b in (product.inputs, product.inputs[::-1]) if a is z), None)
    return None if target is None else (z, target)


def _exact_in_float32(t: Tensor) -> bool:
    """Whether ``t`` is a tensor, or a number float32 holds exactly (0, 1, 0.5, nan, inf): torch.where between
    two such numbers loses nothing in its default dtype."""
    value = uniform_constant(t) if t.op is None and not t.shape else None
    if value is None:
        return True
    if not value.is_Number:  # a size ratio such as 1/n: not known to be exact
        return False
    if not value.is_finite:
        return True
    return float(np.float32(float(value))) == float(value)


def _constant(t: Tensor, value: int) -> bool:
    return t.op is None and not t.shape and uniform_constant(t) == value


# GELU's derivative ops, and the arguments after (grad, x) that torch's gelu_backward kernel takes for each
GELU_KERNEL_ARGUMENTS = {"gelu_derivative": [], "gelu_tanh_derivative": ['approximate="tanh"']}


def _backward_kernel(factor: Tensor, inline) -> tuple[str, Tensor, list[str]] | None:
    """The aten backward kernel whose formula is ``grad * factor``: (its name, the tensor it reads besides
    the gradient, further arguments), or None. ``1 - y**2`` is tanh's (for any y, as torch computes it),
    ``s * (1 - s)`` sigmoid's, and ``step(z)`` (1 where z > 0, else 0) relu's: threshold_backward(g, z, 0) is
    g where z > 0 and 0 elsewhere, as torch's relu backward (a NaN z passes g on, as torch's does)."""
    op = factor.op.name
    if op == "sub" and _constant(factor.inputs[0], 1):
        square = factor.inputs[1]
        if square.op is not None and square.op.name == "pow" and inline(square) and _constant(square.inputs[1], 2):
            y = square.inputs[0]
            if is_floating(y.dtype) and tuple(y.shape) == tuple(factor.shape):
                return "tanh_backward", y, []
    if op == "mul":
        for s, rest in (factor.inputs, factor.inputs[::-1]):
            if rest.op is not None and rest.op.name == "sub" and inline(rest) and _constant(rest.inputs[0], 1):
                if rest.inputs[1] is s and tuple(s.shape) == tuple(factor.shape):
                    return "sigmoid_backward", s, []
    if op in GELU_KERNEL_ARGUMENTS:
        (x,) = factor.inputs
        if is_floating(x.dtype) and tuple(x.shape) == tuple(factor.shape):
            return "gelu_backward", x, GELU_KERNEL_ARGUMENTS[op]
    if op == "step" and factor.attrs.get("at_zero") == 0:
        (z,) = factor.inputs
        if is_floating(z.dtype) and tuple(z.shape) == tuple(factor.shape):
            return "threshold_backward", z, ["0"]
    return None


_SIMPLE = re.compile(r"-?[A-Za-z_][A-Za-z_0-9.]*|-?\d+(\.\d+)?")


def wrapped(text: str, indent: str, width: int = 110) -> str:
    """A long docstring line folded at spaces, continuation lines indented a further four spaces."""
    import textwrap

    return "\n".join(
        textwrap.wrap(
            text,
            width=width,
            initial_indent=indent,
            subsequent_indent=indent + "    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
    )


def docstring_safe(text: str) -> str:
    """Text placed inside a raw docstring: one line, no double quote that could end it, and no
    backslash right before the closing quotes."""
    line = " ".join(text.replace('"', "'").split())
    return line + " " if line.endswith("\\") else line


_loads = itertools.count(1)


_loaded: dict[tuple[str, str], ModuleType] = {}  # emitted modules by their source and name


def load_source(source: str, name: str, filename: str | None = None) -> ModuleType:
    """Import emitted source as a module, without a file or a temporary folder.

    The source is registered with :mod:`linecache`, so tracebacks and ``inspect.getsource``
    (which torch.compile uses) see it as if it were a file. Raises SyntaxError for source
    that is not Python.
    """
    filename = filename or f"<symgrad {name}>"
    code = compile(source, filename, "exec")
    module = ModuleType(f"symgrad_emitted_{name.lower()}_{next(_loads)}")
    module.__file__ = filename
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    sys.modules[module.__name__] = module  # torch looks Functions' modules up by name
    exec(code, module.__dict__)  # symgrad's own emitted code; user text reaches it only as checked identifiers
    module.__symgrad_source__ = source
    drop_in = module.__dict__.get(f"{name}Module")
    if isinstance(drop_in, type):  # pickled (torch.save of the whole module), it loads wherever symgrad is installed
        drop_in.__reduce_ex__ = lambda self, protocol: (emitted_instance, (source, name), self.__dict__)
    _loaded.setdefault((source, name), module)
    return module


def emitted_instance(source: str, name: str) -> Any:
    """A new, empty ``<name>Module`` of the emitted ``source``, loaded once per process: what a pickled drop-in
    is rebuilt from (its state, the model included, is set by pickle afterwards)."""
    module = _loaded.get((source, name)) or load_source(source, name)
    cls = getattr(module, f"{name}Module")
    return cls.__new__(cls)
