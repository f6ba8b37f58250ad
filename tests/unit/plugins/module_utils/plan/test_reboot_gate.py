"""A host whose new driver waits for a reboot stops before its vLLM service starts; nothing else does."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.reboot_gate import reboot_gate


@pytest.mark.parametrize("backend, nvidia, ascend, stop, variable", [
    ("cuda", True, False, True, "nvidia_reboot"),
    ("cuda", False, False, False, None),
    ("ascend", False, True, True, "ascend_reboot"),
    ("ascend", False, False, False, None),
    # Only the driver of the planned backend counts.
    ("cuda", False, True, False, None),
    ("ascend", True, False, False, None),
    ("cpu", True, True, False, None),
])
def test_reboot_gate(backend, nvidia, ascend, stop, variable):
    # The role passes the report fact of the plan's driver role (registry: driver.fact).
    reports = {"kunpeng_nvidia": {"reboot_pending": nvidia}, "kunpeng_ascend": {"reboot_pending": ascend}}
    driver = {"cuda": "kunpeng_nvidia", "ascend": "kunpeng_ascend"}.get(backend)
    decision = reboot_gate(backend, reports.get(driver, {}), "node1")
    assert decision["stop"] is stop
    assert decision["variable"] == variable


def test_message_names_the_variable_and_the_way_on():
    msg = reboot_gate("cuda", {"reboot_pending": True}, "gpu1")["msg"]
    assert msg.startswith("gpu1: the new NVIDIA driver is installed but not loaded until the host reboots "
                          "(kunpeng_nvidia.reboot_pending)")
    assert "Set nvidia_reboot: true to let the role reboot it, or reboot it yourself" in msg
    assert "The other hosts go on." in msg
    msg = reboot_gate("ascend", {"reboot_pending": True})["msg"]
    assert msg.startswith("the new Ascend firmware or driver is installed")
    assert "(kunpeng_ascend.reboot_pending)" in msg and "Set ascend_reboot: true" in msg
