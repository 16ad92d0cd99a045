package apta

import chisel3._
import chisel3.util._

/** OIC per-server state (§III-D2, the scheduler's query): the current epoch, the fenced flag and
  * the total of acks the server owes over all objects (`PendingAt` of the model, kept as a sum so
  * the status answer needs no directory walk). Registers; `status` is wires from them.
  */
class ServerTable(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** one more ack owed by each server set here (a BISnp round was created) */
    val inc = Input(UInt(p.servers.W))
    /** an applied ack: that server owes one less */
    val dec = Input(Valid(UInt(p.serverBits.W)))
    /** a fence starts: the server is fenced; `clear` retires its counters (all of them are cleared
      * by the walk that follows) */
    val fence = Input(Valid(UInt(p.serverBits.W)))
    /** with `fence`: clear the server's total of owed acks (the walk clears the entries) */
    val fenceClears = Input(Bool())
    /** a Rejoin completes: epoch + 1, unfenced (`MS: Rejoin`); never for a server at the last
      * epoch value (CtrlUnit refuses that Rejoin) */
    val rejoin = Input(Valid(UInt(p.serverBits.W)))
    /** the `epoch_wraps` mutant only: an epoch may wrap (the design without the rule) */
    val mayWrap = Input(Bool())

    /** bit i: server i is fenced */
    val fenced = Output(UInt(p.servers.W))
    /** each server's current epoch */
    val epochs = Output(Vec(p.servers, UInt(p.epochBits.W)))
    /** bit i: server i owes some ack */
    val pending = Output(UInt(p.servers.W))
    /** acks each server owes over all objects (the sum the pending bit is read from) */
    val total = Output(Vec(p.servers, UInt(p.totalPendBits.W)))
  })
  val epoch = RegInit(VecInit(Seq.fill(p.servers)(0.U(p.epochBits.W))))
  val fenced = RegInit(VecInit(Seq.fill(p.servers)(false.B)))
  val total = RegInit(VecInit(Seq.fill(p.servers)(0.U(p.totalPendBits.W))))

  for (i <- 0 until p.servers) {
    val dec = io.dec.valid && io.dec.bits === i.U
    val clear = io.fence.valid && io.fence.bits === i.U && io.fenceClears
    // a round or ack still in the OTC's last stage was accepted before the fence: clear wins
    assert(!dec || total(i) =/= 0.U, "an applied ack for a server that owes nothing")
    total(i) := Mux(clear, 0.U, total(i) + io.inc(i) - dec)
    when(io.fence.valid && io.fence.bits === i.U) { fenced(i) := true.B }
    when(io.rejoin.valid && io.rejoin.bits === i.U) {
      fenced(i) := false.B
      // a wide incarnation number, never reused while the memory server runs (rtl/README.md "Epochs")
      assert(io.mayWrap || !epoch(i).andR, "an epoch never wraps: a Rejoin at the last value is refused")
      epoch(i) := epoch(i) + 1.U
    }
  }
  io.fenced := fenced.asUInt
  io.epochs := epoch
  io.pending := VecInit(total.map(_ =/= 0.U)).asUInt
  io.total := total
}
