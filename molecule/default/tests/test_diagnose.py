"""playbooks/diagnose.yml, as run by diagnose_breaks.yml on the demo host broken four ways.

Each run left its output (diagnose-<break>.out: rc=N, argv=[...], then the output) and its report
(diagnose-<break>/<host>-smollm2.json) in $MOLECULE_EPHEMERAL_DIRECTORY:
  port:  another process holds port 8000 and the instance's run failed on it;
  model: the model directory emptied and the run failed (diagnose in check mode);
  kv:    max-model-len 32768 past the 1 GiB KV cache, refused by vLLM at start;
  key:   the key file rewritten behind the running service.
"""

import glob
import json
import os
import re

import pytest

from conftest import API_KEY

BREAKS = ("port", "model", "kv", "key")


def _run(name):
    """(rc, output, report) of one diagnose.yml run."""
    base = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], f"diagnose-{name}")
    if not os.path.exists(base + ".out"):
        pytest.fail(f"{base}.out is missing: the side_effect step did not run")
    with open(base + ".out") as f:
        out = f.read()
    rc = int(out.split("\n", 1)[0].removeprefix("rc="))
    reports = glob.glob(os.path.join(base, "*-smollm2.json"))
    assert len(reports) == 1, (reports, out[-3000:])
    with open(reports[0]) as f:
        return rc, out, json.load(f)


def _first(report):
    assert report["findings"], report
    return report["findings"][0]


@pytest.mark.parametrize("name", BREAKS)
def test_diagnose_succeeds_and_changes_nothing(name):
    rc, out, report = _run(name)
    assert rc == 0, out[-3000:]
    recap = re.search(r"^kv-default-amd64\s*:.*$", out, re.MULTILINE)
    assert recap, out[-3000:]
    assert "changed=0" in recap.group(0) and "failed=0" in recap.group(0), recap.group(0)
    assert report["serving"] is False
    # The play prints the most likely cause first.
    assert f"NOT serving; 1. [{_first(report)['id']}]" in out, out[-3000:]


@pytest.mark.parametrize("name", BREAKS)
def test_no_key_in_output_or_report(name):
    _rc, out, report = _run(name)
    text = out + json.dumps(report)
    assert API_KEY not in text
    assert "demo-key-rotated-on-the-host" not in text


@pytest.mark.parametrize("name, check", [(name, name == "model") for name in BREAKS])
def test_check_mode_where_asked(name, check):
    _rc, out, _report = _run(name)
    argv = json.loads(out.split("\n", 2)[1].removeprefix("argv="))
    assert ("--check" in argv) is check, argv


def test_port_taken_by_another_process():
    _rc, _out, report = _run("port")
    first = _first(report)
    assert first["id"] == "port_in_use" and first["variable"] == "vllm_port"
    assert "python3" in first["cause"]
    assert any(item["port"] == 8000 and item["process"] == "python3" for item in report["report"]["listeners"])


def test_model_directory_emptied():
    _rc, _out, report = _run("model")
    first = _first(report)
    assert first["id"] == "model_dir_incomplete" and first["variable"] == "vllm_model_src"
    missing = report["report"]["model_dir"]["missing"]
    assert "config.json" in missing and any(name.endswith(".safetensors") for name in missing), missing
    # The first run's port clash is over: only this run's failure is read.
    assert "port_in_use" not in [f["id"] for f in report["findings"]]


def test_kv_cache_too_small_names_the_engines_length():
    _rc, _out, report = _run("kv")
    first = _first(report)
    assert first["id"] == "kv_cache_too_small", report["findings"]
    assert first["variable"] == "vllm_engine_args.max_model_len"
    assert isinstance(first["value"], int) and 2048 < first["value"] < 32768 and first["value"] % 16 == 0, first
    assert "32768" in first["evidence"]
    assert "port_in_use" not in [f["id"] for f in report["findings"]]
    assert report["report"]["context"]["config"]["max-model-len"] == 32768


def test_key_changed_behind_the_service():
    _rc, _out, report = _run("key")
    first = _first(report)
    assert first["id"] == "api_key_mismatch" and first["variable"] == "vllm_api_key", report["findings"]
    api = report["report"]["api"]
    assert api["health"]["status"] == 200 and api["models"]["status"] == 401
