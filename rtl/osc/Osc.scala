package apta

import chisel3._
import chisel3.util._

/** An ObjGet taken from a server's port (already checked: legal, this server, current epoch) */
class GetReq(implicit p: AptaParams) extends Bundle {
  val server = UInt(p.serverBits.W)
  val epoch = UInt(p.epochBits.W)
  val obj = UInt(p.objIdBits.W)
  /** the minimum version it needs (0: any, the paper's get) */
  val version = UInt(p.versionBits.W)
}

/** One staging line the OSC reads (slot, line) */
class StageRd(implicit p: AptaParams) extends Bundle {
  val slot = UInt(p.slotBits.W)
  val line = UInt(p.lineBits.W)
}

/** OSC: the object serving controller (rtl/MEMSERVER.md "OSC"). One pending get per server (the
  * server's port waits meanwhile), served one at a time, round-robin over servers: translate,
  * ask the core (Get), then stream ObjData, one flit per line in line order, from the draining
  * staging slot of the object if there is one (pinned in the OPC until the stream ends), else
  * from DRAM (AXI id 1, `oscBufLines` reads in flight). A Stall'd get waits `stallBackoff` cycles
  * and gives the others a turn; Drop frees it silently.
  */
class Osc(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** ObjGet requests (legal, this server's port, current epoch) */
    val get = Flipped(Decoupled(new GetReq))
    /** bit i: server i has a get pending here (its port waits) */
    val pending = Output(UInt(p.servers.W))
    /** object map lookup of the get's object */
    val lk = Decoupled(UInt(p.objIdBits.W))
    /** its extent, or why it is invalid */
    val lkRes = Flipped(Valid(new MapResult))
    /** Get requests to the coherence core */
    val coreReq = Decoupled(new CoreReq)
    /** the core's answers (Served, Stall, Drop) */
    val coreResp = Flipped(Decoupled(new CoreResp))
    /** the object the OSC has asked the core for or is streaming: the OPC does not commit it */
    val busy = Valid(UInt(p.objIdBits.W))
    /** the core has just served `busy`: the OPC pins its draining slot of that object, if any */
    val pinReq = Output(Bool())
    val pinHit = Flipped(Valid(UInt(p.slotBits.W)))
    val stRd = Output(new StageRd)
    val stData = Input(UInt(p.dataBits.W))
    /** line reads of the object from DRAM */
    val rd = Decoupled(new MemRd)
    /** the read data, in order */
    val rdData = Flipped(Valid(new MemRdData))
    /** ObjData and ObjErr flits */
    val rsp = Decoupled(UInt(flitBits.W))
    /** zombie gets and map errors (MsErrCode) */
    val err = Decoupled(new MsErr)
    /** no get in progress */
    val idle = Output(Bool())
    // ---- the hold table of versioned gets ----
    /** the version of `get.bits.obj` now (VersionTable, this cycle's commit included) */
    val ver = Input(UInt(p.versionBits.W))
    /** a commit and the object's new version: wakes its held gets */
    val bumped = Flipped(Valid(new VerEvent))
    /** the OPC aborted a fenced writer's open put of this object (only `hold_drop_at_writer_fence` reads it) */
    val fenceAbort = Flipped(Valid(UInt(p.objIdBits.W)))
    /** the core's fenced bits and epochs: a held get of a fenced or rejoined server is dropped */
    val fenced = Input(UInt(p.servers.W))
    val epochs = Input(Vec(p.servers, UInt(p.epochBits.W)))
    /** the control plane cancels the held gets of this object whose version has not committed */
    val cancel = Flipped(Decoupled(UInt(p.objIdBits.W)))
    /** GetRetry and GetCancelled flits */
    val holdRsp = Decoupled(UInt(flitBits.W))
    /** held gets whose version has not committed */
    val held = Output(UInt(p.heldBits.W))
    /** `mutantPort` variants only: the deliberate bug to switch on (rtl/Mutants.scala) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val mut = new MutantSel(io.mutant)
  val n = p.servers
  // the pending gets, one per server
  val pValid = RegInit(0.U(n.W))
  val pEpoch = Reg(Vec(n, UInt(p.epochBits.W)))
  val pObj = Reg(Vec(n, UInt(p.objIdBits.W)))
  val backoffBits = log2Up(p.stallBackoff + 1)
  val pWait = RegInit(VecInit(Seq.fill(n)(0.U(backoffBits.W))))
  for (i <- 0 until n) when(pWait(i) =/= 0.U) { pWait(i) := pWait(i) - 1.U }
  io.pending := pValid

  val setP = WireDefault(0.U(n.W))       // a get taken from the port
  val setRel = WireDefault(0.U(n.W))     // a held get released (another server: see io.get.ready)
  val clrP = WireDefault(0.U(n.W))

  // ---- the hold table (rtl/MEMSERVER.md "Versioned gets"): a versioned get whose version has not
  // committed waits here, not at its server's port; the commit of its object wakes it (no polling)
  // and it leaves through the pending get of its server, served as any get (the core's cells) ----
  val H = p.holdSlots
  class Held extends Bundle {
    val valid = Bool()
    /** its version committed: to be released into its server's pending get */
    val woken = Bool()
    /** the control plane cancelled it: to be answered GetCancelled */
    val cancel = Bool()
    val server = UInt(p.serverBits.W)
    val epoch = UInt(p.epochBits.W)
    val obj = UInt(p.objIdBits.W)
    val need = UInt(p.versionBits.W)
  }
  // (holdSlots = 0: one entry that is never used, so the logic below needs no special case)
  val hold = RegInit(VecInit(Seq.fill(H max 1)(0.U.asTypeOf(new Held))))
  /** the one version comparator (the hold decision and the wake-up): has `need` committed at `ver`? */
  def reached(ver: UInt, need: UInt): Bool = Mux(mut.on(Mutants.holdWakeExact), ver === need, ver >= need)
  val holdOut = Module(new Queue(UInt(flitBits.W), 2))
  io.holdRsp <> holdOut.io.deq
  def retryFlit(s: UInt, e: UInt, o: UInt, v: UInt): UInt = {
    val m = Wire(new GetRetryMsg)
    m.server := s; m.epoch := e; m.obj := o; m.version := v
    GetRetryMsg.toFlit(m)
  }
  def cancelledFlit(s: UInt, e: UInt, o: UInt, v: UInt): UInt = {
    val m = Wire(new GetCancelledMsg)
    m.server := s; m.epoch := e; m.obj := o; m.version := v
    GetCancelledMsg.toFlit(m)
  }
  val free = hold.map(!_.valid)
  val anyFree = if (H == 0) false.B else free.reduce(_ || _)
  val fi = PriorityEncoder(free)
  val notYet = io.get.bits.version =/= 0.U && (if (H == 0) true.B else !reached(io.ver, io.get.bits.version))
  val retryNow = io.get.valid && notYet && !anyFree          // hold table full: GetRetry at once
  // a woken entry goes to its server's pending get (one per cycle)
  val relCand = hold.map(h => h.valid && h.woken && !h.cancel && !pValid(h.server))
  val relAny = relCand.reduce(_ || _)
  val ri = PriorityEncoder(relCand)
  val rel = hold(ri)
  io.get.ready := Mux(notYet, Mux(anyFree, true.B, holdOut.io.enq.ready || mut.on(Mutants.holdFullNoRetry)),
    !pValid(io.get.bits.server) && !(relAny && rel.server === io.get.bits.server))
  when(io.get.fire && !notYet) {
    setP := UIntToOH(io.get.bits.server, n)
    pEpoch(io.get.bits.server) := io.get.bits.epoch
    pObj(io.get.bits.server) := io.get.bits.obj
  }
  if (H > 0) {
    for (i <- 0 until H) {
      val h = hold(i)
      // a commit of its object wakes it once its version is reached
      when(h.valid && !h.cancel && io.bumped.valid && io.bumped.bits.obj === h.obj &&
          reached(io.bumped.bits.ver, h.need)) {
        h.woken := true.B
      }
      // its server was fenced or rejoined: nobody is left to answer (the model's DropHolds)
      when(h.valid && (io.fenced(h.server) || io.epochs(h.server) =/= h.epoch)) { h.valid := false.B }
      when(mut.on(Mutants.holdDropAtWriterFence) && h.valid && io.fenceAbort.valid && io.fenceAbort.bits === h.obj) {
        h.valid := false.B
      }
    }
    when(relAny) {
      setRel := UIntToOH(rel.server, n)
      pEpoch(rel.server) := rel.epoch
      pObj(rel.server) := rel.obj
      rel.valid := false.B
    }
    when(io.get.fire && notYet && anyFree) {
      val h = hold(fi)
      h.valid := true.B
      h.woken := mut.on(Mutants.holdReleaseOld)
      h.cancel := false.B
      h.server := io.get.bits.server
      h.epoch := io.get.bits.epoch
      h.obj := io.get.bits.obj
      h.need := io.get.bits.version
    }
  }
  // cancel: every held get of the object whose version has not committed is answered GetCancelled
  val cancelling = hold.map(h => h.valid && h.cancel)
  val anyCancel = cancelling.reduce(_ || _)
  val ci = PriorityEncoder(cancelling)
  io.cancel.ready := !anyCancel
  when(io.cancel.fire) {
    for (h <- hold) when(h.valid && !h.woken && h.obj === io.cancel.bits) { h.cancel := true.B }
  }
  holdOut.io.enq.valid := (retryNow && !mut.on(Mutants.holdFullNoRetry)) || (anyCancel && !retryNow)
  holdOut.io.enq.bits := Mux(retryNow,
    retryFlit(io.get.bits.server, io.get.bits.epoch, io.get.bits.obj, io.get.bits.version),
    cancelledFlit(hold(ci).server, hold(ci).epoch, hold(ci).obj, hold(ci).need))
  if (H > 0) when(holdOut.io.enq.fire && !retryNow) { hold(ci).valid := false.B }
  io.held := PopCount(hold.map(h => h.valid && !h.woken))
  pValid := (pValid | setP | setRel) & ~clrP

  val sIdle :: sLook :: sLookW :: sCore :: sCoreW :: sStream :: sErrRsp :: sErrRep :: Nil = Enum(8)
  val state = RegInit(sIdle)
  val cur = RegInit(0.U(p.serverBits.W))
  val base = Reg(UInt(p.addrBits.W))
  val size = Reg(UInt(p.lineCountBits.W))
  val errCode = Reg(UInt(MsErrCode.width.W))
  val pinned = RegInit(false.B)
  val pinSlot = Reg(UInt(p.slotBits.W))
  val busy = RegInit(false.B)
  val obj = pObj(cur)
  val epoch = pEpoch(cur)

  val ready = VecInit((0 until n).map(i => pValid(i) && pWait(i) === 0.U)).asUInt
  val (any, pick) = RoundRobin(ready, cur)
  when(state === sIdle && any) {
    cur := pick
    state := sLook
  }
  io.lk.valid := state === sLook
  io.lk.bits := obj
  when(io.lk.fire) { state := sLookW }
  when(state === sLookW && io.lkRes.valid) {
    base := io.lkRes.bits.base
    size := io.lkRes.bits.size
    errCode := io.lkRes.bits.code
    state := Mux(io.lkRes.bits.ok, sCore, sErrRsp)
  }

  io.coreReq.valid := state === sCore
  io.coreReq.bits.op := ReqOp.Get
  io.coreReq.bits.server := cur
  io.coreReq.bits.epoch := epoch
  io.coreReq.bits.obj := obj
  io.coreReq.bits.base := base
  io.coreReq.bits.size := size
  when(io.coreReq.fire) {
    busy := true.B
    state := sCoreW
  }
  io.coreResp.ready := state === sCoreW
  io.pinReq := false.B
  val sent = RegInit(0.U(p.lineCountBits.W))   // ObjData flits sent
  val issued = RegInit(0.U(p.lineCountBits.W)) // DRAM reads issued
  when(io.coreResp.fire) {
    assert(io.coreResp.bits.op === ReqOp.Get && io.coreResp.bits.server === cur, "the OSC's own answer")
    val r = io.coreResp.bits.result
    when(r === ReqResult.Served) {
      io.pinReq := true.B
      pinned := io.pinHit.valid && !mut.on(Mutants.oscNoForward)
      pinSlot := io.pinHit.bits
      sent := 0.U
      issued := 0.U
      state := sStream
    }.otherwise {
      busy := false.B
      when(r === ReqResult.Stall) { pWait(cur) := p.stallBackoff.U }
        .otherwise { clrP := UIntToOH(cur, n) }   // Drop (zombie): nothing is sent
      state := sIdle
    }
  }
  io.busy.valid := busy
  io.busy.bits := obj

  // ---- stream -------------------------------------------------------------------------------------
  val buf = Module(new Queue(UInt(p.dataBits.W), p.oscBufLines))
  val inFlight = RegInit(0.U(log2Up(p.oscBufLines + 1).W))   // reads issued, data not yet arrived
  val credit = inFlight + buf.io.count < p.oscBufLines.U
  io.rd.valid := state === sStream && !pinned && issued < size && credit
  io.rd.bits.addr := base + (issued << log2Ceil(p.lineBytes))
  when(io.rd.fire) { issued := issued + 1.U }
  inFlight := inFlight + io.rd.fire.asUInt - io.rdData.valid.asUInt
  buf.io.enq.valid := io.rdData.valid
  buf.io.enq.bits := io.rdData.bits.data
  assert(!io.rdData.valid || buf.io.enq.ready, "read data has a reserved buffer slot")

  io.stRd.slot := pinSlot
  io.stRd.line := sent(p.lineBits - 1, 0)
  val data = Mux(pinned, io.stData, buf.io.deq.bits)
  val dataValid = state === sStream && Mux(pinned, true.B, buf.io.deq.valid)
  val od = Wire(new ObjDataMsg)
  od.server := cur
  od.epoch := epoch
  od.obj := obj
  od.line := sent(p.lineBits - 1, 0)
  od.data := data
  val isErr = state === sErrRsp
  io.rsp.valid := dataValid || isErr
  io.rsp.bits := Mux(isErr, ObjErrFlit(cur, epoch, obj, 0.U, errCode), ObjDataMsg.toFlit(od))
  buf.io.deq.ready := state === sStream && !pinned && io.rsp.ready
  when(state === sStream && io.rsp.fire) {
    sent := sent + 1.U
    when(sent === size - 1.U) {
      busy := false.B
      pinned := false.B
      clrP := UIntToOH(cur, n)
      state := sIdle
    }
  }
  when(isErr && io.rsp.fire) { state := sErrRep }
  io.err.valid := state === sErrRep
  io.err.bits := MsErr(0, cur, obj, 0.U, MsgOpcode.ObjGet)
  io.err.bits.code := errCode
  when(io.err.fire) {
    clrP := UIntToOH(cur, n)
    state := sIdle
  }
  io.idle := state === sIdle && pValid === 0.U && inFlight === 0.U && !buf.io.deq.valid &&
    !hold.map(h => h.valid && (h.woken || h.cancel)).reduce(_ || _) && !holdOut.io.deq.valid
}
