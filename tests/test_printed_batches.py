"""Every table the book prints with a batch in it says where memory ends: the
operating points it prints are held against what the deployment holds, and
a batch the deployment cannot hold at the printed draft length carries the
mark; every draft length a schedule hands to an engine is one the
deployment holds over the whole range it is set for."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

import speclib
from speclib.presentation.figures import (common, deployments, draft_length, expert_parallelism, pricing,
                                          reconciliation)
from speclib.tools.schedule import render

#: The tables that print batches, each called as its chapter calls it (defaults).
TABLES = {
    "draft_length.first_look": draft_length.first_look,
    "draft_length.gutter_table": draft_length.gutter_table,
    "draft_length.worked_examples": draft_length.worked_examples,
    "draft_length.regions_table": draft_length.regions_table,
    "pricing.break_even": pricing.break_even,
    "deployments.gutter_table": deployments.gutter_table,
    "expert_parallelism.expert_parallel_summary": expert_parallelism.expert_parallel_summary,
    "reconciliation.sequel_table": reconciliation.sequel_table,
}


def held_by_hand(deployment, S, B, gamma) -> bool:
    """Whether ``B`` sequences fit: each GPU's bytes (its weights and its
    share of every sequence, from the memory's parts) against its HBM less
    the reserve; not the floor of the closed form max_batch takes."""
    memory = deployment.memory(S, gamma)
    return memory.per_gpu_weights + np.ceil(B) * memory.per_sequence <= memory.usable


@pytest.fixture(scope="module", params=sorted(TABLES))
def table(request):
    return request.param, TABLES[request.param]()


def test_every_printed_point_is_marked_exactly_when_memory_cannot_hold_it(table):
    name, t = table
    assert t.held, f"{name} prints batches but records no operating point"
    for dep, S, B, gamma, marked in t.held:
        assert marked == (not held_by_hand(dep, S, B, gamma)), (name, dep, S, B, gamma)
    body = " ".join(cell for row in t._text_rows() for cell in row)
    assert body.count(common.NOT_HELD) == sum(marked for *_, marked in t.held), name  # one mark per point
    assert common.NOT_HELD in t.caption, f"{name}'s caption does not say what the mark means"


def test_the_papers_large_batches_are_marked():
    # the introduction's first look: DeepSeek-V4-Flash at 16,384 sequences on one B200 cannot be held
    t = draft_length.first_look()
    marked = {(dep.model.name, B) for dep, S, B, g, m in t.held if m}
    assert ("DeepSeek-V4-Flash", 16384.0) in marked and ("DeepSeek-V4-Flash", 1.0) not in marked


@pytest.mark.parametrize("kw, S", [
    (dict(model="qwen3.6", hardware="B200", drafter="qwen3.6-mtp"), 4096),
    (dict(model="deepseek-v4-flash", hardware="B200", tp=2, drafter="deepseek-v4-flash-mtp", attention="served"),
     4096),
    (dict(model="llama-3-70b", hardware="H200", tp=4, drafter="llama-3.3-70b-eagle3"), 8192),
])
def test_a_schedule_never_hands_an_engine_a_draft_its_memory_cannot_hold(kw, S):
    dep = speclib.Deployment(**kw)
    sched = speclib.schedule(seq=S, alpha=0.8 if dep.drafter.acceptance is None else None, max_batch=4096,
                             deployment=dep)
    for table in (sched.table(), sched.table(4), sched.table(3, first_is_max=True, implicit_zero_tail=True)):
        for r in table.ranges:
            assert held_by_hand(dep, S, r.hi, r.k), (kw, r)
    assert sched.max_batch <= dep.max_batch(S)
    text = render(sched, "table")
    assert f"holds {dep.max_batch(S):,} sequences without drafting" in " ".join(text.split())


# --- batches the prose states through glue -------------------------------------------------------
BOOK = Path(__file__).resolve().parents[1] / "book"


def _dsv4(attention="paper", **kw):
    return speclib.Deployment("DeepSeek-V4-Flash", "B200", attention=attention, **kw)


#: (chapter, glue reference as the chapter writes it, the deployment it is a batch of, context, draft length, how many
#: GPUs a per-GPU batch is of): the batches the book's prose states, checked against what memory holds. A batch of one
#: layer priced as the paper prices it need not be held, but its paragraph must say so.
PROSE_BATCHES = (
    ("draft_length", "stop_batch", _dsv4(), 4096, 1, 1),
    ("draft_length", "best_batch", _dsv4(), 4096, 5, 1),
    ("draft_length", "best_batch_to", _dsv4(), 4096, 5, 1),
    ("draft_length", "gutter", _dsv4(), 4096, 0, 1),
    ("draft_length", "gutter_131k_paper", _dsv4(), 131072, 0, 1),
    ("draft_length", "gutter_131k_served", _dsv4("served"), 131072, 0, 1),
    ("draft_length", "last_4096_served", _dsv4("served"), 4096, 1, 1),
    ("draft_length", "last_32768_paper", _dsv4(), 32768, 1, 1),
    ("draft_length", "last_131072_paper", _dsv4(), 131072, 1, 1),
    ("conclusion", "draft_length.ipynb::stop_batch", _dsv4(), 4096, 1, 1),
    ("pricing", "need_lowest_at", _dsv4(), 8192, 1, 1),
    ("pricing", "need_highest_at", _dsv4(), 8192, 1, 1),
    ("expert_parallelism", "nvl8_latency_stop", _dsv4(tp=8, ep=8, dp_attention=True), 4096, 0, 8),
    ("expert_parallelism", "nvl64_latency_stop", _dsv4(tp=64, ep=64, dp_attention=True, interconnect="NVLink5-NVL72"),
     4096, 0, 64),
    ("engine_schedules", "gutter_to", _dsv4(tp=2), 4096, 0, 1),
    ("engine_schedules", "roof_peak_to", _dsv4(tp=2), 4096, 5, 1),
    ("engine_schedules", "cal_stop", _dsv4("served", tp=2, drafter="deepseek-v4-flash-mtp"), 4096, 0, 1),
    ("engine_schedules", "sg_static_held", _dsv4("served", tp=2, drafter="deepseek-v4-flash-mtp",
                                                 step_time="calibrated", engine="SGLang"), 4096, 4, 1),
    ("appendix_dense_speedups", "dense_held", speclib.Deployment("Llama-3-70B", "H100", tp=4), 2048, 0, 1),
    ("your_deployment", "log_dp_held", speclib.Deployment("deepseek-r1", "H200", tp=8, dp_attention=True,
                                                          engine="SGLang"), 2048, 0, 1),
)


def _glued(chapter: str) -> dict:
    nb = json.loads((BOOK / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", ()):
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                out[meta["name"]] = o["data"].get(meta["mime_prefix"] + "text/plain")
    return out


def _paragraph(chapter: str, reference: str) -> str:
    nb = json.loads((BOOK / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    text = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for paragraph in re.split(r"\n\s*\n", text):
        if re.search(r"\{glue:text\}`" + re.escape(reference) + r"(:[^`]*)?`", paragraph):
            return paragraph
    raise AssertionError(f"{chapter} does not paste {reference}")


@pytest.mark.parametrize("chapter, reference, deployment, S, gamma, gpus", PROSE_BATCHES,
                         ids=[f"{c}:{r}" for c, r, *_ in PROSE_BATCHES])
def test_a_batch_the_prose_states_beyond_memory_is_said_to_be(chapter, reference, deployment, S, gamma, gpus):
    source, _, name = reference.rpartition(".ipynb::")
    value = _glued(source or chapter)[name]
    B = float(re.findall(r"[\d.]+", value.replace(",", ""))[-1]) * gpus  # a range's last batch
    held = B <= deployment.max_batch(S, gamma)
    paragraph = _paragraph(chapter, reference)
    if not held:
        assert re.search(r"\bhold|\u2020", paragraph), (
            f"{chapter} states batch {B:,.0f} ({reference}), which {deployment} does not hold at {S:,} tokens "
            f"drafting {gamma}, and its paragraph does not say so")
