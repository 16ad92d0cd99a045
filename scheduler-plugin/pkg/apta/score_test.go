package apta

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestScore(t *testing.T) {
	_, ts := world(t)
	nodes := []*v1.Node{node("n1", "s1"), node("n2", "s2"), node("n3", "s3")}
	tests := []struct {
		name        string
		pod         *v1.Pod
		want        map[string]int64 // normalized
		wantSkipped bool
	}{
		// s1 caches x and y, s2 caches y (it wrote it), s3 caches z.
		{name: "inputs cached", pod: aptaPod("f", map[string]string{AnnotationInputs: "x,y"}), want: map[string]int64{"n1": 100, "n2": 50, "n3": 0}},
		{name: "single input", pod: aptaPod("f", map[string]string{AnnotationInputs: "z"}), want: map[string]int64{"n1": 0, "n2": 0, "n3": 100}},
		{name: "undeclared: most predecessors", pod: aptaPod("f", map[string]string{AnnotationPredecessorNodes: "n2,n3,n3"}), want: map[string]int64{"n1": 0, "n2": 50, "n3": 100}},
		{name: "cache outweighs predecessors", pod: aptaPod("f", map[string]string{AnnotationInputs: "z", AnnotationPredecessorNodes: "n1,n1"}), want: map[string]int64{"n1": 20, "n2": 0, "n3": 100}},
		{name: "no locality at all: skipped", pod: aptaPod("f", nil), wantSkipped: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, ts.URL)
			cs := framework.NewCycleState()
			ctx := context.Background()
			if _, s := pl.PreFilter(ctx, cs, tt.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			var infos []fwk.NodeInfo
			for _, n := range nodes {
				infos = append(infos, nodeInfo(n))
			}
			s := pl.PreScore(ctx, cs, tt.pod, infos)
			if tt.wantSkipped {
				if !s.IsSkip() {
					t.Fatalf("PreScore: %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var list fwk.NodeScoreList
			for _, ni := range infos {
				sc, s := pl.Score(ctx, cs, tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score: %v", s)
				}
				list = append(list, fwk.NodeScore{Name: ni.Node().Name, Score: sc})
			}
			if s := pl.ScoreExtensions().NormalizeScore(ctx, cs, tt.pod, list); !s.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", s)
			}
			for _, ns := range list {
				if ns.Score != tt.want[ns.Name] {
					t.Errorf("node %s: score %d, want %d", ns.Name, ns.Score, tt.want[ns.Name])
				}
			}
		})
	}
}

func TestPreScoreSkipsUngoverned(t *testing.T) {
	_, ts := world(t)
	pl := newPlugin(t, ts.URL)
	pod := aptaPod("f", nil)
	delete(pod.Labels, LabelFunction)
	if s := pl.PreScore(context.Background(), framework.NewCycleState(), pod, nil); !s.IsSkip() {
		t.Fatalf("got %v, want Skip", s)
	}
}
