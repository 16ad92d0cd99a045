package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// per-pod latency on 100 nodes, with the plugin and without, side by side on one cluster.
//
// Throughput: 1,000 pods created at once (16 creators), pods/s until the last binding is seen by a
// watch. Rounds alternate the order (on/off, off/on, on/off) so neither configuration always runs
// on a warmer process; the median of the rounds is reported. Latency: after each burst, pods
// created one at a time (the next after the previous bound), so the figure is one pod's
// create -> schedule -> bind path without queueing behind a burst; p50 and p99 over the rounds.
func TestBench(t *testing.T) {
	if os.Getenv("APTA_BENCH") == "" {
		t.Skip("set APTA_BENCH=1 (make bench-scheduler)")
	}
	const nodes, pods, seqPods, rounds = 100, 1000, 300, 3
	c := startCluster(t, nodes)
	out := map[string]any{"nodes": nodes, "pods": pods, "sequential_pods": seqPods, "rounds": rounds}
	name := map[bool]string{true: "with_plugin", false: "without_plugin"}
	thr, lat := map[bool][]float64{}, map[bool][]float64{}
	for round := 0; round < rounds; round++ {
		for _, plugin := range []bool{round%2 == 0, round%2 != 0} {
			plugin := plugin
			t.Run(fmt.Sprintf("%s-%d", name[plugin], round), func(t *testing.T) {
				r := c.newRunNS(t, plugin, fmt.Sprintf("bench-%s-%d", map[bool]string{true: "on", false: "off"}[plugin], round), false)
				// 10 of the 100 servers owe acks, so Filter has work to do.
				for i := 1; i <= 10; i++ {
					r.pend(fmt.Sprintf("s%d", i), "bench-obj")
				}
				res := r.measure(t, pods)
				t.Logf("%s round %d: %+v", name[plugin], round, res)
				thr[plugin] = append(thr[plugin], res["pods_per_s"])
				for i := 0; i < seqPods/rounds; i++ {
					lat[plugin] = append(lat[plugin], r.bindOne(t, fmt.Sprintf("q%d", i)))
				}
			})
		}
	}
	for _, plugin := range []bool{true, false} {
		sort.Float64s(thr[plugin])
		sort.Float64s(lat[plugin])
		q := func(f float64) float64 {
			l := lat[plugin]
			if len(l) == 0 {
				return 0
			}
			return l[int(f*float64(len(l)-1))]
		}
		out[name[plugin]] = map[string]any{"pods_per_s_median": thr[plugin][len(thr[plugin])/2], "pods_per_s_rounds": thr[plugin],
			"latency_p50_ms": q(0.5), "latency_p99_ms": q(0.99)}
	}
	on, off := out["with_plugin"].(map[string]any), out["without_plugin"].(map[string]any)
	out["throughput_cost_pct"] = 100 * (1 - on["pods_per_s_median"].(float64)/off["pods_per_s_median"].(float64))
	out["p99_added_ms"] = on["latency_p99_ms"].(float64) - off["latency_p99_ms"].(float64)
	out["p50_added_ms"] = on["latency_p50_ms"].(float64) - off["latency_p50_ms"].(float64)
	b, _ := json.MarshalIndent(out, "", "  ")
	t.Logf("%s", b)
	if p := os.Getenv("APTA_BENCH_OUT"); p != "" {
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bindOne creates one function pod and returns the milliseconds until a watch sees it bound.
func (r *run) bindOne(t *testing.T, podName string) float64 {
	ctx := context.Background()
	w, err := r.kube.CoreV1().Pods(r.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + podName})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if _, err := r.kube.CoreV1().Pods(r.ns).Create(ctx, workflow.FunctionPod(r.ns, podName, schedulerName, map[string]string{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*v1.Pod); ok && p.Spec.NodeName != "" {
				return float64(time.Since(start).Microseconds()) / 1000
			}
		case <-timeout:
			t.Fatalf("pod %s/%s not bound within 30 s", r.ns, podName)
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

// TestBenchEarly (APTA_BENCH=1; JSON to APTA_BENCH_EARLY_OUT) measures what early placement
// saves end to end with the plugin: the four patterns' workflows, each function
// running 100 ms in the emulated kubelet, placed after their predecessors completed and placed
// early (versioned gets held by the control plane), alternating which goes first; per pattern the
// median makespan of each over the rounds and their ratio.
func TestBenchEarly(t *testing.T) {
	if os.Getenv("APTA_BENCH") == "" {
		t.Skip("set APTA_BENCH=1 (make bench-scheduler)")
	}
	const rounds, runMS = 5, 100
	c := startCluster(t, 4)
	r := c.newRunNS(t, true, "bench-early", true)
	patterns := []string{"pipeline", "broadcast", "scatter-gather", "map-reduce"}
	ms := map[string]map[bool][]float64{}
	for round := 0; round < rounds; round++ {
		for i, n := range patterns {
			w, err := workflow.LoadPattern(filepath.Join(patternsDir, n+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if ms[n] == nil {
				ms[n] = map[bool][]float64{}
			}
			for _, early := range []bool{(round+i)%2 == 0, (round+i)%2 != 0} {
				runner := &workflow.Runner{Kube: r.kube, CP: r.cpc, Namespace: r.ns, SchedulerName: schedulerName, Declare: true,
					Early: early, RunTime: runMS * time.Millisecond, Timeout: 60 * time.Second}
				t0 := time.Now()
				if _, err := runner.Run(context.Background(), w, fmt.Sprintf("b%d%d%v-", round, i, early)); err != nil {
					t.Fatalf("%s early=%v: %v", n, early, err)
				}
				ms[n][early] = append(ms[n][early], float64(time.Since(t0).Microseconds())/1e3)
			}
		}
	}
	for _, e := range r.cp.Log() {
		if e.Op == "invoke" && e.Violation != "" {
			t.Errorf("violation: %s on %s: %s", e.Pod, e.Server, e.Violation)
		}
	}
	med := func(x []float64) float64 { y := append([]float64(nil), x...); sort.Float64s(y); return y[len(y)/2] }
	out := map[string]any{"rounds": rounds, "function_run_ms": runMS, "nodes": 4}
	per := map[string]any{}
	sumA, sumE := 0.0, 0.0
	for _, n := range patterns {
		a, e := med(ms[n][false]), med(ms[n][true])
		sumA, sumE = sumA+a, sumE+e
		per[n] = map[string]any{"after_completion_ms": a, "early_ms": e, "ratio": a / e}
	}
	out["patterns"] = per
	out["sum_after_completion_ms"], out["sum_early_ms"], out["ratio"] = sumA, sumE, sumA/sumE
	b, _ := json.MarshalIndent(out, "", "  ")
	t.Logf("%s", b)
	if p := os.Getenv("APTA_BENCH_EARLY_OUT"); p != "" {
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
