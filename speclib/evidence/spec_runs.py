"""The measured speculative runs a fitted step is held against, each as the
fit prices it (:class:`SpecRun`): the published runs of
``data/engine-speculation`` (:mod:`speclib.evidence.engines`), and
DeepSeek-R1 served with and without MTP by InferenceX
(:func:`speclib.evidence.decode_runs.mtp_runs`), each MTP run beside the run
of the same deployment and workload without it.

An InferenceX pair's speed-up is the ratio of its two arms' TPOTs at the
same concurrency. The two arms often come from different runs on different
dates (and so, possibly, different engine builds): a pair from one run is
used as it is; otherwise each arm is the median of its runs over the dates,
and the pair's ``assumed`` says so. InferenceX reports no acceptance, so
each configuration's is fitted at its smallest concurrency
(:func:`alpha_fitted`), and the draft length is the one its launch script
sets (the data file's ``assumptions``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..core import acceptance as _acc
from ..presets import resolve
from speclib.evidence import decode_runs as _dec
from speclib.evidence import engines as _eng

#: Context assumed where a source gives none (tokens), and the drafter's
#: share of a plain step where the data give none (one layer and the head).
DEFAULT_CONTEXT = 1500.0
DEFAULT_DRAFT_SHARE = 0.05
#: Acceptance assumed where a source reports none (labelled in each run).
ASSUMED_ALPHA = 0.7
#: Drafters with no model to run (no passes).
NO_PASS_DRAFTERS = ("ngram",)
#: Drafters that draft every position in one pass.
ONE_PASS_DRAFTERS = ("p-eagle", "dflash")


@dataclass(frozen=True)
class SpecRun:
    """A measured speculative run, as the fit uses it. ``points``: (batch,
    gamma, value) with ``value`` a speed-up (``quantity="speedup"``) or a
    throughput (``"throughput"``: only ratios between draft lengths at one
    batch are used); ``accept``: committed tokens per verify by gamma where
    the source prints them, else from ``alpha``."""

    id: str
    label: str
    url: str
    engine: str
    model: str
    chip: str
    gpus: int
    expert_parallel: bool
    context: float
    alpha: float
    accept: dict
    draft_share: float
    drafter: str
    verify_tokens: int
    quantity: str
    points: tuple
    assumed: str
    acceptance_reported: bool = True
    #: (prompt, output) tokens per request where the source states both and
    #: the prefill runs on the decoding GPUs (not disaggregated): the
    #: measured throughput or latency then includes the arriving requests'
    #: prefill, which speculation does not speed up
    prefill_lengths: tuple = ()
    #: the model's family (:attr:`speclib.presets.Model.family`) and the
    #: source the run was published in: the groups held out together
    family: str = ""
    source: str = ""
    #: the source's bibliography key (references.bib), where it has one
    cite: str = ""
    #: committed tokens per verify where the source prints them per point: {(batch, gamma): N}
    accept_at: dict = dataclasses.field(default_factory=dict)
    #: sequential drafter passes per step where the source (or the engine's
    #: code it cites) states them; None: from the drafter's kind
    passes_per_step: float = None
    #: how the engine split the model over the run's GPUs and the precisions
    #: it served (:class:`speclib.core.deployment.Deployment`'s fields; the
    #: defaults: plain tensor parallelism over ``gpus``, the preset's own)
    ep: int = 1
    dp_attention: bool = False
    weights: str = None
    kv_cache: str = None
    #: each arm's measured TPOT (s) by batch where the source gives both:
    #: {batch: (without speculation, with it)}
    tpot_at: dict = dataclasses.field(default_factory=dict)

    def committed(self, gamma, batch=None) -> float:
        if batch is not None and (int(batch), int(gamma)) in self.accept_at:
            return float(self.accept_at[int(batch), int(gamma)])
        if int(gamma) in self.accept:
            return float(self.accept[int(gamma)])
        return float(_acc.committed_numeric(np.asarray(self.alpha), np.asarray(float(gamma))))

    def width(self, gamma) -> float:
        """Positions verified per sequence."""
        return float(self.verify_tokens) if self.verify_tokens else float(gamma) + 1.0

    def passes(self, gamma) -> float:
        if self.passes_per_step is not None:
            return float(self.passes_per_step) if gamma else 0.0
        kind = self.drafter.lower()
        if kind.startswith(NO_PASS_DRAFTERS):
            return 0.0
        if kind.startswith(ONE_PASS_DRAFTERS):
            return 1.0
        return float(gamma)

    @property
    def batches(self) -> tuple:
        return tuple(sorted({int(b) for b, _, _ in self.points}))


def _from_measurements(r: _eng.EngineRun):
    if not r.batch_reported:
        return None  # the batch is not known: shown, not fitted
    if "speedup" in r.measured:
        values = r.measured["speedup"]
        batches = r.batches if len(r.batches) == len(values) else r.batches * len(values)
        points = tuple((int(b), int(r.gamma), float(v)) for b, v in zip(batches, values))
        quantity = "speedup"
    else:
        thr = r.measured["throughput"]
        points = tuple((int(b), int(g), float(thr[i][j])) for i, b in enumerate(r.batches)
                       for j, g in enumerate(r.gammas))
        quantity = "throughput"
    accept = {}
    if "accept_length" in r.acceptance:
        accept = {int(r.gamma): float(r.acceptance["accept_length"])}
    drafter = "mtp" if "MTP" in r.label else "eagle"
    w = r.workload
    # the expert-parallel runs (LMSYS) prefill on other nodes (disaggregated, as their source states)
    lengths = ((float(w["input"]), float(w["output"])) if w.get("input") and w.get("output")
               and not r.expert_parallel and "disaggregat" not in str(r.deployment.get("what", "")) else ())
    return SpecRun(id=r.id, label=r.label, url=r.url, engine=r.engine, model=r.model, chip=r.hardware, gpus=r.gpus,
                   expert_parallel=r.expert_parallel, context=r.context, alpha=r.alpha, accept=accept,
                   draft_share=r.c_draft, drafter=drafter, verify_tokens=0, quantity=quantity, points=points,
                   assumed=r.assumed, acceptance_reported=r.acceptance_reported, prefill_lengths=lengths,
                   family=resolve(r.model, None)[0].family, source=source_of(r.url), cite=r.source)


def _from_sweep(s: _eng.SweepRun):
    preset = s.model.get("preset")
    if not preset:
        return None  # no preset to price it with
    acc = s.acceptance
    accept, alpha = {}, ASSUMED_ALPHA
    if isinstance(acc.get("accept_length"), dict):
        accept = {int(k): float(v) for k, v in acc["accept_length"].items()}
    if "alpha" in acc:
        alpha = float(acc["alpha"])
    verify = int(s.drafter.get("verify_tokens") or 0)
    gammas = {int(g) for g in s.gamma}
    if isinstance(acc.get("accept_length"), (int, float)):
        if verify or len(gammas) > 1:  # a tree or several depths: the length is per verify of this run
            accept = {g: float(acc["accept_length"]) for g in gammas}
        else:
            alpha = _eng.alpha_from_accept_length(float(acc["accept_length"]), next(iter(gammas)))
    w = s.workload
    context = float(w["context"]) if w.get("context") else (
        w["input"] + (w["output"] - 1) / 2 if w.get("input") and w.get("output") else DEFAULT_CONTEXT)
    if s.quantity == "speedup":
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.spec))
        quantity = "speedup"
    elif np.all(np.isfinite(s.base)):
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.speedup))
        quantity = "speedup"
    else:
        points = tuple((int(b), int(g), float(v)) for b, g, v in zip(s.batch, s.gamma, s.spec))
        quantity = "throughput"
    kind = str(s.drafter.get("type", ""))
    share = 0.0 if kind.lower().startswith(NO_PASS_DRAFTERS) else DEFAULT_DRAFT_SHARE
    accept_at = {}
    if s.accept_length is not None:
        accept_at = {(int(b), int(g)): float(n) for b, g, n in zip(s.batch, s.gamma, s.accept_length)
                     if np.isfinite(n)}
    return SpecRun(id=s.id, label=s.label, url=s.source["url"], engine=s.engine["name"], model=preset,
                   chip=s.hardware["chip"], gpus=int(s.parallelism.get("tp") or s.hardware["count"]),
                   expert_parallel=False, context=context, alpha=alpha, accept=accept, draft_share=share, drafter=kind, verify_tokens=verify, quantity=quantity,
                   points=points, assumed=s.assumed,
                   acceptance_reported=bool(accept) or bool(accept_at) or "accept_length" in acc or "measured_rate" in acc
                   or ("alpha" in acc and not acc.get("assumed")),
                   prefill_lengths=(float(w["input"]), float(w["output"])) if w.get("input") and w.get("output")
                   else (), family=resolve(preset, None)[0].family, source=source_of(s.source["url"]),
                   accept_at=accept_at, passes_per_step=s.passes, cite=str(s.source.get("key") or ""))


#: The draft length each InferenceX configuration's launch script sets (the
#: data file's ``assumptions``): SGLang's EAGLE speculative-num-steps on
#: NVIDIA and on AMD chips, TensorRT-LLM's num_nextn_predict_layers without
#: and with data-parallel attention.
R1_MTP_GAMMA = {("SGLang", "NVIDIA"): 2, ("SGLang", "AMD"): 3, ("TRT", False): 3, ("TRT", True): 1}


#: What each DeepSeek-R1 MTP pair's id begins with.
R1_PAIR_PREFIX = "inferencex-r1-mtp-"


def r1_mtp_gamma(engine: str, vendor: str, dp_attention: bool) -> int:
    return R1_MTP_GAMMA[(engine, vendor) if engine == "SGLang" else (engine, bool(dp_attention))]


def _arms(runs) -> dict:
    """{(deployment and workload, concurrency): [runs]}, the queueing ones left out."""
    out = {}
    for r in runs:
        if not r.queueing:
            key = (r.chip, r.engine, r.weights, r.tp, r.ep, r.dp_attention, r.workload, r.concurrency)
            out.setdefault(key, []).append(r)
    return out


#: Concurrencies an InferenceX pair needs to be fitted and scored: its
#: acceptance is fitted at the smallest, so a pair measured at one
#: concurrency only would set its own acceptance and test nothing.
MIN_PAIR_POINTS = 2


@lru_cache(maxsize=1)
def r1_mtp_pairs() -> tuple:
    """DeepSeek-R1's MTP runs beside its runs without MTP, one SpecRun per
    deployment and workload, a point per concurrency both arms measured
    (every pair; :func:`spec_runs` keeps those of :data:`MIN_PAIR_POINTS` or
    more)."""
    plain, mtp = _arms(_dec.all_runs("r1")), _arms(_dec.mtp_runs())
    configs = {}
    for key in sorted(set(plain) & set(mtp), key=str):
        with_mtp, without = mtp[key], plain[key]
        shared = sorted({r.url for r in with_mtp} & {r.url for r in without})
        if shared:
            pick = lambda rs: [r for r in rs if r.url == shared[-1]]  # noqa: E731 - the latest shared run
            with_mtp, without = pick(with_mtp), pick(without)
        tpot = lambda rs: float(np.median([r.tpot_s for r in rs]))  # noqa: E731
        configs.setdefault(key[:-1], []).append((key[-1], tpot(without) / tpot(with_mtp), bool(shared),
                                                 with_mtp[0], len(with_mtp), len(without),
                                                 (tpot(without), tpot(with_mtp))))
    out = []
    for (chip, engine, weights, tp, ep, dp, workload), points in configs.items():
        first = points[0][3]
        model = resolve(first.model, None)[0]
        vendor = resolve(None, chip)[1].vendor
        gamma = r1_mtp_gamma(engine, vendor, dp)
        layout = _dec.layout_label(tp, ep, dp)
        same = sum(1 for p in points if p[2])
        assumed = (f"acceptance not reported (fitted at the smallest concurrency); draft length {gamma}, MTP chained, "
                   "as the configuration's launch script sets it; "
                   + (f"both arms from one run at {same} of {len(points)} concurrencies, " if same else "")
                   + ("the other arms each the median TPOT of their runs over several dates (different runs, "
                      "possibly different engine builds)" if same < len(points) else "")).rstrip(", ")
        out.append(SpecRun(
            id=f"{R1_PAIR_PREFIX}{chip}-{engine}-{weights}-{layout.replace(' ', '-')}-{workload}".lower(),
            label=f"DeepSeek-R1 {weights} on {tp} x {chip}, {engine} {layout}, {workload}, MTP on/off (InferenceX)",
            url=first.url, engine=engine, model=first.model, chip=chip, gpus=tp, expert_parallel=False,
            context=first.context, alpha=ASSUMED_ALPHA, accept={}, draft_share=DEFAULT_DRAFT_SHARE, drafter="mtp",
            verify_tokens=0, quantity="speedup",
            points=tuple((int(c), gamma, float(v)) for c, v, *_ in sorted(points)), assumed=assumed,
            acceptance_reported=False, prefill_lengths=(first.input_len, first.output_len), family=model.family,
            source=_dec.SOURCES["r1"], cite="inferencex", ep=ep, dp_attention=dp, weights=weights,
            kv_cache=first.kv_cache, tpot_at={int(c): p[-1] for c, *p in points}))
    return tuple(out)


def source_of(url: str) -> str:
    """The source a run was published in: its address without a fragment
    or a query (two runs from one pull request, blog post or paper share it)."""
    return str(url).split("#")[0].split("?")[0].rstrip("/")


@lru_cache(maxsize=1)
def spec_runs() -> tuple:
    """Every measured speculative run the fit can price (known batch, a
    model preset): the published runs of both data files, then DeepSeek-R1's
    MTP pairs measured at :data:`MIN_PAIR_POINTS` concurrencies or more."""
    out = [_from_measurements(r) for r in _eng.load_runs()] + [_from_sweep(s) for s in _eng.load_sweeps()]
    return tuple(r for r in out if r is not None) + tuple(r for r in r1_mtp_pairs() if len(r.batches) >= MIN_PAIR_POINTS)


def spec_run(run_id: str) -> SpecRun:
    for r in spec_runs():
        if r.id == run_id:
            return r
    raise ValueError(f"run_id must be one of {', '.join(r.id for r in spec_runs())}; got {run_id!r}")




def run_inconsistent(run: SpecRun) -> tuple:
    """(batch, gamma) points whose printed speed-up exceeds the tokens a
    verify commits: no step model can give more than N (every step free),
    so the point measures something else (end-to-end time with other
    work, say) and is shown but neither fitted nor scored."""
    if run.quantity != "speedup":
        return ()
    return tuple((b, g) for b, g, v in run.points if v > run.committed(g, b) + 1e-9)


def below_floor() -> list:
    """Measured speed-ups below the least any step model in which verifying T
    positions costs at most T plain steps can give: N / (T + drafting share x
    passes). Rows: run, batch, gamma, measured, floor."""
    rows = []
    for run in spec_runs():
        if run.quantity != "speedup":
            continue
        for b, g, v in run.points:
            floor = run.committed(g, b) / (run.width(g) + run.draft_share * run.passes(g))
            if v < floor:
                rows.append((run.id, int(b), int(g), v, floor))
    return rows


def alpha_fitted(run: SpecRun) -> bool:
    """Whether ``run``'s acceptance is fitted to its smallest batch: its
    source reports none, and it has points at three or more batches (or a
    sweep over draft lengths), so the rest of the run is still a prediction."""
    return not run.acceptance_reported and (len(run.batches) >= 2 or run.quantity == "throughput")


