"""Galaxy and ansible-doc name a filter plugin after its file: every filter
file registers exactly the filter its file is named after, documented under
that name, and ``ansible-doc -t filter`` finds it by FQCN."""

import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
FILTER_DIR = os.path.join(ROOT, "plugins", "filter")
FILTER_FILES = sorted(f[:-3] for f in os.listdir(FILTER_DIR) if f.endswith(".py") and not f.startswith("_"))


def test_there_are_filters():
    assert "vllm_engine_config" in FILTER_FILES


@pytest.mark.parametrize("stem", FILTER_FILES)
def test_file_registers_and_documents_its_own_name(stem):
    module = importlib.import_module(f"ansible_collections.kunpeng.vllm.plugins.filter.{stem}")
    assert list(module.FilterModule().filters()) == [stem]
    doc = yaml.safe_load(module.DOCUMENTATION)
    assert doc["name"] == stem
    assert yaml.safe_load(module.EXAMPLES)
    assert "_value" in yaml.safe_load(module.RETURN)


def test_ansible_doc_finds_the_filter_by_fqcn(collections_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1")
    ansible_doc = os.path.join(os.path.dirname(sys.executable), "ansible-doc")
    out = subprocess.run([ansible_doc, "-t", "filter", "--json", "kunpeng.vllm.vllm_engine_config"],
                         env=env, capture_output=True, text=True, check=True, timeout=120).stdout
    doc = json.loads(out)["kunpeng.vllm.vllm_engine_config"]
    assert doc["doc"]["name"] == "vllm_engine_config"
    assert doc["doc"]["short_description"]
    assert doc["examples"] and doc["return"]
