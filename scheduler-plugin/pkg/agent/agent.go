// Package agent mirrors the control plane's schedulable state into Kubernetes as node
// annotations, so that a change (an invalidation clearing, a rejoin) is a Node update event the
// scheduler's queue reacts to (the plugin's QueueingHints). The mirror is a hint only: the plugin
// decides from its own control-plane answer (FRESHNESS.md).
package agent

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/apta/scheduler-plugin/pkg/apta"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// Agent polls the control plane and patches node annotations when they differ.
type Agent struct {
	Kube      kubernetes.Interface
	CP        *controlplane.Client
	NodeLabel string
	Interval  time.Duration
}

// Desired returns the mirrored annotations for a compute server (nil state: unknown server).
func Desired(s *controlplane.ServerState) map[string]string {
	if s == nil {
		return map[string]string{apta.AnnotationNodeSchedulable: "false", apta.AnnotationNodeFenced: "false",
			apta.AnnotationNodePending: "0", apta.AnnotationNodePendingObject: "", apta.AnnotationNodeEpoch: "0"}
	}
	pend := strings.Join(s.PendingObjects, ",")
	if s.PendingObjectsTruncated {
		pend = apta.PendingObjectsOverflow
	}
	return map[string]string{
		apta.AnnotationNodeSchedulable:   strconv.FormatBool(s.Schedulable),
		apta.AnnotationNodeFenced:        strconv.FormatBool(s.Fenced || !s.Live),
		apta.AnnotationNodePending:       strconv.FormatUint(s.Pending, 10),
		apta.AnnotationNodePendingObject: pend,
		apta.AnnotationNodeEpoch:         strconv.FormatUint(s.Epoch, 10),
	}
}

// SyncOnce mirrors one control-plane answer onto every labelled node; it returns the number
// of nodes patched.
func (a *Agent) SyncOnce(ctx context.Context) (int, error) {
	ans, err := a.CP.Status(ctx)
	if err != nil {
		return 0, err
	}
	byName := map[string]*controlplane.ServerState{}
	for i := range ans.Servers {
		byName[ans.Servers[i].Name] = &ans.Servers[i]
	}
	nodes, err := a.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: a.NodeLabel})
	if err != nil {
		return 0, err
	}
	patched := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		want := Desired(byName[n.Labels[a.NodeLabel]])
		if same(n, want) {
			continue
		}
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
		if _, err := a.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
			return patched, err
		}
		patched++
	}
	return patched, nil
}

func same(n *v1.Node, want map[string]string) bool {
	for k, v := range want {
		if got, ok := n.Annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Run mirrors until ctx is done.
func (a *Agent) Run(ctx context.Context) {
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	for {
		if _, err := a.SyncOnce(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("apta agent: sync failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
