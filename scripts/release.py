"""Make a release of the collection: ``make release`` runs this.

main's galaxy.yml always names the next version.  A release turns the
unreleased changelog fragments into that version's section of
changelogs/changelog.yaml and CHANGELOG.rst (``antsibull-changelog release``,
which reads the version from galaxy.yml), commits the result and tags the
commit ``v<version>`` (annotated).  Everything is checked first, so a refused
release leaves the checkout as it was:

- the working tree is clean (the tag must name exactly what was tested);
- galaxy.yml's version is the next patch, minor or major of the latest
  released version, and neither released nor tagged yet;
- there are unreleased fragments (a release with nothing in it is a mistake).

It pushes nothing and uploads nothing: ``git push --follow-tags`` and
``ansible-galaxy collection publish`` stay deliberate steps (CONTRIBUTING.md).
After the release, set galaxy.yml (with the README's install line and
execution-environment.yml's tag) to the next version in a commit of its own.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


def parse(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a plain release version; None for anything else (pre-releases included)."""
    match = SEMVER.match(version)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def latest_release(released: list[str]) -> str | None:
    """The highest plain version of changelogs/changelog.yaml's releases."""
    plain = [v for v in released if parse(v)]
    return max(plain, key=parse) if plain else None


def next_versions(latest: str | None) -> set[str]:
    """The versions that may follow ``latest``: its next patch, minor or major (0.1.0 or 1.0.0 for the first)."""
    if latest is None:
        return {"0.1.0", "1.0.0"}
    major, minor, patch = parse(latest)
    return {f"{major}.{minor}.{patch + 1}", f"{major}.{minor + 1}.0", f"{major + 1}.0.0"}


def release_problems(version: str, released: list[str], tags: list[str], dirty: list[str],
                     fragments: list[str], readme_tarballs: list[str]) -> list[str]:
    """Why a release of ``version`` must not be made now; empty when it may.

    ``released`` are changelog.yaml's versions, ``tags`` the repository's tags, ``dirty`` the lines of
    ``git status --porcelain``, ``fragments`` the unreleased fragment files, ``readme_tarballs`` the files the
    README's install lines name.
    """
    problems = []
    if dirty:
        problems.append(f"the working tree is not clean ({len(dirty)} changed or untracked paths): commit or stash them")
    if parse(version) is None:
        problems.append(f"galaxy.yml's version {version!r} is not a plain MAJOR.MINOR.PATCH version")
    elif version in released:
        problems.append(f"{version} is released already (changelogs/changelog.yaml): set galaxy.yml to the next version")
    else:
        latest = latest_release(released)
        allowed = next_versions(latest)
        if version not in allowed:
            problems.append(f"galaxy.yml's version {version} does not follow the latest release {latest}: "
                            f"use one of {', '.join(sorted(allowed, key=parse))}")
    if f"v{version}" in tags:
        problems.append(f"the tag v{version} exists already")
    if not fragments:
        problems.append("changelogs/fragments/ holds no unreleased fragment: there is nothing to release")
    if readme_tarballs != [tarball_name(version)]:
        problems.append(f"README.md installs {', '.join(readme_tarballs) or 'no tarball'}, not {tarball_name(version)}")
    return problems


def tarball_name(version: str) -> str:
    """The file ``ansible-galaxy collection build`` writes for this collection."""
    return f"kunpeng-vllm-{version}.tar.gz"


def readme_tarballs(readme: str) -> list[str]:
    """The tarballs the README's ``ansible-galaxy collection install`` lines name."""
    return re.findall(r"ansible-galaxy collection install (\S+\.tar\.gz)", readme)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _read_yaml(*parts: str) -> dict:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--antsibull-changelog", default="antsibull-changelog",
                        help="the antsibull-changelog executable (default: from PATH)")
    args = parser.parse_args(argv)

    version = str(_read_yaml("galaxy.yml")["version"])
    released = [str(v) for v in (_read_yaml("changelogs", "changelog.yaml").get("releases") or {})]
    fragments_dir = os.path.join(ROOT, "changelogs", "fragments")
    # A fresh clone has no fragments folder right after a release (git keeps no empty folder).
    fragments = [n for n in os.listdir(fragments_dir) if n.endswith((".yml", ".yaml"))] if os.path.isdir(fragments_dir) else []
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    problems = release_problems(version, released, _git("tag", "--list").split(),
                                _git("status", "--porcelain").splitlines(), fragments, readme_tarballs(readme))
    if problems:
        print(f"release {version} refused:", *(f"  - {p}" for p in problems), sep="\n", file=sys.stderr)
        return 1

    subprocess.run([args.antsibull_changelog, "release"], cwd=ROOT, check=True)
    _git("add", "-A", "--", "CHANGELOG.rst", "changelogs")
    _git("commit", "-q", "-m", f"Release {version}")
    _git("tag", "-a", f"v{version}", "-m", f"kunpeng.vllm {version}")
    print(f"Released {version}: commit {_git('rev-parse', '--short', 'HEAD').strip()}, tag v{version}.\n"
          f"Next: git push --follow-tags; ansible-galaxy collection build; then set galaxy.yml, the README's "
          f"install line and execution-environment.yml's tag to the next version.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
