"""kunpeng.vllm.vllm_artifact on real virtualenvs: pack, publish, unpack elsewhere, refuse what is wrong."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact as art
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state as state
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_artifact

from module_runner import run_main
from venv_builder import make_venv, tiny_wheel

MARKER = {"engine_version": "0.32.0", "backend": "cpu", "install_method": "wheel"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One virtualenv built 'with pip' on the first host, its identity, and a wheel of a newer version."""
    root = tmp_path_factory.mktemp("artifact")
    wheels = root / "wheels"
    wheels.mkdir()
    old = tiny_wheel(str(wheels), version="1.0")
    new = tiny_wheel(str(wheels / ".."), version="2.0")
    venv = make_venv(str(root / "host1" / "opt" / "vllm" / "0.32.0-cpu"), [old])
    failed, result = run_main(vllm_artifact.main, {"action": "identity", "python": sys.executable, "backend": "cpu",
                                                   "engine_version": "0.32.0", "arch": "x86_64"})
    assert not failed, result
    return {"root": root, "venv": venv, "identity": result["identity"], "combination": result["combination"],
            "new_wheel": new}


@pytest.fixture(scope="module")
def packed(built):
    store = built["root"] / "controller"
    failed, result = run_main(vllm_artifact.main, {"action": "pack", "venv": built["venv"],
                                                   "identity": built["identity"], "dest": str(store),
                                                   "compression": "none"})
    assert not failed, result
    return dict(result, store=str(store))


def _unpack(archive, sidecar, venv):
    return run_main(vllm_artifact.main, {"action": "unpack", "archive": archive, "sidecar": sidecar, "venv": venv,
                                         "marker": MARKER})


def test_pack_names_the_artifact_after_its_combination_and_lock(built, packed):
    sidecar = packed["sidecar"]
    assert sidecar["name"] == f"{built['combination']}-{art.lock_digest(sidecar['lock'])[:12]}"
    assert sidecar["lock"]["distributions"]["tinyengine"]["version"] == "1.0"
    assert sidecar["lock"]["distributions"]["tinyengine"]["hashed"] == "RECORD"
    assert sidecar["lock"]["distributions"]["vllm"] == {
        "version": "0.32.0+cpu", "hashed": "METADATA", "sha256": sidecar["lock"]["distributions"]["vllm"]["sha256"]}
    assert os.path.isfile(os.path.join(packed["store"], sidecar["name"] + ".json"))


def test_packed_archive_is_readable_by_the_connecting_user(packed):
    """The controller fetches it without privilege escalation (artifact_publish.yml)."""
    assert os.stat(packed["archive"]).st_mode & 0o777 == 0o644
    assert os.stat(os.path.dirname(packed["archive"])).st_mode & 0o777 == 0o755


def test_relocated_venv_runs_its_python_scripts_and_alias(built, packed, tmp_path):
    target = str(tmp_path / "srv" / "other-prefix" / "0.32.0-cpu")
    failed, result = _unpack(packed["archive"], packed["sidecar"], target)
    assert not failed, result
    assert {"pyvenv.cfg", "bin/activate", "bin/tinyengine-hello"} <= set(result["relocated"])
    assert not os.path.exists(target + state.STAGING_SUFFIX)
    assert json.load(open(os.path.join(target, state.ENGINE_MARKER))) == MARKER
    assert not os.path.exists(os.path.join(target, art.MANIFEST))
    # The source virtualenv is gone: nothing may still point at it.
    shutil.move(built["venv"], built["venv"] + ".away")
    try:
        script = subprocess.run([os.path.join(target, "bin", "tinyengine-hello")], capture_output=True, text=True,
                                check=True, timeout=60)
        assert script.stdout.strip() == "tinyengine 1.0"
        probe = subprocess.run(
            [os.path.join(target, "bin", "python"), "-c",
             "import sys, importlib.metadata as m; print(sys.prefix); print(m.version('vllm'))"],
            capture_output=True, text=True, check=True, timeout=60)
        assert probe.stdout.split("\n")[:2] == [target, "0.32.0+cpu"]
        activate = subprocess.run(["bash", "-c", f"source '{target}/bin/activate' && echo $VIRTUAL_ENV"],
                                  capture_output=True, text=True, check=True, timeout=60)
        assert activate.stdout.strip() == target
    finally:
        shutil.move(built["venv"] + ".away", built["venv"])


def test_unpack_again_is_unchanged(packed, tmp_path):
    target = str(tmp_path / "0.32.0-cpu")
    assert _unpack(packed["archive"], packed["sidecar"], target)[1]["changed"]
    failed, result = _unpack(packed["archive"], packed["sidecar"], target)
    assert (failed, result["changed"]) == (False, False)


def test_corrupted_artifact_is_refused_and_nothing_unpacked(packed, tmp_path):
    broken = str(tmp_path / os.path.basename(packed["archive"]))
    shutil.copy(packed["archive"], broken)
    with open(broken, "r+b") as handle:
        handle.seek(4096)
        handle.write(b"\xff" * 16)
    target = str(tmp_path / "0.32.0-cpu")
    failed, result = _unpack(broken, packed["sidecar"], target)
    assert failed
    assert broken in result["msg"] and "corrupted" in result["msg"]
    assert "Delete" in result["msg"] and packed["sidecar"]["name"] + ".json" in result["msg"]
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_archive_whose_lock_differs_from_its_sidecar_is_refused(packed, tmp_path):
    sidecar = json.loads(json.dumps(packed["sidecar"]))
    sidecar["lock"]["distributions"]["tinyengine"]["version"] = "9.9"
    target = str(tmp_path / "0.32.0-cpu")
    failed, result = _unpack(packed["archive"], sidecar, target)
    assert failed and "does not match its lock" in result["msg"]
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_lock_mismatch_builds_and_publishes_a_new_artifact(built, packed, tmp_path):
    hosts = [{"host": "h1", "combination": built["combination"], "venv_action": "install"},
             {"host": "h2", "combination": built["combination"], "venv_action": "install"}]
    plan = {"action": "plan", "mode": "controller", "store": packed["store"], "hosts": hosts}
    _failed, same = run_main(vllm_artifact.main, dict(plan, planned=["tinyengine==1.0"]))
    assert {h: d["install"] for h, d in same["decisions"].items()} == {"h1": "unpack", "h2": "unpack"}
    _failed, changed = run_main(vllm_artifact.main, dict(plan, planned=["tinyengine==2.0"]))
    assert changed["decisions"]["h1"]["install"] == "pip" and changed["decisions"]["h1"]["publish"]
    assert changed["decisions"]["h2"] == dict(changed["decisions"]["h2"], install="unpack", builder="h1")
    assert "tinyengine==2.0 is planned, the lock has 1.0" in changed["decisions"]["h1"]["reason"]
    # h1 builds with pip (a newer tinyengine) and packs: a new name beside the old artifact, which stays as it was.
    venv = make_venv(str(tmp_path / "0.32.0-cpu"), [built["new_wheel"]])
    old_sha = packed["sidecar"]["sha256"]
    failed, result = run_main(vllm_artifact.main, {"action": "pack", "venv": venv, "identity": built["identity"],
                                                   "dest": packed["store"], "compression": "none"})
    assert not failed, result
    assert result["sidecar"]["name"] != packed["sidecar"]["name"]
    assert result["sidecar"]["combination"] == packed["sidecar"]["combination"]
    assert art._sha256_file(packed["archive"]) == old_sha
    _failed, again = run_main(vllm_artifact.main, dict(plan, planned=["tinyengine==2.0"]))
    assert again["decisions"]["h2"]["artifact"] == result["sidecar"]["name"]
    failed, index = run_main(vllm_artifact.main, {"action": "index", "store": packed["store"],
                                                  "combination": built["combination"]})
    names = {s["name"] for s in json.load(open(index["path"]))["artifacts"]}
    assert names == {packed["sidecar"]["name"], result["sidecar"]["name"]}


def test_pack_in_check_mode_writes_nothing(built, tmp_path):
    dest = tmp_path / "store"
    failed, result = run_main(vllm_artifact.main, {"action": "pack", "venv": built["venv"],
                                                   "identity": built["identity"], "dest": str(dest)},
                              check_mode=True)
    assert (failed, result["changed"]) == (False, True)
    assert not dest.exists()


def test_diff_of_pack_index_and_unpack(built, packed, tmp_path):
    dest = tmp_path / "store"
    failed, result = run_main(vllm_artifact.main, {"action": "pack", "venv": built["venv"], "identity": built["identity"],
                                                   "dest": str(dest), "compression": "none"}, diff=True)
    name = result["sidecar"]["name"]
    assert not failed and result["diff"] == {
        "before": {"path": result["archive"], "state": "absent"},
        "after": {"path": result["archive"], "state": "file", "artifact": name,
                  "sidecar": os.path.join(str(dest), name + ".json")}}
    failed, result = run_main(vllm_artifact.main, {"action": "index", "store": str(dest),
                                                   "combination": built["combination"]}, diff=True)
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"])["artifacts"][0]["name"] == name
    failed, again = run_main(vllm_artifact.main, {"action": "index", "store": str(dest),
                                                  "combination": built["combination"]}, diff=True)
    assert not again["changed"] and "diff" not in again
    venv = str(tmp_path / "srv" / "0.32.0-cpu")
    os.makedirs(venv)  # an earlier, interrupted unpack
    failed, result = run_main(vllm_artifact.main, {"action": "unpack", "archive": packed["archive"],
                                                   "sidecar": packed["sidecar"], "venv": venv, "marker": MARKER},
                              diff=True)
    assert not failed and result["diff"] == {
        "before": {"path": venv, "state": "directory without the install-completion marker"},
        "after": {"path": venv, "state": "directory", "artifact": packed["sidecar"]["name"], "marker": MARKER}}
    failed, result = run_main(vllm_artifact.main, {"action": "unpack", "archive": packed["archive"],
                                                   "sidecar": packed["sidecar"], "venv": venv, "marker": MARKER},
                              diff=True)
    assert not result["changed"] and "diff" not in result
