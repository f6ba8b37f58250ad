"""Container mode decisions (plugins/module_utils/plan/container.py), table by table."""

import io
import json
import tarfile

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


@pytest.mark.parametrize("text, expected", [
    ("podman version 4.3.1", (4, 3, 1)),
    ("podman version 4.9.3-dev", (4, 9, 3)),
    ("Docker version 28.2.2, build e6534b4", (28, 2, 2)),
    ("podman version 5.0", (5, 0)),
    ("", ()),
    ("bash: podman: command not found", ()),
])
def test_version_tuple(text, expected):
    assert container.version_tuple(text) == expected


@pytest.mark.parametrize("requested, podman, docker, runtime, package", [
    ("auto", "podman version 4.3.1", "", "podman", None),
    ("auto", "podman version 4.3.1", "Docker version 28.2.2", "podman", None),
    ("auto", "", "Docker version 28.2.2", "docker", None),      # the host already runs docker
    ("auto", "", "", "podman", "podman"),                       # neither: podman is installed
    ("podman", "", "Docker version 28.2.2", "podman", "podman"),
    ("docker", "podman version 4.3.1", "", "docker", "docker.io"),
    ("docker", "", "Docker version 24.0.5", "docker", None),
])
def test_choose_runtime(requested, podman, docker, runtime, package):
    assert container.choose_runtime(requested, podman, docker) == {"runtime": runtime, "install_package": package}


def test_choose_runtime_refuses_an_unknown_runtime():
    with pytest.raises(container.ContainerPlanError, match="vllm_container_runtime"):
        container.choose_runtime("lxc", "", "")


@pytest.mark.parametrize("runtime, version, expected", [
    ("podman", "podman version 4.3.1", False),   # Debian 12
    ("podman", "podman version 4.4.0", False),   # its generator forces --runtime /usr/bin/crun
    ("podman", "podman version 4.7.2", False),   # ReadOnly= adds --read-only-tmpfs=false
    ("podman", "podman version 4.8.0", True),
    ("podman", "podman version 4.9.3", True),    # Ubuntu 24.04
    ("podman", "podman version 5.2.2", True),
    ("podman", "", False),                        # not installed yet: the plain unit
    ("docker", "podman version 5.2.2", False),
])
def test_use_quadlet(runtime, version, expected):
    assert container.use_quadlet(runtime, version) is expected


@pytest.mark.parametrize("image, archive_id, allow, refused", [
    ("quay.io/ascend/vllm-ascend@" + DIGEST, "", False, None),
    ("quay.io/ascend/vllm-ascend:v0.13.0@" + DIGEST, "", False, None),
    ("quay.io/ascend/vllm-ascend:v0.13.0", "", False, "vllm_container_allow_unpinned"),
    ("quay.io/ascend/vllm-ascend", "", False, "not pinned by digest"),
    ("quay.io/ascend/vllm-ascend@sha256:abc", "", False, "not pinned by digest"),
    ("quay.io/ascend/vllm-ascend:v0.13.0", "", True, None),
    ("", DIGEST, False, None),                          # an archive is pinned by its content
    ("localhost/engine:any", DIGEST, False, None),
    ("", "sha256:nothex", False, "no sha256 image ID"),
    ("", "", False, "needs vllm_container_image"),
])
def test_pin_problem(image, archive_id, allow, refused):
    problem = container.pin_problem(image, archive_id, allow)
    if refused is None:
        assert problem is None
    else:
        assert refused in problem


def test_the_refusal_names_the_variable_and_the_fix():
    problem = container.pin_problem("vllm/vllm-openai:latest", "", False)
    assert "vllm_container_image" in problem and "@sha256:" in problem and "vllm_container_allow_unpinned: true" in problem


@pytest.mark.parametrize("image, backend, host, expected", [
    ({"architecture": "amd64", "labels": {}}, "cpu", {"architecture": "x86_64"}, []),
    ({"architecture": "arm64", "labels": {}}, "cpu", {"architecture": "aarch64"}, []),
    ({"architecture": "amd64", "labels": {}}, "cpu", {"architecture": "aarch64"},
     ["the image is built for amd64, the host is arm64"]),
    ({"architecture": "amd64", "labels": {container.LABEL_BACKEND: "cuda"}}, "cpu", {"architecture": "x86_64"},
     ["the image declares backend cuda (io.kunpeng.vllm.backend), the plan runs cpu"]),
    ({"architecture": "amd64", "labels": {container.LABEL_CUDA_DRIVER_MIN: "550.54"}}, "cuda",
     {"architecture": "x86_64", "accelerators": {"nvidia": {"driver_version": "570.86.15"}}}, []),
    ({"architecture": "amd64", "labels": {container.LABEL_CUDA_DRIVER_MIN: "550.54"}}, "cuda",
     {"architecture": "x86_64", "accelerators": {"nvidia": {"driver_version": "535.183.01"}}},
     ["the image needs NVIDIA driver 550.54 or later (io.kunpeng.vllm.cuda-driver-min); the host has 535.183.01"]),
    ({"architecture": "amd64", "labels": {container.LABEL_CUDA_DRIVER_MIN: "550.54"}}, "cuda",
     {"architecture": "x86_64", "accelerators": {"nvidia": {"driver_version": ""}}},
     ["the image needs NVIDIA driver 550.54 or later (io.kunpeng.vllm.cuda-driver-min); the host reports none"]),
    ({"architecture": "arm64", "labels": {container.LABEL_CANN: "8.5.0"}}, "ascend",
     {"architecture": "aarch64", "accelerators": {"ascend": {"cann_version": "8.5.0"}}}, []),
    ({"architecture": "arm64", "labels": {container.LABEL_CANN: "8.5.0"}}, "ascend",
     {"architecture": "aarch64", "accelerators": {"ascend": {"cann_version": "8.3.RC2"}}},
     ["the image is built for CANN 8.5.0 (io.kunpeng.vllm.cann-version); the host has CANN 8.3.RC2"]),
    # labels of another backend are not read
    ({"architecture": "amd64", "labels": {container.LABEL_CANN: "8.5.0"}}, "cpu", {"architecture": "x86_64"}, []),
])
def test_image_problems(image, backend, host, expected):
    assert container.image_problems(image, backend, host) == expected


# The Ascend rows: vllm-ascend's quick start (docs.vllm.ai/projects/ascend, "Setup environment using
# container") passes exactly these devices and driver files.
ASCEND_SHARED = ["--device", "/dev/davinci_manager", "--device", "/dev/devmm_svm", "--device", "/dev/hisi_hdc",
                 "--volume", "/usr/local/dcmi:/usr/local/dcmi:ro",
                 "--volume", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro",
                 "--volume", "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64:ro",
                 "--volume", "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info:ro",
                 "--volume", "/etc/ascend_install.info:/etc/ascend_install.info:ro"]


@pytest.mark.parametrize("backend, runtime, visible, expected", [
    ("cpu", "podman", [], []),
    ("cpu", "docker", [], []),
    ("ascend", "podman", ["0"], ["--device", "/dev/davinci0"] + ASCEND_SHARED),
    ("ascend", "podman", ["2", "3"], ["--device", "/dev/davinci2", "--device", "/dev/davinci3"] + ASCEND_SHARED),
    ("ascend", "docker", ["7"], ["--device", "/dev/davinci7"] + ASCEND_SHARED),
    # NVIDIA: CDI names on podman (nvidia-ctk cdi generate), --gpus on docker; the CDI spec brings the
    # driver's nodes and libraries, so no mounts of our own.
    ("cuda", "podman", ["0", "1"], ["--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"]),
    ("cuda", "docker", ["0", "1"], ["--gpus", '"device=0,1"']),
    ("cuda", "docker", ["3"], ["--gpus", '"device=3"']),
])
def test_device_args(backend, runtime, visible, expected):
    assert container.device_args(backend, runtime, visible) == expected


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_backend_serves_both_runtimes(name):
    for runtime in ("podman", "docker"):
        container.device_args(name, runtime, ["0"])


@pytest.mark.parametrize("tp, pp, mib", [(1, 1, 1024), (2, 1, 2048), (8, 1, 8192), (4, 2, 8192), (0, 1, 1024)])
def test_shm_size(tp, pp, mib):
    assert container.shm_size_mib(tp, pp) == mib


REQUEST = {
    "name": "vllm-demo", "image": DIGEST, "uid": 998, "gid": 997, "env_file": "/etc/vllm/demo.container.env",
    "model_dir": "/srv/models/demo", "config_file": "/etc/vllm/demo.yaml", "python_dir": "/opt/vllm/python",
    "cache_dir": "/var/cache/vllm/demo", "shm_mib": 1024, "devices": [], "command": ["vllm", "serve"],
    # plan()'s memory inputs (memory_limit_mib): a host of 24 GiB, the default limit
    "memory_limit": "auto", "host_memory_mib": 24576,
}


@pytest.mark.parametrize("limit, total, mib", [
    # auto: the host's memory less a tenth, the reserve kept between 2 and 16 GiB
    ("auto", 24576, 24576 - 2457),
    ("auto", 1048576, 1048576 - 16384),  # 1 TiB: the reserve stops at 16 GiB
    ("auto", 8192, 8192 - 2048),  # 8 GiB: at least 2 GiB stay with the system
    ("AUTO", 65536, 65536 - 6553),
    (None, 65536, 65536 - 6553),
    ("none", 0, None),
    ("none", 65536, None),
    ("64g", 524288, 65536),
    ("65536m", 524288, 65536),
    ("1g", 0, 1024),  # an explicit size needs no facts
    (" 2G ", 4096, 2048),
])
def test_memory_limit(limit, total, mib):
    assert container.memory_limit_mib(limit, total) == mib


@pytest.mark.parametrize("limit, total, match", [
    ("auto", 0, "host's memory is unknown"),
    ("auto", 2048, "below the 1024 MiB"),
    ("512m", 65536, "below the 1024 MiB"),
    ("100g", 65536, "more than this host's 65536 MiB"),
    ("64G!", 65536, "give auto"),
    ("64gb", 65536, "give auto"),
    ("0g", 65536, "give auto"),
    ("", 65536, "give auto"),
    ("-1", 65536, "give auto"),
])
def test_memory_limit_refusals_name_the_variable(limit, total, match):
    with pytest.raises(container.ContainerPlanError, match=match) as raised:
        container.memory_limit_mib(limit, total)
    assert "vllm_container_memory_limit" in str(raised.value)


@pytest.mark.parametrize("runtime", ["podman", "docker"])
def test_run_argv_caps_memory_and_swap_alike(runtime):
    pairs = _pairs(container.run_argv(runtime, dict(REQUEST, memory_mib=22119)))
    assert ("--memory", "22119m") in pairs and ("--memory-swap", "22119m") in pairs
    assert "--memory" not in container.run_argv(runtime, dict(REQUEST, memory_mib=None))


def test_the_plan_limits_memory_by_default_and_refuses_before_the_runtime_is_chosen():
    request = dict(REQUEST, image="", archive_image={"id": DIGEST}, backend="cpu", visible=[], runtime="auto")
    result = container.plan(request, PROBE)
    assert result["memory_mib"] == 24576 - 2457 and ("--memory", "22119m") in _pairs(result["argv"])
    assert container.plan(dict(request, memory_limit="none"), PROBE)["memory_mib"] is None
    with pytest.raises(container.ContainerPlanError, match="vllm_container_memory_limit"):
        container.plan(dict(request, memory_limit="64x", runtime="nonsense"), PROBE)


def _pairs(argv):
    return list(zip(argv, argv[1:]))


@pytest.mark.parametrize("runtime", ["podman", "docker"])
def test_run_argv_hardening(runtime):
    argv = container.run_argv(runtime, REQUEST)
    pairs = _pairs(argv)
    assert argv[:5] == [f"/usr/bin/{runtime}", "run", "--rm", "--name", "vllm-demo"]
    for pair in [("--user", "998:997"), ("--security-opt", "no-new-privileges"), ("--cap-drop", "ALL"),
                 ("--pids-limit", "16384"),  # a fork bomb stops in the container (issue 37, low)
                 ("--network", "host"), ("--shm-size", "1024m"), ("--env-file", "/etc/vllm/demo.container.env"),
                 ("--volume", "/srv/models/demo:/srv/models/demo:ro"),
                 ("--volume", "/etc/vllm/demo.yaml:/etc/vllm/demo.yaml:ro"),
                 ("--volume", "/var/cache/vllm/demo:/var/cache/vllm/demo:rw"),
                 ("--entrypoint", "vllm"), (DIGEST, "serve")]:
        assert pair in pairs, pair
    assert "--read-only" in argv
    assert argv[-3:] == ["/srv/models/demo", "--config", "/etc/vllm/demo.yaml"]
    assert ("--replace" in argv) is (runtime == "podman")
    # nothing secret on the command line: the key travels in the env file
    assert not any("API_KEY" in arg for arg in argv)


def test_run_argv_without_read_only_root():
    argv = container.run_argv("podman", dict(REQUEST, read_only=False))
    assert "--read-only" not in argv


def test_run_argv_places_devices_before_the_image():
    argv = container.run_argv("podman", dict(REQUEST, devices=["--device", "nvidia.com/gpu=0"]))
    assert argv.index("nvidia.com/gpu=0") < argv.index(DIGEST)


@pytest.mark.parametrize("runtime, pre", [("podman", []), ("docker", [["-/usr/bin/docker", "rm", "-f", "n"]])])
def test_unit_commands(runtime, pre):
    assert container.unit_commands(runtime, "n") == {"pre": pre, "stop": [[f"/usr/bin/{runtime}", "stop", "-t", "50", "n"]]}


def _archive(tmp_path, config, layout="docker"):
    """A save archive of the layout docker 25+ writes (blobs/sha256/<id>) or the older <id>.json."""
    body = json.dumps(config).encode()
    image_id = "ef" * 32
    name = f"blobs/sha256/{image_id}" if layout == "docker" else f"{image_id}.json"
    manifest = json.dumps([{"Config": name, "RepoTags": ["kvllm/engine-cpu-oci:amd64"], "Layers": []}]).encode()
    path = tmp_path / "image.tar"
    with tarfile.open(path, "w") as tar:
        for member, data in ((name, body), ("manifest.json", manifest)):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return str(path), "sha256:" + image_id


@pytest.mark.parametrize("layout", ["docker", "legacy"])
def test_read_archive(tmp_path, layout):
    path, image_id = _archive(tmp_path, {"architecture": "amd64", "os": "linux",
                                         "config": {"Labels": {container.LABEL_BACKEND: "cpu"}}}, layout)
    assert container.read_archive(path) == {"id": image_id, "architecture": "amd64", "os": "linux",
                                            "labels": {container.LABEL_BACKEND: "cpu"},
                                            "repo_tags": ["kvllm/engine-cpu-oci:amd64"]}


def test_read_archive_without_labels(tmp_path):
    path, dummy = _archive(tmp_path, {"architecture": "arm64", "os": "linux", "config": {}})
    assert container.read_archive(path)["labels"] == {}


PROBE = {"podman_version": "podman version 4.3.1", "docker_version": ""}


def test_plan_runs_an_archive_by_its_image_id():
    request = dict(REQUEST, image="", archive_image={"id": DIGEST}, backend="cpu", visible=[], runtime="auto")
    result = container.plan(request, PROBE)
    assert result["image"] == DIGEST and result["archive"] and result["runtime"] == "podman"
    assert result["quadlet"] is False and result["install_package"] is None
    assert DIGEST in result["argv"]
    assert result["quadlet_keys"] == [] and result["unit_file"]["path"] == "/etc/systemd/system/vllm-demo.service"


def test_plan_refuses_an_unpinned_tag_before_anything_else():
    request = dict(REQUEST, image="vllm/vllm-openai:latest", backend="cuda", visible=["0"], runtime="auto")
    with pytest.raises(container.ContainerPlanError, match="vllm_container_allow_unpinned"):
        container.plan(request, PROBE)


def test_plan_sizes_shm_by_the_tensor_parallel_size():
    image = "quay.io/ascend/vllm-ascend@" + OTHER
    request = dict(REQUEST, image=image, backend="ascend", visible=["0", "1"], runtime="auto", tensor_parallel=2)
    result = container.plan(request, {"podman_version": "podman version 5.2.2", "docker_version": ""})
    assert result["shm_mib"] == 2048 and ("--shm-size", "2048m") in _pairs(result["argv"])
    assert result["quadlet"] is True and "/dev/davinci1" in result["argv"]
    assert ["AddDevice", "/dev/davinci1"] in result["quadlet_keys"] and ["ShmSize", "2048m"] in result["quadlet_keys"]
    assert result["unit_file"]["path"] == "/etc/containers/systemd/vllm-demo.container"


ACCELERATORS = {"nvidia": {"gpus": [{"index": 0, "uuid": "GPU-a"}, {"index": 1, "uuid": "GPU-b"}]},
                "ascend": {"devices": [{"logic_id": 0}, {"logic_id": 1}, {"npu_id": 9}]}}


@pytest.mark.parametrize("backend, visible, expected", [
    ("cpu", "", []),
    ("cpu", "0,1", []),
    ("cuda", "", ["0", "1"]),
    ("cuda", "1", ["1"]),
    ("cuda", " 2, 3 ", ["2", "3"]),
    ("ascend", "", ["0", "1"]),        # a device without a logic_id is not selectable
    ("ascend", "4,5", ["4", "5"]),
])
def test_visible_indexes(backend, visible, expected):
    assert container.visible_indexes(backend, visible, ACCELERATORS) == expected


@pytest.mark.parametrize("backend, expected", [
    ("cpu", []), ("cuda", ["CUDA_VISIBLE_DEVICES"]), ("ascend", ["ASCEND_RT_VISIBLE_DEVICES"]),
])
def test_environment_drop(backend, expected):
    assert container.environment_drop(backend) == expected


# `podman image inspect` of the archive molecule/images/engine-oci.sh builds, loaded by podman 4.3.1
# (the keys the function reads, as podman wrote them).
PODMAN_INSPECT = json.dumps([{
    "Id": "7f86af6e747e6aa1ea70b9777a4f8172b205b64650723aaded68ea46d4085fd8",
    "Digest": "sha256:ccf6cb8572284180bae965652c7e8aebc045c2be3d1ac4fec8561f8e1cdf816b",
    "RepoTags": ["localhost/kvllm/engine-cpu-oci:amd64"],
    "RepoDigests": ["localhost/kvllm/engine-cpu-oci@sha256:ccf6cb8572284180bae965652c7e8aebc045c2be3d1ac4fec8561f8e1cdf816b"],
    "Architecture": "amd64", "Os": "linux",
    "Config": {"Labels": {"io.kunpeng.vllm.backend": "cpu", "io.kunpeng.vllm.engine-version": "0.32.0"}},
}])


@pytest.mark.parametrize("output, expected", [
    (PODMAN_INSPECT, {"id": "sha256:7f86af6e747e6aa1ea70b9777a4f8172b205b64650723aaded68ea46d4085fd8",
                      "architecture": "amd64", "os": "linux",
                      "labels": {"io.kunpeng.vllm.backend": "cpu", "io.kunpeng.vllm.engine-version": "0.32.0"},
                      "digest": "sha256:ccf6cb8572284180bae965652c7e8aebc045c2be3d1ac4fec8561f8e1cdf816b"}),
    # docker: the Id carries its prefix, no Digest key, RepoDigests empty for a loaded image
    (json.dumps([{"Id": DIGEST, "RepoDigests": [], "Architecture": "arm64", "Os": "linux", "Config": {"Labels": None}}]),
     {"id": DIGEST, "architecture": "arm64", "os": "linux", "labels": {}, "digest": ""}),
    ("[]", {}),
    ("", {}),
])
def test_inspected_image(output, expected):
    assert container.inspected_image(output) == expected


# What podman's Quadlet generator makes of each [Container] key used here (containers/podman
# pkg/systemd/quadlet/quadlet.go ConvertContainer, tags v4.8.0 and v5.0.0): the ``podman run`` arguments,
# as --flag=value tokens.  The generator adds --replace and --rm itself.
_GENERATED = {
    "ContainerName": lambda v: [f"--name={v}"],
    "Pull": lambda v: [f"--pull={v}"],
    "Network": lambda v: [f"--network={v}"],
    "NoNewPrivileges": lambda v: ["--security-opt=no-new-privileges"] if v == "true" else [],
    "DropCapability": lambda v: [f"--cap-drop={v.lower()}"],
    "ShmSize": lambda v: [f"--shm-size={v}"],
    "EnvironmentFile": lambda v: [f"--env-file={v}"],
    "ReadOnly": lambda v: ["--read-only"] if v == "true" else [],
    "Tmpfs": lambda v: [f"--tmpfs={v}"],
    "Volume": lambda v: [f"--volume={v}"],
    "AddDevice": lambda v: [f"--device={v}"],
    "Entrypoint": lambda v: [f"--entrypoint={v}"],
    "StopTimeout": lambda v: [f"--stop-timeout={v}"],
}


def _generated_flags(keys):
    """The run flags, the image and the exec args the generator writes for these rows."""
    rows = dict((key, value) for key, value in keys if key in ("User", "Group", "Image", "Exec"))
    flags = [f"--user={rows['User']}:{rows['Group']}", "--replace", "--rm"]
    for key, value in keys:
        if key in _GENERATED:
            flags += _GENERATED[key](value)
        elif key == "PodmanArgs":
            flags += value if len(value) == 1 else [f"{value[0]}={value[1]}"]
    return sorted(flags), [rows["Image"]] + rows["Exec"]


def _argv_flags(argv, stop):
    """run_argv as --flag=value tokens (plus the ExecStop timeout), the image and what follows it."""
    flags, rest, index = [], argv[2:], 0
    booleans = {"--rm", "--replace", "--read-only"}
    while rest[index].startswith("--"):
        if rest[index] in booleans:
            flags.append(rest[index])
            index += 1
        else:
            flags.append(f"{rest[index]}={rest[index + 1]}")
            index += 2
    flags.append(f"--stop-timeout={stop[0][3]}")
    flags = [flag.lower() if flag.startswith("--cap-drop=") else flag for flag in flags]
    return sorted(flags), rest[index:]


QUADLET_CASES = [
    ("podman version 4.8.0", dict(REQUEST)),
    ("podman version 4.9.3", dict(REQUEST, read_only=False)),
    ("podman version 5.0.0", dict(REQUEST, devices=["--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1"])),
    ("podman version 5.2.2", dict(REQUEST, devices=container.device_args("ascend", "podman", ["0", "3"]))),
    ("podman version 5.2.2", dict(REQUEST, memory_mib=22119)),
]


@pytest.mark.parametrize("version, request_", QUADLET_CASES)
def test_the_quadlet_file_runs_the_container_of_the_plain_unit(version, request_):
    generated = _generated_flags(container.quadlet_keys(request_, version))
    assert generated == _argv_flags(container.run_argv("podman", request_), container.unit_commands("podman", "n")["stop"])


@pytest.mark.parametrize("version, native", [
    ("podman version 4.8.0", False), ("podman version 4.9.3", False), ("podman version 5.0.0", True),
    ("podman version 5.4.1", True),
])
def test_quadlet_keys_newer_than_the_podman_go_through_podman_args(version, native):
    keys = container.quadlet_keys(REQUEST, version)
    names = [key for key, dummy in keys]
    assert ("Entrypoint" in names) is native and ("StopTimeout" in names) is native
    assert (["PodmanArgs", ["--entrypoint=vllm"]] in keys) is not native
    assert (["PodmanArgs", ["--stop-timeout=50"]] in keys) is not native
    assert keys[-1] == ["Exec", ["serve", "/srv/models/demo", "--config", "/etc/vllm/demo.yaml"]]


@pytest.mark.parametrize("devices, expected", [
    (["--device", "nvidia.com/gpu=0"], [["AddDevice", "nvidia.com/gpu=0"]]),
    (["--device", "/dev/davinci0", "--volume", "/usr/local/dcmi:/usr/local/dcmi:ro"],
     [["AddDevice", "/dev/davinci0"], ["Volume", "/usr/local/dcmi:/usr/local/dcmi:ro"]]),
    (["--gpus", "device=0"], [["PodmanArgs", ["--gpus", "device=0"]]]),
])
def test_quadlet_keys_pass_the_devices(devices, expected):
    keys = container.quadlet_keys(dict(REQUEST, devices=devices), "podman version 5.2.2")
    # the devices come last before Entrypoint, StopTimeout and Exec, in device_args' order
    assert keys[-len(expected) - 3:-3] == expected


@pytest.mark.parametrize("quadlet, path, other, enable", [
    (True, "/etc/containers/systemd/vllm-a.container", "/etc/systemd/system/vllm-a.service", False),
    (False, "/etc/systemd/system/vllm-a.service", "/etc/containers/systemd/vllm-a.container", True),
])
def test_unit_file(quadlet, path, other, enable):
    assert container.unit_file("vllm-a", quadlet) == {"path": path, "other": other, "enable": enable}


def test_the_plan_has_the_declared_shape():
    from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract

    request = dict(REQUEST, image="", archive_image={"id": DIGEST}, backend="cuda", visible=["0"], runtime="docker")
    result = container.plan(request, {"podman_version": "", "docker_version": "Docker version 28.2.2"})
    assert fact_contract.check("kunpeng_vllm_container", result) == []
    result = container.plan(dict(request, runtime="podman"), {"podman_version": "podman version 5.2.2", "docker_version": ""})
    assert result["quadlet_keys"] and fact_contract.check("kunpeng_vllm_container", result) == []


@pytest.mark.parametrize("backend, groups, gids, expected", [
    # Ascend: the driver's group (kunpeng_ascend.device_group, the venv unit's SupplementaryGroups=) by its GID
    ("ascend", ["HwHiAiUser"], {"HwHiAiUser": 1000}, ["--group-add", "1000"]),
    ("ascend", ["ascend-drv"], {"ascend-drv": 1201, "HwHiAiUser": 1000}, ["--group-add", "1201"]),
    # a driver installed for all users (--install-for-all): no group
    ("ascend", [], {}, []),
    # NVIDIA and CPU: no group, whatever is passed
    ("cuda", ["video"], {"video": 44}, []),
    ("cpu", ["HwHiAiUser"], {"HwHiAiUser": 1000}, []),
])
def test_group_args(backend, groups, gids, expected):
    assert container.group_args(backend, groups, gids) == expected


def test_group_args_refuses_a_group_the_host_lacks():
    with pytest.raises(container.ContainerPlanError, match="'HwHiAiUser' is not on this host"):
        container.group_args("ascend", ["HwHiAiUser"], {})


@pytest.mark.parametrize("name", backends.NAMES)
def test_every_backend_row_says_whether_the_container_joins_a_group(name):
    assert backends.field(name, "container")["group_add"] in (None, "driver")
    # a row that joins the driver's group needs a driver that names one
    if backends.field(name, "container")["group_add"]:
        assert backends.field(name, "driver")["group_key"]


@pytest.mark.parametrize("backend, groups, gids, joined", [
    ("ascend", ["HwHiAiUser"], {"HwHiAiUser": 1000}, ["--group-add", "1000"]),
    ("cuda", ["HwHiAiUser"], {"HwHiAiUser": 1000}, []),
])
def test_the_plan_joins_the_group_next_to_the_user(backend, groups, gids, joined):
    request = dict(REQUEST, image="quay.io/ascend/vllm-ascend@" + OTHER, backend=backend, visible=["0"],
                   runtime="podman", groups=groups, group_ids=gids)
    argv = container.plan(request, PROBE)["argv"]
    at = argv.index("--user")
    assert argv[at + 2:at + 2 + len(joined)] == joined
    assert argv.count("--group-add") == len(joined) // 2


SUPPORTED = {"vllm_cluster_group": "", "vllm_service_manager": "systemd", "vllm_engine_artifact_mode": "none",
             "vllm_reuse_host_torch": False}


@pytest.mark.parametrize("changed, names", [
    ({}, []),
    ({"vllm_cluster_group": "ds_r1_ascend"}, ["vllm_install_method container", "vllm_cluster_group 'ds_r1_ascend'"]),
    ({"vllm_service_manager": "none"}, ["vllm_service_manager 'none'"]),
    ({"vllm_engine_artifact_mode": "controller"}, ["vllm_engine_artifact_mode 'controller'", "vllm_container_archive"]),
    ({"vllm_engine_artifact_mode": "url"}, ["vllm_engine_artifact_mode 'url'"]),
    ({"vllm_reuse_host_torch": True}, ["vllm_reuse_host_torch True"]),
])
def test_unsupported_combinations_are_named(changed, names):
    problems = container.unsupported(dict(SUPPORTED, **changed))
    assert len(problems) == len(changed)
    for name in names:
        assert any(name in problem for problem in problems), name
    # a variable left out counts as its supported value
    assert container.unsupported({}) == []


@pytest.mark.parametrize("settings, match", [
    # refused before the image is looked at: an unpinned tag and a cluster name the cluster first
    ({"vllm_cluster_group": "ds_r1_ascend"}, "vllm_install_method container: a multi-node instance "
                                             r"\(vllm_cluster_group 'ds_r1_ascend'\)"),
    ({"vllm_service_manager": "none", "vllm_cluster_group": "g"}, "vllm_cluster_group 'g'.*vllm_service_manager 'none'"),
])
def test_the_plan_refuses_what_container_mode_does_not_carry_out(settings, match):
    request = dict(REQUEST, image="vllm/vllm-openai:latest", backend="cuda", visible=["0"], runtime="auto",
                   settings=settings)
    with pytest.raises(container.ContainerPlanError, match=match):
        container.plan(request, PROBE)


def test_the_plan_runs_a_single_node_systemd_request():
    request = dict(REQUEST, image="quay.io/ascend/vllm-ascend@" + OTHER, backend="ascend", visible=["0"],
                   runtime="auto", settings=SUPPORTED)
    assert container.plan(request, PROBE)["image"] == "quay.io/ascend/vllm-ascend@" + OTHER
