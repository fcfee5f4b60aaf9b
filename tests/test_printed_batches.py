"""Every table the book prints with a batch in it says where memory ends: the
operating points it prints are held against what the deployment holds, and
a batch the deployment cannot hold at the printed draft length carries the
mark; every draft length a schedule hands to an engine is one the
deployment holds over the whole range it is set for."""
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
