package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/apta/scheduler-plugin/pkg/schema"
)

func TestServerSemantics(t *testing.T) {
	s := NewServer(nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	var last uint64
	step := func(name string, a ChangeAnswer, err error) ChangeAnswer {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Seq <= last {
			t.Fatalf("%s: seq %d not above %d", name, a.Seq, last)
		}
		last = a.Seq
		return a
	}
	for _, n := range []string{"a", "b", "c"} {
		a, err := c.AddServer(ctx, n)
		step("add "+n, a, err)
	}
	a, err := c.Commit(ctx, "a", "x")
	step("commit", a, err)
	a, err = c.Cache(ctx, "b", "x")
	step("cache b", a, err)
	a, err = c.Cache(ctx, "c", "x")
	step("cache c", a, err)
	a, err = c.Commit(ctx, "a", "x")
	step("recommit", a, err)

	tests := []struct {
		name   string
		objs   []string
		server string
		want   ServerState
	}{
		{name: "writer", objs: []string{"x"}, server: "a", want: ServerState{Name: "a", Live: true, Epoch: 1, Schedulable: true, SchedulableFor: true, Caches: []string{"x"}}},
		{name: "old sharer owes an ack", objs: []string{"x"}, server: "b", want: ServerState{Name: "b", Live: true, Epoch: 1, Pending: 1, PendingFor: map[string]uint64{"x": 1}, PendingObjects: []string{"x"}}},
		{name: "overall", server: "c", want: ServerState{Name: "c", Live: true, Epoch: 1, Pending: 1, PendingObjects: []string{"x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ans, err := c.Schedulable(ctx, tt.objs)
			if err != nil {
				t.Fatal(err)
			}
			if ans.Seq != last {
				t.Fatalf("answer seq %d, want %d", ans.Seq, last)
			}
			for _, s := range ans.Servers {
				if s.Name == tt.server {
					if got, want := strings.TrimSpace(toJSON(s)), strings.TrimSpace(toJSON(tt.want)); got != want {
						t.Fatalf("got %s\nwant %s", got, want)
					}
					return
				}
			}
			t.Fatalf("server %s missing", tt.server)
		})
	}

	// An ack from another epoch is ignored; a correct ack clears.
	a, err = c.Ack(ctx, "b", "x", 7)
	step("old-epoch ack", a, err)
	if o, _ := c.Object(ctx, "x"); o.Pending["b"] != 1 {
		t.Fatalf("old-epoch ack counted: %+v", o)
	}
	a, err = c.Ack(ctx, "b", "x", 1)
	step("ack", a, err)
	// Fence retires c's acks and removes it from sharers; rejoin gives a new epoch.
	a, err = c.Fence(ctx, "c")
	step("fence", a, err)
	if o, _ := c.Object(ctx, "x"); len(o.Pending) != 0 || len(o.Sharers) != 1 {
		t.Fatalf("after fence: %+v", o)
	}
	a, err = c.Invoke(ctx, InvocationRequest{Pod: "p", Server: "c", Inputs: []string{"x"}})
	if step("invoke fenced", a, err).Violation != "fenced" {
		t.Fatalf("invoke on fenced server not a violation: %+v", a)
	}
	a, err = c.Rejoin(ctx, "c")
	if step("rejoin", a, err).Epoch != 2 {
		t.Fatalf("rejoin epoch %d, want 2", a.Epoch)
	}
	a, err = c.Invoke(ctx, InvocationRequest{Pod: "p", Server: "c", Epoch: epochPtr(2)})
	if step("invoke", a, err).Violation != "" {
		t.Fatalf("unexpected violation %q", a.Violation)
	}
	// epoch 0 is a real epoch, not "unset": a start placed before two rejoins is refused
	a, err = c.Invoke(ctx, InvocationRequest{Pod: "p", Server: "c", Epoch: epochPtr(0)})
	if v := step("invoke in an old epoch", a, err).Violation; v != "placed in epoch 0, server is in 2" {
		t.Fatalf("start in an old epoch: violation %q", v)
	}
	log, err := c.Log(ctx)
	if err != nil || uint64(len(log)) != last || log[len(log)-1].Seq != last {
		t.Fatalf("log has %d entries (err %v), want %d", len(log), err, last)
	}
}

func TestServerRejectsBadInput(t *testing.T) {
	s := NewServer(nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	if _, err := c.AddServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown server", func() error { _, err := c.Fence(ctx, "zz"); return err }, "unknown server"},
		{"bad object name", func() error { _, err := c.Commit(ctx, "a", "x/y"); return err }, "invalid object name"},
		{"unknown object", func() error { _, err := c.Object(ctx, "nope"); return err }, "unknown object"},
		{"malformed query", func() error { _, err := c.Schedulable(ctx, []string{"a b"}); return err }, "malformed object name"},
		{"duplicate server", func() error { _, err := c.AddServer(ctx, "a"); return err }, "already exists"},
		{"rejoin unfenced", func() error { _, err := c.Rejoin(ctx, "a"); return err }, "not fenced"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRegisterObject: POST /v1/objects makes an object known (GET /v1/objects, not "unknown" in
// /v1/schedulable) with no sharers at the base its allocator chose, removes it (freeing the
// storage), refuses to forget copies or acks owed, names a bad field.
func TestRegisterObject(t *testing.T) {
	s := NewServer(nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	a, err := c.RegisterObject(ctx, 17, 8, true)
	if err != nil || a.Seq != 1 || a.Base != DefaultArena.Base || a.Object != "17" {
		t.Fatalf("register: %+v %v", a, err)
	}
	if o, err := c.Object(ctx, "17"); err != nil || o.Version != 0 || len(o.Sharers) != 0 {
		t.Fatalf("registered object: %+v %v", o, err)
	}
	if sa, err := c.Schedulable(ctx, []string{"17", "18"}); err != nil || len(sa.Unknown) != 1 || sa.Unknown[0] != "18" {
		t.Fatalf("schedulable: %+v %v", sa, err)
	}
	if a, err := c.RegisterObject(ctx, 17, 0, false); err != nil || a.Base != DefaultArena.Base {
		t.Fatalf("remove: %+v %v", a, err)
	}
	if _, err := c.Object(ctx, "17"); err == nil || !strings.Contains(err.Error(), "unknown object") {
		t.Fatalf("removed object still known: %v", err)
	}
	// copies and acks owed: not forgotten
	for _, step := range []func() error{
		func() error { _, err := c.AddServer(ctx, "a"); return err },
		func() error { _, err := c.AddServer(ctx, "b"); return err },
		func() error { _, err := c.RegisterObject(ctx, 5, 1, true); return err },
		func() error { _, err := c.Cache(ctx, "b", "5"); return err },
		func() error { _, err := c.Commit(ctx, "a", "5"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.RegisterObject(ctx, 5, 0, false); err == nil || !strings.Contains(err.Error(), "owes 1 acks") {
		t.Fatalf("forgot an object with acks owed: %v", err)
	}
	for body, want := range map[string]string{
		`{"size": 1}`:                       "field obj: required",
		`{"obj": 1}`:                        "field size: required",
		`{"obj": 1, "size": 70000}`:         "field size",
		`{"obj": 1, "size": 1, "valid": 2}`: "field valid",
		`{"obj": 1, "size": 1, "extra": 1}`: "unknown field",
		`{"obj": 1, "base": 0, "size": 1}`:  "field base",
		`{"obj": -1, "size": 1}`:            "bad request body",
	} {
		resp, err := ts.Client().Post(ts.URL+"/v1/objects", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %s, want 400 naming %q", body, resp.StatusCode, b, want)
		}
	}
}

// TestRegistrationRefusals: each bad registration or removal gets the memory server's answer
// (HTTP status, field, MapUpdCode; qemu-cxl/daemon and rtl/MEMSERVER.md alike) and changes
// nothing; exhaustion exactly when the arena is full; a removal's storage comes back.
func TestRegistrationRefusals(t *testing.T) {
	s := NewServer(nil)
	s.SetArena(ArenaConfig{LinesPerObject: 8, MapEntries: 64, Base: 4096, End: 4096 + 4*512 + 64})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	if _, err := c.AddServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	post := func(body string) (int, ErrorAnswer, RegisterAnswer) {
		resp, err := ts.Client().Post(ts.URL+"/v1/objects", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var e ErrorAnswer
		var a RegisterAnswer
		if resp.StatusCode == 200 {
			if a, err = DecodeRegisterAnswer(b, strings.Split(strings.Split(body, ":")[1], ",")[0][1:]); err != nil {
				t.Fatalf("%s: %s: %v", body, b, err)
			}
		} else if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, e, a
	}
	var bases []uint64
	for k := 0; k < 4; k++ {
		code, e, a := post(fmt.Sprintf(`{"obj": %d, "size": 8}`, 10+k))
		if code != 200 {
			t.Fatalf("registration %d: %d %+v", k, code, e)
		}
		bases = append(bases, a.Base)
	}
	if bases[0] != 4096 || bases[3] != 4096+3*512 {
		t.Fatalf("bases %v", bases)
	}
	seq := s.Seq()
	for _, tt := range []struct {
		body, field string
		code        schema.MapUpdCode
		status      int
	}{
		{`{"obj": 20, "size": 0}`, "size", schema.MapUpdCodeBadSize, 400},
		{`{"obj": 20, "size": 9}`, "size", schema.MapUpdCodeBadSize, 400},
		{`{"obj": 10, "size": 1}`, "obj", schema.MapUpdCodeExists, 409},
		{`{"obj": 74, "size": 1}`, "obj", schema.MapUpdCodeCollision, 409},
		{`{"obj": 20, "size": 2}`, "size", schema.MapUpdCodeNoSpace, 507},
		{`{"obj": 20, "valid": 0}`, "obj", schema.MapUpdCodeUnknownObj, 404},
	} {
		code, e, _ := post(tt.body)
		if code != tt.status || e.Field != tt.field || e.Code != tt.code.String() {
			t.Errorf("%s: %d %+v, want %d %s %s", tt.body, code, e, tt.status, tt.field, tt.code)
		}
	}
	if s.Seq() != seq {
		t.Fatalf("a refusal changed the state: seq %d -> %d", seq, s.Seq())
	}
	if code, _, a := post(`{"obj": 21, "size": 1}`); code != 200 || a.Base != 4096+4*512 {
		t.Fatalf("the last 64 bytes: %d %+v", code, a)
	}
	if _, err := c.Cache(ctx, "a", "11"); err != nil {
		t.Fatal(err)
	}
	if code, e, _ := post(`{"obj": 11, "valid": 0}`); code != 409 || e.Code != schema.MapUpdCodeBusy.String() {
		t.Fatalf("removal with a copy outstanding: %d %+v", code, e)
	}
	if _, err := c.Fence(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	seq = s.Seq()
	if code, _, a := post(`{"obj": 11, "valid": 0}`); code != 200 || a.Base != bases[1] || s.Seq() != seq+1 {
		t.Fatalf("removal after the fence: %d %+v", code, a)
	}
	if code, _, a := post(`{"obj": 30, "size": 5}`); code != 200 || a.Base != bases[1] {
		t.Fatalf("the freed extent is not reused: %d %+v", code, a)
	}
}

// TestInvokeJudgesOnlyDependencies: an ack owed for a commit after s(f) is not a dependency of f.
func TestInvokeJudgesOnlyDependencies(t *testing.T) {
	s := NewServer(nil)
	for _, n := range []string{"a", "b"} {
		if _, err := s.AddServer(n); err != nil {
			t.Fatal(err)
		}
	}
	s.Commit("a", "x")
	s.Cache("b", "x")
	early, _ := s.Commit("a", "x") // b owes an ack for x from commit early.Seq
	s.Commit("a", "y")
	s.Cache("b", "y")
	late, _ := s.Commit("a", "y") // b owes an ack for y from commit late.Seq
	tests := []struct {
		name string
		req  InvocationRequest
		want string
	}{
		{"declared x, depends on the early commit", InvocationRequest{Server: "b", Inputs: []string{"x"}, MinSeq: early.Seq}, "pending for input x"},
		{"declared y, commit after s(f)", InvocationRequest{Server: "b", Inputs: []string{"y"}, MinSeq: early.Seq}, ""},
		{"declared y, depends on it", InvocationRequest{Server: "b", Inputs: []string{"y"}, MinSeq: late.Seq}, "pending for input y"},
		{"undeclared, no min-seq: every ack", InvocationRequest{Server: "b"}, "pending for x (undeclared inputs)"},
		{"undeclared, s(f) before both commits", InvocationRequest{Server: "b", MinSeq: early.Seq - 1}, ""},
		{"writer owes nothing", InvocationRequest{Server: "a"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := s.Invoke(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if a.Violation != tt.want {
				t.Fatalf("violation %q, want %q", a.Violation, tt.want)
			}
		})
	}
}

func epochPtr(e uint64) *uint64 { return &e }

// Rejoins are rate-limited per server: a burst of DefaultRejoinBurst, then
// DefaultRejoinRate per second; over it the HTTP answer is 429 and nothing changes. Counts, not
// times: the 17th rejoin follows the 16th at once, well inside one refill.
func TestRejoinsAreRateLimited(t *testing.T) {
	s := NewServer(nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := c.AddServer(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < int(DefaultRejoinBurst); i++ {
		if _, err := c.Fence(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Rejoin(ctx, "a"); err != nil {
			t.Fatalf("rejoin %d of the burst: %v", i+1, err)
		}
	}
	if _, err := c.Fence(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Status(ctx)
	_, err := c.Rejoin(ctx, "a")
	if err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("rejoin over the rate: want 429 naming the rate limit, got %v", err)
	}
	after, _ := c.Status(ctx)
	if before.Seq != after.Seq {
		t.Fatalf("a refused rejoin changed the state: seq %d -> %d", before.Seq, after.Seq)
	}
	// another server has its own bucket; with no limit the same server rejoins again at once
	if _, err := c.Fence(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rejoin(ctx, "b"); err != nil {
		t.Fatalf("b's first rejoin: %v", err)
	}
	s.SetRejoinLimit(0, DefaultRejoinBurst)
	if _, err := c.Rejoin(ctx, "a"); err != nil {
		t.Fatalf("rejoin with no limit: %v", err)
	}
}

// The conforming control plane allocates object storage as the memory server does (alloc.go,
// schema/core.json MapUpdCode): no two live objects overlap, and each bad registration or removal
// gets its defined refusal and changes nothing.
func TestObjectAllocation(t *testing.T) {
	s := NewServer(nil)
	s.SetArena(ArenaConfig{LinesPerObject: 8, MapEntries: 16, Base: 4096, End: 4096 + 64*16})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, time.Second)
	ctx := context.Background()
	if _, err := c.AddServer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	a1, err := c.RegisterObject(ctx, 1, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := c.RegisterObject(ctx, 2, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	if a1.Base < 4096 || a2.Base < 4096 || (a1.Base < a2.Base+8*64 && a2.Base < a1.Base+8*64) {
		t.Fatalf("extents overlap or lie outside the arena: %d, %d", a1.Base, a2.Base)
	}
	before, _ := c.Status(ctx)
	for _, tc := range []struct {
		name      string
		obj, size uint64
		valid     bool
		code      schema.MapUpdCode
	}{
		{"size 0", 3, 0, true, schema.MapUpdCodeBadSize},
		{"too long", 3, 9, true, schema.MapUpdCodeBadSize},
		{"twice", 1, 8, true, schema.MapUpdCodeExists},
		{"another's map slot", 17, 1, true, schema.MapUpdCodeCollision},
		{"arena full", 3, 8, true, schema.MapUpdCodeNoSpace},
		{"remove unknown", 5, 0, false, schema.MapUpdCodeUnknownObj},
	} {
		_, err := c.RegisterObject(ctx, tc.obj, tc.size, tc.valid)
		want := fmt.Sprintf(": %d ", refusalStatus[tc.code]) // the client names the HTTP status
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want refusal %s (HTTP%s), got %v", tc.name, tc.code, want, err)
		}
	}
	if _, err := c.Cache(ctx, "a", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterObject(ctx, 1, 0, false); err == nil || !strings.Contains(err.Error(), ": 409 ") || !strings.Contains(err.Error(), "holds a copy") {
		t.Errorf("removing an object a server caches: want %s, got %v", schema.MapUpdCodeBusy, err)
	}
	after, _ := c.Status(ctx)
	if before.Seq+1 != after.Seq { // only the cache report changed the state
		t.Errorf("refused registrations changed the state: seq %d -> %d", before.Seq, after.Seq)
	}
	// a removal frees the extent: the next registration of that size gets it back
	if _, err := c.RegisterObject(ctx, 2, 0, false); err != nil {
		t.Fatal(err)
	}
	a3, err := c.RegisterObject(ctx, 3, 8, true)
	if err != nil || a3.Base != a2.Base {
		t.Fatalf("a freed extent is not reused: %v, base %d want %d", err, a3.Base, a2.Base)
	}
}

// TestVersionedGet: a get naming a version is held until a commit makes it; the hold
// table is bounded in all and per reader; a cancelled version, a fenced reader and a caller that
// goes away each end the wait with their own answer and free the entry.
func TestVersionedGet(t *testing.T) {
	s := NewServer(nil)
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	c := NewClient(ts.URL, 5*time.Second)
	ctx := context.Background()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.AddServer(n); err != nil {
			t.Fatal(err)
		}
	}
	type res struct {
		a   ChangeAnswer
		err error
	}
	get := func(srv, obj string, v uint64) chan res {
		ch := make(chan res, 1)
		go func() { a, err := c.CacheAt(ctx, srv, obj, v, 10*time.Millisecond); ch <- res{a, err} }()
		return ch
	}
	waitHeld := func(n int) {
		t.Helper()
		for i := 0; i < 500; i++ {
			s.mu.Lock()
			h := s.held
			s.mu.Unlock()
			if h == n {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatalf("held gets never reached %d", n)
	}
	// x does not exist yet: b's get of version 2 waits through the first commit, is served by the second
	g := get("b", "x", 2)
	waitHeld(1)
	if _, err := s.Commit("a", "x"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-g:
		t.Fatalf("served at version 1: %+v %v", r.a, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := s.Commit("a", "x"); err != nil {
		t.Fatal(err)
	}
	r := <-g
	if r.err != nil {
		t.Fatal(r.err)
	}
	if l := s.Log(); l[len(l)-1].Op != "cache" || l[len(l)-1].Version != 2 || l[len(l)-1].Server != "b" {
		t.Fatalf("last log entry %+v, want b's cache of version 2", l[len(l)-1])
	}
	// an already committed version is served at once; an unversioned get is unchanged
	if _, err := c.CacheAt(ctx, "c", "x", 1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// the table: 2 in all, 1 per reader
	s.SetHoldSlots(2, 1)
	g1 := get("b", "y", 1)
	waitHeld(1)
	var ae *APIError
	if _, err := c.change(ctx, "/v1/cache", CacheRequest{Server: "b", Object: "z", Version: 1}); !errors.As(err, &ae) || ae.Code != CodeHoldFull || ae.Status != 503 {
		t.Fatalf("b's second held get: %v, want 503 holdFull (its share)", err)
	}
	g2 := get("c", "y", 1)
	waitHeld(2)
	if _, err := c.change(ctx, "/v1/cache", CacheRequest{Server: "a", Object: "z", Version: 1}); !errors.As(err, &ae) || ae.Code != CodeHoldFull {
		t.Fatalf("a third held get: %v, want holdFull", err)
	}
	// CacheAt retries holdFull: it gets in once y's commit frees the table
	g3 := get("a", "y", 1)
	if _, err := s.Commit("b", "y"); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan res{g1, g2, g3} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	waitHeld(0)
	s.SetHoldSlots(DefaultHoldSlots, DefaultHoldPerServer)
	// cancel: the held get and later ones are answered 410 cancelled; a committed version cannot be
	gc := get("b", "w", 1)
	waitHeld(1)
	if _, err := c.Cancel(ctx, "w", 1); err != nil {
		t.Fatal(err)
	}
	if r := <-gc; !errors.As(r.err, &ae) || ae.Status != 410 || ae.Code != CodeCancelled {
		t.Fatalf("held get after cancel: %v, want 410 cancelled", r.err)
	}
	if _, err := c.CacheAt(ctx, "c", "w", 3, time.Millisecond); !errors.As(err, &ae) || ae.Code != CodeCancelled {
		t.Fatalf("later get of a cancelled version: %v", err)
	}
	if _, err := c.Cancel(ctx, "x", 2); err == nil || !strings.Contains(err.Error(), "already committed") {
		t.Fatalf("cancel of a committed version: %v", err)
	}
	// the reader is fenced while it waits: its held get is dropped
	gf := get("c", "v", 1)
	waitHeld(1)
	if _, err := s.Fence("c"); err != nil {
		t.Fatal(err)
	}
	if r := <-gf; r.err == nil || !strings.Contains(r.err.Error(), "held get of v is dropped") {
		t.Fatalf("fenced reader's held get: %v", r.err)
	}
	// a caller that goes away frees its entry
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, _ = c.CacheAt(cctx, "b", "v", 1, time.Millisecond) }()
	waitHeld(1)
	cancel()
	waitHeld(0)
	// bad requests
	for body, want := range map[string]string{
		`{"server":"b","object":"x","version":-1}`:          "bad request body",
		`{"server":"b","object":"x y","version":1}`:         "invalid object name",
		`{"server":"b","object":"x","version":1,"extra":1}`: "unknown field",
	} {
		resp, err := http.Post(ts.URL+"/v1/cache", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), want) {
			t.Fatalf("%s: %d %s, want 400 %q", body, resp.StatusCode, b, want)
		}
	}
}

// TestInvokeWithVersions: acks owed for an input the function reads with a version are no
// violation; for its other inputs they still are.
func TestInvokeWithVersions(t *testing.T) {
	s := NewServer(nil)
	for _, n := range []string{"a", "b"} {
		if _, err := s.AddServer(n); err != nil {
			t.Fatal(err)
		}
	}
	must := func(_ ChangeAnswer, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Commit("a", "x"))
	must(s.Cache("b", "x"))
	must(s.Commit("a", "x")) // b owes an ack for x
	must(s.Commit("a", "y"))
	must(s.Invoke(InvocationRequest{Pod: "early", Server: "b", Inputs: []string{"x"}, Versions: map[string]uint64{"x": 2}}))
	must(s.Invoke(InvocationRequest{Pod: "late", Server: "b", Inputs: []string{"x"}}))
	l := s.Log()
	if l[len(l)-2].Violation != "" || l[len(l)-1].Violation != "pending for input x" {
		t.Fatalf("violations %q, %q; want none for the versioned read, one for the other", l[len(l)-2].Violation, l[len(l)-1].Violation)
	}
	if _, err := s.Invoke(InvocationRequest{Pod: "bad", Server: "b", Inputs: []string{"x"}, Versions: map[string]uint64{"y": 1}}); err == nil {
		t.Fatal("a version of an undeclared input was accepted")
	}
}
