package apta

import chisel3._
import chisel3.util._

/** A decoded flit: its opcode and the flit itself (fields are read with <Name>Msg.fromFlit). */
class DecodedFlit(implicit p: AptaParams) extends Bundle {
  /** message opcode (MsgOpcode), always a legal one */
  val opcode = UInt(MsgOpcode.width.W)
  /** the whole flit, legal in every field */
  val flit = UInt(Messages.flitBits.W)
}

/** Why a flit was refused. */
class FlitError(implicit p: AptaParams) extends Bundle {
  /** MsgError code (never MsgError.none when valid) */
  val code = UInt(MsgError.width.W)
  /** MsgField id of the first out-of-range field (fieldRange), else MsgField.none */
  val field = UInt(MsgField.width.W)
  /** opcode bits of the refused flit */
  val opcode = UInt(MsgOpcode.width.W)
}

/** Front door of every memory-server input channel: passes legal flits on, and refuses an illegal
  * one (unknown opcode, a field out of range, reserved bits set) with a defined error report
  * instead of a hang or a silent state change. A refused flit is consumed in the cycle it is
  * reported, so the channel never stalls on garbage. Priority of the report (as in the Python
  * codec, python/apta/messages.py `Schema.check`): unknown opcode, then the first field out of range in
  * schema order, then reserved bits.
  */
class MsgDecoder(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** raw flits from a channel */
    val in = Flipped(Decoupled(UInt(flitBits.W)))
    /** legal flits, in order */
    val out = Decoupled(new DecodedFlit)
    /** one report per refused flit; Valid: the error sink may not stall */
    val err = Valid(new FlitError)
  })

  val flit = io.in.bits
  val opcode = flit(MsgOpcode.width - 1, 0)

  // per message of the schema: is it this opcode, and (code, field) of its first problem
  val rows = Messages.table(flit).map { case (op, bits, ranges) =>
    val hit = opcode === op.U
    val reserved = if (bits < flitBits) flit(flitBits - 1, bits).orR else false.B
    val rangeBad = ranges.map(_._2).foldLeft(false.B)(_ || _)
    val firstField = PriorityMux(ranges.map(_._2) :+ true.B, ranges.map(_._1.U(MsgField.width.W)) :+ 0.U)
    val code = Mux(rangeBad, MsgError.fieldRange.U, Mux(reserved, MsgError.reservedBits.U, MsgError.none.U))
    (hit, code, Mux(rangeBad, firstField, 0.U))
  }
  val known = rows.map(_._1).reduce(_ || _)
  val code = Mux(known, Mux1H(rows.map(r => r._1 -> r._2)), MsgError.badOpcode.U(MsgError.width.W))
  val field = Mux(known, Mux1H(rows.map(r => r._1 -> r._3)), MsgField.none.U(MsgField.width.W))
  val legal = code === MsgError.none.U

  io.out.valid := io.in.valid && legal
  io.out.bits.opcode := opcode
  io.out.bits.flit := flit
  io.in.ready := io.out.ready || !legal   // an illegal flit is always consumed

  io.err.valid := io.in.valid && !legal
  io.err.bits.code := code
  io.err.bits.field := field
  io.err.bits.opcode := opcode

  assert(!(io.out.valid && io.err.valid), "a flit is either passed on or refused, never both")
}
