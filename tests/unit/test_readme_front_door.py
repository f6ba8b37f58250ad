"""README.md is the front door: short, its install line names the tarball the build writes, its plays are valid.

The rest of the documentation lives in docs/, one page per topic; these tests also hold every page's relative
links to files that exist and its headings free of issue numbers.
"""

import glob
import os
import re

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from conftest import ROOT

MAX_LINES = 300
ROLES_OF_THE_PLAYS = ("base", "ascend", "nvidia", "vllm")


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _galaxy():
    return yaml.safe_load(_read("galaxy.yml"))


def tarball(galaxy):
    """The file `ansible-galaxy collection build` writes: <namespace>-<name>-<version>.tar.gz."""
    return f"{galaxy['namespace']}-{galaxy['name']}-{galaxy['version']}.tar.gz"


def installed_tarballs(text):
    return re.findall(r"ansible-galaxy collection install (\S+\.tar\.gz)", text)


def headings(text):
    """Markdown headings outside fenced code blocks."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            found.append(line)
    return found


ISSUE = re.compile(r"\bissues?\s+#?\d+|\(#\d+\)", re.I)

GALAXY = {"namespace": "kunpeng", "name": "vllm", "version": "0.2.0"}


@pytest.mark.parametrize(("text", "expected"), [
    ("ansible-galaxy collection install kunpeng-vllm-0.2.0.tar.gz", ["kunpeng-vllm-0.2.0.tar.gz"]),
    ("ansible-galaxy collection install kunpeng-vllm-0.1.0.tar.gz   # old", ["kunpeng-vllm-0.1.0.tar.gz"]),
    ("ansible-galaxy collection install kunpeng.vllm", []),
])
def test_installed_tarballs_reads_the_install_line(text, expected):
    assert installed_tarballs(text) == expected
    assert tarball(GALAXY) == "kunpeng-vllm-0.2.0.tar.gz"


@pytest.mark.parametrize(("line", "has_issue"), [
    ("## Container mode (issue 27)", True),
    ("### Exposure with the defaults (issue 29)", True),
    ("# Multi-node serving", False),
    ("## 1. `site.yml` to first answer", False),
])
def test_issue_pattern(line, has_issue):
    assert bool(ISSUE.search(line)) is has_issue


def test_headings_skip_code_blocks():
    assert headings("# Title\n```bash\n# a comment\n```\n## Part\n") == ["# Title", "## Part"]


def test_readme_is_at_most_300_lines():
    lines = _read("README.md").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; move the detail to a page of docs/"


def test_readme_installs_the_tarball_the_build_writes_and_from_galaxy():
    text, galaxy = _read("README.md"), _galaxy()
    assert installed_tarballs(text) == [tarball(galaxy)]
    fqcn = re.escape(f"{galaxy['namespace']}.{galaxy['name']}")
    assert re.search(rf"^ansible-galaxy collection install {fqcn}\s", text, re.M)


def test_readme_names_exactly_the_collection_dependencies():
    """A collection the README names is one galaxy.yml depends on (community.docker is only the demo's)."""
    named = set(re.findall(r"\b(ansible\.posix|community\.[a-z_]+|kubernetes\.core)\b", _read("README.md")))
    assert named == set(_galaxy()["dependencies"])


def _pages():
    found = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    return ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in found)


@pytest.mark.parametrize("page", _pages())
def test_no_issue_numbers_in_headings(page):
    assert [h for h in headings(_read(page)) if ISSUE.search(h)] == []


@pytest.mark.parametrize("page", _pages())
def test_relative_links_reach_files(page):
    text = _read(page)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    here = os.path.dirname(os.path.join(ROOT, page))
    assert sorted(t for t in local if not os.path.exists(os.path.join(here, t))) == []


def _specs():
    specs = {}
    for role in ROLES_OF_THE_PLAYS:
        specs[role] = yaml.safe_load(_read("roles", role, "meta", "argument_specs.yml"))["argument_specs"]["main"][
            "options"]
    return specs


def readme_groups():
    """Each inventory group of the README's YAML blocks: (name, its vars)."""
    groups = []
    for block in re.findall(r"```yaml\n(.*?)```", _read("README.md"), re.S):
        for name, group in yaml.safe_load(block)["all"]["children"].items():
            groups.append((name, group["vars"]))
    return groups


def test_readme_has_one_play_per_backend():
    assert sorted(variables["vllm_backend"] for _name, variables in readme_groups()) == ["ascend", "cpu", "cuda"]


@pytest.mark.parametrize(("name", "variables"), readme_groups())
def test_readme_play_variables_pass_the_roles_argument_specs(name, variables):
    specs = _specs()
    unknown = sorted(v for v in variables if not any(v in options for options in specs.values()))
    assert unknown == [], f"{name}: no role declares {unknown}"
    for role, options in specs.items():
        given = {k: v for k, v in variables.items() if k in options}
        if role != "vllm" and not given:
            continue
        errors = [str(error) for error in ArgumentSpecValidator(options).validate(given).errors]
        assert errors == [], f"{name}, role {role}: {errors}"


def test_argument_spec_check_is_real():
    """The same check refuses a value the vllm role's spec refuses."""
    result = ArgumentSpecValidator(_specs()["vllm"]).validate({"vllm_model_name": "m", "vllm_install_method": "tarball"})
    assert result.errors
