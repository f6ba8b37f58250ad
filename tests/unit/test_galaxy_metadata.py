"""What Galaxy, ansible-builder and an execution environment read from the
collection: declared dependencies, the EE requirements where ansible-builder
looks for them, an EE definition that builds from the checkout, and a
released changelog with unreleased fragments kept out of the tarball."""

import ast
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIPPED_DIRS = ("roles", "playbooks", "inventories", "plugins", "meta")
_NAME = r"([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*"
# Where a plugin is named: a task's module key, a connection, a filter or test
# after | or is, a lookup / map / select argument in quotes.
FQCN = re.compile(rf"^\s*(?:- )?{_NAME}:(?:\s|$)|ansible_connection:\s*{_NAME}\b|(?:\||\bis)\s*{_NAME}\b|['\"]{_NAME}['\"]", re.M)
# First two parts that are Python packages or Ansible itself, not collections.
NOT_COLLECTIONS = {("ansible", "builtin"), ("ansible", "module_utils"), ("ansible", "errors"), ("ansible", "plugins"),
                   ("ansible", "utils"), ("ansible", "template"), ("ansible", "parsing"), ("kunpeng", "vllm")}
# Optional collections: not dependencies (an install does not pull them in), used only by the task files named
# here, which are included only when the feature is asked for (playbooks/k8s_export.yml includes the apply tasks
# only with vllm_k8s_kubeconfig), so the rest of the collection runs without them.
OPTIONAL = {"kubernetes.core": {"playbooks/tasks/k8s_apply.yml"}}


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return yaml.safe_load(f)


def _text(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def _fqcn_uses():
    """(namespace.name, file) of every FQCN in the YAML and templates the tarball ships, in file order."""
    for top in SHIPPED_DIRS:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml", ".j2")):
                    path = os.path.join(dirpath, name)
                    with open(path, encoding="utf-8") as f:
                        for match in FQCN.finditer(f.read()):
                            groups = [g for g in match.groups() if g]
                            pair = (groups[0], groups[1])
                            if pair not in NOT_COLLECTIONS:
                                yield ".".join(pair), os.path.relpath(path, ROOT)


def _collections_used():
    """namespace.name of every FQCN in the YAML and templates the tarball ships, with the first file using it."""
    used = {}
    for collection, where in _fqcn_uses():
        used.setdefault(collection, where)
    return used


DEMO = os.path.join("inventories", "demo")


def _demo_requirements():
    return {c["name"] for c in _yaml(DEMO, "requirements.yml")["collections"]}


def test_every_collection_the_content_uses_is_declared():
    declared = set(_yaml("galaxy.yml")["dependencies"])
    used = {c: where for c, where in _collections_used().items() if not where.startswith(DEMO + os.sep)}
    assert {"ansible.posix", "community.general"} <= set(used)
    missing = {c: where for c, where in used.items() if c not in declared and c not in OPTIONAL}
    assert not missing, f"used but not in galaxy.yml dependencies: {missing}"
    assert not set(OPTIONAL) & declared, "an optional collection is a dependency in galaxy.yml"


# galaxy-importer refuses a collection without it ("'repository' is required"); the one placeholder left.
REQUIRED_BY_THE_IMPORTER = {"repository"}


def test_galaxy_metadata_names_no_placeholder():
    """An example.org link or e-mail would show on the Galaxy page; optional keys are left out instead."""
    galaxy = _yaml("galaxy.yml")
    placeholders = {key for key, value in galaxy.items() if isinstance(value, str) and "example." in value}
    assert placeholders <= REQUIRED_BY_THE_IMPORTER, placeholders
    assert not {"documentation", "homepage", "issues"} & set(galaxy), "a link with no real address: leave it out"
    assert galaxy["authors"] and not [a for a in galaxy["authors"] if "@" in a or "example." in a], galaxy["authors"]
    assert galaxy["repository"]


def test_security_policy_names_the_reporting_channel_and_fixed_versions():
    with open(os.path.join(ROOT, "SECURITY.md"), encoding="utf-8") as f:
        text = f.read()
    assert "private vulnerability reporting" in text and "latest minor release" in text


def test_optional_collections_stay_in_their_task_files():
    uses = list(_fqcn_uses())
    for collection, allowed in OPTIONAL.items():
        users = {where for used, where in uses if used == collection}
        assert users == allowed, f"{collection} is optional: use it only in {sorted(allowed)}"


def test_what_only_the_demo_inventory_uses_is_not_a_dependency():
    """community.docker (the demo's connection) would pull docker, requests and paramiko into every EE."""
    declared = set(_yaml("galaxy.yml")["dependencies"])
    content = {c for c, where in _collections_used().items() if not where.startswith(DEMO + os.sep)}
    demo = set()
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, DEMO)):
        for name in files:
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                demo |= {".".join([g for g in m.groups() if g][:2]) for m in FQCN.finditer(f.read())}
    demo -= {".".join(pair) for pair in NOT_COLLECTIONS}
    assert "community.docker" in demo
    assert not (demo - content) & declared, "needed by inventories/demo only, yet a dependency of the collection"
    assert demo <= _demo_requirements() | declared, "inventories/demo/requirements.yml misses what the demo uses"


def test_meta_execution_environment_points_at_the_requirements():
    meta = _yaml("meta", "execution-environment.yml")
    assert meta["version"] == 1
    deps = meta["dependencies"]
    with open(os.path.join(ROOT, deps["python"])) as f:
        requirements = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert "matplotlib" in requirements
    # The wheelhouse role's resolver: playbooks/wheelhouse.yml runs on the EE itself.
    assert "uv" in requirements
    # Ansible's rule for collection EE requirements: no pins (an EE resolves all its collections' sets together).
    assert not [r for r in requirements if "==" in r or "<" in r], requirements
    with open(os.path.join(ROOT, deps["system"])) as f:
        bindep = f.read()
    assert "openssh-clients [platform:rpm]" in bindep and "openssh-client [platform:dpkg]" in bindep


def test_execution_environment_builds_from_the_checkout():
    ee = _yaml("execution-environment.yml")
    files = ee["additional_build_files"]
    for entry in files:
        assert "*" not in entry["src"] and not entry["src"].endswith(".tar.gz"), entry
        assert os.path.exists(os.path.join(ROOT, entry["src"])), f"{entry['src']} is not in the checkout"
    (collection,) = ee["dependencies"]["galaxy"]["collections"]
    assert collection["type"] == "dir"
    dests = {e["dest"] for e in files}
    assert collection["name"] in dests and f"{collection['name']}/plugins" in dests
    # The EE's ansible-core is a minor CI tests, on a Python that minor runs on (2.20 and later: >= 3.12).
    core = re.match(r"ansible-core==2\.([0-9]+)\.", ee["dependencies"]["ansible_core"]["package_pip"])
    assert core, ee["dependencies"]["ansible_core"]
    tested = re.search(r"versions=\$\{CORE_VERSIONS:-([0-9. ]+)\}", _text("scripts", "core-versions.sh")).group(1).split()
    assert f"2.{core.group(1)}" in tested
    python = re.search(r"python3\.([0-9]+)$", ee["dependencies"]["python_interpreter"]["python_path"])
    assert int(core.group(1)) < 20 or int(python.group(1)) >= 12, ee["dependencies"]["python_interpreter"]
    # The collection's requirements come in through meta/execution-environment.yml.
    assert "python" not in ee["dependencies"] and "system" not in ee["dependencies"]
    assert f"{collection['name']}/meta" in dests


def test_execution_environment_tag_is_the_collection_version():
    # ansible-builder's default tag is the image a job template names: the version it ships, never "latest".
    version = _yaml("galaxy.yml")["version"]
    assert _yaml("execution-environment.yml")["options"]["tags"] == [f"kunpeng-vllm-ee:{version}"]


def test_changelog_renders_every_release():
    """galaxy.yml names the next version between releases (tests/unit/scripts/test_release.py); every released
    one has its section in CHANGELOG.rst."""
    changelog = _yaml("changelogs", "changelog.yaml")
    with open(os.path.join(ROOT, "CHANGELOG.rst")) as f:
        text = f.read()
    for version, release in changelog["releases"].items():
        assert release["changes"], version
        assert f"v{version}" in text, version


def test_no_fragment_looks_like_a_playbook():
    # ansible-lint (run by galaxy-importer) takes *playbook*.yml for a playbook.
    fragments = os.listdir(os.path.join(ROOT, "changelogs", "fragments"))
    assert not [f for f in fragments if fnmatch.fnmatch(f, "*playbook*")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The tarball built from a copy of the checkout with an unreleased fragment added."""
    src = tmp_path_factory.mktemp("src") / "vllm"
    skip = shutil.ignore_patterns(".git", ".build", ".cache", ".venv", "molecule")

    def ignore(directory, names):
        # tests/unit is large (fixtures) and left out by build_ignore anyway; a stand-in shows it stays out.
        return set(skip(directory, names)) | ({"unit"} if os.path.samefile(directory, os.path.join(ROOT, "tests")) else set())

    shutil.copytree(ROOT, src, ignore=ignore)
    (src / "tests" / "unit").mkdir()
    (src / "tests" / "unit" / "test_stand_in.py").write_text("")
    fragments = src / "changelogs" / "fragments"
    fragments.mkdir(exist_ok=True)
    (fragments / "playbooks.yml").write_text("---\nminor_changes:\n  - playbooks - not released yet.\n")
    # Wheels a wheelhouse or an engine build left in the tree.
    (src / "vllm-0.0.0-py3-none-any.whl").write_bytes(b"")
    (src / "roles" / "vllm" / "files").mkdir(parents=True, exist_ok=True)
    (src / "roles" / "vllm" / "files" / "torch-0.0.0-cp312-none-any.whl").write_bytes(b"")
    out = tmp_path_factory.mktemp("dist")
    galaxy = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--output-path", str(out), str(src)],
                   check=True, capture_output=True, timeout=120)
    (path,) = out.iterdir()
    return path


@pytest.fixture(scope="module")
def tarball(built):
    """The names in the built tarball."""
    with tarfile.open(built) as tar:
        return tar.getnames()


def test_the_build_writes_the_tarball_the_readme_installs(built):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        installs = re.findall(r"ansible-galaxy collection install (\S+\.tar\.gz)", f.read())
    assert installs == [built.name] == [f"kunpeng-vllm-{_yaml('galaxy.yml')['version']}.tar.gz"]


# A task's module key: "- ns.coll.module:" or "  ns.coll.module:" ending its line.
MODULE_KEY = re.compile(r"^\s*(?:- )?([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*):\s*$", re.M)


def _dependency_modules():
    """FQCNs of the modules of other collections that the roles and playbooks call."""
    found = set()
    for top in ("roles", "playbooks"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith((".yml", ".yaml")) and "meta" not in dirpath.split(os.sep):
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        for match in MODULE_KEY.finditer(f.read()):
                            fqcn = match.group(1)
                            if tuple(fqcn.split(".")[:2]) not in NOT_COLLECTIONS:
                                found.add(fqcn)
    return found


def test_the_tarball_lint_mocks_exactly_the_dependency_modules():
    """Galaxy lints the tarball without its dependencies; only their modules may be mocked."""
    mocked = _yaml(".config", "ansible-lint.yml")["mock_modules"]
    used = _dependency_modules()
    declared = set(_yaml("galaxy.yml")["dependencies"])
    assert {"ansible.posix.firewalld", "community.general.haproxy"} <= used
    assert all(".".join(m.split(".")[:2]) in declared | set(OPTIONAL) for m in mocked), mocked
    assert sorted(mocked) == sorted(used), "set mock_modules in .config/ansible-lint.yml to the dependency modules used"


def test_tarball_leaves_out_wheels_and_the_checkout_ee_definition(tarball):
    assert not [n for n in tarball if n.endswith(".whl")]
    # execution-environment.yml copies galaxy.yml, which a tarball does not have.
    assert "execution-environment.yml" not in tarball and "galaxy.yml" not in tarball
    # The tarball's lint configuration, not the checkout's.
    assert ".config/ansible-lint.yml" in tarball and ".ansible-lint" not in tarball
    assert not [n for n in tarball if n.startswith(".config/molecule")]
    meta = _yaml("meta", "execution-environment.yml")
    assert {f"meta/{os.path.basename(p)}" for p in meta["dependencies"].values()} <= set(tarball)


def test_tarball_ships_what_ansible_test_sanity_reads_but_no_unit_tests(tarball):
    """Automation Hub runs ansible-test sanity on the tarball: without tests/config.yml it compiles the modules
    for Python 2.7 and runs the Python 2 boilerplate tests. The ignore files stay out: galaxy-importer warns
    ("Ignore files skip ansible-test sanity tests") for each one a tarball carries."""
    assert "tests/config.yml" in tarball
    assert not [n for n in tarball if n.startswith("tests/sanity")]
    assert not [n for n in tarball if n.startswith("tests/unit")]


def test_modules_declare_the_node_python_the_docs_state():
    python_requires = _yaml("tests", "config.yml")["modules"]["python_requires"]
    assert python_requires == ">=3.8"
    for doc in ("README.md", os.path.join("docs", "platforms.md")):
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            assert "Python ≥ 3.8" in f.read(), f"{doc} states another Python for the nodes than tests/config.yml"


def _node_python_files():
    for top in ("plugins/modules", "plugins/module_utils"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            yield from (os.path.join(dirpath, n) for n in files if n.endswith(".py"))


@pytest.mark.parametrize("path", sorted(os.path.relpath(p, ROOT) for p in _node_python_files()))
def test_node_code_parses_as_the_lowest_declared_python(path):
    """What runs on the nodes uses no syntax newer than python_requires' lower bound (match, except*, ...)."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        ast.parse(f.read(), path, feature_version=(3, 8))


def test_tarball_ships_the_release_but_no_unreleased_fragment(tarball):
    assert "SECURITY.md" in tarball
    # The demo inventory works from a checkout only (make demo); the example inventory ships.
    assert not [n for n in tarball if n.startswith("inventories/demo")]
    assert "inventories/example/hosts.yml" in tarball
    assert "changelogs/changelog.yaml" in tarball and "CHANGELOG.rst" in tarball
    assert "meta/execution-environment.yml" in tarball
    assert not [n for n in tarball if n.startswith("changelogs/fragments")]
