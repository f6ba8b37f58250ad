"""Stand-in vendor tools and host trees for the accelerator_facts module tests.

The module runs its real code path: it finds the tool in ``tool_path``, runs
it through ``timeout`` and ``run_command``, and parses what the tool prints.
The tools are small shell scripts that print recorded output chosen by their
arguments, so a captured host can be replayed by copying files.

Adding a captured NVIDIA host (e.g. the H200) takes a folder under
``tests/unit/fixtures/nvidia/<name>/`` with ``query-gpu.csv``,
``nvidia-smi-q-x.xml``, ``proc-driver-nvidia-version``, ``cpuinfo``,
``meminfo`` and ``sysfs/``; :func:`nvidia_host` turns it into module
arguments and ``test_accelerator_facts.py`` compares the result against
``expected.json`` in the same folder.
"""

import json
import os
import re
import shutil
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.nvidia_smi import QUERY_ARGS
from ansible_collections.kunpeng.vllm.plugins.modules import accelerator_facts

from conftest import FIXTURES
from module_runner import run_main

Args = Tuple[str, ...]


class Reply:
    """What a fake tool does for one argument list."""

    def __init__(self, stdout: str = "", rc: int = 0, stderr: str = "", sleep: float = 0) -> None:
        self.stdout, self.rc, self.stderr, self.sleep = stdout, rc, stderr, sleep


_SCRIPT = """#!/bin/sh
# Fake {name}: prints the reply recorded for its argument list.
d='{data}'
k=argv_
for a in "$@"; do k="${{k}}${{a}}_"; done
[ -f "$d/$k.out" ] || [ -f "$d/$k.rc" ] || k=default
if [ ! -f "$d/$k.out" ] && [ ! -f "$d/$k.rc" ]; then
  echo "fake {name}: nothing recorded for: $*" >&2
  exit 2
fi
[ -f "$d/$k.sleep" ] && sleep "$(cat "$d/$k.sleep")"
[ -f "$d/$k.err" ] && cat "$d/$k.err" >&2
[ -f "$d/$k.out" ] && cat "$d/$k.out"
[ -f "$d/$k.rc" ] && exit "$(cat "$d/$k.rc")"
exit 0
"""


def _key(args: Iterable[str]) -> str:
    return "argv_" + "".join(arg + "_" for arg in args)


def write_tool(bin_dir: str, name: str, replies: Dict[Args, Any], default: Optional[Reply] = None) -> str:
    """Create ``bin_dir/name`` answering each argument tuple in ``replies``.

    A reply is a :class:`Reply` or a plain string (stdout, rc 0).  Argument
    lists without a recorded reply get ``default`` or fail with rc 2.
    """
    data = os.path.join(bin_dir, "." + name + ".d")
    os.makedirs(data, exist_ok=True)
    items: List[Tuple[str, Any]] = [(_key(args), reply) for args, reply in replies.items()]
    if default is not None:
        items.append(("default", default))
    for key, reply in items:
        if isinstance(reply, str):
            reply = Reply(stdout=reply)
        with open(os.path.join(data, key + ".out"), "w") as handle:
            handle.write(reply.stdout)
        with open(os.path.join(data, key + ".rc"), "w") as handle:
            handle.write(str(reply.rc))
        if reply.stderr:
            with open(os.path.join(data, key + ".err"), "w") as handle:
                handle.write(reply.stderr)
        if reply.sleep:
            with open(os.path.join(data, key + ".sleep"), "w") as handle:
                handle.write(str(reply.sleep))
    path = os.path.join(bin_dir, name)
    with open(path, "w") as handle:
        handle.write(_SCRIPT.format(name=name, data=data))
    os.chmod(path, 0o755)
    return path


def read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _with_ids(text: str, npu_id: int, chip_id: Optional[int] = None) -> str:
    """Rewrite the ``NPU ID`` / ``Chip ID`` lines of a key-value template."""
    text = re.sub(r"(?m)^(\s*NPU ID\s*:\s*)\d+", lambda m: m.group(1) + str(npu_id), text)
    if chip_id is not None:
        text = re.sub(r"(?m)^(\s*Chip ID\s*:\s*)\d+", lambda m: m.group(1) + str(chip_id), text)
    return text


def npu_smi_replies(case_dir: str, template_dir: Optional[str] = None) -> Dict[Args, Any]:
    """Replies of a fake ``npu-smi`` built from an Ascend fixture folder.

    ``info.txt``, ``info-l.txt`` and ``info-m.txt`` answer ``info``, ``info -l``
    and ``info -m``.  Board, health and usages answers are rendered per NPU /
    chip from ``board.txt``, ``health.txt``, ``usages.txt`` of ``case_dir`` or,
    when missing there, of ``template_dir`` (default: the A2 folder).
    """
    template_dir = template_dir or os.path.join(FIXTURES, "ascend", "atlas-800i-a2")
    replies: Dict[Args, Any] = {}
    for args, name in ((("info",), "info.txt"), (("info", "-l"), "info-l.txt"), (("info", "-m"), "info-m.txt")):
        path = os.path.join(case_dir, name)
        if os.path.exists(path):
            replies[args] = read(path)

    def template(name: str) -> str:
        own = os.path.join(case_dir, name)
        return read(own if os.path.exists(own) else os.path.join(template_dir, name))

    chips: List[Tuple[int, int]] = []
    mapping = replies.get(("info", "-m"), "")
    for line in mapping.splitlines():
        match = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s", line)
        if match:
            chips.append((int(match.group(1)), int(match.group(2))))
    # bus id of each NPU's first chip, from the table, so board answers differ per NPU
    buses: Dict[int, str] = {}
    npu = None
    for line in replies.get(("info",), "").splitlines():
        top = re.match(r"^\|\s*(\d+)\s+\S+\s*\|\s*[A-Za-z]+\s*\|", line)
        bottom = re.search(r"\|\s*([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*\|", line)
        if top:
            npu = int(top.group(1))
        elif bottom and npu is not None:
            buses.setdefault(npu, bottom.group(1))
    for npu_id in sorted(set(chip[0] for chip in chips)):
        board = _with_ids(template("board.txt"), npu_id)
        if npu_id in buses:
            board = re.sub(r"(?m)^(\s*PCIe Bus Info\s*:\s*)\S+", lambda m, bus=buses[npu_id]: m.group(1) + bus, board)
        replies[("info", "-t", "board", "-i", str(npu_id))] = board
    for npu_id, chip_id in chips:
        ids = ("-i", str(npu_id), "-c", str(chip_id))
        replies[("info", "-t", "health") + ids] = _with_ids(template("health.txt"), npu_id, chip_id)
        replies[("info", "-t", "usages") + ids] = _with_ids(template("usages.txt"), npu_id, chip_id)
    return replies


def ascend_root(tmp_path: str, arch: str = "aarch64") -> Dict[str, str]:
    """An ``/usr/local/Ascend`` tree plus ``/etc/ascend_install.info`` from ``fixtures/ascend/versions``."""
    versions = os.path.join(FIXTURES, "ascend", "versions")
    root = os.path.join(tmp_path, "Ascend")
    for source, target in (("driver-version.info", "driver/version.info"),
                           ("firmware-version.info", "firmware/version.info"),
                           ("ascend_toolkit_install.info", f"ascend-toolkit/latest/{arch}-linux/ascend_toolkit_install.info")):
        os.makedirs(os.path.dirname(os.path.join(root, target)), exist_ok=True)
        shutil.copy(os.path.join(versions, source), os.path.join(root, target))
    return {"ascend_root": root, "ascend_install_info": os.path.join(versions, "ascend_install.info")}


def procfs(tmp_path: str, cpuinfo: str, meminfo: str, nvidia_version: Optional[str] = None) -> str:
    """A ``/proc`` stand-in holding cpuinfo, meminfo and optionally driver/nvidia/version."""
    root = os.path.join(tmp_path, "proc")
    os.makedirs(root, exist_ok=True)
    shutil.copy(cpuinfo, os.path.join(root, "cpuinfo"))
    shutil.copy(meminfo, os.path.join(root, "meminfo"))
    if nvidia_version:
        os.makedirs(os.path.join(root, "driver", "nvidia"), exist_ok=True)
        shutil.copy(nvidia_version, os.path.join(root, "driver", "nvidia", "version"))
    return root


def host_args(tmp_path: str, sysfs: Optional[str], cpu: str, architecture: str, **extra: Any) -> Dict[str, Any]:
    """Module arguments for a replayed host: fixture sysfs, CPU files, an empty tool dir.

    ``cpu`` names a folder under ``fixtures/cpu`` (or any folder with cpuinfo
    and meminfo).  Nothing on the real machine is looked at: tools come only
    from ``<tmp_path>/bin`` and the Ascend root is empty unless ``extra`` sets it.
    """
    cpu_dir = cpu if os.path.isabs(cpu) else os.path.join(FIXTURES, "cpu", cpu)
    bin_dir = os.path.join(tmp_path, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    meminfo = os.path.join(cpu_dir, "meminfo")
    if not os.path.exists(meminfo):
        meminfo = os.path.join(FIXTURES, "cpu", "kunpeng920", "meminfo")
    args = {
        "sysfs_root": sysfs or os.path.join(tmp_path, "no-sysfs"),
        "procfs_root": procfs(tmp_path, os.path.join(cpu_dir, "cpuinfo"), meminfo),
        "ascend_root": os.path.join(tmp_path, "no-ascend"),
        "ascend_install_info": os.path.join(tmp_path, "no-ascend_install.info"),
        "tool_path": [bin_dir],
        "tool_path_only": True,
        "architecture": architecture,
    }
    args.update(extra)
    return args


def nvidia_host(tmp_path: str, case_dir: str, architecture: str = "x86_64") -> Dict[str, Any]:
    """Module arguments replaying a captured NVIDIA host folder (see the module docstring)."""
    bin_dir = os.path.join(tmp_path, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    replies: Dict[Args, Any] = {}
    if os.path.exists(os.path.join(case_dir, "query-gpu.csv")):
        replies[tuple(QUERY_ARGS)] = read(os.path.join(case_dir, "query-gpu.csv"))
    if os.path.exists(os.path.join(case_dir, "nvidia-smi-q-x.xml")):
        replies[("-q", "-x")] = read(os.path.join(case_dir, "nvidia-smi-q-x.xml"))
    if replies:
        write_tool(bin_dir, "nvidia-smi", replies)
    version = os.path.join(case_dir, "proc-driver-nvidia-version")
    return {
        "sysfs_root": os.path.join(case_dir, "sysfs"),
        "procfs_root": procfs(tmp_path, os.path.join(case_dir, "cpuinfo"), os.path.join(case_dir, "meminfo"),
                              version if os.path.exists(version) else None),
        "ascend_root": os.path.join(tmp_path, "no-ascend"),
        "ascend_install_info": os.path.join(tmp_path, "no-ascend_install.info"),
        "tool_path": [bin_dir],
        "tool_path_only": True,
        "architecture": architecture,
    }


def run_module(args: Dict[str, Any], check_mode: bool = False) -> Tuple[Dict[str, Any], List[str]]:
    """Run accelerator_facts in-process; return ``(result, warnings)``. Raises if the module failed."""
    warnings: List[str] = []
    failed, result = run_main(accelerator_facts.main, args, check_mode, warnings)
    if failed:
        raise AssertionError(f"module failed: {result!r}")
    return result, warnings


def facts_of(result: Dict[str, Any]) -> Dict[str, Any]:
    return result["ansible_facts"]["kunpeng_accelerators"]


def comparable(facts: Dict[str, Any]) -> Dict[str, Any]:
    """Facts with the machine-specific parts (tool paths, tmp dirs) reduced, for saved-JSON comparison."""
    data = json.loads(json.dumps(facts))
    for section in ("ascend", "nvidia"):
        if data[section].get("tool"):
            data[section]["tool"] = os.path.basename(data[section]["tool"])
    toolkit = data["ascend"]["versions"].get("toolkit_info_path")
    if toolkit:
        data["ascend"]["versions"]["toolkit_info_path"] = os.path.basename(toolkit)
    return data
