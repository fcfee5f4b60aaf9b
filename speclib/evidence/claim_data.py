"""The paper's numbers as data: the :class:`Claim` record and the one reader
of ``speclib/data/claims.json``.

The data file holds what the sources state and how closely we hold
ourselves to it; :mod:`.claims` holds only the computation of our numbers.
Per claim (a JSON object in ``"claims"``, in the book's order):

``id``, ``section``, ``statement``, ``source``, ``kind``, ``paper_text``
    required for every claim. ``source`` is a key of the file's
    ``"sources"`` table; ``kind`` is ``"value"``, ``"boolean"`` or
    ``"range"``; ``paper_text`` is the number or wording as we show it (a
    leading ``~`` marks an approximate figure).
``tolerance`` (value claims, required)
    a number >= 0, or ``"printed"``: half a unit of the last significant
    digit of ``paper_text`` (see :func:`printed_tolerance`).
``tolerance_kind`` (value claims)
    ``"absolute"`` (default) or ``"relative"``.
``paper_value`` (value claims)
    the stated number, when ``paper_text`` is not a plain number.
``range`` and ``widen`` (range claims)
    the stated band ``[low, high]`` (required) and how far the printed
    precision of its ends widens it (default 0).
``side`` (optional)
    who differs when the claim differs and the computation has no
    simulator's value to decide it (see below): ``"source"`` (the post or
    article states a number its own inputs do not give: a rounding, a
    shortcut, loose wording), ``"closed form"`` (our closed form, where the
    source reports a simulation or a convention ours does not follow) or
    ``"simulator"``.
``note``, ``note_if_reproduced``, ``note_if_differs``
    the explanation, as templates (:meth:`str.format` fields, filled by
    the computation); the last two are added only with that outcome.
``check`` (optional)
    the independent check the claim belongs to, a key of the file's
    ``"checks"`` table: printed numbers that one computation decides
    together (Table 1's 42 cells are one grid of one function) are one
    check, not 42. Without it a claim is a check of its own.

The optional ``"checks"`` table gives each shared check its ``statement``;
a check must hold two claims or more, all of one source and one section.

A source (``"sources"``) gives ``cite`` and ``title``, and may give
``author``, ``date``, ``url`` and ``called``: how a verdict names it ("the
post", "the article"; "the source" by default).

Who differs
-----------
A claim that differs says which side does (:attr:`Claim.verdict`). Where the
computation also supplies the simulator's own value of the quantity (the
field ``simulator_value``: the sequel reports a simulated grid, which we hold),
the side is derived from the three numbers, never typed: our closed form off
and the simulator on the printed number, "our closed form differs"; the
closed form on and the simulator off, "the simulator differs"; both off,
the source differs. Otherwise the data file's ``side`` says who, and a
claim that differs without one is an error.

A missing field, an unknown key or a value of the wrong type is a
:class:`ValueError` naming the file, the claim id and the field.
"""
from __future__ import annotations

import json
import math
import string
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from importlib import resources

STATUSES = ("reproduced", "differs")
#: Who differs, when a claim differs: the source (post or article), our closed form, or the simulator.
SIDES = ("source", "closed form", "simulator")
#: The field of a computation that carries the simulator's own value of a claim's quantity.
SIMULATOR_FIELD = "simulator_value"
TOLERANCE_KINDS = ("absolute", "relative")
KINDS = ("value", "boolean", "range")

#: The data file, as package data.
DATA_FILE = "claims.json"

#: Fields by kind: (required, optional), besides the fields every claim has.
_COMMON_REQUIRED = ("id", "section", "statement", "source", "kind", "paper_text")
_NOTES = ("note", "note_if_reproduced", "note_if_differs")
_COMMON_OPTIONAL = _NOTES + ("side", "check")
_BY_KIND = {
    "value": (("tolerance",), ("tolerance_kind", "paper_value")),
    "boolean": ((), ()),
    "range": (("range",), ("widen",)),
}
_SOURCE_FIELDS = (("cite", "title"), ("author", "date", "url", "called"))
_TOP_LEVEL = ("about", "sources", "claims")
_TOP_LEVEL_OPTIONAL = ("checks",)


@dataclass(frozen=True)
class Claim:
    """One quantitative statement, the paper's number and ours.

    ``status`` is not an argument: it is computed from ``our_value``,
    ``paper_value`` and the tolerance, and from ``simulator_value`` where the
    simulator's own value of the quantity is known. A claim that differs
    must carry a ``note`` saying why (rounding, b = 0.5 vs 0.53, the ledger
    dropping the query bytes, loose wording, a real error, ...) and a
    ``side``, who differs (:data:`SIDES`): derived from ``simulator_value``
    when it is given (a typed ``side`` is then refused), typed otherwise.
    ``values`` holds the numbers the note quotes, by the name its template
    gives them, so that a text can quote them from the same computation.
    """

    id: str
    section: str
    statement: str
    paper_value: float
    our_value: float
    tolerance: float
    tolerance_kind: str = "absolute"
    note: str = ""
    kind: str = "value"
    paper_text: str = ""
    source: str = "finn2026economics"
    values: dict = field(default_factory=dict, compare=False, repr=False)
    side: str = ""
    simulator_value: float | None = None
    source_called: str = "the source"
    #: the independent check this claim belongs to (its own id when it is one alone)
    check: str = ""
    status: str = field(init=False)

    def __post_init__(self):
        if self.tolerance_kind not in TOLERANCE_KINDS:
            raise ValueError(f"tolerance_kind must be one of {TOLERANCE_KINDS}; got {self.tolerance_kind!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        if not (math.isfinite(self.tolerance) and self.tolerance >= 0):
            raise ValueError(f"tolerance must be a finite number >= 0; got {self.tolerance!r}")
        if not math.isfinite(self.paper_value):
            raise ValueError(f"paper_value must be finite; got {self.paper_value!r}")
        if self.kind == "boolean" and self.our_value not in (0.0, 1.0):
            raise ValueError(f"a boolean claim's our_value must be 0 or 1; got {self.our_value!r}")
        if self.simulator_value is not None and not math.isfinite(self.simulator_value):
            raise ValueError(f"simulator_value must be finite; got {self.simulator_value!r}")
        if self.side and self.side not in SIDES:
            raise ValueError(f"claim {self.id!r}: side must be one of {SIDES}; got {self.side!r}")
        if self.side and self.simulator_value is not None:
            raise ValueError(f"claim {self.id!r}: the simulator's value decides who differs, so no side may be typed")
        status, side = verdict(self.our_value, self.paper_value, self.allowed, self.simulator_value, self.side)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "side", side)
        if status == "differs" and not self.note.strip():
            raise ValueError(f"claim {self.id!r} differs from the paper, so it needs a note saying why")
        if status == "differs" and not side:
            raise ValueError(f"claim {self.id!r} differs from the paper, so it needs a side saying who differs "
                             f"(one of {SIDES})")
        if not self.paper_text:
            object.__setattr__(self, "paper_text", _format_number(self.paper_value, self.display_decimals))
        if not self.check:
            object.__setattr__(self, "check", self.id)

    @property
    def allowed(self) -> float:
        """The largest |our_value - paper_value| that still reproduces."""
        return _allowed(self.paper_value, self.tolerance, self.tolerance_kind)

    def within_tolerance(self) -> bool:
        return _within(self.our_value, self.paper_value, self.allowed)

    @property
    def verdict(self) -> str:
        """``"reproduced"``, or who differs: ``"the post differs"`` (the
        source, as its record calls it), ``"our closed form differs"`` or
        ``"the simulator differs"``."""
        if self.status == "reproduced":
            return "reproduced"
        who = {"source": self.source_called, "closed form": "our closed form", "simulator": "the simulator"}[self.side]
        return f"{who} differs"

    @property
    def display_decimals(self) -> int:
        """Decimals shown for our value: one more than the tolerance resolves."""
        allowed = self.allowed
        if allowed <= 0:
            return 0 if float(self.our_value).is_integer() else 4
        return min(6, max(0, 1 - math.floor(math.log10(allowed))))

    @property
    def our_text(self) -> str:
        if self.kind == "boolean":
            return "yes" if self.our_value == 1 else "no"
        return _format_number(self.our_value, self.display_decimals)

    @property
    def paper_display(self) -> str:
        if self.kind == "boolean":
            return f"yes ({self.paper_text})" if self.paper_text not in ("", "yes") else "yes"
        return self.paper_text


def verdict(our_value, paper_value, allowed, simulator_value=None, side="") -> tuple:
    """(status, side) of a claim: who differs from the printed value.

    Without the simulator's value: reproduced when ours is within
    ``allowed``, else differs with the typed ``side``. With it, the side is
    derived: both within, reproduced; ours off and the simulator's on, our
    closed form differs; ours on and the simulator's off, the simulator
    differs; both off, the source differs.
    """
    ours = _within(our_value, paper_value, allowed)
    if simulator_value is None:
        return ("reproduced", "") if ours else ("differs", side)
    simulated = _within(simulator_value, paper_value, allowed)
    if ours and simulated:
        return "reproduced", ""
    return "differs", "simulator" if ours else "closed form" if simulated else "source"


def _allowed(paper_value, tolerance, tolerance_kind) -> float:
    return tolerance * abs(paper_value) if tolerance_kind == "relative" else tolerance


def _within(our_value, paper_value, allowed) -> bool:
    # A hair of slack so that an edge case printed exactly on the boundary
    # (562.5 vs "563") is not decided by the last bit of a float.
    return bool(abs(our_value - paper_value) <= allowed * (1 + 1e-12) + 1e-12)


def _format_number(value: float, decimals: int) -> str:
    if math.isinf(value):
        return "none" if value > 0 else "-none"
    return f"{value:,.{decimals}f}"


def printed_tolerance(text: str, approximate: bool = False) -> float:
    """How far from a printed number a value may lie and still give it.

    A number printed plainly is a rounding: a value gives it when it rounds
    to it, within half a unit of its last significant digit (``"281"`` ->
    0.5, ``"0.85"`` -> 0.005, ``"45k"`` -> 500). A number the source gives
    as approximate ("about 45k", ``approximate=True``) concedes its last
    digit: a value gives it when it rounds to it up or down, within one
    unit of that digit (``"45k"`` -> 1,000, ``"0.85"`` -> 0.01), and
    trailing zeros of an integer mark the rounding place (``"10,950"`` ->
    10, ``"170"`` -> 10, ``"30k"`` -> 10,000).
    """
    cleaned = text.replace(",", "").strip().lower()
    scale = 1
    if cleaned.endswith("k"):
        cleaned, scale = cleaned[:-1], 1000
    number = Decimal(cleaned)
    exponent = number.as_tuple().exponent
    if approximate and exponent == 0:
        digits = cleaned.lstrip("-")
        exponent = len(digits) - len(digits.rstrip("0"))
    unit = Decimal(10) ** exponent
    return float((unit if approximate else unit / 2) * scale)


def printed_value(text: str) -> float | None:
    """The number a printed figure states ("~10,950" -> 10950, "45k" ->
    45000), or None when the text is not a number."""
    cleaned = text.lstrip("~").replace(",", "").strip().lower()
    scale = 1
    if cleaned.endswith("k"):
        cleaned, scale = cleaned[:-1], 1000
    try:
        return float(Decimal(cleaned) * scale)
    except InvalidOperation:
        return None


# --- the data file ---------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where claims come from: ``cite`` is what a claim's ``source`` shows (a
    bibliography key, or the title of a work without one)."""

    key: str
    cite: str
    title: str
    author: str = ""
    date: str = ""
    url: str = ""
    called: str = "the source"


@dataclass(frozen=True)
class ClaimSpec:
    """A claim as the data file states it, before our value is known."""

    id: str
    section: str
    statement: str
    source: str
    kind: str
    paper_text: str
    paper_value: float
    tolerance: float
    tolerance_kind: str
    notes: tuple  # (note, note_if_reproduced, note_if_differs), templates
    side: str = ""
    source_called: str = "the source"
    check: str = ""

    def template_fields(self) -> set:
        """Every field name the note templates use."""
        return {name for template in self.notes for name in _field_names(template)}

    def claim(self, our_value: float, fields: dict | None = None) -> Claim:
        """The claim with our value, its notes filled from ``fields`` (a
        value there may be a callable, called only if a used note needs it;
        ``simulator_value``, the simulator's own value of the quantity, is
        always called, since it decides who differs)."""
        fields = fields or {}
        our_value = float(our_value)
        simulated = fields.get(SIMULATOR_FIELD)
        simulated = None if simulated is None else float(simulated() if callable(simulated) else simulated)
        if simulated is not None:
            fields = {**fields, SIMULATOR_FIELD: simulated}
        allowed = _allowed(self.paper_value, self.tolerance, self.tolerance_kind)
        reproduced = verdict(our_value, self.paper_value, allowed, simulated, self.side)[0] == "reproduced"
        note, if_reproduced, if_differs = self.notes
        parts = [note, if_reproduced if reproduced else if_differs]
        values = {}
        note = " ".join(self._fill(p, fields, values) for p in parts if p)
        return Claim(
            id=self.id,
            section=self.section,
            statement=self.statement,
            paper_value=self.paper_value,
            our_value=our_value,
            tolerance=self.tolerance,
            tolerance_kind=self.tolerance_kind,
            note=note,
            kind=self.kind,
            paper_text=self.paper_text,
            source=self.source,
            values=values,
            side=self.side,
            simulator_value=simulated,
            source_called=self.source_called,
            check=self.check or self.id,
        )

    def _fill(self, template: str, fields: dict, used: dict) -> str:
        """``template`` filled from ``fields``; the values it used are added to ``used``."""
        values = {}
        for name in _field_names(template):
            if name not in fields:
                raise ValueError(f"claim {self.id!r}: its note needs the field {name!r}, which the computation "
                                 f"does not supply (it supplies {sorted(fields)})")
            value = fields[name]
            values[name] = used[name] if name in used else value() if callable(value) else value
        used.update(values)
        return template.format(**values)


@dataclass(frozen=True)
class ClaimData:
    """The data file read and checked: ``sources`` by key, ``claims`` in
    order, ``checks``: the statement of each check that holds several claims."""

    sources: dict
    claims: tuple
    checks: dict = field(default_factory=dict)

    def by_id(self) -> dict:
        return {spec.id: spec for spec in self.claims}


def _field_names(template: str) -> list:
    names = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            names.append(name)
    return names


def _fail(where: str, message: str):
    raise ValueError(f"{where}: {message}")


def _check_keys(where, record, required, optional, what):
    if not isinstance(record, dict):
        _fail(where, f"{what} must be a JSON object; got {type(record).__name__}")
    for key in required:
        if key not in record:
            _fail(where, f"missing field {key!r}")
    unknown = sorted(set(record) - set(required) - set(optional))
    if unknown:
        _fail(where, f"unknown field {unknown[0]!r} (allowed: {', '.join(required + optional)})")


def _text(where, record, key, *, empty=False):
    value = record.get(key, "")
    if not isinstance(value, str) or (not empty and not value.strip()):
        _fail(where, f"field {key!r} must be a non-empty string; got {value!r}")
    return value


def _number(where, record, key, *, minimum=None):
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _fail(where, f"field {key!r} must be a finite number; got {value!r}")
    if minimum is not None and value < minimum:
        _fail(where, f"field {key!r} must be >= {minimum}; got {value!r}")
    return float(value)


def _template(where, record, key):
    text = _text(where, record, key)
    try:
        names = _field_names(text)
    except ValueError as error:
        _fail(where, f"field {key!r} is not a valid template ({error})")
    for name in names:
        if not name.isidentifier():
            _fail(where, f"field {key!r} names {name!r}, which is not a plain field name")
    return text


def _source(path, key, record) -> Source:
    where = f"{path}: source {key!r}"
    required, optional = _SOURCE_FIELDS
    _check_keys(where, record, required, optional, "a source")
    return Source(key=key, **{k: _text(where, record, k) for k in required},
                  **{k: _text(where, record, k) for k in optional if k in record})


def _spec(path, index, record, sources) -> ClaimSpec:
    where = f"{path}: claim #{index + 1}"
    if not isinstance(record, dict):
        _fail(where, f"a claim must be a JSON object; got {type(record).__name__}")
    if "id" in record:
        where = f"{path}: claim {_text(where, record, 'id')!r}"
    if "kind" not in record:
        _fail(where, "missing field 'kind'")
    kind = record["kind"]
    if kind not in KINDS:
        _fail(where, f"field 'kind' must be one of {KINDS}; got {kind!r}")
    required, optional = _BY_KIND[kind]
    _check_keys(where, record, _COMMON_REQUIRED + required, _COMMON_OPTIONAL + optional, "a claim")
    side = record.get("side", "")
    if side and side not in SIDES:
        _fail(where, f"field 'side' must be one of {SIDES}; got {side!r}")
    for key in ("section", "statement", "paper_text"):
        _text(where, record, key)
    source = record["source"]
    if source not in sources:
        _fail(where, f"field 'source' must be one of {sorted(sources)}; got {source!r}")
    notes = tuple(_template(where, record, key) if key in record else "" for key in _NOTES)
    paper_text = record["paper_text"]
    tolerance_kind = "absolute"
    if kind == "value":
        tolerance_kind = record.get("tolerance_kind", "absolute")
        if tolerance_kind not in TOLERANCE_KINDS:
            _fail(where, f"field 'tolerance_kind' must be one of {TOLERANCE_KINDS}; got {tolerance_kind!r}")
        stated = printed_value(paper_text)
        if "paper_value" in record:
            paper_value = _number(where, record, "paper_value")
        elif stated is None:
            _fail(where, f"missing field 'paper_value' (paper_text {paper_text!r} is not a number)")
        else:
            paper_value = stated
        if record["tolerance"] == "printed":
            if stated is None:
                _fail(where, f"field 'tolerance' is 'printed' but paper_text {paper_text!r} is not a number")
            tolerance = printed_tolerance(paper_text.lstrip("~"), approximate=paper_text.startswith("~"))
        else:
            tolerance = _number(where, record, "tolerance", minimum=0)
    elif kind == "boolean":
        paper_value, tolerance = 1.0, 0.0
    else:
        band = record["range"]
        if (not isinstance(band, list) or len(band) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in band)
                or not band[0] <= band[1]):
            _fail(where, f"field 'range' must be [low, high] with low <= high; got {band!r}")
        widen = _number(where, record, "widen", minimum=0) if "widen" in record else 0.0
        paper_value, tolerance = (band[0] + band[1]) / 2, (band[1] - band[0]) / 2 + widen
    return ClaimSpec(id=record["id"], section=record["section"], statement=record["statement"],
                     source=sources[source].cite, kind=kind, paper_text=paper_text, paper_value=float(paper_value),
                     tolerance=float(tolerance), tolerance_kind=tolerance_kind, notes=notes, side=side,
                     source_called=sources[source].called,
                     check=_text(where, record, "check") if "check" in record else "")


def parse(raw, path: str = DATA_FILE) -> ClaimData:
    """Check the data file's content (already parsed JSON) and read it."""
    _check_keys(str(path), raw, _TOP_LEVEL, _TOP_LEVEL_OPTIONAL, "the claims file")
    about = raw["about"]
    if not (isinstance(about, str) or (isinstance(about, list) and all(isinstance(line, str) for line in about))):
        _fail(str(path), "field 'about' must be a string or a list of strings")
    if not isinstance(raw["sources"], dict) or not raw["sources"]:
        _fail(str(path), "field 'sources' must be a non-empty JSON object")
    if not isinstance(raw["claims"], list) or not raw["claims"]:
        _fail(str(path), "field 'claims' must be a non-empty JSON list")
    sources = {key: _source(path, key, record) for key, record in raw["sources"].items()}
    specs = tuple(_spec(path, i, record, sources) for i, record in enumerate(raw["claims"]))
    seen = set()
    for spec in specs:
        if spec.id in seen:
            _fail(str(path), f"claim {spec.id!r} appears twice")
        seen.add(spec.id)
    return ClaimData(sources=sources, claims=specs, checks=_checks(path, raw.get("checks", {}), specs))


def _checks(path, raw, specs) -> dict:
    """The ``"checks"`` table, checked against the claims that name them."""
    if not isinstance(raw, dict):
        _fail(str(path), "field 'checks' must be a JSON object")
    checks = {}
    for key, record in raw.items():
        where = f"{path}: check {key!r}"
        _check_keys(where, record, ("statement",), (), "a check")
        checks[key] = _text(where, record, "statement")
    ids, members = {spec.id for spec in specs}, {}
    for spec in specs:
        if spec.check:
            if spec.check not in checks:
                _fail(f"{path}: claim {spec.id!r}", f"field 'check' names {spec.check!r}, which the 'checks' table "
                                                     f"does not state")
            if spec.check in ids:
                _fail(f"{path}: check {spec.check!r}", "a check must not share a claim's id")
            members.setdefault(spec.check, []).append(spec)
    for key in checks:
        held = members.get(key, [])
        where = f"{path}: check {key!r}"
        if len(held) < 2:
            _fail(where, f"a check holds two claims or more; {len(held)} name it")
        if len({(s.source, s.section) for s in held}) != 1:
            _fail(where, "its claims must share one source and one section")
    return checks


@lru_cache(maxsize=None)
def load() -> ClaimData:
    """``speclib/data/claims.json``, read and checked (once per process)."""
    text = resources.files("speclib").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return parse(json.loads(text), f"speclib/data/{DATA_FILE}")
