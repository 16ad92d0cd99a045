package apta

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreScore computes the locality of every candidate node: cacheWeight x (declared inputs its
// server caches) + predecessorWeight x (the pod's predecessors that ran on it). The sharer
// lists may be stale (TLA contract: "the locality score may be arbitrarily stale").
func (pl *Apta) PreScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	if !governed(pod) {
		return fwk.NewStatus(fwk.Skip)
	}
	st, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	preds := map[string]int64{}
	for _, n := range st.req.predNodes {
		preds[n]++
	}
	st.scores = make(map[string]int64, len(nodes))
	any := false
	for _, ni := range nodes {
		node := ni.Node()
		if node == nil {
			continue
		}
		var sc int64
		if s, ok := st.servers[node.Labels[pl.args.NodeLabel]]; ok {
			sc += *pl.args.CacheWeight * int64(len(s.Caches))
		}
		sc += *pl.args.PredecessorWeight * preds[node.Name]
		st.scores[node.Name] = sc
		any = any || sc > 0
	}
	if !any {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score returns the node's raw locality score from PreScore.
func (pl *Apta) Score(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	st, err := getState(cs)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	return st.scores[ni.Node().Name], nil
}

// ScoreExtensions returns the plugin itself (NormalizeScore).
func (pl *Apta) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore scales the raw scores to [0, MaxNodeScore].
func (pl *Apta) NormalizeScore(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	var max int64
	for _, s := range scores {
		if s.Score > max {
			max = s.Score
		}
	}
	if max == 0 {
		return nil
	}
	for i := range scores {
		scores[i].Score = scores[i].Score * fwk.MaxNodeScore / max
	}
	return nil
}
