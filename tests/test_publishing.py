"""Publishing: the GitHub Pages workflow and the book's repository settings.

The workflow cannot run here; this reads it (PyYAML, which Jupyter Book
brings) and checks that it builds with the README's own build script and
deploys what that script writes, with the standard Pages actions and the
permissions they need.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "pages.yml"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def workflow() -> dict:
    return load(WORKFLOW)


def steps(workflow) -> list:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses(workflow, action: str) -> list:
    """The steps that use ``action`` (any version), in order."""
    return [s for s in steps(workflow) if str(s.get("uses", "")).split("@")[0] == action]


def build_output_dir() -> str:
    """Where scripts/build_book.sh writes the HTML book, read off the script."""
    script = (REPO / "scripts" / "build_book.sh").read_text(encoding="utf-8")
    # jupyter-book writes <book>/_build/html unless told otherwise.
    assert re.search(r"^jupyter-book build .* \.$", script, re.MULTILINE), "build_book.sh no longer builds the repo root"
    assert "--path-output" not in script and "--builder" not in script
    match = re.search(r"HTML: \$REPO_ROOT/(\S+)/index\.html", script)
    assert match, "build_book.sh no longer says where the HTML is"
    return match.group(1)


def test_it_runs_on_pushes_to_main_and_by_hand(workflow):
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on["push"]["branches"] == ["main"]
    assert "workflow_dispatch" in on


def test_it_builds_with_the_readme_build_script_on_python_311(workflow):
    (checkout,) = uses(workflow, "actions/checkout")
    (python,) = uses(workflow, "actions/setup-python")
    assert str(python["with"]["python-version"]) == "3.11"
    builds = [s for s in steps(workflow) if "run" in s]
    assert [s["run"].strip() for s in builds] == ["bash scripts/build_book.sh"]
    order = steps(workflow)
    assert order.index(checkout) < order.index(python) < order.index(builds[0])


def test_it_uploads_what_the_build_writes_and_deploys_it(workflow):
    (configure,) = uses(workflow, "actions/configure-pages")
    (upload,) = uses(workflow, "actions/upload-pages-artifact")
    (deploy,) = uses(workflow, "actions/deploy-pages")
    build = next(s for s in steps(workflow) if s.get("run", "").strip() == "bash scripts/build_book.sh")
    order = steps(workflow)
    assert order.index(build) < order.index(upload) and order.index(configure) < order.index(upload)
    assert upload["with"]["path"].rstrip("/") == build_output_dir() == "_build/html"
    deploy_job = next(job for job in workflow["jobs"].values() if deploy in job.get("steps", []))
    upload_job = next(name for name, job in workflow["jobs"].items() if upload in job.get("steps", []))
    assert upload_job in ([deploy_job["needs"]] if isinstance(deploy_job["needs"], str) else deploy_job["needs"])
    assert deploy_job["environment"]["name"] == "github-pages"


def test_only_the_deploy_job_may_write(workflow):
    permissions = dict(workflow.get("permissions", {}))
    assert set(permissions.values()) <= {"read", "none"}, permissions
    (deploy,) = uses(workflow, "actions/deploy-pages")
    deploy_job = next(job for job in workflow["jobs"].values() if deploy in job.get("steps", []))
    assert deploy_job["permissions"]["pages"] == "write"
    assert deploy_job["permissions"]["id-token"] == "write"
    for name, job in workflow["jobs"].items():
        if job is not deploy_job:
            assert "write" not in dict(job.get("permissions", {})).values(), name


def test_one_deployment_at_a_time(workflow):
    assert workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is False


def test_every_action_is_pinned_to_a_major_version(workflow):
    for step in steps(workflow):
        if "uses" in step:
            assert re.fullmatch(r"actions/[\w-]+@v\d+", step["uses"]), step["uses"]


def test_the_book_names_its_repository_and_turns_on_its_buttons():
    config = load(REPO / "_config.yml")
    url = config["repository"]["url"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url), url
    assert config["repository"]["branch"] == "main"
    launch = config["launch_buttons"]
    assert launch["binderhub_url"].startswith("https://") and launch["colab_url"].startswith("https://")
    assert launch["thebe"] is False  # thebe would load code from other hosts into every page
    assert config["html"]["use_repository_button"] and config["html"]["use_issues_button"]


def test_binder_installs_the_pinned_environment_and_speclib():
    requirements = (REPO / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^-r \.\./requirements\.txt$", requirements, re.MULTILINE)
    assert "python-3.11" in (REPO / "binder" / "runtime.txt").read_text(encoding="utf-8")
    post_build = REPO / "binder" / "postBuild"
    assert post_build.stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert re.search(r"pip install .*-e \.", post_build.read_text(encoding="utf-8"))
