"""What many figures share: the paper's controls, the batch axis, and the
model's pieces composed in the figure array language (:mod:`..arrays`).

The compositions here (a step's cost summed over its components, the
speedup of every draft length, gamma* as an argmax) are the generic steps a
figure's compute function is built from; the closed forms they evaluate are
the catalogue's, through ``xp.F``, so the browser evaluates the very same
functions printed to JavaScript.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...core import capacity as _capacity
from ...core import cost as _cost
from ...core import drafters as _drafters
from ...core import optimum as _optimum
from ...core import pricing as _pricing
from ...presets import hardware_names, model_names, resolve
from ..definition import Axis, Bands, Choice, Slider
from ..style import CYCLE

#: Colours of the tensor-parallel widths.
TP_COLORS = {1: CYCLE[0], 2: CYCLE[1], 4: CYCLE[2], 8: CYCLE[3]}
#: The paper's batch axis for Figures 2 and 3 (sequences).
BATCH_RANGE = (1, 30_000)
#: The paper's sequence-length slider: 512 to 131,072 tokens in steps of 2^(1/8).
SEQ_RANGE = (512, 131_072)


def seq_slider(value=8192, label="average sequence length S") -> Slider:
    return Slider("S", label, SEQ_RANGE[0], SEQ_RANGE[1], value, step=1 / 8, scale="log2", format=",.0f")


def alpha_slider(value=0.75, label="acceptance rate \u03b1") -> Slider:
    return Slider("alpha", label, 0.01, 0.99, value, step=0.01, format=".0%")


def draft_cost_slider(value=0.10, label="drafter cost per drafted token") -> Slider:
    return Slider("c_draft", label, 0.0, 0.5, value, step=0.01, format=".0%")


def hardware_choice(value="B200", label="hardware") -> Choice:
    """A menu of every chip preset (an alias such as "H100" picks its preset)."""
    return Choice("hardware", label, hardware_names(), resolve(None, value)[1].name,
                  canonical=lambda v: resolve(None, v)[1].name)


def model_choice(value="DeepSeek-V4-Flash", label="model") -> Choice:
    """A menu of every model preset (an alias picks its preset)."""
    return Choice("model", label, model_names(), resolve(value, None)[0].name,
                  canonical=lambda v: resolve(v, None)[0].name)


def batch_axis(lo=None, hi=None, label="batch (sequences)") -> Axis:
    return Axis(label, "log", lo, hi, ticks="batch")


def crossing(xp, x, y, ridge):
    """The grid point (x, y) where ``y`` first exceeds ``ridge``; x is NaN
    where it starts above it or never does."""
    first = xp.first_true(y > ridge)
    return xp.where(first > 0, xp.take(x, xp.maximum(first, 0)), float("nan")), xp.take(y, xp.maximum(first, 0))


# --- the paper's ledger in the array language ---------------------------------------------


def cost(bound, xp, *variables, of="cost"):
    """A bound roofline's step cost (:class:`speclib.core.cost.BoundRoofline`),
    or with ``of="slope"`` its log-slope r = d log C / d log t, through ``xp.F``."""
    return getattr(xp.F, f"{bound.roofline.name}_{of}")(*variables, *bound.constants)


def cost_model(model, hardware, query_bytes=False, attention="paper"):
    return _cost.cost_model(model, hardware, bool(query_bytes), attention)


def attention_choice(value="paper", label="attention priced") -> Choice:
    """How the ledger prices DeepSeek-V4's attention (:data:`speclib.core.cost.ATTENTIONS`)."""
    return Choice("attention", label, (("the paper's: full MLA in every layer", "paper"),
                                       ("as served: compressed, per the config", "served")), value)


def memory_label(model) -> str:
    """The legend of the batches that cannot fit, naming the KV cache they are sized with."""
    compressed = getattr(model.attention, "hca_ratio", None) is not None and any(model.compress_ratios)
    return ("does not fit in HBM (compressed cache as served)" if compressed
            else "does not fit in HBM (weights + KV cache)")


def verify_cost(cm, xp, B, width, S):
    """C_verify(B, q, S): the step's components summed (:meth:`CostModel.verify`)."""
    r = cm.rooflines
    tokens = B * width
    return cost(r["attn_proj"], xp, tokens) + cost(r["moe"], xp, tokens) + cost(r["attention"], xp, B, width, S)


def ledger(cm, xp, B, S, c_draft, width=2.0):
    """Each component's contribution r_i x share_i to a speculated token's
    price, the drafter's ``c_draft``, and their ``total``
    (:func:`speclib.marginal_cost` and :func:`speclib.core.cost.cost_shares`)."""
    r = cm.rooflines
    costs = {"attn_proj": cost(r["attn_proj"], xp, B), "moe": cost(r["moe"], xp, B),
             "attention": cost(r["attention"], xp, B, 1.0, S)}
    slopes = {"attn_proj": cost(r["attn_proj"], xp, B, of="slope"), "moe": cost(r["moe"], xp, B, of="slope"),
              "attention": cost(r["attention"], xp, B, width, S, of="slope")}
    total_cost = costs["attn_proj"] + costs["moe"] + costs["attention"]
    parts = {k: slopes[k] * costs[k] / total_cost for k in _cost.COMPONENTS}
    parts["drafter"] = c_draft + 0.0 * B
    parts["total"] = parts["attn_proj"] + parts["moe"] + parts["attention"] + parts["drafter"]
    return parts


def speedups(cm, xp, alpha, gammas, B, S, c_draft):
    """The speedup of every draft length in ``gammas`` (a leading axis) at B, S."""
    n = xp.F.committed(alpha, gammas)
    return xp.F.speedup(n, verify_cost(cm, xp, B, 1.0, S), verify_cost(cm, xp, B, gammas + 1.0, S), c_draft, gammas)


def deployed_speedups(deployment, xp, alpha, gammas, B, S, c_draft):
    """The speedup of every draft length in ``gammas`` (a leading axis) at B, S
    as ``deployment`` prices a step (:meth:`speclib.Deployment.pricing`), with
    the paper's drafter at ``c_draft`` plain steps per drafted token: the
    paper's ledger (:func:`speedups`), or the whole step in seconds (the
    roofline over ``tp`` GPUs, or calibrated), priced by the core's own
    :class:`speclib.core.pricing.StepPricing` evaluated through ``xp.F``.
    A deployment with a drafter preset of its own is refused (:meth:`~speclib.Deployment.pricing`:
    a drafter cost given twice). Every batch is priced at once, as ``reserve=None`` prices it (the
    figures shade the batches memory does not hold, :func:`fits`)."""
    priced = deployment.pricing(c_draft=0.0)
    if isinstance(priced, _pricing.LedgerPricing):
        return speedups(priced.cost_model, xp, alpha, gammas, B, S, c_draft)
    slider_priced = _pricing.StepPricing(priced.step_model, _drafters.ConstantDrafter.unchecked(c_draft))
    return slider_priced.speedup(xp.F.committed(alpha, gammas), gammas, B, S, xp.F)


def best(xp, table):
    """gamma* (the argmax over the leading axis; ties to the shorter draft) and its value."""
    return xp.argmax(table, axis=0), xp.max(table, axis=0)


_NICE = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)


def nice_ceiling(xp, x):
    """The smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 (times a power of ten)
    at or above ``x`` (a scalar): axis tops that change rarely as data moves."""
    power = 10.0 ** xp.floor(xp.log10(x))
    steps = xp.asarray(_NICE) * power
    return xp.take(steps, xp.first_true(steps >= x * (1 - 1e-12)))


def fits(model, hardware, xp, S, tp=1):
    """The largest batch whose weights and caches (as served: what memory
    holds) fit at context ``S`` on ``tp`` GPUs under plain tensor
    parallelism (either may be traced), by the rule
    :meth:`speclib.Deployment.max_batch` counts with: the catalogue's
    ``gpu_sequence_bytes`` and ``gpu_max_batch``, an MLA latent whole on
    every GPU, a GQA cache split by KV head down to one per GPU; None when
    the model or chip lacks what the check needs."""
    try:
        weights = _capacity.weight_bytes(model)
        layout = [float(v) for v in _capacity.layout_arguments(model, "served")]
        reserve = _capacity.check_reserve(_capacity.DEFAULT_RESERVE)
        kv_heads = model.step_architecture().kv_heads
    except ValueError:
        return None
    if hardware.hbm_capacity is None:
        return None
    n = xp.asarray(tp) * 1.0
    share = xp.F.gqa_kv_share(n, float(kv_heads)) if kv_heads else 1.0
    L_f, m_c, L_l, sigma, L_csa, c_csa, m_i, L_hca, c_hca, L_w, W_win = layout
    m = xp.F.gpu_sequence_bytes(S, 0.0, 0.0, share, 1.0 / n, L_f, m_c, L_l, sigma, 0.0, L_csa, c_csa, m_i, L_hca,
                                c_hca, L_w, W_win, 0.0)
    W_g = xp.F.gpu_weight_bytes(weights, 0.0, 0.0, n)
    return xp.floor(xp.F.gpu_max_batch(_capacity._capacity_of(hardware), reserve, W_g, m))


#: The batches (the output ``no_fit``) that cannot fit in HBM, hatched, with their legend label.
MEMORY_BANDS = Bands("B", "no_fit", label="does not fit in HBM (weights + KV cache)", color="memory", alpha=0.22,
                     hatch="///", gid="memory_band")
#: The same, its legend naming the KV cache the batches are sized with (the output ``memory_label``,
#: :func:`memory_label`).
LABELLED_MEMORY_BANDS = dataclasses.replace(MEMORY_BANDS, label="{memory_label}")


def bisect(xp, above, lo, hi, steps=48):
    """The crossing of a monotone condition in [lo, hi]: ``above(x)`` is true
    past it. A fixed number of halvings (48: to 1e-14 of the bracket),
    written with ``xp.where`` so that it records."""
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        hit = above(mid)
        lo, hi = xp.where(hit, lo, mid), xp.where(hit, mid, hi)
    return hi


def ridge_crossing(x, y, ridge):
    """The first ``x`` at which the increasing curve ``y(x)`` reaches ``ridge``,
    interpolated linearly in log x between the grid points around it; None
    if it never does, ``x[0]`` if it starts above."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    above = np.flatnonzero(y >= ridge)
    if above.size == 0:
        return None
    i = int(above[0])
    if i == 0:
        return float(x[0])
    frac = (ridge - y[i - 1]) / (y[i] - y[i - 1])
    return float(np.exp(np.log(x[i - 1]) + frac * (np.log(x[i]) - np.log(x[i - 1]))))


# --- where memory ends, in the tables that print a batch ------------------------------------
#: The mark a table puts beside a batch its deployment cannot hold.
NOT_HELD = "\u2020"


def held_point(deployment, S, B, gamma) -> tuple:
    """(the mark for batch ``B`` at context ``S`` drafting ``gamma`` tokens:
    :data:`NOT_HELD` when ``deployment`` cannot hold it, else ""; the point,
    for :attr:`speclib.presentation.tables.NumberTable.held`)."""
    marked = float(B) > deployment.max_batch(float(S), int(gamma))
    return (NOT_HELD if marked else ""), (deployment, float(S), float(B), int(gamma), bool(marked))


def holds(deployment, S, *, served_too: bool = False) -> str:
    """What ``deployment`` holds at ``S`` tokens, in words: "one B200 holds 76
    sequences of 4,096 tokens without drafting" (and, for a DeepSeek-V4
    deployment priced as the paper prices its attention, with ``served_too``,
    how many with the cache as served)."""
    where = (f"one {deployment.hardware.name}" if deployment.tp == 1
             else f"{deployment.tp} \u00d7 {deployment.hardware.name}")
    held = deployment.max_batch(float(S))
    text = f"{where} holds {held:,} sequences of {S:,.0f} tokens without drafting"
    if served_too and deployment.attention == "paper":
        served = deployment.replace(attention="served").max_batch(float(S))
        if served != held:
            text += f" with a full cache in every layer, as the paper prices it, and {served:,} with the cache as served"
    return text


def memory_sentence(deployment, S, *, served_too: bool = False) -> str:
    """Where memory ends, for a table's caption: what :data:`NOT_HELD` marks
    and what the deployment holds (:func:`holds`)."""
    return (f"{NOT_HELD}: a batch the deployment does not hold at that draft length; "
            f"{holds(deployment, S, served_too=served_too)}")


def join_and(items) -> str:
    """'a', 'a and b', 'a, b and c'; 'none' for no items (how the prose lists things)."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else "none"


#: How the prose and the tables name each engine, by speclib's engine key
#: (:data:`speclib.core.capacity.ENGINE_MEMORY`'s keys).
ENGINE_NAMES = {"vLLM": "vLLM", "SGLang": "SGLang", "TRT": "TensorRT-LLM"}


#: An extreme over a grid as a range of ties (:mod:`speclib.core.optimum`), importable from here.
extreme_range = _optimum.extreme_range

