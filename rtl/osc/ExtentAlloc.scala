package apta

import chisel3._
import chisel3.util._

/** The memory server's object-storage allocator (rtl/MEMSERVER.md "Object storage allocation"; the
  * size-class arenas of Memento, in the memory server): segregated power-of-two size classes, class
  * k holding extents of 2^k lines (k = 0 .. log2 linesPerObject), carved on demand from one bump
  * pointer that runs from `allocBase` (the first 4 KiB boundary after the object map) up to the DRAM
  * capacity `memBytes`, and reused through one LIFO free list per class whose links live in the
  * first 8 bytes of each free extent (DRAM the memory server alone writes). On-chip state: the bump
  * pointer and one head per class, whatever the number of objects; every operation is O(1).
  *
  * The object map's update path (ObjMap) drives it: it reads `cls`/`head`/`carveOk` for the size it
  * holds, then pulses `carve`, `pop` (with the link it read from DRAM) or `push` (a freed extent).
  * No overlap by construction: the bump pointer only grows, and an extent is on at most one free
  * list or in at most one map entry (ObjMap frees only a well-formed entry it has just invalidated).
  */
class ExtentAlloc(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** DRAM capacity in bytes (a configuration strap): nothing is carved at or beyond it */
    val memBytes = Input(UInt(p.addrBits.W))
    /** the size (lines) the caller asks about */
    val size = Input(UInt(16.W))
    /** 1 <= size <= linesPerObject */
    val sizeOk = Output(Bool())
    /** its size class: ceil(log2 size) */
    val cls = Output(UInt(p.allocClassBits.W))
    /** the head of that class's free list (0: empty) */
    val head = Output(UInt(p.addrBits.W))
    /** an extent of that class fits between the bump pointer and memBytes */
    val carveOk = Output(Bool())
    /** where it would be carved (the bump pointer) */
    val bump = Output(UInt(p.addrBits.W))
    /** carve one extent of class `cls` at `bump` */
    val carve = Input(Bool())
    /** take the head of class `cls`'s list; the new head is the link read from it */
    val pop = Input(Valid(UInt(p.addrBits.W)))
    /** return the extent at this base to class `cls`'s list (ObjMap then writes the old head into it) */
    val push = Input(Valid(UInt(p.addrBits.W)))
    /** `link` (read from a free extent) is 0 or the base of an extent carved so far */
    val link = Input(UInt(p.addrBits.W))
    val linkOk = Output(Bool())
    /** `size`-line extent at `link` lies wholly inside what was carved so far (a removal's check) */
    val extentOk = Output(Bool())
    /** `mutantPort` variants only (rtl/Mutants.scala) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val mut = new MutantSel(io.mutant)
  val lineShift = log2Ceil(p.lineBytes)
  val bump = RegInit(p.allocBase.U(p.addrBits.W))
  val heads = RegInit(VecInit(Seq.fill(p.allocClasses)(0.U(p.addrBits.W))))

  io.sizeOk := io.size =/= 0.U && io.size <= p.linesPerObject.U
  // ceil(log2 size); sizes beyond the largest class are refused by sizeOk, so clamp for indexing
  val cls = Mux(io.size <= 1.U, 0.U, Log2(io.size - 1.U) +& 1.U)
  io.cls := Mux(io.sizeOk, cls, 0.U)(p.allocClassBits - 1, 0)
  val extBytes = (1.U((p.addrBits + 1).W) << (io.cls +& lineShift.U))(p.addrBits, 0)
  io.head := heads(io.cls)
  io.bump := bump
  val end = bump +& extBytes
  // alloc_no_exhaustion: the capacity check is gone, extents are carved beyond the DRAM
  io.carveOk := end <= io.memBytes || mut.on(Mutants.allocNoExhaustion)
  val aligned = io.link(lineShift - 1, 0) === 0.U
  io.linkOk := io.link === 0.U || (io.link >= p.allocBase.U && io.link < bump && aligned)
  io.extentOk := io.sizeOk && io.link >= p.allocBase.U && aligned && io.link +& extBytes <= bump

  // alloc_overlap: the bump pointer is not advanced, so the next carve hands out the same extent
  when(io.carve && !mut.on(Mutants.allocOverlap)) { bump := end }
  when(io.pop.valid) { heads(io.cls) := io.pop.bits }
  when(io.push.valid) { heads(io.cls) := io.push.bits }
  assert(!(io.carve && io.pop.valid) && !(io.push.valid && (io.carve || io.pop.valid)), "one allocator operation per cycle")
  assert(!io.carve || io.carveOk, "a carve only where it fits")
}
