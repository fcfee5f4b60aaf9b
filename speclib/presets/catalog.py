"""The preset tables: chips, interconnects and models, read from the data files
beside this module.

* ``hardware.json``: one record per chip (bandwidth, HBM capacity, dense
  peaks, its interconnect, its source);
* ``interconnects.json``: one record per network;
* ``drafters.json``: one record per drafter priced by its own roofline;
* ``models.json``: the model presets in listing order, each a Hugging Face
  style ``config.json`` in ``models/`` read by
  :func:`speclib.presets.hf_config.from_hf_config`.

Every number in them carries its source; nothing here is a number but the unit
conversions. A record with a missing or unknown field is an error naming the
file, the record and the field.
"""
from __future__ import annotations

import json
from pathlib import Path

from .architecture import Drafter, Hardware, Interconnect, StepArchitecture
from .hf_config import from_hf_config

DATA_DIR = Path(__file__).resolve().parent
#: Where the shipped model configs live.
MODELS_DIR = DATA_DIR / "models"

_TERA = 1e12
_GIGA = 1e9


def _scaled(factor):
    return lambda value: None if value is None else value * factor


def _same(value):
    return value


def _latencies(by_gpus):
    """{"GPUs": microseconds} as ((GPUs, seconds), ...); null as ()."""
    if by_gpus is None:
        return ()
    if not isinstance(by_gpus, dict):
        raise ValueError(f"allreduce_latency_us must map GPU counts to microseconds; got {by_gpus!r}")
    try:
        return tuple((int(n), float(us) * 1e-6) for n, us in by_gpus.items())
    except (TypeError, ValueError):
        raise ValueError(f"allreduce_latency_us must map GPU counts to microseconds; got {by_gpus!r}") from None


def _drafter(name, aliases, kind, target, acceptance, dense_params, weight_bytes, precision, experts, block, depth,
             depth_source, layers, shared_params, bf16_params, expert_weight_bytes, cache_bytes_per_token, source):
    experts = experts or {}
    dense, bf16 = float(dense_params), float(bf16_params)
    expert_bytes = float(weight_bytes if expert_weight_bytes is None else expert_weight_bytes)
    step = StepArchitecture(  # the dense bytes are the mean over the bf16 head and the rest, as a model's are
        name=name, dense_params=dense, dense_bytes=(float(weight_bytes) * (dense - bf16) + 2.0 * bf16) / dense,
        dense_precision=precision, bf16_params=bf16,
        ffn_params=float(experts.get("expert_params", 0)), ffn_bytes=expert_bytes,
        ffn_precision=_expert_precision(precision, expert_bytes, float(weight_bytes)),
        n_routed=experts.get("n_routed", 0), top_k=experts.get("top_k", 0), n_shared=experts.get("n_shared", 0),
    )
    return Drafter(name=name, kind=kind, step=step, source=source, block=block, depth=depth,
                   depth_source=depth_source or "", target=target,
                   acceptance=acceptance, aliases=aliases, shared_params=float(shared_params),
                   cache_bytes_per_token=float(cache_bytes_per_token), layers=int(layers))


def _expert_precision(precision, expert_bytes, weight_bytes):
    """The experts' GEMM precision: the drafter's, or fp4 where they are stored
    in a 4-bit format."""
    return "fp4" if expert_bytes < 1.0 <= weight_bytes else precision


#: Per table: the file, what builds one preset, and each field's keyword for
#: it with its conversion to SI units.
_TABLES = {
    "hardware": ("hardware.json", Hardware, {
        "name": ("name", str),
        "vendor": ("vendor", str),
        "generation": ("generation", str),
        "aliases": ("aliases", tuple),
        "memory_bandwidth_TBps": ("memory_bandwidth", _scaled(_TERA)),
        "hbm_capacity_GB": ("hbm_capacity", _scaled(_GIGA)),
        "bf16_TFLOPS": ("bf16_flops", _scaled(_TERA)),
        "fp8_TFLOPS": ("fp8_flops", _scaled(_TERA)),
        "fp4_TFLOPS": ("fp4_flops", _scaled(_TERA)),
        "interconnect": ("interconnect", _same),
        "source": ("source", str),
    }),
    "interconnects": ("interconnects.json", Interconnect, {
        "name": ("name", str),
        "aliases": ("aliases", tuple),
        "bandwidth_GBps": ("bandwidth", _scaled(_GIGA)),
        "domain_size": ("domain_size", _same),
        "source": ("source", str),
        "latency_us": ("latency", _scaled(1e-6)),
        "latency_source": ("latency_source", str),
        "allreduce_latency_us": ("allreduce_latency", _latencies),
        "allreduce_latency_source": ("allreduce_latency_source", str),
    }),
    "drafters": ("drafters.json", _drafter, {
        "name": ("name", str),
        "aliases": ("aliases", tuple),
        **{key: (key, _same) for key in ("kind", "target", "acceptance", "dense_params", "weight_bytes",
                                         "precision", "experts", "block", "depth", "depth_source", "layers",
                                         "shared_params", "bf16_params", "expert_weight_bytes",
                                         "cache_bytes_per_token")},
        "source": ("source", str),
    }),
}


def read_table(kind: str) -> tuple:
    """The presets of one table (``"hardware"``, ``"interconnects"`` or
    ``"drafters"``), in file order, as dataclasses with SI values."""
    filename, build, fields = _TABLES[kind]
    path = DATA_DIR / filename
    records = json.loads(path.read_text(encoding="utf-8"))[kind]
    out = []
    for i, record in enumerate(records):
        where = f"{path.name}: {kind}[{i}] ({record.get('name', '?')})"
        missing, unknown = set(fields) - set(record), set(record) - set(fields)
        if missing or unknown:
            problems = [f"{what} fields {sorted(names)}" for what, names in (("missing", missing), ("unknown", unknown))
                        if names]
            raise ValueError(f"{where}: {'; '.join(problems)} (allowed: {', '.join(fields)})")
        try:
            out.append(build(**{target: convert(record[key]) for key, (target, convert) in fields.items()}))
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return tuple(out)


def model_files() -> tuple:
    """The shipped model configs, in the listing order of ``models.json``."""
    listed = json.loads((DATA_DIR / "models.json").read_text(encoding="utf-8"))["models"]
    return tuple(MODELS_DIR / f"{stem}.json" for stem in listed)


def read_models() -> tuple:
    """Every model preset, in listing order."""
    return tuple(from_hf_config(path) for path in model_files())


def read_served_names() -> dict:
    """{name in lower case: the name as written} of every checkpoint a model
    preset's architecture serves under another name (its config's
    ``speclib.served_as``: DeepSeek-R1 is DeepSeek-V3's)."""
    out = {}
    for path in model_files():
        block = json.loads(path.read_text(encoding="utf-8")).get("speclib") or {}
        out.update({name.lower(): name for name in block.get("served_as", ())})
    return out
