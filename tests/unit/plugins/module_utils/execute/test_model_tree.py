"""model_tree: where root may write a model tree, and how it takes over one the service account owned.

The attacks are the ones of an account that could write base_model_dir (an earlier release gave it to the
service account): a `<model>.partial` symlink to a directory of root's, a symlink inside the tree it owned,
and a parent directory it can rewrite.
"""

import os
import stat
from types import SimpleNamespace

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import model_tree

ROOT, ME, OTHER = 0, 1000, 65534


@pytest.mark.parametrize("uid, mode, sticky_ok, why", [
    (ROOT, 0o40750, False, None),
    (ROOT, 0o40755, False, None),
    (ME, 0o40700, False, None),
    (OTHER, 0o40750, False, "belongs to uid 65534"),
    (OTHER, 0o40750, True, "belongs to uid 65534"),
    (ROOT, 0o40770, False, "lets its group or others write"),
    (ROOT, 0o40757, True, "lets its group or others write"),  # not sticky: others rename what is below
    (ROOT, 0o41777, False, "lets its group or others write"),  # the parent: another account creates .partial first
    (ROOT, 0o41777, True, None),  # /tmp above the parent: our root-owned entry cannot be renamed
])
def test_writable_by_others(uid, mode, sticky_ok, why):
    found = model_tree.writable_by_others(SimpleNamespace(st_uid=uid, st_mode=mode), ME, sticky_ok)
    assert (found is None) if why is None else (why in found), found


def _fake_lstat(tree):
    def lstat(path):
        uid, mode = tree[path]
        return SimpleNamespace(st_uid=uid, st_mode=mode)
    return lstat


@pytest.mark.parametrize("tree, unsafe", [
    # The default layout: root's all the way.
    ({"/var/lib/vllm/models": (ROOT, 0o40750), "/var/lib/vllm": (ROOT, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, []),
    # The layout before: the service account owns the models' parent ...
    ({"/var/lib/vllm/models": (OTHER, 0o40750), "/var/lib/vllm": (ROOT, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, ["/var/lib/vllm/models"]),
    # ... or the directory above it (it renames root's models directory away and puts its own there).
    ({"/var/lib/vllm/models": (ROOT, 0o40750), "/var/lib/vllm": (OTHER, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, ["/var/lib/vllm"]),
    # A symlink on the way: the system's own (root's) is followed, another account's is not.
    ({"/var/lib/vllm/models": (ROOT, 0o120777), "/var/lib/vllm": (ROOT, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, []),
    ({"/var/lib/vllm/models": (OTHER, 0o120777), "/var/lib/vllm": (ROOT, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, ["/var/lib/vllm/models"]),
    # A sticky, world-writable directory above a root-owned one is safe; as the parent it is not.
    ({"/var/lib/vllm/models": (ROOT, 0o40750), "/var/lib/vllm": (ROOT, 0o41777), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, []),
    ({"/var/lib/vllm/models": (ROOT, 0o41777), "/var/lib/vllm": (ROOT, 0o40750), "/var/lib": (ROOT, 0o40755),
      "/var": (ROOT, 0o40755), "/": (ROOT, 0o40755)}, ["/var/lib/vllm/models"]),
])
def test_unsafe_ancestors(tree, unsafe, monkeypatch):
    monkeypatch.setattr(model_tree.os.path, "lexists", lambda path: path in tree)
    monkeypatch.setattr(model_tree.os.path, "realpath", lambda path: path)
    found = model_tree.unsafe_ancestors("/var/lib/vllm/models/m", uid=ROOT, lstat=_fake_lstat(tree), top="/")
    assert [where for where, _why in found] == unsafe


def test_the_refusal_names_the_variable_the_directory_and_the_fix():
    message = model_tree.ancestors_message("vllm_model_dir", "/srv/m/x", [("/srv/m", "it belongs to uid 65534")])
    assert message.startswith("vllm_model_dir:") and "/srv/m: it belongs to uid 65534" in message
    assert "'x.partial' symlink" in message and "Nothing was changed" in message and "base_model_dir" in message


def test_a_real_world_writable_parent_is_found_also_behind_a_link(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    found = model_tree.unsafe_ancestors(str(shared / "m"), top=str(tmp_path))
    assert [where for where, _why in found] == [str(shared)]
    models = tmp_path / "models"
    models.symlink_to(shared)  # base_model_dir -> a shared directory: where the writes go counts
    found = model_tree.unsafe_ancestors(str(models / "m"), top=str(tmp_path))
    assert [where for where, _why in found] == [str(shared)]
    shared.chmod(0o755)
    assert model_tree.unsafe_ancestors(str(shared / "m"), top=str(tmp_path)) == []
    assert model_tree.unsafe_ancestors(str(models / "m"), top=str(tmp_path)) == []


def test_the_whole_way_from_root_is_walked(tmp_path):
    """pytest's own directory below the sticky /tmp is safe; a world-writable one below it is not."""
    assert model_tree.unsafe_ancestors(str(tmp_path / "m")) == []
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    (tmp_path / "open" / "models").mkdir()
    found = model_tree.unsafe_ancestors(str(tmp_path / "open" / "models" / "m"))
    assert [where for where, _why in found] == [str(tmp_path / "open")]


def test_a_symlinked_staging_directory_is_refused_naming_it(tmp_path):
    victim = tmp_path / "etc"
    victim.mkdir()
    staging = tmp_path / "m.partial"
    staging.symlink_to(victim)
    problem = model_tree.link_problem(str(staging), "the model's staging directory")
    assert str(staging) in problem and str(victim) in problem and "Nothing was changed" in problem
    staging.unlink()
    assert model_tree.link_problem(str(staging), "the model's staging directory") is None  # absent
    staging.mkdir()
    assert model_tree.link_problem(str(staging), "the model's staging directory") is None  # a directory


@pytest.mark.parametrize("mode, kept", [
    (0o644, 0o640), (0o666, 0o640), (0o640, 0o640), (0o600, 0o640), (0o755, 0o750), (0o750, 0o750),
    (0o4775, 0o750), (0o2755, 0o750), (0o777, 0o750), (0o400, 0o440), (0o000, 0o040),
])
def test_file_mode(mode, kept):
    assert model_tree.file_mode(mode) == kept


@pytest.mark.parametrize("uid, nlink, left", [(ROOT, 2, True), (ROOT, 1, False), (OTHER, 2, False)])
def test_a_hard_linked_file_of_roots_is_left_as_it_is(uid, nlink, left):
    assert model_tree.linked_elsewhere(SimpleNamespace(st_uid=uid, st_nlink=nlink)) is left


@pytest.fixture
def planted(tmp_path):
    """A model tree an account owned, with links to a secret file and a directory outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o700)
    secret = outside / "secret"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    tree = tmp_path / "m.partial"
    (tree / "1_Pooling").mkdir(parents=True)
    (tree / "config.json").write_text("{}\n")
    (tree / "config.json").chmod(0o666)
    (tree / "1_Pooling" / "config.json").write_text("{}\n")
    (tree / "1_Pooling").chmod(0o777)
    (tree / "secret").symlink_to(secret)
    (tree / "1_Pooling" / "etc").symlink_to(outside)
    (tree / "1_Pooling" / "up").symlink_to("../../outside")
    (tree / "1_Pooling" / "gone").symlink_to("nothing")
    (tree / "tokenizer.json").symlink_to("1_Pooling/config.json")  # inside the tree: kept
    return tree, outside, secret


def _modes(*paths):
    return [stat.S_IMODE(os.stat(path).st_mode) for path in paths]


def test_taking_a_tree_changes_links_themselves_never_their_targets(planted):
    tree, outside, secret = planted
    changed, dropped = model_tree.take_tree(str(tree), os.getegid(), uid=os.geteuid())
    assert changed and dropped == []
    assert _modes(outside, secret) == [0o700, 0o600]
    assert _modes(tree, tree / "1_Pooling", tree / "config.json") == [0o750, 0o750, 0o640]
    assert _modes(tree / "1_Pooling" / "config.json") == [0o640]
    assert (tree / "secret").is_symlink()
    assert model_tree.take_tree(str(tree), os.getegid(), uid=os.geteuid()) == (0, [])  # idempotent


def test_a_tree_root_writes_into_loses_its_links(planted):
    tree, outside, secret = planted
    _changed, dropped = model_tree.take_tree(str(tree), os.getegid(), drop_links=True, uid=os.geteuid())
    assert sorted(dropped) == ["1_Pooling/etc", "1_Pooling/gone", "1_Pooling/up", "secret"]
    assert not os.path.lexists(tree / "secret") and not os.path.lexists(tree / "1_Pooling" / "etc")
    assert (tree / "tokenizer.json").read_text() == "{}\n"
    assert secret.read_text() == "hunter2\n" and _modes(outside, secret) == [0o700, 0o600]


def test_a_tree_that_is_itself_a_symlink_is_not_taken(planted, tmp_path):
    _tree, outside, _secret = planted
    link = tmp_path / "m"
    link.symlink_to(outside)
    with pytest.raises(OSError):
        model_tree.take_tree(str(link), os.getegid(), uid=os.geteuid())
    assert _modes(outside) == [0o700]


def _plants_as(uid, directory, target):
    """Can ``uid`` create a symlink in ``directory`` (opened here, so only the directory's own mode decides)?"""
    fd = os.open(str(directory), os.O_RDONLY | os.O_DIRECTORY)
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.symlink(str(target), "planted", dir_fd=fd)
        except PermissionError:
            os._exit(1)
        os._exit(0)
    os.close(fd)
    planted = os.waitpid(pid, 0)[1] == 0
    if planted:
        os.unlink(os.path.join(str(directory), "planted"))
    return planted


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another account needs root")
def test_a_tree_the_service_account_owned_becomes_roots_and_the_account_cannot_plant_again(planted):
    tree, outside, secret = planted
    for here, dirs, files in os.walk(tree):
        for name in [here, *(os.path.join(here, entry) for entry in dirs + files)]:
            os.chown(name, OTHER, OTHER, follow_symlinks=False)
    assert _plants_as(OTHER, tree / "1_Pooling", outside)  # the layout before: it can
    model_tree.take_tree(str(tree), OTHER, drop_links=True)
    info = os.stat(tree / "1_Pooling")
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, OTHER, 0o750)
    assert os.stat(secret).st_uid == 0 and _modes(outside, secret) == [0o700, 0o600]
    assert not _plants_as(OTHER, tree / "1_Pooling", outside)
    assert not _plants_as(OTHER, tree, outside)
