package apta

import chisel3._
import chisel3.util._

/** OIC control plane: Fence and Rejoin flits (rules "FD fence" and "MS: Rejoin", procedure `Fence`).
  *
  * A Fence of the server's current epoch (and not yet fenced) fences it at once (so nothing of it is
  * accepted after), then walks every directory set through the OTC pipeline, one set per cycle,
  * retiring the server's counters and sharer bits and settling what that completes; the core
  * accepts nothing else meanwhile. A stale Fence (other epoch, or already fenced) changes nothing.
  * Either way the Fence flit is echoed on `resp` once its effects are visible. A Rejoin fences
  * first when the server is not fenced, then starts its next epoch, unfenced, and answers
  * RejoinAck with the new epoch.
  *
  * Epochs are wide incarnation numbers that are never reused while the memory server runs: a
  * Rejoin of a server whose epoch is already the last value (all ones) fences it like any Rejoin
  * but grants no epoch; the server stays fenced in that epoch and is answered RejoinRefused. Only a
  * reset (which empties every channel of the link) returns epochs to 0. So no epoch value is ever
  * granted twice and the model's guard on reuse (`EpochReusable`, spec/murphi/apta.m) holds
  * trivially: rtl/README.md "Epochs".
  */
class CtrlUnit(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** legal Fence or Rejoin flits only (the core refuses other opcodes) */
    val in = Flipped(Decoupled(new DecodedFlit))
    /** the ServerTable's fenced bits */
    val fenced = Input(UInt(p.servers.W))
    /** the ServerTable's current epochs */
    val epochs = Input(Vec(p.servers, UInt(p.epochBits.W)))
    /** the `epoch_wraps` mutant only (rtl/Mutants.scala): the last epoch is not special, a Rejoin
      * there wraps to 0 (the design without the rule); false in the real design */
    val wraps = Input(Bool())

    /** one set of the fence walk; the core's arbiter gives it priority, so it always enters */
    val walk = Valid(new Bundle {
      /** the set this cycle's walk step visits */
      val set = UInt(p.setIdxBits.W)
      /** the server being fenced */
      val server = UInt(p.serverBits.W)
    })
    /** to the ServerTable: fence starts / rejoin completes */
    val fence = Valid(UInt(p.serverBits.W))
    /** a Rejoin completes for this server (epoch + 1, unfenced) */
    val rejoin = Valid(UInt(p.serverBits.W))
    /** Fence echo, RejoinAck or RejoinRefused */
    val resp = Decoupled(UInt(flitBits.W))
    /** a walk is in progress (the core accepts nothing else) */
    val busy = Output(Bool())
  })
  val sIdle :: sWalk :: sDrain :: Nil = Enum(3)
  val state = RegInit(sIdle)
  val server = Reg(UInt(p.serverBits.W))
  val isRejoin = Reg(Bool())
  val set = RegInit(0.U(p.setIdxBits.W))

  // the pending answer (s_resp: still to send)
  val respValid = RegInit(false.B)
  val respRejoinAck = Reg(Bool())
  val respRefused = Reg(Bool())     // with respRejoinAck: RejoinRefused instead
  val respServer = Reg(UInt(p.serverBits.W))
  val respEpoch = Reg(UInt(p.epochBits.W))

  io.fence.valid := false.B
  io.fence.bits := server
  io.rejoin.valid := false.B
  io.rejoin.bits := server
  io.walk.valid := state === sWalk
  io.walk.bits.set := set
  io.walk.bits.server := server
  io.busy := state =/= sIdle
  io.in.ready := state === sIdle && !respValid

  def answer(rejoinAck: Boolean, s: UInt, e: UInt, refused: Bool = false.B): Unit = {
    respValid := true.B
    respRejoinAck := rejoinAck.B
    respRefused := refused
    respServer := s
    respEpoch := e
  }
  /** the server's epoch is the last value: a Rejoin grants nothing (never wraps) */
  def exhausted(s: UInt): Bool = io.epochs(s).andR && !io.wraps

  switch(state) {
    is(sIdle) {
      when(io.in.fire) {
        // Fence and Rejoin both start with (server, epoch)
        val f = FenceMsg.fromFlit(io.in.bits.flit)
        val s = f.server
        val live = !io.fenced(s)
        when(io.in.bits.opcode === MsgOpcode.Fence.U) {
          when(live && f.epoch === io.epochs(s)) {
            io.fence.valid := true.B
            io.fence.bits := s
            server := s
            isRejoin := false.B
            state := sWalk                                   // answered after the walk
          }.otherwise {
            answer(rejoinAck = false, s, f.epoch)            // stale: echoed at once, no change
          }
        }.otherwise {                                          // Rejoin
          when(live) {
            io.fence.valid := true.B
            io.fence.bits := s
            server := s
            isRejoin := true.B
            state := sWalk
          }.elsewhen(exhausted(s)) {
            answer(rejoinAck = true, s, io.epochs(s), refused = true.B)   // stays fenced
          }.otherwise {
            io.rejoin.valid := true.B
            io.rejoin.bits := s
            answer(rejoinAck = true, s, io.epochs(s) + 1.U)
          }
        }
      }
    }
    is(sWalk) {
      set := set + 1.U
      when(set === (p.dirSets - 1).U) {
        set := 0.U
        state := sDrain
      }
    }
    is(sDrain) {
      // the walk's last set is written at the end of this cycle: answer from the next one
      state := sIdle
      when(isRejoin && exhausted(server)) {
        answer(rejoinAck = true, server, io.epochs(server), refused = true.B)   // fenced, stays so
      }.elsewhen(isRejoin) {
        io.rejoin.valid := true.B
        answer(rejoinAck = true, server, io.epochs(server) + 1.U)
      }.otherwise {
        answer(rejoinAck = false, server, io.epochs(server))
      }
    }
  }
  val fenceMsg = Wire(new FenceMsg)
  fenceMsg.server := respServer
  fenceMsg.epoch := respEpoch
  val ackMsg = Wire(new RejoinAckMsg)
  ackMsg.server := respServer
  ackMsg.epoch := respEpoch
  io.resp.valid := respValid
  val refusedMsg = Wire(new RejoinRefusedMsg)
  refusedMsg.server := respServer
  refusedMsg.epoch := respEpoch
  io.resp.bits := Mux(!respRejoinAck, FenceMsg.toFlit(fenceMsg),
    Mux(respRefused, RejoinRefusedMsg.toFlit(refusedMsg), RejoinAckMsg.toFlit(ackMsg)))
  when(io.resp.fire) { respValid := false.B }
}
