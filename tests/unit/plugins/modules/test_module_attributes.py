"""Every module documents its attributes (check mode, diff mode) as ansible-doc
shows them after the doc fragments are merged; the probe also names its platform."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
                 if f.endswith(".py") and not f.startswith("_"))


@pytest.fixture(scope="module")
def docs(collections_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1")
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    out = subprocess.run([ansible_doc, "-t", "module", "--json"] + [f"kunpeng.vllm.{m}" for m in MODULES],
                         env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    return {name.rsplit(".", 1)[1]: entry["doc"] for name, entry in json.loads(out).items()}


@pytest.mark.parametrize("module", MODULES)
def test_check_and_diff_mode_attributes(docs, module):
    attributes = docs[module].get("attributes", {})
    assert attributes.get("check_mode", {}).get("support") in ("full", "partial")
    assert "diff_mode" in attributes


def test_accelerator_facts_names_its_platform(docs):
    platform = docs["accelerator_facts"]["attributes"]["platform"]
    assert (platform["support"], platform["platforms"]) == ("full", "posix")


def _returns_facts(module):
    with open(os.path.join(ROOT, "plugins", "modules", module + ".py"), encoding="utf-8") as handle:
        return "ansible_facts=" in handle.read()


@pytest.mark.parametrize("module", MODULES)
def test_facts_attribute_matches_what_the_module_returns(docs, module):
    """A module that returns ansible_facts says so (community.general's attributes.facts); no other does."""
    facts = docs[module].get("attributes", {}).get("facts")
    if _returns_facts(module):
        assert facts and facts["support"] == "full"
    else:
        assert facts is None


def test_the_five_planners_and_the_probe_set_facts():
    assert [m for m in MODULES if _returns_facts(m)] == [
        "accelerator_facts", "monitoring_plan", "nvidia_plan", "vllm_cluster", "vllm_container_plan", "vllm_plan"]
