"""The wheelhouse as one archive (plugins/module_utils/execute/wheelhouse_archive.py): packed once and
deterministically on the controller, unpacked safely on the node, with the uv binary of a fitting uv wheel."""

import hashlib
import io
import json
import os
import stat
import tarfile
import zipfile

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import wheelhouse_archive as wa

UV_X86 = "uv-0.9.5-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
UV_ARM = "uv-0.9.5-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
UV_MUSL = "uv-0.9.5-py3-none-musllinux_1_1_x86_64.whl"
UV_NEW = "uv-0.10.0-py3-none-manylinux_2_28_x86_64.whl"
UV_OLD = "uv-0.8.0-py3-none-manylinux_2_17_x86_64.whl"


def _uv_wheel(path, version="0.9.5", payload=b"#!uv binary\n"):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"uv-{version}.data/scripts/uv", payload)
        archive.writestr(f"uv-{version}.dist-info/METADATA", "Name: uv\n")


def _wheelhouse(root, uv=True):
    os.makedirs(root)
    for name, data in (("a-1.0-py3-none-any.whl", b"a" * 3000), ("b-2.0-py3-none-any.whl", b"b" * 10),
                       ("requirements.txt", b"a==1.0\nb==2.0\n")):
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(data)
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "sub", "c.txt"), "wb") as handle:
        handle.write(b"c")
    if uv:
        _uv_wheel(os.path.join(root, UV_X86))
    return root


@pytest.mark.parametrize("names,arch,glibc,expected", [
    ([UV_X86, UV_ARM, UV_MUSL], "x86_64", (2, 36), UV_X86),
    ([UV_X86, UV_ARM, UV_MUSL], "aarch64", (2, 36), UV_ARM),
    ([UV_MUSL], "x86_64", (2, 36), ""),
    ([UV_X86], "x86_64", (0, 0), ""),            # not glibc
    ([UV_X86, UV_NEW], "x86_64", (2, 36), UV_NEW),  # the newest that fits
    ([UV_X86, UV_NEW], "x86_64", (2, 17), UV_X86),  # manylinux_2_28 needs glibc 2.28
    ([UV_OLD, UV_X86], "x86_64", (2, 31), UV_X86),
    (["uvicorn-0.30.0-py3-none-any.whl", "a-1.0-py3-none-any.whl"], "x86_64", (2, 36), ""),
])
def test_uv_wheel_for(names, arch, glibc, expected):
    assert wa.uv_wheel_for(names, arch, glibc) == expected


def test_pack_is_deterministic_and_cached(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"))
    first = wa.pack(src, str(tmp_path / "cache1"))
    second = wa.pack(src, str(tmp_path / "cache2"))
    assert first["packed"] and second["packed"]
    assert first["sha256"] == second["sha256"] and first["name"] == second["name"]
    again = wa.pack(src, str(tmp_path / "cache1"))
    assert not again["packed"] and again["sha256"] == first["sha256"]
    with tarfile.open(first["archive"]) as archive:
        members = archive.getmembers()
    assert [m.name for m in members] == ["a-1.0-py3-none-any.whl", "b-2.0-py3-none-any.whl", "requirements.txt",
                                         "sub", "sub/c.txt", UV_X86]
    assert {(m.uid, m.gid, m.mtime) for m in members} == {(0, 0, 0)}
    assert first["files"] == 5


def test_a_changed_wheelhouse_gets_another_digest(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"))
    before = wa.pack(src, str(tmp_path / "cache"))
    with open(os.path.join(src, "d-1.0-py3-none-any.whl"), "wb") as handle:
        handle.write(b"d")
    after = wa.pack(src, str(tmp_path / "cache"))
    assert after["digest"] != before["digest"] and after["packed"]


def test_unpack_writes_the_tree_the_uv_binary_and_the_marker_last(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"))
    packed = wa.pack(src, str(tmp_path / "cache"))
    dest = str(tmp_path / "node" / "wheelhouse")
    assert wa.read_marker(dest) == ""
    done = wa.unpack(packed["archive"], dest, packed["digest"], packed["sha256"], "x86_64", (2, 36))
    assert done == {"files": 6, "uv_wheel": UV_X86}  # 5 files and the sub directory
    assert wa.read_marker(dest) == packed["digest"]
    with open(os.path.join(dest, "requirements.txt"), "rb") as handle:
        assert handle.read() == b"a==1.0\nb==2.0\n"
    uv = wa.node_uv(dest, search_path="")
    assert uv == os.path.join(dest, ".bin", "uv") and os.stat(uv).st_mode & 0o777 == 0o755
    # the unpacked tree lists as the controller's, so it packs to the same digest's files
    assert [entry[0] for entry in wa.listing(dest)] == [entry[0] for entry in wa.listing(src)]


def test_unpack_replaces_an_older_wheelhouse(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"), uv=False)
    dest = tmp_path / "node" / "wheelhouse"
    dest.mkdir(parents=True)
    (dest / "stale-0.1-py3-none-any.whl").write_bytes(b"old")
    packed = wa.pack(src, str(tmp_path / "cache"))
    done = wa.unpack(packed["archive"], str(dest), packed["digest"], packed["sha256"], "x86_64", (2, 36))
    assert done["uv_wheel"] == "" and not (dest / "stale-0.1-py3-none-any.whl").exists()
    assert wa.node_uv(str(dest), search_path="") == ""
    assert sorted(p.name for p in dest.parent.iterdir()) == ["wheelhouse"]


def test_a_damaged_copy_is_refused_and_leaves_the_old_wheelhouse(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"))
    packed = wa.pack(src, str(tmp_path / "cache"))
    dest = tmp_path / "node" / "wheelhouse"
    dest.mkdir(parents=True)
    (dest / "kept.whl").write_bytes(b"k")
    with pytest.raises(wa.ArchiveError, match="damaged"):
        wa.unpack(packed["archive"], str(dest), packed["digest"], "0" * 64, "x86_64", (2, 36))
    assert sorted(p.name for p in dest.parent.iterdir()) == ["wheelhouse"]
    assert (dest / "kept.whl").exists() and wa.read_marker(str(dest)) == ""


def test_an_archive_with_a_link_out_of_the_tree_is_refused(tmp_path):
    bad = tmp_path / "bad.tar"
    with tarfile.open(bad, "w") as archive:
        info = tarfile.TarInfo("evil.whl")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
        archive.addfile(info)
        archive.addfile(tarfile.TarInfo("x.whl"), io.BytesIO(b""))
    with pytest.raises(safe_extract.Refused):
        wa.unpack(str(bad), str(tmp_path / "node" / "wheelhouse"), "d", "0" * 64, "x86_64", (2, 36))
    assert not (tmp_path / "node" / "wheelhouse").exists()


def test_a_uv_wheel_without_its_binary_is_an_error(tmp_path):
    wheel = tmp_path / UV_X86
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("uv-0.9.5.dist-info/METADATA", "Name: uv\n")
    with pytest.raises(wa.ArchiveError, match="no uv binary"):
        wa.extract_uv(str(wheel), str(tmp_path / "bin"))


def test_listing_skips_the_marker_and_the_uv_folder(tmp_path):
    root = tmp_path / "wh"
    (root / ".bin").mkdir(parents=True)
    (root / ".bin" / "uv").write_bytes(b"x")
    (root / wa.MARKER).write_text("{}")
    (root / "a.whl").write_bytes(b"a")
    assert [entry[0] for entry in wa.listing(str(root))] == ["a.whl"]


def test_an_empty_or_missing_wheelhouse_is_an_error(tmp_path):
    with pytest.raises(wa.ArchiveError, match="not a directory"):
        wa.pack(str(tmp_path / "none"), str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(wa.ArchiveError, match="no files"):
        wa.pack(str(tmp_path / "empty"), str(tmp_path / "cache"))


# --- issue 37: finding 4 (uv written through a planted .bin) and the lows on the cache and the listing ----------

def _archive_of(tmp_path, members):
    path = tmp_path / "crafted.tar"
    with tarfile.open(path, "w") as archive:
        for info, data in members:
            info.size = len(data) if data is not None else 0
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def _link(name, target):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def _uv_bytes(tmp_path):
    _uv_wheel(str(tmp_path / UV_X86))
    return (tmp_path / UV_X86).read_bytes()


def test_uv_is_not_written_through_a_bin_link_to_the_interpreter_exception(tmp_path):
    """The attack: bin/python3 -> <outside> (the engine virtualenv's exception) and .bin -> bin/python3."""
    outside = tmp_path / "outside"
    outside.mkdir()
    archive, sha = _archive_of(tmp_path, [_link("bin/python3", str(outside)), _link(".bin", "bin/python3"),
                                          (tarfile.TarInfo(UV_X86), _uv_bytes(tmp_path))])
    with pytest.raises(safe_extract.Refused, match="outside the tree"):
        wa.unpack(archive, str(tmp_path / "node" / "wheelhouse"), "d", sha, "x86_64", (2, 36))
    assert list(outside.iterdir()) == [] and not (tmp_path / "node" / "wheelhouse").exists()


def test_an_archive_holding_its_own_bin_folder_is_refused(tmp_path):
    archive, sha = _archive_of(tmp_path, [(tarfile.TarInfo("sub/keep"), b""), _link(".bin", "sub"),
                                          (tarfile.TarInfo(UV_X86), _uv_bytes(tmp_path))])
    with pytest.raises(wa.ArchiveError, match="holds .bin"):
        wa.unpack(archive, str(tmp_path / "node" / "wheelhouse"), "d", sha, "x86_64", (2, 36))
    assert not (tmp_path / "node" / "wheelhouse").exists()


def test_a_cached_archive_changed_since_it_was_packed_is_packed_again(tmp_path):
    src = _wheelhouse(str(tmp_path / "wh"))
    first = wa.pack(src, str(tmp_path / "cache"))
    with open(first["archive"], "r+b") as handle:
        handle.seek(600)
        handle.write(b"tampered")
    again = wa.pack(src, str(tmp_path / "cache"))
    assert again["packed"] and again["sha256"] == first["sha256"]
    assert hashlib.sha256(open(first["archive"], "rb").read()).hexdigest() == first["sha256"]


def test_a_symlink_out_of_the_wheelhouse_is_not_packed(tmp_path):
    secret = tmp_path / "id_rsa"
    secret.write_text("PRIVATE KEY\n")
    src = _wheelhouse(str(tmp_path / "wh"), uv=False)
    os.symlink(secret, os.path.join(src, "key.whl"))
    os.symlink(os.path.join(src, "requirements.txt"), os.path.join(src, "inside.txt"))
    names = [entry[0] for entry in wa.listing(src)]
    assert "key.whl" not in names and "inside.txt" in names


def _stat(mode, uid):
    return os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))


@pytest.mark.parametrize("mode, uid, expected", [
    (stat.S_IFDIR | 0o755, 1000, None),
    (stat.S_IFDIR | 0o700, 1000, None),
    (stat.S_IFDIR | 0o555, 1000, None),
    (stat.S_IFDIR | 0o775, 1000, "writable by its group or others (mode 0775)"),
    (stat.S_IFDIR | 0o757, 1000, "writable by its group or others (mode 0757)"),
    (stat.S_IFDIR | 0o1777, 1000, "writable by its group or others (mode 1777)"),
    (stat.S_IFDIR | 0o755, 0, "owned by uid 0, not by the user that packs (uid 1000)"),
    (stat.S_IFDIR | 0o755, 1001, "owned by uid 1001, not by the user that packs (uid 1000)"),
    (stat.S_IFREG | 0o644, 1000, "is not a folder"),
])
def test_cache_dir_problem(mode, uid, expected):
    problem = wa.cache_dir_problem("/home/u/.cache/kunpeng.vllm/wheelhouse", _stat(mode, uid), 1000)
    if expected is None:
        assert problem is None
    else:
        assert expected in problem and "vllm_wheelhouse_cache_dir" in problem


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_cache_others_can_write_is_refused_before_its_archive_is_trusted(tmp_path, mode):
    """Whoever else can write the cache could replace the archive and its sidecar together (both match)."""
    src = _wheelhouse(str(tmp_path / "wh"), uv=False)
    cache = tmp_path / "cache"
    first = wa.pack(src, str(cache))
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as archive:
        info = tarfile.TarInfo("a-1.0-py3-none-any.whl")
        info.size = 4
        archive.addfile(info, io.BytesIO(b"evil"))
    with open(first["archive"], "wb") as handle:
        handle.write(evil.getvalue())
    with open(first["archive"] + ".json", "w") as handle:
        json.dump({"sha256": hashlib.sha256(evil.getvalue()).hexdigest(), "digest": first["digest"]}, handle)
    cache.chmod(mode)
    with pytest.raises(wa.ArchiveError, match=r"writable by its group or others .*chmod go-w"):
        wa.pack(src, str(cache))
    cache.chmod(0o755)  # the owner's own folder: trusted as before
    assert not wa.pack(src, str(cache))["packed"]


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_sidecar_that_is_not_a_regular_file_is_not_read(tmp_path, kind):
    src = _wheelhouse(str(tmp_path / "wh"), uv=False)
    cache = tmp_path / "cache"
    first = wa.pack(src, str(cache))
    os.unlink(first["archive"] + ".json")
    if kind == "symlink":
        other = tmp_path / "other.json"
        other.write_text(json.dumps({"sha256": first["sha256"]}))
        os.symlink(other, first["archive"] + ".json")
    else:
        os.mkfifo(first["archive"] + ".json")  # would hang an open() for reading
    again = wa.pack(src, str(cache))
    assert again["packed"] and not os.path.islink(first["archive"] + ".json")
    assert json.loads(open(first["archive"] + ".json").read())["sha256"] == first["sha256"]
