"""The claims' data file (speclib/data/claims.json) and its one reader,
speclib.evidence.claim_data: what it accepts, what it refuses (naming the
claim and the field), and how a claim's notes are filled."""
import copy
import fnmatch
import json
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from speclib.evidence import claim_data, claims

ROOT = Path(__file__).resolve().parents[1]
RAW = json.loads(resources.files("speclib").joinpath("data", "claims.json").read_text(encoding="utf-8"))


def minimal():
    """A small valid file: one claim of each kind."""
    return {
        "about": "test",
        "sources": {"post": {"cite": "finn2026economics", "title": "The economics of speculative decoding"}},
        "claims": [
            {"id": "v", "section": "s", "statement": "a value", "source": "post", "kind": "value",
             "paper_text": "~10,950", "tolerance": "printed", "note": "ours {x:.1f}"},
            {"id": "b", "section": "s", "statement": "a boolean", "source": "post", "kind": "boolean",
             "paper_text": "memory-bound", "note_if_differs": "because {why}", "side": "source"},
            {"id": "r", "section": "s", "statement": "a band", "source": "post", "kind": "range",
             "paper_text": "27-31", "range": [27, 31], "widen": 0.5},
        ],
    }


def with_claim(index, **changes):
    raw = minimal()
    for key, value in changes.items():
        if value is None:
            del raw["claims"][index][key]
        else:
            raw["claims"][index][key] = value
    return raw


# --- the shipped file ---------------------------------------------------------------


def test_the_shipped_file_reads_and_holds_every_claim_once():
    data = claim_data.load()
    ids = [spec.id for spec in data.claims]
    assert len(ids) == len(set(ids)) == len(RAW["claims"])
    assert set(ids) == set(claims.computed())


def test_the_shipped_file_is_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["speclib"]
    assert any(fnmatch.fnmatch("data/claims.json", g) for g in globs)


def test_printed_tolerances_follow_the_printed_precision_rule():
    data = claim_data.load().by_id()
    # independent of the reader: half a unit of the last printed digit, trailing zeros of "~" figures
    # a plain figure to half a unit of its last digit; an "about" figure ("~") to a whole unit
    assert data["moe.ridge_asymptotic"].tolerance == 10  # "~10,950"
    assert data["hca.t2_ridge_context"].tolerance == 1000  # "about 45k"
    assert data["hca.speculation_band_low"].tolerance == 10_000  # "~30k"
    assert data["ledger.r_moe_b1"].tolerance == pytest.approx(0.01)  # "~0.85"
    assert data["sequel.headline.gain_mtp_c64"].tolerance == pytest.approx(0.005)  # "2.71"
    assert data["table1.value.S512_T1"].tolerance == 0.5  # "193"
    assert data["sequel.per_component_max_mtp"].paper_value == 29
    assert data["sequel.per_component_max_mtp"].tolerance == 2.5  # 27-31, ends printed to +-0.5


# --- what the reader accepts and how a note is filled ------------------------------------------


def test_a_minimal_file_reads():
    data = claim_data.parse(minimal(), "test.json")
    v, b, r = data.claims
    assert (v.paper_value, v.tolerance, v.paper_text) == (10950, 10, "~10,950")
    assert (b.paper_value, b.tolerance) == (1, 0)
    assert (r.paper_value, r.tolerance) == (29, 2.5)
    assert v.source == "finn2026economics"


def test_notes_are_filled_and_only_the_outcome_s_note_is_added():
    v, b, _ = claim_data.parse(minimal(), "test.json").claims
    assert v.claim(10_951, {"x": 10_951.04}).note == "ours 10951.0"
    assert v.claim(10_951, {"x": 10_951.04}).status == "reproduced"
    held = b.claim(1.0, {"why": lambda: pytest.fail("a note that is not shown must not be computed")})
    assert held.status == "reproduced" and held.note == ""
    failed = b.claim(0.0, {"why": lambda: "the test failed"})
    assert failed.status == "differs" and failed.note == "because the test failed"


def test_who_differs_comes_from_the_file_or_from_the_simulator_s_value():
    raw = minimal()
    raw["sources"]["post"]["called"] = "the post"
    v, b, _ = claim_data.parse(raw, "test.json").claims
    assert b.claim(0.0, {"why": "a test"}).verdict == "the post differs"
    with pytest.raises(ValueError, match="needs a side"):
        v.claim(20_000, {"x": 1})
    # the simulator's value decides, and is always computed
    assert v.claim(20_000, {"x": 1, "simulator_value": lambda: 10_951}).verdict == "our closed form differs"
    assert v.claim(10_951, {"x": 1, "simulator_value": 20_000}).verdict == "the simulator differs"
    assert v.claim(20_000, {"x": 1, "simulator_value": 20_000}).verdict == "the post differs"
    with pytest.raises(ValueError, match="no side may be typed"):
        b.claim(0.0, {"why": "a test", "simulator_value": 1.0})


def test_every_shipped_source_says_how_a_verdict_calls_it():
    assert {s.called for s in claim_data.load().sources.values()} <= {"the post", "the article"}


def test_a_claim_keeps_the_numbers_its_note_quotes_and_only_those():
    v, b, r = claim_data.parse(minimal(), "test.json").claims
    assert v.claim(10_951, {"x": 10_951.04, "unused": 3}).values == {"x": 10_951.04}
    assert b.claim(1.0, {"why": lambda: pytest.fail("a note that is not shown must not be computed")}).values == {}
    assert b.claim(0.0, {"why": lambda: "the test failed"}).values == {"why": "the test failed"}
    assert r.claim(29.0).values == {}


def test_a_note_field_the_computation_does_not_supply_names_the_claim_and_the_field():
    v = claim_data.parse(minimal(), "test.json").claims[0]
    with pytest.raises(ValueError, match=r"claim 'v'.*'x'"):
        v.claim(10_950, {"y": 1})


def test_a_computed_claim_missing_from_the_file_is_an_error(monkeypatch):
    raw = copy.deepcopy(RAW)
    raw["claims"] = [c for c in raw["claims"] if c["id"] != "mla.m_c"]
    monkeypatch.setattr(claim_data, "load", lambda: claim_data.parse(raw, "test.json"))
    with pytest.raises(ValueError, match=r"missing from the data file: \['mla.m_c'\]"):
        claims.registry()


# --- what it refuses ------------------------------------------------------------------------


@pytest.mark.parametrize("index, field", [
    (0, "section"), (0, "statement"), (0, "source"), (0, "paper_text"), (0, "tolerance"), (0, "kind"),
    (1, "section"), (1, "statement"),
    (2, "range"), (2, "paper_text"),
])
def test_a_missing_field_names_the_claim_and_the_field(index, field):
    raw = with_claim(index, **{field: None})
    claim_id = raw["claims"][index]["id"]
    with pytest.raises(ValueError, match=rf"claim '{claim_id}': missing field '{field}'"):
        claim_data.parse(raw, "test.json")


@pytest.mark.parametrize("index, field", [(0, "range"), (1, "tolerance"), (2, "tolerance"), (0, "paper_vaule"),
                                          (1, "notes")])
def test_an_unknown_key_names_the_claim_and_the_key(index, field):
    raw = with_claim(index, **{field: 1})
    claim_id = raw["claims"][index]["id"]
    with pytest.raises(ValueError, match=rf"test.json: claim '{claim_id}': unknown field '{field}'"):
        claim_data.parse(raw, "test.json")


@pytest.mark.parametrize("index, changes, match", [
    (0, {"kind": "scalar"}, r"claim 'v': field 'kind'"),
    (0, {"tolerance": -1}, r"claim 'v': field 'tolerance' must be >= 0"),
    (0, {"tolerance": "loose"}, r"claim 'v': field 'tolerance' must be a finite number"),
    (0, {"tolerance_kind": "percent"}, r"claim 'v': field 'tolerance_kind'"),
    (0, {"source": "blog"}, r"claim 'v': field 'source' must be one of \['post'\]"),
    (0, {"paper_text": "about half"}, r"claim 'v': missing field 'paper_value'"),
    (0, {"paper_text": "about half", "paper_value": 0.5}, r"claim 'v': field 'tolerance' is 'printed'"),
    (0, {"note": "{}"}, r"claim 'v': field 'note' names '', which is not a plain field name"),
    (0, {"note": "{x"}, r"claim 'v': field 'note' is not a valid template"),
    (0, {"statement": ""}, r"claim 'v': field 'statement' must be a non-empty string"),
    (2, {"range": [31, 27]}, r"claim 'r': field 'range' must be \[low, high\]"),
    (2, {"widen": "half"}, r"claim 'r': field 'widen' must be a finite number"),
    (1, {"side": "nobody"}, r"claim 'b': field 'side' must be one of"),
])
def test_a_bad_value_names_the_claim_and_the_field(index, changes, match):
    with pytest.raises(ValueError, match=match):
        claim_data.parse(with_claim(index, **changes), "test.json")


def test_a_repeated_id_is_refused():
    raw = minimal()
    raw["claims"].append(copy.deepcopy(raw["claims"][0]))
    with pytest.raises(ValueError, match=r"claim 'v' appears twice"):
        claim_data.parse(raw, "test.json")


@pytest.mark.parametrize("change, match", [
    (lambda raw: raw.pop("sources"), r"test.json: missing field 'sources'"),
    (lambda raw: raw.update(version=2), r"test.json: unknown field 'version'"),
    (lambda raw: raw["sources"]["post"].pop("title"), r"source 'post': missing field 'title'"),
    (lambda raw: raw["sources"]["post"].update(doi="x"), r"source 'post': unknown field 'doi'"),
    (lambda raw: raw.update(claims=[]), r"'claims' must be a non-empty JSON list"),
])
def test_the_file_s_frame_is_checked(change, match):
    raw = minimal()
    change(raw)
    with pytest.raises(ValueError, match=match):
        claim_data.parse(raw, "test.json")


def _with_checks(checks, marks):
    raw = minimal()
    raw["checks"] = checks
    for index, check in marks.items():
        raw["claims"][index]["check"] = check
    return raw


def test_claims_that_share_a_check_read_as_one_check():
    raw = _with_checks({"vb": {"statement": "two printed numbers of one computation"}}, {0: "vb", 1: "vb"})
    data = claim_data.parse(raw)
    assert data.checks == {"vb": "two printed numbers of one computation"}
    assert [s.check for s in data.claims] == ["vb", "vb", ""]


@pytest.mark.parametrize("checks, marks, match", [
    ({}, {0: "nowhere"}, "names 'nowhere', which the 'checks' table"),
    ({"vb": {"statement": "x"}}, {0: "vb"}, "a check holds two claims or more; 1 name it"),
    ({"v": {"statement": "x"}}, {1: "v", 2: "v"}, "must not share a claim's id"),
    ({"vb": {"statement": "x", "held_by": "y"}}, {0: "vb", 1: "vb"}, "unknown field 'held_by'"),
])
def test_a_bad_check_is_refused_naming_it(checks, marks, match):
    with pytest.raises(ValueError, match=match):
        claim_data.parse(_with_checks(checks, marks))


def test_a_check_across_two_sections_is_refused():
    raw = _with_checks({"vb": {"statement": "x"}}, {0: "vb", 1: "vb"})
    raw["claims"][1]["section"] = "another"
    with pytest.raises(ValueError, match="one source and one section"):
        claim_data.parse(raw)
