package apta

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/apta/scheduler-plugin/apis/config"
	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// BenchmarkPerPod is the plugin's own cost for one pod on 100 nodes with a local control plane:
// one PreFilter (an HTTP call, or a reused snapshot), 100 Filters, PreScore, 100 Scores and
// NormalizeScore; with snapshot reuse off (every pod asks) and on (the default 50 ms).
func BenchmarkPerPod(b *testing.B) {
	pl, infos, stop := perPodWorld(b)
	defer stop()
	for _, c := range []struct {
		name string
		ann  map[string]string
		ttl  time.Duration
	}{
		{"undeclared/ask-every-pod", map[string]string{AnnotationPredecessorNodes: "n1,n2"}, 0},
		{"declared-2-inputs/ask-every-pod", map[string]string{AnnotationInputs: "o1,o2"}, 0},
		{"undeclared/snapshot-reuse", map[string]string{AnnotationPredecessorNodes: "n1,n2"}, config.DefaultSnapshotTTL},
		{"declared-2-inputs/snapshot-reuse", map[string]string{AnnotationInputs: "o1,o2"}, config.DefaultSnapshotTTL},
	} {
		pod := aptaPod("f", c.ann)
		b.Run(c.name, func(b *testing.B) {
			pl.snaps = newSnapshots(c.ttl)
			for i := 0; i < b.N; i++ {
				onePod(b, pl, pod, infos)
			}
		})
	}
}

// perPodWorld: 100 servers on 100 nodes, 50 objects, some recommitted (acks owed), served over HTTP.
func perPodWorld(tb testing.TB) (*Apta, []fwk.NodeInfo, func()) {
	cp := controlplane.NewServer(nil)
	var infos []fwk.NodeInfo
	for i := 0; i < 100; i++ {
		s := fmt.Sprintf("s%d", i)
		if _, err := cp.AddServer(s); err != nil {
			tb.Fatal(err)
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
	p, err := New(context.Background(), &config.AptaArgs{Endpoint: ts.URL}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p.(*Apta), infos, ts.Close
}

// onePod runs the plugin's extension points for one pod, as the framework would.
func onePod(tb testing.TB, pl *Apta, pod *v1.Pod, infos []fwk.NodeInfo) {
	ctx := context.Background()
	cs := framework.NewCycleState()
	if _, s := pl.PreFilter(ctx, cs, pod, infos); !s.IsSuccess() {
		tb.Fatal(s)
	}
	var feasible []fwk.NodeInfo
	for _, ni := range infos {
		if pl.Filter(ctx, cs, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if s := pl.PreScore(ctx, cs, pod, feasible); !s.IsSuccess() && !s.IsSkip() {
		tb.Fatal(s)
	}
	scores := make(fwk.NodeScoreList, 0, len(feasible))
	for _, ni := range feasible {
		sc, _ := pl.Score(ctx, cs, pod, ni)
		scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: sc})
	}
	pl.NormalizeScore(ctx, cs, pod, scores)
}

// TestPluginLatency (APTA_BENCH=1; JSON to APTA_BENCH_PLUGIN_OUT) is the distribution behind
// BenchmarkPerPod: the plugin's own time per pod (PreFilter to NormalizeScore, 100 nodes, local
// control plane), p50 / p99 / max over 2,000 pods, with snapshot reuse off and on.
func TestPluginLatency(t *testing.T) {
	if os.Getenv("APTA_BENCH") == "" {
		t.Skip("set APTA_BENCH=1 (make bench-scheduler)")
	}
	out := map[string]any{"nodes": 100, "pods": 2000}
	for _, ttl := range []time.Duration{0, config.DefaultSnapshotTTL} {
		name := map[bool]string{true: "ask_every_pod", false: "snapshot_reuse"}[ttl == 0]
		pl, infos, stop := perPodWorld(t)
		pl.snaps = newSnapshots(ttl)
		pod := aptaPod("f", map[string]string{AnnotationInputs: "o1,o2"})
		lat := make([]float64, 0, 2000)
		for i := 0; i < 2000; i++ {
			t0 := time.Now()
			onePod(t, pl, pod, infos)
			lat = append(lat, float64(time.Since(t0).Nanoseconds())/1000)
		}
		stop()
		sort.Float64s(lat)
		q := func(f float64) float64 { return lat[int(f*float64(len(lat)-1))] }
		out[name] = map[string]float64{"p50_us": q(0.5), "p99_us": q(0.99), "max_us": lat[len(lat)-1]}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	t.Logf("%s", b)
	if p := os.Getenv("APTA_BENCH_PLUGIN_OUT"); p != "" {
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
