// apta-cni: the pod network of the kind cluster `make kind` builds, in place of kind's kindnetd
// (sigs.k8s.io/kind/images/kindnetd is a module of its own that the Go module proxy does not
// serve). It does what kindnetd does for a single docker network and no more: it writes the CNI
// configuration of its node (Debian's ptp + host-local plugins, the node's spec.podCIDR) and keeps
// a route to every other node's pod CIDR via that node's InternalIP. It never masquerades: pod
// traffic stays on the cluster's bridge (scheduler-plugin/README.md, "Network rule").
//
// Runs as a hostNetwork DaemonSet pod (NET_ADMIN) with /etc/cni/net.d mounted; NODE_NAME from the
// downward API.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const confPath = "/etc/cni/net.d/10-apta.conflist"

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && net.ParseIP(a.Address).To4() != nil {
			return a.Address
		}
	}
	return ""
}

// writeConf writes the node's CNI configuration atomically (the kubelet reads the directory).
func writeConf(podCIDR string) error {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "apta",
		"plugins": []any{
			map[string]any{
				"type":   "ptp",
				"ipMasq": false,
				"mtu":    1500,
				"ipam": map[string]any{
					"type":   "host-local",
					"ranges": []any{[]any{map[string]any{"subnet": podCIDR}}},
					"routes": []any{map[string]any{"dst": "0.0.0.0/0"}},
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]any{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(confPath); err == nil && string(old) == string(b) {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(confPath), ".apta.tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, confPath)
}

func sync(ctx context.Context, cs kubernetes.Interface, self string) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Spec.PodCIDR == "" {
			continue
		}
		if n.Name == self {
			if err := writeConf(n.Spec.PodCIDR); err != nil {
				return fmt.Errorf("writing %s: %w", confPath, err)
			}
			continue
		}
		ip := internalIP(n)
		if ip == "" {
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "route", "replace", n.Spec.PodCIDR, "via", ip).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route replace %s via %s: %v: %s", n.Spec.PodCIDR, ip, err, out)
		}
	}
	return nil
}

func main() {
	self := os.Getenv("NODE_NAME")
	if self == "" {
		fmt.Fprintln(os.Stderr, "apta-cni: NODE_NAME is not set (downward API spec.nodeName)")
		os.Exit(2)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "apta-cni:", err)
		os.Exit(2)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for {
		if err := sync(ctx, cs, self); err != nil {
			fmt.Fprintln(os.Stderr, "apta-cni:", err)
		}
		time.Sleep(5 * time.Second)
	}
}
