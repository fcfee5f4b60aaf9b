"""The book as one argument, checked on its stored chapters:

* parts in the reader's order: no chapter links to a later one (the
  introduction, a map of the book, and a few named pointers excepted);
* one number, one source: a number our code computes reaches the prose
  through myst-nb's glue, so the prose never types a number a glued value
  supplies, and no two glued names hold the same quantity;
* the prose speaks of its subject, never of how the book was made;
* every method, model and benchmark it names is cited where it is named;
* every table of draft lengths or speed-ups says which step model priced it.

Numbers quoted from a source stay typed: a sentence that cites
({cite}`...`) is taken to quote it.
"""
from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


@lru_cache(maxsize=1)
def toc() -> tuple:
    """The chapters' names (without book/ and the suffix) in reading order."""
    data = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    names = [data["root"]]
    for part in data.get("parts", ()):
        names += [c["file"] for c in part["chapters"]]
    return tuple(n.split("/")[-1] for n in names)


def chapters() -> tuple:
    return tuple(n for n in toc() if (BOOK / f"{n}.ipynb").exists())


@lru_cache(maxsize=None)
def notebook(name: str) -> dict:
    return json.loads((BOOK / f"{name}.ipynb").read_text(encoding="utf-8"))


def markdown(name: str) -> str:
    return "\n\n".join("".join(c["source"]) for c in notebook(name)["cells"] if c["cell_type"] == "markdown")


def glued(name: str) -> dict:
    """{glue name: its text/plain value} of a chapter, as stored."""
    out = {}
    for cell in notebook(name)["cells"]:
        for o in cell.get("outputs", ()):
            meta = o.get("metadata", {}).get("scrapbook")
            if meta:
                out[meta["name"]] = o["data"].get(meta["mime_prefix"] + "text/plain")
    return out


_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")
_CITED = re.compile(r"\{cite(?::\w+)?\}`")
_CODE = re.compile(r"\{[\w:-]+\}`[^`]*`|``[^`]*``|`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_LINK = re.compile(r"\]\([^)]*\)|https?://\S+|<[^>]+>")
_NUMBER = re.compile(r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w.]*\d)")


def sentences(text: str) -> list:
    """The prose split into sentences (headings and list items end one)."""
    parts = re.split(r"(?<=[.!?:;])\s+(?=[A-Z*(])|\n\s*\n|\n(?=\s*[-#*]|\s*\d+\.\s)", text)
    return [p for p in parts if p.strip()]


def typed_numbers(text: str) -> list:
    """Numbers typed in the prose (not glued, not in code, maths or links),
    from sentences that cite nothing, as they are written."""
    out = []
    for s in sentences(text):
        if _CITED.search(s):
            continue
        plain = _LINK.sub(" ", _MATH.sub(" ", _CODE.sub(" ", s)))
        out += [m.group(0) for m in _NUMBER.finditer(plain)]
    return out


def _normal(number: str) -> str:
    return number.replace(",", "").replace("\u2009", "")


def significant(number: str) -> int:
    """Significant digits of a number as written (trailing zeros of an integer not counted)."""
    text = _normal(number)
    digits = text.replace(".", "").lstrip("0")
    return len(digits if "." in text else digits.rstrip("0"))


def setting(number: str) -> bool:
    """A number that is a setting rather than a result: a power of two from 64
    (a context or a batch), a round number (one significant digit) or a year."""
    text = _normal(number)
    if "." not in text:
        value = int(text)
        if value >= 64 and value & (value - 1) == 0:
            return True
        if re.fullmatch(r"(19|20)\d\d", text):
            return True
    return significant(number) <= 1


def distinctive(number: str, digits: int = 3) -> bool:
    """A number that can only mean one quantity: ``digits`` or more
    significant digits, and not a setting (see :func:`setting`)."""
    return not setting(number) and significant(number) >= digits


def _value(text):
    from ast import literal_eval

    try:
        value = literal_eval(text)
    except (SyntaxError, ValueError, TypeError):
        return text
    return value


def displayed() -> dict:
    """{the text a glued number is shown as: (chapter, name)}, every format
    the book pastes it with."""
    from myst_nb.core.variables import format_plain_text

    values = {(n, k): v for n in chapters() for k, v in glued(n).items()}
    out = {}
    for n in chapters():
        for ref in _ROLE.findall(markdown(n)):
            key, fmt = (ref.rsplit(":", 1) + ["s"])[:2] if ":" in ref.split("::")[-1] else (ref, "s")
            doc, name = key.split("::", 1) if "::" in key else (n, key)
            doc = doc.split("/")[-1].removesuffix(".ipynb")
            if (doc, name) in values and values[doc, name] is not None:
                try:
                    out[_normal(format_plain_text(values[doc, name], fmt))] = (doc, name)
                except (TypeError, ValueError):
                    continue
    return out


# --- the reader's order ------------------------------------------------------------------------

#: Forward links a chapter may make: the introduction maps the whole book; the
#: paper's conclusion points once to what real engines change. The appendix's
#: derivations and the bibliography are reference: any chapter may send a
#: reader to them.
POINTERS = {("conclusion", "trusting_the_step")}
REFERENCE = ("appendix_", "bibliography")


@pytest.mark.parametrize("name", chapters())
def test_no_chapter_links_to_a_later_one(name):
    order = {n: i for i, n in enumerate(toc())}
    if name == toc()[0]:
        return
    later = sorted({ref for ref in re.findall(r"\{doc\}`(?:[^<`]*<)?([\w/.-]+?)>?`", markdown(name))
                    if order.get(ref.split("/")[-1], -1) > order[name] and not ref.split("/")[-1].startswith(REFERENCE)
                    and (name, ref.split("/")[-1]) not in POINTERS})
    assert later == [], f"{name} links to later chapters {later}"


# --- one number, one source ----------------------------------------------------------------------

@pytest.mark.parametrize("name", chapters())
def test_the_prose_types_no_number_a_glued_value_supplies(name):
    """A typed number is a glued value's if the chapter glues it (three
    significant digits or more), or if another chapter does (four or more:
    fewer digits meet by chance)."""
    shown = displayed()
    typed = sorted({n for n in typed_numbers(markdown(name)) if _normal(n) in shown
                    and distinctive(n, 3 if shown[_normal(n)][0] == name else 4)})
    assert typed == [], (f"{name} types {typed}, which glued values supply: "
                         + ", ".join(f"{t} = {shown[_normal(t)]}" for t in typed))


@pytest.mark.parametrize("name", chapters())
def test_every_number_the_prose_states_is_glued_or_quoted(name):
    """A number of three significant digits or more in the prose is pasted
    from the cell that computes it, or quoted from a source the sentence
    cites; settings (a context length, a round number, a year) are typed."""
    typed = sorted({n for n in typed_numbers(markdown(name)) if distinctive(n)}, key=_normal)
    assert typed == [], f"{name} types {len(typed)} numbers that are neither glued nor quoted: {typed}"


def test_no_two_glued_names_hold_the_same_quantity():
    seen, twice = {}, []
    for n in chapters():
        for name, text in glued(n).items():
            value = _value(text)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                key = ("text", value) if isinstance(value, str) and distinctive_text(value) else None
            else:
                key = ("number", round(float(value), 9)) if distinctive(f"{float(value):.9g}", 4) else None
            if key is None:
                continue
            if key in seen and seen[key] != (n, name):
                twice.append((seen[key], (n, name), value))
            seen.setdefault(key, (n, name))
    assert twice == [], "the same quantity glued under two names (paste one with {glue:text}`chapter.ipynb::name`): " \
        + "; ".join(f"{a} and {b} = {v!r}" for a, b, v in twice)


def distinctive_text(value: str) -> bool:
    """A glued string that holds a number (e.g. '6,127' or '1.02x')."""
    m = _NUMBER.search(value)
    return bool(m) and distinctive(m.group(0), 4)


# --- words about the subject only ----------------------------------------------------------------

#: What the prose never says: how the book was made, and the repository's paths.
MAKING = [
    r"\bthis issue\b", r"\bthe issue\b", r"\bengines issue\b", r"\bissue set\b", r"\bsessions?\b",
    r"\bshipped before\b", r"\bfit shipped\b", r"\bprevious fit\b", r"\bearlier fit\b",
    r"\bbenchmarks/", r"\btests/", r"\bscripts/", r"\bspeclib/[\w/.-]+", r"\bdata/[\w/.-]+\.\w+",
    r"\b[\w-]+\.(?:py|json|csv|yaml|yml|ipynb)\b",
    # the book's own history: what it says now against what it said before
    r"\bas promised\b", r"\bits old level\b", r"\badded since\b", r"\bfitted again\b",
]


@pytest.mark.parametrize("name", chapters())
def test_the_prose_speaks_of_its_subject_not_of_how_it_was_made(name):
    found = []
    for s in sentences(markdown(name)):
        # a role's target, and a glue directive's and the chapter it pastes from (a pasted table:
        # {glue} name with :doc: chapter.ipynb)
        plain = _MATH.sub(" ", re.sub(r"\{(?:glue|cite|doc)(?::\w+)?\}(?:`[^`]*`|\s+\S+)|:doc:\s+\S+", " ", s))
        for pattern in MAKING:
            for m in re.finditer(pattern, plain, flags=re.I):
                found.append(m.group(0))
    assert found == [], f"{name}: {sorted(set(found))}"


# --- no scaffolding on a page ---------------------------------------------------------------------

#: A cell's machinery, which a page must not show: changing directory, scratch files, gluing a
#: number into the prose, and a check that the prose still says what the numbers do.
SCAFFOLDING = {"os.chdir": r"\bos\.chdir\(", "shutil": r"\bshutil\b", "tempfile": r"\btempfile\b",
               "glue(": r"\bglue\(", "assert": r"^\s*assert\b"}


def rendered_cells(name: str) -> list:
    """(cell index, the text of a code cell a page shows) of a chapter, as jupyter-book 1.x renders
    it from the stored notebook (the HTML is not built when the tests run, so the cell tags are
    applied here as the build applies them): a ``remove-cell`` cell is not on the page,
    ``remove-input`` drops its source and ``remove-output`` its outputs; ``hide-input`` only folds
    the source, which is still on the page. The text is the source and the text outputs."""
    out = []
    for i, cell in enumerate(notebook(name)["cells"]):
        if cell["cell_type"] != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", ()))
        if "remove-cell" in tags:
            continue
        parts = [] if "remove-input" in tags else ["".join(cell["source"])]
        if "remove-output" not in tags:
            for o in cell.get("outputs", ()):
                text = o.get("text") or o.get("data", {}).get("text/plain") or ""
                parts.append("".join(text))
        out.append((i, "\n".join(parts)))
    return out


@pytest.mark.parametrize("name", chapters())
def test_no_page_shows_a_cells_scaffolding(name):
    found = sorted({(i, what) for i, text in rendered_cells(name) for what, pattern in SCAFFOLDING.items()
                    if re.search(pattern, text, flags=re.M)})
    assert found == [], f"{name} shows (cell, scaffolding) {found}: hide the cell (remove-cell) or its source " \
        "(remove-input), or move the line into a hidden cell"


def test_the_scaffolding_check_sees_what_a_page_shows(monkeypatch):
    cells = [{"cell_type": "code", "metadata": {}, "source": ["import shutil\n", "x = 1"], "outputs": []},
             {"cell_type": "code", "metadata": {"tags": ["remove-input"]}, "source": ["glue('a', 1)"],
              "outputs": [{"output_type": "stream", "text": ["os.chdir('/tmp')\n"]}]},
             {"cell_type": "code", "metadata": {"tags": ["remove-cell"]}, "source": ["assert x"], "outputs": []},
             {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": ["assert x == 1"], "outputs": []}]
    monkeypatch.setattr(__import__(__name__), "notebook", lambda name: {"cells": cells})
    shown = dict(rendered_cells("any"))
    assert set(shown) == {0, 1, 3} and "glue(" not in shown[1] and "os.chdir" in shown[1]
    with pytest.raises(AssertionError, match="shutil"):
        test_no_page_shows_a_cells_scaffolding("any")


# --- citations -----------------------------------------------------------------------------------

#: Methods, models, benchmarks and datasets the book names, and the entry each is cited by.
NAMED = {
    "DFlash": "dflash2026",
    "EAGLE 3.1": "vllm2026eagle31",
    "SSD": "kumar2026ssd",
    "Qwen3.6-35B-A3B": "qwen2026qwen36",
    "DeepSeek-V4-Flash": "deepseekv4",
    "Gated DeltaNet": "yang2025gateddeltanet",
    "EAGLE-3": "li2025eagle3",
    "EAGLE-2": "li2024eagle2",
    "MoESD": "huang2025moesd",
    "EAGLE": "li2024eagle",
    "P-EAGLE": "vllm2026peagle",
    "SPEED-Bench": "speedbench2026",
    "GatedDeltaNet": "yang2025gateddeltanet",
    "Qwen3.6": "qwen2026qwen36",
    "DSpark": "deepseek2026dspark",
    "Kimi-K3": "kimi2026k3",
    "InferenceMAX": "inferencemax",
    "MagicDec": "sadhukhan2024magicdec",
    "SmartSpec": "liu2024smartspec",
    "Medusa": "cai2024medusa",
    "SpecInfer": "miao2024specinfer",
    "Sequoia": "chen2024sequoia",
    "SpecDec++": "huang2025specdecpp",
    "Sarathi-Serve": "agrawal2024sarathiserve",
    "FlashMLA": "flashmla2025",
    "FlashAttention-3": "shah2024flashattention3",
}


def _bib_keys() -> set:
    return set(re.findall(r"@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(encoding="utf-8")))


def test_every_named_method_has_a_bibliography_entry():
    missing = sorted(key for key in NAMED.values() if key not in _bib_keys())
    assert missing == []


@pytest.mark.parametrize("name", chapters())
def test_a_chapter_cites_what_it_names(name):
    text = markdown(name)
    prose = _LINK.sub(" ", _MATH.sub(" ", _CODE.sub(" ", text)))
    cited = {k.strip() for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text) for k in group.split(",")}
    uncited = sorted(n for n, key in NAMED.items()
                     if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", prose) and key not in cited)
    assert uncited == [], f"{name} names {uncited} without citing them"


# --- which step model priced it ------------------------------------------------------------------

STEP_MODELS = ("roofline", "calibrated", "ledger", "measured", "simulat", "fitted", "step time")


@pytest.mark.parametrize("name", chapters())
def test_every_table_of_draft_lengths_or_speedups_names_its_step_model(name):
    unlabelled = []
    for cell in notebook(name)["cells"]:
        for o in cell.get("outputs", ()):
            page = o.get("data", {}).get("text/html")
            if not page:
                continue
            page = "".join(page)
            for table in re.findall(r"<table.*?</table>", page, flags=re.S):
                head = " ".join(re.findall(r"<th[^>]*>(.*?)</th>", table, flags=re.S)).lower()
                caption = " ".join(re.findall(r"<caption>(.*?)</caption>", table, flags=re.S)).lower()
                if re.search(r"γ|gamma|speed-?up|draft length", head) and not any(m in caption for m in STEP_MODELS):
                    unlabelled.append(caption[:80] or head[:80])
    assert unlabelled == [], f"{name}: tables without their step model: {unlabelled}"


# --- no word twice -------------------------------------------------------------------------------
#
# The HTML of the built book does not exist when the tests run (CI runs them before the build:
# .ci/run), so a chapter is read as it renders: its markdown with each role replaced by the text
# the page shows ({doc} by the chapter's title, {glue} by the glued value, {cite:t} by the author
# and year, {cite:p} by a bracket), code and maths left out, and the text its cells print (plain
# text, and the text of HTML tables). That is where "the {doc}`pricing_rule` chapter" shows its
# doubled word: the page reads "the The pricing rule chapter".

#: A word, then the same word after a space or a line break; a word inside a name or a path
#: ("TensorRT-LLM LLM API", "--model-config config.json") is not a word of the prose.
_DOUBLED = re.compile(r"(?<![-./])\b([A-Za-z]+)(?:[ \t]+|[ \t]*\n[ \t]*)\1\b(?![-./]\w)", re.I)
#: Pairs a sentence may repeat on purpose ("speculative speculative decoding" is a method's name).
DOUBLED_ALLOWED = {"that that", "had had", "speculative speculative"}


@lru_cache(maxsize=None)
def title(name: str) -> str:
    """A chapter's title as the book shows it (its first heading, markup dropped)."""
    if (BOOK / f"{name}.ipynb").exists():
        text = markdown(name)
    else:
        text = (BOOK / f"{name}.md").read_text(encoding="utf-8")
    heading = re.search(r"^#\s+(.+)$", text, flags=re.M).group(1)
    return re.sub(r"[*_`]", "", heading).strip()


@lru_cache(maxsize=1)
def _authors() -> dict:
    """{bibliography key: (first author's last name, year)}, as the author-year citations print them."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(ROOT / "references.bib")).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = " ".join(people[0].last_names).strip("{}") if people else key
        out[key] = (last, entry.fields.get("year", ""))
    return out


def _glued_text(name: str, ref: str) -> str:
    from myst_nb.core.variables import format_plain_text

    key, fmt = (ref.rsplit(":", 1) + ["s"])[:2] if ":" in ref.split("::")[-1] else (ref, "s")
    doc, key = key.split("::", 1) if "::" in key else (name, key)
    value = glued(doc.split("/")[-1].removesuffix(".ipynb")).get(key)
    if value is None:
        return "0"
    try:
        return str(format_plain_text(value, fmt))
    except (TypeError, ValueError):
        return str(value)


def _cite(kind: str, keys: str) -> str:
    keys = [k.strip() for k in keys.split(",")]
    if kind == "t":
        return "; ".join(f"{_authors().get(k, (k, ''))[0]} [{_authors().get(k, ('', ''))[1]}]" for k in keys)
    return "[" + "; ".join(", ".join(_authors().get(k, (k, ""))) for k in keys) + "]"


def rendered_markdown(name: str, text: str | None = None) -> str:
    """A chapter's markdown as its page reads: roles replaced by what they show, code and maths left out."""
    text = markdown(name) if text is None else text

    def role(m):
        kind, body = m.group(1), m.group(2)
        shown = re.fullmatch(r"(.*?)\s*<([^>]+)>", body, flags=re.S)
        if kind in ("doc", "ref", "numref"):
            if shown:
                return shown.group(1)
            return title(body.split("/")[-1].removesuffix(".ipynb")) if kind == "doc" else body
        if kind.startswith("glue"):
            return _glued_text(name, body)
        if kind.startswith("cite"):
            return _cite("t" if kind == "cite:t" else "p", body)
        return " "

    text = re.sub(r"```.*?```", " · ", text, flags=re.S)
    text = re.sub(r"\{([\w:-]+)\}`([^`]*)`", role, text)
    text = re.sub(r"``[^`]*``|`[^`]*`", " · ", text)  # a code span or a formula stands between its neighbours
    return _MATH.sub(" · ", text)


def printed(name: str) -> str:
    """The text a chapter's cells print: stream and plain-text outputs, and HTML tables' text."""
    out = []
    for cell in notebook(name)["cells"]:
        for o in cell.get("outputs", ()):
            if o.get("metadata", {}).get("scrapbook"):
                continue
            data = o.get("data", {})
            if "text/html" in data:  # a table's cells, a list's items: one apart from the next
                page = re.sub(r"</?(?:td|th|tr|li|p|br|caption|div|table|thead|tbody)\b[^>]*>", " | ",
                              "".join(data["text/html"]))
                out.append(html.unescape(re.sub(r"<[^>]+>", "", page)))
            elif "text/plain" in data:
                out.append("".join(data["text/plain"]))
            elif o.get("output_type") == "stream":
                out.append("".join(o.get("text", "")))
    # two spaces or more part the columns of a printed table; a displayed formula is maths, not words
    text = re.sub(r"\\\[.*?\\\]", " · ", "\n\n".join(out), flags=re.S)
    return re.sub(r"[ \t]{2,}", " | ", _MATH.sub(" · ", text))


def doubled_words(text: str) -> list:
    """Words printed twice in a row, across a line break too ("the The", "a a"), case-insensitive."""
    return sorted({m.group(0).replace("\n", " ") for m in _DOUBLED.finditer(text)
                   if " ".join(m.group(0).lower().split()) not in DOUBLED_ALLOWED})


def test_the_doubled_word_check_can_fail():
    assert doubled_words("as the The pricing rule chapter shows") == ["the The"]
    assert doubled_words("a\na drafter") == ["a\na".replace("\n", " ")]
    assert doubled_words("the theory, a b a") == []
    assert doubled_words("TensorRT-LLM LLM API; --model-config config.json; survival curve curve.json") == []
    assert title("pricing_rule") == "The pricing rule"
    assert "the The pricing rule chapter" in rendered_markdown("x", "the {doc}`pricing_rule` chapter")


@pytest.mark.parametrize("name", chapters())
def test_no_word_is_printed_twice_in_a_row(name):
    found = doubled_words(rendered_markdown(name)) + doubled_words(printed(name))
    assert found == [], f"{name}: {found}"
