"""Overlap scheduling: whether an engine prepares the next step on the CPU
while the GPU runs this one, on its plain path and on its speculative path.

A serving engine spends host time on every step: scheduling, building the
next step's inputs, sampling bookkeeping, launching its CUDA graphs. An
engine that overlaps scheduling with the GPU (SGLang's overlap scheduler,
vLLM's async scheduling, TensorRT-LLM's overlap scheduler) hides that time
behind the previous step's kernels; one that does not adds it to every
step. Where an engine's plain path overlaps and its speculative path does
not, speculation pays a cost per step that plain decoding hides: that is a
property of the engine (and its release and drafting method), not of the
model, and :class:`speclib.Deployment` takes it as ``spec_overlap``.

:data:`OVERLAP` says, per engine, which paths overlap in which releases, from
each engine's source as shipped (its release wheels, or for TensorRT-LLM its
source files); in the current releases of all three, the speculative paths
of MTP and EAGLE-3 overlap as plain decoding does, so the default prices no
difference. ``spec_overlap=False`` prices a release or a method without it
(SGLang before 0.5.11 by default, its n-gram and DFlash paths before 0.5.14,
vLLM's draft-model and CPU n-gram paths, TensorRT-LLM's n-gram and
user-provided drafters) with :func:`host_time`, the host time a plain step
hides, per step of the group.
"""
from __future__ import annotations

import numpy as np

#: Host time a step spends outside the GPU's kernels (scheduling, inputs,
#: bookkeeping), as a fixed part and a part per running request: SGLang on
#: an H100 at TP 2 (Qwen3-Omni's thinker, CUDA graphs on every step) spends
#: 1.36-1.38 ms at 16 concurrent requests and 1.82-1.86 ms at 32, about
#: 20-24 % of the step (sglang-omni issue 760); a line through the two is
#: 0.9 ms plus 29 us per request. One engine, one chip, one published
#: series: an estimate, stated as such where it is used.
HOST_FIXED_S = 0.9e-3
HOST_PER_REQUEST_S = 29e-6
HOST_SOURCE = "sglangomni760"

#: Per engine: its plain path's overlap, and its speculative path's, by
#: release and method (the table the engines chapter prints).
OVERLAP = (
    ("SGLang", "overlap scheduler, on by default since 0.3.6",
     "off for EAGLE, EAGLE-3 and MTP up to 0.5.10 (opt-in from 0.5.4); on by default from 0.5.11 (draft top-k 1); "
     "from 0.5.14 every built-in method, n-gram and DFlash included, follows the plain path's setting",
     "sglangoverlap2026"),
    ("vLLM", "async scheduling, opt-in from 0.10, on by default since 0.14",
     "none before 0.11.1; EAGLE, EAGLE-3 and MTP from 0.11.1 (opt-in) and by default from 0.14; draft-model and "
     "CPU n-gram paths without it through 0.28; in 0.33 only CPU n-gram, suffix and custom drafters lack it",
     "vllmoverlap2026"),
    ("TensorRT-LLM", "overlap scheduler, on by default since 0.20",
     "on for one-model MTP and EAGLE-3 (and the one-engine DFlash paths); off for n-gram and user-provided "
     "drafters, and for two-model drafting until September 2025",
     "trtllmoverlap2026"),
)


def host_time(B):
    """Seconds of host time per step of ``B`` running requests that an
    engine's overlap scheduler hides (see :data:`HOST_FIXED_S`)."""
    return HOST_FIXED_S + HOST_PER_REQUEST_S * np.asarray(B, dtype=float)


def check_spec_overlap(value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"spec_overlap must be True (the speculative path overlaps scheduling as the plain path "
                         f"does) or False (it does not, and pays the host time the plain path hides); got {value!r}")
    return bool(value)
