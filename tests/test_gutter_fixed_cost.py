"""The paper's gutter is shallow: how deep it is, and the fixed time per step
that removes it (speclib.core.speculation.gutter_fixed_cost), held against a
brute-force search that adds the fixed cost to the ledger's steps and asks
optimal_gamma again, and against sympy."""
import numpy as np
import pytest
import sympy as sp

import speclib
from speclib.core import cost as _cost
from speclib.core import speculation as spc
from speclib.formulas import speculation as forms

PAPER = dict(alpha=0.75, S=4096, c_draft=0.10)


class _FixedCost(_cost.CostModel):
    """The paper's ledger with a fixed cost on every target step, plain or verify."""

    def __init__(self, fixed):
        super().__init__(speclib.presets.model("DeepSeek-V4-Flash"), speclib.presets.hardware("B200"),
                         attention="paper")
        self.fixed_cost = fixed

    def verify(self, batch, width, context):
        return super().verify(batch, width, context) + self.fixed_cost


def _gutter_batches(fixed):
    dep = speclib.Deployment(cost_model=_FixedCost(fixed))
    B = np.arange(1.0, 65.0)
    g, _ = speclib.optimal_gamma(PAPER["alpha"], B, PAPER["S"], PAPER["c_draft"], deployment=dep)
    return [(lo, hi) for lo, hi, kind in spc.zero_gamma_bands(B, g) if kind == "gutter"], dep, B


def test_the_break_even_fixed_cost_solves_speedup_one():
    """sympy: the speed-up with the break-even fixed cost added is exactly 1."""
    at = forms.speedup_with_fixed_expr.subs(forms.F_x, forms.fixed_cost_break_even_expr)
    assert sp.simplify(at - 1) == 0
    assert sp.simplify(forms.speedup_with_fixed_expr.subs(forms.F_x, 0) - forms.speedup_expr) == 0


def test_the_fixed_cost_that_removes_the_gutter_by_brute_force():
    dep = speclib.Deployment("DeepSeek-V4-Flash", "B200", attention="paper")
    got = spc.gutter_fixed_cost(**PAPER, deployment=dep)
    gutters, _, B = _gutter_batches(0.0)
    assert gutters == got["gutters"] and gutters  # the subclass is the ledger itself at zero
    c0 = dep.pricing(0.10).cost_model.decode(got["fixed_at"], 4096)
    fixed = got["fixed_share"] * c0
    assert _gutter_batches(fixed * 1.001)[0] == []  # a little more: no gutter at all
    still, dep_less, _ = _gutter_batches(fixed * 0.99)  # a little less: the batch that needs it most keeps it
    assert any(lo <= got["fixed_at"] <= hi for lo, hi in still)
    # depth: the speed-up of one drafted token, by the public speedup, at each gutter batch
    inside = np.concatenate([np.arange(lo, hi + 1) for lo, hi in gutters])
    s1 = speclib.speedup(0.75, 1, inside, 4096, 0.10, deployment=dep)
    assert got["speedup_gamma1"] == pytest.approx(float(np.min(s1)), rel=1e-12)
    assert 0.97 < got["speedup_gamma1"] < 1.0
    # seconds: the share of a plain step over the model's 43 layers at 8 TB/s
    assert got["fixed_seconds"] == pytest.approx(fixed * 43 / 8e12, rel=1e-12)


def test_no_gutter_needs_no_fixed_cost_and_a_whole_step_is_refused():
    none = spc.gutter_fixed_cost(alpha=0.95, S=4096, c_draft=0.05,
                                 deployment=speclib.Deployment("DeepSeek-V4-Flash", "B200", attention="paper"))
    assert none["gutters"] == [] and none["fixed_seconds"] is None
    with pytest.raises(ValueError, match="^deployment must price by the paper's ledger"):
        spc.gutter_fixed_cost(deployment=speclib.Deployment("DeepSeek-V4-Flash", "B200", step_time="calibrated",
                                                            drafter="deepseek-v4-flash-mtp"))
