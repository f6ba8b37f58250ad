"""kunpeng.vllm.vllm_unarchive on model archives crafted here with tarfile (issue 37, finding 5).

Each hostile archive is what a compromised model server could publish with a
matching checksum: the module must refuse it, leave nothing of it behind and
touch nothing outside the directory it unpacks to.
"""

import hashlib
import io
import os
import shutil
import stat
import subprocess
import tarfile

import pytest

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_unarchive

from module_runner import run_main


def _info(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid = kind, mode, linkname, 4242
    info.devmajor, info.devminor = (8, 0) if kind in (tarfile.BLKTYPE, tarfile.CHRTYPE) else (0, 0)
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, io.BytesIO(data) if kind == tarfile.REGTYPE else None


def _model():
    """A small checkpoint as a Hugging Face snapshot holds it (a link into its blobs)."""
    return [_info("config.json", data=b'{"model_type": "llama"}\n'),
            _info("model.safetensors", data=b"\0" * 2048, mode=0o666),
            _info("tokenizer.json", tarfile.SYMTYPE, linkname="blobs/tok"),
            _info("blobs/tok", data=b"{}\n")]


def _archive(tmp_path, members, suffix=".tar.gz"):
    path = tmp_path / ("model" + suffix)
    mode = {".tar.gz": "w:gz", ".tar": "w", ".tar.xz": "w:xz"}.get(suffix, "w")
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, data)
    if suffix == ".tar.zst":
        raw = path.read_bytes()
        path.write_bytes(subprocess.run([shutil.which("zstd"), "-q", "-c"], input=raw, capture_output=True,
                                        check=True).stdout)
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def _unarchive(src, dest, sha256, check_mode=False):
    return run_main(vllm_unarchive.main, {"src": src, "dest": str(dest), "sha256": sha256}, check_mode=check_mode)


@pytest.mark.parametrize("suffix", [".tar.gz", ".tar", ".tar.xz", ".tar.zst"])
def test_a_model_archive_becomes_the_staging_tree_owned_by_root_without_write_bits(tmp_path, suffix):
    if suffix == ".tar.zst" and shutil.which("zstd") is None:
        pytest.skip("no zstd on this machine")
    src, sha = _archive(tmp_path, _model(), suffix)
    dest = tmp_path / "models" / "m.partial"
    dest.mkdir(parents=True)
    (dest / "left-over").write_text("from an interrupted run\n")
    failed, result = _unarchive(src, dest, sha)
    assert not failed and result["changed"] and result["members"] == 4, result
    assert (dest / "config.json").read_text() == '{"model_type": "llama"}\n'
    assert (dest / "tokenizer.json").read_text() == "{}\n" and not (dest / "left-over").exists()
    info = os.stat(dest / "model.safetensors")
    assert info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o644
    assert sorted(os.listdir(dest.parent)) == ["m.partial"]


@pytest.mark.parametrize("member, refused", [
    (_info("dev-sda", tarfile.BLKTYPE, mode=0o666), "device node"),
    (_info("dev-mem", tarfile.CHRTYPE, mode=0o666), "device node"),
    (_info("escape", tarfile.SYMTYPE, linkname="../../../etc"), "outside the tree"),
    (_info("abs", tarfile.SYMTYPE, linkname="/etc/shadow"), "outside the tree"),
    (_info("/etc/cron.d/model", data=b"* * * * * root id\n"), "absolute path"),
    (_info("../../cron.d/model", data=b"x"), "climbs out"),
    (_info("shadow", tarfile.LNKTYPE, linkname="/etc/shadow"), "absolute path"),
])
def test_a_hostile_member_is_refused_and_nothing_is_left(tmp_path, member, refused):
    src, sha = _archive(tmp_path, _model()[:2] + [member])
    dest = tmp_path / "models" / "m.partial"
    dest.mkdir(parents=True)
    failed, result = _unarchive(src, dest, sha)
    assert failed and refused in result["msg"] and "Nothing was unpacked" in result["msg"], result
    assert sorted(os.listdir(dest.parent)) == ["m.partial"] and os.listdir(dest) == []


def test_a_member_written_through_a_planted_symlink_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    src, sha = _archive(tmp_path, [_info("d", tarfile.SYMTYPE, linkname="."), _info("d/x", data=b"owned\n")])
    failed, result = _unarchive(src, tmp_path / "m.partial", sha)
    assert failed and "below the symlink" in result["msg"]
    assert list(outside.iterdir()) == []


def test_an_archive_that_is_not_the_checked_one_is_not_unpacked(tmp_path):
    src, _sha = _archive(tmp_path, _model())
    failed, result = _unarchive(src, tmp_path / "m.partial", "0" * 64)
    assert failed and "changed after it was checked" in result["msg"]
    assert not (tmp_path / "m.partial").exists() and not [name for name in os.listdir(tmp_path) if "unpack" in name]


def test_a_parent_another_account_can_write_is_refused_before_anything_is_written(tmp_path):
    """Review finding M2: in a directory the service account could write, it renamed root's staging directory
    away and put its own there; the unpack now refuses such a parent, naming it."""
    src, sha = _archive(tmp_path, _model())
    models = tmp_path / "models"
    models.mkdir()
    models.chmod(0o1777)
    failed, result = _unarchive(src, models / "m.partial", sha)
    assert failed and "another account can rewrite" in result["msg"] and str(models) in result["msg"], result
    assert os.listdir(models) == []


def test_a_zip_is_refused_and_check_mode_writes_nothing(tmp_path):
    zipped = tmp_path / "model.zip"
    zipped.write_bytes(b"PK\x03\x04")
    failed, result = _unarchive(str(zipped), tmp_path / "m.partial", "0" * 64)
    assert failed and "is not a tar archive" in result["msg"]
    src, sha = _archive(tmp_path, _model())
    failed, result = _unarchive(src, tmp_path / "m.partial", sha, check_mode=True)
    assert not failed and result["changed"] and not (tmp_path / "m.partial").exists()


def test_an_archive_past_its_budget_is_refused_naming_the_option_and_leaves_nothing(tmp_path):
    """Issue 37: a member of zeros that gzip shrinks a thousandfold; the module's max_bytes stops it."""
    src, sha = _archive(tmp_path, [_info("config.json", data=b"{}\n"), _info("zeros", data=bytes(4 << 20))])
    dest = tmp_path / "models" / "m.partial"
    dest.parent.mkdir()
    failed, result = run_main(vllm_unarchive.main, {"src": src, "dest": str(dest), "sha256": sha,
                                                    "max_bytes": 1 << 20})
    assert failed and "expands past 1048576 bytes" in result["msg"] and "vllm_unpack_max_bytes" in result["msg"]
    assert os.listdir(dest.parent) == []
    failed, result = run_main(vllm_unarchive.main, {"src": src, "dest": str(dest), "sha256": sha, "max_members": 1})
    assert failed and "more than 1 members" in result["msg"] and "vllm_unpack_max_members" in result["msg"]
    failed, result = run_main(vllm_unarchive.main, {"src": src, "dest": str(dest), "sha256": sha})
    assert not failed and result["members"] == 2
