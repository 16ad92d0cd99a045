package apta

import chisel3._
import chisel3.util._

/** OTC: the set-associative object directory (§III-D1, Fig. 6) with the OIC's per-(object, server)
  * counters in each entry, as a two-stage pipeline:
  *
  *   S0 (accept)  the op enters; the set is read from the SyncReadMem (data next cycle)
  *   S1 (update)  DirUpdate applies the protocol table to the set; the set is written back; the
  *                answer (resp / ackResult / queryResp / BISnp round) leaves this cycle
  *
  * One op per cycle, whatever the sets: an op reading the set S1 writes in the same cycle (where
  * the memory's read-during-write is undefined) takes S1's result from a forwarding register
  * instead. After reset the directory clears itself, one set per cycle (`ready` low meanwhile).
  */
class Otc(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** S0: the arbiter's choice (the core only sends when `ready`) */
    val in = Flipped(Valid(new PipeOp))
    /** the directory is initialised */
    val ready = Output(Bool())
    /** the ServerTable's fenced bits */
    val fenced = Input(UInt(p.servers.W))
    /** the ServerTable's current epochs */
    val epochs = Input(Vec(p.servers, UInt(p.epochBits.W)))
    /** `mutantPort` variants only: the deliberate bug to switch on (rtl/Mutants.scala) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None

    /** S1 holds an op (s1Req: a request, which produces a resp and maybe a round this cycle) */
    val s1Valid = Output(Bool())
    val s1Req = Output(Bool())
    /** S1: the answer to a request */
    val resp = Valid(new CoreResp)
    /** S1: a malformed request (MsgField of the bad field) */
    val reqErr = Valid(UInt(MsgField.width.W))
    /** S1: an ack's outcome */
    val ackResult = Valid(new AckResult)
    /** S1: a query's entry */
    val query = Valid(new QueryResp)
    /** S1: an invalidation round to send (commit with other sharers, or eviction) */
    val round = Valid(new SnpRound)
    /** S1: an applied ack (that server owes one less) */
    val pendDec = Valid(UInt(p.serverBits.W))
  })
  val mem = SyncReadMem(p.dirSets, Vec(p.dirWays, new DirEntry))

  // ---- reset: clear every set (I = free) ---------------------------------------------------------
  val initSet = RegInit(0.U(p.setIdxBits.W))
  val initDone = RegInit(false.B)
  io.ready := initDone
  assert(!io.in.valid || initDone, "OTC: op before the directory was cleared")

  // ---- S0 -> S1 -------------------------------------------------------------------------------------
  val rdata = mem.read(io.in.bits.set, io.in.valid)
  val s1Valid = RegNext(io.in.valid, false.B)
  val s1 = RegEnable(io.in.bits, io.in.valid)

  // forwarding: the set S1 wrote last cycle, which the memory read of that cycle may not have seen
  // (firtool's simulation model returns the new data; a read-first SRAM the old: rtl/testbench/sram.py)
  val fwdValid = RegInit(false.B)
  val fwdSet = Reg(UInt(p.setIdxBits.W))
  val fwdWays = Reg(Vec(p.dirWays, new DirEntry))
  // (the hand-made mutant's gate only in the `mutants` variants: elsewhere the Verilog, and the
  // generated mutants' keys read from its statements, stay as they were)
  val ways =
    if (!p.mutantPort) Mux(fwdValid && fwdSet === s1.set, fwdWays, rdata)
    else Mux(fwdValid && fwdSet === s1.set && !new MutantSel(io.mutant).on(Mutants.otcNoForward), fwdWays, rdata)

  val upd = Module(new DirUpdate)
  upd.io.op := s1
  upd.io.ways := ways
  upd.io.fenced := io.fenced
  upd.io.epochs := io.epochs
  upd.io.mutant.foreach(_ := io.mutant.get)

  val write = s1Valid && s1.kind =/= PipeKind.Query
  when(!initDone) {
    val zero = 0.U.asTypeOf(Vec(p.dirWays, new DirEntry))
    mem.write(initSet, zero)
    initSet := initSet + 1.U
    when(initSet === (p.dirSets - 1).U) { initDone := true.B }
  }.elsewhen(write) {
    mem.write(s1.set, upd.io.newWays)
  }
  fwdValid := write
  fwdSet := s1.set
  fwdWays := upd.io.newWays

  // The model's structural invariants (spec/murphi/apta.m; the scoreboard's checks of the same name,
  // rtl/testbench/core_scoreboard.py) on every set as it is written back, so a wrong transition stops the
  // simulation on the cycle it happens. Chisel emits them under `ifndef SYNTHESIS`: checked in every
  // simulation, absent from synthesis.
  when(write) {
    for (w <- upd.io.newWays) {
      val live = w.state =/= DirState.I
      val owes = w.pend.map(_ =/= 0.U).reduce(_ || _)
      val transient = w.state === DirState.SA || w.state === DirState.SI
      assert(!live || !owes || transient, "pend-only-in-SA-SI: acks are owed only for an entry in S^A or SI")
      assert(!live || owes || !transient, "idle-entry-stable: an entry in S^A or SI waits for some ack")
      assert(!live || w.state =/= DirState.SI || w.sharers === 0.U, "SI-no-sharers: an entry being evicted has no sharers")
    }
    when(s1.kind === PipeKind.Fence) {
      val f = s1.req.server
      for (w <- upd.io.newWays)
        assert(w.state === DirState.I || (w.pend(f) === 0.U && !w.sharers(f)),
          "fenced-owes-nothing: the fence walk retires the server's acks and copies in every set")
    }
  }

  // ---- S1 outputs -----------------------------------------------------------------------------------
  val isReq = s1.kind === PipeKind.Req
  io.s1Valid := s1Valid
  io.s1Req := s1Valid && isReq
  io.resp.valid := s1Valid && isReq
  io.resp.bits := upd.io.resp
  io.reqErr.valid := s1Valid && isReq && upd.io.reqErr.valid
  io.reqErr.bits := upd.io.reqErr.bits
  io.ackResult.valid := s1Valid && s1.kind === PipeKind.Ack
  io.ackResult.bits := upd.io.ackResult
  io.query.valid := s1Valid && s1.kind === PipeKind.Query
  io.query.bits := upd.io.query
  io.round.valid := s1Valid && upd.io.round.valid
  io.round.bits := upd.io.round.bits
  io.pendDec.valid := s1Valid && upd.io.pendDec.valid
  io.pendDec.bits := upd.io.pendDec.bits
}
