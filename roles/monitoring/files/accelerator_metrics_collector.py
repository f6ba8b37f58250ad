# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Write accelerator readings for the node exporter's textfile collector.

Runs ``nvidia-smi -q -x`` and/or ``npu-smi info`` (whichever is on PATH),
parses them with the collection's own parsers (plugins/module_utils) and
writes ``kunpeng_accelerator.prom`` into the textfile directory atomically
(temporary file in the same directory, then rename), so the node exporter
never reads half a file.  Python 3 standard library only.

  python3 accelerator_metrics_collector.py --once --stdout
  python3 accelerator_metrics_collector.py --textfile-dir /var/lib/prometheus/node-exporter

The parsers are found beside this file (``module_utils/``, where the
monitoring role installs them) or, in a checkout of the collection, under
``plugins/module_utils``; ``--module-utils DIR`` names another place.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import types

_PACKAGE = "ansible_collections.kunpeng.vllm.plugins.module_utils.probe"
TEXTFILE_NAME = "kunpeng_accelerator.prom"


def _module_utils_candidates(explicit):
    here = os.path.dirname(os.path.abspath(__file__))
    if explicit:
        return [explicit]
    return [os.path.join(here, "module_utils"),
            os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(here))), "plugins", "module_utils", "probe")]


def load_parsers(explicit=None):
    """Import accelerator_metrics under its collection name from a plain directory.

    The module_utils import each other as ``ansible_collections.kunpeng.vllm
    .plugins.module_utils.probe.<name>``; registering that package with the found
    directory as its path makes those imports work without Ansible.
    """
    for directory in _module_utils_candidates(explicit):
        if os.path.isfile(os.path.join(directory, "accelerator_metrics.py")):
            break
    else:
        raise SystemExit("accelerator_metrics.py not found in: " + ", ".join(_module_utils_candidates(explicit)))
    parts = _PACKAGE.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        module = sys.modules.get(name)
        if module is None or depth == len(parts):
            module = types.ModuleType(name)
            module.__path__ = [directory] if depth == len(parts) else []
            sys.modules[name] = module
    __import__(_PACKAGE + ".accelerator_metrics")
    return sys.modules[_PACKAGE + ".accelerator_metrics"]


def _which(tool):
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = os.path.join(directory, tool)
        if directory and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _run(argv, timeout):
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def write_atomically(directory, name, text):
    """Temporary file in the target directory, fsync, chmod 0644, rename."""
    handle, temporary = tempfile.mkstemp(prefix="." + name + ".", dir=directory)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, os.path.join(directory, name))
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--textfile-dir", default="/var/lib/prometheus/node-exporter",
                        help="the node exporter's --collector.textfile.directory")
    parser.add_argument("--stdout", action="store_true", help="print the metrics instead of writing the file")
    parser.add_argument("--once", action="store_true", help="collect once and exit (the timer's mode)")
    parser.add_argument("--interval", type=float, default=15.0, help="seconds between runs without --once")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one vendor tool may take")
    parser.add_argument("--module-utils", help="directory holding accelerator_metrics.py and its parsers")
    args = parser.parse_args(argv)
    metrics = load_parsers(args.module_utils)
    while True:
        vendors = metrics.vendors_present(_which)
        results = metrics.collect(vendors, lambda command: _run(command, args.timeout))
        text = metrics.render(results, time.time())
        if args.stdout:
            sys.stdout.write(text)
        else:
            write_atomically(args.textfile_dir, TEXTFILE_NAME, text)
        for vendor in sorted(results):
            if not results[vendor]["ok"]:
                sys.stderr.write("{}: {}\n".format(vendor, results[vendor]["error"]))
        if args.once:
            return 0 if all(result["ok"] for result in results.values()) else 1
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
