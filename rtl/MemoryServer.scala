package apta

import chisel3._
import chisel3.util._

/** `io_status_*` of the memory server: the core's, plus the commit sequence number */
class MsStatus(implicit p: AptaParams) extends Bundle {
  val fenced = UInt(p.servers.W)
  val epoch = Vec(p.servers, UInt(p.epochBits.W))
  val pending = UInt(p.servers.W)
  val schedulable = UInt(p.servers.W)
  /** committed puts so far (advanced before the PutCommit leaves) */
  val commitSeq = UInt(p.commitSeqBits.W)
  /** acks each server owes over all objects (the core's sums: no walk of the objects) */
  val pendTotal = Vec(p.servers, UInt(p.totalPendBits.W))
  /** versioned gets held by the OSC whose version has not committed */
  val held = UInt(p.heldBits.W)
}

/** The memory server (rtl/MEMSERVER.md): one request port per compute server, shared rsp / snp /
  * birsp ports, the control plane, and an AXI4 master to DRAM. Joins a MsgDecoder per server port
  * (the dispatcher), the OSC, the OPC, the object-map walker, the CoherenceCore and the AxiPort.
  */
class MemoryServer(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val n = p.servers
  val io = IO(new Bundle {
    /** per compute server: ObjGet, PutPrepare, PutLine, Rejoin flits (the port index is the sender) */
    val req = Vec(n, Flipped(Decoupled(UInt(flitBits.W))))
    /** ObjBIRsp flits (invalidation acks) from every server */
    val birsp = Flipped(Decoupled(UInt(flitBits.W)))
    /** ObjData, PutCommit, PutRetry, RejoinAck, ObjErr flits, addressed by their `server` field */
    val rsp = Decoupled(UInt(flitBits.W))
    /** ObjBISnp flits (object-granular back-invalidation) */
    val snp = Decoupled(UInt(flitBits.W))
    /** control plane: Fence and Rejoin flits */
    val ctrl = Flipped(Decoupled(UInt(flitBits.W)))
    /** Fence echo or RejoinAck, one per legal ctrl flit */
    val ctrlResp = Decoupled(UInt(flitBits.W))
    /** control-plane query for one object */
    val query = Flipped(Decoupled(new QueryReq))
    /** that object's directory entry */
    val queryResp = Valid(new QueryResp)
    /** per server: fenced, epoch, pending, schedulable; the commit sequence number */
    val status = Output(new MsStatus)
    /** the Object Manager registers (obj, size: the storage is allocated here) or removes an object */
    val mapUpd = Flipped(Decoupled(new MapUpd))
    /** the answer to each mapUpd, in order: MapUpdCode and the allocated (or freed) base; on ok the
      * entry is in DRAM and visible to gets and puts */
    val mapUpdDone = Valid(new MapUpdDone)
    /** DRAM capacity in bytes behind axi_* (a configuration strap): the allocator carves below it */
    val memBytes = Input(UInt(p.addrBits.W))
    /** one refused or discarded input or aborted transaction (MsErrCode) */
    val err = Valid(new MsErr)
    /** the control plane cancels the held gets of this object whose version has not committed:
      * each is answered GetCancelled (the workflow was cancelled, or the producer's
      * re-execution budget is spent, so the version can never commit) */
    val cancel = Flipped(Decoupled(UInt(p.objIdBits.W)))
    /** nothing in flight anywhere in the memory server */
    val idle = Output(Bool())
    /** `mutantPort` variants only (ms3_mutants): one deliberate bug of rtl/Mutants.scala, core or OSC/OPC */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val axi = IO(new Axi4Master)

  val core = Module(new CoherenceCore)
  val osc = Module(new Osc)
  val opc = Module(new Opc)
  val map = Module(new ObjMap)
  val port = Module(new AxiPort)
  axi <> port.io.axi
  core.io.mutant.foreach(_ := io.mutant.get)
  osc.io.mutant.foreach(_ := io.mutant.get)
  opc.io.mutant.foreach(_ := io.mutant.get)
  val fenced = core.io.status.fenced
  val epochs = core.io.status.epoch

  // ---- error reports: 0 core decodeErr / AXI, 1 ctrl front, 2 dispatcher, 3 OSC, 4 OPC ------------------
  val errArb = Module(new Arbiter(new MsErr, 5))
  errArb.io.out.ready := true.B
  io.err.valid := errArb.io.out.valid
  io.err.bits := errArb.io.out.bits
  val e0 = errArb.io.in(0)
  e0.valid := core.io.decodeErr.valid || port.io.axiErr
  e0.bits := MsErr(MsErrCode.badFlit, 0.U, 0.U, 0.U, 0)
  e0.bits.opcode := core.io.decodeErr.bits.opcode
  e0.bits.msgCode := core.io.decodeErr.bits.code
  e0.bits.field := core.io.decodeErr.bits.field
  when(!core.io.decodeErr.valid) { e0.bits.code := MsErrCode.axiError.U }
  errArb.io.in(3) <> Queue(osc.io.err, 2)   // queues: no combinational path back into the dispatcher
  errArb.io.in(4) <> Queue(opc.io.err, 2)

  // ---- control plane: Fence / Rejoin flits, checked, then into the core with their origin ------------
  val ctrlF = Module(new ChannelFront(Seq(MsgOpcode.Fence, MsgOpcode.Rejoin)))
  ctrlF.io.in <> io.ctrl
  ctrlF.io.enable := !e0.valid
  errArb.io.in(1).valid := ctrlF.io.err.valid
  errArb.io.in(1).bits := MsErr(MsErrCode.badFlit, 0.U, 0.U, 0.U, 0)
  errArb.io.in(1).bits.opcode := ctrlF.io.err.bits.opcode
  errArb.io.in(1).bits.msgCode := ctrlF.io.err.bits.code
  errArb.io.in(1).bits.field := ctrlF.io.err.bits.field
  // Rejoins from the server ports (priority: the control plane)
  val rejoinQ = Module(new Queue(UInt(flitBits.W), 1))   // breaks the path ctrl.valid -> ctrl.ready
  val rejoinIn = rejoinQ.io.enq
  val rejoin = rejoinQ.io.deq
  val origin = Module(new Queue(Bool(), 4))   // true: a server port's Rejoin (answer on rsp)
  val cpFirst = ctrlF.io.out.valid
  core.io.ctrl.valid := (cpFirst || rejoin.valid) && origin.io.enq.ready
  core.io.ctrl.bits := Mux(cpFirst, ctrlF.io.out.bits.flit, rejoin.bits)
  ctrlF.io.out.ready := core.io.ctrl.ready && origin.io.enq.ready
  rejoin.ready := core.io.ctrl.ready && origin.io.enq.ready && !cpFirst
  origin.io.enq.valid := core.io.ctrl.fire
  origin.io.enq.bits := !cpFirst
  val toRsp = origin.io.deq.valid && origin.io.deq.bits
  val rspArb = Module(new RRArbiter(UInt(flitBits.W), 4))   // OSC, OPC, RejoinAck, OSC's GetRetry/GetCancelled
  val versReady = Wire(Bool())
  io.ctrlResp.valid := core.io.ctrlResp.valid && !toRsp
  io.ctrlResp.bits := core.io.ctrlResp.bits
  rspArb.io.in(2).valid := core.io.ctrlResp.valid && toRsp
  rspArb.io.in(2).bits := core.io.ctrlResp.bits
  core.io.ctrlResp.ready := Mux(toRsp, rspArb.io.in(2).ready, io.ctrlResp.ready)
  origin.io.deq.ready := core.io.ctrlResp.fire
  assert(!core.io.ctrlResp.valid || origin.io.deq.valid, "every ctrl answer has its origin")

  // ---- the rest of the core ----------------------------------------------------------------------
  core.io.ack <> io.birsp
  io.snp <> core.io.snp
  // the directory's query port: the control plane's queries and the object map's (a removal asks
  // whether copies are outstanding); answers come back in order, routed by who asked
  val qArb = Module(new Arbiter(new QueryReq, 2))
  val qWho = Module(new Queue(Bool(), 4))     // true: the object map asked
  qArb.io.in(0) <> map.io.qry
  qArb.io.in(1) <> io.query
  core.io.query.valid := qArb.io.out.valid && qWho.io.enq.ready
  core.io.query.bits := qArb.io.out.bits
  qArb.io.out.ready := core.io.query.ready && qWho.io.enq.ready
  qWho.io.enq.valid := core.io.query.fire
  qWho.io.enq.bits := qArb.io.chosen === 0.U
  qWho.io.deq.ready := core.io.queryResp.valid
  assert(!core.io.queryResp.valid || qWho.io.deq.valid, "every query answer has its asker")
  io.queryResp.valid := core.io.queryResp.valid && !qWho.io.deq.bits
  io.queryResp.bits := core.io.queryResp.bits
  map.io.qryResp.valid := core.io.queryResp.valid && qWho.io.deq.bits
  map.io.qryResp.bits := core.io.queryResp.bits
  io.status.fenced := core.io.status.fenced
  io.status.epoch := core.io.status.epoch
  io.status.pending := core.io.status.pending
  io.status.schedulable := core.io.status.schedulable
  io.status.commitSeq := opc.io.commitSeq
  io.status.pendTotal := core.io.status.pendTotal
  io.status.held := osc.io.held

  val reqArb = Module(new RRArbiter(new CoreReq, 2))
  reqArb.io.in(0) <> osc.io.coreReq
  reqArb.io.in(1) <> opc.io.coreReq
  core.io.req <> reqArb.io.out
  val respGet = core.io.resp.bits.op === ReqOp.Get
  osc.io.coreResp.valid := core.io.resp.valid && respGet
  opc.io.coreResp.valid := core.io.resp.valid && !respGet
  osc.io.coreResp.bits := core.io.resp.bits
  opc.io.coreResp.bits := core.io.resp.bits
  core.io.resp.ready := Mux(respGet, osc.io.coreResp.ready, opc.io.coreResp.ready)

  // ---- dispatcher: one server port per cycle, round-robin among ports whose head can go -----------
  val decs = Seq.fill(n)(Module(new MsgDecoder))
  val opcodes = Seq(MsgOpcode.ObjGet, MsgOpcode.PutPrepare, MsgOpcode.PutLine, MsgOpcode.Rejoin)
  val heads = decs.zipWithIndex.map { case (d, i) =>
    d.io.in.valid := io.req(i).valid
    d.io.in.bits := io.req(i).bits
    val f = d.io.out.bits.flit
    val op = d.io.out.bits.opcode
    val m = ObjGetMsg.fromFlit(f)        // server and epoch sit at the same bits in every message
    val legal = d.io.out.valid
    val known = opcodes.map(op === _.U).reduce(_ || _)
    val wrongPort = m.server =/= i.U
    val isRejoin = op === MsgOpcode.Rejoin.U
    val zombie = fenced(i) || m.epoch =/= epochs(i)
    // error code of the head (0: none)
    val code = Mux(!legal || !known, MsErrCode.badFlit.U, Mux(wrongPort, MsErrCode.wrongPort.U,
      Mux(!isRejoin && zombie, MsErrCode.zombie.U, 0.U)))
    val isErr = io.req(i).valid && code =/= 0.U
    val canGo = Mux(isErr, errArb.io.in(2).ready && !osc.io.pending(i),
      Mux(isRejoin, rejoinIn.ready,
        !osc.io.pending(i) && (op === MsgOpcode.ObjGet.U || opc.io.in.ready)))
    (io.req(i).valid && canGo, code, d, f, op)
  }
  val go = VecInit(heads.map(_._1)).asUInt & Fill(n, versReady)   // (none during the version table's reset sweep)
  val last = RegInit(0.U(p.serverBits.W))
  val (anyGo, gi) = RoundRobin(go, last)
  when(anyGo) { last := gi }
  val g = VecInit(heads.map(_._4))(gi)            // the granted flit (legal when code is 0)
  val gOp = VecInit(heads.map(_._5))(gi)
  val gCode = VecInit(heads.map(_._2))(gi)
  val gErr = VecInit(decs.map(_.io.err.bits))(gi)
  val gm = PutLineMsg.fromFlit(g)
  val take = WireDefault(false.B)
  osc.io.get.valid := false.B
  osc.io.get.bits.server := gi
  osc.io.get.bits.epoch := gm.epoch
  osc.io.get.bits.obj := gm.obj
  osc.io.get.bits.version := ObjGetMsg.fromFlit(g).version
  opc.io.in.valid := false.B
  opc.io.in.bits.opcode := gOp
  opc.io.in.bits.flit := g
  rejoinIn.valid := false.B
  rejoinIn.bits := g
  errArb.io.in(2).valid := false.B
  errArb.io.in(2).bits := MsErr(0, gi, gm.obj, 0.U, 0)
  errArb.io.in(2).bits.code := gCode
  errArb.io.in(2).bits.opcode := g(MsgOpcode.width - 1, 0)
  errArb.io.in(2).bits.msgCode := Mux(VecInit(decs.map(_.io.err.valid))(gi), gErr.code, MsgError.badOpcode.U)
  errArb.io.in(2).bits.field := Mux(VecInit(decs.map(_.io.err.valid))(gi), gErr.field, 0.U)
  when(gCode =/= MsErrCode.badFlit.U) { errArb.io.in(2).bits.msgCode := 0.U }
  when(anyGo) {
    when(gCode =/= 0.U) {
      errArb.io.in(2).valid := true.B
      take := true.B
    }.elsewhen(gOp === MsgOpcode.Rejoin.U) {
      rejoinIn.valid := true.B
      take := rejoinIn.ready
    }.elsewhen(gOp === MsgOpcode.ObjGet.U) {
      osc.io.get.valid := true.B
      take := osc.io.get.ready
    }.otherwise {
      opc.io.in.valid := true.B
      take := opc.io.in.ready
    }
  }
  for (i <- 0 until n) {
    val mine = anyGo && gi === i.U
    io.req(i).ready := mine && take
    decs(i).io.out.ready := mine && take
  }

  // ---- OSC <-> OPC, map, AXI -------------------------------------------------------------------------
  opc.io.fenced := fenced
  opc.io.epochs := epochs
  opc.io.oscBusy := osc.io.busy
  opc.io.pinReq := osc.io.pinReq
  osc.io.pinHit := opc.io.pinHit
  opc.io.stRd := osc.io.stRd
  osc.io.stData := opc.io.stData
  map.io.lk(0) <> osc.io.lk
  map.io.lk(1) <> opc.io.lk
  osc.io.lkRes := map.io.res(0)
  opc.io.lkRes := map.io.res(1)
  map.io.upd <> io.mapUpd
  map.io.upd.valid := io.mapUpd.valid && versReady
  io.mapUpd.ready := map.io.upd.ready && versReady
  io.mapUpdDone := map.io.updDone
  map.io.memBytes := io.memBytes
  map.io.mutant.foreach(_ := io.mutant.get)
  // a removal is refused while a get of the object is being served or a put of it is staged
  opc.io.probe := map.io.probe
  map.io.probeBusy := opc.io.probeHit || (osc.io.busy.valid && osc.io.busy.bits === map.io.probe)
  port.io.rd(0) <> map.io.rd
  port.io.rd(1) <> osc.io.rd
  map.io.rdData := port.io.rdData(0)
  osc.io.rdData := port.io.rdData(1)
  port.io.wr(0) <> opc.io.wr
  port.io.wr(1) <> map.io.wr
  opc.io.wrDone := port.io.wrDone(0)
  map.io.wrDone := port.io.wrDone(1)

  rspArb.io.in(0) <> osc.io.rsp
  rspArb.io.in(1) <> opc.io.rsp
  rspArb.io.in(3) <> osc.io.holdRsp
  io.rsp <> rspArb.io.out

  // ---- versions and the hold table -------------------------------------------------------------------
  osc.io.fenced := fenced
  osc.io.epochs := epochs
  osc.io.fenceAbort := opc.io.fenceAbort
  osc.io.cancel <> io.cancel
  if (p.holdSlots > 0) {
    val vers = Module(new VersionTable)
    vers.io.mutant.foreach(_ := io.mutant.get)
    vers.io.commit := opc.io.committed
    vers.io.clear.valid := map.io.updDone.valid && map.io.updDone.bits.code === MapUpdCode.ok
    vers.io.clear.bits := map.io.updDone.bits.obj
    vers.io.rdObj := gm.obj
    osc.io.ver := vers.io.rdVer
    osc.io.bumped := vers.io.bumped
    versReady := vers.io.ready
  } else {                    // no hold table: every versioned get is answered GetRetry
    osc.io.ver := 0.U
    osc.io.bumped.valid := false.B
    osc.io.bumped.bits := DontCare
    versReady := true.B
  }

  io.idle := core.io.idle && osc.io.idle && opc.io.idle && map.io.idle && port.io.idle && versReady &&
    !origin.io.deq.valid && !rejoin.valid && !io.err.valid
}
