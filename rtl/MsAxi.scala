package apta

import chisel3._
import chisel3.util._

// The memory server's AXI4 master (rtl/MEMSERVER.md): bundles, the controllers' single-beat
// read/write requests, and `AxiPort`, which arbitrates them onto the one AXI4 port.

/** AXI ids of the memory server's clients */
object AxiId {
  val map = 0      // object-map walker reads
  val osc = 1      // OSC object reads
  val drain = 2    // OPC drain writes
  val mapUpd = 3   // object-map entry writes
}

/** AW / AR */
class AxiAddr(implicit p: AptaParams) extends Bundle {
  val id = UInt(p.axiIdBits.W)
  val addr = UInt(p.addrBits.W)
  /** beats - 1 (always 0: single-beat transactions) */
  val len = UInt(8.W)
  /** log2(bytes per beat) */
  val size = UInt(3.W)
  /** 1 = INCR */
  val burst = UInt(2.W)
  val lock = UInt(1.W)
  val cache = UInt(4.W)
  val prot = UInt(3.W)
  val qos = UInt(4.W)
}

class AxiWData(implicit p: AptaParams) extends Bundle {
  val data = UInt(p.dataBits.W)
  val strb = UInt((p.dataBits / 8).W)
  val last = Bool()
}

class AxiB(implicit p: AptaParams) extends Bundle {
  val id = UInt(p.axiIdBits.W)
  /** 0 OKAY */
  val resp = UInt(2.W)
}

class AxiR(implicit p: AptaParams) extends Bundle {
  val id = UInt(p.axiIdBits.W)
  val data = UInt(p.dataBits.W)
  val resp = UInt(2.W)
  val last = Bool()
}

/** The AXI4 master port (`axi_*` in the Verilog) */
class Axi4Master(implicit p: AptaParams) extends Bundle {
  val aw = Decoupled(new AxiAddr)
  val w = Decoupled(new AxiWData)
  val b = Flipped(Decoupled(new AxiB))
  val ar = Decoupled(new AxiAddr)
  val r = Flipped(Decoupled(new AxiR))
}

/** A client's single-beat read: the line at `addr` */
class MemRd(implicit p: AptaParams) extends Bundle {
  val addr = UInt(p.addrBits.W)
}

/** The data of a client's read (in the order of its reads); `err` = resp != OKAY */
class MemRdData(implicit p: AptaParams) extends Bundle {
  val data = UInt(p.dataBits.W)
  val err = Bool()
}

/** A client's single-beat write */
class MemWr(implicit p: AptaParams) extends Bundle {
  val addr = UInt(p.addrBits.W)
  val data = UInt(p.dataBits.W)
  val strb = UInt((p.dataBits / 8).W)
}

/** Two read clients (ids 0, 1) and two write clients (ids 2, 3) onto one AXI4 master. Every client
  * must take its read data / write completion in the cycle it is valid (they count credits). A
  * non-OKAY response is also reported on `axiErr`.
  */
class AxiPort(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** line reads per client (0 object map, 1 OSC) */
    val rd = Vec(2, Flipped(Decoupled(new MemRd)))
    /** read data per client, in request order */
    val rdData = Vec(2, Valid(new MemRdData))
    /** line writes per client (0 OPC drain, 1 object map) */
    val wr = Vec(2, Flipped(Decoupled(new MemWr)))
    /** one pulse per completed write (B), per client */
    val wrDone = Vec(2, Output(Bool()))
    /** the AXI4 master port to DRAM */
    val axi = new Axi4Master
    /** a response other than OKAY arrived (reported as MsErrCode.axiError) */
    val axiErr = Output(Bool())
    /** no request waiting in this module */
    val idle = Output(Bool())
  })
  def addrBeat(id: UInt, addr: UInt): AxiAddr = {
    val a = Wire(new AxiAddr)
    a.id := id
    a.addr := addr
    a.len := 0.U
    a.size := log2Ceil(p.lineBytes).U
    a.burst := 1.U
    a.lock := 0.U
    a.cache := 0.U
    a.prot := 0.U
    a.qos := 0.U
    a
  }

  // reads: round-robin over the clients, then a 2-entry AR queue
  val rdArb = Module(new RRArbiter(new MemRd, 2))
  rdArb.io.in <> io.rd
  val arQ = Module(new Queue(new AxiAddr, 2))
  arQ.io.enq.valid := rdArb.io.out.valid
  arQ.io.enq.bits := addrBeat(rdArb.io.chosen, rdArb.io.out.bits.addr)
  rdArb.io.out.ready := arQ.io.enq.ready
  io.axi.ar <> arQ.io.deq
  io.axi.r.ready := true.B
  for (k <- 0 until 2) {
    io.rdData(k).valid := io.axi.r.valid && io.axi.r.bits.id === k.U
    io.rdData(k).bits.data := io.axi.r.bits.data
    io.rdData(k).bits.err := io.axi.r.bits.resp =/= 0.U
  }

  // writes: round-robin, AW and W enqueued together (W in AW order)
  val wrArb = Module(new RRArbiter(new MemWr, 2))
  wrArb.io.in <> io.wr
  val awQ = Module(new Queue(new AxiAddr, 2))
  val wQ = Module(new Queue(new AxiWData, 2))
  val both = awQ.io.enq.ready && wQ.io.enq.ready
  awQ.io.enq.valid := wrArb.io.out.valid && both
  awQ.io.enq.bits := addrBeat(wrArb.io.chosen +& 2.U, wrArb.io.out.bits.addr)
  wQ.io.enq.valid := wrArb.io.out.valid && both
  wQ.io.enq.bits.data := wrArb.io.out.bits.data
  wQ.io.enq.bits.strb := wrArb.io.out.bits.strb
  wQ.io.enq.bits.last := true.B
  wrArb.io.out.ready := both
  io.axi.aw <> awQ.io.deq
  io.axi.w <> wQ.io.deq
  io.axi.b.ready := true.B
  for (k <- 0 until 2) io.wrDone(k) := io.axi.b.valid && io.axi.b.bits.id === (k + 2).U

  io.axiErr := (io.axi.r.valid && io.axi.r.bits.resp =/= 0.U) || (io.axi.b.valid && io.axi.b.bits.resp =/= 0.U)
  io.idle := !arQ.io.deq.valid && !awQ.io.deq.valid && !wQ.io.deq.valid
}

/** Round-robin choice among the set bits of `mask`, starting after `last`. */
object RoundRobin {
  def apply(mask: UInt, last: UInt): (Bool, UInt) = {
    val n = mask.getWidth
    val after = VecInit((0 until n).map(i => mask(i) && i.U > last)).asUInt
    (mask.orR, Mux(after.orR, PriorityEncoder(after), PriorityEncoder(mask)))
  }
}

/** `io_err_*`: one refused/discarded input or aborted transaction (rtl/MEMSERVER.md codes) */
class MsErr(implicit p: AptaParams) extends Bundle {
  /** MsErrCode */
  val code = UInt(MsErrCode.width.W)
  val server = UInt(p.serverBits.W)
  val obj = UInt(p.objIdBits.W)
  val txn = UInt(p.txnBits.W)
  /** the input's opcode (MsgOpcode), 0 if none */
  val opcode = UInt(MsgOpcode.width.W)
  /** badFlit: MsgError code and MsgField of the decoder */
  val msgCode = UInt(MsgError.width.W)
  val field = UInt(MsgField.width.W)
}

/** An MsErr from the error codes of schema/messages.json (MsErrCode, generated). */
object MsErr {
  def apply(code: Int, server: UInt, obj: UInt, txn: UInt, opcode: Int)(implicit p: AptaParams): MsErr = {
    val e = Wire(new MsErr)
    e.code := code.U
    e.server := server
    e.obj := obj
    e.txn := txn
    e.opcode := opcode.U
    e.msgCode := 0.U
    e.field := 0.U
    e
  }
}

/** ObjErr flit builder (schema/messages.json opcode 12) */
object ObjErrFlit {
  def apply(server: UInt, epoch: UInt, obj: UInt, txn: UInt, code: UInt)(implicit p: AptaParams): UInt = {
    val m = Wire(new ObjErrMsg)
    m.server := server
    m.epoch := epoch
    m.obj := obj
    m.txn := txn
    m.code := code
    ObjErrMsg.toFlit(m)
  }
}
