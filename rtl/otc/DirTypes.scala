package apta

import chisel3._
import chisel3.util._

// DirState, ReqOp, ReqResult and ErrChannel (ChiselEnums: the ports' encodings) are generated from
// schema/core.json into Messages.scala.

/** One directory entry (one way of one set). */
class DirEntry(implicit p: AptaParams) extends Bundle {
  /** DirState; I = the way is free */
  val state = DirState()
  /** object id bits above the set index */
  val tag = UInt(p.tagBits.W)
  /** servers holding a copy of the current version (S or S^A) */
  val sharers = UInt(p.servers.W)
  /** object extent from the object map, carried by the BISnps */
  val base = UInt(p.addrBits.W)
  val size = UInt(p.lineCountBits.W)
  /** OIC: acks each server owes for this object (the model's pend[o][c]) */
  val pend = Vec(p.servers, UInt(p.pendBits.W))
}

/** A request as the core's ports carry it (`io_req_bits_*`). */
class CoreReq(implicit p: AptaParams) extends Bundle {
  /** ReqOp: Get or Commit */
  val op = ReqOp()
  /** requester (Get) or writer (Commit) */
  val server = UInt(p.serverBits.W)
  /** the requester's epoch as it sent the request */
  val epoch = UInt(p.epochBits.W)
  val obj = UInt(p.objIdBits.W)
  /** object extent from the object map (kept in the entry, sent in the BISnps) */
  val base = UInt(p.addrBits.W)
  val size = UInt(p.lineCountBits.W)
}

/** The answer to one accepted request (`io_resp_bits_*`). */
class CoreResp(implicit p: AptaParams) extends Bundle {
  val op = ReqOp()
  val server = UInt(p.serverBits.W)
  val obj = UInt(p.objIdBits.W)
  /** ReqResult */
  val result = ReqResult()
}

/** One ack's outcome (`io_ackResult_bits_*`). */
class AckResult(implicit p: AptaParams) extends Bundle {
  val server = UInt(p.serverBits.W)
  val obj = UInt(p.objIdBits.W)
  /** a counter was decremented (else discarded: old epoch, fenced, nothing owed) */
  val applied = Bool()
  /** that was the round's last ack: S^A -> S or SI -> I */
  val settled = Bool()
}

/** `io_query_bits_*` */
class QueryReq(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
}

/** The entry of one object as the control plane sees it (`io_queryResp_bits_*`). */
class QueryResp(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  /** the object has an entry (state != I) */
  val hit = Bool()
  /** DirState (I on a miss) */
  val state = DirState()
  /** bitmap, bit i = server i */
  val sharers = UInt(p.servers.W)
  /** acks each server owes for this object */
  val pend = Vec(p.servers, UInt(p.pendBits.W))
  /** bit i: server i is not fenced and owes nothing for this object (declared-input scheduling) */
  val schedulableFor = UInt(p.servers.W)
}

/** `io_decodeErr_bits_*`: an illegal input was consumed and refused. */
class CoreDecodeErr(implicit p: AptaParams) extends Bundle {
  /** ErrChannel */
  val channel = ErrChannel()
  /** MsgError code */
  val code = UInt(MsgError.width.W)
  /** MsgField of the first bad field, else MsgField.none */
  val field = UInt(MsgField.width.W)
  /** the flit's opcode; for a req: MsgOpcode.ObjGet (Get) or MsgOpcode.PutCommit (Commit) */
  val opcode = UInt(MsgOpcode.width.W)
}

/** What enters the directory pipeline in one cycle (one source wins the arbiter). */
object PipeKind extends ChiselEnum {
  val Req, Ack, Query = Value
  val Fence = Value  // one set of a fence walk: retire `server`'s counters and sharer bits there
}

class PipeOp(implicit p: AptaParams) extends Bundle {
  val kind = PipeKind()
  /** the set to read (the object's, or the walk's for Fence) */
  val set = UInt(p.setIdxBits.W)
  val req = new CoreReq  // req fields; Ack/Query/Fence use server, epoch, obj only
}

object DirIndex {
  /** set index: the object id's low bits (a constant 0 with one set) */
  def setOf(obj: UInt)(implicit p: AptaParams): UInt =
    if (p.setBits == 0) 0.U(p.setIdxBits.W) else obj(p.setBits - 1, 0)
  /** tag: the object id's bits above the set index */
  def tagOf(obj: UInt)(implicit p: AptaParams): UInt = obj(p.objIdBits - 1, p.setBits)
}
