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
func (pl *Apta) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !governed(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	req, err := parsePod(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, err.Error())
	}
	// A recent answer for the same inputs serves this pod too if it is fresh enough for it and
	// leaves it an eligible node; an exclusion of every node is only ever judged on a new answer
	// (FRESHNESS.md, "Snapshot reuse").
	key := snapshotKey(req.inputs)
	ans, stale := pl.snaps.get(key, req.minSeq, req.instance)
	if ans != nil && !pl.anyEligible(ans, req, nodes) {
		ans = nil
	} else if stale {
		pl.refresh(key, req.inputs)
	}
	if ans == nil {
		cctx, cancel := context.WithTimeout(ctx, pl.args.Timeout.Duration)
		defer cancel()
		var err error
		asked := pl.snaps.now()
		ans, err = pl.client.Schedulable(cctx, req.inputs)
		if err != nil {
			pl.snaps.drop()
			logger(ctx).V(2).Info("control plane not asked, failing closed", "pod", klog.KObj(pod), "err", err)
			return nil, fwk.AsStatus(fmt.Errorf("apta: failing closed: %w", err))
		}
		if req.instance != "" && ans.Instance != req.instance {
			pl.snaps.drop()
			return nil, fwk.AsStatus(fmt.Errorf("apta: failing closed: answer of control-plane instance %q, but the pod's %s is of instance %q (the control plane restarted: sequence numbers are not comparable)", ans.Instance, AnnotationMinSeq, req.instance))
		}
		if ans.Seq < req.minSeq {
			return nil, fwk.AsStatus(fmt.Errorf("apta: failing closed: control-plane answer at commit %d is older than the pod requires (%s=%d)", ans.Seq, AnnotationMinSeq, req.minSeq))
		}
		pl.snaps.put(key, ans, asked)
	}
	if len(ans.Unknown) > 0 && req.versions == nil { // placed early: inputs not yet committed are expected
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

// refresh asks the control plane in the background for key's next snapshot (refresh-ahead); a
// failure forgets every snapshot, so the next pods ask themselves and fail closed.
func (pl *Apta) refresh(key string, inputs []string) {
	if !pl.snaps.beginRefresh(key) {
		return
	}
	go func() {
		defer pl.snaps.endRefresh(key)
		ctx, cancel := context.WithTimeout(context.Background(), pl.args.Timeout.Duration)
		defer cancel()
		asked := pl.snaps.now()
		ans, err := pl.client.Schedulable(ctx, inputs)
		if err != nil {
			pl.snaps.drop()
			return
		}
		pl.snaps.put(key, ans, asked)
	}()
}

// anyEligible: does the answer leave the pod a node whose compute server passes the rule?
func (pl *Apta) anyEligible(ans *controlplane.SchedulableAnswer, req *podRequest, nodes []fwk.NodeInfo) bool {
	byName := make(map[string]*controlplane.ServerState, len(ans.Servers))
	for i := range ans.Servers {
		byName[ans.Servers[i].Name] = &ans.Servers[i]
	}
	for _, ni := range nodes {
		n := ni.Node()
		if n == nil {
			continue
		}
		if s, ok := byName[n.Labels[pl.args.NodeLabel]]; ok && exclusion(*s, req) == "" {
			return true
		}
	}
	return false
}

// PreFilterExtensions returns nil: other pods do not change the answer.
func (pl *Apta) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
