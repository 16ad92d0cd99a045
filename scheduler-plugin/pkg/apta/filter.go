package apta

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// Filter excludes nodes whose compute server is fenced, not live, unknown, or owes
// invalidation acks: for the declared inputs, or any ack when the pod declares none (TLA-C4).
func (pl *Apta) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	st, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := ni.Node()
	if node == nil {
		return fwk.NewStatus(fwk.Error, "node not found")
	}
	name, ok := node.Labels[pl.args.NodeLabel]
	if !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("apta: node has no %s label (not a compute server)", pl.args.NodeLabel))
	}
	s, ok := st.servers[name]
	if !ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("apta: compute server %q unknown to the control plane", name))
	}
	if why := exclusion(s, st.req); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q %s", name, why))
	}
	return nil
}

// exclusion says why the rule keeps a pod off compute server s ("" if it does not), TLA-C4:
// fenced or not live always; else owed acks for a declared input, or any owed ack when the pod
// declares none. A pod placed early reads only with versions and is not kept off owed acks
// (FRESHNESS.md "Early placement").
func exclusion(s controlplane.ServerState, req *podRequest) string {
	switch {
	case s.Fenced:
		return "is fenced"
	case !s.Live:
		return "is not live"
	case req.versions != nil:
		return ""
	case req.inputs == nil && s.Pending > 0:
		return fmt.Sprintf("has %d pending invalidations (pod declares no inputs)", s.Pending)
	case req.inputs != nil && len(s.PendingFor) > 0:
		objs := make([]string, 0, len(s.PendingFor))
		for o := range s.PendingFor {
			objs = append(objs, o)
		}
		sort.Strings(objs)
		return fmt.Sprintf("has pending invalidations for input(s) %s", strings.Join(objs, ","))
	case req.inputs != nil && !s.SchedulableFor:
		return "is not schedulable for the pod's inputs"
	}
	return ""
}
