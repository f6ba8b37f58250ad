"""playbooks/diagnose.yml, as run by side_effect.yml on the demo host broken four ways.

Each break's run left its rc and output in $MOLECULE_EPHEMERAL_DIRECTORY/diagnose-<break>.{rc,out}
and its controller report in diagnose-<break>/kv-default-amd64-smollm2.json.
"""

import json
import os
import re

import pytest

REPORT = "kv-default-amd64-smollm2.json"

# break -> (first finding, the variable its fix names)
BREAKS = {
    "key": ("api_key_mismatch", "vllm_api_key"),
    "model": ("model_dir_incomplete", "vllm_model_src"),
    "port": ("port_in_use", "vllm_port"),
    "kv": ("kv_cache_too_small", "vllm_engine_args.max_model_len"),
}


def _run(name):
    base = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], f"diagnose-{name}")
    if not os.path.exists(base + ".rc"):
        pytest.fail(f"{base}.rc is missing: the side_effect step did not run")
    with open(base + ".rc") as f:
        rc = int(f.read().strip())
    with open(base + ".out") as f:
        out = f.read()
    with open(os.path.join(base, REPORT)) as f:
        return rc, out, json.load(f)


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_names_the_cause_and_its_fix_and_changes_nothing(name):
    rc, out, report = _run(name)
    first, variable = BREAKS[name]
    assert rc == 0, out[-3000:]
    assert re.search(r"kv-default-amd64\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out[-2000:]
    assert report["serving"] is False
    head = report["findings"][0]
    assert (head["id"], head["variable"]) == (first, variable), report["findings"]
    assert variable in head["fix"] and head["evidence"]
    # The play output says it, most likely cause first.
    assert f"NOT serving; 1. [{first}]" in " ".join(out.split())


def test_no_key_in_report_or_output():
    for name in BREAKS:
        rc, out, report = _run(name)
        for secret in ("demo-key-change-me", "rotated-key-not-deployed"):
            assert secret not in out and secret not in json.dumps(report), (name, secret)


def test_port_names_the_other_process():
    _rc, _out, report = _run("port")
    assert "python3" in report["findings"][0]["cause"]
    assert any(item["port"] == 8000 and item["process"] == "python3" for item in report["report"]["listeners"])


def test_model_names_the_missing_files():
    _rc, _out, report = _run("model")
    missing = report["report"]["model_dir"]["missing"]
    assert "config.json" in missing and any(name.endswith(".safetensors") for name in missing), missing


def test_kv_gives_the_engines_figure():
    """vLLM states the largest length that fits; the fix is that figure on a 16-token block."""
    _rc, _out, report = _run("kv")
    head = report["findings"][0]
    estimate = int(re.search(r"estimated maximum model length is (\d+)", head["evidence"]).group(1))
    assert head["value"] == estimate // 16 * 16 and head["value"] < 32768
