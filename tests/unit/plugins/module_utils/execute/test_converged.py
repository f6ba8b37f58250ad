"""The converged-state comparison: records read from real files, one row per kind of drift."""

import json
import os
import stat

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import converged as cv
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state, model_state
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http

MODELS_JSON = os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", "..", "fixtures", "vllm", "models.json")


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def _dist(site, name, version, record="a,,\n"):
    folder = os.path.join(site, f"{name}-{version}.dist-info")
    _write(os.path.join(folder, "METADATA"), f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if record is not None:
        _write(os.path.join(folder, "RECORD"), record)
    return folder


@pytest.fixture
def host(tmp_path):
    """A virtualenv layout with two distributions, a model directory with the role's own files, a config."""
    root = str(tmp_path)
    site = os.path.join(root, "venv", "lib", "python3.12", "site-packages")
    _dist(site, "vllm", "0.32.0", "vllm/__init__.py,sha256=x,1\n")
    _dist(site, "torch", "2.9.0", "torch/__init__.py,sha256=y,1\n")
    model = os.path.join(root, "model")
    for rel in ("config.json", "model-00001.safetensors", install_state.MODEL_MARKER, model_state.MANIFEST):
        _write(os.path.join(model, rel), rel)
    config = os.path.join(root, "etc", "smollm2.yaml")
    _write(config, "port: 8000\n")
    return {"root": root, "site": site, "venv": os.path.join(root, "venv"), "model": model, "config": config,
            "absent": os.path.join(root, "etc", "drop-in.conf")}


def _record(h, fingerprint="f1"):
    return cv.build_record(fingerprint, [h["config"], h["absent"]], h["venv"], h["model"], "vllm-a.service")


def _rm_tree(path):
    for here, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.remove(os.path.join(here, name))
        for name in dirs:
            os.rmdir(os.path.join(here, name))
    os.rmdir(path)


def test_record_of_a_host(host):
    record = _record(host)
    assert record["format"] == cv.FORMAT and record["fingerprint"] == "f1"
    assert record["files"][host["absent"]] is None and len(record["files"][host["config"]]) == 64
    assert sorted(record["venv"]["distributions"]) == ["torch", "vllm"]
    # The role's completion marker and copy manifest are not part of the model.
    assert sorted(record["model"]["files"]) == ["config.json", "model-00001.safetensors"]
    assert cv.drift(record, _record(host)) == []
    assert cv.dumps(record) == cv.dumps(json.loads(cv.dumps(record))), "canonical: equal records are equal bytes"


# (what is done to the host, the inputs of the second read, the drift expected)
CASES = [
    ("nothing", lambda h: None, {}, []),
    ("fingerprint", lambda h: None, {"fingerprint": "f2"}, ["fingerprint changed"]),
    ("config edited", lambda h: _write(h["config"], "port: 8001\n"), {}, ["{config} edited"]),
    ("config removed", lambda h: os.remove(h["config"]), {}, ["{config} missing"]),
    ("drop-in appeared", lambda h: _write(h["absent"], "[Service]\n"), {}, ["{absent} appeared"]),
    ("version", lambda h: (_rm_tree(os.path.join(h["site"], "torch-2.9.0.dist-info")),
                           _dist(h["site"], "torch", "2.9.1", "torch/__init__.py,sha256=y,1\n")),
     {}, ["package torch 2.9.0 -> 2.9.1"]),
    ("RECORD", lambda h: _write(os.path.join(h["site"], "vllm-0.32.0.dist-info", "RECORD"), "other,,\n"), {},
     ["package vllm 0.32.0 changed (its RECORD differs)"]),
    ("added", lambda h: _dist(h["site"], "Ray", "2.49.0"), {}, ["package ray 2.49.0 added"]),
    ("removed", lambda h: _rm_tree(os.path.join(h["site"], "torch-2.9.0.dist-info")), {},
     ["package torch 2.9.0 removed"]),
    ("venv gone", lambda h: _rm_tree(h["venv"]), {}, ["engine virtualenv {venv} missing"]),
    ("model file removed", lambda h: os.remove(os.path.join(h["model"], "config.json")), {},
     ["model file config.json missing"]),
    ("model file added", lambda h: _write(os.path.join(h["model"], "extra", "a.bin"), "x"), {},
     ["model file extra/a.bin added"]),
    ("model file resized", lambda h: _write(os.path.join(h["model"], "config.json"), "{}" * 9), {},
     ["model file config.json changed"]),
    ("model marker rewritten", lambda h: _write(os.path.join(h["model"], install_state.MODEL_MARKER), "again"), {},
     []),
    ("model gone", lambda h: _rm_tree(h["model"]), {}, ["model directory {model} missing"]),
    ("other venv", lambda h: None, {"venv": "/opt/other"}, ["engine virtualenv changed: {venv} -> /opt/other"]),
    ("other model", lambda h: None, {"model_dir": ""}, ["model directory changed: {model} -> none"]),
    ("other unit", lambda h: None, {"service": ""}, ["unit changed: vllm-a.service -> none"]),
    # The plan's numbers are kept for vllm_diagnose, not compared: the fingerprint covers the plan.
    ("plan numbers", lambda h: None, {"plan": {"max_model_len_limit": 2048}}, []),
    ("file no longer listed", lambda h: None, {"files": []},
     ["{absent} is in the record but no longer checked", "{config} is in the record but no longer checked"]),
]


@pytest.mark.parametrize("case, change, inputs, expected", CASES, ids=[row[0] for row in CASES])
def test_drift(host, case, change, inputs, expected):
    recorded = _record(host)
    change(host)
    now = dict(fingerprint="f1", files=[host["config"], host["absent"]], venv=host["venv"], model_dir=host["model"],
               service="vllm-a.service")
    now.update(inputs)
    got = cv.drift(json.loads(cv.dumps(recorded)), cv.build_record(**now))
    assert got == [sentence.format(**host) for sentence in expected], case


def test_many_differences_are_counted():
    recorded = {f"p{n:02d}": {"version": "1", "sha256": "a", "hashed": "RECORD"} for n in range(15)}
    got = cv.package_drift(recorded, {})
    assert got[:2] == ["package p00 1 removed", "package p01 1 removed"]
    assert len(got) == cv.LIMIT + 1 and got[-1] == "and 5 more package differences"


@pytest.mark.parametrize("out, rc, expected", [
    # `systemctl is-active` stdout and exit status, as systemd prints them.
    ("active\n", 0, None),
    ("inactive\n", 3, "unit u.service stopped (inactive)"),
    ("failed\n", 3, "unit u.service stopped (failed)"),
    ("activating\n", 3, "unit u.service is activating, not active"),
    ("deactivating\n", 3, "unit u.service is deactivating, not active"),
    ("", 1, "unit u.service is unknown (systemctl is-active exited 1), not active"),
])
def test_unit_drift(out, rc, expected):
    assert cv.unit_drift("u.service", rc, out, "") == expected


def test_unit_drift_reads_stderr_when_stdout_is_empty():
    got = cv.unit_drift("u.service", 1, "", "System has not been booted with systemd as init system (PID 1).\n")
    assert got == "unit u.service is System has not been booted with systemd as init system (PID 1)., not active"


with open(MODELS_JSON) as _handle:
    MODELS = _handle.read()


@pytest.mark.parametrize("result, expected", [
    (vllm_http.HttpResult(200, MODELS), None),
    (vllm_http.HttpResult(200, '{"object": "list", "data": []}'),
     "endpoint does not answer: model 'smollm2' is not served at http://h:1; served: none"),
    (vllm_http.HttpResult(401, '{"error": "Unauthorized"}'), "endpoint does not answer: http://h:1 refused the API key"),
    (vllm_http.HttpResult(503, ""), "endpoint does not answer: GET http://h:1/v1/models failed: HTTP 503"),
    (vllm_http.HttpResult(error="cannot connect: [Errno 111] Connection refused"),
     "endpoint does not answer: GET http://h:1/v1/models failed: cannot connect: [Errno 111] Connection refused"),
])
def test_endpoint_drift(result, expected):
    got = cv.endpoint_drift(result, "smollm2", "http://h:1")
    assert (got is None) if expected is None else got.startswith(expected), got


@pytest.mark.parametrize("content, problem", [
    (None, "no record"),
    ("", "no record ({path} is not JSON"),
    ("[]", "no record ({path} is not a format 1 record)"),
    ('{"format": 2}', "no record ({path} is not a format 1 record)"),
])
def test_read_record_problems(tmp_path, content, problem):
    path = str(tmp_path / "r.json")
    if content is not None:
        _write(path, content)
    record, text, got = cv.read_record(path)
    assert record is None and text == content and got.startswith(problem.format(path=path))


def test_write_private_replaces_atomically_root_only(tmp_path):
    path = str(tmp_path / "new" / "r.json")
    cv.write_private(path, "one\n")
    _write(os.path.join(os.path.dirname(path), f".r.json.{os.getpid()}.tmp"), "stale")
    cv.write_private(path, "two\n")
    assert open(path).read() == "two\n"
    assert os.listdir(os.path.dirname(path)) == ["r.json"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert cv.needs_write(path, "two\n", "two\n") is False
    assert cv.needs_write(path, "two\n", "three\n") is True
    os.chmod(path, 0o640)
    assert cv.needs_write(path, "two\n", "two\n") is True
