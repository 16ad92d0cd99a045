package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/apta/scheduler-plugin/pkg/workflow"
)

// TestBench (APTA_BENCH=1; result JSON to APTA_BENCH_OUT) measures scheduling throughput and
// per-pod latency (pod created -> binding observed by a watch) on 100 nodes and 1,000 pods,
// with the plugin and without, one after the other on the same cluster and control plane.
func TestBench(t *testing.T) {
	if os.Getenv("APTA_BENCH") == "" {
		t.Skip("set APTA_BENCH=1 (make bench-scheduler)")
	}
	const nodes, pods = 100, 1000
	c := startCluster(t, nodes)
	out := map[string]any{"nodes": nodes, "pods": pods}
	for _, plugin := range []bool{true, false} {
		name := map[bool]string{true: "with_plugin", false: "without_plugin"}[plugin]
		t.Run(name, func(t *testing.T) {
			r := c.newRunNS(t, plugin, "bench-"+map[bool]string{true: "on", false: "off"}[plugin], false)
			// 10 of the 100 servers owe acks, so Filter has work to do.
			for i := 1; i <= 10; i++ {
				r.pend(fmt.Sprintf("s%d", i), "bench-obj")
			}
			res := r.measure(t, pods)
			t.Logf("%s: %+v", name, res)
			out[name] = res
		})
	}
	if on, ok := out["with_plugin"].(map[string]float64); ok {
		if off, ok := out["without_plugin"].(map[string]float64); ok {
			out["throughput_cost_pct"] = 100 * (1 - on["pods_per_s"]/off["pods_per_s"])
			out["p99_added_ms"] = on["p99_ms"] - off["p99_ms"]
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	t.Logf("%s", b)
	if p := os.Getenv("APTA_BENCH_OUT"); p != "" {
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *run) measure(t *testing.T, n int) map[string]float64 {
	ctx := context.Background()
	w, err := r.kube.CoreV1().Pods(r.ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	bound := map[string]time.Time{}
	done := make(chan struct{})
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok || p.Spec.NodeName == "" {
				continue
			}
			mu.Lock()
			if _, seen := bound[p.Name]; !seen {
				bound[p.Name] = time.Now()
				if len(bound) == n {
					close(done)
				}
			}
			mu.Unlock()
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("p%d", i)
		p := workflow.FunctionPod(r.ns, name, schedulerName, map[string]string{})
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			if _, err := r.kube.CoreV1().Pods(r.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("only %d of %d pods bound after 5 minutes", len(bound), n)
	}
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	lat := make([]float64, 0, n)
	for name, b := range bound {
		if b.After(last) {
			last = b
		}
		lat = append(lat, float64(b.Sub(created[name]).Microseconds())/1000)
	}
	sort.Float64s(lat)
	q := func(f float64) float64 { return lat[int(f*float64(len(lat)-1))] }
	return map[string]float64{"pods_per_s": float64(n) / last.Sub(start).Seconds(), "p50_ms": q(0.5), "p99_ms": q(0.99), "seconds": last.Sub(start).Seconds()}
}
