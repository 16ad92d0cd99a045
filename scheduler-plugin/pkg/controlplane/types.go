// Package controlplane is the memory server's control-plane API (schema/controlplane.yaml):
// the wire types, a client (Client) used by the scheduler plugin and the mirroring agent,
// and a conforming in-memory server (Server) that the tests drive.
package controlplane

// ServerState is one compute server as of the answer's sequence number (TLA-C2: all fields
// of one answer are read at one instant of the control plane's history).
type ServerState struct {
	// Name of the compute server; nodes carry it in the label NodeLabel.
	Name string `json:"name"`
	// Live is false once the failure detector has declared the server crashed.
	Live bool `json:"live"`
	// Fenced servers are never schedulable; they come back only by Rejoin in a new epoch.
	Fenced bool `json:"fenced"`
	// Epoch is the server's current epoch (incremented by Rejoin).
	Epoch uint64 `json:"epoch"`
	// Pending is the number of invalidation acks the server owes, over all objects.
	Pending uint64 `json:"pending"`
	// PendingFor is the number of acks owed per requested object (only objects with acks owed).
	PendingFor map[string]uint64 `json:"pendingFor,omitempty"`
	// PendingObjects lists every object the server owes acks for (at most 64, sorted; see
	// PendingObjectsTruncated).
	PendingObjects          []string `json:"pendingObjects,omitempty"`
	PendingObjectsTruncated bool     `json:"pendingObjectsTruncated,omitempty"`
	// Caches lists the requested objects the server is a sharer of.
	Caches []string `json:"caches,omitempty"`
	// Schedulable is Live && !Fenced && Pending == 0 (overall).
	Schedulable bool `json:"schedulable"`
	// SchedulableFor is Live && !Fenced && no acks owed for any requested object.
	SchedulableFor bool `json:"schedulableFor"`
}

// SchedulableAnswer answers GET /v1/schedulable.
type SchedulableAnswer struct {
	// Seq is the commit sequence number the answer was read at.
	Seq uint64 `json:"seq"`
	// Instance identifies the control-plane incarnation; Seq is monotonic within one instance.
	Instance string `json:"instance"`
	// Objects echoes the objects asked about.
	Objects []string `json:"objects,omitempty"`
	// Unknown lists the asked objects the control plane has never seen committed.
	Unknown []string `json:"unknown,omitempty"`
	// Servers is every compute server known to the control plane.
	Servers []ServerState `json:"servers"`
}

// ObjectAnswer answers GET /v1/objects/{obj}.
type ObjectAnswer struct {
	Seq      uint64            `json:"seq"`
	Instance string            `json:"instance"`
	Object   string            `json:"object"`
	Version  uint64            `json:"version"`
	Sharers  []string          `json:"sharers"`
	Pending  map[string]uint64 `json:"pending,omitempty"`
}

// ChangeAnswer answers every state-changing call.
type ChangeAnswer struct {
	Seq      uint64 `json:"seq"`
	Instance string `json:"instance"`
	Server   string `json:"server,omitempty"`
	Epoch    uint64 `json:"epoch,omitempty"`
	// Violation is set on an invocation started on a server that was fenced, in another
	// epoch, or pending for the invocation's inputs (TLA-C3, TLA-C4).
	Violation string `json:"violation,omitempty"`
}

// ErrorAnswer is the body of every 4xx/5xx answer.
type ErrorAnswer struct {
	Error string `json:"error"`
	// Field and Code name a refused registration's field and the memory server's MapUpdCode.
	Field string `json:"field,omitempty"`
	Code  string `json:"code,omitempty"`
}

// APIError is a refusal the control plane answered (status code, ErrorAnswer's code and text).
type APIError struct {
	Status    int
	Code, Msg string
}

func (e *APIError) Error() string { return e.Msg }

// Codes of a versioned get's refusals (CacheRequest).
const (
	CodeHoldFull  = "holdFull"
	CodeCancelled = "cancelled"
)

// Request bodies.
type ServerRequest struct {
	Server string `json:"server"`
}

type CommitRequest struct {
	Server string `json:"server"`
	Object string `json:"object"`
}

// CacheRequest is a get (POST /v1/cache). A Version other than 0 is the minimum version (the
// object's commit count) the get names: the call is held until a commit reaches it,
// answered 503 with code holdFull when the hold table is full, 410 with code cancelled when that
// version was cancelled, and refused when the reader is fenced or changes epoch while held.
type CacheRequest struct {
	Server  string `json:"server"`
	Object  string `json:"object"`
	Version uint64 `json:"version,omitempty"`
}

// CancelRequest (POST /v1/cancel) says no put will make version Version of Object any more (its
// workflow was cancelled): gets naming it or a later version are answered 410 cancelled.
type CancelRequest struct {
	Object  string `json:"object"`
	Version uint64 `json:"version"`
}

type AckRequest struct {
	Server string `json:"server"`
	Object string `json:"object"`
	Epoch  uint64 `json:"epoch"`
	// Count acks to retire; 0 means all the server owes for the object.
	Count uint64 `json:"count,omitempty"`
}

// ObjectRequest registers (valid 1, the default) or removes (valid 0) object obj: a registration
// names size lines, never an address, and the memory server allocates the storage (the Object
// Manager's call; rtl/MEMSERVER.md "Object storage allocation"). The object's name in every other
// call is obj in decimal.
type ObjectRequest struct {
	Obj   *uint64 `json:"obj"`
	Size  *uint64 `json:"size,omitempty"`
	Valid *uint64 `json:"valid,omitempty"`
}

// RegisterAnswer answers POST /v1/objects: the base the allocator chose (a removal: the base freed).
type RegisterAnswer struct {
	Seq      uint64  `json:"seq"`
	Instance string  `json:"instance"`
	Object   string  `json:"object"`
	Base     uint64  `json:"base"`
	Size     *uint64 `json:"size,omitempty"`
}

// MaxObjectLines is the largest map entry (lines) the memory server's object map encodes.
const MaxObjectLines = 0xFFFF

type InvocationRequest struct {
	Pod    string `json:"pod"`
	Server string `json:"server"`
	// Epoch the placement decided for (the pod's apta.io/placed-epoch); a start in another epoch
	// is a violation (TLA-C3). Absent: not checked.
	Epoch  *uint64  `json:"epoch,omitempty"`
	Inputs []string `json:"inputs,omitempty"`
	// MinSeq is s(f) (TLA-C1): only acks owed for commits numbered <= MinSeq are puts the
	// function depends on. 0: every owed ack counts.
	MinSeq uint64 `json:"minSeq,omitempty"`
	// Versions are the minimum versions the function's gets name, by input (the pod's
	// apta.io/input-versions): such a function was placed early and reads only with versions,
	// so an ack owed for one of these inputs is no violation.
	Versions map[string]uint64 `json:"versions,omitempty"`
}

// LogEntry is one line of the conforming server's log: every state change, with its sequence number.
type LogEntry struct {
	Seq       uint64   `json:"seq"`
	Op        string   `json:"op"`
	Server    string   `json:"server,omitempty"`
	Object    string   `json:"object,omitempty"`
	Epoch     uint64   `json:"epoch,omitempty"`
	Pod       string   `json:"pod,omitempty"`
	Inputs    []string `json:"inputs,omitempty"`
	Violation string   `json:"violation,omitempty"`
	// Version is the object's version after a commit, the version a get got, or the first
	// version a cancel covers.
	Version uint64 `json:"version,omitempty"`
	// Pending is the server's overall pending count after the change.
	Pending uint64 `json:"pending"`
	Fenced  bool   `json:"fenced,omitempty"`
}

// ValidObjectName reports whether s is a legal object name: 1..253 of [A-Za-z0-9._-].
func ValidObjectName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
