package apta

import chisel3._
import chisel3.util._

/** One input channel's front door: the MsgDecoder, then a filter for the opcodes the channel takes
  * (a legal flit of another channel's message is refused as badOpcode, like an unknown one).
  * `enable` low holds the channel for a cycle (the shared decodeErr port is taken).
  */
class ChannelFront(opcodes: Seq[Int])(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** flits of this channel, as they arrive */
    val in = Flipped(Decoupled(UInt(flitBits.W)))
    /** the channel may pass flits on (the core's arbiter chose it) */
    val enable = Input(Bool())
    /** a legal flit of one of this channel's opcodes */
    val out = Decoupled(new DecodedFlit)
    /** a refused flit: decoder error or an opcode not of this channel */
    val err = Valid(new FlitError)
  })
  val dec = Module(new MsgDecoder)
  dec.io.in.valid := io.in.valid && io.enable
  dec.io.in.bits := io.in.bits
  io.in.ready := dec.io.in.ready && io.enable

  val wrongOp = dec.io.out.valid && !opcodes.map(dec.io.out.bits.opcode === _.U).reduce(_ || _)
  io.out.valid := dec.io.out.valid && !wrongOp
  io.out.bits := dec.io.out.bits
  dec.io.out.ready := io.out.ready || wrongOp   // a refused flit is consumed at once

  io.err.valid := dec.io.err.valid || wrongOp
  io.err.bits := dec.io.err.bits
  when(wrongOp) {
    io.err.bits.code := MsgError.badOpcode.U
    io.err.bits.field := MsgField.none.U
    io.err.bits.opcode := dec.io.out.bits.opcode
  }
}

/** `io_status_*`: the control plane's overall answer (§III-D2). */
class CoreStatus(implicit p: AptaParams) extends Bundle {
  /** bit i: server i is fenced */
  val fenced = UInt(p.servers.W)
  /** each server's current epoch */
  val epoch = Vec(p.servers, UInt(p.epochBits.W))
  /** bit i: server i owes some ack */
  val pending = UInt(p.servers.W)
  /** bit i: server i may be given a function (undeclared inputs): !fenced & !pending */
  val schedulable = UInt(p.servers.W)
  /** acks each server owes over all objects: the control plane's per-server count without a walk
    * of the objects (the sum of queryResp.pend over every object) */
  val pendTotal = Vec(p.servers, UInt(p.totalPendBits.W))
}

/** The memory server's coherence core: the OTC (rtl/otc/) and the OIC (rtl/oic/) joined behind the
  * ports of rtl/CORE.md. One arbiter feeds the OTC pipeline, priority: fence walk, ctrl, ack, req,
  * query (the walk and a ctrl flit take the whole cycle; a walk holds every channel until done).
  */
class CoherenceCore(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** OSC/OPC requests: may `server` be served `obj` (Get), may the put commit (Commit) */
    val req = Flipped(Decoupled(new CoreReq))
    /** one answer per accepted req, in order (ReqResult) */
    val resp = Decoupled(new CoreResp)
    /** ObjBIRsp flits */
    val ack = Flipped(Decoupled(UInt(flitBits.W)))
    /** one outcome per legal ack: applied, settled */
    val ackResult = Valid(new AckResult)
    /** Fence or Rejoin flits */
    val ctrl = Flipped(Decoupled(UInt(flitBits.W)))
    /** Fence echo or RejoinAck flits */
    val ctrlResp = Decoupled(UInt(flitBits.W))
    /** ObjBISnp flits */
    val snp = Decoupled(UInt(flitBits.W))
    /** an illegal ack/ctrl flit or a malformed req was consumed and refused */
    val decodeErr = Valid(new CoreDecodeErr)
    /** control-plane query for one object's entry */
    val query = Flipped(Decoupled(new QueryReq))
    /** the entry, after every earlier accepted input */
    val queryResp = Valid(new QueryResp)
    /** per server: fenced, epoch, pending, schedulable (wires) */
    val status = Output(new CoreStatus)
    /** nothing in flight: every accepted input has had all its effects and answers */
    val idle = Output(Bool())
    /** `mutantPort` variants only: the deliberate bug to switch on (rtl/Mutants.scala; 0 = none) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  val mut = new MutantSel(io.mutant)

  val otc = Module(new Otc)
  val servers = Module(new ServerTable)
  val snp = Module(new SnpIssuer)
  val ctrl = Module(new CtrlUnit)
  val respQ = Module(new Queue(new CoreResp, p.respSlots))
  val ackF = Module(new ChannelFront(Seq(MsgOpcode.ObjBIRsp)))
  val ctrlF = Module(new ChannelFront(Seq(MsgOpcode.Fence, MsgOpcode.Rejoin)))
  ackF.io.in <> io.ack
  ctrlF.io.in <> io.ctrl
  otc.io.mutant.foreach(_ := io.mutant.get)

  // ---- S0 arbiter ---------------------------------------------------------------------------------
  val walk = ctrl.io.walk.valid
  val open = otc.io.ready && !ctrl.io.busy            // the channels may enter this cycle
  ctrl.io.in.valid := ctrlF.io.out.valid && open
  ctrl.io.in.bits := ctrlF.io.out.bits
  ctrlF.io.out.ready := ctrl.io.in.ready && open
  val ctrlFire = ctrl.io.in.fire

  ackF.io.out.ready := open && !ctrlFire
  val ackFire = ackF.io.out.fire

  // a request enters only if its resp and its BISnp round will have a slot (counting the one in S1)
  val s1Req = otc.io.s1Req.asUInt
  val respFree = p.respSlots.U - respQ.io.count + respQ.io.deq.fire.asUInt
  val credit = respFree > s1Req && snp.io.free > s1Req
  io.req.ready := open && !ctrlFire && !ackFire && credit
  val reqFire = io.req.fire
  io.query.ready := open && !ctrlFire && !ackFire && !reqFire
  val queryFire = io.query.fire

  val op = Wire(new PipeOp)
  op.req := io.req.bits
  op.kind := PipeKind.Req
  when(walk) {
    op.kind := PipeKind.Fence
    op.req.server := ctrl.io.walk.bits.server
  }.elsewhen(ackFire) {
    val m = ObjBIRspMsg.fromFlit(ackF.io.out.bits.flit)
    op.kind := PipeKind.Ack
    op.req.server := m.server
    op.req.epoch := m.epoch
    op.req.obj := m.obj
  }.elsewhen(queryFire) {
    op.kind := PipeKind.Query
    op.req.obj := io.query.bits.obj
  }
  op.set := Mux(walk, ctrl.io.walk.bits.set, DirIndex.setOf(op.req.obj))
  otc.io.in.valid := walk || ackFire || reqFire || queryFire
  otc.io.in.bits := op
  assert(PopCount(Seq(walk, ctrlFire, ackFire, reqFire, queryFire)) <= 1.U, "one op per cycle")

  // ---- OIC server state ---------------------------------------------------------------------------
  otc.io.fenced := servers.io.fenced
  otc.io.epochs := servers.io.epochs
  ctrl.io.fenced := servers.io.fenced
  ctrl.io.epochs := servers.io.epochs
  servers.io.inc := Mux(otc.io.round.valid, otc.io.round.bits.targets, 0.U)
  servers.io.dec := otc.io.pendDec
  servers.io.fence := ctrl.io.fence
  servers.io.fenceClears := !mut.on(Mutants.fenceIgnored)
  servers.io.rejoin := ctrl.io.rejoin
  servers.io.mayWrap := mut.on(Mutants.epochWraps)
  ctrl.io.wraps := mut.on(Mutants.epochWraps)

  /** A registered Valid output: only the valid bit is reset. The data is read only while valid is
    * high and is written in the same cycle valid is, so a reset value of it would be a don't-care
    * (the mutation run found 15 such reset constants no test could tell from others; rocket-chip
    * leaves such data registers without reset too). Simulation starts them random. */
  private def validReg[T <: Data](in: Valid[T]): Valid[T] = {
    val r = Wire(Valid(chiselTypeOf(in.bits)))
    r.valid := RegNext(in.valid, false.B)
    r.bits := RegNext(in.bits)
    r
  }

  // ---- answers ------------------------------------------------------------------------------------
  respQ.io.enq.valid := otc.io.resp.valid
  respQ.io.enq.bits := otc.io.resp.bits
  assert(!respQ.io.enq.valid || respQ.io.enq.ready, "resp slot was reserved at accept")
  io.resp <> respQ.io.deq

  snp.io.enq.valid := otc.io.round.valid
  snp.io.enq.bits := otc.io.round.bits
  io.snp <> snp.io.snp
  io.ctrlResp <> ctrl.io.resp

  io.ackResult := validReg(otc.io.ackResult)
  io.queryResp := validReg(otc.io.query)

  // decodeErr: one report per cycle; the OTC's (a request already in S1) first, then ack, then ctrl
  ackF.io.enable := !otc.io.reqErr.valid
  ctrlF.io.enable := !otc.io.reqErr.valid && !ackF.io.err.valid
  val err = Wire(Valid(new CoreDecodeErr))
  err.valid := otc.io.reqErr.valid || ackF.io.err.valid || ctrlF.io.err.valid
  err.bits.channel := ErrChannel.ctrl
  err.bits.code := ctrlF.io.err.bits.code
  err.bits.field := ctrlF.io.err.bits.field
  err.bits.opcode := ctrlF.io.err.bits.opcode
  when(otc.io.reqErr.valid) {
    err.bits.channel := ErrChannel.req
    err.bits.code := MsgError.fieldRange.U
    err.bits.field := otc.io.reqErr.bits
    err.bits.opcode := Mux(otc.io.resp.bits.op === ReqOp.Get, MsgOpcode.ObjGet.U, MsgOpcode.PutCommit.U)
  }.elsewhen(ackF.io.err.valid) {
    err.bits.channel := ErrChannel.ack
    err.bits.code := ackF.io.err.bits.code
    err.bits.field := ackF.io.err.bits.field
    err.bits.opcode := ackF.io.err.bits.opcode
  }
  io.decodeErr := validReg(err)

  // ---- status -------------------------------------------------------------------------------------
  io.status.fenced := servers.io.fenced
  io.status.epoch := servers.io.epochs
  io.status.pending := servers.io.pending
  io.status.schedulable := ~servers.io.fenced & ~servers.io.pending
  io.status.pendTotal := servers.io.total

  io.idle := otc.io.ready && !otc.io.s1Valid && !respQ.io.deq.valid && snp.io.idle &&
    !ctrl.io.busy && !ctrl.io.resp.valid && !io.ackResult.valid && !io.queryResp.valid && !io.decodeErr.valid
}
