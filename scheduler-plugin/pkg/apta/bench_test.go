package apta

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// BenchmarkPerPod is the plugin's own cost for one pod on 100 nodes with a local control plane:
// one PreFilter (an HTTP call), 100 Filters, PreScore, 100 Scores and NormalizeScore.
func BenchmarkPerPod(b *testing.B) {
	cp := controlplane.NewServer(nil)
	var infos []fwk.NodeInfo
	for i := 0; i < 100; i++ {
		s := fmt.Sprintf("s%d", i)
		if _, err := cp.AddServer(s); err != nil {
			b.Fatal(err)
		}
		infos = append(infos, nodeInfo(node(fmt.Sprintf("n%d", i), s)))
	}
	for i := 0; i < 50; i++ {
		cp.Commit(fmt.Sprintf("s%d", i), fmt.Sprintf("o%d", i))
		cp.Cache(fmt.Sprintf("s%d", (i+1)%100), fmt.Sprintf("o%d", i))
		if i%5 == 0 {
			cp.Commit(fmt.Sprintf("s%d", i), fmt.Sprintf("o%d", i))
		}
	}
	ts := httptest.NewServer(cp.Handler())
	defer ts.Close()
	p, err := New(context.Background(), &config.AptaArgs{Endpoint: ts.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*Apta)
	for _, c := range []struct {
		name string
		ann  map[string]string
	}{
		{"undeclared", map[string]string{AnnotationPredecessorNodes: "n1,n2"}},
		{"declared-2-inputs", map[string]string{AnnotationInputs: "o1,o2"}},
	} {
		pod := aptaPod("f", c.ann)
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				cs := framework.NewCycleState()
				if _, s := pl.PreFilter(ctx, cs, pod, nil); !s.IsSuccess() {
					b.Fatal(s)
				}
				var feasible []fwk.NodeInfo
				for _, ni := range infos {
					if pl.Filter(ctx, cs, pod, ni).IsSuccess() {
						feasible = append(feasible, ni)
					}
				}
				if s := pl.PreScore(ctx, cs, pod, feasible); !s.IsSuccess() && !s.IsSkip() {
					b.Fatal(s)
				}
				scores := make(fwk.NodeScoreList, 0, len(feasible))
				for _, ni := range feasible {
					sc, _ := pl.Score(ctx, cs, pod, ni)
					scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: sc})
				}
				pl.NormalizeScore(ctx, cs, pod, scores)
			}
		})
	}
}
