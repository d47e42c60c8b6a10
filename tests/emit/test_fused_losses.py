"""Emitted softmax and softmax cross-entropy run torch's own kernels. Cross-entropy's forward keeps log_softmax,
its backward runs nll_loss_backward and _log_softmax_backward_data on it (``symgrad/emit/kernels.py``)."""

from __future__ import annotations

import functools

import pytest

import symgrad as sg
import symgrad.torch as st

torch = pytest.importorskip("torch")


def _module(reduction: str):
    m, n, c = sg.dims("m n c")
    X, W = sg.symbols("X", (m, n)), sg.symbols("W", (n, c), requires_grad=True)
    y = sg.symbols("y", (m,), dtype="int64")
    out = st.nn.functional.cross_entropy(X @ W, y, reduction=reduction)
    return sg.compile(out, [W], inputs=[X, W, y], style="autograd_function", name="Loss")


def _agrees_bit_for_bit(module, X, W, y, g, expected):
    """forward_and_vjp and apply(...).backward give torch's loss and gradient of W, to the last bit."""
    (theirs,) = torch.autograd.grad(expected, W, g)
    ours, (grad_W,) = module.forward_and_vjp(X, W.detach(), y, g)
    assert torch.equal(ours, expected.detach())
    assert torch.equal(grad_W, theirs)
    W2 = W.detach().clone().requires_grad_()
    module.apply(X, W2, y).backward(g)
    assert torch.equal(W2.grad, theirs)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_backward_is_torchs_to_the_last_bit(reduction):
    module = _module(reduction)
    source = module.__symgrad_source__
    assert "grad_W = X.T @ _cross_entropy_grad(t_1, y, " in source  # not softmax minus a one-hot, kernel by kernel
    gen = torch.Generator().manual_seed(3)
    X = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    W = torch.randn(4, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 2, 1, 1, 2])
    g = torch.tensor(0.7, dtype=torch.float64)
    _agrees_bit_for_bit(module, X, W, y, g, torch.nn.functional.cross_entropy(X @ W, y, reduction=reduction))


def test_cross_entropy_target_out_of_range_raises_in_the_backward():
    module = _module("mean")
    X, W = torch.randn(2, 3, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(IndexError, match="out of bounds"):
        module.vjp(X, W, torch.tensor([0, 7]), torch.tensor(1.0, dtype=torch.float64))


def test_the_docstring_keeps_the_law_a_person_writes():
    source = _module("mean").__symgrad_source__
    assert "torch.softmax(X @ W, dim=1) - torch.nn.functional.one_hot(y, c)" in source


def test_cross_entropy_vjp_takes_any_grad_output_as_other_modules_do():
    """A Python number, or a float32 gradient with float64 inputs: torch's kernel does not promote, the helper does."""
    module = _module("mean")
    X, W = torch.randn(3, 2, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
    y = torch.tensor([0, 3, 1])
    Wr = W.clone().requires_grad_()
    (expected,) = torch.autograd.grad(torch.nn.functional.cross_entropy(X @ Wr, y), Wr)
    for grad_output in (1.0, torch.tensor(1.0), torch.tensor(1.0, dtype=torch.float64)):
        (ours,) = module.vjp(X, W, y, grad_output)
        assert ours.dtype == torch.float64
        torch.testing.assert_close(ours, expected, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_backward_is_torchs_own_kernel_to_the_last_bit(dim):
    """Softmax's backward, ``y * (g - (g * y).sum(dim, keepdim=True))``, is ``_softmax_backward_data``, the kernel
    torch's own softmax backward runs; double backward goes through it too."""
    m, n, k = sg.dims("m n k")
    Z, V = sg.symbols("Z", (m, n, k), requires_grad=True), sg.symbols("V", (m, n, k))
    out = (st.softmax(Z, dim=dim) * V).sum()
    module = sg.compile(out, [Z], inputs=[Z, V], style="autograd_function", name="Softmax")
    kernel = f"torch.ops.aten._softmax_backward_data((grad_output * V).to(t_1.dtype), t_1, {dim % 3}, t_1.dtype)"
    assert kernel in module.__symgrad_source__
    gen = torch.Generator().manual_seed(dim + 5)
    Z_value = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    V_value = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
    (expected,) = torch.autograd.grad((torch.softmax(Z_value, dim=dim) * V_value).sum(), Z_value, create_graph=True)
    (ours,) = torch.autograd.grad(module.apply(Z_value, V_value), Z_value, create_graph=True)
    assert torch.equal(ours, expected)
    tangent = torch.randn(2, 3, 4, generator=gen, dtype=torch.float64)
    (second,) = torch.autograd.grad((ours * tangent).sum(), Z_value)
    (second_expected,) = torch.autograd.grad((expected * tangent).sum(), Z_value)
    torch.testing.assert_close(second, second_expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_nll_loss_of_log_softmax_takes_cross_entropys_kernels(reduction):
    """F.nll_loss(F.log_softmax(z, 1), y) is torch's definition of cross_entropy: its emitted backward saves the
    log-probabilities and runs the same two kernels, where it built a dense one-hot and recomputed the softmax."""
    m, n, c = sg.dims("m n c")
    X, W = sg.symbols("X", (m, n)), sg.symbols("W", (n, c), requires_grad=True)
    y = sg.symbols("y", (m,), dtype="int64")
    F = st.nn.functional
    out = F.nll_loss(F.log_softmax(X @ W, dim=1), y, reduction=reduction)
    module = sg.compile(out, [W], inputs=[X, W, y], style="autograd_function", name="Nll")
    source = module.__symgrad_source__
    backward = source[source.index("def _backward(") : source.index("def forward(")]
    assert "one_hot" not in backward and "grad_W = X.T @ _cross_entropy_grad(t_1, y, " in backward
    gen = torch.Generator().manual_seed(7)
    X_value = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    W_value = torch.randn(4, 3, generator=gen, dtype=torch.float64, requires_grad=True)
    y_value = torch.tensor([0, 2, 1, 1, 2])
    g = torch.tensor(0.3, dtype=torch.float64)
    F_torch = torch.nn.functional
    expected_out = F_torch.nll_loss(F_torch.log_softmax(X_value @ W_value, dim=1), y_value, reduction=reduction)
    (expected,) = torch.autograd.grad(expected_out, W_value, g)
    ours, (grad_W,) = module.forward_and_vjp(X_value, W_value.detach(), y_value, g)
    assert torch.equal(ours, expected_out.detach()) and torch.equal(grad_W, expected)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_backward_differentiates_in_its_gradient_as_torchs(reduction):
    """torch.autograd.functional.jvp differentiates the backward with respect to its incoming gradient (the
    double-backward trick); the NLL kernel's own derivative there divides by the number of targets under reduction
    "mean", so "sum" must stay "sum"."""
    module = _module(reduction)
    gen = torch.Generator().manual_seed(11)
    X = torch.randn(3, 4, generator=gen, dtype=torch.float64)
    W = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    y = torch.tensor([0, 4, 2])
    tangent = torch.randn(4, 5, generator=gen, dtype=torch.float64)
    _, ours = torch.autograd.functional.jvp(lambda w: module.apply(X, w, y), W, tangent)
    _, expected = torch.autograd.functional.jvp(
        lambda w: torch.nn.functional.cross_entropy(X @ w, y, reduction=reduction), W, tangent
    )
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def test_softmax_backward_kernel_takes_a_gradient_of_another_dtype():
    """_softmax_backward_data does not promote: the gradient is cast to the softmax's dtype first, as torch's
    autograd casts it; a 0-d softmax is left to the formula."""
    m, n = sg.dims("m n")
    z, w = sg.symbols("z", (m, n), requires_grad=True), sg.symbols("w", (m, n))
    module = sg.compile((st.softmax(z, dim=1) * w).sum(), [z], inputs=[z, w], style="autograd_function", name="S")
    z32 = torch.randn(2, 3, requires_grad=True)
    w64 = torch.randn(2, 3, dtype=torch.float64)
    (ours,) = torch.autograd.grad(module.apply(z32, w64), z32)
    (expected,) = torch.autograd.grad((torch.softmax(z32, dim=1) * w64).sum(), z32)
    assert ours.dtype == expected.dtype == torch.float32
    torch.testing.assert_close(ours, expected)
    x, v = sg.symbols("x", (), requires_grad=True), sg.symbols("v", (), requires_grad=True)
    scalar = sg.compile(st.softmax(x, 0) * v, [x, v], inputs=[x, v], style="autograd_function", name="S0")
    one = torch.tensor(0.3, dtype=torch.float64)
    assert [g.item() for g in scalar.vjp(one, one, torch.tensor(1.0, dtype=torch.float64))] == [0.0, 1.0]


def test_emitted_nll_loss_keeps_zeros_off_the_targets_under_an_infinite_gradient():
    """torch's NLL kernel scatters -g/m to the targets; a product with a one-hot made the other entries 0 · ∞."""
    m, c = sg.dims("m c")
    z, y = sg.symbols("z", (m, c), requires_grad=True), sg.symbols("y", (m,), dtype="int64")
    module = sg.compile(st.nn.functional.nll_loss(z, y), [z], inputs=[z, y], style="autograd_function", name="Nll")
    z_value = torch.tensor([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    y_value, g = torch.tensor([2, 0]), torch.tensor(float("inf"), dtype=torch.float64)
    (expected,) = torch.autograd.grad(torch.nn.functional.nll_loss(z_value, y_value), z_value, g)
    (ours,) = module.vjp(z_value.detach(), y_value, g)
    assert torch.equal(ours, expected)


def _code(source: str) -> str:
    """The module's code without its docstring (which keeps the law a person writes)."""
    return source.split('"""\n', 1)[1]


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func's import
def test_emitted_nll_loss_and_cross_entropy_tangent_build_no_one_hot():
    """where(one_hot(y) == 1, v, 0) is v gathered at the targets and scattered into zeros, as torch's NLL backward
    places it: no m×c one-hot is built, in the backward of nll_loss or the forward-mode tangent of cross_entropy."""
    m, c = sg.dims("m c")
    z, y = sg.symbols("z", (m, c), requires_grad=True), sg.symbols("y", (m,), dtype="int64")
    F = st.nn.functional
    values = torch.tensor([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]], dtype=torch.float64)
    targets, g = torch.tensor([2, 0]), torch.tensor(0.7, dtype=torch.float64)
    for loss in (F.nll_loss, F.cross_entropy):
        module = sg.compile(loss(z, y), [z], inputs=[z, y], style="autograd_function", name="Loss")
        assert "functional.one_hot" not in _code(module.__symgrad_source__)
        leaf = values.clone().requires_grad_()
        expected = getattr(torch.nn.functional, loss.__name__)(leaf, targets)
        (theirs,) = torch.autograd.grad(expected, leaf, g)
        ours, (grad_z,) = module.forward_and_vjp(values, targets, g)
        assert torch.equal(ours, expected.detach())
        torch.testing.assert_close(grad_z, theirs, rtol=0, atol=1e-15)
        tangent = torch.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=torch.float64)
        reference = getattr(torch.nn.functional, loss.__name__)
        _, expected_tangent = torch.func.jvp(functools.partial(reference, target=targets), (values,), (tangent,))
        _, ours_tangent = torch.func.jvp(lambda a, f=module.apply: f(a, targets), (values,), (tangent,))
        torch.testing.assert_close(ours_tangent, expected_tangent, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean"])  # reduction "sum" raises IndexError in the backward (see kernels)
def test_a_target_of_minus_100_is_ignored_forward_and_backward_as_in_torch(reduction):
    """F.cross_entropy ignores targets equal to its default ignore_index, -100: the emitted forward always did (it
    calls nll_loss), and the backward now gives torch's gradient too: the NLL kernels run with the same
    ignore_index and the total weight the forward counted (before, the backward raised IndexError)."""
    module = _module(reduction)
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    W = torch.randn(3, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    y, g = torch.tensor([1, -100, 4, 0]), torch.tensor(1.5, dtype=torch.float64)
    _agrees_bit_for_bit(module, X, W, y, g, torch.nn.functional.cross_entropy(X @ W, y, reduction=reduction))


def test_the_mean_backward_reads_the_total_weight_the_forward_counted():
    """The forward gets the loss and its total weight from one nll_loss_forward call and saves the total weight;
    the backward makes no tensor of the count (in a backward each new tensor costs microseconds)."""
    source = _code(_module("mean").__symgrad_source__)
    assert "t_2, t_3 = torch.ops.aten.nll_loss_forward(t_1, y, None, 1, -100)" in source
    assert "_cross_entropy_grad(t_1, y, grad_output, t_3)" in source
    assert "new_full" not in source


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_log_softmax_backward_is_torchs_kernel_on_the_saved_output(dtype):
    """log_softmax's VJP reads its output, g - exp(y) * sum(g), as torch's does: emitted code runs
    _log_softmax_backward_data on the saved log-probabilities (one kernel, bit-equal); the law to read says softmax."""
    m, c = sg.dims("m c")
    z, w = sg.symbols("z", (m, c), requires_grad=True), sg.symbols("w", (m, c))
    out = (st.log_softmax(z, dim=1) * w).sum()
    module = sg.compile(out, [z], inputs=[z, w], style="autograd_function", name="LogSoftmax")
    source = module.__symgrad_source__
    assert "torch.ops.aten._log_softmax_backward_data(" in _code(source)
    assert "torch.softmax(z, dim=1)" in source.split('"""\n', 1)[0]
    gen = torch.Generator().manual_seed(2)
    values, weights = torch.randn(4, 5, generator=gen, dtype=dtype), torch.randn(4, 5, generator=gen, dtype=dtype)
    leaf = values.clone().requires_grad_()
    g = torch.tensor(0.3, dtype=dtype)
    (theirs,) = torch.autograd.grad((torch.log_softmax(leaf, dim=1) * weights).sum(), leaf, g)
    (ours,) = module.vjp(values, weights, g)
    assert torch.equal(ours, theirs)
    applied = values.clone().requires_grad_()
    module.apply(applied, weights).backward(g)
    assert torch.equal(applied.grad, theirs)


def test_a_gpts_loss_saves_its_targets_not_their_one_hot():
    """nanoGPT's loss, cross-entropy over a vocabulary with ignore_index=-1 and the head tied to the embedding: its
    backward reads a one-hot of the targets, batch × vocabulary floats. The drop-in makes it again in the backward
    from the targets it saves, so that it saves no more than autograd, and its gradients stay autograd's."""
    import public_models as pm

    torch.manual_seed(0)
    model = pm.GPT(pm.GPTConfig(n_layer=1, n_head=2, n_embd=8, vocab_size=500, block_size=16)).double()
    idx, targets = torch.randint(0, 500, (2, 6)), torch.randint(0, 500, (2, 6))
    targets[0, 2] = -1

    def loss(idx, targets):
        return model(idx, targets)[1]

    dynamic = {"idx": {0: "b"}, "targets": {0: "b"}}
    traced = sg.trace(loss, idx, targets, dynamic_shapes=dynamic, modules={"model": model})
    drop_in = sg.compile(traced, name="Loss").LossModule(traced.model)
    owned = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}

    def saved(call) -> tuple[int, torch.Tensor]:
        seen: dict[int, int] = {}

        def pack(t):
            if t.untyped_storage().data_ptr() not in owned:
                seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = call(idx, targets)
        return sum(seen.values()), out

    (ours, out), (theirs, expected) = saved(drop_in), saved(loss)
    assert ours <= theirs
    grads = torch.autograd.grad(out, list(model.parameters()))
    expected_grads = torch.autograd.grad(expected, list(model.parameters()))
    for a, b in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
