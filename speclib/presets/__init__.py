"""Chips, interconnects and models: the presets every ``model=``,
``hardware=`` and ``interconnect=`` argument accepts, by name or alias.

The presets are data (:mod:`.catalog` reads ``hardware.json``,
``interconnects.json`` and the model configs in ``models/``); what a chip or
a model *is*, and every quantity derived from its numbers, is in
:mod:`.architecture`; :func:`from_hf_config` builds a model from any Hugging
Face style ``config.json``, and :func:`from_hardware_config` a chip from a
small JSON or YAML file of its numbers.
"""
from __future__ import annotations

from . import catalog as _catalog
from .architecture import (
    BF16_BYTES,
    KV_BYTES,
    NVFP4_BYTES,
    PRECISIONS,
    WEIGHT_BYTES,
    weight_bytes_for,
    DRAFTER_KINDS,
    DenseFFN,
    Drafter,
    GatedDeltaNet,
    GQAAttention,
    Hardware,
    Interconnect,
    MLAAttention,
    Model,
    MoEFFN,
    StepArchitecture,
)
from .hardware_config import from_hardware_config
from .hf_config import MXFP4_BYTES, SPECLIB_KEYS, from_hf_config
from .registry import interconnect, interconnect_names, lookup

TB = 1e12
PFLOPS = 1e15

#: Where the shipped model configs live (package data).
CONFIG_DIR = _catalog.MODELS_DIR

_HARDWARE = _catalog.read_table("hardware")
_DRAFTERS = _catalog.read_table("drafters")
_MODELS = _catalog.read_models()


def hardware(name: str) -> Hardware:
    """The hardware preset called ``name`` (case-insensitive)."""
    return lookup("hardware", name, _HARDWARE)


def drafter(name) -> Drafter:
    """The drafter preset called ``name`` (case-insensitive), or ``name``
    itself if it already is a :class:`Drafter`."""
    if isinstance(name, Drafter):
        return name
    return lookup("drafter", name, _DRAFTERS)


def drafter_for(model, kind: str):
    """The drafter preset of ``kind`` ("mtp", "eagle3", "dflash") made for
    ``model`` (a model preset or its name, aliases resolved: DeepSeek-R1 is
    DeepSeek-V3's architecture), or None where there is none."""
    target = model.name if isinstance(model, Model) else lookup("model", model, _MODELS).name
    for d in _DRAFTERS:
        if d.kind == kind and d.target == target:
            return d
    return None


def drafter_names() -> list:
    return [d.name for d in _DRAFTERS]


def all_drafters() -> tuple:
    """Every drafter preset, in listing order."""
    return _DRAFTERS


def model(name: str) -> Model:
    """The model preset called ``name`` (case-insensitive)."""
    return lookup("model", name, _MODELS)


_SERVED_NAMES = _catalog.read_served_names()


def served_name(name: str):
    """The model ``name`` asks for, as it is named: the preset's own name, or
    the checkpoint it names that the preset's architecture serves
    (``"deepseek-r1"``: ``"DeepSeek-R1"``, served as :data:`DEEPSEEK_V3`);
    None where ``name`` is no preset's."""
    try:
        found = model(name)
    except ValueError:
        return None
    return _SERVED_NAMES.get(name.strip().lower(), found.name)


def hardware_names() -> list:
    return [h.name for h in _HARDWARE]


def model_names() -> list:
    return [m.name for m in _MODELS]


def resolve(model_arg=None, hardware_arg=None):
    """Turn ``model=``/``hardware=`` arguments (preset, name or None) into presets."""
    if model_arg is None:
        m = DEFAULT_MODEL
    elif isinstance(model_arg, Model):
        m = model_arg
    else:
        m = model(model_arg)
    if hardware_arg is None:
        h = DEFAULT_HARDWARE
    elif isinstance(hardware_arg, Hardware):
        h = hardware_arg
    else:
        h = hardware(hardware_arg)
    return m, h


def all_models() -> tuple:
    """Every model preset, in listing order."""
    return tuple(_MODELS)


def all_hardware() -> tuple:
    """Every hardware preset, in listing order."""
    return tuple(_HARDWARE)


def default_interconnect(hardware_arg) -> Interconnect:
    """The scale-up interconnect ``hardware_arg`` (a preset or its name) ships with."""
    _, hw = resolve(None, hardware_arg)
    if hw.interconnect is None:
        raise ValueError(
            f"no default interconnect for hardware {hw.name!r}; pass interconnect= one of {', '.join(interconnect_names())}"
        )
    return interconnect(hw.interconnect)


def shipped_configs() -> dict:
    """The model configs shipped in ``speclib/presets/models``, by file stem."""
    return {p.stem: p for p in sorted(CONFIG_DIR.glob("*.json"))}


def attention_kind(m: Model) -> str:
    """A short description of the model's attention."""
    attn = m.attention
    if attn.kind == "gqa":
        if attn.n_kv_heads == attn.n_heads:
            return f"MHA {attn.n_heads} heads"
        return f"GQA {attn.n_heads}/{attn.n_kv_heads} heads"
    style = "V4 grouped-o" if attn.o_groups else ("V3 up-proj" if attn.kv_up_proj else "MLA")
    sparse = f", CSA {attn.csa_ratio:g}x/HCA {attn.hca_ratio:g}x" if attn.hca_ratio is not None else ""
    return f"MLA {attn.n_heads} heads ({style}{sparse})"


def ffn_kind(m: Model) -> str:
    """A short description of the model's FFN."""
    ffn = m.ffn
    if not ffn.is_moe:
        return f"dense {ffn.width}"
    shared = f" + {ffn.n_shared} shared" if ffn.n_shared else ""
    return f"MoE {ffn.n_routed} top-{ffn.top_k}{shared}"


def describe_model(m: Model) -> dict:
    """The key numbers of a model preset, as the ``speclib presets`` listing shows them."""
    ffn = m.ffn
    return {
        "name": m.name,
        "attention": attention_kind(m),
        "ffn": ffn_kind(m),
        "W_attn": m.attn_proj_params,
        "W_E": m.expert_params,
        "E/k": ffn.n_routed / ffn.top_k if ffn.is_moe else None,
        "m_c": m.context_bytes,
        "m_q": m.query_bytes,
        "f": m.flops_per_pair,
        "weights": f"proj {m.proj_weight_bytes:g} B {m.proj_precision}, ffn {ffn.weight_bytes:g} B {ffn.precision}",
        "source": m.source,
    }


def describe_hardware(h: Hardware) -> dict:
    """The key numbers of a hardware preset: bandwidth, peaks, ridges, fp4 handling."""
    out = {"name": h.name, "bandwidth_TBps": h.memory_bandwidth / TB}
    for p in reversed(PRECISIONS):
        out[f"{p}_PFLOPS"] = h.peak_flops(p) / PFLOPS
    for p in reversed(PRECISIONS):
        out[f"ridge_{p}"] = h.ridge(p)
    fallback = next(p for p in PRECISIONS if h.native(p))
    out["fp4"] = "native" if h.native("fp4") else f"runs at the {fallback} peak"
    out["source"] = h.source
    return out


B200 = hardware("B200")
H100_SXM = hardware("H100-SXM")
H200 = hardware("H200")
MI300X = hardware("MI300X")
MI325X = hardware("MI325X")
MI355X = hardware("MI355X")
GB300 = hardware("GB300")

DEEPSEEK_V4_FLASH = model("DeepSeek-V4-Flash")
DEEPSEEK_V4_PRO = model("DeepSeek-V4-Pro")
DEEPSEEK_V3 = model("DeepSeek-V3")
LLAMA_3_70B = model("Llama-3-70B")
MIXTRAL_8X7B = model("Mixtral-8x7B")
QWEN3_235B_A22B = model("Qwen3-235B-A22B")

#: The paper's deployment: DeepSeek-V4-Flash on one B200.
DEFAULT_MODEL = DEEPSEEK_V4_FLASH
DEFAULT_HARDWARE = B200
