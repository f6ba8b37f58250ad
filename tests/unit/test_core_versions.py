"""The ansible-core range the collection claims is the range CI tests.

meta/runtime.yml's requires_ansible, the minors scripts/core-versions.sh
installs (plus the development venv's, requirements-dev.txt), the sanity
ignore files, and galaxy.yml's collection lower bounds (the versions the
lowest minor's venv carries) are held to each other here.
"""

import json
import os
import re

import ansible
import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "core-versions.sh")


def _read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def claimed_minors(requires_ansible, newest_minor=40):
    """Every ansible-core 2.X whose releases fall (at least in part) inside ``requires_ansible``."""
    spec = SpecifierSet(requires_ansible)
    return [f"2.{x}" for x in range(newest_minor + 1)
            if any(Version(f"2.{x}.{patch}") in spec for patch in range(30))]


def script_minors():
    """The minors scripts/core-versions.sh installs by default, and its collection bundle table."""
    text = _read("scripts", "core-versions.sh")
    default = re.search(r"versions=\$\{CORE_VERSIONS:-([0-9. ]+)\}", text).group(1).split()
    bundles = dict(re.findall(r"\[(2\.[0-9]+)\]=([0-9.]+)", text))
    return default, bundles


def dev_minor():
    pin = re.search(r"^ansible-core==([0-9]+\.[0-9]+)\.", _read("requirements-dev.txt"), re.M).group(1)
    return pin


@pytest.mark.parametrize("requires, expected", [
    (">=2.16.0,<2.20.0", ["2.16", "2.17", "2.18", "2.19"]),
    (">=2.16.0", [f"2.{x}" for x in range(16, 41)]),
    (">=2.17.3,<2.19", ["2.17", "2.18"]),
    ("==2.19.*", ["2.19"]),
])
def test_claimed_minors(requires, expected):
    assert claimed_minors(requires) == expected


def test_every_claimed_minor_is_tested():
    """Every minor from requires_ansible's lower bound to the newest one CI tests is tested (no gap).

    requires_ansible has no upper bound (a newer minor is not refused at install); the newest minor
    scripts/core-versions.sh installs is the newest one this commit was tested on.
    """
    default, bundles = script_minors()
    tested = sorted(default + [dev_minor()], key=Version)
    newest = int(tested[-1].split(".")[1])
    claimed = claimed_minors(yaml.safe_load(_read("meta", "runtime.yml"))["requires_ansible"], newest_minor=newest)
    assert tested == claimed, "meta/runtime.yml's requires_ansible and the minors CI tests differ"
    assert sorted(bundles) == sorted(default), "every minor scripts/core-versions.sh installs needs its bundle"


def test_every_tested_minor_has_its_sanity_ignore_file():
    default, _bundles = script_minors()
    for minor in default + [dev_minor()]:
        assert os.path.isfile(os.path.join(ROOT, "tests", "sanity", f"ignore-{minor}.txt")), minor
    found = sorted(f[len("ignore-"):-len(".txt")] for f in os.listdir(os.path.join(ROOT, "tests", "sanity")))
    assert found == sorted(default + [dev_minor()], key=Version), "an ignore file for a minor that is not tested"


def _installed_collections():
    """namespace.name -> version of the collections the running ansible-core finds in site-packages."""
    base = os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), "ansible_collections")
    found = {}
    for dependency in yaml.safe_load(_read("galaxy.yml"))["dependencies"]:
        manifest = os.path.join(base, *dependency.split("."), "MANIFEST.json")
        if os.path.isfile(manifest):
            with open(manifest, encoding="utf-8") as handle:
                found[dependency] = json.load(handle)["collection_info"]["version"]
    return found


def test_installed_collections_fit_the_declared_ranges():
    """Run on every tested minor: its collections satisfy galaxy.yml; on the lowest they are the lower bounds."""
    declared = yaml.safe_load(_read("galaxy.yml"))["dependencies"]
    installed = _installed_collections()
    assert installed, "no collection of galaxy.yml's dependencies next to this ansible-core"
    for name, version in installed.items():
        assert Version(version) in SpecifierSet(declared[name]), (name, version, declared[name])
    from ansible.release import __version__ as core

    lowest = claimed_minors(yaml.safe_load(_read("meta", "runtime.yml"))["requires_ansible"])[0]
    if Version(core).release[:2] == Version(lowest).release:
        lower = {name: re.match(r">=([0-9.]+)", declared[name]).group(1) for name in installed}
        assert installed == lower, "galaxy.yml's lower bounds are not what the lowest ansible-core's venv tests"


def test_every_ignore_file_holds_the_current_ones():
    # A module added later needs its ignore lines on every tested minor, not only on the newest.
    folder = os.path.join(ROOT, "tests", "sanity")
    with open(os.path.join(folder, f"ignore-{dev_minor()}.txt")) as handle:
        current = {line for line in handle.read().splitlines() if line.strip()}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as handle:
            lines = set(handle.read().splitlines())
        assert current - lines == set(), name
