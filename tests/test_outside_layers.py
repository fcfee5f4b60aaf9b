"""What the paper's per-layer ledger leaves out: the output head and the
routers, counted by hand from the preset's config, and what adding them does
to DeepSeek-V4-Flash's gutter, found by a brute-force search over every batch
and draft length."""
import dataclasses
import json
from pathlib import Path

import numpy as np
import sympy as sp

from speclib import presets
from speclib.core import step
from speclib.formulas import step as fstep
from speclib.presentation.figures import skewed_routing

CONFIG = Path(__file__).resolve().parents[1] / "speclib" / "presets" / "models" / "deepseek-v4-flash.json"


def _by_hand():
    cfg = json.loads(CONFIG.read_text())
    head = cfg["vocab_size"] * cfg["hidden_size"]  # 129,280 x 4,096
    moe_layers = cfg["num_hidden_layers"] - cfg.get("first_k_dense_replace", 0)
    routers = moe_layers * cfg["hidden_size"] * cfg["n_routed_experts"]  # 43 x 4,096 x 256
    return head, routers


def test_the_head_and_routers_counted_by_hand_from_the_config():
    head, routers = _by_hand()
    assert (head, routers) == (529_530_880, 45_088_768)  # the printed config's numbers, multiplied out
    m = presets.model("DeepSeek-V4-Flash")
    assert m.outside_layers_params() == head + routers
    assert skewed_routing.outside_the_layers("DeepSeek-V4-Flash") == {"head": head, "routers": routers,
                                                                      "total": head + routers}
    # the whole step's dense weights are the layers' projections and these, nothing else
    n_layers = json.loads(CONFIG.read_text())["num_hidden_layers"]
    assert m.step_architecture().dense_params == n_layers * m.attn_proj_params + head + routers


def test_the_layer_count_cancels_only_without_the_weights_outside_the_layers():
    # a step of L identical layers costs L times one layer: every ratio of the ledger is free of L;
    # the weights outside the layers add a term that is not, so the ratio then depends on L
    L, c0, c1, W = sp.symbols("L c_0 c_1 W", positive=True)
    assert sp.simplify((L * c1) / (L * c0) - c1 / c0) == 0
    assert sp.diff((L * c1 + W) / (L * c0 + W), L) != 0
    assert fstep.outside_layers_params_expr.free_symbols == {fstep.V, fstep.h, fstep.L_m, fstep.E}


def _brute_force_gutter(architecture, hw, alpha=0.75, c=0.10, S=4096.0, max_batch=64, gamma_max=16):
    """Batches where every draft length 1..gamma_max loses to plain decoding,
    the speedup written out: N(gamma) C_0 / (C(gamma + 1) + gamma c C_0)."""
    sm = step.StepModel(architecture, hw, routing=np.full(architecture.n_routed, 1.0 / architecture.n_routed))
    zero = []
    for B in range(1, max_batch + 1):
        c0 = float(sm.time(np.float64(B), np.float64(1.0), np.float64(S)))
        best = max(sum(alpha ** i for i in range(g + 1)) * c0
                   / (float(sm.time(np.float64(B), np.float64(g + 1.0), np.float64(S))) + g * c * c0)
                   for g in range(1, gamma_max + 1))
        if best <= 1.0:
            zero.append(B)
    return zero


def _whole_and_layers():
    """DeepSeek-V4-Flash's paper step on a B200 as priced (the whole step), the same without the output head and
    the routers counted by hand (the layers alone), the chip, and the head's parameters."""
    m, hw = presets.model("DeepSeek-V4-Flash"), presets.hardware("B200")
    whole = step.step_model(m, hw, attention="paper").architecture
    head, routers = _by_hand()
    layers = dataclasses.replace(whole, dense_params=whole.dense_params - head - routers,
                                 dense_bytes=m.proj_weight_bytes, bf16_params=0.0)
    return whole, layers, hw, head


def test_adding_the_head_and_routers_narrows_the_gutter_from_4_13_to_6_11():
    whole, layers, hw, _ = _whole_and_layers()
    assert _brute_force_gutter(whole, hw) == list(range(6, 12))
    assert _brute_force_gutter(layers, hw) == list(range(4, 14))
    # the chapter's search agrees with the brute force
    g = skewed_routing.gutter(**skewed_routing.V4_CASE)
    assert g["uniform"] == [(6, 11)] and g["layers_only"] == [(4, 13)]


def test_the_reproduction_report_states_the_brute_forced_gutters():
    from speclib.evidence import claims

    whole, layers, hw, head = _whole_and_layers()
    runs = {name: _brute_force_gutter(a, hw) for name, a in (("whole", whole), ("layers", layers))}
    claim = claims.by_id()["fig3.gutter_whole_step"]
    assert f"B = {runs['whole'][0]}-{runs['whole'][-1]} with the output head ({head:,} parameters)" in claim.note
    assert f"B = {runs['layers'][0]}-{runs['layers'][-1]} with the layers alone" in claim.note
    assert claim.status == "reproduced"
