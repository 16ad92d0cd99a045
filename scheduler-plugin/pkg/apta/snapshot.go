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
//
// Refresh-ahead: a snapshot older than ttl/2 still serves, and starts one background call for its
// key, so under a steady stream of pods no pod waits for the control plane.
type snapshots struct {
	mu       sync.Mutex
	ttl      time.Duration
	now      func() time.Time
	byKey    map[string]snapshot
	inflight map[string]bool // keys with a background refresh under way
}

type snapshot struct {
	ans *controlplane.SchedulableAnswer
	at  time.Time
}

func newSnapshots(ttl time.Duration) *snapshots {
	return &snapshots{ttl: ttl, now: time.Now, byKey: map[string]snapshot{}, inflight: map[string]bool{}}
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
// another control-plane instance than the pod's min-seq ("" = any). stale: the answer is past
// ttl/2 and no refresh of key is under way (the caller should start one: beginRefresh).
func (s *snapshots) get(key string, minSeq uint64, instance string) (ans *controlplane.SchedulableAnswer, stale bool) {
	if s.ttl <= 0 {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	age := s.now().Sub(e.at)
	if !ok || age >= s.ttl || e.ans.Seq < minSeq || (instance != "" && e.ans.Instance != instance) {
		return nil, false
	}
	return e.ans, age >= s.ttl/2 && !s.inflight[key]
}

// beginRefresh claims the one background refresh of key; false if one is under way.
func (s *snapshots) beginRefresh(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[key] {
		return false
	}
	s.inflight[key] = true
	return true
}

func (s *snapshots) endRefresh(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, key)
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
	if e, ok := s.byKey[key]; ok && e.at.After(asked) {
		return // a newer answer arrived first (a refresh and a pod's own call raced)
	}
	s.byKey[key] = snapshot{ans: a, at: asked}
}

// drop forgets every answer: after a failed call nothing may be reused (fail closed).
func (s *snapshots) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey = map[string]snapshot{}
}
