"""Package lists are refreshed when absent, forced or stale, and a converged host skips the refresh."""

import os
import subprocess

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import package_lists as pl

NOW = 1_000_000.0
HOUR = 3600


@pytest.mark.parametrize("pkg_mgr, lists, stamp, force, refresh, age, why", [
    # The CI failure: an image whose lists were emptied minutes ago.
    ("apt", [], NOW - 600, False, True, 600, "no apt package lists are present"),
    ("apt", [], None, False, True, None, "no apt package lists are present"),
    ("dnf", [], None, False, True, None, "no dnf package lists are present"),
    # Converged: refreshed a minute ago by this collection (the stamp), lists dated by the archive.
    ("apt", [NOW - 30 * 86400], NOW - 60, False, False, 60, "60 s old, at most 3600 s"),
    # No stamp yet (lists fetched by hand): the newest list dates the refresh.
    ("apt", [NOW - 30 * 86400, NOW - 100], None, False, False, 100, "100 s old"),
    ("apt", [NOW - 30 * 86400], None, False, True, 30 * 86400, "more than 3600 s"),
    ("apt", [NOW - 2 * HOUR], NOW - HOUR - 1, False, True, HOUR + 1, "more than 3600 s"),
    ("apt", [NOW - 2 * HOUR], NOW - HOUR, False, False, HOUR, "at most 3600 s"),
    ("dnf", [NOW - 2 * HOUR], NOW - 10, False, False, 10, "dnf package lists are 10 s old"),
    # A package source was just written: refresh whatever the age.
    ("apt", [NOW - 5], NOW - 5, True, True, 5, "a package source changed"),
    # A manager without a rule refreshes through its own install.
    ("zypper", [], None, False, False, None, "no package-list rule for package manager 'zypper'"),
    ("zypper", [], None, True, False, None, "no package-list rule"),
])
def test_refresh_decision(pkg_mgr, lists, stamp, force, refresh, age, why):
    decision = pl.refresh_decision(pkg_mgr, lists, stamp, NOW, HOUR, force)
    assert decision["refresh"] is refresh
    assert decision["age"] == age
    assert why in decision["reason"]


def test_max_age_is_the_callers():
    assert pl.refresh_decision("apt", [NOW - 600], None, NOW, 300)["refresh"] is True
    assert pl.refresh_decision("apt", [NOW - 600], None, NOW, 900)["refresh"] is False


def test_every_manager_has_lists_a_stamp_and_a_command():
    for name, manager in pl.MANAGERS.items():
        assert manager["lists"].startswith("/") and manager["stamp"].startswith("/")
        assert pl.refresh_command(name)[-len(manager["refresh"]):] == manager["refresh"]
    assert pl.refresh_command("zypper") == []


@pytest.mark.parametrize("status, stamped", [("true", True), ("false", False)])
def test_the_command_touches_the_stamp_only_after_a_refresh_that_succeeded(tmp_path, status, stamped):
    stamp = tmp_path / "periodic" / "update-success-stamp"
    argv = pl.refresh_command("apt")
    argv[argv.index(pl.MANAGERS["apt"]["stamp"]):] = [str(stamp), status]
    result = subprocess.run(argv, check=False)
    assert (result.returncode == 0) is stamped
    assert os.path.exists(stamp) is stamped
