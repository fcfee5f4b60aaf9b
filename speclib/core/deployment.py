"""A deployment: everything a speculative step is priced on, as one
immutable value checked when it is made.

:class:`Deployment` groups the model and the chip, the tensor-parallel
width, the serving engine, how a step is timed (``step_time``) and composed
(``roofline``), the drafter, the cost model that may stand in for the model
and chip, the routing and the memory reserve. :func:`speclib.speedup`,
:func:`speclib.optimal_gamma`, :func:`speclib.throughput`,
:func:`speclib.schedule` and :func:`speclib.tools.schedule.profile` take one
as ``deployment=`` (``model=`` and ``hardware=`` are a shorthand for the
default deployment of that model and chip), and :meth:`Deployment.pricing`
is the one place a step's pricing is built (the rules are in
:mod:`speclib.core.speculation`'s notes).

Every field is checked by the checker its option has always had, and a
combination that cannot be priced is refused at construction with one
``ValueError`` naming the parameter::

    Deployment("qwen3.6", "B200", drafter="qwen3.6-mtp", roofline="aggregate")
    Deployment("deepseek-v3", "H200", tp=8, step_time="calibrated")
    Deployment("llama-3.1-8b", "H100", engine="SGLang", step_time="measured")
    Deployment(cost_model=speclib.core.parallel.expert_parallel_cost_model(G=8))
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import KW_ONLY, dataclass

import numpy as np

from .._checks import checked_array, checked_choice, checked_int
from ..formulas import numpy_functions as nf
from ..presets import Drafter, KV_BYTES, PRECISIONS, drafter as drafter_preset, interconnect as _interconnect, resolve
from ..presets.architecture import MXFP4_BYTES, WEIGHT_BYTES
from . import calibrated as _cal
from . import capacity as _capacity
from . import cost as _cost
from . import drafters as _draft
from . import moe as _moe
from . import overlap as _overlap
from . import step as _step
from ..silicon import step as _measured
from .layout import Layout, ParallelStep
from .pricing import LedgerPricing, StepPricing, held_batches


#: The step time read from measured kernel tables (:mod:`speclib.silicon.step`).
MEASURED = "measured"
#: Every ``step_time`` a deployment takes by name.
STEP_TIMES = _cal.STEP_TIMES + (MEASURED,)


def check_step_time(value):
    """``"roofline"``, ``"calibrated"``, ``"measured"`` or a
    :class:`~speclib.core.calibrated.Calibration`."""
    if isinstance(value, str) and value == MEASURED:
        return value
    if isinstance(value, _cal.Calibration):
        return value
    return checked_choice("step_time", value, STEP_TIMES)


@dataclass(frozen=True, eq=True)
class Deployment:
    """What a speculative step is priced on (see the module notes).

    ``model``, ``hardware``: presets or their names (None: DeepSeek-V4-Flash
    on one B200), resolved to presets; both stay None with ``cost_model``.
    ``tp``: GPUs the model is split over, evenly (the paper's ledger prices
    one GPU's ratios: a split leaves the weights' and experts' as they were,
    but attention's heads are split while an MLA latent is read whole by
    every GPU, so its cache read weighs tp times more against its FLOPs,
    :func:`speclib.core.attention.cache_copies`; the whole step in seconds
    prices one GPU's share; the calibrated step adds its fixed costs once). ``engine``: the
    serving engine whose per-step costs a calibrated step adds.
    ``step_time``: ``"roofline"`` (the lower bound), ``"calibrated"`` (the
    roofline calibrated on measured decoding, :mod:`speclib.core.calibrated`)
    or a :class:`~speclib.core.calibrated.Calibration` (one's own fit), or
    ``"measured"`` (each part read from the kernel tables measured for the
    chip and ``engine``, the roofline where none measures it:
    :mod:`speclib.silicon.step`).
    ``roofline``: ``"per-component"`` or ``"aggregate"``, how a step's
    components compose. ``drafter``: a drafter preset (name or
    :class:`~speclib.presets.Drafter`) priced by its own roofline, or None
    for the paper's constant ``c_draft`` (one number, 0.1 unless given; the
    functions that broadcast take an array of them as their own
    ``c_draft``). ``routing``: a measured expert popularity in place of
    uniform routing (:func:`speclib.core.moe.experts_activated`).
    ``query_bytes``: count the query bytes in the paper's ledger.
    ``cost_model``: a per-layer ledger in place of the model's (e.g.
    :func:`speclib.core.parallel.expert_parallel_cost_model`).
    ``reserve``: the fraction of each GPU's HBM a schedule's memory check
    keeps free (None: no check). ``rollback``: how a hybrid model's
    linear-attention state is rolled back past a rejected draft
    (:data:`speclib.core.step.ROLLBACKS`): by default a snapshot per verified
    position, as vLLM and SGLang do (:data:`speclib.core.step.DEFAULT_ROLLBACK`);
    ``"none"`` leaves it out, as the sequel's simulator does.
    ``state_write``: each step writes back the linear-attention state it
    reads (2 sigma moved per sequence and layer); False leaves the write out,
    as the sequel's simulator does. ``attention``:
    how DeepSeek-V4's attention is priced and held
    (:data:`speclib.core.cost.ATTENTIONS`): ``"served"``, compressed as the
    published config serves it (the default of every entry point,
    :data:`speclib.core.cost.DEFAULT_ATTENTION`), or ``"paper"``, every layer
    as MLA over the whole context (the paper's pricing, named where the
    paper's figures are reproduced), alike in the ledger, the whole step, the
    calibrated step and the memory :meth:`max_batch` counts; with a
    ``cost_model``, the cost model's own (the repr always says which).
    ``comm_latency``: with an expert-parallel
    ``cost_model`` (:func:`speclib.core.parallel.expert_parallel_cost_model`),
    price its all-to-all with its interconnect's latency (True) or by
    bandwidth alone (False); None keeps the cost model's own choice.
    ``ep`` and ``dp_attention``: how the engine splits the model over the
    ``tp`` GPUs (:class:`speclib.core.layout.Layout`: experts whole over
    ``ep`` GPUs, attention by sequence); the default is plain tensor
    parallelism. ``weights`` and ``kv_cache``: the precision of the
    checkpoint's decoder weights (``"bf16"``, ``"fp8"``, ``"fp4"``) and of
    the KV cache (``"bf16"``, ``"fp8"``) as served (None: the preset's own;
    :meth:`speclib.presets.Model.quantised`); ``activations``: the precision
    the decoder GEMMs' activations are served in (None: the preset's own,
    by default as narrow as each GEMM's weights; ``"fp8"`` with fp4 experts
    is W4A8, whose experts run at the fp8 rate: the ridge is the fp8 one,
    :func:`speclib.presets.architecture.gemm_precision`);
    ``drafter_weights``: the precision of the ``drafter`` preset's weights
    (None: the preset's own; :meth:`speclib.presets.Drafter.quantised`).
    :meth:`precision_words` says all of it as served. ``spec_overlap``: whether the
    engine's speculative path overlaps scheduling with the GPU as its plain
    path does (True, as the current releases of all three engines do for MTP
    and EAGLE-3), or not, so that a speculative step pays the host time a
    plain step hides (:mod:`speclib.core.overlap`).
    ``interconnect``: the network joining the ``tp`` GPUs, an interconnect
    preset's name (None: the chip's own, :func:`speclib.presets.default_interconnect`;
    ``"NVLink5-NVL72"`` puts B200s in a 72-GPU NVLink domain as GB200's rack
    does, where an HGX B200 board's ``"NVLink5"`` joins 8). Its domain bounds
    ``tp``, and the whole step's collectives are priced over it.

    A drafter preset, the aggregate rule, a hybrid model, a calibrated step
    or a routing price the whole model's step (:attr:`whole_step`).
    """

    model: object = None
    hardware: object = None
    _: KW_ONLY
    tp: int = 1
    engine: str = _cal.DEFAULT_ENGINE
    step_time: object = "roofline"
    roofline: str = "per-component"
    drafter: object = None
    c_draft: float | None = None
    routing: tuple | None = None
    query_bytes: bool = False
    cost_model: object = None
    reserve: float | None = _capacity.DEFAULT_RESERVE
    rollback: str = _step.DEFAULT_ROLLBACK
    state_write: bool = True
    attention: str | None = None
    comm_latency: bool | None = None
    ep: int = 1
    dp_attention: bool = False
    weights: str | None = None
    kv_cache: str | None = None
    spec_overlap: bool = True
    activations: str | None = None
    drafter_weights: str | None = None
    interconnect: object = None

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 - frozen
        put("roofline", _step.check_roofline(self.roofline))
        put("spec_overlap", _overlap.check_spec_overlap(self.spec_overlap))
        put("rollback", _step.check_rollback(self.rollback))
        put("state_write", _step.check_state_write(self.state_write))
        if self.attention is None:  # the default of every entry point, or the cost model's own
            put("attention", _cost.DEFAULT_ATTENTION if self.cost_model is None else _own_attention(self.cost_model))
        put("attention", _cost.check_attention(self.attention))
        put("step_time", check_step_time(self.step_time))
        put("tp", checked_int("tp", self.tp, lo=1, hi=_capacity.MAX_TP))
        put("engine", checked_choice("engine", self.engine, _cal.ENGINES))
        if not isinstance(self.query_bytes, (bool, np.bool_)):
            raise ValueError(f"query_bytes must be True or False; got {self.query_bytes!r}")
        put("query_bytes", bool(self.query_bytes))
        if self.reserve is not None:
            put("reserve", _capacity.check_reserve(self.reserve))
        if self.c_draft is not None:
            c = _cost.check_draft_cost(self.c_draft)
            if c.ndim:
                raise ValueError("c_draft must be one number in [0, inf) in a Deployment (speedup and optimal_gamma "
                                 f"take an array of drafter costs as their own c_draft=); got {self.c_draft!r}")
            put("c_draft", float(c))
        if self.drafter is not None:
            if not isinstance(self.drafter, (str, Drafter)):
                raise ValueError(f"drafter must be a drafter preset name or a speclib.presets.Drafter; "
                                 f"got {self.drafter!r}")
            put("drafter", drafter_preset(self.drafter))
            if self.c_draft is not None:
                raise ValueError("give either c_draft (the paper's constant drafter cost) or drafter (a drafter "
                                 "priced by its own roofline), not both")
        if self.comm_latency is not None:
            if not isinstance(self.comm_latency, (bool, np.bool_)):
                raise ValueError(f"comm_latency must be True, False or None; got {self.comm_latency!r}")
            if not hasattr(self.cost_model, "with_latency"):
                raise ValueError("comm_latency is an option of an expert-parallel cost model "
                                 "(cost_model=speclib.core.parallel.expert_parallel_cost_model(...)); this deployment "
                                 "has none")
            put("comm_latency", bool(self.comm_latency))
            put("cost_model", self.cost_model.with_latency(self.comm_latency))
        for name in ("weights", "kv_cache", "activations", "drafter_weights"):
            if getattr(self, name) is not None:
                put(name, checked_choice(name, getattr(self, name),
                                         tuple(KV_BYTES) if name == "kv_cache" else PRECISIONS))
        if self.drafter_weights is not None and self.drafter is None:
            raise ValueError("drafter_weights is the precision of a drafter preset's weights; this deployment has "
                             "no drafter (give drafter=, a drafter preset)")
        put("layout", Layout(self.tp, self.ep, self.dp_attention))
        put("ep", self.layout.ep)
        put("dp_attention", self.layout.dp_attention)
        if self.cost_model is not None:
            self._check_cost_model()
        else:
            model, hardware = resolve(self.model, self.hardware)
            model = model.quantised(self.weights, self.kv_cache, hardware.vendor, activations=self.activations)
            put("model", model)
            put("hardware", hardware)
            if self.drafter_weights is not None:
                put("drafter", self.drafter.quantised(self.drafter_weights, hardware.vendor))
            self.layout.check(model.step_architecture())
            if self.interconnect is not None:
                net = _interconnect(self.interconnect)  # refused, naming it, if no preset
                put("interconnect", net.name if isinstance(self.interconnect, str) else net)
            _check_domain(self.tp, hardware, self.interconnect)
            if self.routing is not None:
                if not model.ffn.is_moe:
                    raise ValueError(f"routing is for mixture-of-experts models; {model.name} is dense")
                _moe.check_routing(self.routing, model.ffn.n_routed, model.ffn.top_k)
                put("routing", tuple(np.asarray(self.routing, dtype=float).tolist()))
            if self.query_bytes and self.whole_step:
                raise ValueError("query_bytes is an option of the paper's per-layer ledger; the whole-model step "
                                 "leaves the query bytes out, as the sequel does")
            if self.attention != "paper":
                _cost.served_attention_constants(model, hardware)  # its compression ratios, checked now
        # What only the pricing's parts can check: a chip or an engine without
        # a calibration, a ledger without a layer count. (The pricing itself
        # is built on first use.)
        if self.step_time == MEASURED and self.cost_model is not None:
            raise ValueError("step_time='measured' prices the whole model's step from kernel tables; it needs the "
                             "model and hardware, not a cost_model")
        calibration = _cal.calibration_of(self.step_time)
        if calibration is not None and self.cost_model is not None:
            _cal.CalibratedLedger(self.cost_model, engine=self.engine, calibration=calibration)
        elif calibration is not None:
            calibration.constants(self.hardware, self.engine)

    def _check_cost_model(self):
        if self.model is not None or self.hardware is not None:
            raise ValueError("give either cost_model or model/hardware, not both (cost_model already fixes the model "
                             "and chip)")
        if not all(hasattr(self.cost_model, m) for m in ("decode", "verify")):
            raise ValueError(f"cost_model must have decode(B, S) and verify(B, width, S) methods; "
                             f"got {self.cost_model!r}")
        if self.drafter is not None or self.roofline != "per-component":
            raise ValueError("cost_model prices the paper's per-layer ledger; drafter= and roofline='aggregate' "
                             "price the whole model's step")
        if self.routing is not None or self.tp != 1 or self.weights or self.kv_cache or self.activations:
            raise ValueError("cost_model prices the paper's per-layer ledger on one GPU; tp=, routing=, weights=, "
                             "kv_cache= and activations= price the whole model's step")
        if self.query_bytes:
            raise ValueError("query_bytes must be False with cost_model (the cost model already fixes whether the "
                             "query bytes count)")
        own = _own_attention(self.cost_model)
        if self.attention != own:
            raise ValueError(f"attention must be {own!r} with cost_model (the cost model already fixes how it prices "
                             "attention: leave attention out)")

    # --- what it prices ---------------------------------------------------------------
    @property
    def whole_step(self) -> bool:
        """Whether a step is priced whole, in seconds (a
        :class:`~speclib.core.pricing.StepPricing`), rather than by the
        paper's one-layer ledger."""
        if self.cost_model is not None:
            return False
        return (self.drafter is not None or self.roofline != "per-component" or self.model.is_hybrid
                or self.step_time != "roofline" or self.routing is not None or not self.layout.plain
                or not self.spec_overlap)

    def pricing(self, c_draft=None, *, whole_step: bool = False):
        """How a speculative step of this deployment is priced: a
        :class:`~speclib.core.pricing.LedgerPricing` (the paper's) or a
        :class:`~speclib.core.pricing.StepPricing` (the whole step in
        seconds). ``c_draft``: drafter costs (a number or an array) in place
        of the deployment's, which must then be None. ``whole_step``: the
        whole step in seconds even where the ledger would do (what
        :func:`speclib.throughput` prices)."""
        if c_draft is not None or whole_step:
            return self._price(c_draft, whole_step=whole_step)
        priced = self.__dict__.get("_priced")
        if priced is None:  # built once per deployment (a value: it cannot change)
            priced = self._price(None, whole_step=False)
            object.__setattr__(self, "_priced", priced)
        return priced

    def _price(self, c_draft, *, whole_step):
        if c_draft is not None and self.c_draft is not None:
            raise ValueError("c_draft must be given once: in the deployment or in the call, not both")
        c = self.c_draft if c_draft is None else c_draft
        if self.cost_model is not None:
            if whole_step:
                raise ValueError("cost_model prices the paper's per-layer ledger; throughput prices the whole "
                                 "model's step in seconds (give the model and hardware instead)")
            cost_model, calibration = self.cost_model, _cal.calibration_of(self.step_time)
            if calibration is not None:  # the ledger as a whole step in seconds, plus its costs
                cost_model = _cal.CalibratedLedger(cost_model, engine=self.engine, calibration=calibration)
            return LedgerPricing(cost_model, _draft.resolve_drafter(None, c, None))
        m, hw = self.model, self.hardware
        if not (whole_step or self.whole_step):
            return LedgerPricing(_cost.cost_model(m, hw, self.query_bytes, self.attention, layout=self.layout),
                                 _draft.resolve_drafter(None, c, hw))
        if self.query_bytes:
            raise ValueError("query_bytes is an option of the paper's per-layer ledger; throughput prices the "
                             "whole model's step, which leaves the query bytes out")
        base = _step.step_model(m, hw, roofline=self.roofline, routing=self.routing, rollback=self.rollback,
                                state_write=self.state_write, attention=self.attention)
        calibration = _cal.calibration_of(self.step_time)
        if calibration is not None:
            target = _cal.CalibratedStepModel(self.parallel_step(), hw, engine=self.engine, calibration=calibration)
        elif self.step_time == MEASURED:
            target = self.measured_step()
        else:
            target = base if self.tp == 1 else self.parallel_step()
        drafting = _draft.resolve_drafter(self.drafter, c, hw, roofline=self.roofline)
        if self.step_time == MEASURED and isinstance(drafting, _draft.PricedDrafter):
            drafting = _measured.MeasuredDrafter(drafting, target)
        elif target is not base and isinstance(drafting, _draft.PricedDrafter):
            drafting = _cal.ScaledDrafter(drafting, target)
        return StepPricing(target, drafting, exposed_host=None if self.spec_overlap else _overlap.host_time,
                           holds=self._holds if self.memory_checked else None)

    def measured_step(self):
        """One GPU's share of the step priced from the measured kernel tables
        of this chip and engine (:class:`speclib.silicon.step.MeasuredStepModel`,
        whatever ``step_time`` says; its :meth:`~speclib.silicon.step.MeasuredStepModel.sources`
        name each part's table or the roofline)."""
        if self.cost_model is not None:
            raise ValueError("step_time='measured' prices the whole model's step; it needs the model and hardware, "
                             "not a cost_model")
        cached = self.__dict__.get("_measured")
        if cached is None:
            cached = _measured.MeasuredStepModel(self.parallel_step(), self.model, engine=self.engine)
            object.__setattr__(self, "_measured", cached)
        return cached

    def parallel_step(self) -> ParallelStep:
        """One GPU's share of the whole model's step under this deployment's
        layout, at the roofline (its collectives included): what the
        calibrated step scales and the prefill of arriving requests is priced on."""
        if self.cost_model is not None:
            raise ValueError("cost_model prices the paper's per-layer ledger; the whole model's step needs the "
                             "model and hardware")
        cached = self.__dict__.get("_parallel")
        if cached is None:
            base = _step.step_model(self.model, self.hardware, roofline=self.roofline, routing=self.routing,
                                    rollback=self.rollback, state_write=self.state_write, attention=self.attention)
            cached = ParallelStep(base, self.layout, None if self.interconnect is None
                                  else _interconnect(self.interconnect))
            object.__setattr__(self, "_parallel", cached)
        return cached

    # --- what it holds ------------------------------------------------------------------
    def memory(self, context, gamma=0, *, reserve=None):
        """What one GPU holds at ``context`` cached tokens with ``gamma``
        draft positions per sequence, by part and rule
        (:class:`speclib.core.capacity.DeploymentMemory`); ``context`` is one number."""
        return _capacity.deployment_memory(self, context, gamma, reserve=reserve)

    def max_batch(self, context, gamma=0, *, reserve=None) -> int:
        """The largest batch of sequences this deployment holds at
        ``context`` cached tokens each while drafting ``gamma`` tokens a step:
        weights by its layout, the caches it prices (MLA latents whole on
        every GPU under plain tensor parallelism, split under data-parallel
        attention), the draft positions' cache slots and rollback states, the
        drafter's weights and cache, with ``reserve`` (None: the
        deployment's) of each GPU's HBM kept free. 0 when the weights alone
        do not fit. Broadcasts over ``context`` and ``gamma``."""
        return _capacity.deployment_max_batch(self, context, gamma, reserve=reserve)

    # --- what it runs -------------------------------------------------------------------
    @property
    def memory_checked(self) -> bool:
        """Whether a batch is bounded by what memory holds (:meth:`running`):
        a model on a chip with a ``reserve``. ``reserve=None`` is no memory
        check: every sequence asked for runs at once, as the paper's and the
        sequel's figures assume; a ``cost_model`` holds no memory to count."""
        return self.reserve is not None and self.cost_model is None

    def running(self, batch, context, gamma=0) -> tuple:
        """(running, queued): of ``batch`` sequences asked for at once (a
        closed loop's concurrency) at ``context`` cached tokens each while
        drafting ``gamma`` tokens a step, those this deployment decodes at
        once, no more than memory holds (:meth:`max_batch`, whose draft slots
        make room for fewer sequences as ``gamma`` grows), and those that
        wait in the queue meanwhile (their wait is time to a first token, not
        time per output token). Without a memory check
        (:attr:`memory_checked`) every sequence runs. Float arrays broadcast
        over the three; running is 0 where not one sequence fits. The one
        place a batch is bounded by memory: :func:`speclib.tpot`,
        :func:`speclib.speedup`, :func:`speclib.optimal_gamma`,
        :func:`speclib.throughput` and the ``speclib`` command price the
        running batch, by the whole step (:class:`~speclib.core.pricing.StepPricing`)."""
        B = checked_array("batch", batch, lo=0, lo_open=True)
        S = _capacity.check_context(context)
        g = checked_array("gamma", gamma, lo=0, integer=True)
        held = self._running(B, S, g)
        return held, np.broadcast_to(B, held.shape) - held

    def extrapolates(self, batch, positions=1.0, context=4096.0) -> tuple:
        """One line for each thing pricing B = ``batch`` sequences of
        ``positions`` verified positions each over ``context`` extrapolates
        (arrays: the range): under a calibrated step, beyond the runs its fit
        has seen (:meth:`speclib.core.calibrated.Calibration.notes`, at the
        largest batch); under a measured step, past the last point a kernel
        table measures (:meth:`speclib.silicon.step.MeasuredStepModel.beyond_tables`);
        nothing under the roofline, which holds at any size."""
        calibration = _cal.calibration_of(self.step_time)
        if calibration is not None:
            return tuple(calibration.notes(self.model, self.hardware, self.engine,
                                           float(np.max(np.asarray(batch, dtype=float)))))
        if self.step_time == MEASURED:
            return self.measured_step().beyond_tables(batch, positions, context)
        return ()

    def interconnect_words(self) -> str:
        """The network joining the ``tp`` GPUs in words, where it was named
        (" over NVLink5-NVL72"); "" where it is the chip's own."""
        net = self.interconnect
        return "" if net is None else f" over {getattr(net, 'name', net)}"

    def precision_words(self) -> str:
        """The precision this deployment serves, in words, for a header:
        the weights (the experts' where they differ), the activations where
        they are not the weights' own, the KV cache and the drafter's
        weights, and which of them were asked for rather than the
        checkpoint's own: "weights fp8, KV cache bf16 (the checkpoint's)".
        "" with a ``cost_model`` (it names no checkpoint)."""
        if self.cost_model is not None:
            return ""
        asked = [name for name in ("weights", "activations", "kv_cache", "drafter_weights")
                 if getattr(self, name) is not None]
        return precision_words(self.model, self.drafter, asked)

    def check_holds(self, context, gamma=0):
        """A ``ValueError`` naming the parameter where this deployment, with
        its memory check, holds not one sequence at ``context`` (one number)
        while drafting ``gamma`` tokens: ``context`` where no sequence fits
        even without a draft, ``gamma`` where the draft's cache slots and
        states leave no room for one; nothing otherwise."""
        if not self.memory_checked:
            return
        S = float(_capacity.check_context(context))
        g = int(checked_int("gamma", gamma, lo=0))
        where = f"one {self.hardware.name}" if self.tp == 1 else f"{self.tp} x {self.hardware.name}"
        kept = f"with {self.reserve:.0%} of HBM kept free"
        if self.max_batch(S) < 1:
            raise ValueError(f"context: {where} holds not one sequence of {S:,.0f} tokens of {self.model.name} "
                             f"{kept} (give more GPUs with tp, a shorter context, or reserve=None to price every "
                             "sequence without a memory check)")
        if g and self.max_batch(S, g) < 1:
            raise ValueError(f"gamma: a draft of {g} tokens does not fit on {where} at {S:,.0f} tokens of context "
                             f"{kept}: its cache slots leave room for no sequence ({int(self.max_batch(S)):,} without "
                             "a draft)")

    def _running(self, B, S, g):
        """:meth:`running`'s first array, for checked arrays."""
        if not self.memory_checked:
            return np.broadcast_arrays(np.asarray(B, dtype=float), S, g)[0].astype(float)
        return nf.running_batch(np.asarray(B, dtype=float), held_batches(self._holds, S, g))

    def _holds(self, S, g):
        """:meth:`max_batch` at contexts ``S`` and draft lengths ``g`` (checked
        arrays), as floats, kept per grid: a calibration's draws
        (:meth:`replace` with another ``step_time``) count it once."""
        memo = self.__dict__.get("_held_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_held_memo", memo)
        key = (S.shape, S.tobytes(), g.shape, g.tobytes())
        if key not in memo:
            if len(memo) >= 64:
                memo.clear()
            memo[key] = np.asarray(self.max_batch(S, g), dtype=float)
        return memo[key]

    # --- as a value ---------------------------------------------------------------------
    def replace(self, **changes) -> "Deployment":
        """A copy with ``changes`` (checked again)."""
        copy = dataclasses.replace(self, **changes)
        if set(changes) <= {"step_time"} and "_held_memo" in self.__dict__:  # memory does not hang on a step's clock
            object.__setattr__(copy, "_held_memo", self.__dict__["_held_memo"])
        return copy

    def __hash__(self):
        return hash(tuple(_hashable(getattr(self, f.name)) for f in dataclasses.fields(self)))

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("model", "hardware", "drafter") and value is not None:
                parts.append(f"{f.name}={value.name!r}")
            elif f.name == "routing" and value is not None:
                parts.append(f"routing=<{len(value)} shares>")
            elif f.name in ("model", "hardware") or (_hashable(value) == _hashable(f.default)
                                                     and f.name != "attention"):
                continue
            else:
                parts.append(f"{f.name}={value!r}")
        return f"Deployment({', '.join(parts)})"


def precision_words(model, drafter=None, asked=()) -> str:
    """What ``model`` (and ``drafter``) serve in, in words
    (:meth:`Deployment.precision_words`); ``asked``: the fields among
    ``weights``, ``activations``, ``kv_cache`` and ``drafter_weights`` set
    rather than the checkpoint's own."""
    m = model
    proj, ffn = _format(m.proj_precision, m.proj_weight_bytes), _format(m.ffn.precision, m.ffn.weight_bytes)
    parts = [f"weights {proj}" + ("" if ffn == proj else f" (experts {ffn})")]
    if m.activations is not None:
        gemm = m.ffn_gemm_precision
        parts.append(f"activations {m.activations}" + (f" (experts at the {gemm} rate)"
                                                       if gemm != m.ffn.precision else ""))
    kv = {b: name for name, b in KV_BYTES.items()}.get(float(m.attention.kv_bytes), f"{m.attention.kv_bytes:g} B")
    parts.append(f"KV cache {kv}")
    if drafter is not None:
        parts.append(f"drafter {drafter.precision}")
    labels = {"weights": "weights", "activations": "activations", "kv_cache": "KV cache", "drafter_weights": "drafter"}
    said = [labels[name] for name in labels if name in asked]
    whose = ("the checkpoint's" if not said else "as asked" if len(said) == len(parts)
             else f"{', '.join(said)} as asked, the rest the checkpoint's")
    return f"{', '.join(parts)} ({whose})"


def _format(precision: str, bytes_per_weight: float) -> str:
    """A weight format in words: its precision, with its bytes where they are
    not that precision's own (a 4-bit AWQ checkpoint multiplied in bf16)."""
    usual = {WEIGHT_BYTES[precision], MXFP4_BYTES, 0.53} if precision == "fp4" else {WEIGHT_BYTES[precision]}
    return precision if float(bytes_per_weight) in usual else f"{precision} ({bytes_per_weight:g} B a weight)"


def _check_domain(tp: int, hardware, interconnect=None) -> None:
    """Refuse a ``tp`` larger than the scale-up domain of ``interconnect``
    (None: the chip's own; 8 GPUs on an HGX board's NVLink, 72 in an NVL72
    rack). The step's all-reduces are priced on one flat network
    (:class:`speclib.core.layout.ParallelStep`):
    a group that spans nodes would run them over the scale-out link, whose
    multi-node all-reduce latency no preset measures, so it is refused rather
    than priced as if it were one node (engines split such a group by
    pipeline or data parallelism across nodes instead)."""
    name = interconnect if interconnect is not None else hardware.interconnect
    if tp == 1 or name is None:
        return
    net = _interconnect(name)
    domain = net.domain_size
    if domain is not None and tp > domain:
        whose = f"its {net.name}" if interconnect is None else f"over {net.name}, which"
        raise ValueError(f"tp must be at most {domain} on {hardware.name} ({whose} joins {domain} GPUs: a "
                         f"tensor-parallel group across nodes, its all-reduces over the scale-out link, is not "
                         f"priced); got tp={tp}")


def _own_attention(cost_model) -> str:
    """How a cost model prices DeepSeek-V4's attention (one that does not say:
    as the paper's ledger does)."""
    return getattr(cost_model, "attention_kind", "paper")


def _hashable(value):
    if isinstance(value, _cal.Calibration):  # its constants are dicts
        return ("Calibration", json.dumps(value.to_json(), sort_keys=True))
    return value


def deployment_of(deployment=None, model=None, hardware=None) -> Deployment:
    """The deployment a call prices with: ``deployment``, or the default
    one of ``model`` on ``hardware`` (the shorthand); not both."""
    if deployment is None:
        return Deployment(model, hardware)
    if not isinstance(deployment, Deployment):
        raise ValueError(f"deployment must be a speclib.Deployment; got {deployment!r}")
    if model is not None or hardware is not None:
        raise ValueError("deployment already names the model and hardware: give either deployment= or "
                         "model=/hardware=, not both")
    return deployment


def refuse_unheld(dep, priced, B, S, gamma=0.0):
    """A call at one point (``B``, ``S`` and ``gamma`` checked numbers) that
    a deployment with a memory check, priced whole, cannot serve: a
    ``ValueError`` naming ``context`` (not one sequence fits) or ``gamma``
    (the draft's slots leave room for none)
    (:meth:`~speclib.core.deployment.Deployment.check_holds`). An array's
    result says it by NaN or 0 instead."""
    if getattr(priced, "holds", None) is not None and all(np.ndim(a) == 0 for a in (B, S, gamma)):
        dep.check_holds(float(S), int(gamma))
