"""sg.trace on the calls real code makes: what a tensor says of itself, creation with a device, torch's other
spellings (einsum's sublists), empty tensors, sizes spliced into a shape; and the last line of defence: an
exception from inside symgrad reaches the user as one InternalError naming the call and the line."""

from __future__ import annotations

import numpy as np
import pytest

import symgrad as sg
import symgrad.torch as storch

torch = pytest.importorskip("torch")
F64 = torch.float64


def _same_gradients(fn, *inputs, dynamic_shapes=None):
    """Trace ``fn``; its output and the VJP of every input equal torch's."""
    traced = sg.trace(fn, *inputs, dynamic_shapes=dynamic_shapes)
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*leaves)
    out.backward(torch.ones_like(out))
    assert traced.output.shape == tuple(out.shape)
    if dynamic_shapes:
        return traced
    np.testing.assert_allclose(_numbers(traced.output), out.detach().numpy(), rtol=1e-12, atol=1e-12)
    grads = sg.vjp(traced.output, traced.inputs, storch.ones_like(traced.output))
    for ours, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(_numbers(ours), leaf.grad.numpy(), rtol=1e-12, atol=1e-12)
    return traced


def _numbers(t: sg.Tensor) -> np.ndarray:
    return np.asarray(t.tolist(), dtype=float).reshape(t.shape)


def test_what_a_tensor_says_of_itself_is_torchs_answer():
    def fn(x):
        assert not x.is_nested and not x.is_sparse and x.dim() == 2 and x.is_floating_point()
        return (x * 2).sum()

    _same_gradients(fn, torch.randn(2, 3, dtype=F64))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: torch.einsum("ij,jk->ik", a, b).sum(),
        lambda a, b: torch.einsum(a, [0, 1], b, [1, 2]).tanh().sum(),
        lambda a, b: torch.einsum(a, [0, 1], b, [1, 2], [2, 0]).sin().sum(),
        lambda a, b: torch.einsum(a, [0, ...], [...]).sum() * b.sum(),
    ],
    ids=["equation", "sublists", "sublists with output", "sublists with ellipsis"],
)
def test_einsum_in_both_of_torchs_spellings(fn):
    _same_gradients(fn, torch.randn(2, 3, dtype=F64), torch.randn(3, 2, dtype=F64))


@pytest.mark.parametrize("shape", [(5, 0, 5), (0, 2), (3, 0)])
def test_an_empty_input_keeps_its_shape(shape):
    """tolist() of a (5, 0, 5) tensor is [[], [], [], [], []]: the tracer made it (5, 0)."""
    traced = _same_gradients(lambda x: x.repeat(2, 1, *([1] * (len(shape) - 2))) * 3, torch.randn(shape, dtype=F64))
    assert traced.inputs[0].shape == shape


def test_creation_takes_a_device_and_a_symbolic_size():
    def fn(x):
        return (x + torch.zeros(x.shape[0], 3, device=x.device, dtype=x.dtype)).tanh().sum()

    traced = _same_gradients(fn, torch.randn(2, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    (m,) = sg.dims("m")
    assert traced.output.shape == () and traced.inputs[0].shape == (m, 3)


def test_a_shape_spliced_from_symbolic_sizes():
    """x.shape[:-1] + (-1, 2), as rotary embeddings write it, at a symbolic batch."""
    traced = _same_gradients(
        lambda x: (x.reshape(x.shape[:-1] + (-1, 2)) ** 2).sum(),
        torch.randn(3, 4, dtype=F64),
        dynamic_shapes={"x": {0: "m"}},
    )
    (grad,) = sg.law(traced.output, traced.inputs)
    assert sg.prove(traced.output, traced.inputs, laws=[grad]).held


def test_an_exception_inside_symgrad_is_one_internal_error_naming_the_call_and_the_line(monkeypatch):
    """Whatever goes wrong inside symgrad where torch ran the call is a bug of symgrad's: one line, with the torch
    function and the user's line, never a bare KeyError from deep inside."""

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(storch, "tanh", broken)
    with pytest.raises(sg.InternalError) as caught:
        sg.trace(lambda x: torch.tanh(x).sum(), torch.randn(2, dtype=F64))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("tanh (") and "test_trace_calls.py, line" in message
    assert "KeyError: 'a bug'" in message and "a bug in symgrad" in message


def test_code_under_no_grad_carries_no_gradient():
    def fn(x):
        with torch.no_grad():
            s = x * 2
        return (s * x).sum()

    x = torch.tensor([1.0, 2.0, 3.0], dtype=F64)
    traced = sg.trace(fn, x)
    (grad,) = sg.vjp(traced.output, traced.inputs)
    assert grad.tolist() == [2.0, 4.0, 6.0]  # torch: s is a constant to autograd


def test_an_in_place_update_under_no_grad_of_a_differentiable_tensor_is_refused():
    """torch keeps y's gradient as if y had not changed, with clamped values: no formula says both."""

    def fn(x):
        y = x * 1
        with torch.no_grad():
            y.clamp_(max=1.5)
        return (y * x).sum()

    with pytest.raises(sg.UnsupportedError, match=r"in place under torch\.no_grad"):
        sg.trace(fn, torch.tensor([1.0, 2.0, 3.0], dtype=F64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_an_in_place_op_keeps_its_destinations_dtype(dtype):
    def fn(x):
        y = torch.zeros(3, dtype=dtype)
        y += x
        return y

    traced = sg.trace(fn, torch.randn(3, dtype=F64))
    assert traced.output.dtype == str(dtype).removeprefix("torch.")


class Stateful(torch.nn.Module):
    """A forward that changes its model: a parameter under no_grad, a reassigned buffer, a Python counter."""

    def __init__(self, touch_parameter: bool) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([0.5, 2.0, -3.0], dtype=F64))
        self.register_buffer("steps", torch.zeros((), dtype=F64))
        self.calls = 0
        self.touch_parameter = touch_parameter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.steps = self.steps + 1
        if self.touch_parameter:
            with torch.no_grad():
                self.w.clamp_(-1, 1)
        return (x * self.w).sum()


def test_tracing_leaves_reassigned_buffers_and_attributes_as_they_were():
    model = Stateful(touch_parameter=False)
    steps = model.steps
    sg.trace(model, torch.randn(2, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})  # runs forward twice
    assert model.calls == 0 and model.steps is steps and float(model.steps) == 0.0


def test_a_parameter_changed_in_place_is_refused_and_restored():
    model = Stateful(touch_parameter=True)
    with pytest.raises(sg.UnsupportedError, match=r"in place under torch\.no_grad"):
        sg.trace(model, torch.randn(3, dtype=F64))
    assert model.w.tolist() == [0.5, 2.0, -3.0] and model.w.grad is None


@pytest.mark.parametrize(
    "read", [lambda x: x.detach().numpy().max(), lambda x: np.asarray(x.detach()).max()], ids=["numpy()", "asarray"]
)
def test_a_number_read_through_numpy_is_refused(read):
    with pytest.raises(sg.UnsupportedError, match="reads a number out of a tensor"):
        sg.trace(lambda x: x * float(read(x)), torch.randn(3, dtype=F64))


def test_other_random_draws_are_drawn_again_by_the_emitted_module_from_torchs_generator():
    def noisy(x):
        return (x * (1 + 0.1 * torch.randn_like(x))).sum()

    traced = sg.trace(noisy, torch.randn(3, dtype=F64))
    assert not traced.random_draws
    module = sg.compile(traced, name="Noisy")
    x = torch.randn(3, dtype=F64, requires_grad=True)
    torch.manual_seed(11)
    expected = noisy(x)
    (expected_grad,) = torch.autograd.grad(expected, x)
    torch.manual_seed(11)
    ours = module.NoisyModule(None)(x) if hasattr(module, "NoisyModule") else module.apply(x)
    (grad,) = torch.autograd.grad(ours, x)
    assert torch.equal(ours.detach(), expected.detach()) and torch.equal(grad, expected_grad)


@pytest.mark.parametrize(
    "convert",
    [
        lambda x: x.float().double(),
        lambda x: x.to(torch.float32).to(x.dtype),
        lambda x: x.long().double() * x,
        lambda x: x.bool().double() * x,
        lambda x: x.type_as(x).clone().contiguous().cpu(),
        lambda x: x.data * x,
        lambda x: x + x.new_zeros(x.shape) + x.new_ones((3,)),
    ],
    ids=["float double", "to", "long", "bool", "type_as clone", "data", "new_zeros new_ones"],
)
def test_conversions_and_copies_give_torchs_gradients(convert):
    _same_gradients(lambda x: convert(x).sin().sum(), torch.tensor([-1.5, 0.25, 2.75], dtype=F64))


def _assigned_rows(x, v):
    """x[...] = v as people write it: a column from a vector with extra leading 1s, a row from a number, a slice
    with a step and a negative bound."""
    a = x * 2
    a[:, 0] = v.reshape(1, 1, 3)
    a[-1] = 0.5
    a[::2, 1:-1] = v[:2].sum()
    return a * x


def _assigned_ends(x, v):
    a = x * 2
    a[:, 0] = v
    a[-1] = 0.5
    return (a * x).sum()


def test_assignment_into_a_traced_tensor_at_fixed_and_symbolic_sizes():
    x, v = torch.randn(3, 4, dtype=F64), torch.randn(3, dtype=F64)
    _same_gradients(_assigned_rows, x, v)
    traced = sg.trace(_assigned_ends, x, v, dynamic_shapes={"x": {0: "m"}, "v": {0: "m"}})
    emitted = sg.compile(traced, wrt=traced.inputs, name="Assigned")
    x, v = torch.randn(6, 4, dtype=F64), torch.randn(6, dtype=F64)
    value, grads = emitted.forward_and_vjp(x, v, torch.tensor(1.0, dtype=F64))
    leaves = [x.clone().requires_grad_(), v.clone().requires_grad_()]
    expected = _assigned_ends(*leaves)
    torch.testing.assert_close(value, expected.detach(), rtol=1e-12, atol=1e-12)
    for ours, theirs in zip(grads, torch.autograd.grad(expected, leaves), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    with pytest.raises(sg.UnsupportedError, match="into a boolean tensor"):
        sg.trace(lambda x: _set_first(x > 0).sum(), x)


def _set_first(mask):
    mask[0] = True
    return mask


def test_differences_and_running_counts_of_booleans_are_torchs():
    """torch's diff of booleans is their xor; a running sum of booleans counts in the dtype asked for."""
    x = torch.tensor([[1.0, -2.0, 3.0], [-1.0, 2.0, -3.0], [4.0, 5.0, 6.0]], dtype=F64)
    _same_gradients(lambda x: torch.where(torch.diff(x > 0, dim=0), x[1:], -x[:-1]), x)
    _same_gradients(lambda x: (x > 0).cumsum(1, dtype=F64) * x, x)


def test_embedding_bag_offsets_torch_does_not_define_are_refused():
    weight = torch.randn(6, 2, dtype=F64)
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2])
    for offsets, last in ((torch.tensor([0, 2, 4]), True), (torch.tensor([0, 5, 2]), False)):
        with pytest.raises(sg.UnsupportedError, match="embedding_bag"):
            sg.trace(lambda w, o=offsets, last=last: torch.nn.functional.embedding_bag(indices, w, o, mode="sum",
                                                                     include_last_offset=last), weight)  # fmt: skip


def test_the_same_tensor_as_two_inputs_is_refused():
    """Two inputs would share one symbolic leaf, and the gradient by the first would miss the second's share."""
    x = torch.randn(3, dtype=F64)
    with pytest.raises(sg.SymgradError, match="the same tensor twice"):
        sg.trace(lambda a, b: (a * b).sum(), x, x)


def test_einsum_of_operands_that_share_no_subscript_is_a_product_of_their_own():
    """Eight vectors with eight subscripts: the product of eight sums, at once (it was 6,561 terms and a time-out)."""
    x = torch.tensor([1.0673, 0.0967, 2.0], dtype=F64)
    _same_gradients(lambda x: torch.einsum("a,b,c,d,e,f,g,h->", *([x] * 8)).abs(), x)
    a, b, c = torch.randn(3, dtype=F64), torch.randn(2, 4, dtype=F64), torch.randn(4, 5, dtype=F64)
    _same_gradients(lambda a, b, c: torch.einsum("i,jk,kl->lij", a, b, c), a, b, c)
    _same_gradients(lambda a, b: torch.einsum("...i,j->...ji", b, a), a, b)


def _gathered_at_two(x):
    index = torch.zeros(x.shape[0], dtype=torch.long)
    index[0] = 2
    keep = torch.ones(x.shape[0], 3, dtype=torch.bool).tril()
    return torch.where(keep, x, 0.0).gather(1, index[:, None]).sum()


def test_integer_and_boolean_constants_at_a_symbolic_size_keep_their_dtype_in_emitted_code():
    """An index made with torch.zeros(m, dtype=torch.long) was emitted as a float, and gather refused it."""
    traced = sg.trace(_gathered_at_two, torch.randn(4, 3, dtype=F64), dynamic_shapes={"x": {0: "m"}})
    emitted = sg.compile(traced, wrt=traced.inputs, name="Gathered")
    x = torch.randn(6, 3, dtype=F64)
    value, (grad,) = emitted.forward_and_vjp(x, torch.tensor(1.0, dtype=F64))
    leaf = x.clone().requires_grad_()
    expected = _gathered_at_two(leaf)
    torch.testing.assert_close(value, expected.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, torch.autograd.grad(expected, leaf)[0], rtol=1e-12, atol=1e-12)


def test_torch_special_and_the_diff_method():
    """torch.special's spellings (special_expm1, expit for sigmoid, logit by torch's reference) and x.diff()."""
    x = torch.tensor([[0.2, 0.7, 0.4], [0.9, 0.1, 0.55]], dtype=F64)
    special = torch.special
    _same_gradients(lambda x: special.expm1(x) * special.exp2(x) + special.erfc(x) + special.expit(x), x)
    _same_gradients(lambda x: special.logit(x) + special.xlogy(x, x) + special.log_softmax(x, 0), x)
    _same_gradients(lambda x: x.diff() * 2 + torch.where((x > 0.5).diff(dim=1), x[:, 1:], 0.0), x)


def _masked(x):
    y = x * 1
    y[x > 0] = 0.5
    return y


def _masked_by_values(x):
    y = x * 1
    y[x > 0] = x[x > 0] * 2
    return y


def _rows_by_list(x):
    y = x * 1
    y[[0, 2]] = x[torch.tensor([1, 0])] ** 2
    return y


def _columns_by_mask(x):
    y = x.clone()
    y[:, torch.tensor([True, False, True, False])] = 3.0
    return y


def _accumulated(x):
    return (x * 1).index_put((torch.tensor([0, 0, 2]), torch.tensor([1, 1, 3])), x[0, :3] ** 2, accumulate=True)


def _index_put_in_place(x):
    y = x * 1
    y.index_put_((torch.tensor([1]),), torch.tensor(7.0, dtype=F64))
    return y


def _integer_labels_cleaned(x):
    label = torch.tensor([0, -1, 2])
    label[label < 0] = 0  # an ignored class, as losses write it: integers, no gradient
    return x.gather(1, label[:, None]).sum()


@pytest.mark.parametrize(
    "fn",
    [_masked, _masked_by_values, _rows_by_list, _columns_by_mask, _accumulated, _index_put_in_place,
     _integer_labels_cleaned],
)  # fmt: skip
def test_assignment_through_masks_and_index_tensors_gives_torchs_values_and_gradients(fn):
    x = torch.randn(3, 4, dtype=F64, generator=torch.Generator().manual_seed(5))
    traced = sg.trace(fn, x.clone())
    leaf = x.clone().requires_grad_()
    expected = fn(leaf)
    # (an accumulated index_put adds in its own order: the last bit may differ)
    torch.testing.assert_close(
        torch.tensor(traced.output.tolist(), dtype=F64), expected.detach(), rtol=1e-15, atol=1e-15
    )
    v = torch.randn(expected.shape, dtype=F64, generator=torch.Generator().manual_seed(6))
    (theirs,) = torch.autograd.grad(expected, leaf, v)
    (ours,) = sg.vjp([traced.output], [traced.inputs[0]], [sg.tensor(v.tolist(), dtype="float64")])
    torch.testing.assert_close(torch.tensor(ours.tolist(), dtype=F64), theirs, rtol=1e-12, atol=0)


def test_an_assignment_that_reaches_one_entry_twice_is_refused_in_one_line():
    def twice(x):
        y = x * 1
        y[torch.tensor([0, 0])] = x[1:3]
        return y

    with pytest.raises(sg.SymgradError, match=r"reaches one entry twice.*accumulate=True"):
        sg.trace(twice, torch.randn(3, 2, dtype=F64))


def test_constants_of_a_drop_in_take_the_traced_dtype_not_the_first_inputs():
    """Token ids come first: new tensors are made like a floating input, and a float32 constant of a float64 model
    (an arange in float32 feeding a float32 layer) keeps float32."""
    torch.manual_seed(0)
    embedding, layer, head = torch.nn.Embedding(5, 2).double(), torch.nn.Linear(2, 2), torch.nn.Linear(2, 1).double()
    model = torch.nn.ModuleDict({"embedding": embedding, "layer": layer, "head": head})

    def loss(ids, t):
        start = head.weight.new_zeros(ids.shape[0], 2)  # made like a parameter: float64
        freqs = torch.exp(-torch.arange(0, 2, dtype=torch.float32) / 2)
        features = layer(t[:, None].float() * freqs[None]).double()
        return head(embedding(ids) + start + features).square().mean()

    ids, t = torch.tensor([1, 4, 0]), torch.rand(3, dtype=F64)
    traced = sg.trace(loss, ids, t, dynamic_shapes={"ids": {0: "b"}, "t": {0: "b"}}, modules={"model": model})
    drop_in = sg.compile(traced, name="Loss").LossModule(traced.model)
    for batch in (2, 5):
        ids, t = torch.randint(0, 5, (batch,)), torch.rand(batch, dtype=F64)
        expected = loss(ids, t)
        theirs = torch.autograd.grad(expected, list(model.parameters()))
        ours = drop_in(ids, t)
        torch.testing.assert_close(ours, expected, rtol=1e-12, atol=0)
        for mine, torchs in zip(torch.autograd.grad(ours, list(model.parameters())), theirs, strict=True):
            assert mine.dtype == torchs.dtype
            torch.testing.assert_close(mine, torchs, rtol=1e-5, atol=1e-7)  # the float32 layer's rounding
