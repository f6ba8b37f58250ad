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
    # Named after its (changed) lock, as a sidecar must be: the archive's own lock is what differs.
    sidecar["name"] = art.artifact_name(sidecar["combination"], sidecar["lock"])
    sidecar["archive"] = sidecar["name"] + ".tar"
    archive = str(tmp_path / sidecar["archive"])
    shutil.copy(packed["archive"], archive)
    target = str(tmp_path / "0.32.0-cpu")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "does not match its lock" in result["msg"]
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_lock_mismatch_builds_and_publishes_a_new_artifact(built, packed, tmp_path):
    hosts = [{"host": "h1", "combination": built["combination"], "venv_action": "install"},
             {"host": "h2", "combination": built["combination"], "venv_action": "install"}]
    plan = {"action": "plan", "mode": "controller", "store": packed["store"], "hosts": hosts, "unpinned": True}
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


def _crafted(packed, tmp_path, drop=(), extra=(), retree=True):
    """The packed archive rewritten with tarfile: members under ``drop`` left out, ``extra`` (TarInfo, bytes) added.

    Its sidecar is the real one with the new file's sha256 and size, as a
    malicious builder would publish it: every field valid, the digest right,
    and (``retree``) the tree digest of what the archive now holds, in the
    sidecar and in the manifest inside the archive.
    """
    import hashlib
    import io
    import tarfile

    from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract
    folder = tmp_path / "crafted"
    folder.mkdir()
    archive = str(folder / packed["sidecar"]["archive"])
    lock = dict(packed["sidecar"]["lock"])

    def write(manifest_lock):
        with tarfile.open(packed["archive"]) as source, tarfile.open(archive, "w", format=tarfile.GNU_FORMAT) as out:
            for member in source:
                if any(member.name == d or member.name.startswith(d + "/") for d in drop):
                    continue
                data = source.extractfile(member).read() if member.isreg() else None
                if member.name == art.MANIFEST and manifest_lock is not None:
                    data = json.dumps(dict(json.loads(data), lock=manifest_lock)).encode()
                    member.size = len(data)
                out.addfile(member, io.BytesIO(data) if data is not None else None)
            for info, data in extra:
                info.size = len(data) if info.isreg() else 0
                out.addfile(info, io.BytesIO(data) if info.isreg() else None)

    write(None)
    if retree:
        tree = folder / "tree"
        tree.mkdir()
        try:
            with open(archive, "rb") as handle:
                safe_extract.extract_checked(handle, str(tree), interpreter_links=True)
            lock["tree"] = art.tree_digest(str(tree), skip=vllm_artifact.TREE_SKIP)
            write(lock)
        except safe_extract.Refused:
            pass  # refused by the extraction before any digest is compared
        shutil.rmtree(tree)
    with open(archive, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    return archive, dict(packed["sidecar"], lock=lock, sha256=digest, size=os.path.getsize(archive))


def _info(name, kind, mode=0o644, linkname="", uid=0):
    import tarfile
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid = kind, mode, linkname, uid
    return info


def test_a_symlinked_completion_marker_does_not_truncate_a_file_outside(packed, tmp_path):
    import tarfile
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    archive, sidecar = _crafted(packed, tmp_path,
                                extra=[(_info("./" + state.ENGINE_MARKER, tarfile.SYMTYPE, linkname=str(victim)), b"")])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert victim.read_text() == "precious\n"
    if not failed:  # refused, or the planted link replaced by the real marker
        assert not os.path.islink(os.path.join(target, state.ENGINE_MARKER))


def test_a_bin_symlink_out_of_the_tree_is_refused_and_nothing_outside_is_rewritten(packed, tmp_path):
    import tarfile
    outside = tmp_path / "outside"
    outside.mkdir()
    script = outside / "tool"
    script.write_text(f"#!{packed['sidecar']['prefix']}/bin/python\n")
    archive, sidecar = _crafted(packed, tmp_path, drop=("./bin",),
                                extra=[(_info("./bin", tarfile.SYMTYPE, linkname=str(outside)), b"")])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "outside the tree" in result["msg"], result
    assert script.read_text() == f"#!{packed['sidecar']['prefix']}/bin/python\n"
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_a_hard_link_through_the_interpreter_link_is_refused_and_the_file_outside_kept(packed, tmp_path):
    """Issue 37 finding 4: bin/python9 -> <dir>/python passes as an interpreter link; bin/activate9 hard-linked
    through it would share the inode of a host file that relocation then rewrites as root."""
    import tarfile
    interpreter = tmp_path / "outside" / "python"
    interpreter.mkdir(parents=True)
    victim = interpreter / "victim"
    victim.write_text(f"#!{packed['sidecar']['prefix']}/bin/python\n")
    archive, sidecar = _crafted(packed, tmp_path, extra=[
        (_info("./bin/python9", tarfile.SYMTYPE, linkname=str(interpreter)), b""),
        (_info("./bin/activate9", tarfile.LNKTYPE, linkname="./bin/python9/victim"), b"")])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "hard link" in result["msg"], result
    assert victim.read_text() == f"#!{packed['sidecar']['prefix']}/bin/python\n" and victim.stat().st_nlink == 1
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_a_manifest_prefix_other_than_the_sidecars_is_refused_before_relocation(packed, tmp_path):
    """The manifest's prefix is what relocation rewrites: '/' or another tree's path would rewrite more."""
    manifest = json.dumps({"format": art.FORMAT, "lock": packed["sidecar"]["lock"], "prefix": "/"}).encode()
    archive, sidecar = _crafted(packed, tmp_path, drop=(art.MANIFEST, "./" + art.MANIFEST),
                                extra=[(_info(art.MANIFEST, __import__("tarfile").REGTYPE), manifest)])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "the prefix inside the archive ('/')" in result["msg"], result
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_a_file_changed_after_the_install_is_refused_by_the_tree_digest(packed, tmp_path):
    """Issue 37 finding 9: a site-packages file changed with its RECORD left alone keeps the lock's distributions;
    the archive's sha256 is right (the store's word), but the tree its builder recorded is not what it holds."""
    import tarfile
    with tarfile.open(packed["archive"]) as source:
        module = next(m.name for m in source if m.name.endswith("tinyengine/__init__.py"))
    payload = b"import os\nos.system('id')\n"
    archive, sidecar = _crafted(packed, tmp_path, drop=(module,), extra=[(_info(module, tarfile.REGTYPE), payload)],
                                retree=False)
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "tree digest" in result["msg"], result
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_setuid_files_and_foreign_owners_lose_their_privileges(packed, tmp_path):
    import tarfile
    archive, sidecar = _crafted(packed, tmp_path, extra=[(_info("./bin/rootshell", tarfile.REGTYPE, mode=0o4755,
                                                                uid=4242), b"#!/bin/sh\nid\n")])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert not failed, result
    info = os.stat(os.path.join(target, "bin", "rootshell"))
    assert info.st_mode & 0o7777 == 0o755 and info.st_uid == os.getuid()


def test_a_device_node_in_the_archive_is_refused(packed, tmp_path):
    import tarfile
    archive, sidecar = _crafted(packed, tmp_path, extra=[(_info("./dev-mem", tarfile.CHRTYPE, mode=0o666), b"")])
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, sidecar, target)
    assert failed and "device node" in result["msg"], result
    assert not os.path.exists(target) and not os.path.exists(target + state.STAGING_SUFFIX)


def test_an_archive_swapped_after_its_digest_was_read_is_not_unpacked(packed, tmp_path, monkeypatch):
    """The check and the extraction read one open file: a swap between them cannot reach the virtualenv."""
    import tarfile
    archive = str(tmp_path / packed["sidecar"]["archive"])
    shutil.copy(packed["archive"], archive)
    evil_member = (_info("./bin/evil", tarfile.REGTYPE, mode=0o755), b"#!/bin/sh\nid\n")
    evil, _sidecar = _crafted(packed, tmp_path, extra=[evil_member])
    real_hash, real_open = art._sha256_file, open

    def swap(path):
        if path == archive and os.path.exists(evil):
            os.rename(evil, archive)  # the path names another file now; a file already open is unchanged

    def hash_then_swap(path, *args, **kwargs):  # today's order: hash the path, then tar reads the path again
        digest = real_hash(path, *args, **kwargs)
        swap(path)
        return digest

    def open_then_swap(path, *args, **kwargs):
        handle = real_open(path, *args, **kwargs)
        swap(path)
        return handle
    monkeypatch.setattr(art, "_sha256_file", hash_then_swap)
    monkeypatch.setattr("builtins.open", open_then_swap)
    target = str(tmp_path / "venv")
    failed, result = _unpack(archive, packed["sidecar"], target)
    monkeypatch.undo()
    assert not os.path.exists(os.path.join(target, "bin", "evil")), result
    assert failed or os.path.isfile(os.path.join(target, state.ENGINE_MARKER))


def test_a_sidecar_whose_archive_escapes_the_store_is_refused_before_anything_is_read(packed, tmp_path):
    sidecar = dict(packed["sidecar"], archive="../../../etc/cron.d/x.tar")
    failed, result = _unpack(packed["archive"], sidecar, str(tmp_path / "venv"))
    assert failed and "archive '../../../etc/cron.d/x.tar' is not" in result["msg"]


def test_plan_ignores_a_sidecar_with_a_path_in_its_archive_and_refuses_an_unpinned_one(built, packed, tmp_path):
    hosts = [{"host": "h1", "combination": built["combination"], "venv_action": "install"}]
    bad = dict(packed["sidecar"], archive="../../../etc/cron.d/x.tar")
    warnings = []
    failed, result = run_main(vllm_artifact.main, {"action": "plan", "mode": "url", "url": "https://m/a",
                                                   "hosts": hosts, "sidecars": [bad],
                                                   "planned": ["tinyengine==1.0"]}, warnings=warnings)
    assert not failed and result["sidecars"] == {} and result["decisions"]["h1"]["install"] == "pip", result
    assert any("cron.d" in warning for warning in warnings), warnings
    plan = {"action": "plan", "mode": "controller", "store": packed["store"], "hosts": hosts,
            "planned": ["tinyengine==1.0"]}
    failed, result = run_main(vllm_artifact.main, plan)
    assert failed and packed["sidecar"]["sha256"] in result["msg"] and "vllm_engine_artifact_sha256" in result["msg"]
    failed, result = run_main(vllm_artifact.main, dict(plan, pinned=[packed["sidecar"]["sha256"]]))
    assert not failed and result["decisions"]["h1"]["install"] == "unpack"


@pytest.mark.parametrize("url, allow_http, refused", [("http://m/a", False, True), ("http://m/a", True, False),
                                                      ("https://m/a", False, False)])
def test_plan_refuses_a_plain_http_url_without_the_opt_out(url, allow_http, refused):
    failed, result = run_main(vllm_artifact.main, {"action": "plan", "mode": "url", "url": url,
                                                   "allow_http": allow_http, "hosts": []})
    assert failed == refused, result


def test_index_refuses_a_combination_that_climbs_out_of_the_store(packed, tmp_path):
    failed, result = run_main(vllm_artifact.main, {"action": "index", "store": packed["store"],
                                                   "combination": "../../../tmp/x"})
    assert failed and "not an artifact combination" in result["msg"]
