"""``speclib presets``: the model and hardware presets with their key numbers."""
from __future__ import annotations

import argparse
import json

from ... import presets
from . import options, output

PRESETS_EPILOG = """\
examples:
  speclib presets
  speclib presets --models-only --sources
  speclib presets --json
  speclib presets --model-config path/to/config.json   (adds that model to the list)
"""


def add_parser(sub):
    listing = sub.add_parser(
        "presets", help="list the model and hardware presets with their key numbers",
        description="The model presets (attention and FFN kind, W_attn, W_E, E/k, m_c, m_q, f, weight formats) "
        "and hardware presets (bandwidth, dense peaks, ridges, how fp4 runs).",
        epilog=PRESETS_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    only = listing.add_mutually_exclusive_group()
    only.add_argument("--models-only", dest="kind", action="store_const", const="models", help="list models only")
    only.add_argument("--hardware-only", dest="kind", action="store_const", const="hardware", help="list hardware only")
    listing.set_defaults(kind="all")
    listing.add_argument("--sources", action="store_true", help="also print where each preset's numbers come from")
    listing.add_argument("--model-config", metavar="PATH", help="also list the model built from this config.json")
    listing.add_argument("--hardware-config", metavar="PATH", help="also list the chip this hardware config "
                         "(JSON or YAML) describes")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.set_defaults(handler=run)


def run(args, out) -> int:
    show_models = args.kind in ("all", "models")
    show_hardware = args.kind in ("all", "hardware")
    models = list(presets.all_models())
    if args.model_config is not None:
        models.append(options.model_config(args.model_config))
    model_info = [presets.describe_model(m) for m in models]
    chips = list(presets.all_hardware())
    if args.hardware_config is not None:
        chips.append(options.hardware_config(args.hardware_config))
    hardware_info = [presets.describe_hardware(h) for h in chips]
    if args.json:
        record = {}
        if show_models:
            record["models"] = model_info
        if show_hardware:
            record["hardware"] = hardware_info
        out.write(json.dumps(record, indent=2) + "\n")
        return 0

    blocks = []
    if show_models:
        rows = [
            (
                d["name"], d["attention"], d["ffn"], output.grouped(d["W_attn"]), output.grouped(d["W_E"]),
                output.grouped(d["E/k"], 1), output.grouped(d["m_c"]), output.grouped(d["m_q"]), output.grouped(d["f"]), d["weights"],
            )
            for d in model_info
        ]
        headers = ("model", "attention", "ffn", "W_attn", "W_E", "E/k", "m_c (B)", "m_q (B)", "f (FLOP)", "weights (bytes/param, GEMM precision)")
        blocks.append(
            "Models (one layer: W_attn attention-projection and W_E per-expert parameters; m_c bytes per\n"
            "context token, m_q bytes per query token, f FLOPs per query-context pair)\n\n"
            + output.format_table(headers, rows, align="lllrrrrrrl")
        )
    if show_hardware:
        rows = [
            (
                d["name"], f"{d['bandwidth_TBps']:g}", f"{d['bf16_PFLOPS']:.3f}", f"{d['fp8_PFLOPS']:.3f}",
                f"{d['fp4_PFLOPS']:.3f}", f"{d['ridge_bf16']:.1f}", f"{d['ridge_fp8']:.1f}", f"{d['ridge_fp4']:.1f}", d["fp4"],
            )
            for d in hardware_info
        ]
        headers = ("hardware", "HBM TB/s", "bf16 PF/s", "fp8 PF/s", "fp4 PF/s", "ridge bf16", "ridge fp8", "ridge fp4", "fp4 (MXFP4) GEMMs")
        blocks.append(
            "Hardware (dense peaks; ridge = peak / bandwidth in FLOP per byte)\n\n"
            + output.format_table(headers, rows, align="lrrrrrrrl")
        )
    if args.sources:
        lines = ["Sources"]
        if show_models:
            lines += [f"  {d['name']}: {d['source']}" for d in model_info]
        if show_hardware:
            lines += [f"  {d['name']}: {d['source']}" for d in hardware_info]
        blocks.append("\n".join(lines))
    out.write("\n\n".join(blocks) + "\n")
    return 0
