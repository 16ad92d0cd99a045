package apta

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
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
	switch {
	case s.Fenced:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q is fenced", name))
	case !s.Live:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q is not live", name))
	case st.req.inputs == nil && s.Pending > 0:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q has %d pending invalidations (pod declares no inputs)", name, s.Pending))
	case st.req.inputs != nil && len(s.PendingFor) > 0:
		objs := make([]string, 0, len(s.PendingFor))
		for o := range s.PendingFor {
			objs = append(objs, o)
		}
		sort.Strings(objs)
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q has pending invalidations for input(s) %s", name, strings.Join(objs, ",")))
	case st.req.inputs != nil && !s.SchedulableFor:
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("apta: compute server %q is not schedulable for the pod's inputs", name))
	}
	return nil
}
