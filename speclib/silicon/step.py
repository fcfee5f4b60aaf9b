"""A step priced from kernels measured on silicon (``step_time="measured"``).

One GPU's share of a forward step of B sequences of T positions at context
S, each part read from the tables measured for the deployment's chip and
engine (:mod:`speclib.silicon.tables`), in the precision it is served in:

* ``dense``: the attention projections, routers, the dense layers' MLPs and
  the output head, each a GEMM of B x T tokens (B / tp under data-parallel
  attention) by its weight's share on the GPU (:func:`~speclib.silicon.tables.layer_gemms`);
* ``ffn``: the routed experts, one grouped MoE kernel per MoE layer at the
  B x T tokens entering it (the table's kernel routes them, uniformly, to
  ``top_k`` experts each, at the deployment's (moe_tp, moe_ep) split), and
  the shared experts' or a dense model's MLP GEMMs;
* ``attention``: each full-attention layer's decode kernel over B sequences
  (B / tp under data-parallel attention) at context S. The tables time one
  query position per sequence; a verify of T positions is that time scaled
  by the roofline's ratio of T positions to one, at the same B and S (the
  roofline's own account of how a verify's extra query positions load the
  cache read), and the source says so;
* ``communication``: two all-reduces per layer of B x T x hidden bf16
  elements under tensor parallelism, from the engine's measured all-reduce.

A part no table measures is priced by the deployment's roofline
(:class:`speclib.core.layout.ParallelStep`) and named so in
:meth:`MeasuredStepModel.sources`: a chip or engine without tables (AMD
chips, GB300), an op the tables lack (DeepSeek-V4's compressed attention and
grouped output projection, the linear-attention layers of a hybrid, MLA under
vLLM, whose tables hold only its whole attention module), a precision the
chip's tables do not hold, a shape outside the stored ones, and the
all-to-all of expert parallelism with data-parallel attention. Points past a
table's last measured token count, batch or context are read linearly in
that quantity (:class:`speclib.silicon.tables.Curve`).

Nothing here is fitted: the engine's per-step host work (scheduling, the
sampler, the rejection test) is not in any kernel table, so the measured
step is a lower bound on an engine's step wherever that work is exposed.
"""
from __future__ import annotations

import numpy as np

from ..formulas import numpy_functions as nf
from . import tables as _tables

#: Collectives per layer under tensor-parallel attention.
ALLREDUCES_PER_LAYER = 2
#: The parts of a step, in the order a breakdown lists them.
PARTS = ("dense", "ffn", "attention", "communication")
ROOFLINE = "roofline"


def _kv_dtype(model) -> str:
    return "fp8" if model.attention.kv_bytes <= 1.0 else "bfloat16"


class MeasuredStepModel:
    """One GPU's share of a step of ``model`` under ``step`` (the
    deployment's :class:`~speclib.core.layout.ParallelStep`: its layout and
    its roofline, the fallback), priced from the tables of ``engine`` on the
    step's chip (see the module notes). The interface of
    :class:`speclib.core.calibrated.CalibratedStepModel` that a
    :class:`~speclib.core.pricing.StepPricing` uses: :meth:`time`,
    :meth:`component_times`, :meth:`scaled`, :meth:`draft_layers`."""

    roofline = "measured"
    per_draft_pass = 0.0

    def __init__(self, step, model, *, engine: str):
        self.step = step
        self.step_model = step.step_model
        self.architecture = a = step.architecture
        self.hardware = step.hardware
        self.tp = step.tp
        self.model = model
        self.engine = engine
        self.layout = step.layout
        self.tables = _tables.tables_for(self.hardware, engine)
        self._sources = {}
        self._why = {}
        t = self.tables
        tp, dp = self.layout.tp, self.layout.dp_attention
        hybrid = a.linear_layers > 0
        dense_ffn_layers = a.n_layers - a.moe_layers if a.is_moe else 0
        counts = {"attention": a.attention_layers, "moe": a.moe_layers, "dense_ffn": dense_ffn_layers,
                  "all": a.n_layers, "once": 1}
        precision = {"dense": a.dense_precision, "ffn": a.ffn_precision, "bf16": "bf16"}
        self._gemms = {"dense": [], "ffn": []}
        self._moe = None
        self._attention = None
        self._allreduce = None
        if t is None:
            why = f"no measured tables for {self.hardware.name} with {engine}"
            for part in PARTS:
                self._fallback(part, why)
            return
        gemms = _tables.layer_gemms(model, tp, dp)
        if gemms is None or hybrid:
            self._fallback("dense", "its projections are not a list of GEMMs speclib reads from the preset"
                           if gemms is None else "a hybrid's linear-attention projections are not in the tables")
            gemms = [g for g in (gemms or ()) if g.part == "ffn"] if not hybrid else ()
        for g in gemms:
            if g.part in self._why:
                continue
            curve, dtype = None, None
            for dtype in _tables.gemm_dtypes(precision[g.precision], model):
                curve = t.gemm(dtype, g.n, g.k)
                if curve is not None:
                    break
            if curve is None:
                self._fallback(g.part, f"no {precision[g.precision]} GEMM of {g.n} x {g.k} ({g.name}) in the table")
                continue
            self._gemms[g.part].append((float(counts[g.layers]), g.token_share, curve, g, dtype))
        if a.is_moe and "ffn" not in self._why:
            f = model.ffn
            ep = self.layout.ep
            curve, dtype = t.moe(_tables.MOE_DTYPES[a.ffn_precision], model.hidden_size, f.expert_width, f.top_k,
                                 f.n_routed, tp // ep, ep)
            if curve is None:
                self._fallback("ffn", f"no {a.ffn_precision} MoE of {f.n_routed} experts of {model.hidden_size} x "
                               f"{f.expert_width}, top-{f.top_k}, at moe_tp {tp // ep} x moe_ep {ep} in the table")
            else:
                self._moe = (float(a.moe_layers), curve, dtype)
        self._attention_table(model, dp, hybrid)
        if tp > 1:
            if dp and self.layout.ep > 1:
                self._fallback("communication", "the all-to-all of expert parallelism is not in the tables read")
            else:
                curve = t.allreduce(tp)
                if curve is None:
                    self._fallback("communication", f"no all-reduce over {tp} GPUs in the table")
                else:
                    self._allreduce = (float(ALLREDUCES_PER_LAYER * a.n_layers), curve)
        for part in PARTS:
            self._sources.setdefault(part, self._measured_label(part))

    # --- what reads what ---------------------------------------------------------------
    def _fallback(self, part, why):
        self._why[part] = why
        self._sources[part] = f"{ROOFLINE} ({why})"

    def _attention_table(self, model, dp, hybrid):
        t, a = self.tables, model.attention
        tp = 1 if dp else self.layout.tp
        if hybrid:
            return self._fallback("attention", "a hybrid's linear-attention layers are not in the tables")
        kind = type(a).__name__
        if kind == "GQAAttention":
            heads, kv = _tables.gqa_heads(a.n_heads, a.kv_heads, tp)
            grid = t.gqa(heads, kv, a.head_dim, _kv_dtype(model))
            what = f"GQA of {heads} heads, {kv} KV heads of {a.head_dim}"
        elif _tables.mla_from_table(a):
            heads = a.n_heads // tp
            grid = t.mla(heads, _kv_dtype(model))
            what = f"MLA of {heads} heads"
        else:
            return self._fallback("attention", "its attention (compressed or another latent) is not in the tables")
        if grid is None:
            return self._fallback("attention", f"no {what} ({_kv_dtype(model)} cache) in the table")
        self._attention = (float(self.architecture.attention_layers), grid)

    def _measured_label(self, part) -> str:
        names = {"dense": "gemm", "ffn": "moe + gemm" if self._moe else "gemm",
                 "attention": ("gqa" if type(self.model.attention).__name__ == "GQAAttention" else "mla"),
                 "communication": "allreduce"}
        label = self.tables.source(names[part])
        if part == "attention":
            label += "; T > 1 scaled by the roofline's T / 1 ratio"
        return label

    def sources(self) -> dict:
        """{part: where its time comes from}: ``"measured <table> (<engine>
        <version> on <chip>, <package> <version>)"`` or ``"roofline (<why>)"``."""
        return {part: self._sources[part] for part in PARTS if part != "communication" or self.tp > 1}

    def beyond_tables(self, B, T, S) -> tuple:
        """One line for each measured part that B sequences of T positions
        over a context S read past its table's last measured point (where
        :class:`speclib.silicon.tables.Curve` and ``Grid`` go on linearly in
        the quantity): the part, how far the table goes, and what was asked.
        Empty where every part is read inside its table, or by the roofline."""
        B, T, S = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (B, T, S)))
        tokens = float(np.max(B * T))  # the most tokens one step of the range runs
        B, S = float(np.max(B)), float(np.max(S))
        where = f"({self.tables.label})" if self.tables is not None else ""
        out = []
        past = [(curve.x[-1], g.name) for part in ("dense", "ffn") for _, share, curve, g, _ in self._gemms[part]
                if not bool(curve.measured(tokens * share))]
        if past:
            top, _ = min(past)
            out.append(f"{len(past)} GEMM tables {where} measure up to {top:,.0f} tokens ({', '.join(n for _, n in past)}); "
                       f"{tokens:,.0f} read past it, linear in tokens")
        if self._moe is not None and not bool(self._moe[1].measured(tokens)):
            curve = self._moe[1]
            out.append(f"the MoE table {where} measures up to {curve.x[-1]:,.0f} tokens; {tokens:,.0f} read past it, "
                       "linear in tokens")
        if self._attention is not None:
            grid = self._attention[1]
            seqs = B / self.tp if self.layout.dp_attention else B
            if not bool(np.all(grid.measured(max(seqs, 1.0), max(S, 1.0)))):
                out.append(f"the attention table {where} measures up to {grid.b[-1]:,.0f} sequences and a context "
                           f"of {grid.s[-1]:,.0f}; {seqs:,.0f} at {S:,.0f} read past it, linear in each")
        if self._allreduce is not None:
            curve = self._allreduce[1]
            elements = tokens * float(self.architecture.hidden_size)
            if not bool(curve.measured(elements)):
                out.append(f"the all-reduce table {where} measures up to {curve.x[-1]:,.0f} elements; "
                           f"{elements:,.0f} read past it, linear in elements")
        return tuple(out)

    def measured(self) -> bool:
        """Whether every part is read from a table."""
        return not any(s.startswith(ROOFLINE) for s in self.sources().values())

    # --- the step ----------------------------------------------------------------------
    def experts_touched(self, B, T, F=nf):
        return self.step.experts_touched(B, T, F)

    def scaled(self, seconds):
        """A whole-model roofline time as one GPU's share (the roofline's split)."""
        return self.step.scaled(seconds)

    def component_times(self, B, T, S, F=nf) -> dict:
        """{part: seconds} of one GPU's share of the step (:data:`PARTS`; the
        collectives only on several GPUs)."""
        B, T, S = np.broadcast_arrays(np.asarray(B, dtype=float), np.asarray(T, dtype=float),
                                      np.asarray(S, dtype=float))
        roof = None
        if self._why or self._attention is not None:
            roof = self.step.component_times(B, T, S)
        tokens = B * T
        out = {}
        for part in ("dense", "ffn"):
            if part in self._why:
                out[part] = roof[part]
                continue
            total = 0.0 * tokens
            for count, share, curve, _, _ in self._gemms[part]:
                total = total + count * curve(tokens * share)
            if part == "ffn" and self._moe is not None:
                total = total + self._moe[0] * self._moe[1](tokens)
            out[part] = total
        if "attention" in self._why:
            out["attention"] = roof["attention"]
        else:
            count, grid = self._attention
            seqs = B / self.tp if self.layout.dp_attention else B
            one = self.step.component_times(B, np.ones_like(T), S)["attention"]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(one > 0, roof["attention"] / one, 1.0)
            out["attention"] = count * grid(np.maximum(seqs, 1.0), np.maximum(S, 1.0)) * ratio
        if self.tp > 1:
            if "communication" in self._why:
                out["communication"] = self.step.communication(B, T)
            else:
                count, curve = self._allreduce
                out["communication"] = count * curve(tokens * float(self.architecture.hidden_size))
        return out

    def time(self, B, T, S, F=nf):
        """Seconds of one GPU's share of the step."""
        return sum(self.component_times(B, T, S).values())

    def layer_time(self, B, T, S):
        """Seconds of one decoder layer of the target at B sequences of T
        positions (a MoE layer, for a MoE model): its projections, router,
        experts or MLP, attention kernel and all-reduces; what an MTP module
        of the target's shape runs at its own batch."""
        B = np.asarray(B, dtype=float)
        tokens = B * T
        per_layer = ("attention", "moe", "all")
        parts = self.component_times(B, T, S)
        a = self.architecture
        total = 0.0 * tokens
        for part in ("dense", "ffn"):
            if part in self._why:  # the roofline's whole part spread over its layers
                total = total + parts[part] / float(a.n_layers)
                continue
            for _, share, curve, g, _ in self._gemms[part]:
                if g.layers in per_layer:
                    total = total + curve(tokens * share)
        if self._moe is not None:
            total = total + self._moe[1](tokens)
        total = total + parts["attention"] / float(max(a.attention_layers, 1))
        return total + parts.get("communication", 0.0) / float(a.n_layers)

    def head_time(self, tokens):
        """Seconds of the output head over ``tokens`` positions (0 where not measured)."""
        for _, share, curve, g, _ in self._gemms["dense"]:
            if g.name == "lm_head":
                return curve(np.asarray(tokens, dtype=float) * share)
        return 0.0 * np.asarray(tokens, dtype=float)

    def draft_layers(self, B, positions, layers: int, moe: bool):
        """What a roofline-priced drafter's pass adds for its layers: their
        collectives by the roofline (as :meth:`speclib.core.layout.ParallelStep.draft_layers`)."""
        return self.step.draft_layers(B, positions, layers, moe)


class MeasuredDrafter:
    """A drafter preset's passes under a measured step: an MTP module of the
    target's own shape (``target`` names the model) runs the target's
    measured layer at its own batch (B sequences of one position a pass,
    against the context S) and the output head, ``layers`` layers a pass; any
    other drafter (EAGLE-3, DFlash, an MTP module of another shape) is priced
    by its roofline split over the GPUs, and :attr:`source` says which."""

    def __init__(self, drafter, target: MeasuredStepModel):
        self.inner = drafter
        self.target = target
        self.kind, self.name = drafter.kind, drafter.name
        self.max_gamma, self.acceptance = drafter.max_gamma, drafter.acceptance
        self.max_gamma_reason = drafter.max_gamma_reason
        preset = drafter.preset
        own = (preset.kind == "mtp" and preset.target is not None
               and preset.target.lower() in {target.model.name.lower(), *(x.lower() for x in target.model.aliases)})
        self.measured = own and not target._why.get("dense") and target.tables is not None
        self.source = (f"the target's measured layer x {preset.layers} at the drafter's batch ({target.tables.label})"
                       if self.measured else f"{ROOFLINE} (the drafter's own weights at its roofline)")

    def pass_time(self, B, S=0.0):
        preset = self.inner.preset
        if self.measured:
            return preset.layers * self.target.layer_time(B, 1.0, S) + self.target.head_time(B)
        return (self.target.scaled(self.inner.pass_time(B, S))
                + self.target.draft_layers(B, self.inner.positions, preset.layers, preset.step.n_routed > 0))

    def time(self, gamma, B, S=0.0, target=None, F=nf):
        draft = nf.dflash_draft_time if self.kind == "dflash" else nf.mtp_draft_time
        return draft(gamma, self.pass_time(B, S))

    def passes(self, gamma, F=nf):
        return self.inner.passes(gamma, F)
