"""kunpeng.vllm.vllm_artifact pack and index into a store others can write (shared mode): an entry planted at any
name pack or index writes (or used to write) is replaced or refused, and nothing outside the store is written."""

import hashlib
import json
import os
import stat

import pytest

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_artifact

from module_runner import run_main
from venv_builder import make_venv, tiny_wheel

from conftest import VICTIM_TEXT as SECRET
# Every name in the store that pack or index writes now, or wrote before the
# store's files were created new (the fixed .partial and exit-status files).
NAMES = {
    "archive": "{name}.tar",
    "archive partial": "{name}.tar.partial",
    "tar status": "{name}.tar.partial.rc-tar",
    "tee status": "{name}.tar.partial.rc-tee",
    "sidecar": "{name}.json",
    "sidecar partial": "{name}.json.partial",
    "staging": ".{name}.staging",
    "index": "{combination}.json",
    "index partial": "{combination}.json.partial",
}


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    wheels = root / "wheels"
    wheels.mkdir()
    built = make_venv(str(root / "opt" / "vllm" / "0.32.0-cpu"), [tiny_wheel(str(wheels))])
    failed, result = run_main(vllm_artifact.main, {"action": "identity", "python": os.path.join(built, "bin", "python"),
                                                   "backend": "cpu", "engine_version": "0.32.0", "arch": "x86_64"})
    assert not failed, result
    # The artifact's name, learnt from a pack into a store of its own.
    failed, first = _pack(built, result["identity"], root / "first")
    assert not failed, first
    return {"venv": built, "identity": result["identity"], "name": first["sidecar"]["name"],
            "combination": first["combination"]}


def _pack(venv, identity, store):
    return run_main(vllm_artifact.main, {"action": "pack", "venv": venv, "identity": identity, "dest": str(store),
                                         "compression": "none"})


def _plant(kind, at, victim):
    if kind == "symlink":
        os.symlink(victim, at)
    elif kind == "hard link":
        os.link(victim, at)
    else:
        at.write_bytes(b"left by someone else")


def _publish(venv, store):
    failed, packed = _pack(venv["venv"], venv["identity"], store)
    assert not failed, packed
    failed, indexed = run_main(vllm_artifact.main, {"action": "index", "store": str(store),
                                                    "combination": venv["combination"]})
    assert not failed, indexed
    return packed


@pytest.mark.parametrize("kind", ["symlink", "hard link", "file"])
@pytest.mark.parametrize("what", sorted(NAMES))
def test_an_entry_planted_in_the_store_is_not_written_through(what, kind, venv, victim, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    store.chmod(0o777)  # a shared store every node's users can write
    planted = store / NAMES[what].format(**venv)
    _plant(kind, planted, victim)
    packed = _publish(venv, store)
    # Nothing outside the store changed: not the file's bytes, not its mode.
    assert victim.read_bytes() == SECRET and stat.S_IMODE(os.stat(victim).st_mode) == 0o600
    assert sorted(os.listdir(victim.parent)) == ["passwd"]
    # What pack and index wrote are new regular files: the archive is the one its sidecar names.
    archive, sidecar, index = (store / NAMES[key].format(**venv) for key in ("archive", "sidecar", "index"))
    for path in (archive, sidecar, index):
        info = os.lstat(path)
        assert stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and stat.S_IMODE(info.st_mode) == 0o644
    assert hashlib.sha256(archive.read_bytes()).hexdigest() == packed["sidecar"]["sha256"]
    assert json.loads(sidecar.read_text()) == packed["sidecar"]
    assert [a["name"] for a in json.loads(index.read_text())["artifacts"]] == [venv["name"]]
    # No partial of this run is left; a planted name that is no longer used is left alone.
    left = set(os.listdir(store)) - {archive.name, sidecar.name, index.name}
    assert left == ({planted.name} if what not in ("archive", "sidecar", "index") else set())


@pytest.mark.parametrize("what", ["archive", "sidecar", "index"])
def test_a_directory_at_a_name_pack_writes_is_refused_clearly(what, venv, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / NAMES[what].format(**venv)).mkdir()
    failed, result = _pack(venv["venv"], venv["identity"], store)
    if what != "index":
        assert failed and "is a directory" in result["msg"] and "remove it" in result["msg"], result
    else:
        assert not failed, result
        failed, result = run_main(vllm_artifact.main, {"action": "index", "store": str(store),
                                                       "combination": venv["combination"]})
        assert failed and "is a directory" in result["msg"], result
    assert not [entry for entry in os.listdir(store) if entry.endswith(".partial")]


def test_a_symlinked_archive_beside_a_valid_sidecar_is_packed_again(venv, victim, tmp_path):
    """The cache check reads only regular files: a symlinked archive is replaced, not reported as published."""
    store = tmp_path / "store"
    _publish(venv, store)
    archive = store / NAMES["archive"].format(**venv)
    archive.unlink()
    os.symlink(victim, archive)
    failed, result = _pack(venv["venv"], venv["identity"], store)
    assert not failed and result["changed"], result
    assert not os.path.islink(archive) and victim.read_bytes() == SECRET
