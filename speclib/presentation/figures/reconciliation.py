"""Tables of the chapter "Reconciling the sequel with the engines": the
sequel's setting priced three ways (its simulator's step, the whole step as
the engines roll a hybrid back, and the calibrated step with its interval),
and where speculation stops paying for several kinds of model and chip
under the calibrated step (:func:`speclib.core.speculation.stops_paying`)."""
from __future__ import annotations

from ...core import speculation as _spec
from ...core.deployment import Deployment
from ...evidence import simulator as _sim
from ...presets import resolve
from ..tables import NumberTable

#: The batches the sequel's setting is read at.
SEQUEL_BATCHES = (8, 64, 234, 1024)
#: The pricings of the sequel's setting: (label, how the deployment is made from the simulator's).
SEQUEL_PRICINGS = (
    ("the sequel's simulator (aggregate roofline, no rollback)", dict()),
    ("the whole step, rolled back as the engines do (roofline)", dict(rollback="snapshot")),
    ("the calibrated step, fitted on engines", dict(rollback="snapshot", step_time="calibrated")),
)


def sequel_rows(drafter: str = "dflash", batches=SEQUEL_BATCHES) -> list:
    """(pricing, then gamma* and its speed-up at each batch) for the sequel's
    model, chip, drafter and context, with the drafter's measured survival
    curve; the calibrated speed-up with its 80 % interval."""
    base = _sim.deployment(drafter)
    S = _sim.context()
    rows = []
    for label, changes in SEQUEL_PRICINGS:
        dep = base.replace(**changes)
        cells = []
        for B in batches:
            calibrated = "step_time" in changes
            g, s = _spec.optimal_gamma(None, B, S, deployment=dep, interval=calibrated)
            cells.append(f"{g}: {s}" if calibrated and g else f"{g}: {float(s.value if calibrated else s):.2f}\u00d7")
        rows.append((label, *cells))
    return rows


def sequel_table(drafter: str = "dflash") -> NumberTable:
    model = _sim.simulated_model().name
    return NumberTable(("step priced by", *(f"batch {b}: \u03b3*, speed-up" for b in SEQUEL_BATCHES)),
                       tuple(sequel_rows(drafter)), align="lrrrr",
                       caption=f"{model} on one {_sim.HARDWARE} with the {_sim.DRAFTERS[drafter]} drafter and its "
                               f"measured acceptance, mean context {_sim.context():,.1f} tokens: \u03b3* and its speed-up under "
                               "each step model (the calibrated one with its 80 % interval)")


#: Kinds of model and chip: (kind, model, chip, tensor-parallel GPUs, engine).
DEPLOYMENTS = (
    ("a small dense model on one GPU", "llama-3.1-8b", "H100", 1, "vLLM"),
    ("a large dense model on eight", "llama-3-70b", "H200", 8, "vLLM"),
    ("a MoE with few active parameters on one GPU", "gpt-oss-120b", "B200", 1, "vLLM"),
    ("the sequel's hybrid MoE on one GPU", "qwen3.6-35b-a3b", "B200", 1, "vLLM"),
    ("a large MoE with MLA on eight", "deepseek-v3", "H200", 8, "SGLang"),
    ("the paper's model on eight", "deepseek-v4-flash", "B200", 8, "vLLM"),
    ("a large MoE on eight AMD GPUs", "deepseek-v3", "MI300X", 8, "SGLang"),
    ("a large dense model on eight AMD GPUs", "llama-3-70b", "MI355X", 8, "vLLM"),
    ("a chip the fit has not seen", "deepseek-v4-flash", "GB300", 8, "vLLM"),
)


def _batch(b, top) -> str:
    return "never, up to the largest batch that fits" if b is None else f"{b:,}"


def stops_rows(alpha: float = 0.75, S: float = 2048, c_draft: float = 0.05, deployments=DEPLOYMENTS) -> list:
    """For each kind of model and chip, under the calibrated step: gamma* at
    batch 1, the batch from which gamma* is 0 for good, the batches over which
    the 80 % interval of speculating's best gain reaches below 1x (from
    ``may_from``) and lies wholly below it (``surely_from``), and the largest
    batch that fits."""
    rows = []
    for kind, model, chip, tp, engine in deployments:
        dep = Deployment(model, chip, tp=tp, engine=engine, step_time="calibrated")
        stops = _spec.stops_paying(alpha, S, c_draft, deployment=dep, max_batch=4096)
        g1, s1 = _spec.optimal_gamma(alpha, 1, S, c_draft, deployment=dep)
        m, hw = resolve(model, chip)
        rows.append((kind, f"{m.name}, {tp} \u00d7 {hw.name}, {engine}", f"{g1} ({s1:.2f}\u00d7)",
                     _batch(stops["at"], stops["max_batch"]),
                     "\u2013" if stops["may_from"] is None else f"{stops['may_from']:,}",
                     "\u2013" if stops["surely_from"] is None else f"{stops['surely_from']:,}",
                     f"{stops['max_batch']:,}"))
    return rows


def stops_table(alpha: float = 0.75, S: float = 2048, c_draft: float = 0.05) -> NumberTable:
    return NumberTable(("kind", "deployment", "\u03b3* at batch 1", "\u03b3* = 0 from batch",
                        "the interval reaches below 1\u00d7 from", "it lies below 1\u00d7 from", "largest batch that fits"),
                       tuple(stops_rows(alpha, S, c_draft)), align="llrrrrr",
                       caption=f"where speculation stops paying under the calibrated step (fitted on engines; the 80 % "
                               f"interval over its bootstrap), acceptance {alpha:g}, context {S:,.0f}, a drafter at "
                               f"{c_draft:.0%} of a step; \u2013: never, up to the largest batch that fits")


def facts() -> dict:
    """The numbers the chapter's prose states (the chapter glues them)."""
    base = _sim.deployment("dflash")
    S = _sim.context()
    out = {"context": S}
    for key, changes in (("sim", {}), ("snap", dict(rollback="snapshot")),
                         ("cal", dict(rollback="snapshot", step_time="calibrated"))):
        dep = base.replace(**changes)
        for B in (64, 234):
            g, s = _spec.optimal_gamma(None, B, S, deployment=dep, interval=key == "cal")
            out[f"{key}{B}_gamma"] = int(g)
            if key == "cal":
                out.update({f"cal{B}_speedup": float(s.value), f"cal{B}_lo": float(s.lo), f"cal{B}_hi": float(s.hi)})
            else:
                out[f"{key}{B}_speedup"] = float(s)
        out[f"{key}_stops"] = _spec.stops_paying(None, S, deployment=dep, max_batch=4096)["at"]
    rows = stops_rows()
    ats = [int(r[3].replace(",", "")) for r in rows if r[3][0].isdigit()]
    mays = [int(r[4].replace(",", "")) for r in rows if r[4][0].isdigit()]
    out.update(stops_lo=min(ats), stops_hi=max(ats), may_lo=min(mays), may_hi=max(mays))
    return out
