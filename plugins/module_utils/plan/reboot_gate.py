# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""May the vLLM service start, or does the host wait for a reboot into its new driver?

A driver role that installs a new NVIDIA driver, or new Ascend firmware or
driver, leaves the kernel module unloaded until the host reboots, unless it
was allowed to reboot the host itself (``nvidia_reboot`` / ``ascend_reboot``,
off by default).  It says so in its report fact (``kunpeng_nvidia`` /
``kunpeng_ascend``, key ``reboot_pending``).  A vLLM unit started before that
reboot finds no device and crash-loops, so that host must stop before its
service starts, with the fix in the message; the other hosts of the play go
on.

Only the driver of the planned backend counts: a cpu plan needs no driver.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends


def reboot_gate(backend, driver_report=None, host=None):
    """Decide whether the host stops before the vLLM service starts.

    ``driver_report`` is the report fact of the backend's driver role (the
    registry's ``driver.fact``: ``kunpeng_nvidia``, ``kunpeng_ascend``), or
    empty when that role did not run.  Returns a dict: ``stop`` (bool),
    ``variable`` (the role variable that allows the reboot, or None) and
    ``msg`` (the sentence for the play).
    """
    driver = backends.field(backend, "driver")
    if not driver or not (driver_report or {}).get("reboot_pending"):
        return {"stop": False, "variable": None,
                "msg": f"no reboot pending for the {backend} backend; the service may start"}
    who = f"{host}: " if host else ""
    msg = (f"{who}{driver['reboot_what']} is installed but not loaded until the host reboots ({driver['fact']}.reboot_pending), "
           "and vLLM would crash-loop without it, so this host stops before its service starts. "
           f"Set {driver['reboot_variable']}: true to let the role reboot it, or reboot it yourself, then run the "
           "playbook again. The other hosts go on.")
    return {"stop": True, "variable": driver["reboot_variable"], "msg": msg}
