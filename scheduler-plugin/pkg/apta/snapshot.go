package apta

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apta/scheduler-plugin/pkg/controlplane"
)

// snapshots keeps the latest control-plane answer per declared-input set, for at most ttl.
// Reusing one is safe for a pod whose apta.io/min-seq it covers: the answer is a snapshot no
// earlier than every put the pod depends on (TLA-C1), and it is still one snapshot per
// decision (TLA-C2). Staleness within ttl is in the directions the contract allows: acks that
// arrived since (pessimistic), puts the pod does not depend on (not required). FRESHNESS.md.
type snapshots struct {
	mu    sync.Mutex
	ttl   time.Duration
	now   func() time.Time
	byKey map[string]snapshot
}

type snapshot struct {
	ans *controlplane.SchedulableAnswer
	at  time.Time
}

func newSnapshots(ttl time.Duration) *snapshots {
	return &snapshots{ttl: ttl, now: time.Now, byKey: map[string]snapshot{}}
}

// snapshotKey names a declared-input set; nil (undeclared) and empty differ from any set.
func snapshotKey(inputs []string) string {
	if inputs == nil {
		return "*"
	}
	s := append([]string(nil), inputs...)
	sort.Strings(s)
	return "=" + strings.Join(s, ",")
}

// get returns a reusable answer for key, or nil: none, expired, older than minSeq, or of
// another control-plane instance than the pod's min-seq ("" = any).
func (s *snapshots) get(key string, minSeq uint64, instance string) *controlplane.SchedulableAnswer {
	if s.ttl <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	if !ok || s.now().Sub(e.at) >= s.ttl || e.ans.Seq < minSeq || (instance != "" && e.ans.Instance != instance) {
		return nil
	}
	return e.ans
}

// put records a new answer, aged from when it was asked for (the snapshot is no older).
func (s *snapshots) put(key string, a *controlplane.SchedulableAnswer, asked time.Time) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byKey) > 1024 { // bounded: input sets of many different pods
		s.byKey = map[string]snapshot{}
	}
	s.byKey[key] = snapshot{ans: a, at: asked}
}

// drop forgets every answer: after a failed call nothing may be reused (fail closed).
func (s *snapshots) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey = map[string]snapshot{}
}
