#!/bin/sh
# TEST DOUBLE - not Huawei software.  Shared body of the stand-in .run
# installers in packages/: each package file sets DOUBLE_COMPONENT,
# DOUBLE_VERSION and DOUBLE_ARCH and sources this file with its arguments.
#
# It accepts the flags of Huawei's installers (--full, --install, --upgrade,
# --check, --quiet, --nox11, --install-for-all, --install-username=,
# --install-usergroup=, --install-path=) and writes the files the real
# packages leave behind, in their KEY=VALUE formats: driver/version.info,
# firmware/version.info, /etc/ascend_install.info, the toolkit's
# ascend_toolkit_install.info and set_env.sh, opp_kernel/version.info, NNAL's
# version.info and set_env.sh.  Every run appends one line to
# /var/log/ascend_seclog/ascend_install.log, so tests can read the order.
#
# Like the real packages it refuses what Huawei's installers refuse: firmware
# before a driver, --full over an installed driver, a run user that does not
# exist, kernels without a toolkit, NNAL without the toolkit environment.
set -u

component=$DOUBLE_COMPONENT
version=$DOUBLE_VERSION
arch=$DOUBLE_ARCH
root=/usr/local/Ascend
mode=""
user=""
group=""
for_all=no
check=no
for arg in "$@"; do
  case "$arg" in
    --full) mode=full ;;
    --install) mode=install ;;
    --upgrade) mode=upgrade ;;
    --check) check=yes ;;
    --quiet | --nox11) ;;
    --install-for-all) for_all=yes ;;
    --install-username=*) user=${arg#*=} ;;
    --install-usergroup=*) group=${arg#*=} ;;
    --install-path=*) root=${arg#*=} ;;
    *)
      echo "[ERROR] Unrecognized parameters: $arg. Try './$(basename "$0") --help' for more information." >&2
      exit 1
      ;;
  esac
done

logdir=/var/log/ascend_seclog
mkdir -p "$logdir"
log() {
  echo "[$(date '+%Y-%m-%d %H:%M:%S')] [double] $component $version $1" >>"$logdir/ascend_install.log"
  echo "[$(date '+%Y-%m-%d %H:%M:%S')] [double] $component $version $1" >>"$logdir/operation.log"
}
fail() {
  echo "[ERROR] $*" >&2
  log "failed: $*"
  exit 1
}

if [ "$check" = yes ]; then
  echo "Verifying archive integrity...  100%   SHA256 checksums are OK. All good."
  exit 0
fi
[ -n "$mode" ] || fail "no operation given: use --full, --install or --upgrade"

info=/etc/ascend_install.info
set_info() {  # set_info KEY VALUE: replace or append one line of the install record
  touch "$info"
  grep -v "^$1=" "$info" >"$info.tmp" || true
  echo "$1=$2" >>"$info.tmp"
  mv "$info.tmp" "$info"
}

case "$component" in
  driver)
    if [ "$mode" = full ] && [ -f "$root/driver/version.info" ]; then
      fail "driver package has been installed already, please use --upgrade"
    fi
    if [ "$mode" = upgrade ] && [ ! -f "$root/driver/version.info" ]; then
      fail "driver package is not installed, please use --full"
    fi
    if [ "$mode" = full ]; then
      [ -n "$user" ] || user=HwHiAiUser
      [ -n "$group" ] || group=HwHiAiUser
      id -u "$user" >/dev/null 2>&1 || fail "user $user does not exist, create it or use --install-username=root --install-usergroup=root --install-for-all"
      set_info UserName "$user"
      set_info UserGroup "$group"
      set_info Driver_Install_Type full
      set_info Driver_Install_Path_Param "$root"
      set_info Driver_Install_For_All "$for_all"
      set_info Driver_Install_Mode normal
    fi
    mkdir -p "$root/driver/lib64/driver" "$root/driver/lib64/common" "$root/driver/tools"
    cat >"$root/driver/version.info" <<INFO
Version=$version
ascendhal_version=7.35.19
aicpu_version=1.0
tdt_version=1.0
log_version=1.0
prof_version=2.0
dvppkernels_version=1.1
tsfw_version=1.0
Innerversion=V100R001C15SPC006B220
compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]
compatible_version_fw=[7.0.0,7.2.99]
package_version=$version
INFO
    set_info Driver_Install_Status complete
    install -m 0755 "${ASCEND_DOUBLE_HOME:-/opt/ascend-doubles}/npu-smi" /usr/local/bin/npu-smi
    log "$mode"
    echo "Driver package installed successfully! Reboot needed for installation/upgrade to take effect!"
    ;;
  firmware)
    [ -f "$root/driver/version.info" ] || fail "driver is not installed, install the driver package first"
    if [ "$mode" = upgrade ] && [ ! -f "$root/firmware/version.info" ]; then
      fail "firmware package is not installed, please use --full"
    fi
    mkdir -p "$root/firmware"
    cat >"$root/firmware/version.info" <<INFO
Version=$version
firmware_version=1.0
package_version=23.0.7
compatible_version_drv=[23.0.rc3,23.0.rc3.],[23.0.0,23.0.0.]
INFO
    set_info Firmware_Install_Type full
    set_info Firmware_Install_Path_Param "$root"
    log "$mode"
    echo "Firmware package installed successfully! Reboot now or after driver installation for the installation/upgrade to take effect."
    ;;
  toolkit)
    home=$root/ascend-toolkit
    dir=$home/$version/$arch-linux
    mkdir -p "$dir" "$home/$version/lib64" "$home/$version/opp" "$home/$version/bin" "$home/$version/python/site-packages"
    cat >"$dir/ascend_toolkit_install.info" <<INFO
package_name=Ascend-cann-toolkit
version=$version
innerversion=V100R001C21SPC001B238
compatible_version=[V100R001C15],[V100R001C18],[V100R001C19],[V100R001C20],[V100R001C21]
arch=$arch
os=linux
path=$dir
INFO
    ln -sfn "$version" "$home/latest"
    cat >"$home/set_env.sh" <<ENV
# TEST DOUBLE of the CANN toolkit's set_env.sh (same variables, same form).
export ASCEND_TOOLKIT_HOME=$home/latest
export LD_LIBRARY_PATH=\${ASCEND_TOOLKIT_HOME}/lib64:\${ASCEND_TOOLKIT_HOME}/lib64/plugin/opskernel:\${ASCEND_TOOLKIT_HOME}/lib64/plugin/nnengine:$root/driver/lib64/common:$root/driver/lib64/driver:\$LD_LIBRARY_PATH
export PYTHONPATH=\${ASCEND_TOOLKIT_HOME}/python/site-packages:\${ASCEND_TOOLKIT_HOME}/opp/built-in/op_impl/ai_core/tbe:\$PYTHONPATH
export PATH=\${ASCEND_TOOLKIT_HOME}/bin:\${ASCEND_TOOLKIT_HOME}/compiler/ccec_compiler/bin:\$PATH
export ASCEND_AICPU_PATH=\${ASCEND_TOOLKIT_HOME}
export ASCEND_OPP_PATH=\${ASCEND_TOOLKIT_HOME}/opp
export TOOLCHAIN_HOME=\${ASCEND_TOOLKIT_HOME}/toolkit
export ASCEND_HOME_PATH=\${ASCEND_TOOLKIT_HOME}
ENV
    log "$mode"
    echo "Ascend-cann-toolkit_${version}_linux-$arch install success"
    ;;
  kernels)
    [ -d "$root/ascend-toolkit/latest" ] || fail "toolkit is not installed, install Ascend-cann-toolkit first"
    mkdir -p "$root/ascend-toolkit/latest/opp_kernel"
    cat >"$root/ascend-toolkit/latest/opp_kernel/version.info" <<INFO
Version=8.1.T15.0.B038
version_dir=$version
timestamp=20250307_101010000
ops_version=8.1.T15.0.B038
INFO
    log "$mode"
    echo "Ascend-cann-kernels install success"
    ;;
  nnal)
    [ -n "${ASCEND_TOOLKIT_HOME:-}" ] || fail "please source the toolkit's set_env.sh before installing NNAL"
    home=$root/nnal/atb
    for abi in 0 1; do
      mkdir -p "$home/$version/atb/cxx_abi_$abi/lib" "$home/$version/atb/cxx_abi_$abi/bin"
      : >"$home/$version/atb/cxx_abi_$abi/lib/libatb.so"
    done
    cat >"$home/$version/version.info" <<INFO
    Ascend-cann-atb : $version
    Ascend-cann-atb Version : $version.B001
    Platform : $arch
INFO
    ln -sfn "$version" "$home/latest"
    cat >"$home/set_env.sh" <<'ENV'
# TEST DOUBLE of NNAL's atb/set_env.sh (same variables, same --cxx_abi switch).
cxx_abi=1
for arg in "$@"; do
  case "$arg" in --cxx_abi=*) cxx_abi=${arg#*=} ;; esac
done
ENV
    cat >>"$home/set_env.sh" <<ENV
export ATB_HOME_PATH=$home/latest/atb/cxx_abi_\${cxx_abi}
export LD_LIBRARY_PATH=\${ATB_HOME_PATH}/lib:\${ATB_HOME_PATH}/examples:\${ATB_HOME_PATH}/tests/atbopstest:\$LD_LIBRARY_PATH
export PATH=\${ATB_HOME_PATH}/bin:\$PATH
export ATB_STREAM_SYNC_EVERY_KERNEL_ENABLE=0
export ATB_STREAM_SYNC_EVERY_RUNNER_ENABLE=0
export ATB_STREAM_SYNC_EVERY_OPERATION_ENABLE=0
export ATB_OPSRUNNER_SETUP_CACHE_ENABLE=1
export ATB_OPSRUNNER_KERNEL_CACHE_TYPE=3
export ATB_WORKSPACE_MEM_ALLOC_GLOBAL=0
export ATB_COMPARE_TILING_EVERY_KERNEL=0
export ASDOPS_LOG_LEVEL=ERROR
ENV
    log "$mode"
    echo "Ascend-cann-nnal install success"
    ;;
  *)
    fail "unknown double component $component"
    ;;
esac
exit 0
