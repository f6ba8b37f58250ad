"""kunpeng.vllm.vllm_service: the plan's service entry, completed with the driver role's report of this run."""

import pytest
from ansible.errors import AnsibleFilterError
from vllm_plans import plan

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_service import vllm_service


def test_without_the_drivers_report_the_plans_entry_comes_back():
    planned = plan("ascend")
    assert vllm_service(planned, {"kunpeng_ascend": {}, "kunpeng_nvidia": {}}) == planned["service"]
    assert planned["service"]["device_allow"][-1] == "char-davinci rw"


def test_the_drivers_report_replaces_the_plans_guess():
    planned = plan("ascend", visible_devices="0")
    report = {"env_file": "/etc/vllm/ascend.env", "device_group": "HwHiAiUser",
              "device_nodes": ["/dev/davinci0", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]}
    assert vllm_service(planned, {"kunpeng_ascend": report}) == {
        "device_allow": ["/dev/davinci0 rw", "/dev/davinci_manager rw", "/dev/devmm_svm rw", "/dev/hisi_hdc rw"],
        "supplementary_groups": ["HwHiAiUser"], "environment": {"ASCEND_RT_VISIBLE_DEVICES": "0"},
        "environment_files": ["/etc/vllm/ascend.env"]}


def test_another_backends_report_is_not_read():
    planned = plan("cuda")
    assert vllm_service(planned, {"kunpeng_ascend": {"env_file": "/etc/vllm/ascend.env"}}) == planned["service"]


@pytest.mark.parametrize("value", [None, {"backend": "cuda"}, {"backend": "tpu", "service": {}}])
def test_a_value_that_is_no_role_plan_is_refused(value):
    with pytest.raises(AnsibleFilterError):
        vllm_service(value, {})
