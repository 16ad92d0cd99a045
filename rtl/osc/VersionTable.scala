package apta

import chisel3._
import chisel3.util._

/** An object's new version at one of its commits (the wake-up event of the hold table) */
class VerEvent(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  /** the object's version after this commit */
  val ver = UInt(p.versionBits.W)
}

/** The version of every object: its commit count at the memory server (rtl/MEMSERVER.md
  * "Versioned gets"). One counter per object-map slot (obj % mapEntries): the map holds at most one
  * object per slot (a registration that collides is refused), so a slot's counter is its object's.
  * The OPC's commit increments it; a registration or removal (mapUpdDone ok) sets it to 0 (a new
  * object starts at version 0).
  *
  * Reset: every counter must read 0 afterwards, not only the registered objects' ones. A
  * registration's clear alone would not do: a get may name an object before its producer has
  * registered it (early placement), and the map in DRAM may be loaded without registrations (the
  * test benches' `put_map`); a stale counter >= the named version would then serve a get of an
  * object that has not been written. So the table is still swept, but a row at a time: the counters
  * are stored `rowSlots` (64) to a memory row and the sweep writes a whole row of zeros per cycle,
  * `mapEntries / 64` cycles (msemu's 131,072 slots: 2,048 cycles instead of 131,072; the model-sized
  * variants: 1 cycle). Commits and clears change one lane of a row (read, change, write back), so
  * the semantics are those of one counter per slot; `ready` is low during the sweep (the memory
  * server takes no input), so no state survives a reset.
  */
class VersionTable(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** a commit of this object (the OPC's Committed answer) */
    val commit = Flipped(Valid(UInt(p.objIdBits.W)))
    /** ... and the object's version after it (same cycle): wakes the held gets of that object */
    val bumped = Valid(new VerEvent)
    /** the object map registered or removed this object: its version restarts at 0 */
    val clear = Flipped(Valid(UInt(p.objIdBits.W)))
    /** the OSC's hold decision: the version of this object, this cycle's commit included */
    val rdObj = Input(UInt(p.objIdBits.W))
    val rdVer = Output(UInt(p.versionBits.W))
    /** the reset sweep is over */
    val ready = Output(Bool())
    /** `mutantPort` variants only (rtl/Mutants.scala): the deliberate bug to switch on */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val mut = new MutantSel(io.mutant)
  val E = p.mapEntries
  require(isPow2(E), "the slot of an object is its id's low bits")
  val W = E min VersionTable.rowSlots                 // counters per row
  val R = E / W                                       // rows
  def slot(o: UInt): UInt = if (E == 1) 0.U else o(log2Ceil(E) - 1, 0)
  def row(o: UInt): UInt = if (R == 1) 0.U else slot(o)(log2Ceil(E) - 1, log2Ceil(W))
  def lane(o: UInt): UInt = if (W == 1) 0.U else slot(o)(log2Ceil(W) - 1, 0)
  // Rows are written whole (no write masks: firtool drops a Mem's masks, so a masked write would
  // clobber the row's other counters): a commit or clear reads its row and writes it back with one
  // lane changed.
  val vers = Mem(R, Vec(W, UInt(p.versionBits.W)))
  val sweeping = RegInit(true.B)
  val sweep = RegInit(0.U(log2Up(R).W))
  io.ready := !sweeping
  val zeros = VecInit(Seq.fill(W)(0.U(p.versionBits.W)))
  when(sweeping) {
    // the mutant clears lane 0 of each row only: every other slot keeps what it held before the reset
    val old = vers(sweep)
    vers(sweep) := Mux(mut.on(Mutants.holdSweepLane0), VecInit(old.zipWithIndex.map { case (v, i) =>
      if (i == 0) 0.U else v }), zeros)
    sweep := sweep + 1.U
    when(sweep === (R - 1).U) { sweeping := false.B }
  }
  val comRow = vers(row(io.commit.bits))
  val next = comRow(lane(io.commit.bits)) + 1.U       // wraps at 2^versionBits (messages.json)
  io.bumped.valid := io.commit.valid
  io.bumped.bits.obj := io.commit.bits
  io.bumped.bits.ver := next
  // a registration or removal of one object may meet a commit of another (never of the same slot: a
  // removal is refused while a put of it is staged, a registration precedes its puts); when both
  // fall in one row they are one write, so the two write ports never name the same row
  val clr = !sweeping && io.clear.valid
  val com = !sweeping && io.commit.valid && !(io.clear.valid && slot(io.clear.bits) === slot(io.commit.bits))
  val sameRow = clr && com && row(io.clear.bits) === row(io.commit.bits)
  when(com) {
    vers(row(io.commit.bits)) := VecInit(comRow.zipWithIndex.map { case (v, i) =>
      Mux(lane(io.commit.bits) === i.U, next, Mux(sameRow && lane(io.clear.bits) === i.U, 0.U, v)) })
  }
  when(clr && !sameRow) {
    val clrRow = vers(row(io.clear.bits))
    vers(row(io.clear.bits)) := VecInit(clrRow.zipWithIndex.map { case (v, i) => Mux(lane(io.clear.bits) === i.U, 0.U, v) })
  }
  assert(!sweeping || !io.commit.valid, "no commit during the reset sweep")
  io.rdVer := Mux(io.commit.valid && slot(io.commit.bits) === slot(io.rdObj), next,
    vers(row(io.rdObj))(lane(io.rdObj)))
}

object VersionTable {
  /** counters per memory row: the reset sweep clears a row per cycle */
  val rowSlots = 64
}
