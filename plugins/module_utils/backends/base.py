# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The interface every backend implements: its data (``record``) and its decisions (the methods).

A backend is what runs the engine.  Its *data* (device, driver role, engine
distributions, service devices, container devices, ...) is one record with the
fields of :data:`FIELDS`; its *behaviour* (which matrix row and packages, how the
capacity is planned, what a cluster member exports, ...) is a method.  Every
method of :class:`Backend` refuses by name ("backend rocm: no install_steps")
until the backend overrides it, so a backend that lacks a decision is refused
wherever the plan needs it, never planned as another backend.

The shape follows vLLM's own ``vllm/platforms/interface.py`` (a ``Platform``
class with data attributes and per-device methods, one subclass per device).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional, Tuple

# Every record has exactly these fields; ``None`` is allowed where the comment says so.
FIELDS = {
    "label": "what the backend's device is called in messages",
    "hardware": "None (runs anywhere) or how the probe shows the device: pci_count (kunpeng_accelerators.pci key), "
                "section and devices (probe section and its device list), device (its name), tool (its CLI), "
                "pci (the functions that count as the device: vendor id, classes (class-code prefixes, or None for "
                "any) and device_ids (or None for any); pci.py lists them under the section's name)",
    "visible": "None (no device selection) or the visible-devices variable: section, devices, id_keys (the device "
               "keys an id may name), variable (the environment variable)",
    "driver": "None (no driver) or the driver role: role, fact (the role's report fact), reboot_variable, "
              "reboot_what, env_file_key (key of the fact naming its environment file), group_key (key of the "
              "fact naming the device group the service must join, or None)",
    "engine_dists": "install method -> distributions whose recorded version proves the install finished",
    "engine_dist": "install method -> the engine distribution whose version decides whether the pip steps run again",
    "target_device": "VLLM_TARGET_DEVICE of a source build",
    "device_nodes": "DeviceAllow entries of the service when the driver reports none (empty: PrivateDevices=yes)",
    "service_environment": "fixed environment of the service",
    "exporter": "None or the vendor metrics exporter: name, variable (its package variable), job (Prometheus job; "
                "the monitoring role's port variable is monitoring_<job>_exporter_port), port (its default port)",
    "smaller_formats": "weight formats the capacity planner may propose when the model does not fit",
    "venv_gib": "disk an engine virtualenv of the backend takes (measured, rounded up), checked before the install",
    "ray_version": "the Ray release the multi-node Ray units install (pinned where the backend's upstream pins it)",
    "multinode_moe": "None (one replica over the nodes, tensor x pipeline parallel) or how a mixture-of-experts model "
                     "spans nodes (or one large host) as data parallel replicas with expert parallelism: "
                     "replica_tensor_parallel (the tensor-parallel sizes of one replica in the order the planner tries, "
                     "first fitting wins), single_node_min_devices (the fewest devices of one host that get replicas "
                     "when the model needs the whole host), env (what every member's engine adds) and optionally "
                     "pipeline_expert_parallel (False: pipeline stages over nodes run without expert parallelism)",
    "container": "what a container of the engine gets (vllm_install_method container, plan/container.py): "
                 "per_device (runtime -> flag and value per visible device index, or joined: one flag for all), "
                 "devices (shared device nodes), mounts (host driver files, mounted read-only at the same path), "
                 "group_add (None, or driver: the container's user joins the driver's device group by its host GID)",
    "version_variable": "the role variable (without vllm_) that engine_version pins: vllm_version or vllm_ascend_version",
    "source_engine_step": "index of the install step a source build replaces with vllm_source_url",
    "install_hooks_after": "task files of the vllm role that run after the pip steps",
    "build_toolchain": "None, or why the host needs the full build toolchain even for released wheels",
    "rdma": "whether cluster members may use RDMA between them",
    "cache_env": "environment variable -> folder under the pod's cache volume (Kubernetes export)",
    "runtime_env": "service environment variable -> key of the settings the backend's runtime() derives from the probe",
}


class BackendMissing(NotImplementedError):
    """A decision the backend does not implement: the plan refuses it by the backend's name."""


class Backend:
    """One backend: ``name``, the record of :data:`FIELDS` and the decisions the plan asks of it.

    The methods below are the interface; each refuses until a subclass overrides it.  The contract test
    (tests/unit/plugins/module_utils/backends/test_contract.py) calls every method of every backend on that
    backend's probe fixture.
    """

    name = ""
    # Where the backend stands among the registry's names (choices, messages, surveys); a class without a
    # name (Device) is a base, not a backend.
    rank = 100
    record: Dict[str, Any] = {}
    # The facts the backend adds (fact_fields.Field shapes, plugins/module_utils/fact_contract.py builds
    # kunpeng_accelerators and the driver facts from them): the keys of its probe section (record
    # hardware.section), what it adds to the PCI section beyond the functions and count probe/pci.py lists
    # for it, the keys of its driver role's report fact (record driver.fact) and the file that sets that fact.
    probe_keys: Dict[str, Any] = {}
    pci_keys: Dict[str, Any] = {}
    driver_keys: Dict[str, Any] = {}
    driver_fact_from = ""
    # The driver role's value rules, variable -> None or a rule input_check.py names (plan/input_check.py
    # _declared_rule): one per variable of the role's meta/argument_specs.yml.
    driver_rules: Dict[str, Any] = {}

    def __init__(self) -> None:
        for key, value in self.record.items():
            setattr(self, key, value)

    def _missing(self, method: str) -> BackendMissing:
        return BackendMissing(f"backend {self.name}: no {method} (plugins/module_utils/backends/{self.name}.py)")

    # --- the probe and the matrix ------------------------------------------------------------

    def probe(self, runner: Any, params: Dict[str, Any], arch: Optional[str], pci: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The backend's section of kunpeng_accelerators (record ``hardware.section``), or ``None`` without a device.

        ``runner`` runs the vendor tool (``find_tool``, ``query`` with a parser from the backend's probe module,
        ``warn``: plugins/modules/accelerator_facts.py ``Runner``); ``params`` are that module's options."""
        raise self._missing("probe")

    def series(self, facts: Dict[str, Any]) -> Optional[str]:
        """The device series the probe shows (Atlas A2, ...) or ``None`` where the backend has no series."""
        raise self._missing("series")

    def select(self, params: Dict[str, Any], facts: Dict[str, Any], caps: List[str],
               notes: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[Dict[str, Any]]]:
        """The matrix row for the request and the probe, the requirements the driver role reads, and where the
        engine comes from when that is not PyPI (``None`` otherwise); notes what was not checked."""
        raise self._missing("select")

    def engine_version(self, row: Dict[str, Any]) -> str:
        """The release the role names its virtualenv after."""
        raise self._missing("engine_version")

    def install_steps(self, row: Dict[str, Any], architecture: Optional[str] = None,
                      series: Optional[str] = None) -> List[Dict[str, Any]]:
        """The pip calls that install a row, in order (plan/compat_matrix.py ``step`` builds each)."""
        raise self._missing("install_steps")

    def packages(self, row: Dict[str, Any], series: Optional[str] = None) -> List[str]:
        """The pinned engine packages of a row, in install order."""
        raise self._missing("packages")

    def wheelhouse_row(self, vllm_version: str, python_version: str) -> Dict[str, Any]:
        """The row a controller-side wheelhouse (kunpeng.vllm.wheelhouse) resolves."""
        raise self._missing("wheelhouse_row")

    # --- the model -----------------------------------------------------------------------------

    def fp8_mode(self, weight_dtype: Optional[str], caps: List[str]) -> str:
        """native / weight_only / none / unknown for FP8 weights; raises where FP8 cannot run."""
        raise self._missing("fp8_mode")

    def serve_dtype(self, facts: Dict[str, Any], model: Optional[Dict[str, Any]],
                    requested: Dict[str, Any]) -> Tuple[Optional[str], str]:
        """``(--dtype or None, reason)`` the plan serves the model in; ``None`` leaves vLLM's (or the series') choice."""
        raise self._missing("serve_dtype")

    def plan_capacity(self, model: Dict[str, Any], hw: Dict[str, Any], requested: Dict[str, Any],
                      options: Dict[str, Any], notes: List[str]) -> Optional[Dict[str, Any]]:
        """plan/capacity.py's answer for the model on this hardware, or ``None`` (with a note) when unknown."""
        raise self._missing("plan_capacity")

    def engine_args(self, model: Optional[Dict[str, Any]], result: Optional[Dict[str, Any]],
                    engine_args: Dict[str, Any], hw: Dict[str, Any], notes: List[str]) -> Dict[str, Any]:
        """The engine options the backend adds to the capacity planner's (quantization, ...)."""
        raise self._missing("engine_args")

    # --- the install ---------------------------------------------------------------------------

    def check_request(self, arch: str, request: Dict[str, Any], has_torch_source: bool) -> None:
        """Refuse, before any change, an install request the backend cannot carry out."""
        raise self._missing("check_request")

    def runtime(self, facts: Dict[str, Any], requested: Dict[str, Any], request: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Settings the engine's service derives from the probe (the CPU's OpenMP binding), or ``None``."""
        raise self._missing("runtime")

    def container_problems(self, labels: Dict[str, str], host: Dict[str, Any]) -> List[str]:
        """What an engine image's labels need of the host's driver that the host lacks (plan/container.py).

        ``host``: ``architecture`` (Ansible's fact) and ``accelerators`` (the probe, kunpeng_accelerators), whose
        section of this backend holds the driver's versions."""
        raise self._missing("container_problems")

    # --- several nodes ---------------------------------------------------------------------------

    def layout_problem(self, tp: int, pp: int, executor: str) -> Optional[str]:
        """Why the backend's engine cannot run a replica of ``tp`` x ``pp`` with ``executor`` over nodes, or ``None``."""
        raise self._missing("layout_problem")

    def devices_per_node(self, count: int) -> int:
        """The devices a replica may take on one node."""
        raise self._missing("devices_per_node")

    def network_env(self, interface: str, address: str) -> Dict[str, str]:
        """The collective library's environment of a cluster member (its interface and address)."""
        raise self._missing("network_env")

    def ray_resources(self, count: int) -> List[str]:
        """``ray start`` options that give a node's devices to Ray."""
        raise self._missing("ray_resources")

    def ray_env(self) -> Dict[str, str]:
        """The environment of a Ray node and of the engine's Ray client."""
        raise self._missing("ray_env")

    # --- Kubernetes --------------------------------------------------------------------------------

    def k8s_resource(self, plan: Dict[str, Any], overrides: Dict[str, str]) -> Tuple[Optional[str], Dict[str, str]]:
        """The device plugin's extended resource and the node labels of the plan's device (None, {} without one)."""
        raise self._missing("k8s_resource")

    def k8s_multinode_problem(self) -> Optional[str]:
        """Why the Kubernetes export cannot render a plan of this backend over several nodes, or ``None``."""
        raise self._missing("k8s_multinode_problem")


METHODS: List[str] = sorted(name for name, value in vars(Backend).items()
                            if callable(value) and not name.startswith("_"))


def version_tuple(text: str) -> Tuple[int, ...]:
    """``podman version 4.3.1`` or ``4.9.3-dev`` -> (4, 3, 1); () when no version is in ``text``."""
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not found:
        return ()
    return tuple(int(part) for part in found.groups() if part is not None)
