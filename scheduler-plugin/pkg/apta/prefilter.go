package apta

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// PreFilter asks the control plane once for the pod (TLA-C2: one answer, one snapshot) and
// fails closed: an error status (the pod is retried with backoff) if the control plane cannot
// be asked, its answer does not parse, or it is older than the pod requires (TLA-C1).
func (pl *Apta) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !governed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	req, err := parsePod(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	cctx, cancel := context.WithTimeout(ctx, pl.args.Timeout.Duration)
	defer cancel()
	ans, err := pl.client.Schedulable(cctx, req.inputs)
	if err != nil {
		logger(ctx).V(2).Info("control plane not asked, failing closed", "pod", klog.KObj(pod), "err", err)
		return nil, fwk.AsStatus(fmt.Errorf("apta: failing closed: %w", err))
	}
	if ans.Seq < req.minSeq {
		return nil, fwk.AsStatus(fmt.Errorf("apta: failing closed: control-plane answer at commit %d is older than the pod requires (%s=%d)", ans.Seq, AnnotationMinSeq, req.minSeq))
	}
	if len(ans.Unknown) > 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("apta: unknown input object(s) %s (never committed to the memory server)", strings.Join(ans.Unknown, ",")))
	}
	st := &cycleState{req: req, seq: ans.Seq, servers: make(map[string]controlplane.ServerState, len(ans.Servers))}
	for _, s := range ans.Servers {
		st.servers[s.Name] = s
	}
	cs.Write(stateKey, st)
	logger(ctx).V(4).Info("control plane answered", "pod", klog.KObj(pod), "seq", ans.Seq, "inputs", req.inputs)
	return nil, nil
}

// PreFilterExtensions returns nil: other pods do not change the answer.
func (pl *Apta) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
