#!/usr/bin/env bash
# Install Lookout as a systemd service: an unprivileged user, a unit that
# restarts on failure, the config in /etc/lookout/lookout.toml.
#
#   sudo scripts/install-service.sh [--venv DIR] [--user NAME] [--config FILE] [--start]
#   scripts/install-service.sh --dry-run      # print the unit and the plan, change nothing
#
# Secrets (GEMINI_API_KEY) go in /etc/lookout/lookout.env (mode 600), never in
# the unit or the TOML file: the unit reads it as an EnvironmentFile.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: install-service.sh [options]
  --dry-run          print the unit file and what would be done; change nothing
  --venv DIR         virtual environment that has lookout installed
                     (default: the .venv beside this script's repository)
  --user NAME        system user the service runs as (default: lookout)
  --config FILE      config file passed with --config (default: /etc/lookout/lookout.toml)
  --env-file FILE    environment file for secrets (default: /etc/lookout/lookout.env)
  --name NAME        unit name (default: lookout)
  --unit-dir DIR     where the unit goes (default: /etc/systemd/system)
  --start            enable and start the service after installing it
  -h, --help         this help
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
dry_run=0
start=0
venv="$repo/.venv"
user="lookout"
config="/etc/lookout/lookout.toml"
env_file="/etc/lookout/lookout.env"
name="lookout"
unit_dir="/etc/systemd/system"

need_value() {
    if [[ $# -lt 2 || -z "$2" ]]; then
        echo "install-service.sh: $1 needs a value (see --help)" >&2
        exit 2
    fi
}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --dry-run) dry_run=1 ;;
        --start) start=1 ;;
        --venv) need_value "$@"; venv="$2"; shift ;;
        --user) need_value "$@"; user="$2"; shift ;;
        --config) need_value "$@"; config="$2"; shift ;;
        --env-file) need_value "$@"; env_file="$2"; shift ;;
        --name) need_value "$@"; name="$2"; shift ;;
        --unit-dir) need_value "$@"; unit_dir="$2"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "install-service.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [[ ! "$user" =~ ^[a-z_][a-z0-9_-]*$ ]]; then
    echo "install-service.sh: not a valid user name: $user" >&2
    exit 2
fi
if [[ ! "$name" =~ ^[A-Za-z0-9_.@-]+$ ]]; then
    echo "install-service.sh: not a valid unit name: $name" >&2
    exit 2
fi
for path in "$venv" "$config" "$env_file"; do
    if [[ "$path" != /* || "$path" =~ [[:space:]] ]]; then
        # systemd needs absolute paths (a relative one would mean another directory
        # once the service runs), and ExecStart splits words at spaces.
        echo "install-service.sh: use an absolute path without spaces, not '$path'" >&2
        exit 2
    fi
done

lookout_bin="$venv/bin/lookout"
state_dir="/var/lib/$name"
unit_path="$unit_dir/$name.service"
example="$here/lookout.example.toml"

# Can the service user reach (read and run) a path? A 0700 home directory (the default
# on Debian and Raspberry Pi OS) stops a venv under it, its Python, and an editable
# install's source code, and systemd would then fail at every start.
blocked_on() {
    local target="$1" dir mode
    if [[ $EUID -eq 0 ]] && id -u "$user" >/dev/null 2>&1 && command -v runuser >/dev/null; then
        if runuser -u "$user" -- test -r "$target"; then return 1; fi
    fi
    dir="$target"
    while [[ "$dir" != "/" && -n "$dir" ]]; do
        dir="$(dirname "$dir")"
        [[ -d "$dir" ]] || continue
        mode="$(stat -c %a "$dir" 2>/dev/null || echo 755)"
        if (( (8#$mode & 1) == 0 )); then
            echo "$dir (mode $mode)"
            return 0
        fi
    done
    return 1
}

reach_problems() {
    local path real home found=0
    real="$(readlink -f "$venv/bin/python" 2>/dev/null || true)"
    # A venv's Python runs the standard library of the Python it was made from.
    home="$(sed -n 's/^home *= *//p' "$venv/pyvenv.cfg" 2>/dev/null | head -1)"
    for path in "$lookout_bin" "$real" "$home" "$repo/device/cli.py" "$repo/data"; do
        [[ -n "$path" && -e "$path" ]] || continue
        if blocked="$(blocked_on "$path")"; then
            echo "the service user $user cannot reach $path: $blocked is closed to others"
            found=1
        fi
    done
    return $(( found == 0 ))
}

unit() {
    cat <<EOF
[Unit]
Description=Lookout edge vision agent
Documentation=file://$repo/docs/operations.md
Wants=network-online.target
# A Pi has no real-time clock: start once the clock is set where something sets it
# (systemd-timesyncd pulls time-sync.target in; enable systemd-time-wait-sync.service
# to wait for the first synchronisation). A later step is followed and said anyway.
After=network-online.target time-sync.target
# A crash loop (bad config, broken camera) gives up after 10 starts in 5 minutes.
StartLimitIntervalSec=300
StartLimitBurst=10

[Service]
Type=simple
User=$user
Group=$user
# Cameras (/dev/video*) belong to the video group.
SupplementaryGroups=video
ExecStart=$lookout_bin run --config $config
# Beyond systemd's default soft limit of 1024: viewers and reconnects need descriptors.
LimitNOFILE=8192
# Secrets such as GEMINI_API_KEY; the leading '-' makes the file optional.
EnvironmentFile=-$env_file
Environment=PYTHONUNBUFFERED=1
WorkingDirectory=$state_dir
StateDirectory=$name
Restart=on-failure
RestartSec=5
TimeoutStopSec=15
KillSignal=SIGTERM
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only
PrivateTmp=yes
ProtectKernelTunables=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes

[Install]
WantedBy=multi-user.target
EOF
}

if [[ $dry_run -eq 1 ]]; then
    {
        echo "# dry run: nothing is changed. Would:"
        if id -u "$user" >/dev/null 2>&1; then
            echo "#   use the existing user $user"
        else
            echo "#   create the system user $user (no login, home $state_dir)"
        fi
        echo "#   add $user to the video group"
        echo "#   create /etc/lookout (config $config is left as it is if present)"
        echo "#   write $unit_path and run systemctl daemon-reload"
        if [[ $start -eq 1 ]]; then
            echo "#   systemctl enable --now $name"
        fi
        if [[ ! -e "$config" ]]; then
            echo "#   write $config from $example (every setting commented; loop = true,"
            echo "#   so the sample video replays forever until you set a source)"
        fi
        if [[ ! -x "$lookout_bin" ]]; then
            echo "# warning: $lookout_bin does not exist (yet); pass --venv"
        elif problems="$(reach_problems)"; then
            while IFS= read -r line; do echo "# problem: $line"; done <<<"$problems"
            echo "#   the service would not start: put the venv (and the code) under /opt,"
            echo "#   or open the folder to others (chmod o+x), then run this again"
        else
            echo "#   the service user $user can run $lookout_bin"
        fi
    } >&2
    unit
    exit 0
fi

if [[ $EUID -ne 0 ]]; then
    echo "install-service.sh: run as root (sudo), or use --dry-run to see the unit" >&2
    exit 1
fi
if [[ ! -x "$lookout_bin" ]]; then
    echo "install-service.sh: $lookout_bin not found; install lookout in a venv and pass --venv" >&2
    exit 1
fi
if ! command -v systemctl >/dev/null 2>&1; then
    echo "install-service.sh: systemctl not found: this machine does not run systemd" >&2
    exit 1
fi

if ! id -u "$user" >/dev/null 2>&1; then
    nologin="$(command -v nologin || echo /usr/sbin/nologin)"
    useradd --system --user-group --home-dir "$state_dir" --no-create-home \
        --shell "$nologin" --comment "Lookout edge vision agent" "$user"
    echo "created system user $user"
fi
if getent group video >/dev/null 2>&1; then
    usermod --append --groups video "$user"
fi
if problems="$(reach_problems)"; then
    echo "install-service.sh: $problems" >&2
    echo "install-service.sh: the service would not start; put the venv (and the code) under" \
        "/opt, or open the folder to others (chmod o+x), then run this again" >&2
    exit 1
fi

install -d -m 0755 "$(dirname "$config")"
if [[ ! -e "$config" ]]; then
    install -m 0644 "$example" "$config"
    echo "wrote $config from $example: every setting commented, loop = true (set a source)"
fi
if [[ ! -e "$env_file" ]]; then
    install -m 0600 /dev/null "$env_file"
    echo "created $env_file (mode 600) for secrets such as GEMINI_API_KEY"
fi

install -d -m 0755 "$unit_dir"
unit >"$unit_path.tmp"
chmod 0644 "$unit_path.tmp"
mv "$unit_path.tmp" "$unit_path"
echo "wrote $unit_path"
systemctl daemon-reload
if [[ $start -eq 1 ]]; then
    systemctl enable --now "$name"
    echo "started $name: journalctl -u $name -f"
else
    echo "enable and start with: systemctl enable --now $name"
fi
