"""A peer's predictions of DeepSeek-R1's measured decode and MTP runs, one
tool at a time (``--tool``, :data:`TOOLS`): NVIDIA's AIConfigurator
(https://github.com/ai-dynamo/aiconfigurator) or NVIDIA's AISimulate
(https://github.com/ai-dynamo/aisimulate), offline estimators built on kernel
and collective latencies measured per chip and engine version, priced at each
run's deployment, stored as data (``speclib/data/peer/<tool>.json``, read by
:mod:`speclib.evidence.peer`). speclib never imports either: each lives in a
virtual environment of its own, outside the repository.

    python3.11 -m venv ~/aic-venv && ~/aic-venv/bin/pip install aiconfigurator==0.12.0
    PYTHONPATH=. ~/aic-venv/bin/python benchmarks/bench_peer.py  # re-run the peer, rewrite the file (under a minute)
    python3.11 -m venv ~/aisim-venv && ~/aisim-venv/bin/pip install aisimulate==0.13.0.dev202610270000000085
    PYTHONPATH=. ~/aisim-venv/bin/python benchmarks/bench_peer.py --tool aisimulate  # the same with AISimulate
    python benchmarks/bench_peer.py             # no peer here: print the stored comparison
    python benchmarks/bench_peer.py --summary   # the same, wherever it runs (--tool picks the file)

Every call names its table (database) version, ``backend_version``: left
unnamed, AISimulate looks the latest one up on each call
(``aisimulate_core.sdk.perf_database.get_latest_database_version``; timed on
a shared two-core machine, a median of 3.9 s a call against 0.05 s named, at
the same deployment with its tables loaded), and the version it picks could
move under the numbers. The file records the versions called and how many
calls each got.

What is priced, through the tool's ``cli_estimate`` (``aiconfigurator.cli.api``,
``aisimulate.legacy_cli.api``: the Python form of ``aiconfigurator cli estimate``,
which AISimulate installs too; the file keeps the command line each row stands for), in its aggregated mode (in-flight batching: prefill chunks
interleaved with the decode steps, as the runs were served) on its measured
(``SILICON``) tables:

* every DeepSeek-R1 decode run the fit uses (:func:`speclib.evidence.decode_runs.decode_runs`)
  on a chip it has tables for: its TPOT at the run's deployment (chip, engine,
  weights, KV cache, tensor / expert / attention-data parallelism), mean
  request lengths and concurrency;
* every InferenceX MTP pair (:func:`speclib.evidence.spec_runs.spec_runs`,
  ids ``inferencex-r1-mtp-*``) on such a chip: the speed-up, TPOT without MTP
  over TPOT with ``nextn`` = the pair's draft length and ``nextn_accepted``
  (mean accepted draft tokens per step; one step commits 1 + that many) chosen
  by a grid search so the speed-up at the configuration's smallest
  concurrency matches the measured one, the same at its other concurrencies;
* the same MTP points' per-operation breakdown (``ops``): for both arms (no
  MTP; the pair's draft length with the fitted accepted tokens) each
  operation's latency in each kind of engine step the peer schedules (mixed:
  a prefill chunk beside the decoding requests; decode: decoding requests
  only), with the same call in its speed-of-light database mode (``SOL``, what
  ``--detail time`` prints beside it), and its share of a TPOT-weighted
  iteration, so the operations of an arm sum to its TPOT times the tokens one
  iteration commits.

Runs it cannot price (a chip without tables, a deployment it refuses) are
listed in the file with the reason.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import logging
import platform
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Tool:
    """What differs between the peers: where each piece lives in its package,
    and what the file says of it; the pricing is one code path for both."""

    name: str
    url: str
    package: str  #: the distribution and its top-level module
    core: str  #: the module holding its tables, model configs, support matrix and step helpers
    core_dist: str  #: the distribution the core ships in
    api: str  #: the module of cli_estimate
    backends: str  #: the module of get_backend
    install: str  #: the pip requirement the file was written with
    license: str  #: as the wheel's metadata or licence file states it
    what: str


TOOLS = {
    "aiconfigurator": Tool(
        "AIConfigurator", "https://github.com/ai-dynamo/aiconfigurator", "aiconfigurator", "aiconfigurator_core",
        "aiconfigurator-core", "aiconfigurator.cli.api", "aiconfigurator.sdk.backends.factory",
        "aiconfigurator==0.12.0", "Apache-2.0",
        "an offline estimator of serving performance: a step's time summed from per-operation latencies "
        "interpolated in tables measured on each chip for each engine version (GEMMs, attention, MoE, "
        "collectives), then in-flight batching modelled over a request's life"),
    "aisimulate": Tool(
        "AISimulate", "https://github.com/ai-dynamo/aisimulate", "aisimulate", "aisimulate_core", "aisimulate",
        "aisimulate.legacy_cli.api", "aisimulate_core.sdk.backends.factory",
        "aisimulate==0.13.0.dev202610270000000085",
        "Apache-2.0 (the wheel's LICENSE file; its metadata names none; one bundled model config, "
        "DeepSeek-V3.2's, is MIT)",
        "NVIDIA's offline serving simulator, one wheel with its core (aisimulate_core: per-operation latency "
        "tables measured on each chip for each engine version, and a compiled engine-step model); it carries "
        "AIConfigurator's estimate API as its legacy CLI (aisimulate.legacy_cli.api.cli_estimate, the same "
        "arguments; it installs the aiconfigurator command), which prices every row here. The nightly build "
        "on PyPI: the 0.13.0 release there is a stub"),
}


def out_file(tool: str) -> Path:
    from speclib.evidence import peer as reader

    return ROOT / "speclib" / Path(*reader.peer_file(tool))

#: Our chip names and the peer's systems (it bundles NVIDIA systems only).
SYSTEMS = {"H200": "h200_sxm", "B200": "b200_sxm", "B300": "b300_sxm"}
#: Our engine names, the peer's backends and the table versions pinned (its "current" slots in 0.12.0).
BACKENDS = {"SGLang": ("sglang", "0.5.14"), "TRT": ("trtllm", "1.3.0rc20")}
#: The checkpoint the peer prices for each of our weight precisions (its bundled configs).
MODELS = {"fp8": "deepseek-ai/DeepSeek-R1", "fp4": "nvidia/DeepSeek-V3.1-NVFP4"}
KV = {"fp8": "fp8", "bf16": "bfloat16"}
DATABASE_MODE = "SILICON"
MODE = "agg"
#: The nested grid the accepted tokens are chosen on: steps, each level over
#: the previous level's best value plus or minus one of its steps.
GRID_STEPS = (0.1, 0.01, 0.001)
MTP_PREFIX = "inferencex-r1-mtp"

CLI = ("aiconfigurator cli estimate --model-path {model} --system {system} --backend {backend} "
       "--backend-version {version} --estimate-mode agg --database-mode SILICON --isl {isl} --osl {osl} "
       "--batch-size {batch} --tp {tp} --dp {dp} --etp {moe_tp} --ep {moe_ep} --kvcache-quant-mode {kv} "
       "[--nextn {nextn} --nextn-accepted {accepted}]")
API = ("{api}.cli_estimate(model_path, system_name, mode='agg', backend_name, backend_version, "
       "database_mode='SILICON', isl, osl, batch_size, tp_size, attention_dp_size, moe_tp_size, moe_ep_size, "
       "kvcache_quant_mode, nextn, nextn_accepted).tpot (ms); every other argument at its default; "
       "backend_version always named (never None: the tool would look its latest up on every call)")

OPS_API = ("the same cli_estimate call as the mtp table's rows (database_mode='SILICON'), and again with "
           "database_mode='SOL'; per_ops_data['mix_step'] and per_ops_data['genonly_step'] (ms per step), "
           "per_ops_source (the table each value came from), per_ops_data['scheduling'] (the step counts)")
OPS_CLI = CLI + (" --detail time  (it prints the same per-step tables, SOL beside them from a second call with "
                 "--database-mode SOL)")
OPS_WHAT = (
    "the peer's per-operation latencies for both arms of every mtp row (nextn 0; nextn = the pair's gamma with "
    "nextn_accepted = the fitted 'accepted'), at the same call. The peer's aggregated mode prices two kinds of "
    "engine step: 'mixed' (a prefill chunk of the context budget beside the decoding requests; its operations carry "
    "the context_ names, the decode requests' attention listed apart) and 'decode' (the batch's requests decoding "
    "only, each verifying 1 + nextn positions; the generation_ operations, each summed over the model's layers and "
    "scaled by layer_scale = (layers + nextn) / layers with MTP on, the draft modelled as nextn more layers at the "
    "same positions). ms_per_step and sol_ms_per_step: one step of that kind, on the measured tables (SILICON) and "
    "at speed of light (SOL: the database's speed-of-light figures for the same shapes, what --detail time prints "
    "beside the measured). The decode step's attention prices the batch x "
    "(1 + nextn) positions as as many sequences, each reading its request's whole KV cache at the mean context "
    "isl + osl // 2 + 1: at speed of light one more verified position costs one more read of that cache. "
    "ms_per_iteration = ms_per_step x (the steps of that kind the TPOT counts) / (all the steps it counts), from "
    "the steps table, so the operations of an arm sum to its iteration time, tpot_ms x tokens_per_iteration, with "
    "no overhead outside them (the peer's mixed-step efficiency factor is 1 for these backends); "
    "sol_ms_per_iteration: the same for the SOL call, summing to sol_tpot_ms x tokens_per_iteration. source: the "
    "peer's tag for the SILICON value: silicon (its measured tables), empirical (its speed-of-light formula times "
    "an empirical factor, where it has no table), mixed (an operation summed from both)")
STEPS_WHAT = (
    "each arm's schedule as the peer counts it (<core>.sdk.backends.base_backend.run_agg, the core being aiconfigurator_core or aisimulate_core): a request's "
    "decode_iterations = 1 + (osl - 1) / (1 + accepted), of which mixed_steps = ceil(isl x batch / the context "
    "budget, isl) = batch carry a prefill chunk and decode_steps the rest; TPOT = (mixed_ms x mixed_steps_counted + "
    "decode_ms x decode_steps) / (mixed_steps_counted + decode_steps) / tokens_per_iteration, with "
    "mixed_steps_counted = max(1, mixed_steps - 3) (the backends' pipeline-drain correction, _tpot_mix_steps) and "
    "tokens_per_iteration = 1 + accepted; no other overhead enters it. batch: the peer's batch per attention rank; "
    "layers: its checkpoint's num_hidden_layers, on each of which it prices an MLA and an MoE block; layer_scale: "
    "its MTP scale on every generation operation, (layers + nextn) / layers; tpot_ms and sol_tpot_ms: the measured "
    "and the speed-of-light calls' TPOTs (the first is the mtp table's peer_tpot_ms or peer_tpot_mtp_ms)")

ASSUMPTIONS = [
    "chips: H200 -> h200_sxm, B200 -> b200_sxm, B300 -> b300_sxm; the peer has no tables for AMD chips (MI300X, "
    "MI325X, MI355X), so their runs are not priced",
    "engines: SGLang -> sglang tables of 0.5.14, TensorRT-LLM -> trtllm tables of 1.3.0rc20 (the peer's 'current' "
    "slots), named in every call; the runs were served by SGLang 0.5.9-0.5.12 and TensorRT-LLM 1.1-1.3.0rc14 (where the data name an "
    "image), so the peer models a later engine build than the one measured",
    "weights: fp8 -> deepseek-ai/DeepSeek-R1 (block-scaled fp8, the peer infers fp8_block GEMMs and MoE); fp4 -> "
    "nvidia/DeepSeek-V3.1-NVFP4, the peer's bundled NVFP4 checkpoint of the same architecture (DeepseekV3ForCausalLM, "
    "identical dimensions), standing in for the NVFP4 DeepSeek-R1 the runs served; the peer resolves it to "
    "NVFP4 GEMMs and MoE (its checkpoint leaves the attention's low-rank projections, the MTP layer and the head "
    "unquantized)",
    "KV cache: the precision each run's launch script sets (speclib.evidence.decode_runs.r1_kv_cache: bf16 for SGLang "
    "on H200, fp8 elsewhere), passed as kvcache_quant_mode; the attention kernels' precision is left to the peer "
    "(it falls back to bf16 context MLA where it has no fp8 table, and says so)",
    "layout: tensor parallel tp with expert parallel ep -> tp_size = tp, moe_ep_size = ep, moe_tp_size = tp / ep; "
    "with attention data parallelism -> tp_size 1, attention_dp_size = tp, moe_ep_size = ep, moe_tp_size 1, and "
    "batch_size = concurrency / tp (the peer's batch is per attention rank)",
    "lengths: the runs' mean request lengths, 0.9 x the nominal ISL and OSL (InferenceX draws each uniformly from "
    "[0.8 L, L]), rounded to whole tokens: 1k -> 922, 8k -> 7373",
    "serving: the peer's aggregated (in-flight batching) estimate at batch_size = the run's concurrency (per attention "
    "rank), its default context-token budget per step (the ISL) and memory fractions; a run whose concurrency "
    "the peer says overflows its KV cache is priced all the same and flagged (kv_warning)",
    "MTP: nextn = the pair's draft length (SGLang EAGLE steps 2 on NVIDIA; TensorRT-LLM num_nextn_predict_layers 3), "
    "nextn_accepted = mean accepted draft tokens per step (the peer divides a step's time by 1 + nextn_accepted and "
    "schedules the requests' fewer steps), one value per configuration, chosen on a nested grid (steps 0.1, 0.01, "
    "0.001 over [0, nextn]) so the speed-up at the configuration's smallest concurrency is closest to the measured "
    "one; at a bound of [0, nextn] (at_bound) where no value in it reaches the measured speed-up",
]


def _quiet():
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)


def _peer(tool: Tool):
    """The tool's estimate function, or None where it is not installed."""
    try:
        return importlib.import_module(tool.api).cli_estimate
    except ImportError:
        return None


def layout(tp: int, ep: int, dp_attention: bool) -> dict:
    if dp_attention:
        return {"tp_size": 1, "attention_dp_size": tp, "moe_tp_size": 1, "moe_ep_size": ep}
    return {"tp_size": tp, "attention_dp_size": 1, "moe_tp_size": tp // ep, "moe_ep_size": ep}


def lengths(run) -> tuple:
    return int(round(run.input_len)), int(round(run.output_len))


class Peer:
    """The peer's TPOT (ms) at one deployment and concurrency, cached."""

    def __init__(self, estimate, tool: Tool = TOOLS["aiconfigurator"]):
        self.estimate = estimate
        self.tool = tool
        self.cache = {}
        self.details = {}
        self.calls = 0
        self.versions = Counter()  #: calls by (backend, the database version named)

    def _call(self, kw):
        if not kw.get("backend_version"):  # unnamed, the tool looks the latest up on each call (about 2 s)
            raise ValueError("every call names its database version (backend_version)")
        self.calls += 1
        self.versions[f"{kw['backend_name']} {kw['backend_version']}"] += 1
        r = self.estimate(**kw)
        if r.backend_version != kw["backend_version"]:
            raise RuntimeError(f"asked for {kw['backend_version']}, priced {r.backend_version}")
        return r

    def args(self, chip, engine, weights, kv_cache, tp, ep, dp, isl, osl, concurrency, nextn=0, accepted=None):
        backend, version = BACKENDS[engine]
        lay = layout(tp, ep, dp)
        kw = dict(model_path=MODELS[weights], system_name=SYSTEMS[chip], mode=MODE, backend_name=backend,
                  backend_version=version, database_mode=DATABASE_MODE, isl=isl, osl=osl,
                  batch_size=concurrency // lay["attention_dp_size"], kvcache_quant_mode=KV[kv_cache], **lay)
        if nextn:
            kw.update(nextn=int(nextn), nextn_accepted=float(accepted))
        return kw

    def tpot(self, **kw):
        """(TPOT ms, KV-overflow warning) or raises the peer's error."""
        key = tuple(sorted(kw.items()))
        if key not in self.cache:
            try:
                r = self._call(kw)
                self.cache[key] = (float(r.tpot), bool(r.kv_cache_warning), None)
            except Exception as e:  # the peer refuses the deployment: recorded with its reason
                self.cache[key] = (None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        tpot, warn, err = self.cache[key]
        if err:
            raise PeerRefused(err)
        return tpot, warn


    def detail(self, **kw):
        """The peer's full result (per-operation latencies, scheduling) for
        one call, cached; raises the peer's error."""
        key = tuple(sorted(kw.items()))
        if key not in self.details:
            self.details[key] = self._call(kw)
        return self.details[key]


class PeerRefused(Exception):
    pass


def price_decode(peer: Peer, runs, log) -> tuple:
    from speclib.evidence import peer as reader

    rows, refused = [], {}
    for i, r in enumerate(runs):
        if r.chip not in SYSTEMS:
            refused.setdefault((r.chip, r.engine, r.weights, r.layout, r.workload,
                                f"no tables for {r.chip} (the peer bundles no AMD systems)"), []).append(r)
            continue
        isl, osl = lengths(r)
        try:
            tpot, warn = peer.tpot(**peer.args(r.chip, r.engine, r.weights, r.kv_cache, r.tp, r.ep, r.dp_attention,
                                               isl, osl, r.concurrency))
        except PeerRefused as e:
            refused.setdefault((r.chip, r.engine, r.weights, r.layout, r.workload, str(e)), []).append(r)
            continue
        rows.append(reader.decode_row(r, tpot, warn))
        if i % 25 == 0:
            log(f"decode {i + 1}/{len(runs)}: {peer.calls} peer calls")
    groups = [[chip, engine, weights, lay, wl, len(rs), why]
              for (chip, engine, weights, lay, wl, why), rs in sorted(refused.items())]
    return rows, groups


def _speedup(peer: Peer, base: dict, concurrency: int, nextn: int, accepted: float) -> tuple:
    t0, w0 = peer.tpot(**{**base, "batch_size": concurrency // base["attention_dp_size"]})
    kw = {**base, "batch_size": concurrency // base["attention_dp_size"], "nextn": nextn, "nextn_accepted": accepted}
    t1, w1 = peer.tpot(**kw)
    return t0 / t1, t0, t1, bool(w0 or w1)


def fit_accepted(peer: Peer, base: dict, concurrency: int, nextn: int, measured: float) -> tuple:
    """The nested grid search: (accepted, at_bound)."""
    lo, hi, best = 0.0, float(nextn), None
    for step in GRID_STEPS:
        grid = np.round(np.arange(lo, hi + step / 2, step), 6)
        err = [abs(_speedup(peer, base, concurrency, nextn, float(a))[0] - measured) for a in grid]
        best = float(grid[int(np.argmin(err))])
        lo, hi = max(0.0, best - step), min(float(nextn), best + step)
    ends = {a: _speedup(peer, base, concurrency, nextn, a)[0] for a in (0.0, float(nextn))}
    return best, bool((best >= nextn and ends[float(nextn)] < measured) or (best <= 0 and ends[0.0] > measured))


def price_mtp(peer: Peer, pairs, log) -> tuple:
    rows, refused = [], []
    for run in pairs:
        if run.chip not in SYSTEMS:
            refused.append([run.id, f"no tables for {run.chip} (the peer bundles no AMD systems)"])
            continue
        isl, osl = (int(round(x)) for x in run.prefill_lengths)
        base = peer.args(run.chip, run.engine, run.weights, run.kv_cache, run.gpus, run.ep, run.dp_attention,
                         isl, osl, 1)
        base.pop("batch_size")
        points = sorted(run.points)
        c0, g, m0 = points[0]
        try:
            t = time.perf_counter()
            accepted, at_bound = fit_accepted(peer, base, c0, g, m0)
            out = []
            for c, gamma, measured in points:
                s, t0, t1, warn = _speedup(peer, base, c, gamma, accepted)
                out.append([run.id, int(c), int(gamma), float(measured), round(t0, 4), round(t1, 4), round(s, 5),
                            accepted, bool(at_bound), c == c0, warn])
        except PeerRefused as e:
            refused.append([run.id, str(e)])
            continue
        rows += out
        log(f"MTP {run.id}: accepted {accepted:.3f}{' (at the bound)' if at_bound else ''}, "
            f"{time.perf_counter() - t:.0f} s; {peer.calls} peer calls")
    return rows, refused


#: The kinds of engine step the peer's aggregated mode schedules (its per_ops_data keys) as the ops table names them.
STEP_KINDS = {"mix_step": "mixed", "genonly_step": "decode"}


def peer_layers(model_path: str, tool: Tool) -> int:
    """The layers the peer's checkpoint config gives (its ``num_hidden_layers``):
    every per-layer operation of its DeepSeek model is counted that many times
    (times its MTP scale, :func:`layer_scale`)."""
    from importlib import resources

    name = model_path.replace("/", "--") + "_config.json"
    cfg = json.loads(resources.files(tool.core).joinpath("model_configs", name).read_text("utf-8"))
    return int(cfg["num_hidden_layers"])


def layer_scale(nextn: int, layers: int, tool: Tool) -> float:
    """The peer's scale on every generation operation with MTP on (its
    ``mtp_scale_factor``: a step runs the layers plus ``nextn`` draft layers)."""
    helpers = importlib.import_module(f"{tool.core}.sdk.models.helpers")
    return float(helpers.mtp_scale_factor(int(nextn), int(layers)))


def schedule(result, backend_name: str, tool: Tool) -> dict:
    """The steps the peer's TPOT averages over, as its aggregated mode counts
    them (``<core>.sdk.backends.base_backend.run_agg``): the
    request's decode iterations, 1 + (OSL - 1) / (1 + nextn_accepted); of them
    ceil(ISL x batch / context budget) mixed steps and the rest decode-only
    steps; the TPOT counts max(1, mixed - 3) of the mixed steps (the backend's
    ``_tpot_mix_steps``, an engine's pipeline drain) where decode-only steps
    follow, all of them where none do, none at batch 1, and divides the
    weighted mean step by the tokens an iteration commits. Checked here
    against the TPOT it returned."""
    get_backend = importlib.import_module(tool.backends).get_backend
    sch = result.per_ops_data["scheduling"]
    mixed, decode = float(sch["num_mix_steps"]), float(sch["num_genonly_steps"])
    if result.batch_size == 1:
        counted = 0.0
    elif decode == 0:
        counted = mixed
    else:
        counted = float(get_backend(backend_name)._tpot_mix_steps(int(mixed)))
    per_iteration = float(sch.get("decode_tokens_per_iteration", 1.0))
    steps = counted + decode
    tpot = (sch["mix_step_latency_ms"] * counted + sch["genonly_step_latency_ms"] * decode) / steps / per_iteration
    if not np.isclose(tpot, result.tpot, rtol=1e-9, atol=0):
        raise RuntimeError(f"the step counts do not rebuild the peer's TPOT: {tpot} against {result.tpot}")
    return {"decode_iterations": float(sch["decode_iterations"]), "mixed": mixed, "counted": counted, "decode": decode,
            "tokens_per_iteration": per_iteration, "mixed_ms": float(sch["mix_step_latency_ms"]),
            "decode_ms": float(sch["genonly_step_latency_ms"]), "mix_efficiency": float(sch["mix_efficiency"]),
            "weights": {"mixed": counted / steps, "decode": decode / steps}}


def price_ops(peer: Peer, pairs, mtp_rows, log) -> tuple:
    """The per-operation breakdown of every priced MTP point's two arms
    (:data:`speclib.evidence.peer.OPS_FIELDS`, :data:`speclib.evidence.peer.OPS_STEP_FIELDS`)."""
    by_id = {r.id: r for r in pairs}
    rows, steps = [], []
    for run_id, c, gamma, *_, accepted, _at_bound, _fitted, _warn in mtp_rows:
        run = by_id[run_id]
        isl, osl = (int(round(x)) for x in run.prefill_lengths)
        base = peer.args(run.chip, run.engine, run.weights, run.kv_cache, run.gpus, run.ep, run.dp_attention,
                         isl, osl, c)
        layers = peer_layers(base["model_path"], peer.tool)
        for nextn in (0, int(gamma)):
            kw = {**base, "nextn": nextn, "nextn_accepted": accepted} if nextn else dict(base)
            r = peer.detail(**kw)
            sol = peer.detail(**{**kw, "database_mode": "SOL"})
            sch, sol_sch = (schedule(x, base["backend_name"], peer.tool) for x in (r, sol))
            if any(sch[k] != sol_sch[k] for k in ("mixed", "counted", "decode")):
                raise RuntimeError(f"{run_id} c {c}: the SOL call schedules other steps")
            if sch["mix_efficiency"] != 1.0:  # the per-op values below carry it; stated in the header as 1
                raise RuntimeError(f"{run_id} c {c}: mix efficiency {sch['mix_efficiency']}")
            steps.append([run_id, int(c), nextn, float(accepted) if nextn else 0.0, int(kw["batch_size"]),
                          layers, layer_scale(nextn, layers, peer.tool), round(sch["decode_iterations"], 6),
                          sch["mixed"], sch["counted"], round(sch["decode"], 6), sch["tokens_per_iteration"],
                          round(sch["mixed_ms"], 6), round(sch["decode_ms"], 6), round(float(r.tpot), 6),
                          round(float(sol.tpot), 6)])
            for key, kind in STEP_KINDS.items():
                ops = r.per_ops_data.get(key) or {}
                sol_ops = sol.per_ops_data.get(key) or {}
                src = (r.per_ops_source or {}).get(key) or {}
                if set(ops) != set(sol_ops):
                    raise RuntimeError(f"{run_id} c {c}: the SOL call lists other operations")
                w, w_sol = sch["weights"][kind], sol_sch["weights"][kind]
                for op, ms in ops.items():
                    rows.append([run_id, int(c), nextn, kind, op, round(float(ms), 6), round(float(sol_ops[op]), 6),
                                 round(float(ms) * w, 6), round(float(sol_ops[op]) * w_sol, 6), src.get(op, "")])
        log(f"ops {run_id} c {c}: {peer.calls} peer calls")
    return rows, steps


def coverage(tool: Tool) -> dict:
    """What the tool's own support matrix (shipped in its core)
    says it prices for the checkpoints of :data:`MODELS` in aggregated
    serving: {checkpoint: {system: ["backend version", ...]}} of the rows that PASS."""
    import csv
    from importlib import resources

    out = {m: {} for m in MODELS.values()}
    folder = resources.files(tool.core).joinpath("systems", "support_matrix")
    for f in sorted(folder.iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".csv"):
            continue
        for r in csv.DictReader(f.read_text(encoding="utf-8").splitlines()):
            if r["HuggingFaceID"] in out and r["Mode"] == "agg" and r["Status"] == "PASS":
                out[r["HuggingFaceID"]].setdefault(r["System"], set()).add(f"{r['Backend']} {r['Version']}")
    return {m: {s: sorted(v) for s, v in sorted(systems.items())} for m, systems in out.items()}


def run_peer(estimate, log=print, tool: str = "aiconfigurator") -> dict:
    from speclib.evidence import decode_runs as dec
    from speclib.evidence import peer as reader
    from speclib.evidence import spec_runs as spec

    t_ = TOOLS[tool]
    peer = Peer(estimate, t_)
    t = time.perf_counter()
    pairs = [r for r in spec.spec_runs() if r.id.startswith(MTP_PREFIX)]
    mtp_rows, mtp_refused = price_mtp(peer, pairs, log)
    decode, decode_refused = price_decode(peer, dec.decode_runs("r1"), log)
    ops_rows, ops_steps = price_ops(peer, pairs, mtp_rows, log)
    log(f"{peer.calls} peer calls in {time.perf_counter() - t:.0f} s")
    core = importlib.import_module(t_.core)
    return {
        "about": ("A peer's predictions of the DeepSeek-R1 runs of decode-benchmarks/deepseek-r1-inferencex.json: "
                  f"NVIDIA's {t_.name}, priced at each run's deployment, stored as data (speclib does not "
                  "import it): decode TPOTs, the MTP pairs' speed-ups, and the per-operation breakdown of the MTP "
                  "pairs' two arms (ops). Written by benchmarks/bench_peer.py; read by speclib.evidence.peer."),
        "peer": {"name": t_.name, "by": "NVIDIA (ai-dynamo)", "url": t_.url, "package": t_.package,
                 "version": importlib.metadata.version(t_.package),
                 "core_version": getattr(core, "__version__", None) or importlib.metadata.version(t_.core_dist),
                 "core": f"{t_.core} (distribution {t_.core_dist})", "install": f"pip install {t_.install}",
                 "license": t_.license, "what": t_.what},
        "run": {"date": datetime.date.today().isoformat(), "python": platform.python_version(),
                "script": f"benchmarks/bench_peer.py --tool {tool}", "api": API.format(api=t_.api), "cli": CLI,
                "calls": peer.calls,
                "database_versions": {"what": ("the peer calls made, by backend and the database (table) version "
                                               "each named as backend_version; every call names one"),
                                      "calls": dict(sorted(peer.versions.items()))}},
        "mapping": {"systems": SYSTEMS, "backends": {k: list(v) for k, v in BACKENDS.items()}, "models": MODELS,
                    "kv_cache": KV, "mode": MODE, "database_mode": DATABASE_MODE, "grid_steps": list(GRID_STEPS)},
        "coverage": {"what": ("the systems and backends (table versions) the peer's support matrix passes for "
                              "each checkpoint priced here, aggregated serving"), "models": coverage(t_)},
        "assumptions": ASSUMPTIONS,
        "decode": {"fields": list(reader.DECODE_FIELDS), "rows": decode,
                   "not_priced": {"fields": ["chip", "engine", "weights", "layout", "workload", "runs", "why"],
                                  "rows": decode_refused}},
        "mtp": {"fields": list(reader.MTP_FIELDS), "rows": mtp_rows,
                "not_priced": {"fields": ["id", "why"], "rows": mtp_refused}},
        "ops": {"what": OPS_WHAT, "api": OPS_API, "cli": OPS_CLI, "fields": list(reader.OPS_FIELDS), "rows": ops_rows,
                "steps": {"what": STEPS_WHAT, "fields": list(reader.OPS_STEP_FIELDS), "rows": ops_steps}},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", choices=sorted(TOOLS), default="aiconfigurator", help="the peer to run or read")
    parser.add_argument("--out", type=Path, help="the file to write (default: the shipped one of --tool)")
    parser.add_argument("--summary", action="store_true", help="print the stored summary, run nothing")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from speclib.evidence import peer as reader

    tool = TOOLS[args.tool]
    estimate = None if args.summary else _peer(tool)
    if estimate is None:
        stored = reader.load(args.tool)
        if not args.summary:
            print(f"{tool.package} is not importable here: the stored predictions "
                  f"({reader.peer_file(args.tool)[-1]}, {stored['peer']['name']} {stored['peer']['version']}):\n")
        print(reader.report(stored))
        from speclib.calibration import measured_host

        print("\n" + reader.side_by_side_report(extra_decode={measured_host.PEER_LABEL: measured_host.peer_decode_points}))
        return 0
    _quiet()
    data = run_peer(estimate, log=lambda s: print(s, flush=True), tool=args.tool)
    out = args.out or out_file(args.tool)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(reader.dumps(data), encoding="utf-8")
    print(f"wrote {out}\n")
    print(reader.report(reader.parse(data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
