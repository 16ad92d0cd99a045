package apta

import chisel3._
import chisel3.util._

/** Staging slot states */
object SlotSt extends ChiselEnum {
  val Free = Value        // (reset: a zeroed slot is free)
  val Open = Value        // prepared, lines arriving
  val Complete = Value    // every line arrived, commit not yet asked (or Stall'd)
  val Committing = Value  // Commit sent to the core, answer awaited
  val Draining = Value    // committed: lines going to DRAM (the OSC may forward them)
}

/** OPC: one-phase commit (rtl/MEMSERVER.md "OPC"; the model's OPC rules). `stagingSlots` slots of
  * `linesPerObject` lines, keyed by (writer, txn); a complete slot commits through the
  * core (Commit) when no other slot of its object is committing or draining and the OSC is not
  * serving it; PutCommit leaves at once; then the lines drain to DRAM (AXI id 2, one slot at a
  * time) and the slot is freed unless the OSC has it pinned.
  */
class Opc(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** PutPrepare / PutLine flits (legal, this server's port, current epoch) */
    val in = Flipped(Decoupled(new DecodedFlit))
    /** object map lookup of a PutPrepare's object */
    val lk = Decoupled(UInt(p.objIdBits.W))
    /** its extent, or why it is invalid */
    val lkRes = Flipped(Valid(new MapResult))
    /** Commit requests to the coherence core */
    val coreReq = Decoupled(new CoreReq)
    /** the core's answers to them */
    val coreResp = Flipped(Decoupled(new CoreResp))
    /** drain: committed lines to DRAM */
    val wr = Decoupled(new MemWr)
    /** one pulse per completed DRAM write */
    val wrDone = Input(Bool())
    /** PutCommit, PutRetry, ObjErr flits */
    val rsp = Decoupled(UInt(flitBits.W))
    /** refused PutLines, zombie puts, aborted transactions (MsErrCode) */
    val err = Decoupled(new MsErr)
    /** the core's fenced bits (open puts of a fenced writer are aborted) */
    val fenced = Input(UInt(p.servers.W))
    /** the core's current epochs (puts of an older epoch are zombies) */
    val epochs = Input(Vec(p.servers, UInt(p.epochBits.W)))
    /** the object the OSC is serving: not committed meanwhile (get/commit interlock) */
    val oscBusy = Flipped(Valid(UInt(p.objIdBits.W)))
    /** the OSC asks to pin the draining slot of its object, to forward it */
    val pinReq = Input(Bool())
    /** the pinned slot, if that object has one draining */
    val pinHit = Valid(UInt(p.slotBits.W))
    /** the OSC reads a line of the pinned slot */
    val stRd = Input(new StageRd)
    /** that line */
    val stData = Output(UInt(p.dataBits.W))
    /** an object the object map is removing ... */
    val probe = Input(UInt(p.objIdBits.W))
    /** ... has a staging slot in use here (open, complete, committing or draining) */
    val probeHit = Output(Bool())
    /** committed puts (the control plane's commit sequence number) */
    val commitSeq = Output(UInt(p.commitSeqBits.W))
    /** the object of this cycle's commit (the version table counts it; the hold table wakes on it) */
    val committed = Valid(UInt(p.objIdBits.W))
    /** the object of an open put aborted because its writer was fenced or rejoined */
    val fenceAbort = Valid(UInt(p.objIdBits.W))
    /** no open, committing or draining slot */
    val idle = Output(Bool())
    /** `mutantPort` variants only: the deliberate bug to switch on (rtl/Mutants.scala) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val mut = new MutantSel(io.mutant)
  val S = p.stagingSlots
  val L = p.linesPerObject
  class Slot extends Bundle {
    val st = SlotSt()
    val owner = UInt(p.serverBits.W)
    val epoch = UInt(p.epochBits.W)
    val obj = UInt(p.objIdBits.W)
    val txn = UInt(p.txnBits.W)
    val base = UInt(p.addrBits.W)
    val size = UInt(p.lineCountBits.W)
    /** bit l: line l staged */
    val got = UInt(L.W)
  }
  val slots = RegInit(VecInit(Seq.fill(S)(0.U.asTypeOf(new Slot))))
  val stage = Mem(S * L, UInt(p.dataBits.W))
  def at(slot: UInt, line: UInt): UInt = slot * L.U + line
  def isSt(s: Slot, st: SlotSt.Type): Bool = s.st === st
  io.probeHit := slots.map(s => !isSt(s, SlotSt.Free) && s.obj === io.probe).reduce(_ || _)
  def sizeMask(size: UInt): UInt = ((1.U((L + 1).W) << size) - 1.U)(L - 1, 0)

  // a transaction (writer, txn) has at most one open or complete slot: a retry reuses it (the model's
  // idempotent retry keyed by transaction id); not synthesized
  for (i <- 0 until S; j <- i + 1 until S) {
    def inTxn(s: Slot): Bool = isSt(s, SlotSt.Open) || isSt(s, SlotSt.Complete)
    assert(!(inTxn(slots(i)) && inTxn(slots(j)) && slots(i).owner === slots(j).owner && slots(i).txn === slots(j).txn),
      "opc-one-slot-per-txn: two open slots of one (writer, txn)")
  }

  val commitSeq = RegInit(0.U(p.commitSeqBits.W))
  io.commitSeq := commitSeq
  io.stData := stage(at(io.stRd.slot, io.stRd.line))

  // outputs: answers and error reports of the three paths (commit, input, timeout), arbitrated
  val rspArb = Module(new Arbiter(UInt(flitBits.W), 3))
  val rspQ = Module(new Queue(UInt(flitBits.W), 2))
  rspQ.io.enq <> rspArb.io.out
  io.rsp <> rspQ.io.deq
  val errArb = Module(new Arbiter(new MsErr, 3))
  io.err <> errArb.io.out
  for (k <- 0 until 3) {
    rspArb.io.in(k).valid := false.B
    rspArb.io.in(k).bits := 0.U
    errArb.io.in(k).valid := false.B
    errArb.io.in(k).bits := 0.U.asTypeOf(new MsErr)
  }
  def rspFlit(op: Int, s: Slot): UInt = {
    val m = Wire(new PutCommitMsg)     // PutCommit and PutRetry have the same fields
    m.server := s.owner
    m.epoch := s.epoch
    m.obj := s.obj
    m.txn := s.txn
    PutCommitMsg.toFlit(m) & ~((1 << MsgOpcode.width) - 1).U(flitBits.W) | op.U
  }

  // ---- input: PutPrepare (translate, then open / reuse / PutRetry / ObjErr) and PutLine ----------
  val sIn :: sLook :: sLookW :: sAct :: Nil = Enum(4)
  val inState = RegInit(sIn)
  val prep = Reg(new PutPrepareMsg)
  val res = Reg(new MapResult)
  val isPrep = io.in.bits.opcode === MsgOpcode.PutPrepare.U
  val line = PutLineMsg.fromFlit(io.in.bits.flit)
  // a transaction is keyed by (writer, txn); a writer may have several open
  val ownOpen = slots.map(s => isSt(s, SlotSt.Open) && s.owner === line.server && s.txn === line.txn)
  val hasOpen = ownOpen.reduce(_ || _)
  val oi = PriorityEncoder(ownOpen)
  val os = slots(oi)
  val lineErr = !hasOpen || os.obj =/= line.obj || line.line >= os.size
  val lineObjErr = hasOpen && os.obj === line.obj && line.line >= os.size
  // a PutLine is taken when its error report (and ObjErr) can leave this cycle
  io.in.ready := inState === sIn && errArb.io.in(1).ready && rspArb.io.in(1).ready   // not on bits: no loop
  val age = if (p.opcTimeout > 0) Some(RegInit(VecInit(Seq.fill(S)(0.U(log2Up(p.opcTimeout + 1).W))))) else None
  // an open slot ages each cycle; a staged line or a retry's reopening restarts it (connected below:
  // the last connection wins, so the timeout counts from the writer's last sign of life)
  age.foreach(a => for (i <- 0 until S) when(isSt(slots(i), SlotSt.Open) && a(i) =/= p.opcTimeout.U) { a(i) := a(i) + 1.U })
  // the input state's transitions, one arm per state (sAct's arms say when it is done)
  val actDone = WireDefault(false.B)
  switch(inState) {
    is(sIn) { when(io.in.fire && isPrep) { inState := sLook } }
    is(sLook) { when(io.lk.fire) { inState := sLookW } }
    is(sLookW) { when(io.lkRes.valid) { inState := sAct } }
    is(sAct) { when(actDone) { inState := sIn } }
  }
  when(io.in.fire) {
    when(isPrep) {
      prep := PutPrepareMsg.fromFlit(io.in.bits.flit)
    }.elsewhen(!lineErr) {
      stage.write(at(oi, line.line), line.data)
      slots(oi).got := os.got | UIntToOH(line.line, L)
      age.foreach(_(oi) := 0.U)
    }.otherwise {
      errArb.io.in(1).valid := true.B
      errArb.io.in(1).bits := MsErr(0, line.server, line.obj, line.txn, MsgOpcode.PutLine)
      errArb.io.in(1).bits.code := Mux(!hasOpen, MsErrCode.noTxn.U,
        Mux(lineObjErr, MsErrCode.lineRange.U, MsErrCode.txnMismatch.U))
      when(lineObjErr) {
        rspArb.io.in(1).valid := true.B
        rspArb.io.in(1).bits := ObjErrFlit(line.server, line.epoch, line.obj, line.txn, MsErrCode.lineRange.U)
      }
    }
  }
  io.lk.valid := inState === sLook
  io.lk.bits := prep.obj
  when(inState === sLookW && io.lkRes.valid) { res := io.lkRes.bits }
  // the slot of the same (writer, txn), open or complete (not yet committing), is reused: the retry
  // is idempotent; else the first free one
  val mine = slots.map(s => (isSt(s, SlotSt.Open) || isSt(s, SlotSt.Complete)) && s.owner === prep.server &&
    s.txn === prep.txn && !mut.on(Mutants.retryNotIdempotent))
  val free = slots.map(s => isSt(s, SlotSt.Free))
  val target = Mux(mine.reduce(_ || _), PriorityEncoder(mine), PriorityEncoder(free))
  val canOpen = mine.reduce(_ || _) || free.reduce(_ || _)
  // a retry of (c, t) while its commit is in the core waits for the core's answer: the slot is then
  // Complete again (Stall: reused, lines cleared) or Draining (a free slot opens). Opening a free slot
  // now would leave two slots of one transaction once a Stall returns the first to Complete
  val committing = slots.map(s => isSt(s, SlotSt.Committing) && s.owner === prep.server && s.txn === prep.txn)
  val prepZombie = io.fenced(prep.server) || io.epochs(prep.server) =/= prep.epoch
  when(inState === sAct) {
    when(prepZombie) {
      actDone := true.B     // fenced while translating: discarded like a zombie
    }.elsewhen(!res.ok) {
      rspArb.io.in(1).valid := errArb.io.in(1).ready
      rspArb.io.in(1).bits := ObjErrFlit(prep.server, prep.epoch, prep.obj, prep.txn, res.code)
      errArb.io.in(1).valid := rspArb.io.in(1).ready
      errArb.io.in(1).bits := MsErr(0, prep.server, prep.obj, prep.txn, MsgOpcode.PutPrepare)
      errArb.io.in(1).bits.code := res.code
      actDone := rspArb.io.in(1).fire
    }.elsewhen(committing.reduce(_ || _)) {
      // wait (bounded: the core answers the OPC's one Commit in flight)
    }.elsewhen(canOpen) {
      val s = slots(target)
      s.st := SlotSt.Open
      s.owner := prep.server
      s.epoch := prep.epoch
      s.obj := prep.obj
      s.txn := prep.txn
      s.base := res.base
      s.size := res.size
      s.got := 0.U
      age.foreach(_(target) := 0.U)
      actDone := true.B
    }.otherwise {            // staging full
      val r = Wire(new Slot)
      r := 0.U.asTypeOf(new Slot)
      r.owner := prep.server
      r.epoch := prep.epoch
      r.obj := prep.obj
      r.txn := prep.txn
      rspArb.io.in(1).valid := true.B
      rspArb.io.in(1).bits := rspFlit(MsgOpcode.PutRetry, r)
      actDone := rspArb.io.in(1).fire
    }
  }

  // ---- complete, commit -----------------------------------------------------------------------------
  def allGot(s: Slot): Bool = (s.got & sizeMask(s.size)) === sizeMask(s.size)
  for (s <- slots) when(isSt(s, SlotSt.Open) && allGot(s)) {
    s.st := SlotSt.Complete
  }
  val backoffBits = log2Up(p.stallBackoff + 1)
  val backoff = RegInit(VecInit(Seq.fill(S)(0.U(backoffBits.W))))
  for (i <- 0 until S) when(backoff(i) =/= 0.U) { backoff(i) := backoff(i) - 1.U }
  val inCore = RegInit(false.B)   // one Commit at a time
  def objBusy(i: Int): Bool = slots.zipWithIndex.map { case (t, j) =>
    (j != i).B && t.obj === slots(i).obj && (isSt(t, SlotSt.Committing) || isSt(t, SlotSt.Draining)) }.reduce(_ || _) ||
    (io.oscBusy.valid && io.oscBusy.bits === slots(i).obj && !mut.on(Mutants.noGetCommitInterlock))
  // a slot a retry reopens in this cycle (sAct, lines cleared) does not also start its commit in it
  val reopening = mine.map(_ && inState === sAct)
  // an open or complete slot whose writer is fenced or in another epoch (the core's status now) is
  // aborted below, and a stale one never commits, also while its report waits for the error port
  val stale = slots.map(s => (isSt(s, SlotSt.Open) || isSt(s, SlotSt.Complete)) &&
    (io.fenced(s.owner) || io.epochs(s.owner) =/= s.epoch))
  val canCommit = VecInit((0 until S).map(i => isSt(slots(i), SlotSt.Complete) && backoff(i) === 0.U && !objBusy(i) &&
    !reopening(i) && !stale(i)))
  val ci = PriorityEncoder(canCommit)
  val early = mut.on(Mutants.commitBeforeCore)   // mutant: PutCommit leaves with the Commit request
  io.coreReq.valid := canCommit.asUInt.orR && !inCore && (!early || rspArb.io.in(0).ready)
  io.coreReq.bits.op := ReqOp.Commit
  io.coreReq.bits.server := slots(ci).owner
  io.coreReq.bits.epoch := slots(ci).epoch
  io.coreReq.bits.obj := slots(ci).obj
  io.coreReq.bits.base := slots(ci).base
  io.coreReq.bits.size := slots(ci).size
  val cSlot = Reg(UInt(p.slotBits.W))
  when(io.coreReq.fire) {
    when(early) {                 // never together with coreResp.fire (that needs inCore)
      rspArb.io.in(0).valid := true.B
      rspArb.io.in(0).bits := rspFlit(MsgOpcode.PutCommit, slots(ci))
    }
    slots(ci).st := SlotSt.Committing
    cSlot := ci
    inCore := true.B
  }
  val cs = slots(cSlot)
  io.coreResp.ready := rspArb.io.in(0).ready
  io.committed.valid := io.coreResp.fire && io.coreResp.bits.result === ReqResult.Committed
  io.committed.bits := cs.obj
  when(io.coreResp.fire) {
    assert(io.coreResp.bits.op === ReqOp.Commit && inCore, "the OPC's own answer")
    // the core drops a commit of a fenced or old-epoch writer (or a malformed one); the OPC sends
    // none: its writer's status is the core's own, which no ctrl op changes between the request's
    // cycle and its S1 (the core takes no ctrl op in a request's cycle), and the object map's
    // sizes are 1..linesPerObject
    assert(io.coreResp.bits.result =/= ReqResult.Drop, "opc-commit-never-dropped: the OPC sent a stale Commit")
    inCore := false.B
    switch(io.coreResp.bits.result) {
      is(ReqResult.Committed) {
        cs.st := SlotSt.Draining
        commitSeq := commitSeq + 1.U
        rspArb.io.in(0).valid := !early
        rspArb.io.in(0).bits := rspFlit(MsgOpcode.PutCommit, cs)
      }
      is(ReqResult.Stall) {
        cs.st := SlotSt.Complete
        backoff(cSlot) := p.stallBackoff.U
      }
    }
  }

  // ---- pin (the OSC forwards a draining slot) -----------------------------------------------------------
  val drainingOf = slots.map(s => isSt(s, SlotSt.Draining) && io.oscBusy.valid && s.obj === io.oscBusy.bits)
  io.pinHit.valid := drainingOf.reduce(_ || _)
  io.pinHit.bits := PriorityEncoder(drainingOf)
  val pin = RegInit(0.U.asTypeOf(Valid(UInt(p.slotBits.W))))
  when(io.pinReq && io.pinHit.valid) {
    pin.valid := true.B
    pin.bits := io.pinHit.bits
  }.elsewhen(!io.oscBusy.valid) { pin.valid := false.B }
  def pinned(i: UInt): Bool = (pin.valid && pin.bits === i) || (io.pinReq && io.pinHit.valid && io.pinHit.bits === i)

  // ---- drain: one slot at a time, one AXI write per line ------------------------------------------------
  val dActive = RegInit(false.B)
  val dSlot = Reg(UInt(p.slotBits.W))
  val dIssued = RegInit(0.U(p.lineCountBits.W))
  val dDone = RegInit(0.U(p.lineCountBits.W))
  val draining = slots.map(s => isSt(s, SlotSt.Draining))
  when(!dActive && draining.reduce(_ || _)) {
    dActive := true.B
    dSlot := PriorityEncoder(draining)
    dIssued := 0.U
    dDone := 0.U
  }
  val ds = slots(dSlot)
  io.wr.valid := dActive && dIssued < ds.size
  io.wr.bits.addr := ds.base + (dIssued << log2Ceil(p.lineBytes))
  io.wr.bits.data := stage(at(dSlot, dIssued(p.lineBits - 1, 0)))
  io.wr.bits.strb := Fill(p.lineBytes, 1.U(1.W))
  when(io.wr.fire) { dIssued := dIssued + 1.U }
  when(io.wrDone) { dDone := dDone + 1.U }
  when(dActive && dDone === ds.size && !pinned(dSlot)) {
    ds.st := SlotSt.Free
    dActive := false.B
  }

  // ---- aborts: fenced / rejoined writers (no reply), timeout (PutRetry) ---------------------------------
  val ai = PriorityEncoder(stale)
  errArb.io.in(0).valid := stale.reduce(_ || _) && !mut.on(Mutants.fenceKeepsOpenPut)
  errArb.io.in(0).bits := MsErr(MsErrCode.fenceAbort, slots(ai).owner, slots(ai).obj, slots(ai).txn, 0)
  when(errArb.io.in(0).fire) { slots(ai).st := SlotSt.Free }
  io.fenceAbort.valid := errArb.io.in(0).fire
  io.fenceAbort.bits := slots(ai).obj
  age.foreach { a =>
    val old = (0 until S).map(i => isSt(slots(i), SlotSt.Open) && a(i) === p.opcTimeout.U && !stale(i))
    val ti = PriorityEncoder(old)
    rspArb.io.in(2).valid := old.reduce(_ || _) && errArb.io.in(2).ready
    rspArb.io.in(2).bits := rspFlit(MsgOpcode.PutRetry, slots(ti))
    errArb.io.in(2).valid := old.reduce(_ || _) && rspArb.io.in(2).ready
    errArb.io.in(2).bits := MsErr(MsErrCode.timeout, slots(ti).owner, slots(ti).obj, slots(ti).txn, 0)
    when(rspArb.io.in(2).fire) { slots(ti).st := SlotSt.Free }
  }

  // an open slot that has all its lines becomes complete next cycle: it is in flight already
  io.idle := inState === sIn && slots.map(s => isSt(s, SlotSt.Free) || isSt(s, SlotSt.Open) && !allGot(s)).reduce(_ && _) &&
    !inCore && !dActive && !rspQ.io.deq.valid
}
