"""Speculative methods: which drafter a model has, what each engine calls it,
and where the engine takes the drafter's checkpoint.

A method is either the target's own multi-token-prediction layers (MTP:
DeepSeek-V3/R1 and V4, GLM-4.x, Qwen3.5/3.6 ship them, and the model's
config says so, :attr:`speclib.presets.Model.mtp_layers`) or a drafter of
its own (an EAGLE or EAGLE-3 head, a small draft model, a DFlash block
drafter) whose checkpoint the engine must be given, or n-gram lookup, which
needs no weights. A configuration names a method the model has, and the
drafter's path where the engine needs one:

vLLM (vllm/config/speculative.py, ``SpeculativeMethod`` and
``SpeculativeConfig.__post_init__``)
  ``method`` is one of ``mtp``, ``eagle``, ``eagle3``, ``draft_model``,
  ``dflash``, ``ngram`` (and others speclib does not write); ``model`` is
  "the name of the draft model, eagle head, or additional weights". With
  ``num_speculative_tokens`` and no ``model``, ``mtp`` takes the target's own
  weights and ``ngram`` none; any other method is refused ("num_speculative_tokens
  was provided but without speculative model").
SGLang (docs/advanced_features/speculative_decoding.md)
  ``--speculative-algorithm`` ``EAGLE`` (EAGLE-2, and MTP: the model's own
  NextN layer, no draft path for MTP models), ``EAGLE3``, ``STANDALONE`` (a
  draft model), ``DFLASH``, ``NGRAM``; the drafter goes in
  ``--speculative-draft-model-path``, "typically required for EAGLE/EAGLE3
  and STANDALONE".
TensorRT-LLM (docs/source/features/speculative-decoding.md)
  ``decoding_type`` ``MTP`` ("currently only supported by Deepseek" in that
  page), ``Eagle3``, ``DraftTarget``, ``DFlash``, ``NGram`` (also ``PARD``,
  ``SA``); the drafter goes in ``speculative_model``, alias
  ``speculative_model_dir``. "The PyTorch backend supports only ``Eagle3``":
  EAGLE-1/2 checkpoints do not load. A draft model is written ``Draft_Target``,
  the ``decoding_type`` literal of ``DraftTargetDecodingConfig`` in the
  ``speculative_config`` union of tensorrt_llm/llmapi/llm_args.py as read for
  release 1.3.0rc27 (engines.TRTLLM_SOURCE; no alias for ``DraftTarget`` was
  found there); ``DraftTarget`` is still taken as a ``--method`` spelling.
"""
from __future__ import annotations

from dataclasses import dataclass

#: The engines speclib writes for, by the names ``--engine`` takes.
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}

#: Where each engine takes the drafter's checkpoint.
PATH_KEYS = {
    "vllm": 'the speculative_config key "model"',
    "sglang": "--speculative-draft-model-path",
    "trtllm": "speculative_model (alias speculative_model_dir)",
}


@dataclass(frozen=True)
class Method:
    """One speculative method: speclib's ``name``, its ``label`` in prose,
    whether it drafts with the target's own MTP layers (``own_head``), whether
    the engine must be given a drafter checkpoint (``needs_path``), and each
    engine's name for it (None: the engine has no such method)."""

    name: str
    label: str
    own_head: bool
    needs_path: bool
    vllm: str | None
    sglang: str | None
    trtllm: str | None

    def on(self, engine: str) -> str | None:
        """This method's name in ``engine`` (``vllm``, ``sglang``, ``trtllm``)."""
        return getattr(self, engine)


METHODS = {
    "mtp": Method("mtp", "MTP", own_head=True, needs_path=False, vllm="mtp", sglang="EAGLE", trtllm="MTP"),
    "eagle3": Method("eagle3", "EAGLE-3", own_head=False, needs_path=True, vllm="eagle3", sglang="EAGLE3",
                     trtllm="Eagle3"),
    "eagle": Method("eagle", "EAGLE", own_head=False, needs_path=True, vllm="eagle", sglang="EAGLE", trtllm=None),
    "draft_model": Method("draft_model", "a draft model", own_head=False, needs_path=True, vllm="draft_model",
                          sglang="STANDALONE", trtllm="Draft_Target"),
    "dflash": Method("dflash", "DFlash", own_head=False, needs_path=True, vllm="dflash", sglang="DFLASH",
                     trtllm="DFlash"),
    "ngram": Method("ngram", "n-gram lookup", own_head=False, needs_path=False, vllm="ngram", sglang=None,
                    trtllm="NGram"),
}

#: Other spellings ``method=`` accepts (lower case): the engines' own names for each method.
ALIASES = {
    "nextn": "mtp", "eagle-3": "eagle3", "eagle-2": "eagle", "eagle2": "eagle", "draft-model": "draft_model",
    "standalone": "draft_model", "drafttarget": "draft_model", "draft_target": "draft_model", "n-gram": "ngram",
}

#: What the model's config must have for MTP.
MTP_KEYS = "num_nextn_predict_layers or mtp_num_hidden_layers"


def method_of(name) -> Method:
    """The method called ``name``: speclib's name or an engine's own spelling,
    case-insensitive (vLLM's model-specific ``*_mtp`` names mean ``mtp``, as
    vLLM itself reads them)."""
    if isinstance(name, Method):
        return name
    key = str(name).strip().lower() if isinstance(name, str) else None
    key = ALIASES.get(key, key)
    if key is not None and key.endswith("_mtp"):
        key = "mtp"
    if key not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)} (or an engine's own spelling of one); "
                         f"got {name!r}")
    return METHODS[key]


def available(mtp_layers: int) -> tuple:
    """The methods a model can serve with: MTP only if it ships MTP layers;
    every drafter of its own (given its checkpoint) and n-gram lookup always."""
    return tuple(m for m in METHODS.values() if not m.own_head or mtp_layers > 0)


def default_method(mtp_layers: int, drafter_kind: str | None = None) -> Method | None:
    """The method a schedule implies: its drafter preset's kind (``mtp`` or
    ``dflash``), else the model's own MTP layers if it has them; None when
    the model has none and no drafter says which (the caller must name one)."""
    if drafter_kind in METHODS:
        return METHODS[drafter_kind]
    return METHODS["mtp"] if mtp_layers > 0 else None


def resolve(method, engine: str, *, model: str, mtp_layers: int, drafter_kind: str | None = None,
            draft_model: str | None = None) -> tuple:
    """(the :class:`Method`, its name in ``engine``) for a configuration of
    ``model`` (a name, for messages) with ``mtp_layers`` MTP layers, checked:
    the method exists for the model and in the engine, and ``draft_model``
    (the drafter's checkpoint) is given exactly where the engine needs one.
    ``method`` None takes :func:`default_method`. Raises a one-line
    ValueError naming ``method`` or ``draft_model``."""
    if engine not in ENGINE_NAMES:
        raise ValueError(f"engine must be one of {', '.join(ENGINE_NAMES)}; got {engine!r}")
    external = ", ".join(m.name for m in METHODS.values() if not m.own_head)
    if method is None:
        chosen = default_method(mtp_layers, drafter_kind)
        if chosen is None:
            raise ValueError(f"method: {model} has no MTP layers of its own (its config has no {MTP_KEYS}), so name "
                             f"its drafter: one of {external}, with the drafter's checkpoint where it needs one")
    else:
        chosen = method_of(method)
    if chosen.own_head and mtp_layers <= 0:
        raise ValueError(f"method: mtp drafts with the model's own MTP layers and {model} has none (its config has "
                         f"no {MTP_KEYS}); name one of {external} instead")
    if drafter_kind in METHODS and chosen.name != drafter_kind:
        raise ValueError(f"method: the schedule was priced for a {METHODS[drafter_kind].label} drafter; "
                         f"got method {chosen.name}")
    name = chosen.on(engine)
    if name is None:
        offered = ", ".join(m.name for m in available(mtp_layers) if m.on(engine))
        raise ValueError(f"method: {ENGINE_NAMES[engine]} has no {chosen.label} method in the form speclib "
                         f"writes; for {model} it takes {offered}")
    if chosen.needs_path and not draft_model:
        raise ValueError(f"draft_model: method {chosen.name} needs the drafter's checkpoint (a path or a Hugging "
                         f"Face name), which {ENGINE_NAMES[engine]} takes as {PATH_KEYS[engine]}")
    if not chosen.needs_path and draft_model:
        why = "the target's own MTP layers" if chosen.own_head else "no weights"
        raise ValueError(f"draft_model: method {chosen.name} drafts with {why} and takes no drafter checkpoint; "
                         f"got {draft_model!r}")
    return chosen, name
