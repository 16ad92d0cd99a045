package apta

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister requeues a pod rejected by Filter when a node is added or its mirrored
// control-plane state (annotations written by pkg/agent) or its compute-server label changes.
// PreFilter's error statuses (control plane unreachable, stale answer) are retried with backoff
// by the framework regardless of events.
func (pl *Apta) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAnnotation | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// mirroredEligible reports whether the node's mirrored state would let the pod pass Filter.
// A node without mirrored state counts as eligible (the agent may not run: better a useless
// retry than a pod stuck until the default timeout).
func (pl *Apta) mirroredEligible(pod *v1.Pod, node *v1.Node) bool {
	if node == nil {
		return false
	}
	if _, ok := node.Labels[pl.args.NodeLabel]; !ok {
		return false
	}
	if node.Annotations[AnnotationNodeFenced] == "true" {
		return false
	}
	req, err := parsePod(pod)
	if err != nil {
		return false
	}
	if req.versions != nil {
		return true
	}
	if req.inputs == nil {
		return node.Annotations[AnnotationNodeSchedulable] != "false"
	}
	pend, ok := node.Annotations[AnnotationNodePendingObject]
	if !ok || pend == "" {
		return true
	}
	if pend == PendingObjectsOverflow {
		return true
	}
	pending := map[string]bool{}
	for _, o := range strings.Split(pend, ",") {
		pending[o] = true
	}
	for _, in := range req.inputs {
		if pending[in] {
			return false
		}
	}
	return true
}

func (pl *Apta) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	newNode, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("apta: expected *v1.Node, got %T", newObj)
	}
	if !pl.mirroredEligible(pod, newNode) {
		return fwk.QueueSkip, nil
	}
	if oldObj == nil {
		logger.V(5).Info("node added and eligible", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	oldNode, ok := oldObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("apta: expected *v1.Node, got %T", oldObj)
	}
	if pl.mirroredEligible(pod, oldNode) && sameMirror(oldNode, newNode) && oldNode.Labels[pl.args.NodeLabel] == newNode.Labels[pl.args.NodeLabel] {
		// Nothing relevant changed for this pod.
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("node became eligible", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// sameMirror reports whether the agent's annotations are unchanged (a change of the pending
// count while the node looked eligible means the mirror lagged behind a rejection: retry).
func sameMirror(a, b *v1.Node) bool {
	for _, k := range []string{AnnotationNodeSchedulable, AnnotationNodeFenced, AnnotationNodePendingObject, AnnotationNodePending, AnnotationNodeEpoch} {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}
