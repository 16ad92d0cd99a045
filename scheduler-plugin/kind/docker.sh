#!/bin/bash
# Debian's Docker engine for the kind cluster, kept inside this machine (scheduler-plugin/README.md,
# "Network rule"): no masquerading, no IP forwarding, and DOCKER-USER rules that drop anything
# routed between the cluster's bridge (or docker0) and another interface.
#   docker.sh up      install docker.io if missing, start dockerd if it is not running (then
#                     build/kind/dockerd.pid records that we started it), the rules, the network
#   docker.sh down    stop dockerd if `up` started it
#   docker.sh check   fail unless the network rule holds (see check_net)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STATE=$ROOT/build/kind
NET=${APTA_KIND_NETWORK:-apta-kind}
BRIDGE=apta-kind0
SUBNET=${APTA_KIND_SUBNET:-172.31.213.0/24}
DOCKER=/usr/bin/docker
mkdir -p "$STATE"

daemon_json='{
  "ip-masq": false,
  "ip-forward": false,
  "iptables": true,
  "ip6tables": false,
  "ipv6": false,
  "storage-driver": "overlay2",
  "log-driver": "json-file",
  "runtimes": {"runc-bounded": {"path": "/usr/local/libexec/apta-kind/runc-bounded"}},
  "default-runtime": "runc-bounded"
}'

install_docker() {
    if [ ! -x /usr/sbin/dockerd ] || [ ! -x "$DOCKER" ] || ! command -v debootstrap >/dev/null; then
        # written first so that a daemon the package's scripts might start has it too
        mkdir -p /etc/docker && printf '%s\n' "$daemon_json" > /etc/docker/daemon.json
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            docker.io iptables debootstrap >/dev/null
    fi
}

running() { [ -S /var/run/docker.sock ] && "$DOCKER" version >/dev/null 2>&1; }

rules() {
    # -C first: idempotent. Forwarding is off anyway (ip-forward false); these make a packet that
    # would be routed off a docker bridge a drop, counted, whatever the sysctl says later.
    for br in "$BRIDGE" docker0; do
        for r in "-i $br ! -o $br -j DROP" "-o $br ! -i $br -j DROP"; do
            iptables -C DOCKER-USER $r 2>/dev/null || iptables -I DOCKER-USER $r
        done
    done
}

up() {
    install_docker
    # the runtime wrapper of daemon_json (runc-bounded: why there), outside the checkout
    if ! cmp -s "$(dirname "$0")/runc-bounded" /usr/local/libexec/apta-kind/runc-bounded; then
        install -D -m 755 "$(dirname "$0")/runc-bounded" /usr/local/libexec/apta-kind/runc-bounded
    fi
    if [ "$(cat /etc/docker/daemon.json 2>/dev/null)" != "$daemon_json" ]; then
        if running; then
            echo "docker.sh: dockerd runs with another /etc/docker/daemon.json; not touching it" >&2; exit 1
        fi
        printf '%s\n' "$daemon_json" > /etc/docker/daemon.json
    fi
    if ! running; then
        nohup /usr/sbin/dockerd >"$STATE/dockerd.log" 2>&1 &
        echo $! > "$STATE/dockerd.pid"
        for _ in $(seq 60); do running && break; sleep 0.5; done
        running || { echo "docker.sh: dockerd did not start (log: $STATE/dockerd.log)" >&2; exit 1; }
    fi
    rules
    if ! "$DOCKER" network inspect "$NET" >/dev/null 2>&1; then
        "$DOCKER" network create -d bridge --subnet "$SUBNET" \
            -o com.docker.network.bridge.name=$BRIDGE \
            -o com.docker.network.bridge.enable_ip_masquerade=false \
            -o com.docker.network.driver.mtu=1500 "$NET" >/dev/null
    fi
    check
}

down() {
    [ -f "$STATE/dockerd.pid" ] || return 0
    pid=$(cat "$STATE/dockerd.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    fi
    rm -f "$STATE/dockerd.pid"
}

# The network rule, checked from the host: forwarding off, no MASQUERADE/SNAT in the host's nat
# table but docker's hairpin of a published port, the cluster's network created without masquerading, the drop rules in place.
check() {
    local bad=0
    [ "$(sysctl -n net.ipv4.ip_forward)" = 0 ] || { echo "network rule: net.ipv4.ip_forward is on" >&2; bad=1; }
    # docker's only own MASQUERADE with ip-masq off is the hairpin of a published port (a container
    # reaching its own address: -s A/32 -d A/32), which never leaves the bridge; any other is a leak
    local leaks
    leaks=$(iptables -t nat -S | grep -E -- '-j (MASQUERADE|SNAT)' | awk '{
        s = ""; d = ""
        for (i = 1; i < NF; i++) { if ($i == "-s") s = $(i + 1); if ($i == "-d") d = $(i + 1) }
        if (s == "" || s != d) print }' || true)  # grep finds nothing: no rule at all
    if [ -n "$leaks" ]; then
        printf '%s\n' "$leaks" >&2
        echo "network rule: masquerading/SNAT in the host's nat table (above)" >&2; bad=1
    fi
    opt=$("$DOCKER" network inspect -f '{{index .Options "com.docker.network.bridge.enable_ip_masquerade"}}' "$NET")
    [ "$opt" = false ] || { echo "network rule: network $NET has enable_ip_masquerade=$opt" >&2; bad=1; }
    for br in "$BRIDGE" docker0; do
        iptables -C DOCKER-USER -i $br ! -o $br -j DROP 2>/dev/null || { echo "network rule: no drop of forwarding from $br" >&2; bad=1; }
        iptables -C DOCKER-USER -o $br ! -i $br -j DROP 2>/dev/null || { echo "network rule: no drop of forwarding to $br" >&2; bad=1; }
    done
    [ $bad = 0 ] && echo "network rule: holds (no forwarding, no masquerading, drops on $BRIDGE and docker0)"
    return $bad
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    check) check ;;
    *) echo "usage: $0 up|down|check" >&2; exit 2 ;;
esac
