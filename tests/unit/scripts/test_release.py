"""scripts/release.py (``make release``): when a release is refused, and the versions main may name.

The checkout itself is held to the same rules: galaxy.yml names a released version or the next one, and the README's
install line names the tarball of that version (test_galaxy_metadata.py builds it and compares the file name).
"""

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import release  # noqa: E402

CLEAN, FRAGMENT = [], ["sanity-python-requires.yml"]


@pytest.mark.parametrize(("latest", "expected"), [
    ("0.2.0", {"0.2.1", "0.3.0", "1.0.0"}),
    ("1.4.9", {"1.4.10", "1.5.0", "2.0.0"}),
    (None, {"0.1.0", "1.0.0"}),
])
def test_next_versions(latest, expected):
    assert release.next_versions(latest) == expected


@pytest.mark.parametrize(("released", "expected"), [
    (["0.1.0", "0.2.0"], "0.2.0"),
    (["0.10.0", "0.9.1"], "0.10.0"),
    ([], None),
])
def test_latest_release_compares_numerically(released, expected):
    assert release.latest_release(released) == expected


def _readme(version):
    return [release.tarball_name(version)]


@pytest.mark.parametrize(("version", "released", "tags", "dirty", "fragments", "expected"), [
    # The release of this batch: 0.3.0 after 0.2.0.
    ("0.3.0", ["0.1.0", "0.2.0"], [], CLEAN, FRAGMENT, []),
    ("0.2.1", ["0.1.0", "0.2.0"], ["v0.1.0"], CLEAN, FRAGMENT, []),
    ("0.2.0", ["0.1.0", "0.2.0"], [], CLEAN, FRAGMENT, ["0.2.0 is released already"]),
    ("0.4.0", ["0.1.0", "0.2.0"], [], CLEAN, FRAGMENT, ["does not follow the latest release 0.2.0"]),
    ("0.3.0-rc1", ["0.2.0"], [], CLEAN, FRAGMENT, ["is not a plain MAJOR.MINOR.PATCH version"]),
    ("0.3.0", ["0.2.0"], ["v0.3.0"], CLEAN, FRAGMENT, ["the tag v0.3.0 exists already"]),
    ("0.3.0", ["0.2.0"], [], [" M galaxy.yml", "?? notes.txt"], FRAGMENT, ["the working tree is not clean (2 changed"]),
    ("0.3.0", ["0.2.0"], [], CLEAN, [], ["holds no unreleased fragment"]),
    ("0.1.0", [], [], CLEAN, FRAGMENT, []),
])
def test_release_problems(version, released, tags, dirty, fragments, expected):
    problems = release.release_problems(version, released, tags, dirty, fragments, _readme(version))
    assert len(problems) == len(expected), problems
    for problem, words in zip(problems, expected):
        assert words in problem


@pytest.mark.parametrize(("readme", "expected"), [
    (["kunpeng-vllm-0.3.0.tar.gz"], []),
    (["kunpeng-vllm-0.2.0.tar.gz"], ["README.md installs kunpeng-vllm-0.2.0.tar.gz, not kunpeng-vllm-0.3.0.tar.gz"]),
    ([], ["README.md installs no tarball, not kunpeng-vllm-0.3.0.tar.gz"]),
])
def test_release_refuses_a_readme_naming_another_tarball(readme, expected):
    assert release.release_problems("0.3.0", ["0.2.0"], [], CLEAN, FRAGMENT, readme) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("ansible-galaxy collection install kunpeng-vllm-0.3.0.tar.gz     # from a release tarball", ["kunpeng-vllm-0.3.0.tar.gz"]),
    ("ansible-galaxy collection install kunpeng.vllm", []),
])
def test_readme_tarballs(text, expected):
    assert release.readme_tarballs(text) == expected


def _checkout():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as f:
        version = str(yaml.safe_load(f)["version"])
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml"), encoding="utf-8") as f:
        released = [str(v) for v in yaml.safe_load(f)["releases"]]
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return version, released, readme


def test_main_names_a_released_or_the_next_version():
    version, released, _readme = _checkout()
    assert version in released or version in release.next_versions(release.latest_release(released)), (
        f"galaxy.yml's {version} is neither released nor the next version after {release.latest_release(released)}")


def test_readme_names_the_version_galaxy_yml_names():
    """The install line and the tag the README names are those of galaxy.yml's version, never another release's."""
    version, _released, readme = _checkout()
    assert release.readme_tarballs(readme) == [release.tarball_name(version)]
    assert re.findall(r"kunpeng-vllm-(\S+?)\.tar\.gz", readme) == [version]
    assert set(re.findall(r"`v(\d+\.\d+\.\d+)`", readme)) == {version}


def test_release_refuses_a_dirty_tree_and_changes_nothing(tmp_path):
    """The script run for real on a copy of the release inputs with an uncommitted change: refused, no commit,
    no tag, the fragments kept."""
    for path in ("galaxy.yml", "README.md", "changelogs/changelog.yaml", "changelogs/config.yaml", "scripts/release.py"):
        os.makedirs(tmp_path / os.path.dirname(path), exist_ok=True)
        with open(os.path.join(ROOT, path), encoding="utf-8") as src:
            (tmp_path / path).write_text(src.read())
    (tmp_path / "changelogs" / "fragments").mkdir()
    (tmp_path / "changelogs" / "fragments" / "x.yml").write_text("---\nbugfixes:\n  - x - y.\n")

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "base")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "inputs")
    (tmp_path / "changelogs" / "fragments" / "uncommitted.yml").write_text("---\nbugfixes:\n  - z - w.\n")
    result = subprocess.run([sys.executable, str(tmp_path / "scripts" / "release.py"),
                             "--antsibull-changelog", "/bin/false"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 1
    assert "the working tree is not clean" in result.stderr
    assert git("tag", "--list") == "" and git("rev-list", "--count", "HEAD").strip() == "2"
    assert sorted(os.listdir(tmp_path / "changelogs" / "fragments")) == ["uncommitted.yml", "x.yml"]
