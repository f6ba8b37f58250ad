"""The Molecule layout CI relies on: `molecule test` with no -s finds the
``default`` scenario, which runs the collection's main path
(playbooks/site.yml); every scenario the Makefile runs exists under its own
name, and its amd64 container is named kv-<scenario>-amd64, as
scripts/run-tests.sh passes to --platform-name."""

import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _makefile_list(name):
    with open(os.path.join(ROOT, "Makefile")) as f:
        match = re.search(rf"^{name} \?=(.*)$", f.read(), re.M)
    return match.group(1).split()


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return yaml.safe_load(f)


def test_default_scenario_runs_site_yml():
    scenario = _yaml("molecule", "default", "molecule.yml")["scenario"]
    assert scenario["name"] == "default"
    converge = _yaml("molecule", "default", "converge.yml")
    assert [p.get("ansible.builtin.import_playbook") for p in converge] == ["../../playbooks/site.yml"]
    assert "default" in _makefile_list("SCENARIOS")


@pytest.mark.parametrize("scenario", _makefile_list("SCENARIOS"))
def test_scenario_exists_under_its_name(scenario):
    config = _yaml("molecule", scenario, "molecule.yml")
    assert config["scenario"]["name"] == scenario
    platforms = config.get("platforms") or _yaml(".config", "molecule", "config.yml")["platforms"]
    names = [p["name"].replace("${MOLECULE_SCENARIO_NAME}", scenario) for p in platforms]
    assert f"kv-{scenario}-amd64" in names or scenario in _makefile_list("MULTI_HOST_SCENARIOS")
    assert all(n.startswith(f"kv-{scenario}-") for n in names), names


def test_run_tests_uses_the_platform_name_convention():
    with open(os.path.join(ROOT, "scripts", "run-tests.sh")) as f:
        assert '--platform-name "kv-$s-amd64"' in f.read()
