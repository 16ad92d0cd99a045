package apta

import chisel3._
import chisel3.util._

/** The protocol table of one set (rtl/CORE.md "Cells"; spec/murphi/README.md "The protocol table as
  * implemented"): given one pipeline op and the set's ways as they are, the ways as they become and
  * what to answer. Combinational; the OTC pipeline (Otc) registers around it.
  *
  * Model references: gets = rule "OTC get" (+ "MS: discard"), commits = `OtcPut`, eviction =
  * rule "OTC S evict", invalidation = `InvalidateSharers`, acks = rule "OIC ObjBIRsp" + `Settle`,
  * one set of a fence walk = `Fence`.
  */
class DirUpdate(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** the op in S1 (request, ack, query or one set of a fence walk) */
    val op = Input(new PipeOp)
    /** the op's set as it is now */
    val ways = Input(Vec(p.dirWays, new DirEntry))
    /** OIC server state (ServerTable) */
    val fenced = Input(UInt(p.servers.W))
    /** the servers' current epochs (ServerTable) */
    val epochs = Input(Vec(p.servers, UInt(p.epochBits.W)))
    /** `mutantPort` variants only: the deliberate bug to switch on (rtl/Mutants.scala) */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None

    /** the set as it becomes (written back for Req, Ack and Fence ops) */
    val newWays = Output(Vec(p.dirWays, new DirEntry))
    /** Req: the answer */
    val resp = Output(new CoreResp)
    /** Req: malformed (server >= servers, size outside 1..linesPerObject): MsgField of the field */
    val reqErr = Output(Valid(UInt(MsgField.width.W)))
    /** Ack: the outcome */
    val ackResult = Output(new AckResult)
    /** Query: the entry */
    val query = Output(new QueryResp)
    /** a BISnp round to send (commit with other sharers, or eviction with sharers) */
    val round = Output(Valid(new SnpRound))
    /** Ack applied: that server owes one ack less */
    val pendDec = Output(Valid(UInt(p.serverBits.W)))
  })
  val mut = new MutantSel(io.mutant)
  import DirState._

  val op = io.op
  val r = op.req
  val c = r.server
  val cOH = UIntToOH(c, p.servers)
  val isReq = op.kind === PipeKind.Req
  val isAck = op.kind === PipeKind.Ack
  val isFence = op.kind === PipeKind.Fence
  val isGet = r.op === ReqOp.Get

  // ---- lookup ------------------------------------------------------------------------------------
  val tag = DirIndex.tagOf(r.obj)
  val hitVec = VecInit(io.ways.map(w => w.state =/= I && w.tag === tag)).asUInt
  val hit = hitVec.orR
  val e = Mux1H(hitVec, io.ways)
  assert(!(isReq || isAck || op.kind === PipeKind.Query) || PopCount(hitVec) <= 1.U,
    "an object has at most one entry")
  val ePendNZ = VecInit(e.pend.map(_ =/= 0.U)).asUInt   // servers owing an ack for the object

  val freeVec = VecInit(io.ways.map(_.state === I)).asUInt
  val freeOH = PriorityEncoderOH(freeVec)
  // victim: the lowest S way without sharers, else the lowest S way (S^A and SI never) [CORE.md]
  val sVec = VecInit(io.ways.map(_.state === S)).asUInt
  val coldVec = VecInit(io.ways.map(w => w.state === S && w.sharers === 0.U)).asUInt
  val victimOH = Mux(coldVec.orR, PriorityEncoderOH(coldVec), PriorityEncoderOH(sVec))
  val victim = Mux1H(victimOH, io.ways)

  // ---- helpers -----------------------------------------------------------------------------------
  /** `Settle`: the last ack of the entry's rounds has arrived -> S^A to S, SI to I */
  def settled(x: DirEntry): DirEntry = {
    val y = WireInit(x)
    val none = x.pend.map(_ === 0.U).reduce(_ && _)
    when(none && x.state === SA) { y.state := S }
    when(none && x.state === SI) { y.state := I }
    y
  }
  /** `InvalidateSharers` on `targets`: one more ack owed by each (the BISnp goes out as a round) */
  def invalidated(x: DirEntry, targets: UInt): DirEntry = {
    val y = WireInit(x)
    for (i <- 0 until p.servers) { y.pend(i) := x.pend(i) + targets(i) }
    y.sharers := 0.U
    y
  }
  /** a counter of `targets` is at its bound: one more BISnp would overflow it -> Stall */
  def wouldOverflow(x: DirEntry, targets: UInt): Bool =
    (VecInit(x.pend.map(_ === p.maxPendPerServer.U)).asUInt & targets).orR
  def allocated(owner: UInt): DirEntry = {
    val y = Wire(new DirEntry)
    y.state := S
    y.tag := tag
    y.sharers := owner
    y.base := r.base
    y.size := r.size
    y.pend := VecInit(Seq.fill(p.servers)(0.U(p.pendBits.W)))
    y
  }
  def writeWay(oh: UInt, x: DirEntry): Unit =
    for (w <- 0 until p.dirWays) { when(oh(w)) { io.newWays(w) := x } }

  // ---- defaults: nothing changes ------------------------------------------------------------------
  io.newWays := io.ways
  io.round.valid := false.B
  io.round.bits.targets := 0.U
  io.round.bits.obj := r.obj
  io.round.bits.base := e.base
  io.round.bits.size := e.size
  io.round.bits.epochs := io.epochs
  io.pendDec.valid := false.B
  io.pendDec.bits := c

  /** send a round for object `obj` with extent of `x` to `targets` */
  def sendRound(obj: UInt, x: DirEntry, targets: UInt): Unit = {
    io.round.valid := targets.orR
    io.round.bits.targets := targets
    io.round.bits.obj := obj
    io.round.bits.base := x.base
    io.round.bits.size := x.size
  }
  /** rule "OTC S evict": the victim's sharers get BISnps -> SI, or -> I at once without sharers */
  def evict(): Unit = {
    val y = WireInit(invalidated(victim, victim.sharers))
    y.state := Mux(victim.sharers.orR, SI, I)
    writeWay(victimOH, y)
    val victimObj = if (p.setBits == 0) victim.tag else Cat(victim.tag, op.set(p.setBits - 1, 0))
    sendRound(victimObj, victim, victim.sharers)
  }

  // ---- requests -----------------------------------------------------------------------------------
  val badServer = if (isPow2(p.servers)) false.B else c >= p.servers.U
  val badSize = r.size === 0.U || r.size > p.linesPerObject.U
  val zombie = io.fenced(c) || r.epoch =/= io.epochs(c)   // rule "MS: discard"
  val result = WireDefault(ReqResult.Drop)
  io.reqErr.valid := isReq && (badServer || badSize)
  io.reqErr.bits := Mux(badServer, MsgField.server.U, MsgField.size.U)

  /** a get or commit of an object not in the directory: get/commit.I.alloc (the requester is the
    * sole sharer, `served`), .I.evict (a victim leaves, Stall: the request is retried), .I.full */
  def miss(served: ReqResult.Type): Unit = {
    when(freeVec.orR) {
      writeWay(freeOH, allocated(cOH))
      result := served
    }.elsewhen(sVec.orR) {
      evict()
      result := ReqResult.Stall
    }.otherwise {
      result := ReqResult.Stall
    }
  }

  when(isReq && !badServer && !badSize && !zombie) {
    when(isGet) {
      when(hit) {
        when(e.state === SI && !mut.on(Mutants.acceptInSI)) {
          result := ReqResult.Stall                   // get.SI
        }.elsewhen(e.pend(c) =/= 0.U) {
          result := ReqResult.Stall                   // get.owes: its own ack is on the way
        }.otherwise {                                   // get.S, get.SA: stays S^A (paper: -> S)
          val y = WireInit(e)
          y.sharers := e.sharers | cOH
          when(mut.on(Mutants.getSAtoS) && e.state === SA) { y.state := S }
          writeWay(hitVec, y)
          result := ReqResult.Served
        }
      }.otherwise {
        miss(ReqResult.Served)
      }
    }.otherwise {                                       // Commit: `OtcPut`
      val others = e.sharers & ~cOH
      when(hit) {
        when(e.state === SI || (mut.on(Mutants.commitStalledInSA) && e.state === SA)) {
          result := ReqResult.Stall                   // commit.SI (`CommitAllowed`)
        }.elsewhen(wouldOverflow(e, others)) {
          result := ReqResult.Stall                   // an OIC counter would overflow
        }.otherwise {                                   // commit.S.*, commit.SA: serviced, not stalled
          val y = WireInit(invalidated(e, others))
          y.sharers := Mux(mut.on(Mutants.sharersKeptOnCommit), e.sharers | cOH, cOH)
          y.state := Mux(e.state === S, Mux(others.orR, SA, S), e.state)
          y.base := r.base
          y.size := r.size
          writeWay(hitVec, y)
          sendRound(r.obj, e, others)                   // the old version's extent
          result := ReqResult.Committed
        }
      }.otherwise {
        miss(ReqResult.Committed)
      }
    }
  }
  io.resp.op := r.op
  io.resp.server := c
  io.resp.obj := r.obj
  io.resp.result := result

  // ---- acks: rule "OIC ObjBIRsp" -----------------------------------------------------------------
  val ackLegal = (!io.fenced(c) && r.epoch === io.epochs(c)) || mut.on(Mutants.oldEpochAck)
  val applied = isAck && ackLegal && hit && e.pend(c) =/= 0.U
  val ackSettled = WireDefault(false.B)
  when(applied) {
    val y = WireInit(e)
    when(!mut.on(Mutants.ackNotDecremented)) { y.pend(c) := e.pend(c) - 1.U }
    val z = settled(y)
    writeWay(hitVec, z)
    ackSettled := z.state =/= e.state
    io.pendDec.valid := !mut.on(Mutants.ackNotDecremented)
  }
  io.ackResult.server := c
  io.ackResult.obj := r.obj
  io.ackResult.applied := applied
  io.ackResult.settled := ackSettled

  // ---- one set of a fence walk: `Fence` ------------------------------------------------------------
  when(isFence) {
    for (w <- 0 until p.dirWays) {
      val x = io.ways(w)
      val y = WireInit(x)
      y.sharers := x.sharers & ~cOH
      when(!mut.on(Mutants.fenceIgnored)) { y.pend(c) := 0.U }
      io.newWays(w) := Mux(x.state === I, x, settled(y))
    }
  }

  // ---- query ----------------------------------------------------------------------------------------
  io.query.obj := r.obj
  io.query.hit := hit
  io.query.state := Mux(hit, e.state, I)
  io.query.sharers := Mux(hit, e.sharers, 0.U)
  io.query.pend := Mux(hit, e.pend, VecInit(Seq.fill(p.servers)(0.U(p.pendBits.W))))
  io.query.schedulableFor := ~io.fenced & ~Mux(hit, ePendNZ, 0.U)
}
