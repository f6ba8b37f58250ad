"""base_report as Ansible runs it: the role's probe results in, decisions out, nothing changed."""

from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import base_report


def test_each_question_answers_only_when_asked():
    failed, result = run_main(base_report.main, {"firewall": {"manage": True, "name": "ufw", "probe_rc": 0,
                                                              "probe_stdout": "Status: inactive", "ports": [8000]}}, True)
    assert not failed and result["changed"] is False
    assert result["firewall"]["active"] is False and "driver_build" not in result and "tuning" not in result


def test_tuning_lists_must_line_up():
    failed, result = run_main(base_report.main, {"tuning": {"tunables": [{"name": "vm.swappiness", "kind": "sysctl", "value": 10,
                                                                          "probe": "/proc/sys/vm/swappiness"}],
                                                            "exists": [], "writeable": [], "service_mgr": "systemd",
                                                            "sysctl_file": "a", "tmpfiles_file": "b"}})
    assert failed and "one entry per tunable" in result["msg"]


def test_a_bad_source_fails_naming_the_variable():
    failed, result = run_main(base_report.main, {"firewall": {"manage": True, "name": "ufw", "probe_rc": 0,
                                                              "probe_stdout": "Status: active", "ports": [8000],
                                                              "sources": ["10.0.0.300"]}}, True)
    assert failed and "base_firewall_sources" in result["msg"]


def test_tuning_reads_the_governors_on_the_host(tmp_path):
    governors = tmp_path / "scaling_available_governors"
    governors.write_text("ondemand powersave\n")
    tunable = {"name": "cpu_governor", "kind": "sysfs", "value": "performance", "probe": "/sys/gov", "write": "/sys/cpu*/gov"}
    args = {"tuning": {"tunables": [tunable], "exists": [True], "writeable": [True], "service_mgr": "systemd",
                       "sysctl_file": "a", "tmpfiles_file": "b", "governors_path": str(governors)}}
    failed, result = run_main(base_report.main, args, True)
    assert not failed and result["tuning"]["items"][0]["reason"] == "cpufreq offers ondemand powersave, not performance"
    governors.write_text("performance powersave\n")
    failed, result = run_main(base_report.main, args, True)
    assert not failed and result["tuning"]["items"][0]["status"] == "applied" and result["tuning"]["write_sysfs"] is True
    args["tuning"]["governors_path"] = str(tmp_path / "missing")
    failed, result = run_main(base_report.main, args, True)
    assert not failed and result["tuning"]["items"][0]["reason"] == "cpufreq offers , not performance"
