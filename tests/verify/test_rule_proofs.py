"""Proofs rule by rule: each VJP rule of the chain against its op's entrywise VJP, and the law against the chain.
They scale with the number of distinct ops (a network's law is proved in seconds where differentiating its
entries took minutes), and they still catch a wrong law and a wrong rule."""

from __future__ import annotations

import dataclasses
import time

import pytest

import symgrad as sg
import symgrad.torch as st
from symgrad.core import registry

torch = pytest.importorskip("torch")


def _layer_norm_mlp():
    """Linear → LayerNorm → GELU → Linear, summed, at a symbolic batch m."""
    (m,) = sg.dims("m")
    x = sg.symbols("x", (m, 4))
    w1, b1 = sg.symbols("w1", (8, 4), requires_grad=True), sg.symbols("b1", (8,), requires_grad=True)
    w2 = sg.symbols("w2", (3, 8), requires_grad=True)
    F = st.nn.functional
    out = F.linear(F.gelu(F.layer_norm(F.linear(x, w1, b1), (8,))), w2).sum()
    return out, [w1, b1, w2]


def test_a_networks_law_is_proved_rule_by_rule_in_seconds():
    out, wrt = _layer_norm_mlp()
    start = time.process_time()
    proof = sg.prove(out, wrt)
    assert proof.held, str(proof)
    assert all(e["rules"] > 5 for e in proof.exact)
    assert time.process_time() - start < 60  # it took minutes entry by entry


def test_a_wrong_law_fails_against_the_chain():
    k, n, m = sg.dims("k n m")
    W, X, V = sg.symbols("W", (k, n)), sg.symbols("X", (n, m)), sg.symbols("V", (k, m))
    assert sg.prove(W @ X, [W], [V], laws=[V @ X.T]).held
    assert not sg.prove(W @ X, [W], [V], laws=[(V @ X.T) * 2], numeric=False).held


def test_a_wrong_rule_is_caught_and_named(monkeypatch):
    """A VJP rule with its sign lost gives a law that equals its own chain: the rule check is what catches it, and
    the whole graph's entries then show the law wrong."""
    tanh = registry.OPS["tanh"]
    wrong = dataclasses.replace(tanh, vjp=lambda g, out, a: (-(g * (1 - out * out)),))
    monkeypatch.setitem(registry.OPS, "tanh", wrong)
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    proof = sg.prove((x * 2).tanh().sum(), [x], numeric=False)
    assert not proof.held
    assert proof.exact[0]["failed_rule"] == "tanh"
    assert "the rule of tanh does not hold on fresh symbols" in str(proof)


def test_a_rule_right_only_inside_its_domain_falls_back_to_the_whole_graph():
    """binary_cross_entropy's rule is torch's on probabilities; on fresh symbols (any real) it is not checked true,
    and the entries of the whole graph, where the inputs are sigmoids, prove the law instead."""
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    F = st.nn.functional
    proof = sg.prove(F.binary_cross_entropy(x.sigmoid(), (x * 0.5).sigmoid()), [x])
    assert proof.held, str(proof)


def test_a_proof_runs_against_its_time_limit():
    out, wrt = _layer_norm_mlp()
    with pytest.raises(sg.WorkBudgetError, match=r"the proof did not finish within 0.01 s .*time_limit=None"):
        sg.prove(out, wrt, time_limit=0.01)


def test_a_rule_that_drops_an_inputs_gradient_is_caught(monkeypatch):
    """A rule returning None for a float input says its gradient is 0; the check holds it to that."""
    mul = registry.OPS["mul"]
    monkeypatch.setitem(registry.OPS, "mul", dataclasses.replace(mul, vjp=lambda g, out, a, b: (g * b, None)))
    (n,) = sg.dims("n")
    x, y = sg.symbols("x", (n,), requires_grad=True), sg.symbols("y", (n,), requires_grad=True)
    assert not sg.prove((x * y).sum(), [x, y], numeric=False).held


def test_rules_that_read_different_numbers_are_checked_apart(monkeypatch):
    """pow's rule, wrong only for the exponent 3, must not pass because the exponent 2 was checked first."""
    power = registry.OPS["pow"]

    def wrong_for_three(g, out, a, b):
        pieces = power.vjp(g, out, a, b)
        three = not b.shape and b.op is None and float(b.entries().reshape(-1)[0]) == 3.0
        return (pieces[0] * 2, *pieces[1:]) if three else pieces

    monkeypatch.setitem(registry.OPS, "pow", dataclasses.replace(power, vjp=wrong_for_three))
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    assert not sg.prove((x**2.0).sum() + (x**3.0).sum(), [x], numeric=False).held


def test_fewer_laws_than_tensors_is_one_clear_error():
    (n,) = sg.dims("n")
    x, y = sg.symbols("x", (n,), requires_grad=True), sg.symbols("y", (n,), requires_grad=True)
    with pytest.raises(sg.SymgradError, match="got 1 laws for 2 tensors"):
        sg.prove((x * y).sum(), [x, y], laws=[y])


def test_a_simplified_law_is_proved_rewrite_by_rewrite():
    """The law against its chain of rules: each of the simplifier's rewrites on its own, not the entries of the
    whole law (which grow with the depth of the network)."""
    out, wrt = _layer_norm_mlp()
    proof = sg.prove(out, wrt, numeric=False)
    assert proof.held, str(proof)
    assert all(e["rewrites"] > 0 for e in proof.exact)
    assert "the simplifier rewrite by rewrite" in str(proof)


def test_a_law_written_by_hand_is_compared_with_the_chain_entry_by_entry():
    """A law that is not the simplifier's (the same gradient written another way) cannot be proved by the
    simplifier's rewrites: its entries are compared with the chain's, and a wrong one still fails."""
    (n,) = sg.dims("n")
    x = sg.symbols("x", (n,), requires_grad=True)
    out = (x.tanh() * 3).sum()
    right = 3 - 3 * x.tanh() ** 2
    proof = sg.prove(out, [x], laws=[right], numeric=False)
    assert proof.held and "rewrites" not in proof.exact[0], str(proof)
    assert not sg.prove(out, [x], laws=[3 - x.tanh() ** 2], numeric=False).held


def test_a_wrong_rewrite_is_caught_and_a_right_one_that_looks_below_its_inputs_holds():
    """Each rewrite is checked with the nodes it reads cut to fresh symbols; ``(u.T).T`` → ``u`` needs the node
    below its input spelled out, and gets it."""
    from symgrad.derive.rewrite_log import Rewrite
    from symgrad.verify.rewrites import check_rewrites

    (n,) = sg.dims("n")
    w, v = sg.symbols("w", (n, 3)), sg.symbols("v", (3, 2))
    u = (w @ v).tanh()  # deep enough to be cut
    inner = u.T
    right = Rewrite(inner.T, u, frozenset({id(u)}))
    wrong = Rewrite(u * 2, u * 3, frozenset({id(u)}))
    assert check_rewrites([right], {n: 2}, {}).held
    result = check_rewrites([right, wrong], {n: 2}, {})
    assert not result.held and result.failed == "mul"


def test_a_refusal_raised_inside_c_code_still_reads_as_the_time_limit():
    """The alarm's refusal, raised while NumPy sums SymPy terms, comes out of C as SystemError or TypeError: past
    the limit, symgrad says what ran out, not those."""
    from symgrad.core.budget import time_limit

    for inner in (SystemError, TypeError):
        with pytest.raises(sg.WorkBudgetError, match="the proof did not finish within 0 s"):
            with time_limit(0.0, "the proof", "pass time_limit=None", report=None):
                sum(range(10_000))  # some CPU time, so that the clock has run out
                raise inner("<built-in method __hash__> returned a result with an exception set")
    with pytest.raises(TypeError, match="a real one"):  # within the limit, an error is the error it is
        with time_limit(None, "the proof", "pass time_limit=None", report=None):
            raise TypeError("a real one")


def _stack(depth: int):
    """``depth`` identical residual blocks x + tanh(x @ W_k) of width 6, summed, at a symbolic batch m."""
    (m,) = sg.dims("m")
    x = sg.symbols("x", (m, 6))
    weights = [sg.symbols(f"w{k}", (6, 6), requires_grad=True) for k in range(depth)]
    h = x
    for w in weights:
        h = h + st.tanh(h @ w)
    return h.sum(), weights


def test_a_stack_of_identical_blocks_has_its_rules_checked_once_whatever_its_depth():
    """A repeated block is proved once, by structure: the rule checks of one block stand for every copy, so four
    blocks cost the rules of one, and the proof says how many ops they cover."""
    proofs = {depth: sg.prove(*_stack(depth), numeric=False) for depth in (1, 4)}
    assert all(p.held for p in proofs.values())
    one, four = proofs[1].exact[0], proofs[4].exact[0]
    # each block is a product, a tanh and a sum; the loss's own sum comes once
    assert (one["applications"], four["applications"]) == (3 + 1, 4 * 3 + 1)
    assert four["rules"] == one["rules"] < four["applications"]
    assert f"{four['rules']} rules for {four['applications']} ops, each structure checked once" in str(proofs[4])
