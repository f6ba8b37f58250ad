"""Container mode (vllm_install_method: container): the engine runs from an OCI image.

Every decision of the mode is a function here, table-tested in
tests/unit/plugins/module_utils/plan/test_container.py: which runtime runs the
image, whether a Quadlet file or a plain unit starts it, whether the image
reference is pinned, whether the image fits the host, and the argv of the
container.  The per-backend devices and mounts come from the backend registry
(plugins/module_utils/backends/, field ``container``).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import json
import re
import tarfile
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import ascend, cuda
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import version_tuple

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_PINNED = re.compile(r"^(?P<name>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})$")
# podman 4.4 brought Quadlet (podman-systemd.unit(5)), but the unit it generates runs the argv of the plain
# unit only from podman 4.8 on (containers/podman pkg/systemd/quadlet/quadlet.go, read at each tag):
# 4.4.0-4.4.2 add ``--runtime /usr/bin/crun`` to every container (removed in 4.4.3, commit 3d8936642e
# "Quadlet use crun specified in containers.conf"), and 4.4-4.7 add ``--read-only-tmpfs=false`` to
# ReadOnly=true, which drops the /run and /var/tmp tmpfs that ``--read-only`` of the plain unit keeps
# (4.8 leaves it to the ReadOnlyTmpfs key).  Older podman runs the plain unit.
QUADLET_SINCE = (4, 8)
# Where Quadlet reads a root unit's .container file (podman-systemd.unit(5), "Podman rootful unit search
# path"); systemd's generator writes <name>.service from <name>.container on daemon-reload.
QUADLET_DIR = "/etc/containers/systemd"
SYSTEMD_DIR = "/etc/systemd/system"
# [Container] keys newer than QUADLET_SINCE, with the release that brought them (the tag whose
# quadlet.go first lists the key in supportedContainerKeys) and the ``podman run`` flag PodmanArgs=
# (podman 4.4) passes instead on an older podman.  Every other key used here is in podman 4.8's
# supportedContainerKeys and its docs/source/markdown/podman-systemd.unit.5.md:
# ContainerName, Image, Network, User, Group, NoNewPrivileges, DropCapability, ReadOnly, EnvironmentFile,
# Volume, AddDevice, PodmanArgs, Exec (4.4), Tmpfs (4.5), Pull (4.6), ShmSize (4.7).  GroupAdd came in 5.1.
QUADLET_KEY_SINCE = {
    "Entrypoint": ((5, 0), "--entrypoint"),
    "StopTimeout": ((5, 0), "--stop-timeout"),
}
# How long the engine gets to stop before the runtime kills it (ExecStop of the plain unit, StopTimeout
# of the Quadlet file); systemd's TimeoutStopSec=60 of both units is above it.
STOP_TIMEOUT_S = 50
# The read-only root's /tmp (run_argv and the Quadlet file alike).
TMPFS_TMP = "/tmp:rw,nosuid,nodev,mode=1777"
# Processes and threads the engine's container may hold: a runaway (a fork
# bomb through a compromised worker) stops there instead of exhausting the
# host's PIDs.  vLLM's API server, engine core and per-device workers with
# torch's thread pools stay far below it on a 2-socket host of 256 cores;
# docker's default is no limit.
PIDS_LIMIT = 16384
# The container's memory (vllm_container_memory_limit): "auto" is the host's
# memory less a reserve for the system (sshd, journald, the agents, the page
# cache of the model files): a tenth of it, at least 2 GiB and at most 16 GiB.
# A runaway engine is then killed by the kernel inside its container instead
# of pushing the host into its own OOM killer; the runtimes' default is no
# limit.  Swap is capped at the same figure (no swap beyond the memory).
MEMORY_RESERVE_PART = 10  # a tenth
MEMORY_RESERVE_MIB = (2048, 16384)
# Below this an engine does not start (the API server and one worker).
MEMORY_MIN_MIB = 1024
# Its forms (the input check refuses any other before the play changes anything).
MEMORY_LIMIT = re.compile(r"^\s*(auto|none|[1-9][0-9]*[mg])\s*$", re.I)
# Labels an image of this collection declares (molecule/images/engine-oci.sh sets them); an image without
# them is checked on its architecture only.
LABEL_BACKEND = "io.kunpeng.vllm.backend"
LABEL_ENGINE = "io.kunpeng.vllm.engine-version"
# The driver labels are the backends' (backends/<backend>.py container_problems checks them).
LABEL_CANN = ascend.LABEL_CANN
LABEL_CUDA_DRIVER_MIN = cuda.LABEL_CUDA_DRIVER_MIN
# Ansible's architecture fact -> the OCI platform architecture.
_OCI_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# The runtime's package on the node when neither runtime is there (Debian and RHEL name it alike).
RUNTIME_PACKAGE = {"podman": "podman", "docker": "docker.io"}


class ContainerPlanError(ValueError):
    """A request the container mode refuses before anything changes; the message names the fix."""


# What container mode does not carry out, as (variable, its value in a supported request, why).  Each would
# otherwise be half-done without a word: the container unit has no Ray unit, cluster environment or member
# ordering (multi-node), the launcher of vllm_service_manager none runs the virtualenv's engine, and the
# engine artifacts and the host's torch are steps of the virtualenv install, which container mode skips.
UNSUPPORTED = (
    ("vllm_cluster_group", "",
     "a multi-node instance (vllm_cluster_group {value!r}) is not run from containers: the container unit has no "
     "Ray unit, cluster environment or member order. Serve it with vllm_install_method wheel or source, or leave "
     "vllm_cluster_group empty to serve one node"),
    ("vllm_service_manager", "systemd",
     "vllm_service_manager {value!r}: the container runs under its systemd unit; the launcher of "
     "vllm_service_manager none starts the virtualenv's engine"),
    ("vllm_engine_artifact_mode", "none",
     "vllm_engine_artifact_mode {value!r} packs or unpacks engine virtualenvs; the image is the artifact in "
     "container mode (vllm_container_archive)"),
    ("vllm_reuse_host_torch", False,
     "vllm_reuse_host_torch {value!r} puts the host's torch into a virtualenv; the image brings its own"),
)


def unsupported(settings: Dict[str, Any]) -> List[str]:
    """Why container mode refuses the request, one line per variable set to what it does not carry out.

    ``settings``: variable name -> value (a variable left out has its supported value).
    """
    problems = []
    for variable, supported, why in UNSUPPORTED:
        value = settings.get(variable, supported)
        if (value or supported) and value != supported:
            problems.append(f"vllm: vllm_install_method container: {why.format(value=value)}.")
    return problems


def choose_runtime(requested: str, podman_version: str, docker_version: str) -> Dict[str, Any]:
    """The runtime that runs the image and the package to install for it (None: already there).

    ``auto`` takes podman where it is installed, docker where only docker is (the host already runs it),
    and installs podman where neither is.  An explicit request is honoured, installing it when missing.
    """
    have = {"podman": bool(version_tuple(podman_version)), "docker": bool(version_tuple(docker_version))}
    if requested == "auto":
        runtime = "docker" if have["docker"] and not have["podman"] else "podman"
    elif requested in RUNTIME_PACKAGE:
        runtime = requested
    else:
        raise ContainerPlanError(f"vllm_container_runtime {requested!r}: choose auto, podman or docker")
    return {"runtime": runtime, "install_package": None if have[runtime] else RUNTIME_PACKAGE[runtime]}


def use_quadlet(runtime: str, podman_version: str) -> bool:
    """Whether a Quadlet ``.container`` file starts the engine (podman QUADLET_SINCE or later), else a plain unit."""
    version = version_tuple(podman_version)
    return runtime == "podman" and bool(version) and version >= QUADLET_SINCE


def pin_problem(image: str, archive_id: str, allow_unpinned: bool) -> Optional[str]:
    """Why the image reference is refused, or None.

    An image from an archive is pinned by the archive's content (its config digest, the image ID).  A
    registry reference must carry ``@sha256:<64 hex>``: a tag can move under a running instance and a
    rollback could not name what ran before.  ``vllm_container_allow_unpinned`` accepts a bare tag.
    """
    if archive_id:
        return None if DIGEST.match(archive_id) else f"vllm: the image archive has no sha256 image ID ({archive_id!r})"
    if not image:
        return "vllm: vllm_install_method container needs vllm_container_image (name@sha256:<digest>) or vllm_container_archive"
    if _PINNED.match(image) or allow_unpinned:
        return None
    return (f"vllm: vllm_container_image {image!r} is not pinned by digest: a tag can move under a running instance "
            "and a rollback could not name what ran. Pin it as <name>@sha256:<64 hex> (podman pull, then "
            "podman image inspect --format '{{.Digest}}' <name>), or set vllm_container_allow_unpinned: true "
            "to run the tag as it is.")


def oci_arch(architecture: str) -> str:
    """Ansible's architecture fact as an OCI platform architecture (unknown names pass through)."""
    return _OCI_ARCH.get(architecture, architecture)


def image_problems(image: Dict[str, Any], backend: str, host: Dict[str, Any]) -> List[str]:
    """What keeps the image from running on this host: architecture, backend, and what the backend's driver
    labels need (the backend's ``container_problems``: NVIDIA driver, CANN release).

    ``image``: architecture and labels (from the archive or ``<runtime> image inspect``).  ``host``:
    architecture (Ansible's fact) and accelerators (the probe, kunpeng_accelerators).  A label the image does
    not declare is not checked.
    """
    problems = []
    labels = image.get("labels") or {}
    want = oci_arch(host.get("architecture", ""))
    got = oci_arch(image.get("architecture", ""))
    if got and want and got != want:
        problems.append(f"the image is built for {got}, the host is {want}")
    declared = labels.get(LABEL_BACKEND)
    if declared and declared != backend:
        problems.append(f"the image declares backend {declared} ({LABEL_BACKEND}), the plan runs {backend}")
    return problems + backends.backend(backend).container_problems(labels, host)


def device_args(backend: str, runtime: str, visible: List[str]) -> List[str]:
    """The runtime arguments that give the container the backend's devices and driver files.

    ``visible``: the device indexes the instance may use (vllm_visible_devices resolved on the host's
    devices; every device of the host when vllm_visible_devices is empty).  The rows are the
    ``container`` field of the backend registry, where the sources are cited.
    """
    spec = backends.field(backend, "container")
    args: List[str] = []
    per_device = spec["per_device"].get(runtime)
    if per_device:
        if per_device.get("joined"):
            args += [per_device["flag"], per_device["joined"].format(ids=",".join(visible))]
        else:
            for index in visible:
                args += [per_device["flag"], per_device["value"].format(index=index)]
    for node in spec["devices"]:
        args += ["--device", node]
    for path in spec["mounts"]:
        args += ["--volume", f"{path}:{path}:ro"]
    return args


def group_args(backend: str, groups: List[str], gids: Dict[str, int]) -> List[str]:
    """``--group-add <gid>`` for each device group the backend's container joins.

    ``groups``: the driver's device groups the service joins (the venv unit's SupplementaryGroups=, empty
    when the driver is installed for all users); ``gids``: their GIDs on the host.  The runtimes look a
    group name up in the image's /etc/group, so the host's GID is passed.  A backend whose row has no
    ``group_add`` joins none.  Raises ContainerPlanError when a group is missing on the host.
    """
    if not backends.field(backend, "container").get("group_add"):
        return []
    args: List[str] = []
    for name in groups:
        if name not in gids:
            raise ContainerPlanError(
                f"vllm: the {backends.field(backend, 'label')} driver's group {name!r} is not on this host, so the "
                "container could not open the device nodes; run the driver role first (it creates the group).")
        args += ["--group-add", str(gids[name])]
    return args


def shm_size_mib(tensor_parallel: int, pipeline_parallel: int = 1) -> int:
    """The container's /dev/shm: 1 GiB, plus 1 GiB per worker beyond the first.

    vLLM's workers exchange tensors through shared memory; the runtimes' default is 64 MiB, which the
    vLLM docs say is too small (docs "Using Docker": --ipc=host or --shm-size).  vllm-ascend's quick start
    passes --shm-size=1g for one device.
    """
    workers = max(1, int(tensor_parallel)) * max(1, int(pipeline_parallel))
    return 1024 * workers


def memory_limit_mib(limit: str, host_total_mib: int) -> Optional[int]:
    """The container's memory limit in MiB (None: no limit) from vllm_container_memory_limit.

    ``limit``: ``auto`` (the host's memory less 1/MEMORY_RESERVE_PART of it, bounded by MEMORY_RESERVE_MIB),
    ``none``, or a size in the runtimes' syntax (``64g``, ``65536m``).  ``host_total_mib``: the host's memory
    (Ansible's memtotal_mb fact; 0 when unknown).  Raises ContainerPlanError for a value that is not one of
    those, below MEMORY_MIN_MIB, or above the host's memory.
    """
    value = str(limit if limit is not None else "auto").strip().lower()
    total = int(host_total_mib or 0)
    if not MEMORY_LIMIT.match(value):
        raise ContainerPlanError(
            f"vllm_container_memory_limit is {limit!r}: give auto (the host's memory less a reserve), none, or a "
            "size in MiB or GiB such as 65536m or 64g.")
    if value == "none":
        return None
    if value == "auto":
        if total <= 0:
            raise ContainerPlanError(
                "vllm_container_memory_limit is auto but the host's memory is unknown (gather facts, or set it "
                "to a size such as 64g, or to none for no limit).")
        reserve = min(MEMORY_RESERVE_MIB[1], max(MEMORY_RESERVE_MIB[0], total // MEMORY_RESERVE_PART))
        mib = total - reserve
        if mib < MEMORY_MIN_MIB:
            raise ContainerPlanError(
                f"vllm_container_memory_limit auto leaves the engine {mib} MiB of this host's {total} MiB after "
                f"the system's reserve of {reserve} MiB, below the {MEMORY_MIN_MIB} MiB an engine needs: set a size "
                "(such as 2g) or none.")
        return mib
    mib = int(value[:-1]) * (1024 if value.endswith("g") else 1)
    if mib < MEMORY_MIN_MIB:
        raise ContainerPlanError(
            f"vllm_container_memory_limit is {limit!r} ({mib} MiB), below the {MEMORY_MIN_MIB} MiB an engine "
            "needs: give a larger size, auto or none.")
    if total > 0 and mib > total:
        raise ContainerPlanError(
            f"vllm_container_memory_limit is {limit!r} ({mib} MiB), more than this host's {total} MiB: give at "
            "most the host's memory, or auto.")
    return mib


def memory_args(memory_mib: Optional[int]) -> List[str]:
    """``--memory`` and ``--memory-swap`` at the same size (no swap beyond it); none without a limit."""
    return [] if not memory_mib else ["--memory", f"{memory_mib}m", "--memory-swap", f"{memory_mib}m"]


def run_argv(runtime: str, request: Dict[str, Any]) -> List[str]:
    """The argv of ``<runtime> run`` for the engine's container, in the order it is written to the unit.

    ``request``: name, image (the pinned reference or image ID), uid, gid, env_file, model_dir,
    config_file, python_dir, cache_dir, shm_mib, memory_mib (memory_limit_mib, None: no limit),
    devices (device_args), group_add (group_args), read_only (vLLM writes only below its caches, which
    are a volume; a tmpfs takes /tmp), command (the entrypoint and its first arguments, e.g.
    ["vllm", "serve"]).
    """
    argv = [f"/usr/bin/{runtime}", "run", "--rm", "--name", request["name"]]
    if runtime == "podman":
        # A container left by a crash of the runtime would block the name (docker: ExecStartPre removes it).
        argv += ["--replace", "--pull", "never"]
    argv += [
        "--network", "host",
        "--user", f"{request['uid']}:{request['gid']}",
        *(request.get("group_add") or []),
        "--security-opt", "no-new-privileges",
        "--cap-drop", "ALL",
        "--pids-limit", str(PIDS_LIMIT),
        *memory_args(request.get("memory_mib")),
        "--shm-size", f"{request['shm_mib']}m",
        "--env-file", request["env_file"],
    ]
    if request.get("read_only", True):
        argv += ["--read-only", "--tmpfs", TMPFS_TMP]
    argv += [
        "--volume", f"{request['model_dir']}:{request['model_dir']}:ro",
        "--volume", f"{request['config_file']}:{request['config_file']}:ro",
        "--volume", f"{request['python_dir']}:{request['python_dir']}:ro",
        "--volume", f"{request['cache_dir']}:{request['cache_dir']}:rw",
    ]
    argv += list(request.get("devices") or [])
    command = list(request["command"])
    argv += ["--entrypoint", command[0], request["image"]] + command[1:]
    argv += [request["model_dir"], "--config", request["config_file"]]
    return argv


def unit_commands(runtime: str, name: str) -> Dict[str, List[List[str]]]:
    """ExecStartPre and ExecStop lines around the run argv (docker has no --replace)."""
    binary = f"/usr/bin/{runtime}"
    pre = [] if runtime == "podman" else [["-" + binary, "rm", "-f", name]]
    return {"pre": pre, "stop": [[binary, "stop", "-t", str(STOP_TIMEOUT_S), name]]}


# The device_args flags and the [Container] key that passes each (podman-systemd.unit(5): AddDevice=
# becomes --device, Volume= becomes -v); any other flag goes through PodmanArgs=.
_DEVICE_KEYS = {"--device": "AddDevice", "--volume": "Volume"}


def _gated(key: str, value: str, version: Tuple[int, ...]) -> Tuple[str, Any]:
    """``key=value``, or PodmanArgs= with the key's flag where this podman predates the key."""
    since, flag = QUADLET_KEY_SINCE[key]
    return (key, value) if version >= since else ("PodmanArgs", [f"{flag}={value}"])


def quadlet_keys(request: Dict[str, Any], podman_version: str) -> List[List[Any]]:
    """The [Container] section of the Quadlet file: the same container as run_argv, as (key, value) rows.

    ``request``: run_argv's fields.  Each row is [key, value]; a value is a string, or a list of
    arguments (Exec, PodmanArgs) the template quotes one by one.  Quadlet itself adds ``--replace`` and ``--rm`` (and --cidfile,
    --sdnotify=conmon, -d, --cgroups=split); ``--pull never`` is Pull=never.  A key newer than the
    host's podman (QUADLET_KEY_SINCE) is passed as PodmanArgs=.
    """
    version = version_tuple(podman_version)
    keys: List[Tuple[str, Any]] = [
        ("ContainerName", request["name"]),
        ("Image", request["image"]),
        ("Pull", "never"),
        ("Network", "host"),
        ("User", str(request["uid"])),
        ("Group", str(request["gid"])),
        ("NoNewPrivileges", "true"),
        ("DropCapability", "ALL"),
        # PidsLimit= is newer than the podman of some supported hosts: the flag works on every one.
        ("PodmanArgs", [f"--pids-limit={PIDS_LIMIT}"]),
    ]
    # As --pids-limit: flags through PodmanArgs= work on every podman that runs Quadlet here.
    memory = memory_args(request.get("memory_mib"))
    keys += [("PodmanArgs", [f"{flag}={value}"]) for flag, value in zip(memory[::2], memory[1::2])]
    keys += [
        ("ShmSize", f"{request['shm_mib']}m"),
        ("EnvironmentFile", request["env_file"]),
    ]
    if request.get("read_only", True):
        keys += [("ReadOnly", "true"), ("Tmpfs", TMPFS_TMP)]
    keys += [
        ("Volume", f"{request['model_dir']}:{request['model_dir']}:ro"),
        ("Volume", f"{request['config_file']}:{request['config_file']}:ro"),
        ("Volume", f"{request['python_dir']}:{request['python_dir']}:ro"),
        ("Volume", f"{request['cache_dir']}:{request['cache_dir']}:rw"),
    ]
    devices = list(request.get("devices") or [])
    for flag, value in zip(devices[::2], devices[1::2]):
        key = _DEVICE_KEYS.get(flag)
        keys.append((key, value) if key else ("PodmanArgs", [flag, value]))
    command = list(request["command"])
    keys.append(_gated("Entrypoint", command[0], version))
    keys.append(_gated("StopTimeout", str(STOP_TIMEOUT_S), version))
    keys.append(("Exec", command[1:] + [request["model_dir"], "--config", request["config_file"]]))
    return [list(row) for row in keys]


def unit_file(name: str, quadlet: bool) -> Dict[str, Any]:
    """The file the role writes for the instance (path), the one of the other kind it removes (other),
    and whether ``systemctl enable`` applies (a generated unit cannot be enabled: the .container file's
    [Install] section links it when the generator runs).

    Both start ``<name>.service``: systemd's Quadlet generator names the service after the .container
    file, so every task that starts, stops or checks the unit uses one name either way.  A plain unit in
    /etc/systemd/system would shadow the generated one, hence the removal on a switch.
    """
    container = f"{QUADLET_DIR}/{name}.container"
    plain = f"{SYSTEMD_DIR}/{name}.service"
    if quadlet:
        return {"path": container, "other": plain, "enable": False}
    return {"path": plain, "other": container, "enable": True}


def read_archive(path: str) -> Dict[str, Any]:
    """Image ID, architecture, labels and tags of the first image in a ``docker save``/``podman save`` archive.

    The archive's manifest.json names the image's config file, whose sha256 is the image ID (docker and
    podman both write this layout; docker 25 and later beside an OCI index).  Only the small members are
    read; the layers are skipped.
    """
    with tarfile.open(path, "r:*") as archive:
        manifest = json.load(archive.extractfile("manifest.json"))
        if not manifest:
            raise ContainerPlanError(f"vllm: {path} holds no image (empty manifest.json)")
        config_name = manifest[0]["Config"]
        config = json.load(archive.extractfile(config_name))
    base = config_name.rsplit("/", 1)[-1]
    image_id = base[: -len(".json")] if base.endswith(".json") else base
    return {
        "id": f"sha256:{image_id}",
        "architecture": config.get("architecture", ""),
        "os": config.get("os", ""),
        "labels": (config.get("config") or {}).get("Labels") or {},
        "repo_tags": manifest[0].get("RepoTags") or [],
    }


def plan(request: Dict[str, Any], probe: Dict[str, Any]) -> Dict[str, Any]:
    """The container plan of one instance (the fact kunpeng_vllm_container).

    ``request``: runtime (auto/podman/docker), image, archive_image (read_archive's result, {} without an
    archive), allow_unpinned, backend, visible (device indexes), tensor_parallel, pipeline_parallel,
    groups and group_ids (group_args), settings (the role variables UNSUPPORTED names), memory_limit and
    host_memory_mib (memory_limit_mib) and the run_argv fields but image, devices, group_add, shm_mib and
    memory_mib.  ``probe``: podman_version, docker_version (the
    ``--version`` outputs, '' when missing).  Raises ContainerPlanError for a combination container mode
    does not carry out, or a refused image reference.
    """
    refused = unsupported(request.get("settings") or {})
    if refused:
        raise ContainerPlanError(" ".join(refused))
    archive = request.get("archive_image") or {}
    problem = pin_problem(request.get("image", ""), archive.get("id", ""), request.get("allow_unpinned", False))
    if problem:
        raise ContainerPlanError(problem)
    memory_mib = memory_limit_mib(request.get("memory_limit", "auto"), request.get("host_memory_mib", 0))
    runtime = choose_runtime(request.get("runtime", "auto"), probe.get("podman_version", ""),
                             probe.get("docker_version", ""))
    image = archive["id"] if archive else request["image"]
    run = dict(request, image=image, devices=device_args(request["backend"], runtime["runtime"], request["visible"]),
               group_add=group_args(request["backend"], list(request.get("groups") or []),
                                    dict(request.get("group_ids") or {})),
               shm_mib=shm_size_mib(request.get("tensor_parallel", 1), request.get("pipeline_parallel", 1)),
               memory_mib=memory_mib)
    quadlet = use_quadlet(runtime["runtime"], probe.get("podman_version", ""))
    return {
        "runtime": runtime["runtime"],
        "install_package": runtime["install_package"],
        "quadlet": quadlet,
        "quadlet_keys": quadlet_keys(run, probe.get("podman_version", "")) if quadlet else [],
        "unit_file": unit_file(request["name"], quadlet),
        "image": image,
        "image_id": archive.get("id", ""),
        "archive": bool(archive),
        "name": request["name"],
        "argv": run_argv(runtime["runtime"], run),
        "commands": unit_commands(runtime["runtime"], request["name"]),
        "shm_mib": run["shm_mib"],
        "memory_mib": memory_mib,
        "environment_drop": environment_drop(request["backend"]),
    }


def visible_indexes(backend: str, visible_devices: str, accelerators: Dict[str, Any]) -> List[str]:
    """The device indexes the container gets: vllm_visible_devices, else every device the probe found.

    The ids are the backend's first id key (index for NVIDIA, logic_id for Ascend); a backend without
    device selection (cpu) gets none.
    """
    record = backends.field(backend, "visible")
    if not record:
        return []
    if str(visible_devices or "").strip():
        return [part.strip() for part in str(visible_devices).split(",") if part.strip()]
    section = (accelerators or {}).get(record["section"]) or {}
    key = record["id_keys"][0]
    return [str(device[key]) for device in section.get(record["devices"]) or [] if key in device]


def environment_drop(backend: str) -> List[str]:
    """Service variables the container's environment leaves out.

    The visible-devices variable names host indexes; inside the container only the visible devices
    exist, renumbered from 0, so the host's numbers would select the wrong devices or none.
    """
    record = backends.field(backend, "visible")
    return [record["variable"]] if record else []


def inspected_image(inspect_output: str) -> Dict[str, Any]:
    """``<runtime> image inspect`` JSON -> id, architecture, labels, digest (the registry's, '' when none)."""
    entries = json.loads(inspect_output or "[]")
    if not entries:
        return {}
    entry = entries[0]
    config = entry.get("Config") or {}
    digests = entry.get("RepoDigests") or []
    return {
        "id": entry["Id"] if entry["Id"].startswith("sha256:") else "sha256:" + entry["Id"],
        "architecture": entry.get("Architecture", ""),
        "os": entry.get("Os", ""),
        "labels": config.get("Labels") or entry.get("Labels") or {},
        "digest": entry.get("Digest") or (digests[0].split("@", 1)[1] if digests and "@" in digests[0] else ""),
    }
