"""Pricing a speculated token: per-component rooflines and their slopes.

Every component's step cost is a roofline in byte-equivalents,
C = max(FLOPs / R, bytes moved), over t tokens. A token already in the batch
pays the average C/t, a speculated token wedged into the same step pays the
marginal dC/dt; their ratio is the roofline's log-slope r = d log C / d log t.
The rooflines and their slopes (sympy derivatives of each branch) are in
:mod:`speclib.formulas.cost`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import checked_array, checked_choice, scalar_or_array
from ..formulas import numpy_functions as nf
from ..presets import resolve
from . import attention as _attn



@dataclass(frozen=True)
class Roofline:
    """One family of rooflines as numpy functions: ``cost`` and ``slope``
    (``<name>_cost`` and ``<name>_slope`` of
    :mod:`speclib.formulas.numpy_functions`, printed from the family's
    :class:`speclib.formulas.cost.RooflineForm`), taking the
    ``n_variables`` variables, then the constants a model and chip fix."""

    name: str
    n_variables: int

    def __post_init__(self):
        if nf.ARGUMENTS[f"{self.name}_cost"] != nf.ARGUMENTS[f"{self.name}_slope"]:  # pragma: no cover
            raise ValueError(f"roofline {self.name!r}: cost and slope take different arguments")

    @property
    def cost(self):
        return getattr(nf, f"{self.name}_cost")

    @property
    def slope(self):
        return getattr(nf, f"{self.name}_slope")

    @property
    def arg_names(self) -> tuple:
        return nf.ARGUMENTS[f"{self.name}_cost"]

    @property
    def variable_names(self) -> tuple:
        return self.arg_names[: self.n_variables]

    @property
    def constant_names(self) -> tuple:
        return self.arg_names[self.n_variables:]


#: The three roofline families of a layer, keyed by name.
ROOFLINES = {"gemm": Roofline("gemm", 1), "moe": Roofline("moe", 1), "attn": Roofline("attn", 3),
             "served_attn": Roofline("served_attn", 3)}

#: How the ledger prices DeepSeek-V4's attention: ``"served"``, each layer
#: over the context its compression ratio in the published config leaves it
#: (:data:`speclib.formulas.cost.served_attn_cost_expr`), as an engine serves
#: it; ``"paper"``, every layer as MLA over the whole context, as the paper
#: prices it (what reproduces the paper's figures and numbers, named where
#: they are computed). A model without compressed layers is priced the same
#: either way.
ATTENTIONS = ("paper", "served")

#: The one default of every entry point (the ledger, the whole step, the
#: memory a deployment holds, :class:`speclib.Deployment`, the ``speclib``
#: command): DeepSeek-V4's attention as served, what a deployment runs.
DEFAULT_ATTENTION = "served"

#: Each pricing in words, as the ``speclib`` command's header lines say it.
ATTENTION_WORDS = {"served": "attention as served", "paper": "attention as the paper prices it"}


def check_attention(value) -> str:
    return checked_choice("attention", value, ATTENTIONS)


def served_layers(model) -> dict | None:
    """How ``model`` serves its attention, compressed: how many layers of
    each kind (``full``, ``window`` only, ``csa``, ``hca``) its config's
    ``compress_ratios`` list, its indexer's (``m_ci``, ``m_qi``, ``f_i``),
    the CSA and HCA ratios, CSA's ``top_k`` and the sliding ``window``. None
    for a model whose attention nothing compresses (it is served as the
    paper prices it). A compression ratio keeps 1/ratio of the context; one
    that would keep more than all of it, or nothing, is refused naming the
    field."""
    attn = model.attention
    if getattr(attn, "hca_ratio", None) is None:
        return None
    for name in ("csa_ratio", "hca_ratio"):
        ratio = getattr(attn, name)
        if not (isinstance(ratio, (int, float, np.integer, np.floating)) and np.isfinite(ratio) and ratio >= 1):
            raise ValueError(f"{name}: a compression ratio keeps 1/ratio of the context, a fraction that must be in "
                             f"(0, 1]; {model.name} has {name} = {ratio!r}")
    layout = model.cache_layout()
    if layout["csa"] + layout["hca"] == 0:  # no per-layer ratios: every layer full attention
        return None
    n_layers = model._layer_counts()[0]
    window_only = n_layers - layout["full"] - layout["csa"] - layout["hca"]
    m_ci, m_qi, f_i, _ = attn.variant_constants("indexer", 1.0)
    return {"full": float(layout["full"]), "window": float(window_only), "csa": float(layout["csa"]),
            "hca": float(layout["hca"]), "m_ci": m_ci, "m_qi": m_qi, "f_i": f_i, "csa_ratio": float(attn.csa_ratio),
            "hca_ratio": float(attn.hca_ratio), "top_k": float(attn.csa_top_k),
            "window_tokens": float(model.sliding_window or 0)}


def served_attention_constants(model, hardware, query_bytes: bool = False, cache_copies: float = 1.0):
    """The constants of :data:`speclib.formulas.cost.served_attn_cost_expr`
    after (B, q, S) for ``model`` on ``hardware``: its MLA's and its
    indexer's (m_c, m_q, f), the ridge, then :func:`served_layers`'s ratios,
    top-k, window and layer counts. None for a model whose attention nothing
    compresses (it is priced as the paper prices it). ``cache_copies``: the
    copies of each cache a split over GPUs reads (:func:`speclib.core.attention.cache_copies`),
    on the MLA latent and on the indexer's keys, which every head shares alike."""
    v = served_layers(model)
    if v is None:
        return None
    keep_q = 1.0 if query_bytes else 0.0
    rho = float(cache_copies)
    return (model.context_bytes * rho, model.query_bytes * keep_q, model.flops_per_pair,
            hardware.ridge(model.attention_precision), v["m_ci"] * rho, v["m_qi"] * keep_q, v["f_i"], v["csa_ratio"],
            v["hca_ratio"], v["top_k"], v["window_tokens"], v["full"], v["window"], v["csa"], v["hca"])


@dataclass(frozen=True)
class BoundRoofline:
    """A roofline with one model's and chip's constants filled in."""

    roofline: Roofline
    constants: tuple

    def cost(self, *variables):
        return self.roofline.cost(*variables, *self.constants)

    def slope(self, *variables):
        return self.roofline.slope(*variables, *self.constants)

    def named_constants(self) -> dict:
        """{symbol name: value} for the constants, in argument order."""
        return dict(zip(self.roofline.constant_names, self.constants))


COMPONENTS = ("attn_proj", "moe", "attention")


class CostModel:
    """The per-component rooflines of one model on one chip, as numpy functions.

    Built once per (model, hardware, query_bytes, attention); every method
    takes arrays that are assumed already checked and broadcasts them.
    ``rooflines`` maps each of :data:`COMPONENTS` to its
    :class:`BoundRoofline` (the FFN's key is ``moe`` for dense models too).
    ``attention``: :data:`ATTENTIONS`.
    """

    def __init__(self, model, hardware, query_bytes: bool = False, attention: str = DEFAULT_ATTENTION, layout=None):
        self.model = model
        self.hardware = hardware
        self.query_bytes = query_bytes
        self.attention_kind = check_attention(attention)
        self.tp, self.dp_attention = split_layout(layout)
        # Summed over the tp GPUs: a GEMM split over them keeps its roofline (1/tp of the weights and FLOPs
        # each); attention reads rho copies of its cache for the work of one (every GPU the whole MLA latent,
        # computing 1/tp of the heads); under data-parallel attention the projections are whole on every GPU.
        rho = _attn.cache_copies(model, self.tp, self.dp_attention)
        self.cache_copies = rho
        weight_copies = float(self.tp) if self.dp_attention else 1.0
        ffn = model.ffn
        proj = (float(model.attn_proj_params), model.proj_weight_bytes * weight_copies,
                hardware.gemm_ridge(model.proj_precision, model.activations))
        ridge_ffn = hardware.gemm_ridge(ffn.precision, model.activations)
        w_ffn = float(model.expert_params)
        if ffn.is_moe and ffn.top_k == ffn.n_routed:
            # k == E touches every expert at any batch: the MoE is then exactly
            # a dense GEMM over (E + n_s) experts, and is priced in that form,
            # since the MoE memory branch would be 0 * log(0) = NaN.
            ffn_roofline = BoundRoofline(
                ROOFLINES["gemm"], ((ffn.n_routed + ffn.n_shared) * w_ffn, ffn.weight_bytes, ridge_ffn)
            )
        elif ffn.is_moe:
            ffn_roofline = BoundRoofline(
                ROOFLINES["moe"], (ffn.top_k, ffn.n_routed, ffn.n_shared, w_ffn, ffn.weight_bytes, ridge_ffn)
            )
        else:
            ffn_roofline = BoundRoofline(ROOFLINES["gemm"], (w_ffn, ffn.weight_bytes, ridge_ffn))
        attn = (
            model.context_bytes * rho,
            model.query_bytes if query_bytes else 0.0,
            model.flops_per_pair,
            hardware.ridge(model.attention_precision),
        )
        served = (served_attention_constants(model, hardware, query_bytes, cache_copies=rho)
                  if self.attention_kind == "served" else None)
        self.rooflines = {
            "attn_proj": BoundRoofline(ROOFLINES["gemm"], proj),
            "moe": ffn_roofline,
            "attention": (BoundRoofline(ROOFLINES["attn"], attn) if served is None
                          else BoundRoofline(ROOFLINES["served_attn"], served)),
        }

    # costs -----------------------------------------------------------------
    def proj(self, tokens):
        return self.rooflines["attn_proj"].cost(tokens)

    def ffn(self, tokens):
        return self.rooflines["moe"].cost(tokens)

    def attention(self, batch, width, context):
        return self.rooflines["attention"].cost(batch, width, context)

    def verify(self, batch, width, context):
        """C_verify(B, q, S): one step over B sequences of q query tokens."""
        tokens = batch * width
        return self.proj(tokens) + self.ffn(tokens) + self.attention(batch, width, context)

    def decode(self, batch, context):
        """C_0(B, S): a plain decode step."""
        return self.verify(batch, 1.0, context)

    # slopes ----------------------------------------------------------------
    def proj_slope(self, tokens):
        return self.rooflines["attn_proj"].slope(tokens)

    def ffn_slope(self, tokens):
        return self.rooflines["moe"].slope(tokens)

    def attention_slope(self, batch, width, context):
        return self.rooflines["attention"].slope(batch, width, context)


_cache: dict = {}


def split_layout(layout) -> tuple:
    """(tp, dp_attention) of a :class:`speclib.core.layout.Layout` the
    per-layer ledger can price (None: one GPU); experts split whole
    (``ep`` > 1) are :func:`speclib.core.parallel.expert_parallel_cost_model`'s."""
    if layout is None:
        return 1, False
    if not all(hasattr(layout, name) for name in ("tp", "ep", "dp_attention")):
        raise ValueError(f"layout must be a speclib.core.layout.Layout (tp, ep, dp_attention) or None; got {layout!r}")
    if layout.ep != 1:
        raise ValueError(f"layout: the per-layer ledger slices every expert over the tp GPUs (ep must be 1; "
                         f"speclib.core.parallel.expert_parallel_cost_model prices ep > 1); got ep={layout.ep}")
    _attn.split_of(layout.tp, layout.dp_attention)  # checks both
    return int(layout.tp), bool(layout.dp_attention)


def cost_model(model=None, hardware=None, query_bytes: bool = False,
               attention: str = DEFAULT_ATTENTION, *, layout=None) -> CostModel:
    """The (cached) :class:`CostModel` for a model/hardware pair;
    ``attention``: :data:`ATTENTIONS`. ``layout``: a
    :class:`speclib.core.layout.Layout`, the layer split over its ``tp``
    GPUs, heads and all (with ``dp_attention``, attention split by sequence
    instead), its costs summed over them, so that the ratios the ledger
    reads are one GPU's; None, one GPU."""
    model, hardware = resolve(model, hardware)
    key = (model, hardware, bool(query_bytes), check_attention(attention), split_layout(layout))
    if key not in _cache:
        _cache[key] = CostModel(model, hardware, query_bytes, attention, layout)
    return _cache[key]


def check_batch(B_value):
    return checked_array("B", B_value, lo=0, lo_open=True)


def check_context(S_value):
    return checked_array("S", S_value, lo=0, lo_open=True)


def check_draft_cost(c_value):
    return checked_array("c_draft", c_value, lo=0)


def _ledger(B, S, c_draft, model, hardware, query_bytes, verify_width, attention=DEFAULT_ATTENTION, layout=None):
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    width = checked_array("verify_width", verify_width, lo=1)
    cm = cost_model(model, hardware, query_bytes, attention, layout=layout)
    B_arr, S_arr, c_arr = np.broadcast_arrays(B_arr, S_arr, c_arr)
    costs = {
        "attn_proj": cm.proj(B_arr),
        "moe": cm.ffn(B_arr),
        "attention": cm.attention(B_arr, 1.0, S_arr),
    }
    slopes = {
        "attn_proj": cm.proj_slope(B_arr),
        "moe": cm.ffn_slope(B_arr),
        # A speculated token lands at verify width 2: past MLA's crossover on
        # one GPU (T ~ 1.16 on a B200), short of it under tensor parallelism
        # (tp times that), so the slope is read there.
        "attention": cm.attention_slope(B_arr, width, S_arr),
    }
    total_cost = sum(costs.values())
    shares = {name: costs[name] / total_cost for name in COMPONENTS}
    return slopes, shares, c_arr


def marginal_cost(B, S, c_draft=0.1, model=None, hardware=None, *, query_bytes: bool = False, verify_width=2,
                  attention: str = DEFAULT_ATTENTION, layout=None):
    """Cost of one speculated token as a multiple of a token already in the batch.

    Returns a dict of arrays (broadcast over ``B``, ``S``, ``c_draft``):
    ``attn_proj``, ``moe``, ``attention`` are each component's roofline slope
    r = d log C / d log t (GEMMs at t = B tokens; attention at
    ``verify_width`` query tokens per sequence, 2 for the first speculated
    token); ``drafter`` is ``c_draft``; ``total`` is the slopes blended by each
    component's share of a plain decode step's cost, plus the drafter.
    The FFN key is ``moe`` for dense models too. ``query_bytes=False`` follows
    the paper's ledger, which leaves the query bytes out of attention's cost;
    DeepSeek-V4's attention is priced as served unless ``attention="paper"``
    (:data:`ATTENTIONS`, :data:`DEFAULT_ATTENTION`). ``layout``: one GPU of
    the layer split by a :class:`speclib.core.layout.Layout` (None: one GPU):
    under tensor parallelism its attention reads the whole MLA latent for
    1/tp of the heads (:func:`speclib.core.attention.cache_copies`).
    """
    slopes, shares, c_arr = _ledger(B, S, c_draft, model, hardware, query_bytes, verify_width, attention, layout)
    out = {name: scalar_or_array(slopes[name]) for name in COMPONENTS}
    out["drafter"] = scalar_or_array(c_arr)
    out["total"] = scalar_or_array(sum(slopes[n] * shares[n] for n in COMPONENTS) + c_arr)
    return out


def verify_price(B, S, c_draft=0.1, gamma=1, model=None, hardware=None, *, query_bytes: bool = False,
                 attention: str = DEFAULT_ATTENTION, layout=None):
    """What a draft of ``gamma`` tokens costs per drafted token, as a multiple
    of a real token, on the paper's per-layer ledger: the whole verify's cost
    above a plain decode step, (C_verify(B, gamma + 1, S) - C_0) / (gamma C_0),
    plus the drafter's ``c_draft`` (:data:`speclib.formulas.speculation.verify_price_expr`).

    This is the price the speedup sees: Sp = N / (1 + gamma p), so one drafted
    token pays (Sp > 1) exactly when alpha exceeds ``total``. The ledger's
    :func:`marginal_cost` is a slope, the price of one more token at decode;
    this is the secant over the whole step from width 1 to gamma + 1, and the
    two differ wherever the cost is not a straight line over that step.

    Returns a dict of arrays (broadcast over ``B``, ``S``, ``c_draft``,
    ``gamma``): ``verify`` (the verify's share, without the drafter),
    ``drafter`` (``c_draft``) and ``total``.
    """
    B_arr, S_arr, c_arr = check_batch(B), check_context(S), check_draft_cost(c_draft)
    g = checked_array("gamma", gamma, lo=1, integer=True)
    cm = cost_model(model, hardware, query_bytes, attention, layout=layout)
    B_arr, S_arr, c_arr, g = np.broadcast_arrays(B_arr, S_arr, c_arr, g)
    C_0, C_v = cm.decode(B_arr, S_arr), cm.verify(B_arr, g + 1.0, S_arr)
    verify = nf.verify_price(C_0, C_v, 0.0, g)
    return {"verify": scalar_or_array(verify), "drafter": scalar_or_array(c_arr),
            "total": scalar_or_array(nf.verify_price(C_0, C_v, c_arr, g))}


def cost_shares(B, S, model=None, hardware=None, *, query_bytes: bool = False, attention: str = DEFAULT_ATTENTION,
                layout=None):
    """Each component's share of a plain decode step's cost (sums to 1), on
    one GPU of ``layout`` (see :func:`marginal_cost`)."""
    _, shares, _ = _ledger(B, S, 0.0, model, hardware, query_bytes, 2, attention, layout)
    return {name: scalar_or_array(v) for name, v in shares.items()}
