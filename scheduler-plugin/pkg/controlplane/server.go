package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apta/scheduler-plugin/pkg/schema"
)

// Server is a conforming, in-memory implementation of the control-plane API. Every state
// change increments the commit sequence number and is logged with it (Log, GET /v1/log, and
// the optional io.Writer as JSON lines). It implements the memory-server side of TLA-C5: a
// commit makes the writer the only sharer and adds one pending ack for every other sharer in
// the same atomic step; acks count only in the sender's current unfenced epoch; a fence
// retires the server's acks and removes it from every sharer set.
type Server struct {
	mu       sync.Mutex
	seq      uint64
	instance string
	servers  map[string]*server
	objects  map[string]*object
	log      []LogEntry
	out      io.Writer
	down     bool
	// auth, if set, authenticates every HTTP call and authorizes it by role (auth.go).
	auth *Auth
	// arena allocates registered objects' storage as the memory server does (alloc.go).
	arena *arena
	// rejoins per server: a bucket of rejoinBurst refilled at rejoinRate per second, as the
	// memory-server daemon's --rejoin-rate/--rejoin-burst; rate 0: no limit.
	rejoinRate, rejoinBurst float64
	// Versioned gets waiting for their version (CacheAt): at most holdSlots in all and
	// holdPerServer per reader, so one hostile reader cannot take every entry; woken by every
	// commit, fence, rejoin and cancel (cond is on mu).
	cond                     *sync.Cond
	held                     int
	heldBy                   map[string]int
	holdSlots, holdPerServer int
	// cancelled[obj]: versions from this one on will never be made (POST /v1/cancel).
	cancelled map[string]uint64
}

// Default hold table: the emulation's RTL OSC's holdSlots (schema.Msemu); a quarter of it per reader.
var (
	DefaultHoldSlots     = schema.Msemu.HoldSlots
	DefaultHoldPerServer = DefaultHoldSlots / 4
)

// SetHoldSlots changes the hold table's size, in all and per reader.
func (s *Server) SetHoldSlots(total, perServer int) {
	s.mu.Lock()
	s.holdSlots, s.holdPerServer = total, perServer
	s.mu.Unlock()
}

// Default rejoin limit (the daemon's defaults): 16 at once, then 1 per second per server.
const (
	DefaultRejoinRate  = 1.0
	DefaultRejoinBurst = 16.0
)

// SetRejoinLimit changes the per-server rejoin rate (per second; 0 = no limit) and burst.
func (s *Server) SetRejoinLimit(rate, burst float64) {
	s.mu.Lock()
	s.rejoinRate, s.rejoinBurst = rate, burst
	s.mu.Unlock()
}

// SetArena replaces the allocator's geometry (before any object is registered).
func (s *Server) SetArena(c ArenaConfig) { s.mu.Lock(); s.arena = newArena(c); s.mu.Unlock() }

// SetAuth turns on authentication and authorization of the HTTP API (nil: off, every caller
// may do everything; only for tests in one process).
func (s *Server) SetAuth(a *Auth) { s.mu.Lock(); s.auth = a; s.mu.Unlock() }

type server struct {
	rejoinTokens float64   // the rejoin bucket (filled to the burst at the first rejoin)
	rejoinAt     time.Time // its last refill
	rejoinFilled bool
	live         bool
	fenced       bool
	epoch        uint64
}

type object struct {
	version uint64
	sharers map[string]bool
	pend    map[string]uint64
	// pendSeq[server] is the commit sequence number of each ack owed, oldest first.
	pendSeq map[string][]uint64
}

// NewServer returns an empty control plane; log lines go to out if it is not nil.
func NewServer(out io.Writer) *Server {
	s := &Server{
		instance:   strconv.FormatInt(time.Now().UnixNano(), 36),
		servers:    map[string]*server{},
		objects:    map[string]*object{},
		out:        out,
		arena:      newArena(DefaultArena),
		rejoinRate: DefaultRejoinRate, rejoinBurst: DefaultRejoinBurst,
		heldBy:    map[string]int{},
		holdSlots: DefaultHoldSlots, holdPerServer: DefaultHoldPerServer,
		cancelled: map[string]uint64{},
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// SetDown makes every HTTP call answer 503 (the control plane cannot be asked) while true.
func (s *Server) SetDown(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

// Log returns a copy of the state-change log.
func (s *Server) Log() []LogEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]LogEntry(nil), s.log...)
}

// Seq returns the current commit sequence number.
func (s *Server) Seq() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.seq }

func (s *Server) pendingLocked(name string) uint64 {
	var n uint64
	for _, o := range s.objects {
		n += o.pend[name]
	}
	return n
}

// record appends a log entry for a change already applied; called with mu held.
func (s *Server) record(e LogEntry) LogEntry {
	s.seq++
	e.Seq = s.seq
	if e.Server != "" {
		e.Pending = s.pendingLocked(e.Server)
		if sv := s.servers[e.Server]; sv != nil {
			e.Fenced = sv.fenced
			if e.Epoch == 0 {
				e.Epoch = sv.epoch
			}
		}
	}
	s.log = append(s.log, e)
	if s.out != nil {
		b, _ := json.Marshal(e)
		fmt.Fprintf(s.out, "%s\n", b)
	}
	return e
}

func (s *Server) answer(e LogEntry) ChangeAnswer {
	return ChangeAnswer{Seq: e.Seq, Instance: s.instance, Server: e.Server, Epoch: e.Epoch, Violation: e.Violation}
}

// AddServer registers a live, unfenced compute server in epoch 1.
func (s *Server) AddServer(name string) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ValidObjectName(name) {
		return ChangeAnswer{}, fmt.Errorf("invalid server name %q", name)
	}
	if _, ok := s.servers[name]; ok {
		return ChangeAnswer{}, fmt.Errorf("server %q already exists", name)
	}
	s.servers[name] = &server{live: true, epoch: 1}
	return s.answer(s.record(LogEntry{Op: "add-server", Server: name})), nil
}

func (s *Server) get(name string) (*server, error) {
	sv := s.servers[name]
	if sv == nil {
		return nil, fmt.Errorf("unknown server %q", name)
	}
	return sv, nil
}

// Cache records that server got obj (it becomes a sharer); the object must exist.
func (s *Server) Cache(name, obj string) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(name)
	if err != nil {
		return ChangeAnswer{}, err
	}
	o := s.objects[obj]
	if o == nil {
		return ChangeAnswer{}, fmt.Errorf("unknown object %q", obj)
	}
	if sv.fenced {
		return ChangeAnswer{}, fmt.Errorf("server %q is fenced", name)
	}
	o.sharers[name] = true
	return s.answer(s.record(LogEntry{Op: "cache", Server: name, Object: obj})), nil
}

// CacheAt is a versioned get: server gets obj once the object's version (its commit
// count) reaches version; until then the call waits in the hold table, woken by commits (no
// polling). It answers 503 holdFull when the table (or the reader's share) is full, 410
// cancelled when the version was cancelled, and an error when the reader is fenced or changes
// epoch while it waits (its held gets go with its epoch) or ctx ends. version 0 is Cache.
func (s *Server) CacheAt(ctx context.Context, name, obj string, version uint64) (ChangeAnswer, error) {
	if version == 0 {
		return s.Cache(name, obj)
	}
	if !ValidObjectName(obj) {
		return ChangeAnswer{}, fmt.Errorf("invalid object name %q", obj)
	}
	stop := context.AfterFunc(ctx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	held, epoch := false, uint64(0)
	defer func() {
		if held {
			s.held--
			s.heldBy[name]--
		}
	}()
	for {
		sv, err := s.get(name)
		if err != nil {
			return ChangeAnswer{}, err
		}
		if sv.fenced || (held && sv.epoch != epoch) {
			return ChangeAnswer{}, fmt.Errorf("server %q is fenced or rejoined: its held get of %s is dropped", name, obj)
		}
		if c, ok := s.cancelled[obj]; ok && version >= c {
			return ChangeAnswer{}, &statusError{http.StatusGone, fmt.Sprintf("version %d of %s was cancelled (no put will make it)", version, obj), CodeCancelled}
		}
		if o := s.objects[obj]; o != nil && o.version >= version {
			o.sharers[name] = true
			return s.answer(s.record(LogEntry{Op: "cache", Server: name, Object: obj, Version: o.version})), nil
		}
		if err := ctx.Err(); err != nil {
			return ChangeAnswer{}, &statusError{http.StatusServiceUnavailable, fmt.Sprintf("held get of %s version %d ended: %v", obj, version, err), ""}
		}
		if !held {
			if s.held >= s.holdSlots || s.heldBy[name] >= s.holdPerServer {
				return ChangeAnswer{}, &statusError{http.StatusServiceUnavailable,
					fmt.Sprintf("hold table full (%d held, %d by %s): retry the get of %s version %d", s.held, s.heldBy[name], name, obj, version), CodeHoldFull}
			}
			s.held++
			s.heldBy[name]++
			held, epoch = true, sv.epoch
		}
		s.cond.Wait()
	}
}

// Cancel records that no put will make version (or a later one) of obj: the gets held for it,
// and later ones naming it, are answered 410 cancelled. A version already made is not cancelled.
func (s *Server) Cancel(obj string, version uint64) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ValidObjectName(obj) {
		return ChangeAnswer{}, fmt.Errorf("invalid object name %q", obj)
	}
	if version == 0 {
		return ChangeAnswer{}, fmt.Errorf("version: must be at least 1")
	}
	if o := s.objects[obj]; o != nil && o.version >= version {
		return ChangeAnswer{}, &statusError{http.StatusConflict, fmt.Sprintf("version %d of %s is already committed (%d)", version, obj, o.version), ""}
	}
	if c, ok := s.cancelled[obj]; !ok || version < c {
		s.cancelled[obj] = version
	}
	s.cond.Broadcast()
	return s.answer(s.record(LogEntry{Op: "cancel", Object: obj, Version: version})), nil
}

// Commit commits a put of obj by server: the writer becomes the only sharer and every other
// sharer owes one more invalidation ack, atomically with the sequence-number increment.
func (s *Server) Commit(name, obj string) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(name)
	if err != nil {
		return ChangeAnswer{}, err
	}
	if sv.fenced {
		return ChangeAnswer{}, fmt.Errorf("server %q is fenced", name)
	}
	if !ValidObjectName(obj) {
		return ChangeAnswer{}, fmt.Errorf("invalid object name %q", obj)
	}
	o := s.objects[obj]
	if o == nil {
		o = &object{sharers: map[string]bool{}, pend: map[string]uint64{}, pendSeq: map[string][]uint64{}}
		s.objects[obj] = o
	}
	o.version++
	for sh := range o.sharers {
		if sh != name {
			o.pend[sh]++
			o.pendSeq[sh] = append(o.pendSeq[sh], s.seq+1) // the seq record() gives this commit
		}
	}
	o.sharers = map[string]bool{name: true}
	if c, ok := s.cancelled[obj]; ok && o.version >= c {
		delete(s.cancelled, obj) // made after all (a cancel races a last put)
	}
	s.cond.Broadcast() // wake the gets held for obj
	return s.answer(s.record(LogEntry{Op: "commit", Server: name, Object: obj, Version: o.version})), nil
}

// RegisterObject registers object obj of size lines (valid), allocating its storage as the memory
// server's object map does on POST /v1/objects, or removes it (!valid) and frees the storage. A
// refusal (alloc.go: badSize, exists, collision, noSpace, unknownObj, busy) changes nothing. An
// object with copies outstanding cannot be removed: its sharers would keep a copy of a name that
// may be registered again, and its pending invalidations would vanish without being acked (TLA-C5).
func (s *Server) RegisterObject(obj, size uint64, valid bool) (RegisterAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := strconv.FormatUint(obj, 10)
	if valid {
		base, err := s.arena.register(obj, size)
		if err != nil {
			return RegisterAnswer{}, err
		}
		s.objects[name] = &object{sharers: map[string]bool{}, pend: map[string]uint64{}, pendSeq: map[string][]uint64{}}
		a := s.answer(s.record(LogEntry{Op: "register", Object: name}))
		return RegisterAnswer{Seq: a.Seq, Instance: a.Instance, Object: name, Base: base, Size: &size}, nil
	}
	e, err := s.arena.lookup(obj)
	if err != nil {
		return RegisterAnswer{}, err
	}
	if o := s.objects[name]; o != nil {
		for sv, n := range o.pend {
			if n > 0 {
				return RegisterAnswer{}, refuse(schema.MapUpdCodeBusy, "obj", "object %q: server %q owes %d acks for it", name, sv, n)
			}
		}
		for sv := range o.sharers {
			return RegisterAnswer{}, refuse(schema.MapUpdCodeBusy, "obj", "object %q: server %q holds a copy", name, sv)
		}
	}
	s.arena.remove(e)
	delete(s.objects, name)
	a := s.answer(s.record(LogEntry{Op: "unregister", Object: name}))
	return RegisterAnswer{Seq: a.Seq, Instance: a.Instance, Object: name, Base: e.base}, nil
}

// Ack retires acks server owes for obj (count 0: all). An ack from another epoch or from a
// fenced server is ignored (logged, no change of the counters).
func (s *Server) Ack(name, obj string, epoch, count uint64) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(name)
	if err != nil {
		return ChangeAnswer{}, err
	}
	o := s.objects[obj]
	if o == nil {
		return ChangeAnswer{}, fmt.Errorf("unknown object %q", obj)
	}
	if sv.fenced || (epoch != 0 && epoch != sv.epoch) {
		return s.answer(s.record(LogEntry{Op: "ack-ignored", Server: name, Object: obj, Epoch: epoch})), nil
	}
	if count == 0 || count > o.pend[name] {
		count = o.pend[name]
	}
	o.pend[name] -= count
	o.pendSeq[name] = o.pendSeq[name][count:]
	if o.pend[name] == 0 {
		delete(o.pend, name)
		delete(o.pendSeq, name)
	}
	return s.answer(s.record(LogEntry{Op: "ack", Server: name, Object: obj})), nil
}

// Fence fences a server: its acks are retired, it leaves every sharer set.
func (s *Server) Fence(name string) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(name)
	if err != nil {
		return ChangeAnswer{}, err
	}
	sv.fenced = true
	for _, o := range s.objects {
		delete(o.pend, name)
		delete(o.pendSeq, name)
		delete(o.sharers, name)
	}
	s.cond.Broadcast() // the fenced reader's held gets are dropped
	return s.answer(s.record(LogEntry{Op: "fence", Server: name})), nil
}

// Rejoin brings a fenced server back in a new epoch with an empty cache.
func (s *Server) Rejoin(name string) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(name)
	if err != nil {
		return ChangeAnswer{}, err
	}
	if !sv.fenced {
		return ChangeAnswer{}, fmt.Errorf("server %q is not fenced", name)
	}
	if s.rejoinRate > 0 {
		now := time.Now()
		if !sv.rejoinFilled {
			sv.rejoinTokens, sv.rejoinFilled = s.rejoinBurst, true
		} else {
			sv.rejoinTokens = min(s.rejoinBurst, sv.rejoinTokens+now.Sub(sv.rejoinAt).Seconds()*s.rejoinRate)
		}
		sv.rejoinAt = now
		if sv.rejoinTokens < 1 {
			wait := time.Duration((1 - sv.rejoinTokens) / s.rejoinRate * float64(time.Second))
			return ChangeAnswer{}, &statusError{http.StatusTooManyRequests,
				fmt.Sprintf("rejoins of %s over the rate limit: retry in %d ms", name, wait.Milliseconds()+1), ""}
		}
		sv.rejoinTokens--
	}
	sv.fenced = false
	sv.live = true
	sv.epoch++
	s.cond.Broadcast()
	return s.answer(s.record(LogEntry{Op: "rejoin", Server: name})), nil
}

// Invoke records the start of a function on a server (what a kubelet reports when a pod
// starts) and judges it: a start on a fenced server, in another epoch, or on a server owing an
// ack the function depends on is a violation. An ack counts if it is owed for a declared input
// (for any object when none is declared) and its commit is numbered <= req.MinSeq (s(f), the
// puts the function depends on, TLA-C1; 0: every ack counts).
func (s *Server) Invoke(req InvocationRequest) (ChangeAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv, err := s.get(req.Server)
	if err != nil {
		return ChangeAnswer{}, err
	}
	limit := req.MinSeq
	if limit == 0 {
		limit = s.seq
	}
	owes := func(obj string) bool {
		if _, versioned := req.Versions[obj]; versioned {
			return false // read with a version: a copy older than it is a miss
		}
		o := s.objects[obj]
		return o != nil && len(o.pendSeq[req.Server]) > 0 && o.pendSeq[req.Server][0] <= limit
	}
	var v string
	switch {
	case sv.fenced:
		v = "fenced"
	case req.Epoch != nil && *req.Epoch != sv.epoch:
		v = fmt.Sprintf("placed in epoch %d, server is in %d", *req.Epoch, sv.epoch)
	case len(req.Inputs) == 0:
		names := make([]string, 0, len(s.objects))
		for obj := range s.objects {
			names = append(names, obj)
		}
		sort.Strings(names)
		for _, obj := range names {
			if owes(obj) {
				v = fmt.Sprintf("pending for %s (undeclared inputs)", obj)
				break
			}
		}
	default:
		for _, in := range req.Inputs {
			if owes(in) {
				v = fmt.Sprintf("pending for input %s", in)
				break
			}
		}
	}
	for obj, ver := range req.Versions {
		if ver == 0 || !slices.Contains(req.Inputs, obj) {
			return ChangeAnswer{}, fmt.Errorf("versions: %s: want a version >= 1 of a declared input", obj)
		}
	}
	e := s.record(LogEntry{Op: "invoke", Server: req.Server, Pod: req.Pod, Inputs: req.Inputs, Violation: v})
	return s.answer(e), nil
}

// Schedulable is the answer of GET /v1/schedulable for the given objects (none: overall).
func (s *Server) Schedulable(objs []string) SchedulableAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := SchedulableAnswer{Seq: s.seq, Instance: s.instance, Objects: objs, Servers: []ServerState{}}
	for _, obj := range objs {
		if s.objects[obj] == nil {
			a.Unknown = append(a.Unknown, obj)
		}
	}
	names := make([]string, 0, len(s.servers))
	for n := range s.servers {
		names = append(names, n)
	}
	sort.Strings(names)
	// One pass over the objects for every server's pending counts and objects.
	pending := map[string]uint64{}
	pendingObjs := map[string][]string{}
	for obj, o := range s.objects {
		for srv, c := range o.pend {
			if c > 0 {
				pending[srv] += c
				pendingObjs[srv] = append(pendingObjs[srv], obj)
			}
		}
	}
	for _, n := range names {
		sv := s.servers[n]
		st := ServerState{Name: n, Live: sv.live, Fenced: sv.fenced, Epoch: sv.epoch, Pending: pending[n]}
		st.Schedulable = sv.live && !sv.fenced && st.Pending == 0
		if st.Pending > 0 {
			st.PendingObjects = pendingObjs[n]
			sort.Strings(st.PendingObjects)
			if len(st.PendingObjects) > 64 {
				st.PendingObjects, st.PendingObjectsTruncated = st.PendingObjects[:64], true
			}
		}
		st.SchedulableFor = sv.live && !sv.fenced
		for _, obj := range objs {
			o := s.objects[obj]
			if o == nil {
				continue
			}
			if p := o.pend[n]; p > 0 {
				if st.PendingFor == nil {
					st.PendingFor = map[string]uint64{}
				}
				st.PendingFor[obj] = p
				st.SchedulableFor = false
			}
			if o.sharers[n] {
				st.Caches = append(st.Caches, obj)
			}
		}
		if len(objs) == 0 {
			st.SchedulableFor = st.Schedulable
		}
		a.Servers = append(a.Servers, st)
	}
	return a
}

// Object is the answer of GET /v1/objects/{obj}.
func (s *Server) Object(obj string) (ObjectAnswer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.objects[obj]
	if o == nil {
		return ObjectAnswer{}, false
	}
	a := ObjectAnswer{Seq: s.seq, Instance: s.instance, Object: obj, Version: o.version, Sharers: []string{}}
	for sh := range o.sharers {
		a.Sharers = append(a.Sharers, sh)
	}
	sort.Strings(a.Sharers)
	if len(o.pend) > 0 {
		a.Pending = map[string]uint64{}
		for k, v := range o.pend {
			a.Pending[k] = v
		}
	}
	return a, true
}

// ParseObjects splits a comma-separated object list, rejecting malformed names.
func ParseObjects(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !ValidObjectName(p) {
			return nil, fmt.Errorf("malformed object name %q (want 1-253 characters of [A-Za-z0-9._-])", p)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// Handler serves the API of schema/controlplane.yaml. With SetAuth: no or an unknown bearer
// token -> 401; a role that may not make the call -> 403; neither changes anything.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	read := func(pattern string, f func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc("GET "+pattern, f) // every authenticated caller may read
	}
	read("/v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Schedulable(nil))
	})
	read("/v1/schedulable", func(w http.ResponseWriter, r *http.Request) {
		objs, err := ParseObjects(r.URL.Query().Get("objects"))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, ErrorAnswer{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, s.Schedulable(objs))
	})
	read("/v1/objects/{obj}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := s.Object(r.PathValue("obj"))
		if !ok {
			writeJSON(w, http.StatusNotFound, ErrorAnswer{Error: fmt.Sprintf("unknown object %q", r.PathValue("obj"))})
			return
		}
		writeJSON(w, http.StatusOK, a)
	})
	read("/v1/log", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Log())
	})
	change := func(path string, f func(r *http.Request, c *Caller) (ChangeAnswer, error)) {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			c, _ := r.Context().Value(callerKey{}).(*Caller)
			a, err := f(r, c)
			if err != nil {
				code := http.StatusBadRequest
				body := ErrorAnswer{Error: err.Error()}
				if se, ok := err.(*statusError); ok {
					code, body.Code = se.code, se.apiCode
				}
				writeJSON(w, code, body)
				return
			}
			writeJSON(w, http.StatusOK, a)
		})
	}
	change("/v1/servers", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		if err := allow(c, "", RoleFailureDetector); err != nil {
			return ChangeAnswer{}, err
		}
		var req ServerRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		return s.AddServer(req.Server)
	})
	mux.HandleFunc("POST /v1/objects", func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(callerKey{}).(*Caller)
		a, err := func() (RegisterAnswer, error) {
			if err := allow(c, "", RoleObjectManager); err != nil {
				return RegisterAnswer{}, err
			}
			var req ObjectRequest
			if err := decode(r, &req); err != nil {
				if strings.Contains(err.Error(), `unknown field "base"`) {
					return RegisterAnswer{}, fmt.Errorf("bad request body: field base: not accepted, the memory server allocates object storage (register with {obj, size})")
				}
				return RegisterAnswer{}, err
			}
			valid := req.Valid == nil || *req.Valid == 1
			if req.Obj == nil {
				return RegisterAnswer{}, fmt.Errorf("bad request body: field obj: required")
			}
			if req.Valid != nil && *req.Valid > 1 {
				return RegisterAnswer{}, fmt.Errorf("bad request body: field valid: %d is not 0 or 1", *req.Valid)
			}
			if valid && req.Size == nil {
				return RegisterAnswer{}, fmt.Errorf("bad request body: field size: required")
			}
			var size uint64
			if req.Size != nil {
				size = *req.Size
			}
			if size > MaxObjectLines {
				return RegisterAnswer{}, fmt.Errorf("bad request body: field size: %d lines > %d", size, MaxObjectLines)
			}
			return s.RegisterObject(*req.Obj, size, valid)
		}()
		if err != nil {
			code, body := http.StatusBadRequest, ErrorAnswer{Error: err.Error()}
			if se, ok := err.(*statusError); ok {
				code = se.code
			}
			if rf, ok := err.(*refusal); ok {
				code, body.Field, body.Code = refusalStatus[rf.code], rf.field, rf.code.String()
			}
			writeJSON(w, code, body)
			return
		}
		writeJSON(w, http.StatusOK, a)
	})
	change("/v1/servers/{server}/fence", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		if err := allow(c, "", RoleFailureDetector); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Fence(r.PathValue("server"))
	})
	change("/v1/servers/{server}/rejoin", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		if err := allow(c, "", RoleFailureDetector); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Rejoin(r.PathValue("server"))
	})
	change("/v1/commit", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		var req CommitRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		if err := allow(c, req.Server, RoleComputeServer, RoleKubelet); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Commit(req.Server, req.Object)
	})
	change("/v1/cache", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		var req CacheRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		if err := allow(c, req.Server, RoleComputeServer, RoleKubelet); err != nil {
			return ChangeAnswer{}, err
		}
		// a held get ends with its caller: a client that goes away frees its entry
		return s.CacheAt(r.Context(), req.Server, req.Object, req.Version)
	})
	change("/v1/cancel", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		if err := allow(c, "", RoleObjectManager); err != nil {
			return ChangeAnswer{}, err
		}
		var req CancelRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Cancel(req.Object, req.Version)
	})
	change("/v1/ack", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		var req AckRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		if err := allow(c, req.Server, RoleComputeServer); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Ack(req.Server, req.Object, req.Epoch, req.Count)
	})
	change("/v1/invocations", func(r *http.Request, c *Caller) (ChangeAnswer, error) {
		var req InvocationRequest
		if err := decode(r, &req); err != nil {
			return ChangeAnswer{}, err
		}
		if err := allow(c, req.Server, RoleKubelet); err != nil {
			return ChangeAnswer{}, err
		}
		return s.Invoke(req)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down, auth := s.down, s.auth
		s.mu.Unlock()
		if auth != nil {
			c, ok := auth.authenticate(r)
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="apta-controlplane"`)
				writeJSON(w, http.StatusUnauthorized, ErrorAnswer{Error: "missing or invalid bearer token"})
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), callerKey{}, &c))
		}
		if down {
			writeJSON(w, http.StatusServiceUnavailable, ErrorAnswer{Error: "control plane unavailable"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

type callerKey struct{}

func decode(r *http.Request, into any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("bad request body: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
