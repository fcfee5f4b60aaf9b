"""Carry InferenceX's DeepSeek-R1 serving measurements into speclib's own data
format (speclib/data/decode-benchmarks/deepseek-r1-inferencex.json).

    python scripts/import_inferencex.py HISTORY.json LATEST.json [--out PATH]

HISTORY.json and LATEST.json are the InferenceX web app's copies of its API
responses, kept as end-to-end test fixtures in its repository
(packages/app/cypress/fixtures/api/benchmarks-history.json and
benchmarks.json; github.com/vngcloud/InferenceX-app, a fork of
SemiAnalysisAI/InferenceX-app, fixtures of commit 528c4146). The app's code
is GPL-licensed and is not copied: only the measurements (facts) are, one row
per run, each with the address of the GitHub Actions run that measured it.

Kept: the runs served on one node (not disaggregated) by SGLang or
TensorRT-LLM, with and without MTP. Left out, and counted in the file: the
disaggregated runs (prefill on other GPUs, several nodes: Dynamo, MoRI) and
AMD's ATOM engine (no engine of speclib's prices it). A run that appears in
both files (the latest point per configuration is also in the history) is
kept once.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "speclib" / "data" / "decode-benchmarks" / "deepseek-r1-inferencex.json"
RUN_PREFIX = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/"
FRAMEWORKS = {"sglang": "SGLang", "trt": "TRT"}
FIELDS = ("chip", "engine", "precision", "spec", "tp", "ep", "dp_attention", "isl", "osl", "conc", "tpot_ms",
          "ttft_ms", "interactivity", "tput_per_gpu", "date", "run", "image")


def _row(r: dict) -> list:
    m = r["metrics"]
    url = r["run_url"]
    if not url.startswith(RUN_PREFIX):
        raise ValueError(f"run_url {url!r} is not a run of SemiAnalysisAI/InferenceX")
    return [r["hardware"].upper(), FRAMEWORKS[r["framework"]], r["precision"], r["spec_method"],
            int(r["decode_tp"]), int(r["decode_ep"]), bool(r["decode_dp_attention"]), int(r["isl"]), int(r["osl"]),
            int(r["conc"]), round(m["median_tpot"] * 1e3, 4), round(m["median_ttft"] * 1e3, 2),
            round(m["median_intvty"], 4), round(m["tput_per_gpu"], 3), r["date"], url[len(RUN_PREFIX):],
            r.get("image")]


def convert(history: list, latest: list) -> dict:
    seen, rows = set(), []
    left = collections.Counter()
    for r in list(history) + list(latest):
        if r.get("model") != "dsr1":
            left["another model"] += 1
            continue
        if r["disagg"] or r.get("is_multinode"):
            left["disaggregated or several nodes"] += 1
            continue
        if r["framework"] not in FRAMEWORKS:
            left[f"engine {r['framework']}"] += 1
            continue
        row = _row(r)
        key = tuple(row[:10]) + (row[15],)
        if key in seen:
            left["the same run in both files"] += 1
            continue
        seen.add(key)
        rows.append(row)
    rows.sort(key=lambda x: (x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[14], x[15]))
    return {"rows": rows, "left_out": dict(sorted(left.items()))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("history")
    p.add_argument("latest")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    converted = convert(json.loads(Path(args.history).read_text()), json.loads(Path(args.latest).read_text()))
    data["fields"] = list(FIELDS)
    data["left_out"] = converted["left_out"]
    data["rows"] = converted["rows"]
    text = "{\n" + ",\n".join(
        f" {json.dumps(k)}: " + (
            "[\n" + ",\n".join("  " + json.dumps(r, separators=(",", ":")) for r in v) + "\n ]" if k == "rows"
            else json.dumps(v, indent=1).replace("\n", "\n "))
        for k, v in data.items()) + "\n}\n"
    out.write_text(text, encoding="utf-8")
    print(f"{len(converted['rows'])} runs written to {out}; left out: {converted['left_out']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
