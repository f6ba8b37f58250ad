"""playbooks/site.yml runs a driver role, then the vllm role: a host whose new driver waits for a
reboot must stop, failed with the fix, before its service starts, and the other hosts must go on.

Before this check the vllm role went on, started the unit, and the first run on a bare GPU or NPU
host ended in a crash loop.  One real ansible-playbook run (check mode) of the role's install step
on two hosts.
"""

import re

from playbook_run import run_playbook


def test_pending_reboot_stops_only_that_host(collections_path):
    proc = run_playbook(collections_path, "vllm_reboot_gate.yml", {}, "--check",
                        "-i", "gpu-pending,gpu-ready,")
    out = proc.stdout
    assert proc.returncode != 0, out[-3000:]
    stopped = re.search(r"fatal: \[gpu-pending\]: FAILED! => .*", out)
    assert stopped, out[-3000:]
    assert "kunpeng_nvidia.reboot_pending" in stopped.group(0)
    assert "Set nvidia_reboot: true to let the role reboot it, or reboot it yourself" in stopped.group(0)
    # The other host went past the gate to the next check of the install step.
    went_on = re.search(r"fatal: \[gpu-ready\]: FAILED! => .*", out)
    assert went_on, out[-3000:]
    assert "service account 'kv-test-no-such-user' does not exist" in went_on.group(0)
    assert "reboot" not in went_on.group(0)
