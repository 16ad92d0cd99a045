#!/bin/bash
# `make kind`: everything a kind cluster needs, built here from Debian packages and Go modules (no
# image registry), cached under build/kind/, then a cluster (1 control plane + 3 workers) with the
# manifests of scheduler-plugin/manifests/apta applied. Idempotent: a second run rebuilds nothing
# whose inputs did not change and keeps a running cluster. See scheduler-plugin/README.md
# ("Deploy on kind").
#   build.sh images    the binaries and images only
#   build.sh cluster   images, then the cluster (default)
#   build.sh delete    delete the cluster
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/scheduler-plugin/kind
B=$ROOT/build/kind
mkdir -p "$B/bin" "$B/images" "$B/ctx"
# Debian's docker 20.10 CLI (matches its daemon), found first by kind too
export PATH=/usr/bin:/usr/sbin:$PATH
GO=$("$ROOT/tools/install-go.sh")
export GOFLAGS=-p=1
NICE="nice -n 10"
CLUSTER=${APTA_KIND_CLUSTER:-apta}
export KIND_EXPERIMENTAL_DOCKER_NETWORK=${APTA_KIND_NETWORK:-apta-kind}

# one definition of each version: the plugin's go.mod (k8s.io/kubernetes), kind/go.mod (etcd),
# kind/coredns/go.mod (CoreDNS), kubeadm's own constants (pause)
K8S_VERSION=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$ROOT/scheduler-plugin/go.mod")
KIND_VERSION=v0.33.0
ETCD_VERSION=$(awk '$1=="go.etcd.io/etcd/server/v3"{print $2; exit}' "$HERE/go.mod")
COREDNS_VERSION=$(awk '$1=="github.com/coredns/coredns"{print $2; exit}' "$HERE/coredns/go.mod")
KMOD=$($GO env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION
PAUSE_VERSION=$(sed -n 's/^\tPauseVersion = "\(.*\)"/\1/p' "$KMOD/cmd/kubeadm/app/constants/constants.go")
KIND_MOD=$($GO env GOMODCACHE)/sigs.k8s.io/kind@$KIND_VERSION
NODE_IMAGE=apta-kind/node:$K8S_VERSION
# the images imported into the node image (apta-scheduler and apta-function are `kind load`ed)
NODE_IMAGES="kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns pause apta-cni"
BASE_IMAGE=apta-kind/debian:bookworm
# The node's root filesystem: Debian's systemd, containerd, runc and CNI plugins and what kind's
# base image installs (iptables, conntrack, mount tools ...)
NODE_PKGS=systemd,systemd-sysv,containerd,runc,containernetworking-plugins,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps,socat

t0=$(date +%s)
step() { echo "kind: [$(( $(date +%s) - t0 ))s] $*"; }

build_binaries() {
    step "Go binaries (GOFLAGS=-p=1, nice)"
    [ -x "$B/bin/kind" ] && "$B/bin/kind" version | grep -q "kind $KIND_VERSION " ||
        (cd /tmp && GOBIN=$B/bin $NICE $GO install sigs.k8s.io/kind@$KIND_VERSION)
    # kubeadm compares versions: the binaries carry K8S_VERSION as a release build does
    local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
    local ldf="" pkg
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldf="$ldf -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    (cd "$HERE" && for p in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubeadm kubectl kubelet; do
        $NICE $GO build -ldflags "$ldf" -o "$B/bin/$p" k8s.io/kubernetes/cmd/$p
    done
    $NICE $GO build -o "$B/bin/etcd" go.etcd.io/etcd/server/v3
    $NICE $GO build -o "$B/bin/apta-cni" ./cmd/apta-cni)
    (cd "$HERE/coredns" && $NICE $GO build -o "$B/bin/coredns" .)
    [ "$B/bin/pause" -nt "$KMOD/build/pause/linux/pause.c" ] ||
        gcc -Os -static -DVERSION=$PAUSE_VERSION -o "$B/bin/pause" "$KMOD/build/pause/linux/pause.c"
    make -C "$ROOT" --no-print-directory scheduler >/dev/null
}

build_rootfs() {
    local key; key=$(echo "$NODE_PKGS" | sha256sum | cut -c1-12)
    if [ "$(docker image inspect -f '{{index .Config.Labels "apta.pkgs"}}' $BASE_IMAGE 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    step "Debian root filesystem (debootstrap bookworm)"
    local dir=$B/rootfs.tmp
    rm -rf "$dir"; mkdir -p "$B/debs"
    $NICE debootstrap --variant=minbase --cache-dir="$B/debs" --include=$NODE_PKGS \
        bookworm "$dir" http://deb.debian.org/debian > "$B/debootstrap.log"
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    tar -C "$dir" -c . | docker import -c "LABEL apta.pkgs=$key" - $BASE_IMAGE >/dev/null
    rm -rf "$dir"
}

# image NAME TAG ENTRYPOINT FILE...: an image FROM BASE_IMAGE (or scratch for a static binary)
# with FILEs in /usr/local/bin, saved to build/kind/images/NAME.tar when its id changed.
image() {
    local name=$1 tag=$2 entry=$3; shift 3
    local ctx=$B/ctx/$name from=$BASE_IMAGE dest=/usr/local/bin/
    rm -rf "$ctx"; mkdir -p "$ctx"
    [ "$name" = pause ] && { from=scratch; dest=/; }
    cp "$@" "$ctx/"
    { echo "FROM $from"; for f in "$@"; do echo "COPY $(basename "$f") $dest"; done
      [ -n "$entry" ] && echo "ENTRYPOINT $entry"; } > "$ctx/Dockerfile"
    docker build -q -t "$tag" "$ctx" >/dev/null
    local id; id=$(docker image inspect -f '{{.Id}}' "$tag")
    if [ "$(cat "$B/images/$name.id" 2>/dev/null)" != "$id" ]; then
        docker save -o "$B/images/$name.tar" "$tag"
        echo "$id" > "$B/images/$name.id"
    fi
}

build_images() {
    step "images"
    local c
    for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
        image $c registry.k8s.io/$c:$K8S_VERSION "" "$B/bin/$c"
    done
    image etcd registry.k8s.io/etcd:${ETCD_VERSION#v}-0 "" "$B/bin/etcd"
    image coredns registry.k8s.io/coredns/coredns:$COREDNS_VERSION '["/usr/local/bin/coredns"]' "$B/bin/coredns"
    image pause registry.k8s.io/pause:$PAUSE_VERSION '["/pause"]' "$B/bin/pause"
    image apta-cni apta-cni:dev '["/usr/local/bin/apta-cni"]' "$B/bin/apta-cni"
    # the plugin's image as manifests/apta/deployment.yaml names it: /bin/kube-scheduler, /bin/apta-agent, /bin/apta-controlplane
    local ctx=$B/ctx/apta-scheduler
    rm -rf "$ctx"; mkdir -p "$ctx"
    cp "$ROOT/build/scheduler/scheduler" "$ctx/kube-scheduler"
    cp "$ROOT/build/scheduler/agent" "$ctx/apta-agent"
    cp "$ROOT/build/scheduler/controlplane" "$ctx/apta-controlplane"
    printf 'FROM %s\nCOPY kube-scheduler apta-agent apta-controlplane /bin/\n' $BASE_IMAGE > "$ctx/Dockerfile"
    docker build -q -t apta-scheduler:dev "$ctx" >/dev/null
    # the runner of a compute server (function/apta-runner: the host-built static aptarun of
    # `make runner`) and a function pod's container (function/apta-function: admission with the
    # placed epoch, then the function's job on the node's runner); function/apta-report: a probe
    # pod reporting its start to the conforming control plane (the negative control of test_kind)
    image apta-function apta-function:dev "" "$HERE/function/apta-runner" "$HERE/function/apta-function" \
        "$HERE/function/apta-report" \
        "$ROOT/build/qemu-cxl/runner/aptarun-static"
}

build_node() {
    step "node base image"
    local ctx=$B/ctx/node-base
    rm -rf "$ctx"; mkdir -p "$ctx/files"
    cp -r "$KIND_MOD/images/base/files/usr" "$KIND_MOD/images/base/files/kind" "$KIND_MOD/images/base/files/etc" "$ctx/files/"
    chmod -R u+w "$ctx"
    rm -f "$ctx/files/etc/systemd/system/containerd-fuse-overlayfs.service"
    # Debian's containerd 1.6 reads kind's version-2 configuration; no fuse-overlayfs (rootless
    # only); the sandbox image is the pause kubeadm asks for
    sed -i -e '/^\[proxy_plugins\]/,/^$/d' -e '/^# fuse-overlayfs/d' -e '/^\[proxy_plugins."fuse-overlayfs"\]/,/^$/d' \
        -e "s#registry.k8s.io/pause:[0-9.]*#registry.k8s.io/pause:$PAUSE_VERSION#" \
        -e "s#restrict_oom_score_adj = false#restrict_oom_score_adj = true#" "$ctx/files/etc/containerd/config.toml"
    cp "$HERE/node/Dockerfile" "$ctx/"
    docker build -q --build-arg BASE=$BASE_IMAGE -t apta-kind/node-base:dev "$ctx" >/dev/null

    # the node image: base + node binaries + the images kubeadm and kind need, imported into the
    # node's containerd (as `kind build node-image` does, which would fetch them from registries)
    local key
    # (the images imported below only: apta-scheduler and apta-function are loaded into a running
    # cluster by `kind load`, so a change there needs no new node image)
    key=$( { docker image inspect -f '{{.Id}}' apta-kind/node-base:dev
             for f in $NODE_IMAGES; do cat "$B/images/$f.id"; done
             sha256sum "$B/bin/kubelet" "$B/bin/kubeadm" "$B/bin/kubectl" "$HERE"/node/*.yaml; } | sha256sum | cut -c1-16)
    if [ "$(docker image inspect -f '{{index .Config.Labels "apta.inputs"}}' $NODE_IMAGE 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    step "node image $NODE_IMAGE"
    local c=apta-kind-build
    docker rm -f $c >/dev/null 2>&1 || true
    docker run -d --name $c --privileged --network none --entrypoint sleep apta-kind/node-base:dev infinity >/dev/null
    trap "docker rm -f $c >/dev/null 2>&1 || true" RETURN
    local f
    for f in kubelet kubeadm kubectl; do docker cp "$B/bin/$f" $c:/usr/bin/$f; done
    docker exec $c sh -c "mkdir -p /kind/manifests && echo $K8S_VERSION > /kind/version"
    docker cp "$HERE/node/default-cni.yaml" $c:/kind/manifests/default-cni.yaml
    docker cp "$HERE/node/default-storage.yaml" $c:/kind/manifests/default-storage.yaml
    docker exec $c sh -c 'nohup containerd >/tmp/containerd.log 2>&1 & for i in $(seq 50); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.2; done; ctr version >/dev/null'
    for f in $NODE_IMAGES; do
        docker exec -i $c ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - < "$B/images/$f.tar" >/dev/null
    done
    docker exec $c sh -c 'pkill containerd; for i in $(seq 50); do pgrep -x containerd >/dev/null || break; sleep 0.2; done; rm -f /tmp/containerd.log'
    docker commit -c 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' -c "LABEL apta.inputs=$key" $c $NODE_IMAGE >/dev/null
}

# Tokens for the control plane's callers (secret.yaml's placeholders are refused by every
# component): made once per cluster, kept in build/kind/tokens/.
secrets() {
    local k="kubectl --kubeconfig $B/kubeconfig -n kube-system"
    mkdir -p "$B/tokens"
    for n in scheduler agent failure-detector kubelet; do
        [ -s "$B/tokens/$n" ] || head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > "$B/tokens/$n"
    done
    for n in scheduler agent; do
        $k create secret generic apta-$n-token --from-file=token="$B/tokens/$n" --dry-run=client -o yaml | $k apply -f - >/dev/null
    done
    # the manifests' two readers, and for make test-kind: itself as the failure detector (fence,
    # rejoin, register servers) and the function pods as kubelet (report their starts)
    printf '%s,apta-scheduler,reader\n%s,apta-agent,reader\n%s,apta-test,failure-detector\n%s,apta-functions,kubelet\n' \
        "$(cat "$B/tokens/scheduler")" "$(cat "$B/tokens/agent")" "$(cat "$B/tokens/failure-detector")" "$(cat "$B/tokens/kubelet")" > "$B/tokens/tokens.csv"
    $k create secret generic apta-controlplane-tokens --from-file=tokens.csv="$B/tokens/tokens.csv" --dry-run=client -o yaml | $k apply -f - >/dev/null
}

cluster() {
    "$HERE/docker.sh" up
    if ! "$B/bin/kind" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
        step "kind create cluster $CLUSTER"
        local s; s=$(date +%s)
        # the daemon's rack directory, mounted into the workers (cluster.yaml's @RACK@)
        mkdir -p "$B/rack"
        sed "s#@RACK@#$B/rack#" "$HERE/cluster.yaml" > "$B/cluster.yaml"
        $NICE "$B/bin/kind" create cluster --name "$CLUSTER" --image $NODE_IMAGE \
            --config "$B/cluster.yaml" --kubeconfig "$B/kubeconfig" --wait 5m
        echo "$(( $(date +%s) - s ))" > "$B/create-seconds"
        CREATED=true
        step "cluster created in $(cat "$B/create-seconds") s"
    fi
    step "load apta-scheduler:dev and apta-function:dev, apply manifests/apta"
    "$B/bin/kind" load docker-image apta-scheduler:dev apta-function:dev --name "$CLUSTER" >/dev/null
    local k="$B/bin/kubectl --kubeconfig $B/kubeconfig"
    # one compute server per worker, named as its node (the function pods report their node's name)
    local n
    for n in $($k get nodes -l '!node-role.kubernetes.io/control-plane' -o name); do
        $k label --overwrite "$n" apta.io/compute-server="${n#node/}" >/dev/null
    done
    PATH=$B/bin:$PATH secrets
    # every manifest but secret.yaml, whose placeholders secrets() replaced with real tokens
    local f
    for f in "$ROOT"/scheduler-plugin/manifests/apta/*.yaml; do
        [ "$(basename "$f")" = secret.yaml ] && continue
        $k apply -f "$f" >/dev/null
    done
    $k -n kube-system rollout restart deployment apta-scheduler apta-agent apta-controlplane >/dev/null
    $k -n kube-system rollout status --timeout=180s deployment apta-controlplane apta-agent apta-scheduler
    step "cluster $CLUSTER up: KUBECONFIG=$B/kubeconfig"
}

# one line per run in build/kind/timings.jsonl (the measured `make kind` times of README.md and
# build/bench/kind.json): what ran, its seconds, whether it created the cluster
CREATED=false
timing() { printf '{"what": "%s", "seconds": %d, "created_cluster": %s, "at": "%s"}\n' "$1" $(( $(date +%s) - t0 )) $CREATED "$(date -u +%FT%TZ)" >> "$B/timings.jsonl"; }

case "${1:-cluster}" in
    images) "$HERE/docker.sh" up; build_binaries; build_rootfs; build_images; build_node; step done; timing images ;;
    cluster) "$HERE/docker.sh" up; build_binaries; build_rootfs; build_images; build_node; cluster; timing cluster ;;
    delete) "$B/bin/kind" delete cluster --name "$CLUSTER" --kubeconfig "$B/kubeconfig" ;;
    *) echo "usage: $0 [images|cluster|delete]" >&2; exit 2 ;;
esac
