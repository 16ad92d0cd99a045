package controlplane

import (
	"fmt"
	"math/bits"
	"net/http"
)

// The conforming server's object-storage allocator: the memory server's (rtl/osc/ExtentAlloc.scala,
// rtl/MEMSERVER.md "Object storage allocation") in Go, so that POST /v1/objects answers the same
// bases and refusals as the daemon's RTL: segregated power-of-two size classes (class k holds
// extents of 2^k lines of 64 bytes), carved from a bump pointer over [Base, End), reused
// last-freed-first per class; a direct-mapped map of MapEntries slots (obj % MapEntries).

// ArenaConfig is the allocator's geometry (the RTL variant's linesPerObject, mapEntries,
// allocBase, and the DRAM size io_memBytes).
type ArenaConfig struct {
	LinesPerObject uint64
	MapEntries     uint64
	Base, End      uint64
}

// DefaultArena is the geometry of the CXL emulation's memory server (rtl/variants.json msemu:
// 4096-line objects, 131072 map entries, the arena after the 2 MiB map) over a 64 MiB data area.
var DefaultArena = ArenaConfig{LinesPerObject: 4096, MapEntries: 131072, Base: 2 << 20, End: 64 << 20}

// The memory server's refusals (schema/core.json MapUpdCode) and their HTTP answers.
const (
	CodeBadSize    = "badSize"
	CodeExists     = "exists"
	CodeCollision  = "collision"
	CodeNoSpace    = "noSpace"
	CodeUnknownObj = "unknownObj"
	CodeBusy       = "busy"
)

var refusalStatus = map[string]int{CodeBadSize: http.StatusBadRequest, CodeExists: http.StatusConflict,
	CodeCollision: http.StatusConflict, CodeNoSpace: http.StatusInsufficientStorage,
	CodeUnknownObj: http.StatusNotFound, CodeBusy: http.StatusConflict}

// refusal is a registration or removal the allocator refused: its MapUpdCode and the field.
type refusal struct {
	code, field, msg string
}

func (r *refusal) Error() string { return r.msg }

func refuse(code, field, format string, a ...any) error {
	return &refusal{code: code, field: field, msg: fmt.Sprintf(format, a...)}
}

type extent struct{ obj, base, size uint64 }

type arena struct {
	cfg   ArenaConfig
	bump  uint64
	free  map[int][]uint64
	slots map[uint64]extent // map slot -> the object there
}

func newArena(c ArenaConfig) *arena {
	return &arena{cfg: c, bump: c.Base, free: map[int][]uint64{}, slots: map[uint64]extent{}}
}

func sizeClass(size uint64) int { return bits.Len64(size - 1) } // ceil(log2 size), size >= 1

// register allocates size lines for obj: its base, or a refusal.
func (a *arena) register(obj, size uint64) (uint64, error) {
	if size == 0 || size > a.cfg.LinesPerObject {
		return 0, refuse(CodeBadSize, "size", "size %d: must be 1..%d lines", size, a.cfg.LinesPerObject)
	}
	if e, ok := a.slots[obj%a.cfg.MapEntries]; ok {
		if e.obj == obj {
			return 0, refuse(CodeExists, "obj", "object %d already registered", obj)
		}
		return 0, refuse(CodeCollision, "obj", "object %d: its map slot holds object %d", obj, e.obj)
	}
	k := sizeClass(size)
	ext := uint64(64) << k
	var base uint64
	if fl := a.free[k]; len(fl) > 0 {
		base, a.free[k] = fl[len(fl)-1], fl[:len(fl)-1]
	} else if a.bump+ext <= a.cfg.End {
		base, a.bump = a.bump, a.bump+ext
	} else {
		return 0, refuse(CodeNoSpace, "size", "no storage left for %d lines", size)
	}
	a.slots[obj%a.cfg.MapEntries] = extent{obj, base, size}
	return base, nil
}

// remove frees obj's extent (the caller has checked that no copies are outstanding).
func (a *arena) lookup(obj uint64) (extent, error) {
	e, ok := a.slots[obj%a.cfg.MapEntries]
	if !ok || e.obj != obj {
		return extent{}, refuse(CodeUnknownObj, "obj", "object %d not registered", obj)
	}
	return e, nil
}

func (a *arena) remove(e extent) {
	delete(a.slots, e.obj%a.cfg.MapEntries)
	k := sizeClass(e.size)
	a.free[k] = append(a.free[k], e.base)
}
