package apta

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// counted serves the world's control plane and counts its /v1/schedulable calls.
func counted(t *testing.T) (*int64, *httptest.Server, func(bool)) {
	cp, _ := world(t)
	var n int64
	h := cp.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/schedulable" {
			atomic.AddInt64(&n, 1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return &n, ts, cp.SetDown
}

func TestSnapshotReuse(t *testing.T) {
	calls, ts, down := counted(t)
	pl := newPlugin(t, ts.URL)
	clock := time.Unix(1000, 0)
	pl.snaps.now = func() time.Time { return clock }
	nodes := []fwk.NodeInfo{nodeInfo(node("n1", "s1")), nodeInfo(node("n2", "s2")), nodeInfo(node("n3", "s3"))}
	ctx := context.Background()
	pre := func(name string, ann map[string]string) *fwk.Status {
		_, s := pl.PreFilter(ctx, framework.NewCycleState(), aptaPod(name, ann), nodes)
		return s
	}
	step := func(what string, s *fwk.Status, ok bool, want int64) {
		t.Helper()
		if s.IsSuccess() != ok || atomic.LoadInt64(calls) != want {
			t.Fatalf("%s: status %v, %d calls; want success=%v, %d calls", what, s, atomic.LoadInt64(calls), ok, want)
		}
	}
	y := map[string]string{AnnotationInputs: "y"}
	step("first pod asks", pre("a", y), true, 1)
	step("same inputs within the TTL: reused", pre("b", y), true, 1)
	step("other inputs: asked", pre("c", map[string]string{AnnotationInputs: "z"}), true, 2)
	cur, _ := pl.snaps.get(snapshotKey([]string{"y"}), 0, "")
	seq := cur.Seq
	step("min-seq above the snapshot's: asked", pre("d", map[string]string{AnnotationInputs: "y", AnnotationMinSeq: strconv.FormatUint(seq+1, 10)}), false, 3)
	// min-seq of another control-plane instance: not comparable, refused (and not reused)
	step("min-seq of another instance", pre("d2", map[string]string{AnnotationInputs: "y", AnnotationMinSeq: "1", AnnotationMinSeqInstance: "restarted"}), false, 4)
	clock = clock.Add(pl.args.SnapshotTTL.Duration)
	step("after the TTL: asked", pre("e", y), true, 5)
	// x: s2 and s3 owe acks; with only n2, n3 no node is eligible, so every pod asks anew
	only23 := nodes[1:]
	for i := 0; i < 2; i++ {
		_, s := pl.PreFilter(ctx, framework.NewCycleState(), aptaPod("x"+strconv.Itoa(i), map[string]string{AnnotationInputs: "x"}), only23)
		step("no eligible node in the snapshot: asked", s, true, int64(6+i))
	}
	// a failed call forgets every snapshot: nothing placed on an old answer after an outage
	down(true)
	step("outage: fails closed", pre("f", map[string]string{AnnotationInputs: "z"}), false, 8)
	step("after a failure even a fresh snapshot is not reused", pre("g", y), false, 9)
	down(false)
	step("recovered", pre("h", y), true, 10)
	// TTL 0: one call per pod
	pl.snaps.ttl = 0
	step("ttl 0", pre("i", y), true, 11)
	step("ttl 0 again", pre("j", y), true, 12)
}

// Refresh-ahead: a snapshot past half its TTL still serves, and one background call replaces it,
// so the next pods neither wait nor ask (without it the first snapshot would have expired).
func TestSnapshotRefreshAhead(t *testing.T) {
	calls, ts, _ := counted(t)
	pl := newPlugin(t, ts.URL)
	var clock atomic.Int64
	clock.Store(time.Unix(1000, 0).UnixNano())
	pl.snaps.now = func() time.Time { return time.Unix(0, clock.Load()) }
	ttl := pl.args.SnapshotTTL.Duration
	nodes := []fwk.NodeInfo{nodeInfo(node("n1", "s1")), nodeInfo(node("n2", "s2")), nodeInfo(node("n3", "s3"))}
	pre := func(name string) {
		t.Helper()
		if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), aptaPod(name, map[string]string{AnnotationInputs: "y"}), nodes); !s.IsSuccess() {
			t.Fatal(s)
		}
	}
	settled := func() {
		t.Helper()
		for i := 0; i < 200; i++ {
			pl.snaps.mu.Lock()
			busy := len(pl.snaps.inflight) > 0
			pl.snaps.mu.Unlock()
			if !busy {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("background refresh never finished")
	}
	pre("a")
	if n := atomic.LoadInt64(calls); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
	clock.Add(int64(ttl * 3 / 4))
	pre("b") // served by the first snapshot; starts the refresh
	settled()
	if n := atomic.LoadInt64(calls); n != 2 {
		t.Fatalf("%d calls after the refresh, want 2", n)
	}
	clock.Add(int64(ttl / 4)) // the first snapshot has expired now; the refreshed one is young
	pre("c")
	settled()
	if n := atomic.LoadInt64(calls); n != 2 {
		t.Fatalf("%d calls: the refreshed snapshot was not used", n)
	}
}
