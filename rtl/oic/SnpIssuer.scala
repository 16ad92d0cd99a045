package apta

import chisel3._
import chisel3.util._

/** One invalidation round: the BISnps one commit (or one eviction) owes, §III-D1 "lazily after the
  * commit". The epochs are captured when the counters are incremented, so each BISnp carries the
  * addressee's epoch of that moment (`InvalidateSharers` sends `mepoch[c]` at once), even if the
  * server is fenced or rejoins before the BISnp leaves. */
class SnpRound(implicit p: AptaParams) extends Bundle {
  /** servers still to snoop (bit i = server i) */
  val targets = UInt(p.servers.W)
  val obj = UInt(p.objIdBits.W)
  /** the invalidated version's extent */
  val base = UInt(p.addrBits.W)
  val size = UInt(p.lineCountBits.W)
  /** every server's epoch when the round was created */
  val epochs = Vec(p.servers, UInt(p.epochBits.W))
}

/** OIC BISnp issue path: a queue of `snpRounds` rounds; the head round emits one ObjBISnp flit per
  * cycle (lowest server first) under io.snp backpressure and leaves the queue with its last BISnp.
  * The OTC accepts a request only while a round slot is free for it (`free`), so nothing overflows.
  */
class SnpIssuer(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** one invalidation round (targets, obj, extent) from the OTC */
    val enq = Flipped(Decoupled(new SnpRound))
    /** ObjBISnp flits */
    val snp = Decoupled(UInt(flitBits.W))
    /** round slots free (not counting the head leaving this cycle) */
    val free = Output(UInt(log2Up(p.snpRounds + 1).W))
    /** no round queued */
    val idle = Output(Bool())
  })
  val q = Module(new Queue(new SnpRound, p.snpRounds))
  q.io.enq <> io.enq
  assert(!io.enq.valid || io.enq.ready, "SnpIssuer: a round arrived without a free slot")

  // BISnps of the head round already sent (w_snp: the rest still to send)
  val sent = RegInit(0.U(p.servers.W))
  val head = q.io.deq.bits
  val left = head.targets & ~sent
  val who = PriorityEncoder(left)
  val whoOH = PriorityEncoderOH(left)
  val last = left === whoOH

  val m = Wire(new ObjBISnpMsg)
  m.server := who
  m.epoch := head.epochs(who)
  m.obj := head.obj
  m.base := head.base
  m.size := head.size
  io.snp.valid := q.io.deq.valid
  io.snp.bits := ObjBISnpMsg.toFlit(m)
  q.io.deq.ready := io.snp.ready && last
  when(io.snp.fire) { sent := Mux(last, 0.U, sent | whoOH) }
  assert(!q.io.deq.valid || left =/= 0.U, "SnpIssuer: a queued round has no target")

  io.free := p.snpRounds.U - q.io.count
  io.idle := !q.io.deq.valid
}
