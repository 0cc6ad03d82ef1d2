#!/usr/bin/env bash
# Check that Lookout installs and runs on arm64 (aarch64) without a Raspberry Pi: build a
# Debian 12 (bookworm) arm64 root with debootstrap, run it under qemu-user emulation, set
# Lookout up there with the README's own path (python3 scripts/bootstrap.py: .venv, pip
# install from PyPI, the sample video) and run it briefly.
#
#   sudo scripts/check-arm64.sh [ROOT_DIR]      # default $LOOKOUT_ARM64_ROOT or /var/tmp/lookout-arm64
#
# Emulation is slow (NanoDet takes 12 to 30 s per inference under qemu on an x86 core,
# against ~44 ms natively): this proves that the aarch64 wheels, the model and the code
# work, not how fast they are. The first run takes about 35 minutes on 2 cores (the root
# ~9, the wheels ~10, the runs ~15); a later run with the same ROOT_DIR reuses the root and
# the venv and copies the working tree in again.
#
# Environment:
#   LOOKOUT_ARM64_ROOT      root directory (the argument wins)
#   LOOKOUT_ARM64_MIRROR    Debian mirror (default: the host's bookworm mirror, else deb.debian.org)
#   LOOKOUT_ARM64_DURATION  seconds of media for `lookout run --duration` (default 10)
#   LOOKOUT_ARM64_EVERY     `lookout count --every` on the sample video (default 200: 4 frames)
#
# Needs root (debootstrap, mount, chroot), apt on the host to install debootstrap and
# qemu-user-static if missing, and registers the kernel's qemu-aarch64 binfmt handler
# (system-wide) when it is not registered yet. While it runs, the root has /proc, /sys and
# /dev mounted and an ARM /proc/cpuinfo bound over the host's (ONNX Runtime crashes on an
# x86 one). Each step is said as it starts, with its time when it ends; a step that fails
# ends the script with one line (exit 1) naming the step and its log. To throw the root
# away: rm -rf ROOT_DIR ROOT_DIR.logs (nothing stays mounted there).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
suite=bookworm
packages=python3,python3-venv,ca-certificates
app=/opt/lookout

case "${1:-}" in
    -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "check-arm64.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
root="${1:-${LOOKOUT_ARM64_ROOT:-/var/tmp/lookout-arm64}}"
duration="${LOOKOUT_ARM64_DURATION:-10}"
every="${LOOKOUT_ARM64_EVERY:-200}"

say() { echo "==> $*"; }
fail() { echo "check-arm64.sh: $*" >&2; exit 1; }

if [[ "$root" != /* ]]; then
    root="$(pwd)/$root"
fi
root="${root%/}"
if [[ -z "$root" || "$root" == "/" ]]; then
    fail "refusing to use / as the arm64 root"
fi
if [[ $EUID -ne 0 ]]; then
    fail "run as root (sudo): debootstrap, mount and chroot need it"
fi

started=$SECONDS
total_steps=9
step_no=0
logs="$root.logs"
mkdir -p "$logs" || fail "cannot create $logs"

# Run one step: say it, show its output indented (and keep it in a log), say how long it
# took; on failure, one line with the step, its exit code, its last output line and the log.
step() {
    local title="$1"; shift
    step_no=$((step_no + 1))
    local log t0 rc last
    log="$logs/$step_no.log"
    say "[$step_no/$total_steps] $title"
    t0=$SECONDS
    # In this shell (not a pipeline's subshell), so that what a step sets (the mounts) stays.
    "$@" > >(tee "$log" | sed -u 's/^/    /') 2>&1
    rc=$?
    wait $! 2>/dev/null
    if [[ $rc -ne 0 ]]; then
        last="$(grep -v '^[[:space:]]*$' "$log" | tail -1)"
        fail "step $step_no/$total_steps ($title) failed, exit $rc, after $((SECONDS - t0)) s: ${last:-no output} (log: $log)"
    fi
    echo "    ($((SECONDS - t0)) s)"
}

# --- the host: tools, emulation ----------------------------------------------------------

native=0
[[ "$(uname -m)" == "aarch64" ]] && native=1

host_tools() {
    local need=()
    command -v debootstrap >/dev/null || need+=(debootstrap)
    if [[ $native -eq 0 && ! -e /usr/bin/qemu-aarch64-static ]]; then
        need+=(qemu-user-static)
    fi
    if [[ ${#need[@]} -eq 0 ]]; then
        echo "debootstrap $(dpkg-query -W -f '${Version}' debootstrap 2>/dev/null || echo '?')," \
            "qemu-user-static $(dpkg-query -W -f '${Version}' qemu-user-static 2>/dev/null || echo 'not needed')"
        return 0
    fi
    command -v apt-get >/dev/null || { echo "apt-get not found: install ${need[*]} by hand"; return 1; }
    echo "installing ${need[*]} with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"; then
        apt-get update -q && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${need[@]}"
    fi
}

binfmt() {
    local dir=/proc/sys/fs/binfmt_misc conf=/usr/lib/binfmt.d/qemu-aarch64.conf entry
    if [[ $native -eq 1 ]]; then
        echo "this machine is aarch64: no emulation needed"
        return 0
    fi
    if [[ ! -e "$dir/register" ]]; then
        echo "mounting binfmt_misc on $dir"
        mount -t binfmt_misc binfmt_misc "$dir" || return 1
    fi
    entry="$dir/qemu-aarch64"
    if [[ ! -e "$entry" ]]; then
        [[ -f "$conf" ]] || { echo "$conf missing (qemu-user-static too old?)"; return 1; }
        echo "registering the qemu-aarch64 handler from $conf"
        cat "$conf" >"$dir/register" || return 1
    fi
    if ! grep -qx enabled "$entry"; then
        echo "enabling the qemu-aarch64 handler"
        echo 1 >"$entry" || return 1
    fi
    sed 's/^/binfmt: /' "$entry" | grep -E 'enabled|interpreter|flags'
}

# A handler registered without the F flag (by binfmt-support, say) looks its interpreter
# up inside the chroot: put it there too.
interpreter_in_root() {
    local entry=/proc/sys/fs/binfmt_misc/qemu-aarch64 interp
    [[ $native -eq 0 && -e "$entry" ]] || return 0
    grep -q '^flags:.*F' "$entry" && return 0
    interp="$(sed -n 's/^interpreter //p' "$entry")"
    [[ -n "$interp" ]] || return 0
    mkdir -p "$root$(dirname "$interp")"
    cp -L "$interp" "$root$interp"
}

# --- the arm64 root ------------------------------------------------------------------------

host_mirror() {
    local m="" f
    if [[ -n "${LOOKOUT_ARM64_MIRROR:-}" ]]; then
        echo "$LOOKOUT_ARM64_MIRROR"; return
    fi
    # deb822 sources (Debian 12): the URIs of a stanza whose Suites include bookworm.
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f "$f" ]] || continue
        m="$(awk -v s="$suite" '
            /^[[:space:]]*$/ { if (ok && uri != "") { print uri; exit } ok = 0; uri = "" ; next }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
            END { if (ok && uri != "") print uri }' "$f" | grep -v -- '-security' | head -1)"
        [[ -n "$m" ]] && break
    done
    # One-line sources: "deb [options] URI bookworm main".
    if [[ -z "$m" ]]; then
        m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
            awk -v s="$suite" '$1 == "deb" { sub(/\[[^]]*\] */, ""); if ($3 == s) { print $2; exit } }')"
    fi
    echo "${m:-http://deb.debian.org/debian}"
}

make_root() {
    local mirror
    mirror="$(host_mirror)"
    if [[ -f "$root/.lookout-root" ]]; then
        echo "reusing $root (Debian $(cat "$root/etc/debian_version" 2>/dev/null), arm64)"
        return 0
    fi
    if [[ -d "$root/debootstrap" ]]; then
        echo "removing the unfinished root left in $root by an earlier attempt"
        unmount_all
        unmount_leftovers
        rm -rf --one-file-system "$root" || return 1
    elif [[ -d "$root" && -n "$(ls -A "$root" 2>/dev/null)" ]]; then
        echo "$root is not empty and is not a root made by this script: give a new directory"
        return 1
    fi
    mkdir -p "$root"
    echo "debootstrap --arch=arm64 --variant=minbase --include=$packages $suite $root $mirror"
    echo "(the second stage runs arm64 binaries under emulation: usually 5 to 20 minutes)"
    # Four lines per package (fetched, checked, extracted, unpacked) are too many to read:
    # only "Configuring", the slow emulated part, is shown (debootstrap keeps its own log in
    # $root/debootstrap/ when it fails).
    debootstrap --arch=arm64 --variant=minbase --include="$packages" \
        "$suite" "$root" "$mirror" |
        grep --line-buffered -v -E '^I: (Retrieving|Validating|Extracting|Unpacking) '
    [[ ${PIPESTATUS[0]} -eq 0 ]] || return 1
    echo "$(chroot "$root" /usr/bin/dpkg-query -W | wc -l) packages in the root"
    date -u +%FT%TZ >"$root/.lookout-root"
}

# What an interrupted run (ours or debootstrap's own /proc and /sys) left mounted in the root.
unmount_leftovers() {
    local target
    awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r |
        while IFS= read -r target; do
            umount -R "$target" 2>/dev/null || umount -R -l "$target" 2>/dev/null || true
        done
}

mounted=()
mount_root() {
    local what
    for what in proc sys dev; do
        if mountpoint -q "$root/$what"; then continue; fi
        mkdir -p "$root/$what"
        case "$what" in
            proc) mount -t proc proc "$root/proc" ;;
            sys) mount -t sysfs sysfs "$root/sys" ;;
            dev) mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" ;;
        esac || return 1
        mounted+=("$root/$what")
    done
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    # Where TLS is intercepted on the way out, pip needs the host's CA bundle; where it
    # is not, the host's bundle is the usual public one, so copying it is harmless.
    local share="$root/usr/local/share/lookout-check"
    mkdir -p "$share"
    cp -L "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$share/ca.crt" 2>/dev/null ||
        cp -L /etc/ssl/certs/ca-certificates.crt "$share/ca.crt" || return 1
    echo "CA bundle: $share/ca.crt (PIP_CERT, SSL_CERT_FILE in the root)"
    # qemu-user 7.2 (Debian 12's) shows emulated programs the host's own /proc/cpuinfo, an
    # x86 one. ONNX Runtime's CPU probe (cpuinfo) reads it, finds no ARM core and crashes
    # the interpreter at import (SIGSEGV in onnxruntime_pybind11_state). The root gets an
    # ARM one instead: a Cortex-A72 (a Raspberry Pi 4's core) for each host CPU.
    if [[ $native -eq 0 ]] && ! grep -q '^CPU implementer' "$root/proc/cpuinfo"; then
        arm_cpuinfo >"$share/cpuinfo" || return 1
        mount --bind "$share/cpuinfo" "$root/proc/cpuinfo" || return 1
        mounted+=("$root/proc/cpuinfo")
        echo "/proc/cpuinfo in the root: $(grep -c '^processor' "$share/cpuinfo") Cortex-A72" \
            "entries (qemu passes the host's x86 one through; ONNX Runtime crashes on it)"
    fi
}

arm_cpuinfo() {
    local i n
    n="$(nproc 2>/dev/null || echo 1)"
    for ((i = 0; i < n; i++)); do
        printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n' "$i"
        printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\n'
        printf 'CPU part\t: 0xd08\nCPU revision\t: 3\n\n'
    done
}

unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" 2>/dev/null
    done
    mounted=()
}
trap unmount_all EXIT
trap 'exit 130' INT TERM

# Run a command in the root, in the app's directory, with a clean environment (the host's
# pip configuration and wheel caches are for x86_64 and stay outside).
in_root() {
    local env=(
        PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 TERM=dumb
        PYTHONUNBUFFERED=1 PIP_CERT=/usr/local/share/lookout-check/ca.crt
        SSL_CERT_FILE=/usr/local/share/lookout-check/ca.crt
        PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-120}" PIP_DISABLE_PIP_VERSION_CHECK=1
    )
    local v
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
        [[ -n "${!v:-}" ]] && env+=("$v=${!v}")
    done
    # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
    chroot "$root" /usr/bin/env -i "${env[@]}" /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$app" "$@"
}

root_packages() {
    local arch
    arch="$(chroot "$root" /usr/bin/dpkg --print-architecture)" || return 1
    [[ "$arch" == arm64 ]] || { echo "the root is $arch, not arm64"; return 1; }
    if ! chroot "$root" /usr/bin/dpkg -s ${packages//,/ } >/dev/null 2>&1; then
        echo "installing ${packages//,/ } in the root"
        in_root apt-get update -q && in_root apt-get install -y -q ${packages//,/ } || return 1
    fi
    echo "uname -m in the root: $(chroot "$root" /usr/bin/uname -m)"
    chroot "$root" /usr/bin/python3 --version
}

# The working tree (tracked files and new ones git does not ignore) replaces the root's
# copy; the root's .venv and data/ are kept, so a later run does not reinstall or refetch.
copy_tree() {
    local dest="$root$app" old="$root$app.old" data_dir f n
    [[ -d "$dest" ]] && { rm -rf "$old"; mv "$dest" "$old" || return 1; }
    mkdir -p "$dest"
    if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$repo" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [[ -e "$repo/$f" ]] && printf '%s\0' "$f"; done |
            tar -C "$repo" --null -T - -cf - | tar -C "$dest" -xf - || return 1
        echo "copied $(git -C "$repo" ls-files -co --exclude-standard | wc -l) files of" \
            "$repo ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')" \
            "+ the uncommitted changes) to $app"
    else
        tar -C "$repo" --exclude=./.venv --exclude=./data --exclude=.git \
            --exclude='*_cache' -cf - . | tar -C "$dest" -xf - || return 1
        echo "copied $repo to $app (not a git checkout: the whole folder)"
    fi
    for n in .venv data; do
        [[ -e "$old/$n" ]] && mv "$old/$n" "$dest/$n"
    done
    rm -rf "$old"
    # The sample data, when the host has it: fetch_sample_data.py checks its sha256 and
    # otherwise gets it itself (apt-get download opencv-doc inside the root).
    mkdir -p "$dest/data"
    for data_dir in "${LOOKOUT_DATA_DIR:-}" "$repo/../shared/data" "$repo/data"; do
        [[ -n "$data_dir" && -f "$data_dir/vtest.avi" ]] || continue
        data_dir="$(cd "$data_dir" && pwd -P)"
        for f in vtest.avi messi5.jpg; do
            if [[ -f "$data_dir/$f" && ! -f "$dest/data/$f" ]]; then
                cp "$data_dir/$f" "$dest/data/$f" && echo "copied $data_dir/$f"
            fi
        done
        break
    done
    return 0
}

versions() {
    in_root .venv/bin/python -c '
import platform, sys
import cv2, numpy, onnxruntime
print("python", platform.python_version(), platform.machine(), sys.platform)
print("numpy", numpy.__version__)
print("onnxruntime", onnxruntime.__version__, onnxruntime.get_available_providers())
print("opencv", cv2.__version__)
' || return 1
    in_root .venv/bin/lookout doctor --model local
}

run_short() {
    local out
    out="$logs/run.out"
    in_root .venv/bin/lookout run --duration "$duration" --pace fast --no-http | tee "$out"
    local rc=${PIPESTATUS[0]}
    [[ $rc -eq 0 ]] || return "$rc"
    grep -Eq '\] count: [0-9]' "$out" || { echo "the run said no count"; return 1; }
}

count_frames() {
    local out
    out="$logs/count.out"
    in_root .venv/bin/lookout count data/vtest.avi --every "$every" --json | tee "$out"
    local rc=${PIPESTATUS[0]}
    [[ $rc -eq 0 ]] || return "$rc"
    grep -q '"count"' "$out" || { echo "lookout count printed no frame"; return 1; }
}

run_and_count() {
    local t0=$SECONDS
    run_short || return 1
    echo "(lookout run: $((SECONDS - t0)) s)"
    t0=$SECONDS
    count_frames || return 1
    echo "(lookout count: $((SECONDS - t0)) s)"
}

say "arm64 check: root $root, logs $logs"
step "host tools: debootstrap, qemu-user-static" host_tools
step "qemu-aarch64 binfmt handler" binfmt
step "Debian 12 ($suite) arm64 root" make_root
step "mounts, DNS and CA bundle for the root" mount_root
interpreter_in_root
step "the root's packages (${packages//,/, })" root_packages
step "copy the working tree to $app in the root" copy_tree
step "python3 scripts/bootstrap.py setup (the README's set-up path)" \
    in_root python3 scripts/bootstrap.py setup
step "versions in the root, and lookout doctor" versions
step "lookout run --duration $duration --pace fast --no-http, then lookout count data/vtest.avi --every $every --json" \
    run_and_count
say "arm64 check passed in $((SECONDS - started)) s (logs in $logs)"
