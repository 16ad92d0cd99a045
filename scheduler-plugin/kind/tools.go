//go:build tools

// The Kubernetes node and control-plane binaries of the kind node image (kind/build.sh), built
// from the same k8s.io/kubernetes version as the plugin, and the etcd server kubeadm asks for
// (its DefaultEtcdVersion 3.7.0): importing their main packages here pins them in go.mod.
package kind

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
