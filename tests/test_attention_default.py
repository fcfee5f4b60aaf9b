"""One default for DeepSeek-V4's attention at every entry point.

The same flags give the same answer whichever way they are asked: the library's
shorthand (``model=``, ``hardware=``), a :class:`speclib.Deployment`,
``speclib.max_batch``, ``speclib.schedule`` and the ``speclib`` commands
(``gamma``, ``sweep``, ``schedule``, ``profile``) all price DeepSeek-V4's
attention as served unless told ``attention="paper"`` (``--attention paper``),
and each says which: the repr, the header line, the last column. Where the
two pricings differ (the batch a B200 holds at 4,096 tokens, the best draft
length at batch 64) each entry point is held to the deployment priced
explicitly, so a default that drifted back to the paper's at any one of them
fails here.
"""
import contextlib
import csv
import io
import json

import numpy as np
import pytest

import speclib
from speclib.core import cost
from speclib.tools.cli import main

MODEL, CHIP, B, S, ALPHA, C = "deepseek-v4-flash", "b200", 64, 4096, 0.75, 0.1
FLAGS = ["--model", MODEL, "--hardware", CHIP, "--seq", str(S), "--alpha", str(ALPHA), "--draft-cost", str(C)]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    assert status == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


def explicit(attention):
    """The deployment priced as named, the route every default is held to."""
    return speclib.Deployment(MODEL, CHIP, attention=attention)


def test_the_default_is_served_and_differs_from_the_paper_where_these_tests_look():
    assert cost.DEFAULT_ATTENTION == "served" == speclib.Deployment().attention
    served, paper = (speclib.optimal_gamma(ALPHA, B, S, C, deployment=explicit(a))[0] for a in ("served", "paper"))
    assert served != paper  # otherwise the checks below could not tell the two apart
    assert explicit("served").max_batch(S) != explicit("paper").max_batch(S)


@pytest.mark.parametrize("attention", [None, "served", "paper"])
def test_every_entry_point_gives_the_same_best_draft_length(attention):
    want = explicit(attention or "served")
    g, s = speclib.optimal_gamma(ALPHA, B, S, C, deployment=want)
    flag = [] if attention is None else ["--attention", attention]
    kw = {} if attention is None else {"attention": attention}

    # the library: the shorthand and a deployment of the same flags
    if attention is None:
        assert speclib.optimal_gamma(ALPHA, B, S, C, model=MODEL, hardware=CHIP) == (g, s)
    assert speclib.optimal_gamma(ALPHA, B, S, C, deployment=speclib.Deployment(MODEL, CHIP, **kw)) == (g, s)
    # speclib gamma
    record = json.loads(run("gamma", *FLAGS, "--batch", B, "--json", *flag)[0])
    assert (record["gamma_star"], record["speedup"], record["attention"]) == (g, s, want.attention)
    # speclib sweep
    rows = list(csv.DictReader(io.StringIO(run("sweep", *FLAGS, "--batch", B, *flag)[0])))
    assert [(int(r["gamma_star"]), float(r["speedup"]), r["attention"]) for r in rows] == [(g, s, want.attention)]
    # speclib.schedule and speclib schedule (its table at batch B, the vLLM form's ranges)
    sched = speclib.schedule(MODEL, CHIP, S, alpha=ALPHA, c_draft=C, max_batch=B) if attention is None else \
        speclib.schedule(seq=S, alpha=ALPHA, c_draft=C, max_batch=B, deployment=speclib.Deployment(MODEL, CHIP, **kw))
    assert int(sched.gamma_star[B - 1]) == g
    config = json.loads(run("schedule", *FLAGS, "--max-batch", B, "--engine", "vllm", *flag)[0])["speculative_config"]
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert [k for lo, hi, k in ranges if lo <= B <= hi] == [g]
    # speclib profile: the same step, so the same speed-up from its seconds
    steps = list(csv.DictReader(io.StringIO(run("profile", *FLAGS[:6], "--batch", B, "--gamma-max", g, *flag)[0])))
    seconds = {int(r["num_draft_tokens"]): float(r["step_seconds"]) for r in steps}
    assert {r["attention"] for r in steps} == {want.attention}
    n = speclib.expected_committed(ALPHA, float(g))
    assert n * seconds[0] / seconds[g] == pytest.approx(s, rel=1e-12)


@pytest.mark.parametrize("attention", [None, "served", "paper"])
def test_max_batch_is_the_deployments(attention):
    kw = {} if attention is None else {"attention": attention}
    want = explicit(attention or "served").max_batch(S)
    assert speclib.max_batch(MODEL, CHIP, S, **kw) == speclib.Deployment(MODEL, CHIP, **kw).max_batch(S) == want
    assert speclib.max_batch(deployment=speclib.Deployment(MODEL, CHIP, **kw), context=S) == want
    # what the sweep says the deployment holds while drafting nothing
    flag = [] if attention is None else ["--attention", attention]
    rows = list(csv.DictReader(io.StringIO(run("sweep", *FLAGS[:6], "--alpha", "0", "--batch", 1, *flag)[0])))
    assert [int(r["max_batch"]) for r in rows] == [want]


def test_each_output_says_which_attention_pricing_it_used():
    assert repr(speclib.Deployment()).endswith("attention='served')")
    assert repr(speclib.Deployment(attention="paper")).endswith("attention='paper')")
    for attention, words in (("served", "attention as served"), ("paper", "attention as the paper prices it")):
        flag = ["--attention", attention]
        assert run("gamma", *FLAGS, "--batch", B, *flag)[0].splitlines()[0] == f"DeepSeek-V4-Flash on B200, {words}"
        whole = run("gamma", *FLAGS, "--batch", B, "--roofline", "aggregate", *flag)[0].splitlines()[0]
        assert whole.startswith("DeepSeek-V4-Flash on B200, the whole model's step") and whole.endswith(words)
        table = run("schedule", *FLAGS, "--max-batch", B, "--format", "table", *flag)[0]
        assert f"; {words}" in " ".join(line.strip() for line in table.split("\n\n")[0].splitlines())
        assert f"; {words}; precision: " in run("schedule", *FLAGS, "--max-batch", B, "--engine", "vllm", *flag)[1].splitlines()[0]
        assert run("sweep", *FLAGS, "--batch", B, "--format", "table", *flag)[0].splitlines()[0].split()[-3:] == \
            ["attention", "weights", "kv_cache"]
    # a model whose attention nothing compresses is priced the same either way, and still says how
    llama = ["--model", "llama-3-70b", "--batch", 8, "--seq", S, "--alpha", ALPHA, "--json"]
    same = [json.loads(run("gamma", *llama, "--attention", a)[0]) for a in ("served", "paper")]
    assert same[0]["gamma_star"] == same[1]["gamma_star"] and same[0]["speedup"] == same[1]["speedup"]
    assert [r["attention"] for r in same] == ["served", "paper"]
    np.testing.assert_array_equal(speclib.speedup(ALPHA, 3, B, S, C, "llama-3-70b"),
                                  speclib.speedup(ALPHA, 3, B, S, C, deployment=speclib.Deployment(
                                      "llama-3-70b", attention="paper")))
