"""docs/extending.md is true: every place a backend record needs exists, and every file it names exists.

A new record in plugins/module_utils/backends/ fails here until its driver
role, the role's report fact and reboot variable, its exporter's package
variable and its install hooks are there.
"""

import os
import re

import pytest
import yaml

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import accelerator_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "extending.md")


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle) or {}


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_record_has_its_driver_role(name):
    driver = backends.BACKENDS[name]["driver"]
    if driver is None:
        return
    role = driver["role"].split(".")[-1]
    for part in (("tasks", "main.yml"), ("meta", "argument_specs.yml"), ("defaults", "main.yml"), ("README.md",)):
        assert os.path.isfile(os.path.join(ROOT, "roles", role, *part)), f"backend {name}: roles/{role}/{'/'.join(part)}"
    assert driver["fact"] in fact_contract.FACTS, f"backend {name}: {driver['fact']} is not declared in fact_contract.py"
    where = fact_contract.FACTS[driver["fact"]][1]
    assert where and os.path.isfile(os.path.join(ROOT, where)), f"backend {name}: driver_fact_from {where!r} is not a file"
    shape = fact_contract.shape(driver["fact"])
    for key in ("reboot_pending", driver["env_file_key"]) + ((driver["group_key"],) if driver["group_key"] else ()):
        assert key in shape, f"backend {name}: {driver['fact']}.{key} is not declared"
    options = _yaml("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert driver["reboot_variable"] in options, f"backend {name}: roles/{role} has no {driver['reboot_variable']}"


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_record_has_its_probe_section_and_exporter(name):
    record = backends.BACKENDS[name]
    probe = fact_contract.shape("kunpeng_accelerators")
    for key in ("hardware", "visible"):
        if record[key]:
            assert record[key]["section"] in probe, f"backend {name}: kunpeng_accelerators.{record[key]['section']}"
    if record["hardware"]:
        # The class declares its probe section's keys; fact_contract.py builds kunpeng_accelerators from them.
        assert backends.backend(name).probe_keys, f"backend {name}: no probe_keys (the keys of its probe section)"
        assert record["hardware"]["pci_count"] in probe["pci"].keys, f"backend {name}: pci.{record['hardware']['pci_count']}"
    if record["exporter"]:
        # The monitoring role may declare the exporter's variables (existing backends do); a new backend needs
        # not, since the plan reads any monitoring_<job>_exporter_* and falls back to the record's port.
        defaults = _yaml("roles", "monitoring", "defaults", "main.yml")
        port = f"monitoring_{record['exporter']['job']}_exporter_port"
        if port in defaults:
            assert defaults[port] == record["exporter"]["port"], f"backend {name}: roles/monitoring {port}"


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_device_is_read_by_the_metrics_collector(name):
    """The monitoring role's collector runs each device's tool (accelerator_metrics TOOLS and PARSERS, keyed by the
    probe section); tests/unit/roles/test_monitoring_collector.py fails when its parser module is not shipped."""
    hardware = backends.BACKENDS[name]["hardware"]
    if not hardware:
        return
    section = hardware["section"]
    assert section in accelerator_metrics.TOOLS and section in accelerator_metrics.PARSERS, (
        f"backend {name}: plugins/module_utils/probe/accelerator_metrics.py has no TOOLS/PARSERS entry {section!r}")
    assert accelerator_metrics.TOOLS[section][0] == hardware["tool"], f"backend {name}: the collector runs another tool"


@pytest.mark.parametrize("name", backends.NAMES)
@pytest.mark.parametrize("reuse", [False, True])
def test_every_install_hook_is_a_task_file(name, reuse):
    if reuse and name != "cuda":
        return
    hooks = deployment.install_hooks(name, dict(deployment.REQUEST_DEFAULTS, reuse_host_torch=reuse))
    for hook in hooks["before"] + hooks["after"]:
        assert os.path.isfile(os.path.join(ROOT, "roles", "vllm", "tasks", hook)), f"backend {name}: {hook}"


def test_every_file_the_page_names_exists():
    with open(DOC) as handle:
        text = handle.read()
    named = set(re.findall(r"`((?:plugins|roles|scripts|tests|playbooks|docs)/[^`<>*]+?\.(?:py|yml|md|sh))`", text))
    named.add("README.md")
    assert named, "docs/extending.md names no file"
    missing = sorted(path for path in named if not os.path.exists(os.path.join(ROOT, path)))
    assert missing == []
