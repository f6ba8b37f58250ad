"""Files written into a folder others may write (plugins/module_utils/execute/store_files.py): every file is new and
renamed into place, so an entry planted at its name (symlink, hard link, file, FIFO) is replaced, never written
through; a directory there is refused; what is read back is read only when it is a regular file."""

import hashlib
import os
import stat
import sys

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import store_files as files

from conftest import VICTIM_TEXT as SECRET  # noqa: E402  (the fixture victim, tests/unit/conftest.py, holds it)


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "store"
    path.mkdir()
    return path


def _plant(kind, at, victim):
    if kind == "symlink":
        os.symlink(victim, at)
    elif kind == "hard link":
        os.link(victim, at)
    elif kind == "file":
        at.write_bytes(b"left by someone else")
    elif kind == "fifo":
        os.mkfifo(at)
    elif kind == "dangling symlink":
        os.symlink(victim.parent / "created-through-the-link", at)


def _untouched(victim):
    info = os.stat(victim)
    assert victim.read_bytes() == SECRET and stat.S_IMODE(info.st_mode) == 0o600
    assert sorted(os.listdir(victim.parent)) == ["passwd"]


@pytest.mark.parametrize("kind", ["symlink", "hard link", "file", "fifo", "dangling symlink", None])
def test_a_planted_entry_is_replaced_and_its_target_untouched(kind, store, victim):
    final = store / "artifact.json"
    _plant(kind, final, victim)
    files.write_file(str(final), b"new", 0o644)
    info = os.lstat(final)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o644 and info.st_nlink == 1
    assert final.read_bytes() == b"new"
    assert os.listdir(store) == ["artifact.json"]  # no partial left behind
    _untouched(victim)


@pytest.mark.parametrize("kind", ["symlink", "hard link", "file", "fifo"])
def test_names_a_writer_used_to_reuse_are_never_opened(kind, store, victim):
    """The old fixed names (``.partial``, exit-status files) planted as links: the new file has a random name."""
    final = store / "x.tar"
    planted = [store / "x.tar.partial", store / "x.tar.partial.rc-tar", store / "x.tar.partial.rc-tee"]
    for path in planted:
        _plant(kind, path, victim)
    files.write_file(str(final), b"archive")
    assert final.read_bytes() == b"archive"
    _untouched(victim)


def test_a_directory_at_the_name_is_refused_and_nothing_is_left(store, victim):
    final = store / "x.tar"
    final.mkdir()
    (final / "inside").write_bytes(b"kept")
    with pytest.raises(files.Refused, match="is a directory"):
        files.write_file(str(final), b"archive")
    assert sorted(os.listdir(store)) == ["x.tar"] and (final / "inside").read_bytes() == b"kept"


def test_an_error_while_writing_keeps_the_old_file_and_leaves_no_partial(store):
    final = store / "x.json"
    final.write_bytes(b"old")
    with pytest.raises(RuntimeError), files.new_file(str(final)) as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert final.read_bytes() == b"old" and os.listdir(store) == ["x.json"]


@pytest.mark.parametrize("kind", ["symlink", "hard link", None])
def test_a_commands_output_is_written_new_and_hashed(kind, store, victim):
    final = store / "x.tar"
    _plant(kind, final, victim)
    payload = b"tar bytes " * 300000  # more than one read
    script = "import sys; sys.stdout.buffer.write(b'tar bytes ' * 300000)"
    sha, size = files.write_output_of([sys.executable, "-c", script], str(final), 0o644)
    assert (sha, size) == (hashlib.sha256(payload).hexdigest(), len(payload)) and final.read_bytes() == payload
    assert stat.S_IMODE(os.lstat(final).st_mode) == 0o644 and not os.path.islink(final)
    assert os.listdir(store) == ["x.tar"]
    _untouched(victim)


def test_a_failing_command_is_refused_with_its_error_and_the_old_file_kept(store):
    final = store / "x.tar"
    final.write_bytes(b"old")
    with pytest.raises(files.Refused, match=r"exited 2: tar: venv: Cannot stat"):
        script = "import sys; sys.stdout.write('part'); sys.stderr.write('tar: venv: Cannot stat'); sys.exit(2)"
        files.write_output_of([sys.executable, "-c", script], str(final))
    assert final.read_bytes() == b"old" and os.listdir(store) == ["x.tar"]


@pytest.mark.parametrize("kind, expected", [
    ("file", b"left by someone else"),
    ("symlink", None),          # not read through: the victim's text never reaches the module's result
    ("hard link", SECRET),      # a hard link is the file itself; reading it is all a reader does
    ("fifo", None),             # does not hang
    ("directory", None),
    ("missing", None),
])
def test_read_regular_reads_only_a_regular_file(kind, expected, store, victim):
    path = store / "x.json"
    if kind == "directory":
        path.mkdir()
    elif kind != "missing":
        _plant(kind, path, victim)
    assert files.read_regular(str(path)) == expected
    assert files.is_regular(str(path)) == (kind in ("file", "hard link"))
