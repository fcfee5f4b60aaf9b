"""A measured step's time as fitted constants times features: the terms a
fitted step may have, the forms it is chosen from, and the features of
every measured run (:mod:`speclib.evidence.decode_runs`,
:mod:`speclib.evidence.spec_runs`).

The calibrated step of :mod:`speclib.core.calibrated` prices one GPU's share
of a step of B sequences, T positions each, at context S, under the
deployment's layout (:mod:`speclib.core.layout`), as

    t = mu_chip * kernels + communication + kappa * flops + a_(chip, engine)
        + d * B + e * B * (T - 1) + ...

Each term below is a feature whose coefficient a fit finds (or, for the
collectives, whose coefficient is 1: their time is priced from measured
latencies and the link's bandwidth, not fitted):

* ``factor`` (mu, per chip): the roofline time of one GPU's kernels;
* ``fixed`` (a, per chip and engine): one per step, or L / L_ref of one for
  a model of L layers where the form scales it by layers;
* ``per_sequence`` (d): the sequences in the step;
* ``compute`` (kappa): one GPU's FLOPs at peak;
* ``per_position`` (e, per vendor or pooled): each verified position past
  the first, B (T - 1), and for a form whose fixed time scales by layers, in
  each full-attention layer: B (T - 1) L_a / L_ref (a verify's attention runs
  its several query positions through the engine's extend kernel, not the
  one-query decode kernel, and writes the rejected positions' cache entries,
  in every attention layer);
* ``extra_flops`` (chi, per vendor or pooled): the extra positions' FLOPs at
  peak;
* ``per_draft_pass`` (a_d): each sequential drafter pass;
* ``prefill``: the prefill of arriving requests at its roofline on the
  deployment's layout (:meth:`speclib.core.layout.ParallelStep.prefill_share`),
  its coefficient the prefill's efficiency (1: at the roofline);
* ``moe_fixed`` (per vendor): a time per MoE layer per step, whatever the
  batch (the routing, sorting and grouped-GEMM launches a MoE layer adds);
* ``attention_factor`` (nu, per vendor): one GPU's attention component at
  its roofline, on top of the chip's factor: decode attention's kernels
  reaching less of the bandwidth than the weights' GEMMs
  (:data:`speclib.formulas.step.kernel_time_expr`);
* ``token_layer`` (tau, per vendor or pooled): the tokens of the step times
  the layers each passes through, B T L, the target's and its drafter's
  passes' alike: the work per token per layer that the weights' and the
  cache's roofline does not count (activations between kernels, norms,
  rotary embeddings, quantising activations, a MoE layer's permutation,
  attention's work per query; :data:`speclib.formulas.step.engine_step_expr`).

A drafter's pass is priced as its own roofline over the tokens it drafts
(:meth:`SpecSteps.draft_pass`) and, where :data:`DRAFTER_LAYER_COSTS`, as the
engine prices a layer of the target: the fixed time per layer (the form's
fixed time scaled by layers) and the time per MoE layer for each layer a pass
runs, tau for each of its tokens in each of its layers, and the collectives
of its layers, split over the GPUs as the target's are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import checked_choice
from ..core.drafters import PricedDrafter
from ..presets import drafter_for, resolve
from ..presets import hardware as hardware_preset
from speclib.evidence import engines as _eng
from speclib.evidence import validation as _val
from speclib.evidence.decode_runs import DecodeRun
from speclib.evidence.spec_runs import SpecRun

#: The terms of a fitted step (see the module notes).
TERMS = ("factor", "fixed", "per_sequence", "compute", "per_position", "extra_flops", "per_draft_pass", "prefill",
         "moe_fixed", "attention_factor", "token_layer")
#: Terms that may be dropped to test whether the data need them.
CANDIDATES = ("compute", "per_position", "per_draft_pass", "prefill", "per_sequence", "moe_fixed")
#: The terms every form has unless it says otherwise. ``attention_factor``
#: and ``moe_fixed`` are there because the decode runs of two model classes
#: need them (the engines chapter prints the hold-outs without each).
DEFAULT_TERMS = ("factor", "fixed", "per_sequence", "per_position", "prefill", "attention_factor", "moe_fixed")
#: Terms fitted once per chip vendor (its software stack, CUDA or ROCm),
#: unless a form pools them into one constant for every chip.
BY_VENDOR = ("per_position", "extra_flops", "token_layer")
#: Features whose coefficient is not fitted: the collectives, priced from
#: measured latencies and the link's bandwidth.
FIXED_FEATURES = ("communication",)
#: Whether the collectives are charged (False only to show what leaving them
#: out does: :func:`speclib.calibration.held_out.decode_ablation`).
COLLECTIVES_CHARGED = True
#: How a drafter pass's work is priced: "roofline" (its own roofline: one
#: layer's worth of the target's active weights and the output head; the
#: held-out choice) or "share" (the data's c_draft, or
#: :data:`speclib.evidence.spec_runs.DEFAULT_DRAFT_SHARE`, of a plain step).
DRAFTER_PRICING = "roofline"
#: Whether the time per drafter pass is one constant or one per engine.
DRAFT_PASS_BY_ENGINE = False
#: The largest step each engine runs as a captured CUDA graph by default
#: (ENGINE_FACTS.md, "CUDA graphs with speculation on"): vLLM 512 tokens a step
#: (B (gamma + 1) for a verify; 1,024 on B200 and B300 in its newest releases,
#: 512 before), TensorRT-LLM's PyTorch backend 128 sequences, SGLang its
#: cuda-graph-max-bs (512 sequences on eight H200 or B200); beyond it a step
#: runs eagerly, kernel by kernel. (unit, limit) by engine.
GRAPH_CEILINGS = {"vLLM": ("tokens", 512), "TRT": ("sequences", 128), "TensorRT-LLM": ("sequences", 128),
                  "SGLang": ("sequences", 512)}
#: How much longer a step beyond its engine's graph ceiling takes: 1 (the
#: shipped step: not a term), or TensorRT-LLM's statement that CUDA graphs are
#: worth 22 % end to end at throughput scale (1.22), the variant
#: :func:`speclib.calibration.held_out.term_ablation` holds against the runs.
EAGER_FACTOR = 1.0


def eager(engine: str, B, T) -> bool:
    """Whether a step of B sequences of T positions runs beyond ``engine``'s
    captured graphs (:data:`GRAPH_CEILINGS`)."""
    unit, limit = GRAPH_CEILINGS.get(engine, ("sequences", float("inf")))
    return float(B * T if unit == "tokens" else B) > limit


#: Whether a drafter's pass pays, for each layer it runs, what the engine
#: charges a layer of the target beyond the roofline (see the module notes;
#: False only to show what leaving it out does).
DRAFTER_LAYER_COSTS = True
#: How the measured engines roll a hybrid's linear-attention state back past
#: a rejected draft (:mod:`speclib.core.step`): vLLM and SGLang keep a snapshot
#: per verified position, and a Deployment prices it so by default.
ENGINE_ROLLBACK = "snapshot"
#: How a measured run's attention is priced in the fit: as its engine served it
#: (DeepSeek-V4's compressed attention as its published config serves it, and
#: each verified position's own sparse selection; :data:`speclib.evidence.engines.ATTENTION`).
RUN_ATTENTION = _eng.ATTENTION
#: Engines named in the measured data, as the calibration names them (an
#: engine not named here takes vLLM's fixed time).
ENGINE_KEYS = {"vLLM": "vLLM", "SGLang": "SGLang", "TensorRT-LLM": "TRT", "TRT": "TRT"}
#: How the fixed time per step may scale: "chip" (a per chip and engine,
#: the same for every model) or "layers" (a per chip and engine, measured on
#: a model of L_ref layers, times L / L_ref for a model of L layers).
FIXED_SCALINGS = ("chip", "layers")


def engine_key(engine: str) -> str:
    return ENGINE_KEYS.get(engine, "vLLM")


def chip_key(name: str) -> str:
    """The calibration's name for a chip (its name before the first '-')."""
    return hardware_preset(name).name.split("-")[0]


@dataclass(frozen=True)
class Form:
    """The shape of a fitted step: its ``terms`` (of :data:`TERMS`) and how
    its fixed time scales (``fixed``, one of :data:`FIXED_SCALINGS`). The
    candidates a fit is chosen from are forms
    (:data:`speclib.calibration.held_out.CANDIDATE_FORMS`)."""

    terms: tuple = DEFAULT_TERMS
    fixed: str = "chip"
    #: terms of :data:`BY_VENDOR` fitted as one constant for every chip
    pooled: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "terms", tuple(checked_choice("terms", t, TERMS) for t in self.terms))
        object.__setattr__(self, "pooled", tuple(checked_choice("pooled", t, BY_VENDOR) for t in self.pooled))
        checked_choice("fixed", self.fixed, FIXED_SCALINGS)

    @property
    def label(self) -> str:
        name = {"per_position": "e", "extra_flops": "the extra positions' FLOPs", "token_layer": "a time per token per layer"}
        parts = [name[t] + (" (one for every chip)" if t in self.pooled else " per vendor")
                 for t in BY_VENDOR if t in self.terms]
        extras = [(self.fixed == "layers", "fixed time by layers"), ("compute" in self.terms, "kappa"),
                  ("per_draft_pass" in self.terms, "a time per drafter pass"),
                  ("attention_factor" in self.terms, "attention's own factor"),
                  ("moe_fixed" in self.terms, "a time per MoE layer")]
        return ", ".join([" and ".join(parts) or "no per-position term"] + [t for on, t in extras if on])


def as_form(terms) -> Form:
    """``terms`` as a :class:`Form` (a tuple of terms: the chip's fixed time)."""
    return terms if isinstance(terms, Form) else Form(tuple(terms))


#: The form of the shipped calibration: the one
#: :func:`speclib.calibration.held_out.choose_form` picks on every run (a test
#: checks that it still does).
SHIPPED_FORM = Form(("factor", "fixed", "per_sequence", "prefill", "attention_factor", "moe_fixed", "per_position"),
                    "layers", ("per_position",))


def layers_ref() -> float:
    """L_ref: the layers of the model whose fixed time the others scale from
    (Llama-3.3-70B's 80)."""
    return float(resolve(_val.MEASURED_MODEL, None)[0].n_layers)


def _fixed_scale(layers: int, form: Form) -> float:
    return layers / layers_ref() if form.fixed == "layers" else 1.0


def _layout_step(parallel, B, T, S, chip: str, engine: str, vendor: str, form: Form) -> dict:
    """Features of a step of B sequences of T positions on one GPU of ``parallel``."""
    a = parallel.architecture
    flops = parallel.flop_time(B, T, S)
    layers = a.attention_layers + a.linear_layers
    return {("factor", chip): float(parallel.kernel_time(B, T, S)),
            ("attention_factor", vendor): float(parallel.component_times(B, T, S)["attention"]),
            "communication": float(parallel.communication(B, T)) * COLLECTIVES_CHARGED, "compute": float(flops),
            ("fixed", chip, engine): _fixed_scale(layers, form), ("token_layer", vendor): float(B * T * layers),
            ("moe_fixed", vendor): float(a.moe_layers), "per_sequence": float(B),
            ("per_position", vendor): float(B * (T - 1)) * _fixed_scale(a.attention_layers, form),
            ("extra_flops", vendor): float(flops - parallel.flop_time(B, np.float64(1.0), S))}


def decode_features(run: DecodeRun, form: Form = None) -> dict:
    """A decode run's step (T = 1) of the sequences it runs at once
    (:attr:`~speclib.evidence.decode_runs.DecodeRun.running`: what memory
    holds, where that is less than the concurrency), with the prefill its
    closed loop carries."""
    form = form or Form()
    parallel = run.deployment().parallel_step()
    B, S = np.float64(run.running), np.float64(run.context)
    out = _layout_step(parallel, B, np.float64(1.0), S, chip_key(run.chip), engine_key(run.engine),
                       parallel.hardware.vendor, form)
    out["prefill"] = float(parallel.prefill_share(B, run.input_len, run.output_len))
    return out


class SpecSteps:
    """Feature vectors of one speculative run's steps."""

    def __init__(self, run: SpecRun, form: Form = None):
        from ..core.deployment import Deployment

        self.run = run
        self.form = form or Form()
        model, hw = resolve(run.model, run.chip)
        self.chip = chip_key(run.chip)
        self.engine = engine_key(run.engine)
        self.vendor = hw.vendor
        self.hardware = hw
        if run.expert_parallel:  # the LMSYS runs: the expert-parallel ledger, sequences per GPU
            self.ledger = _eng._ledger(_eng.run(run.id))
            self.seconds = model.n_layers / hw.memory_bandwidth
            self.tp = 1
        else:
            self.tp = run.gpus
        # a hybrid's linear-attention state rolled back as the engines do (a snapshot per verified position)
        self.parallel = Deployment(run.model, run.chip, tp=self.tp, ep=run.ep, dp_attention=run.dp_attention,
                                   weights=run.weights, kv_cache=run.kv_cache, rollback=ENGINE_ROLLBACK,
                                   attention=RUN_ATTENTION).parallel_step()
        self.model = self.parallel.step_model.architecture

    def step(self, B, T) -> dict:
        S = np.float64(self.run.context)
        B, T = np.float64(B), np.float64(T)
        out = _layout_step(self.parallel, B, T, S, self.chip, self.engine, self.vendor, self.form)
        if self.run.expert_parallel:
            out[("factor", self.chip)] = float(self.seconds * (self.ledger.decode(B, S) if T == 1
                                                               else self.ledger.verify(B, T, S)))
            out["communication"] = 0.0  # the ledger's all-to-all is in its factor's time
        if EAGER_FACTOR != 1.0 and eager(self.run.engine, B, T):
            out = {k: v * EAGER_FACTOR for k, v in out.items()}
        return out

    def prefill(self, B) -> float:
        """Seconds of prompt work a plain step of B sequences carries in the
        run's closed loop, at its roofline; 0 where the source does not state
        both lengths or prefills elsewhere."""
        if not self.run.prefill_lengths:
            return 0.0
        I, O = self.run.prefill_lengths
        return float(self.parallel.prefill_share(np.float64(B), I, O))

    def plain(self, B) -> dict:
        """A plain decode step, with the prefill it carries."""
        out = self.step(B, 1)
        p = self.prefill(B)
        if p:
            out["prefill"] = p
        return out

    def draft_pass(self, B, positions=1.0) -> float:
        """Roofline seconds of one drafter pass (this GPU's share), priced as
        a :class:`speclib.Deployment` prices it: the drafter preset made for
        the run's model and method where there is one
        (:func:`speclib.presets.drafter_for`: DeepSeek-V3/R1's MTP module,
        Llama-3.3-70B's EAGLE-3 head), its own roofline over B sequences of
        ``positions`` positions; otherwise a stand-in, one decoder layer's
        worth of the target's active weights plus the output head in bf16."""
        hw = self.hardware
        preset = _drafter_preset(self.run)
        if preset is not None:
            return float(PricedDrafter(preset, hw).pass_model.time(B, positions, 0.0)) / self.tp
        model, _ = resolve(self.run.model, self.run.chip)
        weights = model.active_params() / model.n_layers + model.vocab_size * model.hidden_size
        flops = 2.0 * weights * B * positions
        return max(flops / hw.peak_flops("bf16"), 2.0 * weights / hw.memory_bandwidth) / self.tp

    def spec(self, B, gamma) -> dict:
        run = self.run
        out = self.step(B, run.width(gamma))
        passes = run.passes(gamma)
        if DRAFTER_PRICING == "share":
            plain = self.step(B, 1)
            for k, v in plain.items():  # the drafter's priced work: a share of a plain step per pass
                out[k] = out.get(k, 0.0) + run.draft_share * passes * v
        elif passes:
            positions = float(gamma) / passes
            out[("factor", self.chip)] += passes * self.draft_pass(B, positions)
            if DRAFTER_LAYER_COSTS:
                preset = _drafter_preset(run)
                layers = float(preset.layers if preset is not None else 1)
                moe = float(preset.step.n_routed > 0) if preset is not None else float(self.model.moe_layers > 0)
                if self.form.fixed == "layers":  # a fixed time per step whatever the model has no per-layer share
                    out[("fixed", self.chip, self.engine)] += passes * _fixed_scale(layers, self.form)
                out[("moe_fixed", self.vendor)] += passes * layers * moe
                out[("token_layer", self.vendor)] += passes * float(B) * positions * layers
                out["communication"] += passes * float(self.parallel.communication(
                    B, positions, layers=layers, moe_layers=layers * moe)) * COLLECTIVES_CHARGED
        out[("per_draft_pass", self.run.engine) if DRAFT_PASS_BY_ENGINE else "per_draft_pass"] = passes
        p = self.prefill(B)
        if p:  # a step commits N tokens per sequence, so N times a plain step's arrivals
            out["prefill"] = run.committed(gamma, B) * p
        return out



#: Drafting methods as the measured runs name them, and the drafter kind of
#: the presets that price them.
_PRESET_KINDS = {"mtp": "mtp", "eagle3": "eagle3"}


def _drafter_preset(run):
    """The drafter preset for ``run``'s model and method, or None."""
    kind = _PRESET_KINDS.get(run.drafter.lower())
    if kind is None:
        return None
    try:
        return drafter_for(run.model, kind)
    except ValueError:  # a model the presets do not have
        return None
