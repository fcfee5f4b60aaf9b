"""Rolling a hybrid model's linear-attention state back past a rejected
draft: the bytes and FLOPs each way costs, counted by hand from the
published configuration of Qwen3.6-35B-A3B, the sympy term's form, which
way a deployment and the sequel's simulator take, and the refusals."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import sympy as sp

import speclib
from speclib import presets
from speclib.core import step
from speclib.evidence import simulator as sequel
from speclib.formulas import step as step_forms

QWEN = "Qwen3.6-35B-A3B"

# Qwen3.6-35B-A3B's config.json (text_config): linear_num_key_heads 16,
# linear_num_value_heads 32, linear_key_head_dim 128, linear_value_head_dim
# 128, linear_conv_kernel_dim 4, 30 of its 40 layers GatedDeltaNet, bf16.
N_K, N_V, D_K, D_V, K_CONV, BYTES, LINEAR_LAYERS = 16, 32, 128, 128, 4, 2, 30
#: One value head's d_k x d_v state, per value head; the convolution keeps the
#: last K inputs of the queries, keys (16 x 128 each) and values (32 x 128).
STATE_PER_LAYER = N_V * D_K * D_V * BYTES + (N_K * D_K + N_K * D_K + N_V * D_V) * K_CONV * BYTES
#: What a replay keeps per position: the same queries, keys and values, and
#: the decay and update gate of each value head.
REPLAY_PER_LAYER = (N_K * D_K + N_K * D_K + N_V * D_V + N_V + N_V) * BYTES
#: The delta rule touches each state element about four times, 2 FLOP each.
FLOPS_PER_LAYER = 4 * 2 * N_V * D_K * D_V


def test_the_hand_count_of_a_snapshot():
    assert STATE_PER_LAYER == 1_114_112
    assert STATE_PER_LAYER * LINEAR_LAYERS == 33_423_360  # "about 33 MB per sequence per position"
    arch = presets.model(QWEN).step_architecture()
    assert arch.linear_layers == LINEAR_LAYERS
    assert arch.state_bytes == STATE_PER_LAYER
    assert step.rollback_constants(arch, "snapshot") == (STATE_PER_LAYER, 0.0)


def test_the_hand_count_of_a_replay():
    assert REPLAY_PER_LAYER == 16_512
    arch = presets.model(QWEN).step_architecture()
    assert arch.replay_bytes == REPLAY_PER_LAYER
    assert step.rollback_constants(arch, "recompute") == (2 * REPLAY_PER_LAYER, FLOPS_PER_LAYER)


@pytest.mark.parametrize("rollback, extra_bytes, extra_flops", [
    ("snapshot", STATE_PER_LAYER, 0), ("recompute", 2 * REPLAY_PER_LAYER, FLOPS_PER_LAYER)])
def test_a_step_pays_per_verified_position_past_the_first(rollback, extra_bytes, extra_flops):
    """Against the step without rollback: B sequences x (T - 1) positions x
    30 layers x the hand count, summed position by position."""
    plain = step.step_model(QWEN, "B200", roofline="aggregate")
    rolled = step.step_model(QWEN, "B200", roofline="aggregate", rollback=rollback)
    for B, T, S in ((1.0, 1.0, 512.0), (3.0, 5.0, 512.0), (64.0, 9.0, 4096.0)):
        f0, q0 = plain.components(np.asarray(B), np.asarray(T), np.asarray(S))["attention"]
        f1, q1 = rolled.components(np.asarray(B), np.asarray(T), np.asarray(S))["attention"]
        positions = sum(1 for _ in range(2, int(T) + 1))  # the verified positions past the first
        assert q1 - q0 == pytest.approx(B * positions * LINEAR_LAYERS * extra_bytes, rel=1e-12)
        assert f1 - f0 == pytest.approx(B * positions * LINEAR_LAYERS * extra_flops, rel=1e-12)
    # a plain step (T = 1) is priced the same every way
    for B in (1.0, 64.0, 2048.0):
        assert rolled.time(B, 1.0, 512.0) == plain.time(B, 1.0, 512.0)


def test_the_term_is_linear_in_the_extra_positions():
    s = step_forms
    expr = s.rollback_bytes_expr
    assert expr.subs(s.T, 1) == 0
    assert sp.simplify(sp.diff(expr, s.T) - s.B * s.L_l * s.rho) == 0
    assert sp.simplify(s.rollback_flops_expr.subs(s.psi, s.rho) - expr) == 0


def test_a_model_without_linear_layers_pays_nothing():
    for rollback in step.ROLLBACKS:  # the step alone: its bf16 weights do not fit one H100, so no memory check
        d = speclib.Deployment("Llama-3-70B", "H100", roofline="aggregate", rollback=rollback, reserve=None)
        assert d.pricing().speedup(np.asarray(3.0), np.asarray(2.0), np.asarray(64.0), np.asarray(4096.0)) == \
            speclib.Deployment("Llama-3-70B", "H100", roofline="aggregate", rollback="none",
                               reserve=None).pricing().speedup(
                np.asarray(3.0), np.asarray(2.0), np.asarray(64.0), np.asarray(4096.0))


def test_a_deployment_keeps_snapshots_as_the_engines_do_and_the_simulator_none():
    assert step.DEFAULT_ROLLBACK == "snapshot"
    assert speclib.Deployment(QWEN).rollback == "snapshot"
    assert sequel.ROLLBACK == "none"
    assert sequel.deployment("mtp").rollback == "none"
    snap = speclib.Deployment(sequel.simulated_model(), "B200", drafter="qwen3.6-mtp", roofline="aggregate")
    none = snap.replace(rollback="none")
    B = np.array([1.0, 64.0, 512.0])
    # the policy with snapshots drafts no further than without them, and gains no more
    g_snap, s_snap = speclib.optimal_gamma(None, B, 512, deployment=snap)
    g_none, s_none = speclib.optimal_gamma(None, B, 512, deployment=none)
    assert np.all(g_snap <= g_none) and np.all(s_snap <= s_none)
    assert s_snap[-1] < s_none[-1]


def test_the_simulator_is_matched_without_rollback():
    """The grid comparison the book reports is the one without rollback; with
    the engines' snapshots the closed form no longer matches the simulator."""
    none, snap = sequel.compare(), sequel.compare(rollback="snapshot")
    assert sum(int(c.best_gamma_agrees.sum()) for c in none.values()) == 24
    assert sum(int(c.best_gamma_agrees.sum()) for c in snap.values()) < 24
    assert max(c.max_error for c in snap.values()) > max(c.max_error for c in none.values())


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match=r"^rollback must be one of") as info:
        speclib.Deployment(QWEN, rollback="undo")
    assert "\n" not in str(info.value)
    arch = dataclasses.replace(presets.model(QWEN).step_architecture(), state_bytes=0.0, replay_bytes=0.0)
    hw = presets.hardware("B200")
    for rollback, field in (("snapshot", "state_bytes"), ("recompute", "replay_bytes")):
        with pytest.raises(ValueError, match=rf"^rollback='{rollback}' needs {field} of the linear-attention") as info:
            step.StepModel(arch, hw, rollback=rollback)
        assert "\n" not in str(info.value)
    step.StepModel(arch, hw, rollback="none")  # nothing to roll back: nothing needed


# --- a plain step reads each state and writes it back (issue 49, point 6) ---------------
#: Qwen3.6-35B-A3B's full-attention layers (config.json): 2 KV heads of 256, bf16, keys and values.
KV_PER_TOKEN_PER_LAYER, FULL_LAYERS = 2 * 2 * 256 * BYTES, 10


def test_the_step_moves_each_state_twice_and_memory_holds_it_once():
    """A sympy identity: with no full-attention layers the step's attention
    moves 2 sigma per sequence and linear layer (a read and a write), in the
    paper's form and DeepSeek-V4's served form alike, while the bytes a
    sequence keeps count the state once."""
    from speclib.formulas import capacity as cap_forms
    from speclib.formulas import serving as serving_forms
    s = step_forms
    assert sp.simplify(s.attention_bytes_expr.subs(s.L_a, 0) - 2 * s.B * s.L_l * s.sigma) == 0
    served = s.served_attention_bytes_expr.subs({sym: 0 for sym in s.SERVED_ATTENTION_ARGS[:6]})
    assert sp.simplify(served - 2 * s.B * s.L_l * s.sigma) == 0
    assert sp.simplify(s.state_write_bytes_expr - s.B * s.L_l * s.sigma) == 0
    assert sp.simplify(serving_forms.cache_bytes_expr.subs(s.L_a, 0) - s.B * s.L_l * s.sigma) == 0
    held = cap_forms.sequence_bytes_expr.subs({cap_forms.L_f: 0, cap_forms.L_csa: 0, cap_forms.L_hca: 0,
                                               cap_forms.L_w: 0})
    assert sp.simplify(held - cap_forms.L_l * cap_forms.sigma) == 0


@pytest.mark.parametrize("B, S", [(1.0, 0.0), (512.0, 512.0), (64.0, 4096.0)])
def test_qwens_plain_step_moves_two_states_per_sequence_and_layer(B, S):
    """Counted by hand from the config: the attention component of a plain
    step is the KV cache read over S + 1 positions of the 10 full layers, and
    2 x 30 x 1,114,112 bytes of state per sequence, read and written."""
    assert KV_PER_TOKEN_PER_LAYER * FULL_LAYERS == 20_480
    _, moved = step.step_model(QWEN, "B200", roofline="aggregate").components(
        np.asarray(B), np.asarray(1.0), np.asarray(S))["attention"]
    kv = B * FULL_LAYERS * KV_PER_TOKEN_PER_LAYER * (S + 1)
    assert moved == pytest.approx(kv + 2 * B * LINEAR_LAYERS * STATE_PER_LAYER, rel=1e-12)


def test_the_snapshots_relative_penalty_counts_the_plain_steps_write():
    """Qwen3.6 on a B200 at 512 sequences, T = 4, one roofline over the step
    (memory-bound there): the snapshots' extra 3 states per sequence and
    layer, against a verify that moves the weights (the code's), the KV cache
    and two states per sequence and layer (by hand). The read-only count the
    step used to make gives a larger penalty."""
    B, T, S = 512.0, 4.0, 512.0
    plain = step.step_model(QWEN, "B200", roofline="aggregate")
    snap = step.step_model(QWEN, "B200", roofline="aggregate", rollback="snapshot")
    parts = plain.components(np.asarray(B), np.asarray(T), np.asarray(S))
    weights = parts["dense"][1] + parts["ffn"][1]
    kv = B * FULL_LAYERS * KV_PER_TOKEN_PER_LAYER * (S + T / 2)
    state = B * LINEAR_LAYERS * STATE_PER_LAYER
    M = presets.hardware("B200").memory_bandwidth
    assert plain.flop_time(B, T, S) < (weights + kv + 2 * state) / M  # memory-bound: time = bytes / M
    penalty = float(snap.time(B, T, S) / plain.time(B, T, S)) - 1
    assert penalty == pytest.approx((T - 1) * state / (weights + kv + 2 * state), rel=1e-9)
    assert penalty < (T - 1) * state / (weights + kv + state)
    # the snapshot writes T states per sequence and layer in all: T - 1 of its own and the step's one
    q_snap = snap.components(np.asarray(B), np.asarray(T), np.asarray(S))["attention"][1]
    assert q_snap - kv - state == pytest.approx(T * state, rel=1e-12)
