"""The fitted step in words and numbers: its constants with their intervals
and an independent estimate of what each stands for, the hold-outs side by
side, DeepSeek-R1's decode and MTP runs against their predictions, and the
targets, as the engines chapter and ``benchmarks/bench_step_fit.py`` print
them."""
from __future__ import annotations

import numpy as np


from speclib.evidence import decode_runs as _dec
from speclib.evidence import spec_runs as _spec
from speclib.calibration.held_out import GROUPINGS, HeldOut, held_out_workloads, stored_held_out, stored_term_ablation
from speclib.calibration.step_features import BY_VENDOR, SHIPPED_FORM, chip_key
from speclib.calibration.step_fit import decode_rows, fit
from speclib.calibration.step_predictions import best_draft, predict_decode

#: The constants a reader reads off a fit: scale to the unit, and the unit.
UNITS = {"per_sequence": (1e6, "\u00b5s per sequence per step"),
         "per_position": (1e6, "\u00b5s per verified position past the first, per sequence, over 80 attention "
                               "layers"),
         "token_layer": (1e9, "ns per token per layer"),
         "extra_flops": (1.0, "\u00d7 the extra positions' FLOPs at peak (1 / eta)"),
         "per_draft_pass": (1e3, "ms per drafter pass"), "compute": (1.0, "\u00d7 FLOPs at peak (\u03ba)"),
         "prefill": (1.0, "\u00d7 the prefill's roofline"),
         "moe_fixed": (1e6, "\u00b5s per MoE layer per step"),
         "attention_factor": (1.0, "\u00d7 attention's roofline, on top of \u03bc")}
#: Terms fitted per vendor (or pooled), listed after the one-number constants.
_PER_VENDOR = BY_VENDOR + ("moe_fixed", "attention_factor")


#: Where a fitted constant sits in a calibration's bootstrap draw
#: (:data:`speclib.core.calibrated.DRAW_FIELDS`): its field, then its keys.
_DRAW_FIELD = {"factor": "roofline_factor", "fixed": "fixed_s", "per_sequence": "per_sequence_s",
               "per_position": ("per_position_s", "per_position_by_vendor"), "extra_flops": "extra_flops_by_vendor",
               "per_draft_pass": "per_draft_pass_s", "prefill": "prefill_factor", "compute": "compute_factor",
               "moe_fixed": "moe_layer_s", "attention_factor": "attention_factor_by_vendor",
               "token_layer": "token_layer_by_vendor"}


def _draw_value(draw: dict, key) -> float:
    """The constant ``key`` (a fit's name for it) in one bootstrap draw."""
    term = key[0] if isinstance(key, tuple) else key
    field = _DRAW_FIELD[term]
    if isinstance(field, tuple):  # one number, or one per vendor
        field = field[0] if not isinstance(key, tuple) else field[1]
    value = draw.get(field, 0.0)
    for part in (key[1:] if isinstance(key, tuple) else ()):
        value = value.get(part, np.nan) if isinstance(value, dict) else np.nan
    if isinstance(value, dict):  # a term pooled over the vendors: the same number under each
        pooled = set(value.values())
        return float(pooled.pop()) if len(pooled) == 1 else np.nan
    return float(value)


def constants(calibration=None) -> list:
    """Every fitted constant of the shipped form with its 5-95 % interval over
    the shipped calibration's bootstrap draws (model families resampled,
    :func:`speclib.calibration.held_out.bootstrap_fits`): (constant, value,
    interval, unit) in the unit of :data:`UNITS`; the chip factors (mu) and
    fixed times (a) after them."""
    from ..core.calibrated import shipped_calibration

    calibration = shipped_calibration() if calibration is None else calibration
    f = fit(SHIPPED_FORM)
    named = [(k, k, *UNITS[k]) for k in UNITS if k in f.theta]
    named += [(k, f"{k[0]}, {k[1]}", *UNITS[k[0]])
              for k in sorted((k for k in f.theta if isinstance(k, tuple) and k[0] in _PER_VENDOR), key=str)]
    for k in sorted((k for k in f.theta if isinstance(k, tuple) and k[0] in ("factor", "fixed")
                     and k not in f.imputed), key=str):
        named.append((k, f"\u03bc {k[1]}", 1.0, "\u00d7 the roofline") if k[0] == "factor"
                     else (k, f"a {k[1]}, {k[2]}", 1e3,
                           "ms per step" + (" (a model of L_ref layers)" if f.fixed == "layers" else "")))
    out = []
    for k, name, scale, unit in named:
        draws = np.array([_draw_value(d, k) for d in calibration.draws])
        draws = draws[np.isfinite(draws)]
        lo, hi = (np.percentile(draws, 5) * scale, np.percentile(draws, 95) * scale) if draws.size else (np.nan,) * 2
        out.append((name, f.theta[k] * scale, f"{lo:.3g} \u2013 {hi:.3g}", unit, identified(f.theta[k] * scale, lo, hi)))
    return out


def identified(value: float, lo: float, hi: float) -> str:
    """Whether the runs identify a constant fitted non-negative: "not
    identified" where it sits at zero with its whole interval there (the
    other terms take up what it stands for), "not bounded from zero" where
    its interval reaches zero, else "" (identified)."""
    if value == 0.0 and hi == 0.0:
        return "not identified: at zero in every refit"
    if lo <= 0.0 < hi:
        return "not bounded from zero: some refits put it at zero"
    return ""


#: What each fitted term stands for, estimated without the fit: (term, what it
#: stands for, the estimate, its source key in references.bib). Numbers are
#: the sources' own; the arithmetic in the estimate is ours and says so.
ESTIMATES = (
    ("moe_fixed", "kernels a MoE layer adds to a decode step",
     "13 modules per MoE layer in TensorRT-LLM's DeepSeek-R1 decode step; the smallest GEMM in a CUDA graph takes "
     "2.44 \u00b5s on H200 and an m = 1 GEMM 7.94 \u00b5s (median): 13 \u00d7 2.4 to 13 \u00d7 7.9 = 32 to 103 \u00b5s",
     "trtllm2025r1b200,aiconfigurator2026"),
    ("per_sequence", "the host's work for each request in a step",
     "about 29 \u00b5s per request (SGLang on H100, a fit to a published series of step times by batch); vLLM's "
     "output processing about 1.1 \u00b5s per request",
     "sglangomni760,vllm46112"),
    ("per_position", "what each verified position past the first adds in each attention layer (a verify runs "
     "its positions through the engine's multi-query kernel, not the one-query decode kernel, and writes the "
     "cache of positions then rejected), and sampling and the rejection test once",
     "{peer_mla}; sampling: top-k/top-p over a 131k vocabulary, 0.7 to 1.5 \u00b5s per row (FlashInfer), 11 to "
     "16 \u00b5s per row (PyTorch's sort)",
     "aiconfigurator2026,vllm40376"),
    ("token_layer", "the work per token per layer the roofline does not count (activations between kernels, "
     "norms, quantising activations, a MoE layer's token permutation)",
     "{peer_norm}", "aiconfigurator2026"),
    ("extra_flops", "the arithmetic of each verified position past the first, against the chip's peak",
     "no published figure for these engines at these shapes (a few rows per GEMM, run far from the peak: so "
     "more than 1)", ""),
    ("attention_factor", "decode attention's kernels against the bandwidth",
     "FlashMLA reads 3,000 GB/s on an H800 (about 90 % of its bandwidth); AMD's AITER MLA decode kernel has a floor "
     "of 12.8 to 15.5 \u00b5s a call at tiny contexts, 61 calls a DeepSeek step",
     "flashmla2025,aiter3188"),
    ("prefill", "the prefill's efficiency against its roofline", "no published figure for these engines and chips",
     ""),
)


#: Sampling and the rejection test over a 131k vocabulary, seconds per row
#: (FlashInfer at the low end, PyTorch's sort at the high end; :data:`ESTIMATES`).
SAMPLER_S = (0.7e-6, 16e-6)


def peer_verify_estimate() -> dict:
    """What NVIDIA's AIConfigurator's measured tables give a verify's extra
    positions in DeepSeek-R1's attention block, microseconds per extra
    position per attention layer, over its MTP pairs
    (:func:`speclib.evidence.peer.verify_extra_summary`), and what that is
    for a model of L_ref attention layers with the sampler once a position,
    in seconds: the range the fitted e is held against."""
    from speclib.calibration.step_features import layers_ref

    from speclib.evidence import peer as _peer

    mla = _peer.verify_extra_summary("generation_mla_block")
    layers = layers_ref()
    lo, hi = max(mla["min_us"], 0.0) * 1e-6 * layers + SAMPLER_S[0], mla["max_us"] * 1e-6 * layers + SAMPLER_S[1]
    return {**{f"mla_{k}": v for k, v in mla.items() if k.endswith("_us")}, "points": mla["points"],
            "per_position_lo_s": lo, "per_position_hi_s": hi, "layers_ref": layers}


def estimate_ranges() -> dict:
    """The estimates of :data:`ESTIMATES` as numbers (seconds, in the fitted
    term's own unit), for the chapter's comparisons: the range the sources'
    figures give each term."""
    peer = peer_verify_estimate()
    return {"moe_fixed": (32e-6, 103e-6), "per_sequence": (1.1e-6, 29e-6),
            "per_position": (peer["per_position_lo_s"], peer["per_position_hi_s"])}


def estimate_rows(f=None) -> list:
    """Each fitted term beside its independent estimate: (term, what it
    stands for, fitted value in its unit, the estimate, citation keys)."""
    f = fit(SHIPPED_FORM) if f is None else f
    peer = peer_verify_estimate()
    fills = {"peer_mla": (f"AIConfigurator's measured tables for DeepSeek-R1 on eight B200 and H200 (SGLang and "
                          f"TensorRT-LLM): a verify's MLA block costs {peer['mla_min_us']:.2f} to "
                          f"{peer['mla_max_us']:.2f} \u00b5s (median {peer['mla_median_us']:.2f}) more per extra "
                          f"position per attention layer than a decode's, over {peer['points']} points, as it "
                          "prices each position's own read of the cache"),
             "peer_norm": "no separate published figure; AIConfigurator's norms and residual adds grow with the tokens "
                          "of a step"}
    out = []
    for term, what, estimate, cite in ESTIMATES:
        estimate = estimate.format(**fills)
        scale, unit = UNITS[term]
        values = {k[1] if isinstance(k, tuple) else "": v for k, v in f.theta.items()
                  if (k[0] if isinstance(k, tuple) else k) == term}
        fitted = "; ".join(f"{who + ' ' if who else ''}{v * scale:.3g}" for who, v in sorted(values.items()))
        out.append((term, what, f"{fitted} {unit}" if values else "not in the form", estimate, cite))
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


# --- DeepSeek-R1's runs against their predictions ----------------------------------------


def r1_decode_predicted(runs=None) -> np.ndarray:
    """The shipped calibration's TPOT (s) for each DeepSeek-R1 decode run
    (:func:`speclib.evidence.decode_runs.calibrated_tpot`; default: every run the fit uses)."""
    return _dec.calibrated_tpot(decode_rows()[0] if runs is None else runs)


def r1_decode_rows(held: HeldOut = None) -> list:
    """DeepSeek-R1's decode runs of the targets' set by chip, engine and
    workload: (chip, engine, workload, runs, median measured TPOT ms, median
    predicted ms, median signed error, median signed error held out by chip)."""
    held = stored_held_out("chip") if held is None else held
    runs, y = decode_rows()
    pred = predict_decode(fit(SHIPPED_FORM))
    keep = _dec.target_subset(runs)
    out = {}
    for i in np.flatnonzero(keep):
        r = runs[i]
        out.setdefault((chip_key(r.chip), r.engine, r.workload), []).append(i)
    rows = []
    for (chip, engine, workload), idx in sorted(out.items()):
        idx = np.array(idx)
        rows.append((chip, engine, workload, len(idx), 1e3 * float(np.median(y[idx])),
                     1e3 * float(np.median(pred[idx])), float(np.median(pred[idx] / y[idx] - 1)),
                     float(np.median(held.decode_predicted[idx] / y[idx] - 1))))
    return rows


def mtp_rows(held: HeldOut = None) -> list:
    """DeepSeek-R1's MTP pairs held out by model family: (configuration,
    concurrency, gamma, measured speed-up, predicted, lo, hi, scored, same
    run) for every point."""
    held = stored_held_out("model") if held is None else held
    rows = []
    for p in held.runs:
        if p.run.source != _dec.SOURCES["r1"]:
            continue
        for b, g, m, q, lo, hi, ok in zip(p.batch, p.gamma, p.measured, p.predicted, p.lo, p.hi, p.scored):
            rows.append((p.run.label, int(b), int(g), float(m), float(q), float(lo), float(hi), bool(ok)))
    return rows


# --- skill over the null baselines, and what the intervals cover -------------------------

#: The groupings the targets hold the step out by, with their words.
SKILL_GROUPINGS = {"model": "by model family", "chip": "by chip"}
#: A family with fewer points than this has no coverage target of its own (too few to read a share off).
COVERAGE_MIN_POINTS = 20
#: The share of points an 80 % interval is to hold, within each unit.
COVERAGE_TARGET = (0.70, 0.90)


def skill_table(by: str = "model", held: HeldOut = None) -> list:
    """Every held-out figure of the hold-out ``by`` a grouping (as stored)
    beside its null baselines on the same items
    (:func:`speclib.calibration.baselines.skill_rows`)."""
    from speclib.calibration.held_out import skill_of

    return skill_of(stored_held_out(by) if held is None else held)


def coverage_rows(held: HeldOut = None, by: str = None) -> list:
    """What the intervals of a hold-out cover, per model family and per chip:
    (per, key, points inside, scored points) (:func:`speclib.calibration.conformal.coverage_by`)."""
    from speclib.calibration.conformal import coverage_by

    held = stored_held_out(by or "model") if held is None else held
    return ([("family", k, a, n) for k, a, n in coverage_by(held, lambda p: p.run.family)]
            + [("chip", k, a, n) for k, a, n in coverage_by(held, lambda p: chip_key(p.run.chip))])


def interval_words(by: str) -> str:
    """The name of the intervals of a hold-out ``by`` a grouping."""
    from speclib.calibration.conformal import interval_name

    return interval_name({"run": "runs", "model": "model families", "source": "sources", "chip": "chips"}[by])


def _beats_every_baseline(rows) -> tuple:
    """(every baseline beaten, what each figure scored against each
    baseline) of :func:`skill_table` rows, leaving out the in-sample one."""
    kept = [r for r in rows if "in-sample" not in r[3] and not r[0].startswith("decode TPOT")]
    words = "; ".join(f"{r[0].split(' (')[0].replace('the same points: ', 'past the smallest batch, ')} {r[2]}, "
                      f"{r[3]} {r[4]}" for r in kept)
    return all(r[5] == "yes" for r in kept), words


def _coverage_target(rows, per: str, min_points: int) -> tuple:
    lo, hi = COVERAGE_TARGET
    kept = [(k, a, n) for p, k, a, n in rows if p == per and n >= min_points]
    return (bool(kept) and all(lo <= a / n <= hi for _, a, n in kept),
            ", ".join(f"{k} {a} of {n} ({100 * a / n:.0f} %)" for k, a, n in kept) or "none")


# --- the targets -------------------------------------------------------------------------


def _concurrency_rows(e, conc) -> list:
    return [(int(c), int((conc == c).sum()), float(np.median(e[conc == c]))) for c in np.unique(conc)]


def r1_decode_summary(predicted=None) -> dict:
    """The targets' DeepSeek-R1 runs through the public function: runs,
    median |error|, the worst median signed error by concurrency (all, and
    over concurrencies of five runs or more), and the 8k/1k runs' median."""
    runs, y = decode_rows()
    keep = _dec.target_subset(runs)
    sub = [r for r, k in zip(runs, keep) if k]
    pred = r1_decode_predicted(sub) if predicted is None else np.asarray(predicted)[keep]
    e = pred / y[keep] - 1
    conc = np.array([r.concurrency for r in sub])
    by_conc = _concurrency_rows(e, conc)
    long = np.array([r.workload == "8k1k" for r in sub])
    return {"runs": int(e.size), "median_abs_error": float(np.median(np.abs(e))),
            "worst_median_signed": max(abs(m) for _, _, m in by_conc),
            "worst_median_signed_5": max(abs(m) for _, n, m in by_conc if n >= 5),
            "long_prompt_median_abs_error": float(np.median(np.abs(e[long]))), "by_concurrency": by_conc}


#: The two kinds of target: plain decoding's time per output token, and speculation's speed-ups.
TARGET_KINDS = ("decode", "speculative")
#: What a target's "met" says of a figure from constants or a form fitted on
#: the runs it is scored on: reported, never counted as met.
IN_SAMPLE = "in-sample"


def held_out_best_draft(run_id: str, held: HeldOut = None) -> dict:
    """{batch: best draft length} of a run predicted by the step fitted
    without its model family, in the form that family's fold chose
    (:func:`speclib.calibration.step_predictions.best_draft`)."""
    from speclib.calibration.held_out import _fold

    held = stored_held_out("model") if held is None else held
    run = _spec.spec_run(run_id)
    return best_draft(_fold("model", run.family).fit(held.forms[run.family]), run)


def measured_best_draft(run_id: str) -> dict:
    """{batch: the draft length measured best} of a run (its best point per
    batch: the only one where a source printed one)."""
    run = _spec.spec_run(run_id)
    out = {}
    for b, g, v in run.points:
        if b not in out or v > out[b][1]:
            out[b] = (g, v)
    return {b: g for b, (g, _) in sorted(out.items())}


def r1_points(held: HeldOut = None, nvidia_only: bool = True) -> list:
    """DeepSeek-R1's MTP pairs as (id, concurrency, gamma, measured, predicted)
    under ``held`` (default: held out by model family), on the pairs the peer
    priced (NVIDIA chips) or on every pair."""
    from speclib.evidence import peer

    held = stored_held_out("model") if held is None else held
    ids = {r[0] for r in peer.mtp_points()} if nvidia_only else {
        p.run.id for p in held.runs if p.run.id.startswith(_spec.R1_PAIR_PREFIX)}
    return [(p.run.id, int(b), int(g), float(m), float(q)) for p in held.runs if p.run.id in ids
            for b, g, m, q in zip(p.batch, p.gamma, p.measured, p.predicted)]


def r1_falls(held: HeldOut = None, nvidia_only: bool = True) -> dict:
    """The fall of DeepSeek-R1's MTP gain with concurrency
    (:func:`speclib.evidence.peer.fall_summary`) of :func:`r1_points`."""
    from speclib.evidence import peer

    return peer.fall_summary(r1_points(held, nvidia_only))


def targets(model: HeldOut = None, run: HeldOut = None, chip: HeldOut = None, *, kind: str = None) -> list:
    """The targets, (what, target, measured, met): DeepSeek-R1 decode through
    the public function, the hold-outs by chip, by model family and by run
    (default: the stored ones, :func:`speclib.calibration.held_out.stored_held_out`),
    the decode runs across workloads, the decisions a deployment is priced
    for (where speculation stops paying, the best draft as batch grows) and
    what a transferable step must keep. ``kind`` (:data:`TARGET_KINDS`):
    only the targets on plain decoding's time per output token, or only
    those on speculation (None: every one)."""
    from speclib.evidence import peer

    if kind is not None and kind not in TARGET_KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, TARGET_KINDS))} or None; got {kind!r}")
    model = stored_held_out("model") if model is None else model
    run = stored_held_out("run") if run is None else run
    chip = stored_held_out("chip") if chip is None else chip
    runs = decode_rows()[0]
    llama = np.array([r.family == "Llama" for r in runs])
    m, r, ch = model.summary(), run.summary(), chip.summary()
    c = chip.decode_summary()
    lr = run.decode_summary(llama)
    hit, n = model.best_hits()
    r1 = r1_decode_summary()
    v4 = model.run("vllm-v4pro-mi355x")
    v4_32 = float(v4.predicted[v4.batch == 32][0])
    v4_meas = float(v4.measured[v4.batch == 32][0])
    qwen = held_out_best_draft("sglang-autospec", model)
    q = [qwen[b] for b in sorted(qwen)]
    gpt = held_out_best_draft("vllm-peagle-gptoss120b", model)
    scout = held_out_best_draft("trtllm-ngram-llama4-scout", model)
    falls, peer_falls = r1_falls(model), peer.fall_summary(peer.mtp_points())
    across = held_out_workloads()
    llama_across = [row for row in across if {row[0], row[1]} <= {"1k1k", "1k8k"}]
    worst_med = max(med for *_, med, _ in llama_across)
    worst_bias = max(bias for *_, bias in llama_across)
    long_ctx = _long_context()
    falling = lambda d: d[min(d)] > d[max(d)]  # noqa: E731 - fewer drafts at the largest batch than the smallest
    arrow = lambda d: " \u2192 ".join(str(d[b]) for b in sorted(d))  # noqa: E731
    DECODE, SPECULATIVE = TARGET_KINDS
    skill = {by: _beats_every_baseline(skill_table(by, held)) for by, held in (("model", model), ("chip", chip))}
    tpot = {by: [r for r in skill_table(by, held) if r[0].startswith("decode TPOT")][0]
            for by, held in (("model", model), ("chip", chip))}
    cover = {by: coverage_rows(held) for by, held in (("model", model), ("chip", chip))}
    rows = [
        ("DeepSeek-R1 decode, fp8, 8 GPUs in tensor parallel, five chips: median |error| through speclib.tpot "
         "(in-sample: the shipped constants are fitted on these runs)",
         "\u2264 12 %", _pct(r1["median_abs_error"]), IN_SAMPLE, DECODE),
        ("the same: worst median signed error by concurrency (all; concurrencies of 5 runs or more)", "\u2264 15 %",
         f"{_pct(r1['worst_median_signed'])}; {_pct(r1['worst_median_signed_5'])}", IN_SAMPLE, DECODE),
        ("decode TPOT held out by model family: median |error|, beside its chip and engine's median TPOT",
         "\u2264 15 %, and below the baseline", f"{tpot['model'][2]} (baseline {tpot['model'][4]})",
         float(tpot["model"][2].rstrip(" %")) <= 15.0 and tpot["model"][5] == "yes", DECODE),
        ("decode TPOT held out by chip: median |error|, beside its engine's median TPOT",
         "below the baseline", f"{tpot['chip'][2]} (baseline {tpot['chip'][4]})", tpot["chip"][5] == "yes", DECODE),
        ("decode held out by chip: median |error|", f"\u2264 12 % over \u2265 300 runs",
         f"{_pct(c['decode_median_abs_error'])} over {c['decode_runs']:,}",
         c["decode_median_abs_error"] <= 0.12 and c["decode_runs"] >= 300, DECODE),
        ("decode held out by chip: worst median signed error by concurrency", "\u2264 20 %",
         _pct(c["decode_worst_median_signed"]), c["decode_worst_median_signed"] <= 0.20, DECODE),
        ("by model family: the step beats every null baseline, each scored on its points", "each one beaten",
         skill["model"][1], skill["model"][0], SPECULATIVE),
        ("by chip: the step beats every null baseline, each scored on its points", "each one beaten",
         skill["chip"][1], skill["chip"][0], SPECULATIVE),
        ("by model family: speed-up, median |error|", "\u2264 12 %", _pct(m["median_abs_error"]),
         m["median_abs_error"] <= 0.12, SPECULATIVE),
        ("by model family: median over runs of each run's median |error|", "\u2264 10 %",
         _pct(m["run_median_abs_error"]), m["run_median_abs_error"] <= 0.10, SPECULATIVE),
        ("by chip: median over runs of each run's median |error|", "\u2264 10 %",
         _pct(ch["run_median_abs_error"]), ch["run_median_abs_error"] <= 0.10, SPECULATIVE),
        ("by model family: speed-up, 90th percentile |error|", "\u2264 30 %", _pct(m["p90_abs_error"]),
         m["p90_abs_error"] <= 0.30, SPECULATIVE),
        ("by model family: gain on the right side of 1\u00d7", "\u2265 95 % of points", _pct(m["sign_right"]),
         m["sign_right"] >= 0.95, SPECULATIVE),
        ("by model family: best draft length within \u00b11", "\u2265 85 % of (run, batch)", f"{hit} of {n}",
         hit >= 0.85 * n, SPECULATIVE),
        ("by model family: the gain's direction with batch (falling, flat, rising)", "\u2265 90 % of sweeps",
         f"{m['direction_right']} of {m['direction_sweeps']}",
         m["direction_right"] >= 0.9 * m["direction_sweeps"], SPECULATIVE),
        (f"by model family: points inside their {interval_words('model')}, in each family of "
         f"{COVERAGE_MIN_POINTS} points or more", "70\u201390 % in each",
         _coverage_target(cover["model"], "family", COVERAGE_MIN_POINTS)[1],
         _coverage_target(cover["model"], "family", COVERAGE_MIN_POINTS)[0], SPECULATIVE),
        ("the same: in each chip", "70\u201390 % in each", _coverage_target(cover["model"], "chip", 1)[1],
         _coverage_target(cover["model"], "chip", 1)[0], SPECULATIVE),
        (f"by chip: points inside their {interval_words('chip')}, in each chip", "70\u201390 % in each",
         _coverage_target(cover["chip"], "chip", 1)[1], _coverage_target(cover["chip"], "chip", 1)[0], SPECULATIVE),
        (f"the same: in each family of {COVERAGE_MIN_POINTS} points or more", "70\u201390 % in each",
         _coverage_target(cover["chip"], "family", COVERAGE_MIN_POINTS)[1],
         _coverage_target(cover["chip"], "family", COVERAGE_MIN_POINTS)[0], SPECULATIVE),
        ("DeepSeek-R1 MTP pairs on NVIDIA chips, by model family: the fall of the gain, median |error| (all; at "
         "the top concurrency)", f"\u2264 5 %; \u2264 10 % (AIConfigurator: {_pct(peer_falls['median_abs_error'])}; "
         f"{_pct(peer_falls['median_abs_error_top'])})",
         f"{_pct(falls['median_abs_error'])}; {_pct(falls['median_abs_error_top'])}",
         falls["median_abs_error"] <= 0.05 and falls["median_abs_error_top"] <= 0.10, SPECULATIVE),
        ("Llama-3.3-70B decode held out by sweep: median |error| (in-sample form: chosen on every run)", "\u2264 7 %",
         _pct(lr["decode_median_abs_error"]), IN_SAMPLE, DECODE),
        ("the same: worst median signed error by concurrency", "\u2264 15 %", _pct(lr["decode_worst_median_signed"]),
         IN_SAMPLE, DECODE),
        ("DeepSeek-R1's 8k/1k runs (long prompts), median |error| through speclib.tpot (in-sample)", "reported",
         _pct(r1["long_prompt_median_abs_error"]), IN_SAMPLE, DECODE),
        ("by run: speed-up, median |error| (in-sample form: chosen on every run)", "\u2264 7 %",
         _pct(r["median_abs_error"]), IN_SAMPLE, SPECULATIVE),
        ("Llama decode fitted on one workload, tested on the other: worst median |error| (in-sample form)",
         "\u2264 12 %", _pct(worst_med), IN_SAMPLE, DECODE),
        ("the same: worst median signed error by concurrency", "\u2264 15 %", _pct(worst_bias), IN_SAMPLE,
         DECODE),
        ("DeepSeek-V4-Pro, 8 x MI355X, concurrency 32, held out by model family",
         f"within 25 % of {v4_meas:.2f}\u00d7, or below 1\u00d7", f"{v4_32:.2f}\u00d7",
         v4_32 < 1.0 or abs(v4_32 / v4_meas - 1.0) <= 0.25, SPECULATIVE),
        ("Qwen3-235B best draft length, batch 1 \u2192 64, held out by model family", "falling", arrow(qwen),
         q[0] > q[-1], SPECULATIVE),
        ("gpt-oss-120b best draft length, batch 1 \u2192 8, held out by model family",
         f"falling (measured {arrow(measured_best_draft('vllm-peagle-gptoss120b'))})", arrow(gpt), falling(gpt),
         SPECULATIVE),
        ("Llama-4-Scout best draft length, batch 1 \u2192 32, held out by model family",
         f"falling (measured {arrow(measured_best_draft('trtllm-ngram-llama4-scout'))})", arrow(scout),
         falling(scout), SPECULATIVE),
        ("Llama-3.3-70B, 8 x H200, batch 256, alpha 0.7: gamma* at 32k context, at 1k (in-sample: the shipped "
         "constants)", "> 0 (a gain), 0 (a loss)", f"{long_ctx[32768]}, {long_ctx[1024]}", IN_SAMPLE, SPECULATIVE),
    ]
    return [(*row[:3], row[3] if row[3] is IN_SAMPLE else "yes" if row[3] else "no") for row in rows
            if kind in (None, row[4])]


def _long_context() -> dict:
    """{context: gamma*} of a dense model at batch 256 under the shipped calibrated step."""
    from ..core.deployment import Deployment
    from ..core.speculation import optimal_gamma

    dep = Deployment("llama-3-70b", "H200", tp=8, step_time="calibrated")
    return {S: int(optimal_gamma(0.7, 256, S, 0.05, deployment=dep)[0]) for S in (1024, 32768)}


GROUPING_LABELS = {"run": "one run", "model": "one model family", "source": "one source", "chip": "one chip"}


def holdout_rows(helds=None) -> list:
    """The hold-outs side by side: (what, by run, by model family, by source, by chip)."""
    helds = helds or {by: stored_held_out(by) for by in GROUPINGS}
    s = {by: h.summary() for by, h in helds.items()}
    hits = {by: h.best_hits() for by, h in helds.items()}
    rows = [("speed-up, median |error|", "median_abs_error", _pct), ("speed-up, 90th percentile |error|",
            "p90_abs_error", _pct), ("median over runs of each run's median |error|", "run_median_abs_error", _pct),
            ("gain on the right side of 1\u00d7", "sign_right", _pct),
            ("points inside their 80 % cross-conformal interval over the grouping's unit", "interval_coverage", _pct),
            ("decode TPOT, median |error|", "decode_median_abs_error", _pct),
            ("decode TPOT, worst median signed error by concurrency", "decode_worst_median_signed", _pct)]
    out = [(what, *(fmt(s[by][key]) for by in GROUPINGS)) for what, key, fmt in rows]
    out.append(("best draft length within \u00b11", *(f"{hits[by][0]} of {hits[by][1]}" for by in GROUPINGS)))
    out.append(("the gain's direction with batch right", *(f"{s[by]['direction_right']} of {s[by]['direction_sweeps']}"
                                                           for by in GROUPINGS)))
    out.append(("form fitted", "the shipped one (chosen on every run: in-sample)",
                *("chosen in each fold",) * (len(GROUPINGS) - 1)))
    return out


def family_rows(held: HeldOut = None) -> list:
    """Held out by model family, per family: (family, runs, points, median
    |error|, median signed error, share of points inside their interval,
    runs whose acceptance is fitted at their smallest batch, the form its
    fold chose)."""
    held = stored_held_out("model") if held is None else held
    out = []
    for fam in sorted(held.forms):
        preds = [p for p in held.runs if p.run.family == fam]
        if not preds:
            continue
        e = np.concatenate([p.error[p.scored] for p in preds])
        inside = np.concatenate([((p.measured >= p.lo) & (p.measured <= p.hi))[p.scored] for p in preds])
        out.append((fam, len(preds), int(e.size), float(np.median(np.abs(e))) if e.size else float("nan"),
                    float(np.median(e)) if e.size else float("nan"),
                    float(np.mean(inside)) if inside.size else float("nan"),
                    sum(1 for p in preds if _spec.alpha_fitted(p.run)), held.forms[fam].label))
    return out


def report() -> str:
    """The fit in words and numbers, as ``benchmarks/bench_step_fit.py``
    prints it: the constants with their intervals (:func:`constants`), each
    beside its independent estimate, the hold-outs side by side, by family,
    DeepSeek-R1's decode by chip and workload, its MTP pairs, every point
    held out by model family with its interval, and the targets."""
    f = fit(SHIPPED_FORM)
    out = [f"The shipped form: {SHIPPED_FORM.label}.",
           "Constants (fit on every run; 5-95 % over refits to resampled model families):"]
    out += [f"  {name:<26} {value:9.3g} {unit}  [{interval}]" + (f"  ({note})" if note else "")
            for name, value, interval, unit, note in constants()]
    if f.alphas:
        out.append("  acceptance fitted to a run's smallest batch (not reported): "
                   + ", ".join(f"{k} {v:.3f}" for k, v in f.alphas.items()))
    out += ["", "Each fitted term beside an independent estimate of what it stands for:"]
    out += [f"  {term}: {what}: fitted {fitted}; estimate: {estimate}" for term, what, fitted, estimate, _ in
            estimate_rows(f)]
    out += ["", "Held out (" + ", ".join(GROUPING_LABELS.values()) + " at a time):"]
    out += ["  " + " ".join([f"{row[0]:<52}"] + [f"{v:>20}" for v in row[1:]]) for row in holdout_rows()]
    for by, words in SKILL_GROUPINGS.items():
        out += ["", f"Held out {words[3:]}, every figure beside its null baselines on the same items "
                    "(the step | the baseline | the baseline's | the step beats it):"]
        out += [f"  {fig[:58]:<58} {n:>5}  {step:>10}  {name[:60]:<60} {base:>10}  {verdict}"
                for fig, n, step, name, base, verdict in skill_table(by)]
        out += [f"  inside their {interval_words(by)}: "
                + "; ".join(f"{per} {k} {a} of {n}" for per, k, a, n in coverage_rows(by=by))]
    out += ["", "Held out by model family, per family (form chosen in the fold):"]
    out += [f"  {fam:<10} {n:>2} runs {pts:>3} points  median {100 * med:5.1f} %  signed {100 * bias:+5.1f} %  "
            f"inside {100 * cov:5.1f} %  acceptance fitted in {fitted}  {form}"
            for fam, n, pts, med, bias, cov, fitted, form in family_rows()]
    out += ["", "DeepSeek-R1 decode (fp8, TP8 plain) by chip, engine and workload: measured, predicted, "
                "signed error, held out by chip:"]
    out += [f"  {chip:<7} {engine:<7} {wl:<5} {n:>3} runs  {meas:6.1f} ms  {pred:6.1f} ms  {100 * e:+6.1f} %  "
            f"{100 * h:+6.1f} %" for chip, engine, wl, n, meas, pred, e, h in r1_decode_rows()]
    out += ["", "Each term against the hold-outs (the form fixed, not chosen in each fold: the shipped form's row is "
                "in-sample, its form chosen on every run), by model family | by chip:"]
    for label, by in stored_term_ablation():
        m, c = by["model"], by["chip"]
        out.append(f"  {label[:62]:<62} median {_pct(m['median_abs_error'])}, p90 {_pct(m['p90_abs_error'])}, "
                   f"sign {_pct(m['sign_right'])}, best {m['best_gamma_within_1']}/{m['best_gamma_points']}, "
                   f"direction {m['direction_right']}/{m['direction_sweeps']} | median {_pct(c['median_abs_error'])}, "
                   f"direction {c['direction_right']}/{c['direction_sweeps']}, decode {_pct(c['decode_median_abs_error'])}")
    out += ["", "How the gain moves with batch, each sweep (change per doubling, measured and predicted by model "
                "family held out):"]
    out += [f"  {rid:<48} \u03b3 {g}  {b[0]}-{b[-1]}  {100 * np.expm1(m):+6.1f} %  {100 * np.expm1(q):+6.1f} %  "
            + ("right" if ok else "wrong") for rid, g, b, m, q, ok in stored_held_out("model").directions()]
    from speclib.evidence import peer as _peer

    falls, peer_falls = r1_falls(), _peer.fall_summary(_peer.mtp_points())
    sim_falls = _peer.fall_summary(_peer.mtp_points("aisimulate"))
    out += ["", "DeepSeek-R1's MTP pairs on NVIDIA chips, the fall of the gain from the smallest concurrency, median "
                f"|error| over all points and at the top concurrency: speclib held out by model family "
                f"{_pct(falls['median_abs_error'])}, {_pct(falls['median_abs_error_top'])}; AIConfigurator "
                f"{_pct(peer_falls['median_abs_error'])}, {_pct(peer_falls['median_abs_error_top'])}; AISimulate "
                f"{_pct(sim_falls['median_abs_error'])}, {_pct(sim_falls['median_abs_error_top'])}"]
    out += ["", "DeepSeek-R1 MTP pairs held out by model family (speed-up, measured and predicted [80 % cross-conformal "
                "over model families]):"]
    out += [f"  {label[:70]:<70} c {b:>3} g {g}  {m:5.2f}  {q:5.2f} [{lo:.2f}\u2013{hi:.2f}]"
            + ("" if ok else "  (sets the acceptance)") for label, b, g, m, q, lo, hi, ok in mtp_rows()]
    out += ["", "Targets:"]
    out += [f"  {what}: {value} (target {target}; met: {met})" for what, target, value, met in targets()]
    out += ["", "Decode TPOT fitted on one workload, tested on another: "
            + "; ".join(f"{tr} \u2192 {te}: median {100 * med:.1f} %, worst signed by concurrency {100 * b:.1f} %"
                        for tr, te, _, med, b in held_out_workloads())]
    return "\n".join(out)


#: The grouped GEMM tiles the MoE kernels pad each expert's tokens to:
#: SGLang's tuned Triton tables for DeepSeek on H200 in fp8 (64 rows at most
#: token counts) and DeepGEMM's contiguous layout on Hopper (128)
#: (ENGINE_FACTS.md, "What a verify costs at large batch").
MOE_TILES = (64, 128)


def tile_padding(tile: int = MOE_TILES[-1]) -> dict:
    """Whether padding each expert's tokens to a grouped GEMM's ``tile`` could
    change any measured step: over every point of every measured speculative
    run on a mixture-of-experts model (its verify and its plain step), the
    padded experts' FLOPs at the chip's peak over the experts' memory time,
    one GPU's share (:data:`speclib.formulas.step.expert_flops_padded_expr`).
    Below 1 everywhere, the experts stay memory-bound padded or not, and the
    padding moves no held-out figure. Returns the largest ratio and where."""
    from ..formulas import numpy_functions as nf
    from speclib.calibration.step_features import SpecSteps

    worst = (0.0, None)
    for run in _spec.spec_runs():
        steps = SpecSteps(run)
        p = steps.parallel
        a = p.architecture
        if not a.moe_layers or run.expert_parallel:
            continue
        for b, g, _ in run.points:
            for T in (1.0, run.width(g)):
                B, T = np.float64(b), np.float64(T)
                touched = p.experts_touched(B, T)
                flops = nf.expert_flops_padded(a.ffn_params, float(a.top_k), float(a.n_shared), B, T, touched,
                                               float(tile)) / p.tp
                moved = p.components(B, T, np.float64(run.context))["ffn"][1]
                ratio = float(flops / p.step_model._peak["ffn"] / (moved / p.hardware.memory_bandwidth))
                if ratio > worst[0]:
                    worst = (ratio, (run.id, int(b), int(T)))
    return {"tile": tile, "largest_ratio": worst[0], "at": worst[1]}
