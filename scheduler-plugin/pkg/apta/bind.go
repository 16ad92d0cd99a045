package apta

import (
	"context"
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Bind binds a governed pod as DefaultBinder does, and carries the placement's epoch to the
// function's start (TLA-C3, second half): the Binding's annotations name the epoch the answer
// gave the chosen compute server, and the apiserver copies them onto the pod in the same write
// (no extra round trip). Whoever starts the function (the e2e's kubelet, later the memory-server
// daemon) passes it on, and the control plane refuses a start in another epoch: a server fenced
// and rejoined between the decision and the start does not run a function placed on its old self.
// Pods the plugin does not govern are left to DefaultBinder (Skip).
func (pl *Apta) Bind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if !governed(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	st, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	// the informer's cache, not the cycle's snapshot (not for the binding cycle), no API call
	node, err := pl.handle.SharedInformerFactory().Core().V1().Nodes().Lister().Get(nodeName)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("apta: binding to %s: %w", nodeName, err))
	}
	s, ok := st.servers[node.Labels[pl.args.NodeLabel]]
	if !ok { // Filter let the node through, so this cannot happen; never bind blind
		return fwk.AsStatus(fmt.Errorf("apta: node %s has no compute server in the answer", nodeName))
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			Annotations: map[string]string{
				AnnotationPlacedEpoch: strconv.FormatUint(s.Epoch, 10),
				AnnotationPlacedSeq:   strconv.FormatUint(st.seq, 10),
			}},
		Target: v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := pl.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
