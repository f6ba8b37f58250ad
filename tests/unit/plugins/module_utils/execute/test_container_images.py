"""Which engine images an uninstall takes out of the runtime's store (execute/container_images.py).

The listings have the shapes the runtimes print: ``podman images --format json`` (one array, Id without
its prefix, Names, RepoDigests, Digest, Containers as a number) and ``docker images --no-trunc --digests
--format '{{json .}}'`` (one object per line and per repository and tag, ``<none>`` where a field is empty,
Containers ``N/A``).
"""

import json

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import container_images as ci

A = "7f86af6e747e6aa1ea70b9777a4f8172b205b64650723aaded68ea46d4085fd8"
B = "25b4f3c19d92ecdf2543660323e28c486c3bd3d163eb33f36284fdc390151273"
C = "0c2e38a5d3a9b7c2f1e4d6a8b0c2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d8"
DIGEST_A = "sha256:ccf6cb8572284180bae965652c7e8aebc045c2be3d1ac4fec8561f8e1cdf816b"
DIGEST_B = "sha256:94f7f85c4f7730c8054e327b3b7aa641a8983812b601b04e4d851acf98c2ddfa"
REPO = "quay.io/ascend/vllm-ascend"


def _podman(image_id, names=(), digests=(), digest="", containers=0):
    return {"Id": image_id, "ParentId": "", "RepoTags": None, "RepoDigests": list(digests), "Size": 5057635487,
            "SharedSize": 0, "VirtualSize": 5057635487, "Labels": {"io.kunpeng.vllm.backend": "cpu"},
            "Containers": containers, "Names": list(names), "Digest": digest, "History": list(names),
            "Created": 1764633600, "CreatedAt": "2025-12-02T00:00:00Z"}


def _docker(image_id, repo="<none>", tag="<none>", digest="<none>"):
    return json.dumps({"Containers": "N/A", "CreatedAt": "2025-12-02 00:00:00 +0000 UTC",
                       "CreatedSince": "2 days ago", "Digest": digest, "ID": "sha256:" + image_id,
                       "Repository": repo, "SharedSize": "N/A", "Size": "5.06GB", "Tag": tag,
                       "UniqueSize": "N/A", "VirtualSize": "5.057GB"})


PODMAN = json.dumps([
    # loaded from an archive (tagged), pulled by digest (no tag), tagged twice and run by a container
    _podman(A, names=["localhost/kvllm/engine-cpu-oci:amd64"], digests=[f"localhost/kvllm/engine-cpu-oci@{DIGEST_A}"],
            digest=DIGEST_A),
    _podman(B, digests=[f"{REPO}@{DIGEST_B}"], digest=DIGEST_B),
    _podman(C, names=[f"{REPO}:v0.13.0", f"{REPO}:latest"], digests=[f"{REPO}@sha256:{'1' * 64}"],
            digest="sha256:" + "1" * 64, containers=1),
], indent=4)
DOCKER = "\n".join([
    _docker(A, "kvllm/engine-cpu-oci", "amd64"),
    _docker(B, REPO, "<none>", DIGEST_B),
    _docker(C, REPO, "v0.13.0"),
    _docker(C, REPO, "latest"),
]) + "\n"


@pytest.mark.parametrize("runtime, output, expected", [
    ("podman", PODMAN, {"sha256:" + A: (["localhost/kvllm/engine-cpu-oci:amd64"], 0),
                        "sha256:" + B: ([], 0),
                        "sha256:" + C: ([f"{REPO}:latest", f"{REPO}:v0.13.0"], 1)}),
    ("docker", DOCKER, {"sha256:" + A: (["kvllm/engine-cpu-oci:amd64"], None),
                        "sha256:" + B: ([], None),
                        "sha256:" + C: ([f"{REPO}:latest", f"{REPO}:v0.13.0"], None)}),
    ("podman", "[]\n", {}),
    ("docker", "", {}),
])
def test_store_images(runtime, output, expected):
    images = ci.store_images(runtime, output)
    assert {i["id"]: (i["tags"], i["containers"]) for i in images} == expected


@pytest.mark.parametrize("runtime, output", [("podman", PODMAN), ("docker", DOCKER)])
@pytest.mark.parametrize("ref, image_id", [
    ("sha256:" + A, A),                               # an archive's image ID (what the unit runs)
    (A, A),
    (A[:12], A),                                      # a short ID
    (f"{REPO}@{DIGEST_B}", B),                        # pinned by digest, as vllm_container_image
    (f"registry.example/mirror/vllm-ascend@{DIGEST_B}", B),  # the same digest under another name
    (f"{REPO}:v0.13.0", C),
    (f"{REPO}@sha256:{'9' * 64}", None),              # a digest the store does not hold
    ("", None),
])
def test_resolve(runtime, output, ref, image_id):
    image = ci.resolve(ref, ci.store_images(runtime, output))
    assert (image["id"] if image else None) == ("sha256:" + image_id if image_id else None)


@pytest.mark.parametrize("runtime, output, remove, in_use, removed, kept, absent", [
    # the only instance goes: its image and the one before it go
    ("podman", PODMAN, ["sha256:" + A, f"{REPO}@{DIGEST_B}"], [], ["sha256:" + B, "sha256:" + A], [], []),
    # another instance names the same image by its digest: kept
    ("podman", PODMAN, ["sha256:" + A, f"{REPO}@{DIGEST_B}"], [{"image": B, "instance": "qwen3"}],
     ["sha256:" + A], [("sha256:" + B, "instance qwen3 still uses it")], []),
    # a container outside the collection runs it (podman counts them): kept
    ("podman", PODMAN, [f"{REPO}:v0.13.0"], [], [], [("sha256:" + C, "1 container(s) use it")], []),
    # removed earlier, or never pulled: reported, nothing to do
    ("podman", PODMAN, [f"{REPO}@sha256:{'9' * 64}"], [], [], [], [f"{REPO}@sha256:{'9' * 64}"]),
    # docker does not count containers: rmi without --force refuses an image a container uses
    ("docker", DOCKER, [f"{REPO}:v0.13.0", "sha256:" + A], [{"image": "sha256:" + A, "instance": "smollm2"}],
     ["sha256:" + C], [("sha256:" + A, "instance smollm2 still uses it")], []),
    # two references of the removed instance to one image: removed once
    ("docker", DOCKER, ["sha256:" + B, f"{REPO}@{DIGEST_B}"], [], ["sha256:" + B], [], []),
])
def test_images_to_remove(runtime, output, remove, in_use, removed, kept, absent):
    decision = ci.images_to_remove(runtime, remove, in_use, ci.store_images(runtime, output))
    assert [r["id"] for r in decision["remove"]] == removed
    assert [(k["id"], k["why"]) for k in decision["kept"]] == kept
    assert decision["absent"] == absent
    for image_id, why in kept:
        assert image_id in decision["msg"] and why in decision["msg"]


@pytest.mark.parametrize("runtime, output, ref, argv", [
    # one tag or none: by the ID
    ("podman", PODMAN, "sha256:" + A, ["podman", "rmi", "sha256:" + A]),
    ("docker", DOCKER, "sha256:" + B, ["docker", "rmi", "sha256:" + B]),
    # several tags: by the tags (both runtimes refuse such an ID without --force)
    ("docker", DOCKER, f"{REPO}:latest", ["docker", "rmi", f"{REPO}:latest", f"{REPO}:v0.13.0"]),
])
def test_removal_argv_never_forces(runtime, output, ref, argv):
    image = ci.resolve(ref, ci.store_images(runtime, output))
    assert ci.removal_argv(runtime, image) == argv
    assert "--force" not in argv and "-f" not in argv
