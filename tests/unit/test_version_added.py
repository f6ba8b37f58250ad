"""``version_added`` of every module, filter and role entry point names the
release that first shipped it.

A release is a key of ``changelogs/changelog.yaml``; what it shipped is the
tree of the commit that first recorded it there (git history, no tags
needed).  Content that no release shipped yet claims the upcoming version:
``galaxy.yml``'s version once it is ahead of the last release, otherwise the
next minor one.  The changelog's lists of new modules, filters and roles of
each release must match the same history, since ``antsibull-changelog
release`` announces content by its ``version_added``.
"""

import ast
import os
import subprocess

import pytest
import yaml
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHANGELOG = "changelogs/changelog.yaml"


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True, text=True).stdout


def _git_history():
    try:
        shallow = _git("rev-parse", "--is-shallow-repository").strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the release commits cannot be read")
    if shallow == "true":
        pytest.skip("shallow clone: run 'git fetch --unshallow' to check version_added against the release commits")


def _documentation(source):
    """The DOCUMENTATION mapping of a plugin's source, without importing it."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DOCUMENTATION" for t in node.targets):
            return yaml.safe_load(node.value.value)
    raise AssertionError("no DOCUMENTATION")


class Tree:
    """Plugins and role entry points of one tree: the checkout or a commit."""

    def __init__(self, commit=None):
        self.commit = commit

    def _list(self, path):
        if self.commit:
            return [os.path.basename(p) for p in _git("ls-tree", "--name-only", f"{self.commit}:{path}").split()]
        return sorted(os.listdir(os.path.join(ROOT, path))) if os.path.isdir(os.path.join(ROOT, path)) else []

    def read(self, path):
        if self.commit:
            return _git("show", f"{self.commit}:{path}")
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()

    def plugins(self, kind):
        """{name: path} of the modules ('modules') or filter plugins ('filter')."""
        base = f"plugins/{kind}"
        return {n[:-3]: f"{base}/{n}" for n in self._list(base) if n.endswith(".py") and n != "__init__.py"}

    def roles(self):
        return [r for r in self._list("roles") if r != ".gitkeep"]

    def entry_points(self):
        """{'role:entry_point': spec} of every role."""
        found = {}
        for role in self.roles():
            specs = yaml.safe_load(self.read(f"roles/{role}/meta/argument_specs.yml"))["argument_specs"]
            found.update({f"{role}:{ep}": spec for ep, spec in specs.items()})
        return found

    def content(self):
        """{(kind, name)} of what this tree ships."""
        items = {("module", n) for n in self.plugins("modules")} | {("filter", n) for n in self.plugins("filter")}
        return items | {("role", r) for r in self.roles()} | {("entry_point", e) for e in self.entry_points()}


def releases():
    """Released versions of changelog.yaml, oldest first, with their entries."""
    data = yaml.safe_load(Tree().read(CHANGELOG))["releases"]
    return {v: data[v] for v in sorted(data, key=Version)}


def upcoming(released, galaxy_version):
    """The version unreleased content claims."""
    last = max((Version(v) for v in released), default=None)
    if last is None or Version(galaxy_version) > last:
        return galaxy_version
    return f"{last.major}.{last.minor + 1}.0"


def first_shipped(shipped_by_release, item, next_version):
    """The first release (oldest first mapping of version -> content) that shipped item."""
    return next((v for v, content in shipped_by_release.items() if item in content), next_version)


def release_commits(versions):
    """{version: commit} of the commit that first recorded each release in changelog.yaml."""
    found = {}
    for commit in _git("log", "--reverse", "--format=%H", "--", CHANGELOG).split():
        recorded = (yaml.safe_load(Tree(commit).read(CHANGELOG)) or {}).get("releases") or {}
        for version in recorded:
            found.setdefault(version, commit)
    missing = [v for v in versions if v not in found]
    assert not missing, f"no commit records releases {missing} in {CHANGELOG}"
    return {v: found[v] for v in versions}


def claimed_versions(tree):
    """{(kind, name): version_added} of what the checkout ships (roles by their main entry point)."""
    claimed = {}
    for kind, plugin_dir in (("module", "modules"), ("filter", "filter")):
        for name, path in tree.plugins(plugin_dir).items():
            claimed[(kind, name)] = str(_documentation(tree.read(path)).get("version_added"))
    for name, spec in tree.entry_points().items():
        claimed[("entry_point", name)] = str(spec.get("version_added"))
    return claimed


@pytest.fixture(scope="module")
def history():
    _git_history()
    released = releases()
    commits = release_commits(list(released))
    shipped = {v: Tree(c).content() for v, c in commits.items()}
    galaxy_version = str(yaml.safe_load(Tree().read("galaxy.yml"))["version"])
    return released, shipped, upcoming(released, galaxy_version)


@pytest.mark.parametrize(("released", "galaxy_version", "expected"), [
    ({}, "0.1.0", "0.1.0"),
    ({"0.1.0": {}}, "0.1.0", "0.2.0"),  # galaxy.yml not bumped yet
    ({"0.1.0": {}}, "1.0.0", "1.0.0"),
    ({"0.1.0": {}, "0.10.0": {}, "0.2.0": {}}, "0.2.0", "0.11.0"),
])
def test_upcoming_version(released, galaxy_version, expected):
    assert upcoming(released, galaxy_version) == expected


@pytest.mark.parametrize(("item", "expected"), [
    (("module", "a"), "0.1.0"),
    (("module", "b"), "0.2.0"),
    (("module", "c"), "0.3.0"),  # in no release yet
])
def test_first_shipped(item, expected):
    shipped = {"0.1.0": {("module", "a")}, "0.2.0": {("module", "a"), ("module", "b")}}
    assert first_shipped(shipped, item, "0.3.0") == expected


def test_version_added_names_the_first_release_that_shipped_it(history):
    _released, shipped, next_version = history
    claimed = claimed_versions(Tree())
    assert any(item[0] == "entry_point" for item in claimed)
    wrong = {f"{kind} {name}": f"claims {have}, first shipped in {first_shipped(shipped, (kind, name), next_version)}"
             for (kind, name), have in sorted(claimed.items())
             if have != first_shipped(shipped, (kind, name), next_version)}
    assert not wrong, wrong


@pytest.mark.parametrize(("kind", "changelog_key"), [("module", "modules"), ("filter", "plugins.filter"),
                                                     ("role", "objects.role")])
def test_changelog_announces_what_each_release_added(history, kind, changelog_key):
    released, shipped, _next = history
    earlier = set()
    for version, entry in released.items():
        listed = entry
        for key in changelog_key.split("."):
            listed = (listed or {}).get(key) or {}
        announced = {item["name"] for item in listed or []}
        added = {name for k, name in shipped[version] - earlier if k == kind}
        if kind == "role":
            # antsibull-changelog announces a role by its main entry point (internal roles have none).
            added = {r for r in added if ("entry_point", f"{r}:main") in shipped[version]}
        assert announced == added, f"{version}: changelog lists {sorted(announced)}, the release added {sorted(added)}"
        earlier |= shipped[version]
