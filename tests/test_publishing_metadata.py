"""How the package is released and cited: the release workflow is valid
YAML with a build-and-check job on every push and a trusted-publishing job
on version tags only; CITATION.cff is valid Citation File Format 1.2 (the
schema shipped in tests/data, see its README) and cites the original post;
the changelog covers the version; the README and the book say how to cite."""
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

import speclib

REPO = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((REPO / "tests" / "data" / "cff-1.2.0.schema.json").read_text())
POST_URL = "https://fergusfinn.com/blog/economics-of-speculative-decoding/"


def cff():
    # YAML dates become datetime.date; the schema wants strings (its own note says to cast them)
    return json.loads(json.dumps(yaml.safe_load((REPO / "CITATION.cff").read_text()), default=str))


def test_the_release_workflow_builds_checks_and_publishes_only_tags():
    flow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    on = flow.get("on", flow.get(True))  # PyYAML reads a bare `on:` key as True
    assert on["push"]["tags"] == ["v*"] and on["push"]["branches"] == ["**"]
    build, publish = flow["jobs"]["build"], flow["jobs"]["publish"]
    steps = " ".join(str(s.get("run", "")) + str(s.get("uses", "")) for s in build["steps"])
    assert "python -m build" in steps and "twine check --strict" in steps
    assert publish["needs"] == "build" and publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["permissions"] == {"id-token": "write"}
    uses = [s.get("uses", "") for s in publish["steps"]]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses)
    code = "\n".join(line.split("#")[0] for line in (REPO / ".github" / "workflows" / "release.yml").read_text()
                     .splitlines())
    assert "password" not in code and "secrets." not in code  # no stored token


def test_citation_cff_is_valid_and_cites_the_post():
    data = cff()
    jsonschema.validate(data, SCHEMA)
    assert data["version"] == speclib.__version__
    post = data["references"][0]
    assert post["url"] == POST_URL and post["authors"][0]["family-names"] == "Finn"


def test_the_schema_check_can_fail():
    broken = cff()
    del broken["title"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)
    bad_date = {**cff(), "date-released": "25 November 2026"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad_date, SCHEMA)


def test_the_changelog_has_this_version():
    assert re.search(rf"^## {re.escape(speclib.__version__)}$", (REPO / "CHANGELOG.md").read_text(), flags=re.M)


def test_the_readme_and_the_book_say_how_to_cite_both():
    readme = (REPO / "README.md").read_text()
    intro = (REPO / "book" / "introduction.ipynb").read_text()
    for text in (readme, intro):
        assert "CITATION.cff" in text and POST_URL in text
