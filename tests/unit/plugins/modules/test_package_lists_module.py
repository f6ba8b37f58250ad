"""package_lists as Ansible runs it: the host's lists and stamp in, the decision and the command out."""

import os

from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import package_lists as pl
from ansible_collections.kunpeng.vllm.plugins.modules import package_lists


def _point_at(monkeypatch, tmp_path):
    lists = tmp_path / "lists"
    lists.mkdir()
    monkeypatch.setitem(pl.MANAGERS, "apt", dict(pl.MANAGERS["apt"], lists=str(lists / "*_Packages*"),
                                                 stamp=str(tmp_path / "stamp")))
    return lists


def test_emptied_lists_are_refreshed_then_a_rerun_skips(monkeypatch, tmp_path):
    lists = _point_at(monkeypatch, tmp_path)
    (tmp_path / "stamp").write_text("")  # an image refreshed minutes ago, then cleaned
    failed, result = run_main(package_lists.main, {"pkg_mgr": "apt"}, check_mode=True)
    assert not failed and result["changed"] is False
    assert result["refresh"] is True and result["reason"] == "no apt package lists are present"
    assert result["command"][3] == str(tmp_path / "stamp")
    (lists / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4").write_text("x")
    os.utime(lists / "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4", (0, 0))
    failed, result = run_main(package_lists.main, {"pkg_mgr": "apt", "max_age": 600})
    assert not failed and result["refresh"] is False and result["age"] < 600


def test_force_and_an_unknown_manager(monkeypatch, tmp_path):
    _point_at(monkeypatch, tmp_path)
    failed, result = run_main(package_lists.main, {"pkg_mgr": "apt", "force": True})
    assert not failed and result["refresh"] is True and result["reason"] == "a package source changed"
    failed, result = run_main(package_lists.main, {"pkg_mgr": "pkg5"})
    assert not failed and result["refresh"] is False and result["command"] == []
