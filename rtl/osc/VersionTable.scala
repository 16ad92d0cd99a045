package apta

import chisel3._
import chisel3.util._

/** An object's new version at one of its commits (the wake-up event of the hold table) */
class VerEvent(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  /** the object's version after this commit */
  val ver = UInt(p.versionBits.W)
}

/** The version of every object: its commit count at the memory server (issue 19, rtl/MEMSERVER.md
  * "Versioned gets"). One counter per object-map slot (obj % mapEntries): the map holds at most one
  * object per slot (a registration that collides is refused), so a slot's counter is its object's.
  * The OPC's commit increments it; a registration or removal (mapUpdDone ok) sets it to 0 (a new
  * object starts at version 0). After reset the table clears itself, one slot per cycle (`ready`
  * low meanwhile: the memory server takes no input), so no state survives a reset.
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
  })
  val E = p.mapEntries
  def idx(o: UInt): UInt = if (E == 1) 0.U else o(log2Ceil(E) - 1, 0)
  val vers = Mem(E, UInt(p.versionBits.W))
  val sweeping = RegInit(true.B)
  val sweep = RegInit(0.U(log2Up(E).W))
  io.ready := !sweeping
  when(sweeping) {
    vers(sweep) := 0.U
    sweep := sweep + 1.U
    when(sweep === (E - 1).U) { sweeping := false.B }
  }
  val next = vers(idx(io.commit.bits)) + 1.U          // wraps at 2^versionBits (messages.json)
  io.bumped.valid := io.commit.valid
  io.bumped.bits.obj := io.commit.bits
  io.bumped.bits.ver := next
  // two write ports: a registration or removal of one object may meet a commit of another (never of
  // the same one: a removal is refused while a put of it is staged, a registration precedes its puts)
  val sameSlot = io.clear.valid && io.commit.valid && idx(io.clear.bits) === idx(io.commit.bits)
  when(!sweeping && io.clear.valid) { vers(idx(io.clear.bits)) := 0.U }
  when(!sweeping && io.commit.valid && !sameSlot) { vers(idx(io.commit.bits)) := next }
  assert(!sweeping || !io.commit.valid, "no commit during the reset sweep")
  io.rdVer := Mux(io.commit.valid && idx(io.commit.bits) === idx(io.rdObj), next, vers(idx(io.rdObj)))
}
