"""A chip that is not a preset, from a small file: ``--hardware-config FILE``.

The file is JSON or YAML with the fields of a record of ``hardware.json``
(the same names and units, so a preset's record can be copied and edited):

=========================  ========  ==================================================
field                      required  meaning
=========================  ========  ==================================================
``vendor``                 yes       whose chip and software stack (``NVIDIA``, ``AMD``,
                                     ...): the calibrated step prices by it
``memory_bandwidth_TBps``  yes       HBM bandwidth per GPU, 1e12 bytes/s, > 0
``hbm_capacity_GB``        yes       HBM per GPU, 1e9 bytes, > 0
``bf16_TFLOPS``            yes       dense bf16 peak per GPU, 1e12 FLOP/s, > 0
``fp8_TFLOPS``             yes       dense fp8 peak, > 0, or null: no fp8 tensor cores
``fp4_TFLOPS``             yes       dense fp4 peak, > 0, or null: no fp4 tensor cores
``generation``             no        the chip's architecture (``Hopper``, ``CDNA 3``, ...):
                                     an uncalibrated chip takes its generation's constants
``name``                   no        default: the file's name without its suffix
``aliases``                no        other names
``interconnect``           no        an interconnect preset (``speclib presets``), or null
``source``                 no        where the numbers come from
=========================  ========  ==================================================

A precision the chip lacks runs at the next wider one's peak, as for the
presets. A missing, unknown or non-positive field is a one-line
``ValueError`` naming the file and the field.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from .._checks import read_text
from .architecture import Hardware
from .registry import interconnect, interconnect_names

_TERA = 1e12
_GIGA = 1e9

#: field -> (required, what it must be); the order is the order errors are found in.
FIELDS = {
    "vendor": (True, "a non-empty name such as NVIDIA or AMD"),
    "memory_bandwidth_TBps": (True, "a number > 0 (TB/s)"),
    "hbm_capacity_GB": (True, "a number > 0 (GB)"),
    "bf16_TFLOPS": (True, "a number > 0 (dense TFLOP/s)"),
    "fp8_TFLOPS": (True, "a number > 0 (dense TFLOP/s), or null for no fp8 tensor cores"),
    "fp4_TFLOPS": (True, "a number > 0 (dense TFLOP/s), or null for no fp4 tensor cores"),
    "generation": (False, "the chip's architecture, text such as Hopper or CDNA 3"),
    "name": (False, "a non-empty name"),
    "aliases": (False, "a list of names"),
    "interconnect": (False, "an interconnect preset's name, or null"),
    "source": (False, "text"),
}
#: Fields that may be null (the precision is missing on the chip).
NULLABLE = ("fp8_TFLOPS", "fp4_TFLOPS", "interconnect")


def _load(path: Path):
    text = read_text(path, "the hardware config", "a hardware config is JSON or YAML",
                     f"empty hardware config (fields: {', '.join(FIELDS)})")
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ValueError(f"{path}: not valid YAML{where}") from None


def _positive(where, key, value, nullable=False):
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: {key} must be {FIELDS[key][1]}; got {value!r}")
    return float(value)


def from_hardware_config(config) -> Hardware:
    """The :class:`~speclib.presets.Hardware` a hardware config file (or a
    dict with its fields) describes, checked field by field."""
    if isinstance(config, dict):
        data, where, stem = dict(config), "hardware config", "custom"
    elif isinstance(config, (str, os.PathLike)):
        path = Path(config)
        data, where, stem = _load(path), str(path), path.stem
    else:
        raise ValueError(f"hardware config must be a path to a JSON or YAML file or a dict; got {type(config).__name__}")
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a hardware config is a mapping of fields ({', '.join(FIELDS)})")
    unknown = sorted(set(map(str, data)) - set(FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})")
    for key, (required, what) in FIELDS.items():
        if required and key not in data:
            raise ValueError(f"{where}: missing field {key} ({what})")
    vendor = data["vendor"]
    if not isinstance(vendor, str) or not vendor.strip():
        raise ValueError(f"{where}: vendor must be {FIELDS['vendor'][1]}; got {vendor!r}")
    name = data.get("name", stem)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: name must be {FIELDS['name'][1]}; got {name!r}")
    aliases = data.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ValueError(f"{where}: aliases must be {FIELDS['aliases'][1]}; got {aliases!r}")
    numbers = {key: _positive(where, key, data[key], nullable=key in NULLABLE)
               for key in ("memory_bandwidth_TBps", "hbm_capacity_GB", "bf16_TFLOPS", "fp8_TFLOPS", "fp4_TFLOPS")}
    link = data.get("interconnect")
    if link is not None:
        try:
            link = interconnect(link).name
        except ValueError:
            raise ValueError(f"{where}: interconnect must be one of {', '.join(interconnect_names())} or null; got "
                             f"{link!r}") from None
    generation = data.get("generation", "")
    if not isinstance(generation, str):
        raise ValueError(f"{where}: generation must be {FIELDS['generation'][1]}; got {generation!r}")
    source = data.get("source", f"hardware config {where}")
    if not isinstance(source, str):
        raise ValueError(f"{where}: source must be text; got {source!r}")
    tera = {key: None if value is None else value * _TERA for key, value in numbers.items() if key.endswith("TFLOPS")}
    return Hardware(name=name.strip(), vendor=vendor.strip(), aliases=tuple(a.strip() for a in aliases),
                    memory_bandwidth=numbers["memory_bandwidth_TBps"] * _TERA,
                    hbm_capacity=numbers["hbm_capacity_GB"] * _GIGA, bf16_flops=tera["bf16_TFLOPS"],
                    fp8_flops=tera["fp8_TFLOPS"], fp4_flops=tera["fp4_TFLOPS"], interconnect=link, source=source,
                    generation=generation.strip())
