# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Where a vLLM instance stands on its host, what rolls it back and what removes it.

The vllm role lays an instance ``<name>`` out as (roles/vllm/vars/main.yml):

- ``<unit_dir>/vllm-<name>.service``: its unit; a member of a multi-node
  instance whose plan says Ray also has ``vllm-ray-<name>.service`` (a Ray
  worker has only that one); in container mode on podman with Quadlet,
  ``<quadlet_dir>/vllm-<name>.container`` instead, from which systemd's
  generator makes ``vllm-<name>.service`` on daemon-reload
  (plan/container.py unit_file);
- ``<install_dir>/current-<name>``: the link to the versioned virtualenv it
  runs (``<install_dir>/<version>-<backend>``, shared by the instances on
  that engine);
- ``<config_dir>/<name>.yaml``, ``.env`` (0600) and ``.api-key``: engine
  config, service environment and the key generated on the node;
- ``<cache_dir>/<name>``: its caches;
- ``<cache_dir>/ray-<hash>`` (:func:`ray_temp_dir`): Ray's temporary
  directory (``RAY_TMPDIR``) on a member of a multi-node instance with Ray.

The role's entry points ``snapshot``, ``rollback`` and ``remove`` (which
playbooks/upgrade.yml and playbooks/uninstall.yml call) decide with these
functions; the playbooks know none of this layout.  Reading the node is
:func:`read_instance` and :func:`read_removal`; everything else is a plain
function of what was read.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import os
import re
import shlex

#: Ray's session directory and its longest socket below the temporary directory, at their longest: the
#: session is named session_<%Y-%m-%d_%H-%M-%S_%f>_<pid> (Ray's "Temporary Files" docs) and a Linux pid
#: has at most 7 digits (pid_max <= 2**22); plasma_store is the longest name under sockets/.
RAY_SOCKET_TAIL = "/ray/session_2026-12-31_23-59-59_999999_4194304/sockets/plasma_store"
#: sockaddr_un.sun_path holds 108 bytes with the terminating NUL (Ray refuses longer: "AF_UNIX path length
#: cannot exceed 107 bytes").
AF_UNIX_PATH_MAX = 107

UNIT_PREFIX = "vllm-"
RAY_UNIT_PREFIX = "vllm-ray-"
UNIT_SUFFIX = ".service"
# A Quadlet file (plan/container.py unit_file): <quadlet_dir>/vllm-<name>.container.
QUADLET_SUFFIX = ".container"
# The files of an instance in the config directory (<name>.<suffix>).
# ray-token: the cluster's Ray token of a multi-node member (the vllm role's tasks/service.yml).
# container.env: the container runtime's copy of the environment (vllm_install_method container).
# vllm-config: the engine's VLLM_CONFIG_ROOT where it drives Ray (a directory; the vllm role's tasks/configure.yml).
CONFIG_SUFFIXES = ("yaml", "env", "api-key", "ray-token", "container.env", "vllm-config")
_EXEC_START = re.compile(r"(?m)^ExecStart=(\S+)")
# The engine command of a unit or a launcher (vllm_service_manager none).
_SERVE = re.compile(r"/bin/vllm serve (\S+)")
_API_KEY = re.compile(r"(?m)^VLLM_API_KEY=(.*)$")


def unit_name(instance):
    """The unit of instance ``instance``."""
    return f"{UNIT_PREFIX}{instance}{UNIT_SUFFIX}"


def is_unit(file_name):
    """Whether ``file_name`` is a vLLM unit (``vllm-*.service``) of any instance."""
    return file_name.startswith(UNIT_PREFIX) and file_name.endswith(UNIT_SUFFIX) \
        and len(file_name) > len(UNIT_PREFIX) + len(UNIT_SUFFIX)


def is_quadlet(file_name):
    """Whether ``file_name`` is the Quadlet file of a vLLM instance (``vllm-*.container``)."""
    return file_name.startswith(UNIT_PREFIX) and file_name.endswith(QUADLET_SUFFIX) \
        and len(file_name) > len(UNIT_PREFIX) + len(QUADLET_SUFFIX)


def generated_unit(file_name):
    """The unit systemd's Quadlet generator makes from the Quadlet file ``file_name`` (podman-systemd.unit(5):
    the service is named after the file, ``.container`` replaced by ``.service``)."""
    return file_name[:-len(QUADLET_SUFFIX)] + UNIT_SUFFIX


def engine_link(install_dir, instance):
    """The link to the virtualenv the instance runs."""
    return os.path.join(install_dir, f"current-{instance}")


def verified_link(install_dir, instance):
    """The link to the virtualenv whose readiness gate the instance last passed (the vllm role's verify step)."""
    return os.path.join(install_dir, f"verified-{instance}")


def rollback_target(link, link_source, verified_source=None):
    """The virtualenv an upgrade rolls back to.

    ``link_source`` is the resolved target of ``link`` (None when ``link`` is
    not a link), ``verified_source`` the one of the instance's verified link
    (None when it has none, or its venv is gone).  The venv the link points at
    is the target, unless no readiness gate passed on it while another one
    did: a change interrupted after it moved the link (the host may still be
    in maintenance at the gateways) left a half-upgraded venv, and the last
    verified one is the state to return to.  Returns ``deployed``, ``venv``,
    ``release`` (the venv's folder name, ``<version>-<backend>``),
    ``verified`` (whether a gate passed on that venv; None: no record) and
    ``msg``.
    """
    if not link_source:
        return {"deployed": False, "venv": None, "release": None, "verified": None,
                "msg": (f"{link} is not a link to an engine virtualenv, so there is nothing to roll back to. "
                        "Deploy first with playbooks/site.yml or playbooks/deploy.yml (an instance deployed with "
                        f"the shared {os.path.dirname(link)}/current link of earlier builds gets its own link from "
                        "one run of playbooks/deploy.yml).")}
    venv = link_source.rstrip("/")
    verified = (verified_source or "").rstrip("/")
    if verified and verified != venv:
        release = os.path.basename(verified)
        return {"deployed": True, "venv": verified, "release": release, "verified": True,
                "msg": (f"{release} in service ({verified}, the last venv that passed the readiness gate); {link} points "
                        f"at {venv}, which no gate passed (an interrupted change), so the rollback target is {release}")}
    release = os.path.basename(venv)
    return {"deployed": True, "venv": venv, "release": release, "verified": True if verified else None,
            "msg": f"{release} in service ({venv})"}


def rollback_steps(instance, snapshot_units, snapshot_config_files, units_now, config_files_now,
                   multi_node=False, group=""):
    """What a rollback to a snapshot does, given what the failed attempt left.

    Files in the config directory and units that were not there at the
    snapshot go (units are stopped first); every unit of the snapshot is
    copied back; the instance restarts when its unit existed at the snapshot,
    and so does its Ray node (``restart_ray``), which runs from the engine
    link too: a worker would keep the failed attempt's venv.  ``start_units``
    lists both, in that order: the units whose start limit the rollback
    clears first (the failed attempt may have crash-looped them to it).
    Its readiness is checked then, except on a member of a multi-node
    instance: it answers only when every member is back, so the next deploy's
    gate on the head checks it.  ``unchecked`` says why it is not checked
    (None when it is).
    """
    unit = unit_name(instance)
    ray_unit = f"{RAY_UNIT_PREFIX}{instance}{UNIT_SUFFIX}"
    had_unit = unit in snapshot_units
    if multi_node:
        unchecked = (f"every member of {group} rolls back with it "
                     "(not checked: the next deploy gates the head)")
    elif not had_unit:
        unchecked = "the restored instance did NOT become healthy: its unit did not exist before the upgrade"
    else:
        unchecked = None
    return {
        "unit": unit,
        "remove_config_files": sorted(set(config_files_now) - set(snapshot_config_files)),
        "stop_units": sorted(set(units_now) - set(snapshot_units)),
        "restore_units": sorted(snapshot_units),
        "restart": had_unit,
        "restart_ray": ray_unit if ray_unit in snapshot_units else None,
        "start_units": [name for name, starts in ((ray_unit, ray_unit in snapshot_units), (unit, had_unit)) if starts],
        "check_ready": had_unit and not multi_node,
        "unchecked": unchecked,
    }


def unit_instance(file_name, text):
    """(instance, kind) of the unit ``file_name`` with content ``text``; kind is ``engine`` or ``ray``.

    A Ray unit runs ``<link>/bin/ray``; its instance is the name after
    ``vllm-ray-`` (an engine instance may itself be called ``ray-x``, so the
    command, not the file name, tells them apart).
    """
    match = _EXEC_START.search(text or "")
    base = file_name[len(UNIT_PREFIX):-len(UNIT_SUFFIX)]
    if match and match.group(1).endswith("/bin/ray") and file_name.startswith(RAY_UNIT_PREFIX):
        return file_name[len(RAY_UNIT_PREFIX):-len(UNIT_SUFFIX)], "ray"
    return base, "engine"


#: The runtimes a container-mode unit runs (``/usr/bin/<runtime> run ...``, plan/container.py run_argv).
CONTAINER_RUNTIMES = ("podman", "docker")
#: The records of a container-mode instance in the install directory: the image that last passed the
#: readiness gate (what a failed upgrade goes back to) and the one that passed before it (still in the
#: runtime's store), written by the vllm role's tasks/converge.yml.
IMAGE_RECORDS = ("verified-{name}.image", "previous-{name}.image")


def container_run(text):
    """runtime, image and model_dir of a container-mode unit (``ExecStart=/usr/bin/<runtime> run ...
    --entrypoint <cmd> <image> <args> <model_dir> --config <file>``, the argv plan/container.py writes,
    each argument JSON-quoted), or None for any other unit."""
    match = re.search(r"(?m)^ExecStart=(.*)$", text or "")
    if not match:
        return None
    try:
        argv = shlex.split(match.group(1))
    except ValueError:
        return None
    runtime = os.path.basename(argv[0]) if argv else ""
    if runtime not in CONTAINER_RUNTIMES or "run" not in argv[1:2] or "--entrypoint" not in argv:
        return None
    at = argv.index("--entrypoint")
    image = argv[at + 2] if len(argv) > at + 2 else ""
    return {"runtime": runtime, "image": image, "model_dir": _model_argument(argv[at + 3:])}


def _model_argument(args):
    """The model argument of the engine's arguments ``args``: the one before the last ``--config``, or None."""
    config = len(args) - 1 - args[::-1].index("--config") if "--config" in args else -1
    return (args[config - 1].rstrip("/") if config > 0 else "") or None


def _section_rows(text, section):
    """The ``key=value`` lines of ``[section]`` in the systemd-style file ``text``, as (key, value) rows."""
    rows, inside = [], False
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == f"[{section}]"
        elif inside and "=" in line and not line.startswith(("#", ";")):
            key, value = line.split("=", 1)
            rows.append((key.strip(), value.strip()))
    return rows


def quadlet_run(text):
    """runtime, image and model_dir of a Quadlet file (the [Container] rows plan/container.py quadlet_keys
    writes: ``Image=<image>`` and ``Exec=<args> <model_dir> "--config" <file>``, each argument JSON-quoted),
    or None when it names no image.  Quadlet runs podman only (podman-systemd.unit(5))."""
    rows = _section_rows(text, "Container")
    images = [value for key, value in rows if key == "Image" and value]
    if not images:
        return None
    args = []
    for key, value in rows:
        if key == "Exec":
            try:
                args = shlex.split(value)
            except ValueError:
                args = []
    return {"runtime": "podman", "image": images[-1], "model_dir": _model_argument(args)}


def file_run(file_name, text):
    """:func:`quadlet_run` of a Quadlet file, :func:`container_run` of a unit."""
    return quadlet_run(text) if is_quadlet(file_name) else container_run(text)


def served_model_dir(text):
    """The model directory an engine unit or launcher serves (``<link>/bin/vllm serve <dir> ...``, or the
    model argument of a container-mode unit), or None."""
    match = _SERVE.search(text or "")
    if match:
        return match.group(1).rstrip("/") or None
    run = container_run(text)
    return run["model_dir"] if run else None


def file_model_dir(file_name, text):
    """The model directory the unit or Quadlet file ``file_name`` with content ``text`` serves, or None."""
    if is_quadlet(file_name):
        run = quadlet_run(text)
        return run["model_dir"] if run else None
    return served_model_dir(text)


def _below(path, root):
    """Whether ``path`` lies strictly below ``root``."""
    root = root.rstrip("/")
    return path.startswith(root + "/") and len(path) > len(root) + 1


#: The folders the entry point snapshot makes below vllm_backup_dir (UTC timestamps).
BACKUP_NAME = re.compile(r"^[0-9]{8}T[0-9]{6}Z$")
#: A snapshot's copy of the config directory (roles/vllm/tasks/snapshot.yml), key files included.
SNAPSHOT_CONFIG = "config"
#: The 0600 netrc of an instance's package index credentials (roles/vllm/vars/main.yml __vllm_pip_netrc).
PIP_NETRC_SUFFIX = ".pip-index.netrc"


def backups_to_prune(names, keep):
    """The snapshot folders to remove before a new snapshot, so that ``keep`` remain with it.

    Each snapshot holds the config directory (the env files with the API keys
    among it), so old ones are not kept for ever.  Only names of the
    snapshot's own timestamp form count; anything else below the backup
    directory is left alone.  ``keep`` of at least 1 (the new snapshot).
    """
    keep = int(keep)
    if keep < 1:
        raise ValueError(f"vllm_backup_keep must be at least 1 (the snapshot being made), got {keep}")
    ours = sorted(name for name in names if BACKUP_NAME.match(name))
    return ours[:max(len(ours) - (keep - 1), 0)]


def ray_temp_dir(cache_dir, name):
    """``RAY_TMPDIR`` of instance ``name``: short whatever the name, since Ray's sockets live below it.

    Under the instance's own cache (``<cache_dir>/<name>/tmp``, the default cache) a socket path is 88 bytes
    plus the name, over the AF_UNIX limit for a name of 20 characters or more; a hash of the name keeps the path the same length
    for every instance and distinct between instances.
    """
    return f"{cache_dir.rstrip('/')}/ray-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def ray_socket_path(temp_dir):
    """The longest Unix socket path Ray creates below ``temp_dir`` (its ``RAY_TMPDIR``)."""
    return temp_dir.rstrip("/") + RAY_SOCKET_TAIL


def container_images(units, owners, names, image_records):
    """The images the removed instances ``names`` used and those the others still use, per runtime.

    ``units``: file name -> text, the Quadlet files among them; ``owners``: instance -> its files;
    ``image_records``: instance -> the references its records in the install directory name (IMAGE_RECORDS).
    A record of an instance whose unit is not a container unit counts under the runtime of no unit and is
    left out.  Returns runtime -> ``remove`` (references)
    and ``in_use`` ({image, instance}); the runtime's store decides what they resolve to
    (execute/container_images.py).
    """
    result = {}
    for instance, files in sorted(owners.items()):
        for file_name in files:
            run = file_run(file_name, units[file_name])
            if not run:
                continue
            refs = _unique([run["image"]] + [r for r in image_records.get(instance, []) if r])
            entry = result.setdefault(run["runtime"], {"remove": [], "in_use": []})
            if instance in names:
                entry["remove"] = _unique(entry["remove"] + refs)
            else:
                entry["in_use"] += [{"image": r, "instance": instance} for r in refs]
    return result


def removal_plan(units, only, install_dir, config_dir, cache_dir, model_root, remove_models,
                 engine_entries=(), model_root_dirs=(), image_records=None, quadlets=None, backups=()):
    """What playbooks/uninstall.yml removes on one host.

    ``units`` maps each ``vllm-*.service`` file name of the host to its text,
    ``quadlets`` each ``vllm-*.container`` Quadlet file name to its text;
    ``only`` names the instances to remove (empty: all).  An instance goes
    with every unit it has (its Ray unit too) and its Quadlet file, its
    config files, its cache and its engine link.  A unit Quadlet generates
    is only stopped (``generated_units``; systemd refuses to enable or
    disable a generated unit) before its file goes (``quadlet_files``); a
    plain unit of the same name shadows it and is stopped as a plain unit.
    The virtualenvs may serve several instances, so
    ``engine_entries`` (everything in ``install_dir``: virtualenvs, links,
    the wheelhouse) go only when no instance is left.  Models go only with
    ``remove_models`` and only below ``model_root``: those the removed
    engine units serve, and on a full removal every directory in
    ``model_root_dirs`` as well; a model elsewhere is never removed.
    ``backups``: the snapshot folders below ``vllm_backup_dir``; they hold
    copies of every instance's API key, so a full removal takes those of
    the snapshot's own name form (:data:`BACKUP_NAME`) with it; a partial
    removal takes the removed instances' key files out of each of them
    (``<snapshot>/config/<name>.<suffix>``), and their netrc files of the
    package index credentials (``<install_dir>/<name>.pip-index.netrc``).
    """
    quadlets = quadlets or {}
    owners = {}
    with_ray = set()
    for file_name, text in sorted(units.items()):
        instance, kind = unit_instance(file_name, text)
        owners.setdefault(instance, []).append(file_name)
        if kind == "ray":
            with_ray.add(instance)
    for file_name in sorted(quadlets):
        owners.setdefault(file_name[len(UNIT_PREFIX):-len(QUADLET_SUFFIX)], []).append(file_name)
    files = dict(units, **quadlets)
    found = sorted(owners)
    names = [n for n in found if not only or n in only]
    remaining = [n for n in found if n not in names]
    full = not remaining
    served = sorted({d for n in names for f in owners[n] for d in [file_model_dir(f, files[f])] if d})
    below = [d for d in served if _below(d, model_root)]
    outside = [d for d in served if not _below(d, model_root)]
    model_dirs = sorted(set(below) | (set(model_root_dirs) if full and remove_models else set()))
    paths = [os.path.join(config_dir, f"{n}.{suffix}") for n in names for suffix in CONFIG_SUFFIXES]
    paths += [os.path.join(cache_dir, n) for n in names]
    paths += [ray_temp_dir(cache_dir, n) for n in names if n in with_ray]
    paths += [engine_link(install_dir, n) for n in names]
    paths += [verified_link(install_dir, n) for n in names]
    # The images that passed the gate in container mode (roles/vllm/vars/main.yml __vllm_container_verified_file).
    paths += [os.path.join(install_dir, record.format(name=n)) for n in names for record in IMAGE_RECORDS]
    snapshots = sorted(b for b in backups if BACKUP_NAME.match(os.path.basename(b)))
    if full:
        paths += sorted(engine_entries)
        paths += snapshots
    else:
        paths += [os.path.join(install_dir, f"{n}{PIP_NETRC_SUFFIX}") for n in names]
        paths += [os.path.join(b, SNAPSHOT_CONFIG, f"{n}.{suffix}") for b in snapshots for n in names
                  for suffix in CONFIG_SUFFIXES]
    if remove_models:
        paths += model_dirs
    unit_files = sorted(f for n in names for f in owners[n] if f in units)
    quadlet_files = sorted(f for n in names for f in owners[n] if f in quadlets)
    generated = sorted({generated_unit(f) for f in quadlet_files} - set(unit_files))
    engines = "removed" if full else f"kept (other instances remain: {', '.join(remaining)})"
    if remove_models:
        models = f"removed {', '.join(model_dirs) or 'none'}"
    else:
        models = f"kept {', '.join(model_dirs) or 'none'} (set uninstall_remove_models=true to remove)"
    never = f"; never removed (outside {model_root}): {', '.join(outside)}" if outside else ""
    msg = (f"Removed instances: {', '.join(names) or 'none found'}. Engine virtualenvs: {engines}. "
           f"Models: {models}{never}.")
    images = container_images(files, owners, names, image_records or {})
    return {"instances": names, "remaining": remaining, "units": unit_files, "quadlet_files": quadlet_files,
            "generated_units": generated, "paths": _unique(paths), "remove_engines": full,
            "model_dirs": model_dirs, "models_outside": outside, "container_images": images, "msg": msg}


def _unique(items):
    seen = set()
    return [i for i in items if not (i in seen or seen.add(i))]


# Reading the node (the modules call these; the decisions above take plain values).

def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def read_units(unit_dir, wanted=is_unit):
    """Every regular file in ``unit_dir`` whose name is ``wanted`` (a ``vllm-*.service`` unit), name -> text."""
    def regular(name):
        path = os.path.join(unit_dir, name)
        return wanted(name) and os.path.isfile(path) and not os.path.islink(path)

    return {name: _read(os.path.join(unit_dir, name)) or "" for name in _listdir(unit_dir) if regular(name)}


def read_quadlets(quadlet_dir):
    """Every ``vllm-*.container`` Quadlet file in ``quadlet_dir`` (None: none read), name -> text."""
    return read_units(quadlet_dir, is_quadlet) if quadlet_dir else {}


def read_instance(instance, install_dir, config_dir, unit_dir):
    """What instance ``instance`` runs now and what a snapshot of the host records."""
    link = engine_link(install_dir, instance)
    source = os.path.realpath(link) if os.path.islink(link) else None
    verified = verified_link(install_dir, instance)
    verified_source = os.path.realpath(verified) if os.path.islink(verified) and os.path.isdir(verified) else None
    state = rollback_target(link, source, verified_source)
    env = _read(os.path.join(config_dir, f"{instance}.env")) or ""
    key = _API_KEY.search(env)
    units = read_units(unit_dir)
    unit = unit_name(instance)
    # vllm_service_manager none: a launcher in the config directory instead of a unit.
    command = units.get(unit) or _read(os.path.join(config_dir, f"{instance}.launch.sh"))
    state.update(
        unit=unit,
        unit_exists=unit in units,
        link=link,
        engine=os.path.join(link, "bin", "vllm"),
        model_dir=served_model_dir(command),
        units=sorted(units),
        config_files=_listdir(config_dir),
        config_text=_read(os.path.join(config_dir, f"{instance}.yaml")) or "",
        api_key=key.group(1) if key else "",
    )
    return state


def read_removal(only, install_dir, config_dir, cache_dir, model_root, remove_models, unit_dir, quadlet_dir=None,
                 backup_dir=""):
    """:func:`removal_plan` on what the host holds (the Quadlet files in ``quadlet_dir``, the snapshots in
    ``backup_dir`` too)."""
    units = read_units(unit_dir)
    quadlets = read_quadlets(quadlet_dir)
    plan = removal_plan(units, only, install_dir, config_dir, cache_dir, model_root, remove_models,
                        quadlets=quadlets)
    full = plan["remove_engines"]
    records = {}
    for name in plan["instances"] + plan["remaining"]:
        texts = [_read(os.path.join(install_dir, record.format(name=name))) for record in IMAGE_RECORDS]
        records[name] = [text.strip() for text in texts if text and text.strip()]
    entries = [os.path.join(install_dir, e) for e in _listdir(install_dir)] if full else []
    roots = [os.path.join(model_root, d) for d in _listdir(model_root)
             if os.path.isdir(os.path.join(model_root, d))] if full and remove_models else []
    backups = [os.path.join(backup_dir, d) for d in _listdir(backup_dir)] if full and backup_dir else []
    return removal_plan(units, only, install_dir, config_dir, cache_dir, model_root, remove_models,
                        engine_entries=entries, model_root_dirs=roots, image_records=records, quadlets=quadlets,
                        backups=backups)
