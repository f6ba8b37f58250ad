# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The ``ascend`` backend: vllm-ascend on Huawei Ascend NPUs (Atlas series), the ascend role's driver and CANN."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
import json
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import version_tuple
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.device import Device, refuse_host_torch
from ansible_collections.kunpeng.vllm.plugins.module_utils.fact_fields import FLOAT, DICT, PCI_FUNCTION, _bool, _dicts, _f, _int, _nstr, _str, _strs
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import ascend_plan, compat_matrix
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.vllm_requirements import COMMON_REQUIREMENTS
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import chips
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import npu_smi
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.kv_files import get_ci, parse_kv_text, read_text

# The image label naming the CANN release the image's user space was built for (plan/container.py).
LABEL_CANN = "io.kunpeng.vllm.cann-version"

# Extended resource and node labels per Atlas series.
# - huawei.com/Ascend910 (Atlas A2 and A3) and huawei.com/Ascend310P (Atlas 300I Duo): the resource names Huawei's
#   Ascend Device Plugin (MindCluster, https://gitcode.com/Ascend/mind-cluster component/ascend-device-plugin)
#   reports to the kubelet; its 310P constant is NPU310PCardName = "huawei.com/Ascend310P".  CCE's NPU add-on
#   reports the same names.  Virtualised or shared NPUs (vNPU templates, HAMi) use other names
#   (huawei.com/Ascend310P-memory, huawei.com/Ascend910C, ...): set vllm_k8s_resource_names.
# - accelerator=huawei-Ascend910 / huawei-Ascend310P: the node label MindCluster's Ascend Device Plugin sets
#   (MindCluster scheduling guide, "Native Kubernetes Objects", table "Node Labels",
#   https://www.hiascend.com/document/detail/en/mindcluster/730/clustersched/schedulingug/dlug_api_039.html).
K8S_RESOURCES: Dict[str, str] = {
    "A2": "huawei.com/Ascend910",
    "A3": "huawei.com/Ascend910",
    "300I Duo": "huawei.com/Ascend310P",
}
K8S_NODE_LABELS: Dict[str, Dict[str, str]] = {
    "A2": {"accelerator": "huawei-Ascend910"},
    "A3": {"accelerator": "huawei-Ascend910"},
    "300I Duo": {"accelerator": "huawei-Ascend310P"},
}


# The data-parallel layouts vllm-ascend's tutorials run for mixture-of-experts models, by (nodes, NPUs per node,
# tensor parallel, data parallel), each with the tutorial and section it follows (docs/source/tutorials/models/ of
# vllm-project/vllm-ascend, v0.13.0 and later; DeepSeek-V3.1.md runs the same layouts for its W8A8 weights).
TUTORIAL_LAYOUTS: Dict[Tuple[int, int, int, int], str] = {
    (1, 16, 4, 4): "vllm-ascend's DeepSeek-R1 tutorial (DeepSeek-R1.md, \"Single-Node Online Deployment\": one Atlas 800 "
                   "A3, --data-parallel-size 4 --tensor-parallel-size 4 --enable-expert-parallel)",
    (2, 8, 4, 4): "vllm-ascend's DeepSeek-R1 tutorial (DeepSeek-R1.md, \"Multi-Node Data Parallel Deployment\": two "
                  "Atlas 800 A2, --data-parallel-size 4 --data-parallel-size-local 2 --tensor-parallel-size 4 "
                  "--enable-expert-parallel)",
    (2, 8, 8, 2): "vllm-ascend's Qwen3-235B-A22B tutorial (Qwen3-235B-A22B.md, \"Multi-node Deployment with MP\": "
                  "--data-parallel-size 2 --data-parallel-size-local 1 --tensor-parallel-size 8 --enable-expert-parallel)",
}


def layout_tutorial(nodes: int, per_node: int, tp: int, dp: int) -> str:
    """Which of vllm-ascend's tutorials a data-parallel layout follows, or the rule it extends where none runs it."""
    named = TUTORIAL_LAYOUTS.get((nodes, per_node, tp, dp))
    if named:
        return f"the layout of {named}"
    return ("no vllm-ascend tutorial runs this exact layout; it extends their rule (replicas of tensor parallel 4 "
            "first, expert parallelism over all of them, DeepSeek-R1.md and DeepSeek-V3.1.md)")


def atlas_source(row: Dict[str, Any], series: Optional[str], request: Optional[Dict[str, Any]],
                 notes: List[str]) -> Optional[Dict[str, Any]]:
    """Where the host's vllm-ascend comes from (:func:`compat_matrix.atlas_install`), with ``wheelhouse`` set when a
    build the PyPI wheel cannot replace comes from the operator's wheelhouse; refuses such a series without one.

    In container mode it comes from upstream's image for the series (``image``: its tag), which carries that
    build: nothing is refused for the PyPI wheel, and the operator pins the tag's digest in vllm_container_image.
    """
    install = compat_matrix.atlas_install(row, series)
    if install is None:
        return None
    install.update(wheelhouse=False, image="")
    if (request or {}).get("install_method") == "container":
        install.update({"from": compat_matrix.CONTAINER_IMAGE, "image": compat_matrix.upstream_image(row, series)})
        notes.append(f"Atlas {series} in container mode: upstream's image for it is {install['image']} (vllm-ascend's "
                     "installation guide, \"Set up using Docker\"). No public record gives that tag's digest: pull it and "
                     f"pin it in vllm_container_image as {compat_matrix.ASCEND_IMAGE_REPOSITORY}@sha256:<digest> "
                     "(the container plan refuses an unpinned reference before any change).")
        return install
    if install["from"] == compat_matrix.SOC_BUILD:
        if not (request or {}).get("wheelhouse_requirements"):
            raise CompatError(compat_matrix.build_refusal(row, install))
        install["wheelhouse"] = True
        notes.append(f"Atlas {series}: vllm-ascend {row['vllm_ascend']} comes from the wheelhouse "
                     f"(vllm_wheelhouse_requirements); it must be the build with SOC_VERSION={install['soc_version']}, "
                     "the PyPI wheel is the A2 build.")
    return install


def _ascend_versions(params: Dict[str, Any], arch: Optional[str]) -> Dict[str, Any]:
    root = params["ascend_root"]
    toolkit_dir = os.path.join(root, "ascend-toolkit", "latest")
    candidates = []
    if arch:
        candidates.append(os.path.join(toolkit_dir, f"{arch}-linux", "ascend_toolkit_install.info"))
    try:
        candidates.extend(sorted(os.path.join(toolkit_dir, name, "ascend_toolkit_install.info")
                                 for name in os.listdir(toolkit_dir) if name.endswith("-linux")))
    except OSError:
        pass
    toolkit: Dict[str, str] = {}
    toolkit_path: Optional[str] = None
    for candidate in candidates:
        text = read_text(candidate)
        if text is not None:
            toolkit, toolkit_path = parse_kv_text(text), candidate
            break
    return {
        "driver": parse_kv_text(read_text(os.path.join(root, "driver", "version.info"))),
        "firmware": parse_kv_text(read_text(os.path.join(root, "firmware", "version.info"))),
        "install_info": parse_kv_text(read_text(params["ascend_install_info"])),
        "toolkit": toolkit,
        "toolkit_info_path": toolkit_path,
    }


def _device_from_table(row: Dict[str, Any]) -> Dict[str, Any]:
    device = {
        "npu_id": row.get("npu_id"), "chip_id": row.get("chip_id"), "logic_id": None,
        "phy_id": row.get("phy_id"), "device_id": row.get("device_id"), "name": row.get("name") or None,
        "health": row.get("health"), "error_code": None, "bus_id": row.get("bus_id"),
        "power_w": row.get("power_w"), "temp_c": row.get("temp_c"), "aicore_percent": row.get("aicore_percent"),
        "hbm_total_mib": row.get("hbm_total_mib"), "hbm_used_mib": row.get("hbm_used_mib"),
        "memory_total_mib": row.get("memory_total_mib"), "memory_used_mib": row.get("memory_used_mib"),
    }
    device["device_memory_mib"] = npu_smi.device_memory_mib(device)
    return device


def probe_ascend(runner: Any, params: Dict[str, Any], arch: Optional[str]) -> Dict[str, Any]:
    versions = _ascend_versions(params, arch)
    tool = runner.find_tool("npu-smi")
    findings: List[str] = []
    result: Dict[str, Any] = {
        "tool": tool, "source": None, "npu_smi_version": None, "table_layout": None,
        "versions": versions, "npu_count": 0, "chip_count": 0,
        "devices": [], "boards": [], "processes": [], "findings": findings,
    }
    table = listing = mapping = None
    boards: Dict[int, Dict[str, Any]] = {}
    devices: List[Dict[str, Any]] = []
    if tool:
        table = runner.query(tool, ["info"], npu_smi.parse_info_table, findings)
        listing = runner.query(tool, ["info", "-l"], npu_smi.parse_info_list, findings)
        mapping = runner.query(tool, ["info", "-m"], npu_smi.parse_info_mapping, findings)
        table_rows = dict(((row["npu_id"], row["chip_id"]), row) for row in (table or {}).get("devices", []))
        chips: List[Dict[str, Any]] = []
        if mapping:
            chips = [chip for chip in mapping if chip["compute"]]
        elif listing:
            chips = [{"npu_id": npu["npu_id"], "chip_id": chip, "logic_id": None, "phy_id": None, "name": None}
                     for npu in listing["npus"] for chip in range(npu["chip_count"] or 1)]
        if chips:
            result["source"] = "key-value"
            for npu_id in sorted(set(chip["npu_id"] for chip in chips)):
                board = runner.query(tool, ["info", "-t", "board", "-i", str(npu_id)], npu_smi.parse_board, findings)
                if board:
                    board["npu_id"] = npu_id
                    boards[npu_id] = board
            for chip in chips:
                ids = ["-i", str(chip["npu_id"]), "-c", str(chip["chip_id"])]
                health = runner.query(tool, ["info", "-t", "health"] + ids, npu_smi.parse_health, findings) or {}
                usages = runner.query(tool, ["info", "-t", "usages"] + ids, npu_smi.parse_usages, findings) or {}
                row = table_rows.get((chip["npu_id"], chip["chip_id"]), {})
                device = _device_from_table(row)
                device.update({"npu_id": chip["npu_id"], "chip_id": chip["chip_id"], "logic_id": chip.get("logic_id")})
                device["name"] = chip.get("name") or device["name"]
                device["phy_id"] = chip.get("phy_id") if chip.get("phy_id") is not None else device["phy_id"]
                if health.get("health"):
                    device["health"] = health["health"]
                    device["error_code"] = health.get("error_code")
                if usages.get("hbm_capacity_mib"):
                    device["hbm_total_mib"] = usages["hbm_capacity_mib"]
                if usages.get("ddr_capacity_mib"):
                    device["memory_total_mib"] = usages["ddr_capacity_mib"]
                board = boards.get(chip["npu_id"], {})
                if not device["bus_id"] and board.get("bus_id") and (board.get("chip_count") or 1) == 1:
                    device["bus_id"] = board["bus_id"]
                device["device_memory_mib"] = npu_smi.device_memory_mib(device)
                devices.append(device)
        elif table:
            result["source"] = "table"
            devices = [_device_from_table(row) for row in table["devices"]]
    if table:
        result["npu_smi_version"] = table["version"]
        result["table_layout"] = table["layout"]
        result["processes"] = table["processes"]
    first_board = boards[min(boards)] if boards else {}
    result["devices"] = devices
    result["boards"] = [boards[key] for key in sorted(boards)]
    result["chip_count"] = len(devices)
    result["npu_count"] = listing["total_count"] if listing else len(set(d["npu_id"] for d in devices))
    result["driver_version"] = get_ci(versions["driver"], "Version") or first_board.get("software_version")
    result["firmware_version"] = get_ci(versions["firmware"], "Version") or first_board.get("firmware_version")
    result["cann_version"] = get_ci(versions["toolkit"], "version")
    return result


# torch_npu's device total, which vllm-ascend multiplies by gpu_memory_utilization (``requested_memory`` in
# vllm_ascend/worker/worker.py), against npu-smi's capacity.  From upstream logs, not measured here:
# * Atlas A2 64 GB: npu-smi 65,536 MiB, torch_npu 65,452,113,920 B (60.96 GiB; "total memory: 65452113920" in
#   vllm-ascend issues #3843 and #4404, "(27.18/60.96 GiB)" in #8621): 3,115.6 MiB (4.75 %) less;
# * Atlas 300I Duo (310P3): npu-smi 44,278 MB of DDR per chip (vllm-ascend issue #14274), torch_npu 43.24 GiB
#   (issue #14004), the same figure;
# * Atlas A2 32 GB and A3 (64 GB per chip): no log found; the A2 64 GB's reservation is taken whole or as a share of
#   the capacity, whichever is larger (a 32 GB A2 keeps 3,115.6 MiB back, not half of it).
A2_64G_NPU_SMI_MIB = 65536
A2_64G_TORCH_NPU_BYTES = 65452113920
A2_RESERVED_MIB = A2_64G_NPU_SMI_MIB - A2_64G_TORCH_NPU_BYTES / 2 ** 20
# vLLM's profiling on an NPU (activation peak, HCCL buffers, graph capture) has not been measured on a host of this
# project: the plan keeps 3 % of each device's budget back instead of planning to the exact KV limit.
UNMEASURED_SAFETY = 0.03


# Atlas 300I Duo (310P): vllm-ascend builds its attention masks as wide as the context unless torch-npu has the
# compressed-mask kernels (vllm_ascend/_310p/attention/attention_mask.py: AttentionMaskBuilder310 takes
# max_model_len as max_seqlen; gen_causal_additive_mask makes a max_seqlen x max_seqlen float16 mask for the causal
# mask and again for the chunked-prefill (SplitFuse) mask; only when is_compressed_mask_supported() finds
# torch_npu._npu_flash_attention_v3 and _npu_paged_attention_splitfuse_v2 are both a fixed 2048 x 2048).  The plan
# cannot know the torch-npu the node will run, so it counts both: 2 masks x 2 bytes per max_model_len squared
# (32,768 tokens: 4 GiB of a 44 GB chip).
DUO_SQUARE_MASK_BYTES = 2 * 2
DUO_SQUARE_MASK_SOURCE = ("vllm-ascend's 310P causal and chunked-prefill masks, max_model_len x max_model_len float16 "
                          "each unless torch-npu has the compressed-mask kernels, vllm_ascend/_310p/attention/attention_mask.py")


def _atlas_basis(ratio: float, reserved_mib: float, source: str, square_mask_bytes: int = 0,
                 square_mask_source: str = "") -> Dict[str, Any]:
    return {"ratio": ratio, "reserved_mib": reserved_mib, "driver_reserved_fraction": 0.0,
            "safety_fraction": UNMEASURED_SAFETY, "measured": False, "source": source,
            "square_mask_bytes": square_mask_bytes, "square_mask_source": square_mask_source}


_A2_RULE = (A2_64G_TORCH_NPU_BYTES / (A2_64G_NPU_SMI_MIB * 2 ** 20), A2_RESERVED_MIB)
MEMORY_BASIS: Dict[Optional[str], Dict[str, Any]] = {
    "A2": _atlas_basis(*_A2_RULE, "torch_npu's total, 65,452,113,920 B on a 64 GB A2 in vllm-ascend issues #3843 and #4404; "
                                  "a 32 GB A2 keeps the same 3,115.6 MiB back"),
    "A3": _atlas_basis(*_A2_RULE, "no upstream log: the 64 GB A2's torch_npu total (vllm-ascend issues #3843, #4404) per chip"),
    "300I Duo": _atlas_basis(1.0, 0.0, "torch_npu's total equals npu-smi's DDR capacity (vllm-ascend issues #14004, #14274)",
                             DUO_SQUARE_MASK_BYTES, DUO_SQUARE_MASK_SOURCE),
    None: _atlas_basis(*_A2_RULE, "unknown Atlas series: the 64 GB A2's reservation (vllm-ascend issues #3843, #4404)"),
}


class Ascend(Device):
    name = "ascend"
    rank = 2
    memory_basis = MEMORY_BASIS
    record: Dict[str, Any] = {
        "label": "Ascend NPU",
        "hardware": {"pci_count": "ascend_count", "section": "ascend", "devices": "devices", "device": "Ascend NPU",
                     "tool": "npu-smi",
                     # Huawei's vendor id also covers the Kunpeng SoC's NICs, SAS and RoCE functions: only the
                     # device ids of the chip table (probe/chips.py) are NPUs.
                     "pci": {"vendor": chips.HUAWEI_VENDOR, "classes": None,
                             "device_ids": tuple(row.device_id for row in chips.CHIPS)}},
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
        "exporter": {"name": "npu-exporter", "variable": "monitoring_npu_exporter_package", "job": "npu", "port": 8082},
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
        # EP+PP2*TP8", and #10910, "Ray multi-node PP and DP fails but TP works").  Replicas of tensor parallel 4
        # first (upstream's layout on A2 pairs and on one A3), then 8 (one replica per A2 node, as
        # Qwen3-235B-A22B.md's "Multi-node Deployment with MP" runs it), then smaller, then a whole 16-NPU host.
        # One host runs data parallel replicas only from 16 NPUs (Atlas 800 A3) and only when the model needs the
        # whole host: DeepSeek-R1.md and DeepSeek-V3.1.md, "Single-Node Online Deployment" on 1 Atlas 800 A3, run
        # data parallel 4 x tensor parallel 4 ("we recommend using dp4tp4 instead of dp2tp8"); an 8-NPU A2 host
        # keeps one tensor-parallel 8 replica, as Qwen3-235B-A22B.md's single-node deployment runs it.
        "multinode_moe": {
            "replica_tensor_parallel": [4, 8, 2, 1, 16],
            "single_node_min_devices": 16,
            # Pipeline stages over nodes need Ray, and Ray with expert parallelism through pipeline stages fails
            # (vllm-ascend issue #3529: EP + PP2 x TP8 fails to start, starts without EP; #10910: Ray multi-node PP
            # fails): such a layout, the planner's fallback or a misfit's fix, runs without expert parallelism.
            "pipeline_expert_parallel": False,
            # The environment both nodes export in DeepSeek-R1.md (v0.13.0 and later), plus the NPU caching
            # allocator's expandable segments that upstream's data-parallel launcher exports
            # (vllm-project/vllm-ascend examples/external_online_dp/run_dp_template.sh).
            "env": {"HCCL_BUFFSIZE": "200", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1",
                    "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"},
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
        "version_variable": "vllm_ascend_version",
        # vLLM without device code is the first step; the NPU stack comes after it.
        "source_engine_step": 0,
        "install_hooks_after": [],
        # Huawei CANN installation guide, "Installing Dependencies": the toolkit installer needs them.
        "build_toolchain": "the Ascend CANN toolkit installer needs the build toolchain",
        "rdma": True,
        # CANN's process logs (ASCEND_PROCESS_LOG_PATH) go to the cache volume: the root file system is read-only.
        "cache_env": {"ASCEND_PROCESS_LOG_PATH": "ascend-log"},
        "runtime_env": {},
    }

    # kunpeng_accelerators: the keys of the probe section (hardware.section), and what the PCI section adds to
    # the functions and count pci.py lists for every device backend.
    probe_keys = {
        "tool": _nstr(),
        "source": _nstr(),
        "npu_smi_version": _nstr(),
        "table_layout": _nstr(),
        "driver_version": _nstr(),
        "firmware_version": _nstr(),
        "cann_version": _nstr(),
        "versions": _f(DICT, keys={
            "driver": _f(DICT, open_keys=True),
            "firmware": _f(DICT, open_keys=True),
            "install_info": _f(DICT, open_keys=True),
            "toolkit": _f(DICT, open_keys=True),
            "toolkit_info_path": _nstr(),
        }),
        "npu_count": _int(),
        "chip_count": _int(),
        "devices": _dicts({
            "npu_id": _int(),
            "chip_id": _int(nullable=True),
            "logic_id": _int(nullable=True),
            "phy_id": _int(nullable=True),
            "device_id": _int(nullable=True),
            "name": _nstr(),
            "health": _nstr(),
            "error_code": _nstr(),
            "bus_id": _nstr(),
            "power_w": _f(FLOAT, nullable=True),
            "temp_c": _f(FLOAT, nullable=True),
            "aicore_percent": _f(FLOAT, nullable=True),
            "hbm_total_mib": _int(nullable=True),
            "hbm_used_mib": _int(nullable=True),
            "memory_total_mib": _int(nullable=True),
            "memory_used_mib": _int(nullable=True),
            "device_memory_mib": _int(nullable=True),
        }),
        "boards": _dicts({
            "npu_id": _int(),
            "product_name": _nstr(),
            "software_version": _nstr(),
            "firmware_version": _nstr(),
            "compatibility": _nstr(),
            "bus_id": _nstr(),
            "vendor_id": _nstr(),
            "device_id": _nstr(),
            "chip_count": _int(nullable=True),
        }),
        "processes": _dicts({
            "npu_id": _int(),
            "chip_id": _int(nullable=True),
            "pid": _int(),
            "name": _nstr(),
            "memory_mib": _int(nullable=True),
        }),
        "findings": _strs(),
    }
    pci_keys = {"ascend": _dicts(dict(PCI_FUNCTION, chip=_str(), product=_nstr())), "ascend_chips": _strs()}
    # The driver role's report fact (driver.fact): its keys and where it is set.
    driver_keys = {
        "driver_version": _nstr(),
        "firmware_version": _nstr(),
        "cann_version": _nstr(),
        "kernels_version": _nstr(),
        "nnal_version": _nstr(),
        "nnal_installed": _bool(),
        "env_file": _str(),
        "series": _nstr(),
        "changed": _strs(),
        "reboot_required": _bool(),
        # A reboot the role left for later, and the driver's group the service
        # user must join (Huawei's CANN Software Installation Guide, "Preparing
        # Installation and Running Users"); '' when installed for all users.
        "reboot_pending": _bool(),
        "device_group": _str(),
        "device_nodes": _strs(),
    }
    driver_fact_from = "plugins/modules/ascend_plan.py"
    # The driver role's value rules (plugins/module_utils/plan/input_check.py names them), one per variable of its
    # meta/argument_specs.yml: None where argument validation is enough.
    driver_rules = {
        "ascend_packages": ("dict_of_text",),
        "ascend_package_source": None,
        "ascend_package_dir": ("opt_path",),
        "ascend_package_base_url": ("url",),
        "ascend_package_validate_certs": None,
        "ascend_staging_dir": ("path",),
        "ascend_install_path": ("path",),
        "ascend_install_user": ("account",),
        "ascend_install_group": ("account",),
        "ascend_series": None,
        "ascend_install_timeout": ("int_range", 60, 86400),
        "ascend_driver_prereq_check": None,
        "ascend_reboot": None,
        "ascend_reboot_timeout": ("int_range", 60, 86400),
        "ascend_verify_devices": None,
        "ascend_log_fetch_dir": ("controller_path",),
        "ascend_env_file": ("path",),
        "ascend_nnal_cxx_abi": None,
        "ascend_probe_options": ("dict_of_text",),
    }

    def series(self, facts: Dict[str, Any]) -> Optional[str]:
        return compat_matrix.atlas_series(facts)

    def select(self, params: Dict[str, Any], facts: Dict[str, Any], caps: List[str],
               notes: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[Dict[str, Any]]]:
        series = params["atlas_series"]
        compat_matrix.check_atlas_series(series)
        installed = (facts.get("ascend") or {}).get("cann_version")
        supplied, source = ascend_plan.supplied_cann(params.get("ascend_packages") or {})
        cann = supplied or installed
        row = compat_matrix.select_ascend(params["vllm_version"], params["vllm_ascend_version"], cann,
                                          params["python_version"], params["torch_npu_version"], params["distribution"],
                                          cann_source=source, atlas_series=series)
        notes.extend(compat_matrix.check_atlas_series(series, row))
        atlas = atlas_source(row, series, params.get("request"), notes)
        if supplied and not (installed and compat_matrix.version_cmp(supplied, installed) == 0):
            notes.append(f"CANN {supplied} from {source} (installed now: {installed or 'none'}); vllm-ascend "
                         f"{row['vllm_ascend']} needs CANN {row['cann']}.")
        elif not facts and not supplied:
            notes.append(f"No probe facts: CANN not checked; vllm-ascend {row['vllm_ascend']} needs CANN {row['cann']}.")
        elif not cann:
            notes.append(f"CANN is not installed yet; vllm-ascend {row['vllm_ascend']} needs CANN {row['cann']}.")
        requirements = {"python": row["python_range"], "cann": row["cann"], "atlas_series": series}
        return row, requirements, atlas

    def engine_version(self, row: Dict[str, Any]) -> str:
        return row["vllm_ascend"]

    def install_steps(self, row: Dict[str, Any], architecture: Optional[str] = None,
                      series: Optional[str] = None) -> List[Dict[str, Any]]:
        """vllm-ascend's installation guide and Dockerfile: vLLM first, without device code and without its own torch
        pin (the wheel with ``--no-deps``; where a release has no wheel for the architecture pip builds the sdist, and
        ``VLLM_TARGET_DEVICE=empty`` makes that a build without device code); then what such a vLLM needs at run time
        (its ``requirements/common.txt``), resolved against the row's torch; then the NPU stack (torch, torch-npu,
        triton-ascend, vllm-ascend).  One call with ``vllm==V`` and the row's torch cannot resolve: every vLLM wheel
        pins a newer torch than its vllm-ascend release.  Where vllm-ascend caps a package below what vLLM asks for
        (vllm-ascend 0.18.0: opencv-python-headless <= 4.11.0.86, vLLM 0.18.0: >= 4.13.0), the last step wins, as in
        upstream's own image.  On an Atlas ``series`` without triton (300I Duo) the NPU stack leaves triton-ascend out.
        """
        step = compat_matrix.step
        return [
            step("vllm", [f"vllm=={row['vllm']}"], row, architecture, ["--no-deps"], {"VLLM_TARGET_DEVICE": "empty"}),
            step("vllm-requirements", [f"torch=={row['torch']}"] + list(COMMON_REQUIREMENTS[row["vllm"]]), row, architecture),
            step("npu-stack", compat_matrix.ascend_stack(row, series), row, architecture, source_builds=row.get("source_builds")),
        ]

    def packages(self, row: Dict[str, Any], series: Optional[str] = None) -> List[str]:
        return [f"vllm=={row['vllm']}"] + compat_matrix.ascend_stack(row, series)

    def wheelhouse_row(self, vllm_version: str, python_version: str) -> Dict[str, Any]:
        raise CompatError(f"backend {self.name} has no wheelhouse recipe; use cuda or cpu "
                          "(Ascend packages come with the vendor image)")

    def fp8_mode(self, weight_dtype: Optional[str], caps: List[str]) -> str:
        if weight_dtype == "fp8":
            raise CompatError("FP8 weights do not run on Ascend NPUs (Atlas A2/A3 have no FP8); use the BF16 or W8A8 weights "
                              "(for DeepSeek-V3/R1 the vllm-ascend W8A8 conversions on ModelScope) and set weight_dtype")
        return "none"

    def engine_args(self, model: Optional[Dict[str, Any]], result: Optional[Dict[str, Any]],
                    engine_args: Dict[str, Any], hw: Dict[str, Any], notes: List[str]) -> Dict[str, Any]:
        if not model:
            return engine_args
        if result and model["moe"] and engine_args.get("enable_expert_parallel"):
            if engine_args.get("data_parallel_size"):
                tp, dp = engine_args["tensor_parallel_size"], engine_args["data_parallel_size"]
                where = f"over {hw['nodes']} nodes" if hw["nodes"] > 1 else f"on one host of {hw['devices_per_node']} NPUs"
                notes.append(f"Data parallel {dp} x tensor parallel {tp} with expert parallelism {where} (multiprocessing "
                             f"executor, no Ray): {layout_tutorial(hw['nodes'], hw['devices_per_node'], tp, dp)}.")
            else:
                notes.append("vllm-ascend's DeepSeek guides also run MoE models as data parallel attention with expert "
                             "parallelism (for example data_parallel_size 4, tensor_parallel_size 4 over two 8-card nodes).")
        if model["weight_dtype"] in ("w8a8", "w4a8"):
            engine_args["quantization"] = "ascend"
        return engine_args

    def check_request(self, arch: str, request: Dict[str, Any], has_torch_source: bool) -> None:
        refuse_host_torch(self.name, request)

    def container_problems(self, labels: Dict[str, str], host: Dict[str, Any]) -> List[str]:
        cann = labels.get(LABEL_CANN)
        have = (((host.get("accelerators") or {}).get(self.hardware["section"])) or {}).get("cann_version") or ""
        # The image carries its CANN user space; the host's driver must be the release line it was built
        # for (vllm-ascend installation guide: one HDK line per CANN release): major.minor must match.
        if cann and have and version_tuple(have)[:2] != version_tuple(cann)[:2]:
            return [f"the image is built for CANN {cann} ({LABEL_CANN}); the host has CANN {have}"]
        return []

    def network_env(self, interface: str, address: str) -> Dict[str, str]:
        return {"HCCL_SOCKET_IFNAME": interface, "HCCL_IF_IP": address, "TP_SOCKET_IFNAME": interface}

    def ray_resources(self, count: int) -> List[str]:
        return ["--resources=" + json.dumps({"NPU": count}, separators=(",", ":"))]

    def ray_env(self) -> Dict[str, str]:
        # Ray must not set ASCEND_RT_VISIBLE_DEVICES itself: vllm-ascend selects the NPUs.
        return {"RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1"}

    def k8s_resource(self, plan: Dict[str, Any], overrides: Dict[str, str]) -> Tuple[Optional[str], Dict[str, str]]:
        key = plan.get("atlas_series")
        names = dict(K8S_RESOURCES, **(overrides or {}))
        if key not in names:
            raise ValueError(f"no device plugin resource is known for the {self.name} plan (Atlas series {key!r}): set "
                             f"vllm_k8s_resource_names, for example {{'{key}': 'huawei.com/Ascend910'}}")
        return names[key], dict(K8S_NODE_LABELS.get(key) or {})

    def probe(self, runner: Any, params: Dict[str, Any], arch: Optional[str], pci: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        return probe_ascend(runner, params, arch)
