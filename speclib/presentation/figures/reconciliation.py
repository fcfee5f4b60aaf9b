"""Tables of the last sections of the chapter "How far to trust the step": the
sequel's setting priced three ways (its simulator's step, the whole step as
the engines roll a hybrid back, and the calibrated step with its interval),
and where speculation stops paying for several kinds of model and chip
under the calibrated step (:func:`speclib.core.speculation.stops_paying`)."""
from __future__ import annotations

from functools import lru_cache

from ...core import speculation as _spec
from ...core.capacity import DEFAULT_RESERVE
from ...core.deployment import Deployment
from speclib.evidence import simulator as _sim
from ...presets import resolve
from ..tables import NumberTable
from . import common

#: The batches the sequel's setting is read at.
SEQUEL_BATCHES = (8, 64, 234, 1024)
#: The pricings of the sequel's setting: (label, how the deployment is made from the simulator's). The
#: simulator prices every sequence of a batch at once; as the engines serve it, a batch is what memory holds
#: (the rest queued), with a state snapshot per draft position.
SEQUEL_PRICINGS = (
    ("the sequel's simulator (aggregate roofline, no rollback)", dict()),
    ("the whole step, rolled back as the engines do (roofline)", dict(rollback="snapshot", reserve=DEFAULT_RESERVE)),
    ("the calibrated step, fitted on engines", dict(rollback="snapshot", step_time="calibrated",
                                                    reserve=DEFAULT_RESERVE)),
)


def sequel_rows(drafter: str = "dflash", batches=SEQUEL_BATCHES) -> list:
    """(pricing, then gamma* and its speed-up at each batch) for the sequel's
    model, chip, drafter and context, with the drafter's measured survival
    curve; the calibrated speed-up with its 80 % interval."""
    return _sequel(drafter, batches)[0]


def _sequel(drafter, batches):
    """(rows, the operating points they print) of :func:`sequel_rows`."""
    base = _sim.deployment(drafter)
    S = _sim.context()
    rows, held = [], []
    for label, changes in SEQUEL_PRICINGS:
        dep = base.replace(**changes)
        cells = []
        for B in batches:
            calibrated = "step_time" in changes
            g, s = _spec.optimal_gamma(None, B, S, deployment=dep, interval=calibrated)
            mark, point = common.held_point(dep, S, B, g)
            held.append(point)
            cells.append(f"{g}{mark}: {s}" if calibrated and g
                         else f"{g}{mark}: {float(s.value if calibrated else s):.2f}\u00d7")
        rows.append((label, *cells))
    return rows, tuple(held)


def sequel_table(drafter: str = "dflash") -> NumberTable:
    model = _sim.simulated_model().name
    rows, held = _sequel(drafter, SEQUEL_BATCHES)
    dep = _sim.deployment(drafter).replace(**SEQUEL_PRICINGS[1][1])
    return NumberTable(("step priced by", *(f"batch {b}: \u03b3*, speed-up" for b in SEQUEL_BATCHES)),
                       tuple(rows), align="lrrrr",
                       caption=f"{model} on one {_sim.HARDWARE} with the {_sim.DRAFTERS[drafter]} drafter and its "
                               f"measured acceptance, mean context {_sim.context():,.1f} tokens: \u03b3* and its speed-up under "
                               "each step model (the calibrated one with its 80 % cross-conformal interval by model family). The simulator prices "
                               "every sequence of a batch at once; as the engines serve it, each draft length runs "
                               "what memory holds of the batch and the rest wait in the queue (with a state snapshot "
                               f"per draft position, as the engines roll back; {common.holds(dep, _sim.context())}); "
                               f"{common.NOT_HELD}: a batch one {_sim.HARDWARE} does not hold at that draft length",
                       held=held)


#: Kinds of model and chip, each served with the drafter made for it, priced
#: by its own roofline: (kind, model, chip, tensor-parallel GPUs, engine,
#: drafter preset). DeepSeek-V4-Flash's attention is priced as served.
DEPLOYMENTS = (
    ("a small dense model on one GPU", "llama-3.1-8b", "H100", 1, "vLLM", "llama-3.1-8b-eagle3"),
    ("a large dense model on eight", "llama-3-70b", "H200", 8, "vLLM", "llama-3.3-70b-eagle3"),
    ("the sequel's hybrid MoE on one GPU", "qwen3.6-35b-a3b", "B200", 1, "vLLM", "qwen3.6-mtp"),
    ("a large MoE with MLA on eight", "deepseek-v3", "H200", 8, "SGLang", "deepseek-v3-mtp"),
    ("the paper's model on eight", "deepseek-v4-flash", "B200", 8, "vLLM", "deepseek-v4-flash-mtp"),
    ("a large MoE on eight AMD GPUs", "deepseek-v3", "MI300X", 8, "SGLang", "deepseek-v3-mtp"),
    ("a large dense model on eight AMD GPUs", "llama-3-70b", "MI355X", 8, "vLLM", "llama-3.3-70b-eagle3"),
    ("a chip the fit has not seen", "deepseek-v4-flash", "GB300", 8, "vLLM", "deepseek-v4-flash-mtp"),
)


def _batch(b, top) -> str:
    return "never, up to the largest batch that fits" if b is None else f"{b:,}"


def deployment_of(model, chip, tp, engine, drafter) -> Deployment:
    """One row's deployment: calibrated, its drafter priced by its roofline,
    DeepSeek-V4's attention as served."""
    return Deployment(model, chip, tp=tp, engine=engine, step_time="calibrated", drafter=drafter,
                      attention="served")


def stops_points(alpha: float = 0.75, S: float = 2048, deployments=DEPLOYMENTS) -> list:
    """For each kind of model and chip of ``deployments``, under the
    calibrated step with its drafter: the deployment, the best draft at
    batch 1 and its speed-up with its 80 % interval, and where speculation
    stops paying (:func:`speclib.core.speculation.stops_paying`). The book's
    bottom line reads these (the introduction pastes them from this chapter)."""
    out = []
    for kind, model, chip, tp, engine, drafter in deployments:
        dep = deployment_of(model, chip, tp, engine, drafter)
        acc = None if dep.drafter.acceptance else alpha  # the drafter's measured curve where the book has one
        g1, s1 = _spec.optimal_gamma(acc, 1, S, deployment=dep, interval=True)
        out.append({"kind": kind, "deployment": dep, "engine": engine, "gamma_1": int(g1), "speedup_1": s1,
                    "acceptance": "measured" if acc is None else f"\u03b1 = {alpha:g}",
                    "stops": _spec.stops_paying(acc, S, deployment=dep, max_batch=4096)})
    return out


@lru_cache(maxsize=4)
def _stops_points(alpha: float = 0.75, S: float = 2048) -> tuple:
    return tuple(stops_points(alpha, S))


def stops_rows(alpha: float = 0.75, S: float = 2048, points=None) -> list:
    """For each kind of model and chip, under the calibrated step, with its
    drafter: gamma* and its speed-up with its 80 % interval at batch 1, the
    batch from which gamma* is 0 for good, the batches over which the 80 %
    interval of speculating's best gain reaches below 1x (from ``may_from``)
    and lies wholly below it (``surely_from``), and the largest batch that
    fits without a draft."""
    rows = []
    for p in (_stops_points(alpha, S) if points is None else points):
        dep, stops = p["deployment"], p["stops"]
        rows.append((p["kind"], f"{dep.model.name}, {dep.tp} \u00d7 {dep.hardware.name}, {p['engine']}, "
                                f"{dep.drafter.name}", p["acceptance"], f"{p['gamma_1']}: {p['speedup_1']}",
                     _batch(stops["at"], stops["max_batch"]),
                     "\u2013" if stops["may_from"] is None else f"{stops['may_from']:,}",
                     "\u2013" if stops["surely_from"] is None else f"{stops['surely_from']:,}",
                     f"{stops['max_batch']:,}"))
    return rows


def stops_table(alpha: float = 0.75, S: float = 2048) -> NumberTable:
    return NumberTable(("kind", "deployment and drafter", "acceptance", "batch 1: \u03b3*, speed-up [80 %]",
                        "\u03b3* = 0 from batch", "the interval reaches below 1\u00d7 from", "it lies below 1\u00d7 from",
                        "largest batch that fits"),
                       tuple(stops_rows(alpha, S)), align="lllrrrrr",
                       caption=f"where speculation stops paying under the calibrated step (fitted on engines; the 80 % "
                               f"cross-conformal interval by model family: acceptance \u00b10.05 per position and the "
                               f"stored hold-out's half-width, calibrated on the other families), at a context of {S:,.0f}, each drafter priced by its own "
                               f"roofline{_per_pass()} and accepting as measured where the book has its survival curve "
                               f"(Qwen3.6's MTP; the EAGLE-3 heads, from Llama-3.1-8B's), else at \u03b1 = {alpha:g}; "
                               "\u2013: never, up to the largest batch that fits (4,096 at most)")


def _per_pass() -> str:
    """What the calibrated step adds to each drafter pass, in words (nothing where the shipped form has no such term)."""
    from ...core.calibrated import shipped_calibration

    return " plus the fitted time per pass" if shipped_calibration().per_draft_pass_s else ""


def facts() -> dict:
    """The numbers the chapter's prose states (the chapter glues them)."""
    base = _sim.deployment("dflash")
    S = _sim.context()
    out = {"context": S}
    for key, (_, changes) in zip(("sim", "snap", "cal"), SEQUEL_PRICINGS):
        dep = base.replace(**changes)
        for B in (64, 234):
            g, s = _spec.optimal_gamma(None, B, S, deployment=dep, interval=key == "cal")
            out[f"{key}{B}_gamma"] = int(g)
            if key == "cal":
                out.update({f"cal{B}_speedup": float(s.value), f"cal{B}_lo": float(s.lo), f"cal{B}_hi": float(s.hi)})
            else:
                out[f"{key}{B}_speedup"] = float(s)
        out[f"{key}_stops"] = _spec.stops_paying(None, S, deployment=dep, max_batch=4096)["at"]
    lo, hi = out["cal234_lo"], out["cal234_hi"]
    out["cal234_verdict"] = ("an interval that holds 1×: whether to speculate there at all is as likely as not"
                             if lo < 1.0 < hi else "an interval wholly above 1×: speculation still pays there"
                             if lo >= 1.0 else "an interval wholly below 1×: speculation loses there")
    rows, points = stops_rows(), _stops_points()
    ats = [int(r[4].replace(",", "")) for r in rows if r[4][0].isdigit()]
    mays = [int(r[5].replace(",", "")) for r in rows if r[5][0].isdigit()]
    surely = [int(r[6].replace(",", "")) for r in rows if r[6][0].isdigit()]
    out.update(surely_count=len(surely), surely_lo=min(surely, default=0), surely_hi=max(surely, default=0))
    out.update(stops_lo=min(ats), stops_hi=max(ats), may_lo=min(mays), may_hi=max(mays), stops_count=len(ats),
               stops_total=len(rows), stops_where=common.join_and([f"{_where(r[1])} from batch {r[4]}" for r in rows
                                                        if r[4][0].isdigit()]))
    gains = [float(p["speedup_1"].value) for p in points]
    out.update(gain1_lo=min(gains), gain1_hi=max(gains), memory_first=len(rows) - len(ats))
    gutter = gutter_facts()
    out.update({k: v for k, v in gutter.items() if k.endswith("_text")})
    out["gutter_only_paper"] = bool(gutter["gutter_paper"]) and not any(
        gutter[f"gutter_{k}"] for k in ("skewed", "ep8", "calibrated"))
    return out


def _where(deployment: str) -> str:
    """'Llama-3-70B, 8 × H200, vLLM, ...' -> 'Llama-3-70B on 8 × H200'."""
    model, gpus, *_ = deployment.split(", ")
    return f"{model} on {gpus}"


# --- the gutter, four ways (the book's bottom line pastes them) ----------------------------


def gutter_facts(alpha: float = 0.75, S: float = 4096, c_draft: float = 0.10) -> dict:
    """Where the paper's gutter is under four pricings of DeepSeek-V4-Flash
    at small batch, each from where the book computes it: on the post's
    assumptions (one B200, uniform routing, the ledger), under Qwen3.6-35B-A3B's
    measured expert popularity, with the experts spread over eight GPUs, and
    under the step calibrated on engines; each as runs of batches
    (``gutter_*``) and in words (``gutter_*_text``: "at batches 4–13", or
    "nowhere" where there is none)."""
    import numpy as np

    from ...core import parallel as _par
    from . import skewed_routing

    def runs(g, B):
        return [(int(a), int(b)) for a, b, _ in _spec.zero_gamma_bands(B, g)]

    B = np.arange(1.0, 65.0)
    paper = Deployment("deepseek-v4-flash", "B200", attention="paper")
    g, _ = _spec.optimal_gamma(alpha, B, S, c_draft, deployment=paper)
    out = {"gutter_paper": runs(g, B)}
    out["gutter_skewed"] = skewed_routing.gutter(S=S, c_draft=c_draft, alpha=alpha)["skewed"]
    ep = Deployment(cost_model=_par.expert_parallel_cost_model("deepseek-v4-flash", "B200", 8, attention="paper"))
    g, _ = _spec.optimal_gamma(alpha, B, S, c_draft, deployment=ep)
    out["gutter_ep8"] = runs(g, B)
    calibrated = Deployment("deepseek-v4-flash", "B200", step_time="calibrated", drafter="deepseek-v4-flash-mtp",
                            attention="paper")
    g, _ = _spec.optimal_gamma(alpha, B, S, deployment=calibrated)
    out["gutter_calibrated"] = runs(g, B)
    for key in ("paper", "skewed", "ep8", "calibrated"):
        out[f"gutter_{key}_text"] = f"at batches {runs_text(out[f'gutter_{key}'])}" if out[f"gutter_{key}"] \
            else "nowhere"
    return out


def runs_text(runs) -> str:
    """Runs of batches as the prose writes them ("4\u201313", "4\u201313 and 20\u201321"), or "none"."""
    return common.join_and([f"{a}" if a == b else f"{a}\u2013{b}" for a, b in runs])
