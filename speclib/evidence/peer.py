"""Two peers' predictions of the same measured runs, read from data: NVIDIA's
AIConfigurator (https://github.com/ai-dynamo/aiconfigurator) and AISimulate
(https://github.com/ai-dynamo/aisimulate), each priced at each DeepSeek-R1
run's deployment by ``benchmarks/bench_peer.py --tool <tool>`` and stored in
``data/peer/<tool>.json`` (its version, the database version of every call,
the mapping of chips, engines and precisions, and every assumption are in the
file). speclib never imports either; this module reads their numbers. Every
function taking ``data`` takes a parsed file or a tool's name (:data:`TOOLS`);
left out, AIConfigurator's.

Three comparisons, and one breakdown:

* the InferenceX MTP pairs (:func:`mtp_points`): the peer's speed-up at each
  concurrency, its mean accepted draft tokens per step chosen so the speed-up
  at the configuration's smallest concurrency is the measured one;
* the fall of the gain (:func:`falls`, :func:`fall_summary`): the speed-up at
  a larger concurrency over the speed-up at the smallest, predicted against
  measured, the acceptance set at the smallest so that only the step's
  shape is tested; the same for speclib's calibrated step held out by model
  family (:func:`ours_mtp_points`);
* decode TPOT (:func:`decode_points`, :func:`decode_table`): the peer's
  time per output token against the measured one by chip, engine and
  concurrency;
* the MTP points' per-operation latencies, both arms (:func:`ops`,
  :func:`ops_steps`), and from them what one extra verified position costs
  one layer's attention or MoE block on the peer's measured kernel tables and
  at its speed of light (:func:`verify_extra_per_layer`,
  :func:`verify_extra_summary`).
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from importlib import resources

import numpy as np

from speclib.evidence import decode_runs as _dec

#: The peers whose predictions are stored, by the name their file and ``--tool`` take.
TOOLS = ("aiconfigurator", "aisimulate")


def peer_file(tool: str = TOOLS[0]) -> tuple:
    """Where a peer's predictions are, inside the package."""
    from .._checks import checked_choice

    return ("data", "peer", f"{checked_choice('tool', tool, TOOLS)}.json")

#: The columns of a decode row: the run (its address, date and deployment,
#: as :class:`speclib.evidence.decode_runs.DecodeRun` has them), the lengths
#: the peer was given, the measured and the peer's TPOT (ms), and whether the
#: peer warned that the concurrency overflows its KV cache.
DECODE_FIELDS = ("run", "date", "chip", "engine", "weights", "kv_cache", "tp", "ep", "dp_attention", "workload",
                 "isl", "osl", "concurrency", "measured_tpot_ms", "peer_tpot_ms", "kv_warning")
#: The columns of an MTP row: the pair's id (:func:`speclib.evidence.spec_runs.spec_runs`), the point, the
#: measured speed-up, the peer's TPOT without and with MTP (ms), its speed-up, the accepted draft tokens per
#: step fitted for the configuration, whether that value sits at a bound of [0, gamma], whether this point is
#: the one it was fitted at, and the peer's KV-overflow warning.
MTP_FIELDS = ("id", "concurrency", "gamma", "measured_speedup", "peer_tpot_ms", "peer_tpot_mtp_ms", "peer_speedup",
              "accepted", "at_bound", "fitted", "kv_warning")
#: The columns of an ops row: an MTP point (id, concurrency) and arm (nextn 0, or the pair's gamma), the kind of
#: engine step ("mixed": a prefill chunk beside the decoding requests; "decode": decoding requests only), the
#: peer's operation, its latency in one such step on the measured tables and at speed of light (ms), its share of
#: an iteration as the TPOT weighs the steps (ms; an arm's rows sum to TPOT x tokens per iteration), and the
#: peer's tag for the table behind it (silicon, empirical, mixed).
OPS_FIELDS = ("id", "concurrency", "nextn", "step", "op", "ms_per_step", "sol_ms_per_step", "ms_per_iteration",
              "sol_ms_per_iteration", "source")
#: The columns of an ops step row: the arm's schedule as the peer counts it (decode iterations of a request,
#: its mixed steps, those the TPOT counts, its decode-only steps, tokens committed per iteration), the peer's
#: batch per attention rank, the layers it prices and its MTP scale on each generation operation, the two kinds
#: of step's latencies and the TPOTs of the measured and the speed-of-light calls (ms).
OPS_STEP_FIELDS = ("id", "concurrency", "nextn", "accepted", "batch", "layers", "layer_scale", "decode_iterations",
                   "mixed_steps", "mixed_steps_counted", "decode_steps", "tokens_per_iteration", "mixed_ms",
                   "decode_ms", "tpot_ms", "sol_tpot_ms")


def decode_row(run, peer_tpot_ms: float, kv_warning: bool) -> list:
    """One decode row (:data:`DECODE_FIELDS`) for a
    :class:`speclib.evidence.decode_runs.DecodeRun` priced by the peer."""
    return [run.url, run.date, run.chip, run.engine, run.weights, run.kv_cache, int(run.tp), int(run.ep),
            bool(run.dp_attention), run.workload, int(round(run.input_len)), int(round(run.output_len)),
            int(run.concurrency), float(run.tpot_s) * 1e3, round(float(peer_tpot_ms), 4), bool(kv_warning)]


def _tables(data: dict) -> list:
    """The file's tables (each a dict with fields and rows), in the order they are written."""
    tables = []
    for part in ("decode", "mtp"):
        tables += [data[part], data[part]["not_priced"]]
    if "ops" in data:
        tables += [data["ops"], data["ops"]["steps"]]
    return tables


def parse(data: dict) -> dict:
    """The file's contents with each table's rows as dicts."""
    out = copy.deepcopy(data)
    for table in _tables(out):
        table["rows"] = [dict(zip(table["fields"], row)) for row in table["rows"]]
    return out


@lru_cache(maxsize=None)
def _load(tool: str = TOOLS[0]) -> dict:
    return parse(json.loads(resources.files("speclib").joinpath(*peer_file(tool)).read_text(encoding="utf-8")))


def load(tool: str = TOOLS[0]) -> dict:
    """A peer's stored file (:func:`peer_file`), rows as dicts (a copy)."""
    return copy.deepcopy(_load(tool))


def dumps(data: dict) -> str:
    """The file's text: its header indented, each row on one line."""
    data = copy.deepcopy(data)
    tables = []
    for table in _tables(data):
        tables.append(table["rows"])
        table["rows"] = f"@rows{len(tables) - 1}@"
    text = json.dumps(data, indent=2, ensure_ascii=False)
    for i, rows in enumerate(tables):
        body = ",\n".join("        " + json.dumps(r, ensure_ascii=False) for r in rows)
        text = text.replace(f'"@rows{i}@"', "[\n" + body + "\n      ]" if rows else "[]")
    return text + "\n"


def _data(data):
    """``data`` as a parsed file: None is AIConfigurator's, a name of :data:`TOOLS` that tool's."""
    if data is None or isinstance(data, str):
        return _load(TOOLS[0] if data is None else data)
    return data


# --- the MTP pairs and the fall of the gain ------------------------------------------------


def mtp_points(data: dict = None) -> list:
    """The peer's MTP points, each (id, concurrency, gamma, measured speed-up,
    predicted speed-up, accepted draft tokens per step, fitted here), sorted
    by id and concurrency."""
    rows = _data(data)["mtp"]["rows"]
    return sorted((r["id"], r["concurrency"], r["gamma"], r["measured_speedup"], r["peer_speedup"], r["accepted"],
                   r["fitted"]) for r in rows)


def falls(points) -> list:
    """The fall of the gain of each configuration, to each concurrency past its
    smallest: (id, smallest concurrency, concurrency, measured fall, predicted
    fall, error = predicted / measured - 1, whether it is the configuration's
    largest concurrency), where a fall is the speed-up there over the speed-up
    at the smallest. ``points``: (id, concurrency, gamma, measured, predicted, ...)."""
    by_id = {}
    for p in points:
        by_id.setdefault(p[0], []).append((int(p[1]), float(p[3]), float(p[4])))
    out = []
    for run_id in sorted(by_id):
        pts = sorted(by_id[run_id])
        c0, m0, q0 = pts[0]
        for c, m, q in pts[1:]:
            measured, predicted = m / m0, q / q0
            out.append((run_id, c0, c, measured, predicted, predicted / measured - 1, c == pts[-1][0]))
    return out


def fall_summary(points) -> dict:
    """The fall of the gain's errors (:func:`falls`): over every point past a
    configuration's smallest concurrency (``median_abs_error``, ``points``) and
    at each configuration's largest only (``median_abs_error_top``,
    ``configurations``), with the median signed errors and the worst |error|
    at the top."""
    f = falls(points)
    e = np.array([x[5] for x in f])
    top = np.array([x[5] for x in f if x[6]])
    return {"configurations": int(top.size), "points": int(e.size),
            "median_abs_error": float(np.median(np.abs(e))), "median_signed_error": float(np.median(e)),
            "median_abs_error_top": float(np.median(np.abs(top))), "median_signed_error_top": float(np.median(top)),
            "worst_abs_error_top": float(np.max(np.abs(top)))}


def ours_mtp_points(ids=None) -> list:
    """speclib's calibrated step on the same MTP pairs, held out by model
    family (the stored hold-out, :func:`speclib.calibration.held_out.stored_held_out`):
    (id, concurrency, gamma, measured, predicted, nan, fitted here) for the pairs
    in ``ids`` (default: those the peer priced)."""
    from speclib.calibration.held_out import stored_held_out

    ids = {r[0] for r in mtp_points()} if ids is None else set(ids)
    out = []
    for p in stored_held_out("model").runs:
        if p.run.id in ids:
            for b, g, m, q, scored in zip(p.batch, p.gamma, p.measured, p.predicted, p.scored):
                out.append((p.run.id, int(b), int(g), float(m), float(q), float("nan"), not bool(scored)))
    return sorted(out)


# --- decode TPOT -------------------------------------------------------------------------


def decode_points(data: dict = None) -> list:
    """Every decode run the peer priced: (chip, engine, weights, layout,
    workload, concurrency, measured TPOT ms, the peer's TPOT ms, error =
    predicted / measured - 1)."""
    return [(r["chip"], r["engine"], r["weights"], _dec.layout_label(r["tp"], r["ep"], r["dp_attention"]),
             r["workload"], r["concurrency"], r["measured_tpot_ms"], r["peer_tpot_ms"],
             r["peer_tpot_ms"] / r["measured_tpot_ms"] - 1) for r in _data(data)["decode"]["rows"]]


def run_key(run) -> tuple:
    """What identifies a decode run (a :class:`speclib.evidence.decode_runs.DecodeRun`
    or a stored row): its address, date, deployment, workload and concurrency."""
    if isinstance(run, dict):
        url, get = run["run"], run.get
    else:
        url, get = run.url, lambda k: getattr(run, k)
    return (url, get("date"), get("chip"), get("engine"), get("weights"), int(get("tp")), int(get("ep")),
            bool(get("dp_attention")), get("workload"), int(get("concurrency")))


#: speclib's own predictions of the decode runs: the shipped calibration
#: through the public :func:`speclib.core.decode.tpot` (fitted on these runs
#: among others), or each chip's runs predicted by the fit without that chip.
OURS = ("calibrated", "held out by chip")


def priced_decode_points(tpot, data: dict = None) -> list:
    """:func:`decode_points` with another TPOT in place of the peer's, for the
    same runs: ``tpot(runs, idx)`` gives the TPOT (s) of each of ``runs``
    (:func:`speclib.calibration.step_fit.decode_rows`' decode runs, the peer's
    rows found among them in ``idx``, their indices)."""
    from speclib.calibration.step_fit import decode_rows

    runs, _ = decode_rows()
    index = {run_key(r): i for i, r in enumerate(runs)}
    idx = [index[run_key(r)] for r in _data(data)["decode"]["rows"]]
    pred = tpot([runs[i] for i in idx], idx)
    return [(*p[:7], 1e3 * float(q), 1e3 * float(q) / p[6] - 1) for p, q in zip(decode_points(data), pred)]


def ours_decode_points(how: str = "held out by chip", data: dict = None) -> list:
    """:func:`decode_points` with speclib's TPOT in place of the peer's, for the
    same runs (``how``: one of :data:`OURS`)."""
    from .._checks import checked_choice
    from speclib.calibration.held_out import stored_held_out
    from speclib.evidence.decode_runs import calibrated_tpot

    how = checked_choice("how", how, OURS)
    if how == OURS[0]:
        return priced_decode_points(lambda runs, idx: calibrated_tpot(runs), data)
    return priced_decode_points(lambda runs, idx: stored_held_out("chip").decode_predicted[idx], data)


#: The columns :func:`decode_table` can group by.
DECODE_GROUPS = ("chip", "engine", "weights", "layout", "workload", "concurrency")


def decode_table(by=("chip",), points=None, subset=None) -> list:
    """Predicted decode TPOT against the measured, grouped by the columns
    ``by`` (of :data:`DECODE_GROUPS`): (group..., runs, median |error|, median
    signed error). ``points``: :func:`decode_points` rows (default: the
    peer's); ``subset``: a predicate on one."""
    by = (by,) if isinstance(by, str) else tuple(by)
    bad = [b for b in by if b not in DECODE_GROUPS]
    if bad:
        raise ValueError(f"by must name columns of {', '.join(DECODE_GROUPS)}; got {bad[0]!r}")
    groups = {}
    for p in decode_points() if points is None else points:
        if subset is None or subset(p):
            groups.setdefault(tuple(p[DECODE_GROUPS.index(b)] for b in by), []).append(p[-1])
    return [(*k, len(e), float(np.median(np.abs(e))), float(np.median(e))) for k, e in sorted(groups.items())
            for e in [np.array(e)]]


def fp8_tp8(point) -> bool:
    """The targets' set (:func:`speclib.evidence.decode_runs.target_subset`):
    fp8 weights, eight GPUs in plain tensor parallelism."""
    return point[2] == "fp8" and point[3] == "TP8"


def decode_summary(points=None, subset=None) -> dict:
    """Runs and their median |error| and median signed error (``points``:
    :func:`decode_points` rows, default the peer's)."""
    e = np.array([p[-1] for p in (decode_points() if points is None else points) if subset is None or subset(p)])
    return {"runs": int(e.size), "median_abs_error": float(np.median(np.abs(e))),
            "median_signed_error": float(np.median(e))}


# --- the peers side by side ---------------------------------------------------------------


#: The subsets :func:`side_by_side` scores: decode TPOT, all and the targets' set (:func:`fp8_tp8`); the MTP pairs' speed-up at each concurrency past the
#: configuration's smallest (where each peer's acceptance, and speclib's, is set); the fall of the gain there
#: (:func:`falls`), over every such point and at each configuration's largest concurrency.
SUBSETS = ("decode TPOT", "decode TPOT, fp8 on TP8", "MTP speed-up", "MTP fall of the gain", "MTP fall of the gain, largest concurrency")


def side_by_side(tools=TOOLS, extra_decode=None) -> dict:
    """speclib and each peer of ``tools`` scored on the same points: the runs
    and MTP points every one of the peers places. {subset (:data:`SUBSETS`):
    {"points": n, "median_abs_error": {source: value}}}, the sources being
    each peer by name, speclib's calibrated step held out by chip (decode;
    also in-sample, "speclib, calibrated") and held out by model family (MTP).
    ``extra_decode``: {label: a function of a peer's file returning
    :func:`ours_decode_points`-like rows for its runs}, more decode sources
    scored on the same runs (the caller's: the measured step's lives in
    :func:`speclib.calibration.measured_host.peer_decode_points`)."""
    from .._checks import checked_choice

    tools = [checked_choice("tools", t, TOOLS) for t in ((tools,) if isinstance(tools, str) else tools)]
    files = {t: _load(t) for t in tools}
    names = {t: files[t]["peer"]["name"] for t in tools}
    # decode: the runs every peer priced
    keys = set.intersection(*({run_key(r) for r in f["decode"]["rows"]} for f in files.values()))
    decode = {names[t]: [p for r, p in zip(f["decode"]["rows"], decode_points(f)) if run_key(r) in keys]
              for t, f in files.items()}
    rows = files[tools[0]]["decode"]["rows"]
    for how, label in zip(OURS, ("speclib, calibrated", "speclib, held out by chip")):
        decode[label] = [p for r, p in zip(rows, ours_decode_points(how, files[tools[0]])) if run_key(r) in keys]
    for label, points in (extra_decode or {}).items():
        decode[label] = [p for r, p in zip(rows, points(files[tools[0]])) if run_key(r) in keys]
    decode, targets = ({k: [p[-1] for p in pts if keep(p)] for k, pts in decode.items()}
                       for keep in (lambda p: True, fp8_tp8))
    # MTP: the (configuration, concurrency) points every peer priced
    at = set.intersection(*({(r["id"], r["concurrency"]) for r in f["mtp"]["rows"]} for f in files.values()))
    ids = {i for i, _ in at}
    sources = {names[t]: [p for p in mtp_points(files[t]) if (p[0], p[1]) in at] for t in tools}
    sources["speclib, held out by model family"] = [p for p in ours_mtp_points(ids) if (p[0], p[1]) in at]
    speedup, fall, top = {}, {}, {}
    for name, pts in sources.items():
        first = {}
        for p in sorted(pts, key=lambda p: (p[0], p[1])):
            first.setdefault(p[0], p[1])
        speedup[name] = [p[4] / p[3] - 1 for p in pts if p[1] != first[p[0]]]
        f = falls(pts)
        fall[name], top[name] = [x[5] for x in f], [x[5] for x in f if x[6]]
    out = {}
    for subset, errors in zip(SUBSETS, (decode, targets, speedup, fall, top)):
        sizes = {len(e) for e in errors.values()}
        if len(sizes) != 1:
            raise RuntimeError(f"side_by_side: the tools place different numbers of points in {subset!r} "
                               f"({sorted(sizes)}): their errors would not be on the same points")
        out[subset] = {"points": sizes.pop(),
                       "median_abs_error": {k: float(np.median(np.abs(e))) for k, e in errors.items()}}
    return out


def side_by_side_report(tools=TOOLS, extra_decode=None) -> str:
    """:func:`side_by_side` in words (``benchmarks/bench_peer.py`` prints it)."""
    out = ["speclib and the peers on the same points (the runs and MTP points every peer places), median |error|:"]
    for subset, s in side_by_side(tools, extra_decode).items():
        out.append(f"  {subset} ({s['points']} points): " + "; ".join(
            f"{name} {100 * v:.1f} %" for name, v in s["median_abs_error"].items()))
    return "\n".join(out)


# --- the per-operation breakdown: what a verify's extra positions cost per layer ------------


def ops(data: dict = None) -> list:
    """The peer's per-operation latencies of both arms of every MTP point
    (:data:`OPS_FIELDS`), rows as dicts (copies)."""
    return [dict(r) for r in _data(data)["ops"]["rows"]]


def ops_steps(data: dict = None) -> list:
    """Each arm's schedule as the peer counts it (:data:`OPS_STEP_FIELDS`), rows as dicts (copies)."""
    return [dict(r) for r in _data(data)["ops"]["steps"]["rows"]]


#: The peer's two largest operations of a decode step: attention (MLA, with its projections) and the MoE block
#: (routed and shared experts overlapped, with the dispatch around them).
VERIFY_OPS = ("generation_mla_block", "generation_moe_overlap")


def r1_layers() -> int:
    """DeepSeek-R1's layers (:mod:`speclib.presets`), the count the peer prices
    each per-layer operation on: an MLA block on every one (R1's attention
    layers), and an MoE block on every one as well (R1's first three layers
    have a dense FFN, the preset's ``moe_layers`` leaves them out; the peer's
    DeepSeek model does not set them apart, so its MoE operation is 61
    blocks' worth)."""
    from .. import presets

    return int(presets.model("DeepSeek-R1").step_architecture().attention_layers)


def verify_extra_per_layer(op: str = "generation_mla_block", data: dict = None, draft_layers: bool = False) -> list:
    """What one extra verified position costs one layer's ``op``, in the
    peer's decode-only step, at each MTP point: (the MTP arm's op ms per step
    - the plain arm's) / (extra positions per step = the peer's batch per
    attention rank x gamma) / (:func:`r1_layers`), in microseconds, on its
    measured tables (``us``) and at speed of light (``sol_us``).

    The peer prices a step with MTP on as the model's layers plus gamma draft
    layers, every generation operation scaled by ``layer_scale`` = (layers +
    gamma) / layers; ``draft_layers=False`` (default) divides that scale out
    of the MTP arm first, so only the layers' extra positions are counted;
    ``True`` keeps the draft layers' work in the difference. Sorted by id and
    concurrency."""
    from .._checks import checked_choice

    d = _data(data)
    names = sorted({r["op"] for r in d["ops"]["rows"] if r["step"] == "decode"})
    op = checked_choice("op", op, names)
    if not isinstance(draft_layers, (bool, np.bool_)):
        raise ValueError(f"draft_layers must be True or False; got {draft_layers!r}")
    layers = r1_layers()
    per_step = {(r["id"], r["concurrency"], r["nextn"]): r for r in d["ops"]["rows"]
                if r["step"] == "decode" and r["op"] == op}
    steps = {(r["id"], r["concurrency"], r["nextn"]): r for r in d["ops"]["steps"]["rows"]}
    out = []
    for m in sorted(d["mtp"]["rows"], key=lambda r: (r["id"], r["concurrency"])):
        key, gamma = (m["id"], m["concurrency"]), int(m["gamma"])
        plain, mtp, sched = per_step[(*key, 0)], per_step[(*key, gamma)], steps[(*key, gamma)]
        scale = 1.0 if draft_layers else float(sched["layer_scale"])
        extra = int(sched["batch"]) * gamma
        us = [1e3 * (mtp[k] / scale - plain[k]) / extra / layers for k in ("ms_per_step", "sol_ms_per_step")]
        out.append({"id": key[0], "concurrency": key[1], "gamma": gamma, "batch": int(sched["batch"]),
                    "extra_positions": extra, "layers": layers, "layer_scale": scale, "plain_ms": plain["ms_per_step"],
                    "mtp_ms": mtp["ms_per_step"], "us": us[0], "sol_us": us[1], "source": mtp["source"]})
    return out


def verify_extra_summary(op: str = "generation_mla_block", data: dict = None, draft_layers: bool = False) -> dict:
    """The points of :func:`verify_extra_per_layer` summed up: how many, and the
    min, median and max microseconds per extra position per layer, measured
    tables and speed of light."""
    rows = verify_extra_per_layer(op, data, draft_layers)
    us, sol = np.array([r["us"] for r in rows]), np.array([r["sol_us"] for r in rows])
    return {"op": op, "points": int(us.size), "min_us": float(us.min()), "median_us": float(np.median(us)),
            "max_us": float(us.max()), "sol_min_us": float(sol.min()), "sol_median_us": float(np.median(sol)),
            "sol_max_us": float(sol.max())}


# --- in words ----------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def report(data: dict = None, ours: bool = True) -> str:
    """The stored comparison in words and numbers (``benchmarks/bench_peer.py`` prints it)."""
    d = _data(data)
    peer, run = d["peer"], d["run"]
    out = [f"{peer['name']} {peer['version']} ({peer['by']}, {peer['url']}), run {run['date']}, "
           f"{len(d['decode']['rows'])} decode runs and {len({r['id'] for r in d['mtp']['rows']})} MTP pairs priced."]
    out += ["", "Not priced:"]
    out += [f"  decode {r['chip']} {r['engine']} {r['weights']} {r['layout']} {r['workload']}: {r['runs']} runs: "
            f"{r['why']}" for r in d["decode"]["not_priced"]["rows"]]
    out += [f"  MTP {r['id']}: {r['why']}" for r in d["mtp"]["not_priced"]["rows"]]
    pts = mtp_points(d)
    out += ["", "MTP pairs: measured speed-up, the peer's (accepted draft tokens per step fitted at the smallest "
                "concurrency):"]
    out += [f"  {i:<48} c {c:>3} g {g}  {m:5.2f}  {q:5.2f}  accepted {a:.3f}" + ("  (fitted here)" if f else "")
            for i, c, g, m, q, a, f in pts]
    sources = [("the peer", pts)] + ([("speclib, held out by model family", ours_mtp_points({p[0] for p in pts}))]
                                     if ours else [])
    out += ["", "The fall of the gain (speed-up at a concurrency over the speed-up at the smallest), predicted / "
                "measured - 1:"]
    for name, p in sources:
        f = falls(p)
        s = fall_summary(p)
        out += [f"  {name}: median |error| {100 * s['median_abs_error']:.1f} % over {s['points']} points, "
                f"{100 * s['median_abs_error_top']:.1f} % at each configuration's largest concurrency "
                f"({s['configurations']} configurations; worst {100 * s['worst_abs_error_top']:.1f} %)"]
        out += [f"    {i:<48} c {c0:>3} -> {c:>3}  measured {m:.3f}  predicted {q:.3f}  {_pct(e)}"
                for i, c0, c, m, q, e, _ in f]
    tables = [("the peer", decode_points(d))]
    if ours:
        tables += [(f"speclib, {how}", ours_decode_points(how, d)) for how in OURS]
    out += ["", "Decode TPOT against the measured (runs; median |error|, median signed error): "
            + "; ".join(name for name, _ in tables)]
    for by in (("chip",), ("chip", "engine"), ("chip", "engine", "weights"), ("concurrency",)):
        cols = [decode_table(by, pts) for _, pts in tables]
        for rows in zip(*cols):
            out.append(f"  {' '.join(map(str, rows[0][:-3])):<18} {rows[0][-3]:>4} runs  "
                       + "   ".join(f"{100 * r[-2]:5.1f} % {_pct(r[-1]):>8}" for r in rows))
        out.append("")
    for name, pts in tables:
        s, t = decode_summary(pts), decode_summary(pts, fp8_tp8)
        out.append(f"  {name}: all {s['runs']} runs, median |error| {100 * s['median_abs_error']:.1f} %, signed "
                   f"{_pct(s['median_signed_error'])}; fp8 on TP8 (the targets' set, NVIDIA chips): {t['runs']} runs, "
                   f"{100 * t['median_abs_error']:.1f} %, {_pct(t['median_signed_error'])}")
    if "ops" in d:
        out += ["", "What one extra verified position costs one layer in the peer's decode step (us; its measured "
                    "tables, speed of light), MTP arm minus plain over batch x gamma over R1's layers:"]
        for draft in (False, True):
            for op in VERIFY_OPS:
                v = verify_extra_summary(op, d, draft)
                out.append(f"  {op} (draft layers {'kept' if draft else 'out'}): {v['points']} points, min "
                           f"{v['min_us']:.3f}, median {v['median_us']:.3f}, max {v['max_us']:.3f}; SOL median "
                           f"{v['sol_median_us']:.3f}")
        rows = {op: verify_extra_per_layer(op, d) for op in VERIFY_OPS}
        out += [f"    {a['id']:<48} c {a['concurrency']:>3} g {a['gamma']}  MLA {a['us']:7.3f} ({a['sol_us']:6.3f})  "
                f"MoE {b['us']:7.3f} ({b['sol_us']:6.3f})" for a, b in zip(*rows.values())]
    out += ["", "Assumptions:"] + [f"  - {a}" for a in d["assumptions"]]
    return "\n".join(out)
