# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Which engine images an uninstall takes out of the container runtime's store (vllm_install_method container).

An instance in container mode leaves images in the runtime's store: the one its unit runs and the one that
passed the readiness gate before (kept so that a failed upgrade runs it again without a transfer).
playbooks/uninstall.yml removes them unless another instance on the host still names them.  Instances name
an image by reference (``name@sha256:<digest>``, a tag, or the image ID of an archive), so two references
are the same image when the store resolves them to one image ID: the decision works on IDs, read from the
store's listing.

- ``podman images --format json``: one JSON array; ``Id`` without the ``sha256:`` prefix, ``Names``
  and ``RepoTags`` (tags), ``RepoDigests``, ``Digest``, ``Containers`` (how many containers use it).
- ``docker images --no-trunc --digests --format '{{json .}}'``: one JSON object per line and per
  repository and tag; ``ID`` with its prefix, ``Repository``, ``Tag``, ``Digest`` (``<none>`` where
  there is none), ``Containers`` ``N/A`` (docker fills it only for ``docker system df``).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import json

#: The listing command of each runtime (the shapes above).
LIST_ARGV = {
    "podman": ["images", "--format", "json"],
    "docker": ["images", "--no-trunc", "--digests", "--format", "{{json .}}"],
}
_NONE = "<none>"


def _with_prefix(image_id):
    return image_id if image_id.startswith("sha256:") else "sha256:" + image_id


def _podman(entries):
    images = []
    for entry in entries:
        tags = [t for t in (entry.get("Names") or entry.get("RepoTags") or []) if "@" not in t]
        refs = set(tags) | set(entry.get("RepoDigests") or [])
        containers = entry.get("Containers")
        images.append({"id": _with_prefix(entry["Id"]), "tags": sorted(set(tags)), "refs": refs,
                       "digest": entry.get("Digest") or "",
                       "containers": containers if isinstance(containers, int) else None})
    return images


def _docker(lines):
    by_id = {}
    for line in lines:
        entry = json.loads(line)
        image = by_id.setdefault(_with_prefix(entry["ID"]), {"id": _with_prefix(entry["ID"]), "tags": set(),
                                                             "refs": set(), "digest": "", "containers": None})
        repo, tag, digest = entry.get("Repository", _NONE), entry.get("Tag", _NONE), entry.get("Digest", _NONE)
        if repo != _NONE and tag != _NONE:
            image["tags"].add(f"{repo}:{tag}")
            image["refs"].add(f"{repo}:{tag}")
        if repo != _NONE and digest != _NONE:
            image["refs"].add(f"{repo}@{digest}")
            image["digest"] = digest
    return [dict(image, tags=sorted(image["tags"])) for image in by_id.values()]


def store_images(runtime, output):
    """The images of the store: id (``sha256:`` prefixed), tags, refs (tags and ``name@digest``), digest,
    containers (how many containers use it; None where the runtime does not say), from the output of
    ``<runtime> LIST_ARGV``."""
    text = (output or "").strip()
    if not text:
        return []
    if runtime == "podman":
        return _podman(json.loads(text))
    return _docker([line for line in text.splitlines() if line.strip()])


def resolve(ref, images):
    """The image of the store ``ref`` names (an ID, a short ID of 12 or more hex digits, a tag or a
    ``name@sha256:<digest>``), or None when the store does not hold it."""
    ref = (ref or "").strip()
    if not ref:
        return None
    bare = ref[len("sha256:"):] if ref.startswith("sha256:") else ref
    for image in images:
        if ref in image["refs"] or image["id"] == _with_prefix(ref) \
                or (len(bare) >= 12 and image["id"][len("sha256:"):].startswith(bare) and "/" not in bare):
            return image
    # A reference pinned by digest matches an image whose tag differs but whose digest is that one.
    if "@" in ref:
        digest = ref.split("@", 1)[1]
        for image in images:
            if image["digest"] == digest:
                return image
    return None


def removal_argv(runtime, image):
    """``<runtime> rmi`` of one image without --force (a container that still uses it makes it fail rather
    than go).  An image with several tags is removed by its tags (removing the last tag removes the image;
    both runtimes refuse to remove such an image by its ID without --force)."""
    names = image["tags"] if len(image["tags"]) > 1 else [image["id"]]
    return [runtime, "rmi"] + names


def images_to_remove(runtime, remove, in_use, images):
    """What the uninstall does with the images of the removed instances.

    ``remove``: the references the removed instances used (their unit's image, the one that passed the
    gate, the one before it).  ``in_use``: ``{"image": ref, "instance": name}`` for every reference an
    instance that stays on the host uses.  ``images``: :func:`store_images`.  Returns ``remove`` (image
    ID, tags, argv), ``kept`` (ID, the references, why), ``absent`` (references the store does not hold),
    ``msg``.
    """
    users = {}
    for use in in_use:
        image = resolve(use["image"], images)
        if image:
            users.setdefault(image["id"], set()).add(use["instance"])
    wanted, absent = {}, []
    for ref in remove:
        image = resolve(ref, images)
        if image is None:
            if ref and ref not in absent:
                absent.append(ref)
            continue
        wanted.setdefault(image["id"], {"image": image, "refs": []})["refs"].append(ref)
    removed, kept = [], []
    for image_id in sorted(wanted):
        image, refs = wanted[image_id]["image"], sorted(set(wanted[image_id]["refs"]))
        if image_id in users:
            kept.append({"id": image_id, "refs": refs,
                         "why": f"instance {', '.join(sorted(users[image_id]))} still uses it"})
        elif image["containers"]:
            kept.append({"id": image_id, "refs": refs, "why": f"{image['containers']} container(s) use it"})
        else:
            removed.append({"id": image_id, "refs": refs, "tags": image["tags"], "argv": removal_argv(runtime, image)})
    parts = [f"{runtime}: removed {', '.join(r['id'] for r in removed) or 'no image'}"]
    parts += [f"kept {k['id']} ({k['why']})" for k in kept]
    if absent:
        parts.append(f"not in the store: {', '.join(absent)}")
    return {"remove": removed, "kept": kept, "absent": absent, "msg": "; ".join(parts) + "."}
