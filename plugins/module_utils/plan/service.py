# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""What the vLLM service of a backend needs from the host: devices, groups, environment.

``service_spec`` is the plan's ``service`` entry (kunpeng_vllm_plan.service):
the unit template and the launcher only render it, they hold no per-backend
knowledge.  The per-backend facts (device nodes, fixed environment,
visible-devices variable, driver role fact and its keys) come from the
backend's record in plugins/module_utils/backends/.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Mapping, Optional

# Values land in a systemd EnvironmentFile and a POSIX sh script, single-quoted.
_SAFE_VALUE = re.compile(r"^[^'\x00-\x1f\x7f]*$")


class ServiceError(ValueError):
    """A value the service environment cannot carry."""


def _rw(nodes: List[str]) -> List[str]:
    return [f"{node} rw" for node in nodes]


def _environment(record: Mapping[str, Any], visible_devices: str, cpu_runtime: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    env = {key: str(value) for key, value in record["service_environment"].items()}
    if record["runtime_env"]:
        if not cpu_runtime:
            raise ServiceError(f"an engine on the {record['label']} needs the runtime settings the plan derives from the "
                               "probe (kunpeng.vllm.cpu_runtime)")
        env.update({variable: str(cpu_runtime[key]) for variable, key in record["runtime_env"].items()})
    if record["visible"] and str(visible_devices or ""):
        env[record["visible"]["variable"]] = str(visible_devices)
    bad = sorted(key for key, value in env.items() if not _SAFE_VALUE.match(value))
    if bad:
        raise ServiceError(f"{', '.join(bad)}: a quote or control character cannot go in the service environment")
    return env


def layout_environment(backend_record: Mapping[str, Any], engine_args: Mapping[str, Any]) -> Dict[str, str]:
    """The environment a data-parallel, expert-parallel layout adds on one host (the backend's ``multinode_moe`` env).

    Multi-node members also get it from the cluster plan (the same values); a single host that the plan runs as replicas with expert
    parallelism (one 16-NPU Atlas 800 A3: DeepSeek-R1.md's "Single-Node Online Deployment" exports
    ``PYTORCH_NPU_ALLOC_CONF=expandable_segments:True`` and the HCCL/OMP settings as the multi-node one does)
    gets the same here.  Other layouts, and backends without ``multinode_moe``, add nothing.
    """
    spread = backend_record.get("multinode_moe") or {}
    replicas = int(engine_args.get("data_parallel_size") or 1)
    if not spread or replicas < 2 or not engine_args.get("enable_expert_parallel"):
        return {}
    return {key: str(value) for key, value in spread["env"].items()}


def with_driver(entry: Mapping[str, Any], backend_record: Mapping[str, Any],
                driver_facts: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """``entry`` with what the backend's driver role reported, when its fact is in ``driver_facts``.

    The fact's environment file (``env_file_key``), device group (``group_key``) and, for a backend with
    device nodes, the nodes it reported (``device_nodes``) replace the entry's; without the fact the entry
    stays as it is (the plan's, made before the driver role ran or from an earlier run's fact).
    """
    result = dict(entry)
    spec = backend_record["driver"]
    driver = ((driver_facts or {}).get(spec["fact"]) or {}) if spec else {}
    if not driver:
        return result
    group = str(driver.get(spec["group_key"]) or "") if spec["group_key"] else ""
    env_file = str(driver.get(spec["env_file_key"]) or "")
    result.update(supplementary_groups=[group] if group else [], environment_files=[env_file] if env_file else [])
    if backend_record["device_nodes"] and driver.get("device_nodes"):
        result["device_allow"] = _rw(driver["device_nodes"])
    return result


def service_spec(backend_record: Mapping[str, Any], accelerators: Optional[Mapping[str, Any]], visible_devices: str,
                 cpu_runtime: Optional[Mapping[str, Any]], driver_facts: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The service entry of the plan for ``backend_record`` (a record of plugins/module_utils/backends/).

    ``driver_facts`` maps fact names (kunpeng_nvidia, kunpeng_ascend) to the facts the driver roles set, those
    present (see :func:`with_driver`).  ``cpu_runtime`` is kunpeng.vllm.cpu_runtime's result, read when the
    engine's device is the CPU.  ``accelerators`` (the probe) is part of the contract; no record derives its
    service from it yet.  Returns ``device_allow`` (DeviceAllow entries; empty: PrivateDevices=yes),
    ``supplementary_groups``, ``environment`` and ``environment_files`` (the driver's, loaded after the user's).
    """
    del accelerators  # see the docstring
    entry = {
        "device_allow": _rw(backend_record["device_nodes"]),
        "supplementary_groups": [],
        "environment": _environment(backend_record, visible_devices, cpu_runtime),
        "environment_files": [],
    }
    return with_driver(entry, backend_record, driver_facts)
