#!/bin/sh
# Build a local, flat apt repository of NVIDIA package TEST DOUBLES (not
# NVIDIA's packages) under $1/<distro>/<arch>/, for the nvidia scenario.
# The names are the real CUDA-repository names per branch (NVIDIA Driver
# Installation Guide: nvidia-open-<branch> / cuda-drivers-<branch> up to
# 580; nvidia-driver-pinning-<branch>, nvidia-open, cuda-drivers from 590).
# A driver double ships /usr/bin/nvidia-smi, a script that replays the real
# H200 capture with its own version, and its postinst writes the "loaded
# module" banner the probe reads; dkms is a double too (the container has no
# other repository).  Usage: build-repo.sh ROOT DISTRO ARCH CAPTURE_DIR PROC_DIR
set -eu
root=$1 distro=$2 arch=$3 capture=$4 proc=$5
repo="$root/$distro/$arch"
work=$(mktemp -d)
mkdir -p "$repo"

# deb NAME VERSION DEPENDS CONFLICTS DRIVER_VERSION(empty: no driver files)
deb() {
  name=$1 version=$2 depends=$3 conflicts=$4 driver=$5
  dir="$work/$name"
  mkdir -p "$dir/DEBIAN"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: all"
    echo "Maintainer: kunpeng.vllm tests <tests@invalid>"
    [ -n "$depends" ] && echo "Depends: $depends"
    [ -n "$conflicts" ] && echo "Conflicts: $conflicts" && echo "Replaces: $conflicts"
    echo "Description: TEST DOUBLE of $name (kunpeng.vllm molecule/nvidia), not NVIDIA's package"
  } > "$dir/DEBIAN/control"
  if [ -n "$driver" ]; then
    mkdir -p "$dir/usr/bin"
    cat > "$dir/usr/bin/nvidia-smi" <<SMI
#!/bin/sh
# TEST DOUBLE of nvidia-smi from package $name: replays the real H200
# capture as driver $driver.  Not NVIDIA's tool; drives no GPU.
case "\$1" in
  --query-gpu=*) exec sed 's/580\.159\.04/$driver/g' "$capture/query-gpu.csv" ;;
  -q) [ "\$2" = -x ] && exec sed 's/580\.159\.04/$driver/g' "$capture/nvidia-smi-q-x.xml" ;;
esac
echo "nvidia-smi test double: no capture for: \$*" >&2
exit 2
SMI
    chmod 0755 "$dir/usr/bin/nvidia-smi"
    cat > "$dir/DEBIAN/postinst" <<POST
#!/bin/sh
# The double's "module is loaded": the banner /proc/driver/nvidia/version shows.
mkdir -p "$proc/driver/nvidia"
sed 's/580\.159\.04/$driver/g' "$capture/proc-driver-nvidia-version" > "$proc/driver/nvidia/version"
POST
    chmod 0755 "$dir/DEBIAN/postinst"
  fi
  dpkg-deb --root-owner-group -Zgzip -b "$dir" "$repo/${name}_${version}_all.deb" >/dev/null
}

deb dkms 99:0-kvdouble "" "" ""
for branch in 570 580; do
  deb "nvidia-open-$branch" "$branch.159.04-1" dkms "nvidia-open, cuda-drivers, cuda-drivers-$branch" "$branch.159.04"
  deb "cuda-drivers-$branch" "$branch.159.04-1" dkms "nvidia-open, cuda-drivers, nvidia-open-$branch" "$branch.159.04"
  deb "nvidia-fabricmanager-$branch" "$branch.159.04-1" "" "" ""
done
deb nvidia-driver-pinning-590 590.48.01-1 "" "" ""
deb nvidia-open 590.48.01-1 dkms "nvidia-open-570, nvidia-open-580, cuda-drivers-570, cuda-drivers-580, cuda-drivers" 590.48.01
deb cuda-drivers 590.48.01-1 dkms "nvidia-open-570, nvidia-open-580, cuda-drivers-570, cuda-drivers-580, nvidia-open" 590.48.01
deb nvidia-fabricmanager 590.48.01-1 "" "" ""

# Packages and an unsigned Release (the source is written Trusted: yes).
cd "$repo"
: > Packages
for file in *.deb; do
  dpkg-deb -f "$file" >> Packages
  echo "Filename: ./$file" >> Packages
  echo "Size: $(stat -c %s "$file")" >> Packages
  echo "SHA256: $(sha256sum "$file" | cut -d' ' -f1)" >> Packages
  echo >> Packages
done
{
  echo "Origin: kunpeng.vllm test doubles"
  echo "Label: kunpeng.vllm test doubles"
  echo "Date: $(date -R -u)"
  echo "SHA256:"
  echo " $(sha256sum Packages | cut -d' ' -f1) $(stat -c %s Packages) Packages"
} > Release
rm -rf "$work"
