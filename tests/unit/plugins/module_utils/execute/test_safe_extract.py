"""plugins/module_utils/execute/safe_extract.py on archives crafted here with tarfile, one per attack of issue 29.

Each archive is what a malicious builder or store could publish: the
extraction must refuse it (or write it defanged) and never touch a file
outside the tree.
"""

import hashlib
import io
import os
import shutil
import stat
import tarfile

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract as extract


def _member(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, linkname="", uid=0, mtime=1700000000):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid, info.gid, info.mtime = kind, mode, linkname, uid, uid, mtime
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, io.BytesIO(data) if kind == tarfile.REGTYPE else None


def craft(*members):
    """The bytes of a tar holding ``members`` (``_member`` tuples), in order."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, data)
    return buffer.getvalue()


def _extract(data, dest, interpreter_links=True):
    """Extract as the engine artifact's unpack does (``interpreter_links``), or as any other tree."""
    dest.mkdir(exist_ok=True)
    return extract.extract_checked(io.BytesIO(data), str(dest), interpreter_links=interpreter_links)


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "victim").write_text("untouched\n")
    return folder


def test_a_plain_virtualenv_tree_is_written_with_its_modes_and_times(tmp_path):
    data = craft(_member("./bin", tarfile.DIRTYPE, mode=0o755),
                 _member("./bin/tool", data=b"#!/opt/vllm/bin/python\n", mode=0o755),
                 _member("./bin/python", tarfile.SYMTYPE, linkname="/usr/bin/python3.11"),
                 _member("./bin/python3", tarfile.SYMTYPE, linkname="python"),
                 _member("./lib64", tarfile.SYMTYPE, linkname="lib"),
                 _member("./lib/python3.11/site-packages/a.py", data=b"x = 1\n"),
                 _member("./lib/python3.11/site-packages/b.py", tarfile.LNKTYPE,
                         linkname="./lib/python3.11/site-packages/a.py"))
    digest, count = _extract(data, tmp_path / "venv")
    venv = tmp_path / "venv"
    assert digest == hashlib.sha256(data).hexdigest() and count == 7
    assert os.stat(venv / "bin" / "tool").st_mode & 0o7777 == 0o755
    assert int(os.stat(venv / "bin" / "tool").st_mtime) == 1700000000  # .pyc files stay valid
    assert os.readlink(venv / "bin" / "python") == "/usr/bin/python3.11"
    assert (venv / "lib" / "python3.11" / "site-packages" / "b.py").read_bytes() == b"x = 1\n"


@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o1777, 0o6777])
def test_setuid_setgid_and_sticky_bits_are_dropped(tmp_path, mode):
    _extract(craft(_member("bin/su", data=b"\x7fELF", mode=mode), _member("d", tarfile.DIRTYPE, mode=mode)),
             tmp_path / "venv")
    for name in ("bin/su", "d"):
        got = os.stat(tmp_path / "venv" / name).st_mode
        assert not got & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX), (name, oct(got))
        assert got & 0o777 == mode & 0o755  # nor a write bit for group or other


def test_a_foreign_owner_is_not_kept(tmp_path):
    _extract(craft(_member("bin/tool", data=b"x", uid=4242)), tmp_path / "venv")
    assert os.stat(tmp_path / "venv" / "bin" / "tool").st_uid == os.getuid()


@pytest.mark.parametrize("member, refused", [
    (_member("dev/sda", tarfile.BLKTYPE, mode=0o666), "device node"),
    (_member("dev/mem", tarfile.CHRTYPE, mode=0o666), "device node"),
    (_member("pipe", tarfile.FIFOTYPE), "fifo"),
    (_member("/etc/cron.d/x", data=b"* * * * * root id\n"), "absolute path"),
    (_member("../../etc/cron.d/x", data=b"x"), "climbs out"),
    (_member("bin/../../x", data=b"x"), "climbs out"),
    (_member("bin", tarfile.SYMTYPE, linkname="/outside"), "outside the tree"),
    (_member("lib/x", tarfile.SYMTYPE, linkname="../../etc"), "outside the tree"),
    (_member("bin/python", tarfile.SYMTYPE, linkname="/usr/bin/../../etc/shadow"), "outside the tree"),
    (_member("x", tarfile.LNKTYPE, linkname="/etc/shadow"), "absolute path"),
])
def test_members_an_engine_virtualenv_never_holds_are_refused(tmp_path, member, refused):
    with pytest.raises(extract.Refused, match=refused):
        _extract(craft(member), tmp_path / "venv")


def test_a_member_below_a_symlink_is_refused_and_nothing_is_written_outside(tmp_path, outside):
    data = craft(_member("lib", tarfile.SYMTYPE, linkname="."),
                 _member("lib/victim", data=b"owned\n"))
    with pytest.raises(extract.Refused, match="below the symlink"):
        _extract(data, tmp_path / "venv")
    assert (outside / "victim").read_text() == "untouched\n"


def test_a_symlink_that_climbs_through_another_symlink_is_refused(tmp_path):
    # c -> . is in the tree, but c/.. is the tree's parent.
    data = craft(_member("c", tarfile.SYMTYPE, linkname="."), _member("b", tarfile.SYMTYPE, linkname="c/.."))
    with pytest.raises(extract.Refused, match="climbs"):
        _extract(data, tmp_path / "venv")


def test_a_file_after_a_symlink_of_its_name_replaces_the_link(tmp_path, outside):
    data = craft(_member("bin/tool", tarfile.SYMTYPE, linkname="tool.real"),
                 _member("bin/tool", data=b"new\n"))
    _extract(data, tmp_path / "venv")
    assert not os.path.islink(tmp_path / "venv" / "bin" / "tool")
    assert (tmp_path / "venv" / "bin" / "tool").read_text() == "new\n"


def test_write_new_file_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path, outside):
    marker = tmp_path / "marker"
    marker.symlink_to(outside / "victim")
    extract.write_new_file(str(marker), b"{}\n")
    assert (outside / "victim").read_text() == "untouched\n"
    assert not marker.is_symlink() and marker.read_text() == "{}\n"


def test_the_digest_is_of_the_bytes_extracted_compressed_or_not(tmp_path):
    data = craft(_member("a", data=b"hello\n"))
    assert _extract(data, tmp_path / "plain")[0] == hashlib.sha256(data).hexdigest()
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd on this machine")
    import subprocess
    packed = subprocess.run([zstd, "-q", "-c"], input=data, capture_output=True, check=True).stdout
    (tmp_path / "z").mkdir()
    digest, count = extract.extract_checked(io.BytesIO(packed), str(tmp_path / "z"), zstd)
    assert digest == hashlib.sha256(packed).hexdigest() and count == 1
    assert (tmp_path / "z" / "a").read_text() == "hello\n"


def test_a_corrupt_zstd_stream_is_refused(tmp_path):
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd on this machine")
    (tmp_path / "z").mkdir()
    with pytest.raises((extract.Refused, tarfile.TarError)):
        extract.extract_checked(io.BytesIO(b"not zstd at all" * 100), str(tmp_path / "z"), zstd)


# --- issue 37, finding 4: the interpreter-link exception is no way out of the tree ------------------------------

def test_an_interpreter_link_must_name_an_interpreter(tmp_path, outside):
    """bin/python3 -> a directory of the host would let later members or hard links reach into it."""
    with pytest.raises(extract.Refused, match="outside the tree"):
        _extract(craft(_member("bin/python3", tarfile.SYMTYPE, linkname=str(outside))), tmp_path / "venv")


def test_a_hard_link_through_the_interpreter_link_is_refused(tmp_path, outside):
    """The attack: an allowed bin/python3 -> <dir>/python, then bin/activate hard-linked to bin/python3/victim.

    Relocation would then rewrite the host's file in place as root.
    """
    interpreter_dir = outside / "python"
    interpreter_dir.mkdir()
    (interpreter_dir / "victim").write_text("untouched\n")
    data = craft(_member("bin/python3", tarfile.SYMTYPE, linkname=str(interpreter_dir)),
                 _member("bin/activate", tarfile.LNKTYPE, linkname="bin/python3/victim"))
    with pytest.raises(extract.Refused, match="hard link"):
        _extract(data, tmp_path / "venv")
    assert (interpreter_dir / "victim").stat().st_nlink == 1


def test_a_hard_link_through_a_directory_symlink_is_refused(tmp_path):
    data = craft(_member("real/a.py", data=b"x"), _member("lib", tarfile.SYMTYPE, linkname="real"),
                 _member("b.py", tarfile.LNKTYPE, linkname="lib/a.py"))
    with pytest.raises(extract.Refused, match="hard link"):
        _extract(data, tmp_path / "venv")


def test_only_an_engine_virtualenv_may_link_its_interpreter_out_of_the_tree(tmp_path):
    data = craft(_member("bin/python3", tarfile.SYMTYPE, linkname="/usr/bin/python3.11"))
    assert _extract(data, tmp_path / "venv")[1] == 1
    with pytest.raises(extract.Refused, match="outside the tree"):
        _extract(data, tmp_path / "model", interpreter_links=False)


def test_a_refusal_early_in_a_large_zstd_archive_returns(tmp_path):
    """The first member is refused while zstd still has output to write: the extraction must end, not hang."""
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd on this machine")
    import subprocess
    import threading
    data = craft(_member("dev/sda", tarfile.BLKTYPE), _member("big", data=bytes(8 << 20)))
    packed = subprocess.run([zstd, "-q", "-c"], input=data, capture_output=True, check=True).stdout
    (tmp_path / "z").mkdir()
    outcome = []

    def run():
        try:
            extract.extract_checked(io.BytesIO(packed), str(tmp_path / "z"), zstd)
        except extract.Refused as error:
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)  # generous: the refusal takes milliseconds; before the fix it never came back
    assert not worker.is_alive() and "device node" in str(outcome[0])


# --- issue 37: an archive that expands past its budget (bytes or members) is stopped before it is written ---------

@pytest.mark.parametrize("archive_size, max_bytes, max_members, want_bytes, want_members", [
    (0, 0, 0, extract.EXPANSION_FLOOR, extract.MAX_MEMBERS),  # no file behind the stream: the floor
    (10 << 20, 0, 0, extract.EXPANSION_FLOOR, extract.MAX_MEMBERS),  # a small archive: still the floor
    (10 << 30, 0, 0, 200 << 30, extract.MAX_MEMBERS),  # a 10 GiB model: twenty times its size
    (10 << 30, 1 << 40, 10, 1 << 40, 10),  # the operator's options win
])
def test_the_default_budget_is_twenty_times_the_archive_at_least_the_floor(archive_size, max_bytes, max_members,
                                                                           want_bytes, want_members):
    budget = extract.Budget.for_archive(archive_size, max_bytes, max_members)
    assert (budget.max_bytes, budget.max_members) == (want_bytes, want_members)


def test_a_member_claiming_a_terabyte_is_refused_before_any_of_it_is_written(tmp_path):
    """The header alone: without the budget tarfile would start copying (and a real one would fill the disk)."""
    info = tarfile.TarInfo("weights.bin")
    info.size = 1 << 40
    config, _data = _member("config.json", data=b"{}")
    data = config.tobuf(tarfile.GNU_FORMAT) + b"{}".ljust(512, b"\0") + info.tobuf(tarfile.GNU_FORMAT) + bytes(1024)
    dest = tmp_path / "model"
    dest.mkdir()
    with pytest.raises(extract.Refused, match=r"expands past .*'weights.bin' claims 1099511627776 bytes.*raise opt"):
        extract.extract_checked(io.BytesIO(data), str(dest),
                                budget=extract.Budget.for_archive(len(data), advice="opt"))
    assert sorted(os.listdir(dest)) == ["config.json"]


def test_a_zero_filled_member_that_compresses_well_stops_at_twenty_times_the_archive(tmp_path, monkeypatch):
    """32 MiB of zeros gzip to ~32 KiB; the default budget of that file (floor lowered to show the ratio) refuses it,
    and unpack_tree leaves neither the staging tree nor the destination."""
    monkeypatch.setattr(extract, "EXPANSION_FLOOR", 0)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info, data = _member("zeros", data=bytes(32 << 20))
        archive.addfile(info, data)
    path = tmp_path / "model.tar.gz"
    path.write_bytes(buffer.getvalue())
    assert path.stat().st_size * extract.EXPANSION_RATIO < 32 << 20
    with pytest.raises(extract.Refused, match="expands past"):
        extract.unpack_tree(str(path), str(tmp_path / "model"), hashlib.sha256(buffer.getvalue()).hexdigest())
    assert sorted(os.listdir(tmp_path)) == ["model.tar.gz"]


def test_many_tiny_members_stop_at_the_member_budget(tmp_path):
    data = craft(*[_member(f"f{index}") for index in range(50)])
    dest = tmp_path / "model"
    dest.mkdir()
    with pytest.raises(extract.Refused, match=r"more than 10 members \('f10' is one more\).*raise max_members"):
        extract.extract_checked(io.BytesIO(data), str(dest), budget=extract.Budget(1 << 20, 10, "max_members"))
    assert len(os.listdir(dest)) == 10


def test_the_member_budget_holds_through_zstd(tmp_path):
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd on this machine")
    import subprocess
    packed = subprocess.run([zstd, "-q", "-c"], input=craft(*[_member(f"f{index}") for index in range(50)]),
                            capture_output=True, check=True).stdout
    (tmp_path / "z").mkdir()
    with pytest.raises(extract.Refused, match="more than 10 members"):
        extract.extract_checked(io.BytesIO(packed), str(tmp_path / "z"), zstd, budget=extract.Budget(1 << 20, 10))


def _extension_header(kind, size):
    """The 512-byte header of a GNU long name/link or PAX extension claiming ``size`` bytes, as tar writes it."""
    return tarfile.TarInfo._create_header(
        {"name": "././@LongLink", "mode": 0, "uid": 0, "gid": 0, "size": size, "mtime": 0, "type": kind, "linkname": "",
         "uname": "", "gname": "", "devmajor": 0, "devminor": 0}, tarfile.GNU_FORMAT, "utf-8", "surrogateescape")


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE])
def test_an_extension_header_claiming_gigabytes_is_refused_before_tarfile_reads_it(tmp_path, kind):
    """Issue 37 (low): such a header is no member, so the budget never saw it; tarfile read the 4 GiB it claims into
    memory (a 4 MB gzip of zeros, as root, before any digest was compared)."""
    config, _data = _member("config.json", data=b"{}")
    data = config.tobuf(tarfile.GNU_FORMAT) + b"{}".ljust(512, b"\0") + _extension_header(kind, 4 << 30) + bytes(4096)
    dest = tmp_path / "model"
    dest.mkdir()
    with pytest.raises(extract.Refused, match=r"extension header claims 4294967296 bytes"):
        extract.extract_checked(io.BytesIO(data), str(dest))
    assert sorted(os.listdir(dest)) == ["config.json"]


def test_a_long_name_of_a_real_tree_is_still_read(tmp_path):
    """The bound is far above any real name: a path of 3,000 characters (GNU long name, PAX path) is extracted."""
    deep = "/".join(["d" * 200] * 14) + "/weights.bin"
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
            info, data = _member(deep, data=b"w")
            archive.addfile(info, data)
        dest = tmp_path / f"tree-{fmt}"
        _extract(buffer.getvalue(), dest, interpreter_links=False)
        assert (dest / deep).read_bytes() == b"w"


def _model_archive(tmp_path, *members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for info, data in members:
            archive.addfile(info, data)
    path = tmp_path / "model.tar"
    path.write_bytes(buffer.getvalue())
    return str(path), hashlib.sha256(buffer.getvalue()).hexdigest()


def test_the_staging_directory_has_a_random_name_beside_the_destination(tmp_path, monkeypatch):
    src, sha = _model_archive(tmp_path, _member("config.json", data=b"{}"))
    models = tmp_path / "models"
    models.mkdir()
    seen = []
    real = extract.extract_checked

    def spy(handle, dest, *args, **kwargs):
        seen.append(dest)
        return real(handle, dest, *args, **kwargs)

    monkeypatch.setattr(extract, "extract_checked", spy)
    extract.unpack_tree(src, str(models / "m.partial"), sha)
    extract.unpack_tree(src, str(models / "m.partial"), sha)
    assert len(set(seen)) == 2 and all(os.path.dirname(path) == str(models) for path in seen)
    assert all(os.path.basename(path).startswith(".m.partial.") for path in seen)
    assert sorted(os.listdir(models)) == ["m.partial"]


@pytest.mark.parametrize("owner, mode, refused", [
    (None, 0o755, False),
    (None, 0o775, True),  # the service group could write it
    (None, 0o1777, True),
    (65534, 0o750, True),  # the layout before: base_model_dir was the service account's
])
def test_a_parent_another_account_can_rewrite_is_refused(tmp_path, owner, mode, refused):
    if owner is not None and os.geteuid() != 0:
        pytest.skip("chown to another account needs root")
    src, sha = _model_archive(tmp_path, _member("config.json", data=b"{}"))
    models = tmp_path / "models"
    models.mkdir()
    models.chmod(mode)
    if owner is not None:
        os.chown(models, owner, owner)
    if refused:
        with pytest.raises(extract.Refused, match="another account can rewrite"):
            extract.unpack_tree(src, str(models / "m.partial"), sha)
        assert os.listdir(models) == []
    else:
        assert extract.unpack_tree(src, str(models / "m.partial"), sha) == 1


def test_a_directory_swapped_for_a_symlink_before_its_chmod_is_refused_and_the_target_keeps_its_mode(
        tmp_path, outside, monkeypatch):
    """Review finding M2: between writing a directory member and the closing chmod/utime of the directories, the
    account swapped it for a symlink to a file of root's; the chmod followed it.  Now nothing is changed through
    the link."""
    outside.chmod(0o700)
    secret = outside / "secret"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    src, sha = _model_archive(tmp_path, _member("1_Pooling", tarfile.DIRTYPE, mode=0o755),
                              _member("1_Pooling/config.json", data=b"{}"), _member("z", data=b"last"))
    real = extract._open_new

    def swap_then_open(path, mode):  # what the other account does while "z" is written
        if path.endswith("/z"):
            pooling = os.path.join(os.path.dirname(path), "1_Pooling")
            os.rename(pooling, pooling + ".old")
            os.symlink(str(secret), pooling)
        return real(path, mode)

    monkeypatch.setattr(extract, "_open_new", swap_then_open)
    with pytest.raises(extract.Refused, match="no longer the directory"):
        extract.unpack_tree(src, str(tmp_path / "m.partial"), sha)
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600 and secret.read_text() == "hunter2\n"
    assert not (tmp_path / "m.partial").exists()
    assert not [name for name in os.listdir(tmp_path) if "unpack" in name]
