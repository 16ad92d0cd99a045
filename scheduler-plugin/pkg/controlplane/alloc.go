package controlplane

import (
	"fmt"
	"math/bits"
	"net/http"

	"github.com/apta/scheduler-plugin/pkg/schema"
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

// DefaultArena is the geometry of the CXL emulation's memory server, the RTL variant msemu
// (schema.Msemu, generated from rtl/variants.json over schema/params.json), over a 64 MiB data area.
var DefaultArena = ArenaConfig{
	LinesPerObject: uint64(schema.Msemu.LinesPerObject),
	MapEntries:     uint64(schema.Msemu.MapEntries),
	Base:           allocBase(schema.Msemu),
	End:            64 << 20,
}

// allocBase is where the RTL's arena starts (rtl/AptaParams.scala allocBase): the first 4 KiB
// boundary after the object map's 16-byte entries.
func allocBase(p schema.Params) uint64 {
	const entryBytes, align = 16, 4096
	end := uint64(p.MapBase) + uint64(p.MapEntries)*entryBytes
	return (end + align - 1) / align * align
}

// refusalStatus is the HTTP answer to each refusal, as schema/controlplane.yaml (registerObject)
// and the daemon give it; TestRefusalStatusIsTheSpecs: every MapUpdCode but ok has one.
var refusalStatus = map[schema.MapUpdCode]int{
	schema.MapUpdCodeBadSize:    http.StatusBadRequest,
	schema.MapUpdCodeExists:     http.StatusConflict,
	schema.MapUpdCodeCollision:  http.StatusConflict,
	schema.MapUpdCodeNoSpace:    http.StatusInsufficientStorage,
	schema.MapUpdCodeUnknownObj: http.StatusNotFound,
	schema.MapUpdCodeBusy:       http.StatusConflict,
	schema.MapUpdCodeBadEntry:   http.StatusConflict,
}

// refusal is a registration or removal the allocator refused: its MapUpdCode and the field.
type refusal struct {
	code       schema.MapUpdCode
	field, msg string
}

func (r *refusal) Error() string { return r.msg }

func refuse(code schema.MapUpdCode, field, format string, a ...any) error {
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
		return 0, refuse(schema.MapUpdCodeBadSize, "size", "size %d: must be 1..%d lines", size, a.cfg.LinesPerObject)
	}
	if e, ok := a.slots[obj%a.cfg.MapEntries]; ok {
		if e.obj == obj {
			return 0, refuse(schema.MapUpdCodeExists, "obj", "object %d already registered", obj)
		}
		return 0, refuse(schema.MapUpdCodeCollision, "obj", "object %d: its map slot holds object %d", obj, e.obj)
	}
	k := sizeClass(size)
	ext := uint64(64) << k
	var base uint64
	if fl := a.free[k]; len(fl) > 0 {
		base, a.free[k] = fl[len(fl)-1], fl[:len(fl)-1]
	} else if a.bump+ext <= a.cfg.End {
		base, a.bump = a.bump, a.bump+ext
	} else {
		return 0, refuse(schema.MapUpdCodeNoSpace, "size", "no storage left for %d lines", size)
	}
	a.slots[obj%a.cfg.MapEntries] = extent{obj, base, size}
	return base, nil
}

// remove frees obj's extent (the caller has checked that no copies are outstanding).
func (a *arena) lookup(obj uint64) (extent, error) {
	e, ok := a.slots[obj%a.cfg.MapEntries]
	if !ok || e.obj != obj {
		return extent{}, refuse(schema.MapUpdCodeUnknownObj, "obj", "object %d not registered", obj)
	}
	return e, nil
}

func (a *arena) remove(e extent) {
	delete(a.slots, e.obj%a.cfg.MapEntries)
	k := sizeClass(e.size)
	a.free[k] = append(a.free[k], e.base)
}
