"""Import the measured kernel tables speclib prices a step from.

NVIDIA's AIConfigurator ships per-operation latencies measured on each chip
for each serving engine and engine version (the ``aiconfigurator-core``
package, Apache-2.0: ``aiconfigurator_core/systems/data/<system>/<family>/
<framework>/<version>/*.parquet``). This script reads the tables a step of
the presets needs (GEMMs, grouped MoE, GQA and MLA generation attention, the
tensor-parallel all-reduce) for H100, H200, B200 and B300 and the three
engines, at each engine's current table version (the package's
``systems/query_versions.yaml``), keeps only the shapes the presets and their
layouts use (tensor-parallel widths 1, 2, 4 and 8), and writes one compact
JSON file per chip and engine under ``speclib/data/silicon/``, each carrying
its chip, engine, engine version, the package (database) version, the
tables' collection metadata and the licence notice. speclib reads those with
numpy and json alone (:mod:`speclib.silicon.tables`); this script is the
only thing that touches the package.

Run it with the peer's interpreter (a virtual environment outside the
repository that has ``aiconfigurator==0.12.0``, and so pyarrow)::

    python3 -m venv /work/peers/aic && /work/peers/aic/bin/pip install aiconfigurator==0.12.0
    /work/peers/aic/bin/python scripts/import_silicon_tables.py            # writes speclib/data/silicon/
    /work/peers/aic/bin/python scripts/import_silicon_tables.py --check    # compares, writes nothing

Where several kernels of one table measure the same point (an engine's
alternative backends), the fastest is kept, as an engine that autotunes or is
configured for the fastest backend runs it; the kernels a table held are
listed in its file. Non-gated MoE kernels are dropped (every preset's
experts are gated).
"""
from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from speclib.presets import all_models, hardware as hardware_preset  # noqa: E402
from speclib.silicon import tables as T  # noqa: E402  (the names and rules the reader shares)

try:
    import pyarrow.parquet as pq
    import yaml
except ImportError as exc:  # pragma: no cover - a tool of the maintainer's
    raise SystemExit(f"run this with the interpreter of a venv that has aiconfigurator==0.12.0 ({exc})")

PACKAGE = "aiconfigurator-core"
#: Tensor-parallel widths whose shapes are kept.
TP_WIDTHS = (1, 2, 4, 8)
#: The longest GEMM and MoE token count kept (a verify of 1,024 sequences of 8 positions).
MAX_TOKENS = 16384


def core_root() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).resolve().parent


def current_versions(root: Path) -> dict:
    """{system: {framework: version}}: the current slot of query_versions.yaml."""
    q = yaml.safe_load((root / "systems" / "query_versions.yaml").read_text())
    out = {}
    for system in T.SYSTEMS.values():
        by = dict(q["defaults"])
        by.update(q.get("overrides", {}).get(system, {}))
        out[system] = {fw: slot["current"] for fw, slot in by.items()}
    return out


def _round(x: float) -> float:
    return float(f"{x:.4g}")


#: The token counts kept from a GEMM table: every m to 16, then each tile
#: boundary's first side (the tables also measure m + 1 past each multiple of
#: 16; log-log reading between the kept points stands for them).
def kept_m(m: int) -> bool:
    return m <= 17 or m % 16 == 0


def gemm_shapes() -> dict:
    """{(n, k): table dtypes} of every GEMM a preset's layer runs at each TP
    width (:func:`speclib.silicon.tables.layer_gemms`, the list the step
    prices), in the dtypes of :func:`speclib.silicon.tables.precisions_of`."""
    shapes = {}
    for m in all_models():
        for tp in TP_WIDTHS:
            for dp in (False, True):
                if dp and tp == 1:
                    continue
                for g in T.layer_gemms(m, tp, dp) or ():
                    dtypes = {d for p in T.precisions_of(m) for d in T.GEMM_DTYPES[p]}
                    shapes.setdefault((g.n, g.k), set()).update(dtypes)
    return shapes


def bracket(grid, x):
    """The grid values around x (x itself where it is one; the last where x lies past it)."""
    grid = sorted(grid)
    if x >= grid[-1]:
        return [grid[-1]]
    i = int(np.searchsorted(grid, x))
    if i < len(grid) and grid[i] == x:
        return [x]
    return [grid[max(i - 1, 0)], grid[min(i, len(grid) - 1)]]


def fastest(rows, key, value="latency"):
    """{key(row): (min latency, kernels)} over rows."""
    out = {}
    for r in rows:
        k = key(r)
        v = float(r[value])
        if k not in out or v < out[k]:
            out[k] = v
    return out


def read(path: Path, columns=None) -> list:
    return pq.read_table(path, columns=columns).to_pylist()


def meta(directory: Path) -> dict:
    f = directory / "collection_meta.yaml"
    if not f.exists():
        return {}
    data = yaml.safe_load(f.read_text()) or {}
    return {k: data[k] for k in ("schema_version", "provenance", "runtime") if k in data} | {
        "tables": {name: (v or {}).get("status", "") for name, v in (data.get("tables") or {}).items()}}


def import_gemm(directory: Path, needed: dict) -> dict:
    rows = read(directory / "gemm_perf.parquet")
    ns = sorted({r["n"] for r in rows})
    ks = sorted({r["k"] for r in rows})
    pairs = {}
    for (n, k), dtypes in needed.items():
        for a in bracket(ns, n):
            for b in bracket(ks, k):
                pairs.setdefault((a, b), set()).update(dtypes)
    rows = [r for r in rows if r["gemm_dtype"] in pairs.get((r["n"], r["k"]), ()) and r["m"] <= MAX_TOKENS
            and kept_m(r["m"])]
    best = fastest(rows, lambda r: (r["gemm_dtype"], r["n"], r["k"], r["m"]))
    ms = sorted({key[3] for key in best})
    shapes = []
    for dtype, n, k in sorted({key[:3] for key in best}):
        lat = [best.get((dtype, n, k, m)) for m in ms]
        shapes.append({"dtype": dtype, "n": n, "k": k,
                       "latency_ms": [None if v is None else _round(v) for v in lat]})
    return {"file": "gemm_perf.parquet", "kernels": sorted({r["kernel_source"] for r in rows}),
            "columns": "m tokens x (n, k); latency of one GEMM, ms", "m": ms, "shapes": shapes}


def moe_configs() -> dict:
    """{(hidden, inter, topk, experts, moe_tp, moe_ep): table dtypes} of every preset's experts at each TP width."""
    out = {}
    for m in all_models():
        f = m.ffn
        if not f.is_moe:
            continue
        for tp in TP_WIDTHS:
            for ep in (1, tp):
                dtypes = {d for p in T.precisions_of(m) for d in T.MOE_DTYPES[p]}
                out.setdefault((m.hidden_size, f.expert_width, f.top_k, f.n_routed, tp // ep, ep), set()).update(dtypes)
    return out


def import_moe(directory: Path) -> dict:
    wanted = moe_configs()
    rows = read(directory / "moe_perf.parquet")
    rows = [r for r in rows if r["moe_dtype"] in wanted.get((r["hidden_size"], r["inter_size"], r["topk"],
                                                             r["num_experts"], r["moe_tp_size"], r["moe_ep_size"]), ())
            and r["num_tokens"] <= MAX_TOKENS and "nongated" not in r["kernel_source"]
            and r["distribution"] in T.MOE_DISTRIBUTIONS]
    best = fastest(rows, lambda r: (r["moe_dtype"], r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"],
                                    r["moe_tp_size"], r["moe_ep_size"], r["distribution"], r["num_tokens"]))
    configs = {}
    for key, v in best.items():
        configs.setdefault(key[:-1], []).append((key[-1], v))
    out = []
    for key in sorted(configs):
        pts = sorted(configs[key])
        out.append(dict(zip(("dtype", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "distribution"), key))
                   | {"tokens": [p[0] for p in pts], "latency_ms": [_round(p[1]) for p in pts]})
    return {"file": "moe_perf.parquet", "kernels": sorted({r["kernel_source"] for r in rows}),
            "columns": "tokens entering one MoE layer (before routing) -> the routed experts' grouped GEMMs, ms",
            "configs": out}


def gqa_shapes() -> set:
    out = set()
    for m in all_models():
        a = m.attention
        if type(a).__name__ != "GQAAttention":
            continue
        for tp in TP_WIDTHS:
            for dp in (False, True):
                h, kv = T.gqa_heads(a.n_heads, a.kv_heads, 1 if dp else tp)
                out.add((h, kv, a.head_dim))
    return out


def grid2(rows, a, b):
    """(sorted a values, sorted b values, latency matrix with None for gaps)."""
    av = sorted({r[a] for r in rows})
    bv = sorted({r[b] for r in rows})
    best = fastest(rows, lambda r: (r[a], r[b]))
    return av, bv, [[None if (x, y) not in best else _round(best[(x, y)]) for y in bv] for x in av]


def import_gqa(directory: Path) -> dict:
    wanted = gqa_shapes()
    rows = read(directory / "generation_attention_perf.parquet")
    rows = [r for r in rows if (r["num_heads"], r["num_key_value_heads"], r["head_dim"]) in wanted
            and r["window_size"] == 0 and r["beam_width"] == 1 and r["isl"] == 1]
    groups = {}
    for r in rows:
        groups.setdefault((r["num_heads"], r["num_key_value_heads"], r["head_dim"], r["kv_cache_dtype"]), []).append(r)
    out = []
    for key in sorted(groups):
        batch, step, lat = grid2(groups[key], "batch_size", "step")
        out.append(dict(zip(("heads", "kv_heads", "head_dim", "kv_dtype"), key))
                   | {"batch": batch, "context": [s + 1 for s in step], "latency_ms": lat})
    return {"file": "generation_attention_perf.parquet", "kernels": sorted({r["kernel_source"] for r in rows}),
            "columns": "batch sequences x context (cached tokens = isl 1 + step) -> one layer's decode attention "
                       "(one query position per sequence), ms", "configs": out}


def import_mla(directory: Path) -> dict | None:
    path = directory / "generation_mla_perf.parquet"
    if not path.exists():
        return None
    rows = [r for r in read(path) if r["isl"] == 1]
    heads = set()
    for m in all_models():
        if T.mla_from_table(m.attention):
            for tp in TP_WIDTHS:
                for n in (m.attention.n_heads // tp, m.attention.n_heads):
                    heads.update(bracket(sorted({r["num_heads"] for r in rows}), n))
    rows = [r for r in rows if r["num_heads"] in heads]
    groups = {}
    for r in rows:
        groups.setdefault((r["num_heads"], r["kv_cache_dtype"]), []).append(r)
    out = []
    for key in sorted(groups):
        batch, step, lat = grid2(groups[key], "batch_size", "step")
        out.append(dict(zip(("heads", "kv_dtype"), key)) | {"batch": batch, "context": [s + 1 for s in step],
                                                           "latency_ms": lat})
    return {"file": "generation_mla_perf.parquet", "kernels": sorted({r["kernel_source"] for r in rows}),
            "columns": "batch sequences x context -> one layer's absorbed MLA decode attention (DeepSeek's latent of "
                       "512 + 64, heads per GPU), ms", "configs": out}


def import_allreduce(directory: Path) -> dict | None:
    path = directory / "custom_allreduce_perf.parquet"
    if not path.exists():
        return None
    rows = [r for r in read(path) if r["allreduce_dtype"] == "bfloat16"]
    out = []
    for n in sorted({r["num_gpus"] for r in rows}):
        best = fastest([r for r in rows if r["num_gpus"] == n], lambda r: r["message_size"])
        sizes = sorted(best)
        out.append({"gpus": n, "elements": sizes, "latency_ms": [_round(best[s]) for s in sizes]})
    return {"file": "custom_allreduce_perf.parquet", "kernels": sorted({r["kernel_source"] for r in rows}),
            "columns": "bf16 elements all-reduced over n GPUs -> ms", "configs": out}


def build(root: Path) -> dict:
    versions = current_versions(root)
    core_version = metadata.version(PACKAGE)
    needed = gemm_shapes()
    files = {}
    for chip, system in T.SYSTEMS.items():
        hw = hardware_preset(chip)
        for engine, framework in T.FRAMEWORKS.items():
            version = versions[system][framework]
            base = root / "systems" / "data" / system
            tables, collection = {}, {}
            for family, reader in (("gemm", lambda d: import_gemm(d, needed)), ("moe", import_moe),
                                   ("attention", import_gqa), ("mla", import_mla), ("comm", import_allreduce)):
                d = base / family / framework / version
                if not d.is_dir():
                    continue
                table = reader(d)
                if table is None:
                    continue
                name = {"attention": "gqa", "comm": "allreduce"}.get(family, family)
                table["path"] = f"aiconfigurator_core/systems/data/{system}/{family}/{framework}/{version}/{table['file']}"
                tables[name] = table
                collection[name] = meta(d)
            device = ""
            probe = base / "gemm" / framework / version / "gemm_perf.parquet"
            if probe.exists():
                device = pq.read_table(probe, columns=["device"]).column("device")[0].as_py()
            files[f"{T.slug(chip)}-{engine.lower()}.json"] = {
                "about": ("Per-operation latencies measured on silicon by NVIDIA for AIConfigurator, the subset a "
                          "speclib preset's step uses; imported by scripts/import_silicon_tables.py and read by "
                          "speclib.silicon.tables. Latencies in ms as the source stores them."),
                "notice": T.NOTICE,
                "chip": hw.name, "system": system, "device": device,
                "engine": engine, "framework": framework, "engine_version": version,
                "database": {"package": PACKAGE, "version": core_version, "slot": "current",
                             "versions_file": "aiconfigurator_core/systems/query_versions.yaml"},
                "collection": collection,
                "tables": tables,
            }
    return files


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "speclib" / "data" / "silicon")
    p.add_argument("--check", action="store_true", help="compare with the stored files; write nothing")
    args = p.parse_args(argv)
    files = build(core_root())
    total = 0
    stale = []
    for name, data in sorted(files.items()):
        text = json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n"
        total += len(text.encode())
        path = args.out / name
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        counts = {k: len(v.get("shapes", v.get("configs", []))) for k, v in data["tables"].items()}
        print(f"{name}: {data['engine']} {data['engine_version']}, {len(text) / 1024:.0f} KiB, {counts}")
    print(f"{len(files)} files, {total / 1024:.0f} KiB in all (database {PACKAGE} {metadata.version(PACKAGE)})")
    if stale:
        print("stale: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
