package apta

import chisel3._
import chisel3.util._

/** A translation: obj -> (base, size), or why not (MsErrCode unknownObj / badMapEntry / overLong) */
class MapResult(implicit p: AptaParams) extends Bundle {
  val ok = Bool()
  /** MsErrCode when !ok */
  val code = UInt(4.W)
  val base = UInt(p.addrBits.W)
  val size = UInt(p.lineCountBits.W)
}

/** `io_mapUpd_bits_*`: the Object Manager writes one map entry */
class MapUpd(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  val base = UInt(p.addrBits.W)
  /** the entry's 16-bit size field, written as given (0 or > linesPerObject make a bad entry on purpose) */
  val size = UInt(16.W)
  /** 0 = delete the entry */
  val valid = Bool()
}

/** The object-map walker (rtl/MEMSERVER.md "Object map in DRAM"): a direct-mapped table of 16-byte
  * entries at mapBase, one AXI read per miss, a fully associative cache of good translations, and
  * the Object Manager's entry writes. Two lookup clients (0 OSC, 1 OPC), one lookup at a time;
  * a hit answers 2 cycles after the lookup fired.
  */
class ObjMap(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** lookups per client (0 OSC, 1 OPC): an object id */
    val lk = Vec(2, Flipped(Decoupled(UInt(p.objIdBits.W))))
    /** per client: the object's extent or why it is invalid */
    val res = Vec(2, Valid(new MapResult))
    /** control-plane writes of a map entry */
    val upd = Flipped(Decoupled(new MapUpd))
    /** the object whose entry is written */
    val updDone = Valid(UInt(p.objIdBits.W))
    /** reads of a map entry's line from DRAM */
    val rd = Decoupled(new MemRd)
    /** its data */
    val rdData = Flipped(Valid(new MemRdData))
    /** writes of a map entry's line to DRAM */
    val wr = Decoupled(new MemWr)
    /** one pulse per completed write */
    val wrDone = Input(Bool())
    /** no lookup or update in progress */
    val idle = Output(Bool())
  })
  require(p.objIdBits <= 32, "map entries hold 32-bit object ids")
  require(p.dataBits >= 128 && p.dataBits % 128 == 0, "a line holds whole 16-byte map entries")
  val perLine = p.dataBits / 128
  val idxBits = log2Ceil(p.mapEntries)

  /** byte address of obj's entry, and the line holding it */
  def entryAddr(obj: UInt): UInt = p.mapBase.U(p.addrBits.W) + (obj(math.max(idxBits, 1) - 1, 0) & (p.mapEntries - 1).U) * 16.U
  def lineOf(a: UInt): UInt = (a >> log2Ceil(p.lineBytes)) << log2Ceil(p.lineBytes)
  def lane(a: UInt): UInt = if (perLine == 1) 0.U else a(log2Ceil(p.lineBytes) - 1, 4)

  // translation cache: good entries only
  class CacheEntry extends Bundle {
    val valid = Bool()
    val obj = UInt(p.objIdBits.W)
    val base = UInt(p.addrBits.W)
    val size = UInt(p.lineCountBits.W)
  }
  val cache = RegInit(VecInit(Seq.fill(p.mapCacheEntries)(0.U.asTypeOf(new CacheEntry))))
  val victim = RegInit(0.U(log2Up(p.mapCacheEntries).W))

  // s_* = states of the one walker
  val sIdle :: sCheck :: sRead :: sWait :: sUpdW :: sUpdB :: Nil = Enum(6)
  val state = RegInit(sIdle)
  val who = Reg(UInt(1.W))
  val obj = Reg(UInt(p.objIdBits.W))
  val upd = Reg(new MapUpd)

  val arb = Module(new RRArbiter(UInt(p.objIdBits.W), 2))
  arb.io.in <> io.lk
  arb.io.out.ready := state === sIdle && !io.upd.valid
  io.upd.ready := state === sIdle
  when(io.upd.fire) {
    upd := io.upd.bits
    state := sUpdW
  }.elsewhen(arb.io.out.fire) {
    who := arb.io.chosen
    obj := arb.io.out.bits
    state := sCheck
  }

  val res = Wire(Valid(new MapResult))
  res.valid := false.B
  res.bits := 0.U.asTypeOf(new MapResult)
  val hits = cache.map(e => e.valid && e.obj === obj)
  val hitE = Mux1H(hits, cache)
  io.rd.valid := state === sRead
  io.rd.bits.addr := lineOf(entryAddr(obj))
  when(state === sCheck) {
    when(hits.reduce(_ || _)) {
      res.valid := true.B
      res.bits.ok := true.B
      res.bits.base := hitE.base
      res.bits.size := hitE.size
      state := sIdle
    }.otherwise { state := sRead }
  }
  when(io.rd.fire) { state := sWait }

  // decode the entry (table in rtl/MEMSERVER.md)
  val line = io.rdData.bits.data
  val e = VecInit((0 until perLine).map(i => line(128 * i + 127, 128 * i)))(lane(entryAddr(obj)))
  val eValid = e(0)
  val eObj = e(39, 8)
  val eSize = e(63, 48)
  val eBase = e(127, 64)
  val unknown = !eValid || eObj =/= obj.pad(32)
  val baseHigh = if (p.addrBits < 64) eBase(63, p.addrBits).orR else false.B
  val bad = e(7, 1).orR || e(47, 40).orR || eSize === 0.U ||
    eBase(log2Ceil(p.lineBytes) - 1, 0).orR || baseHigh || io.rdData.bits.err
  val overLong = eSize > p.linesPerObject.U
  when(state === sWait && io.rdData.valid) {
    res.valid := true.B
    res.bits.ok := !unknown && !bad && !overLong
    res.bits.code := Mux(unknown, MsErrCode.unknownObj.U, Mux(bad, MsErrCode.badMapEntry.U, MsErrCode.overLong.U))
    res.bits.base := eBase(p.addrBits - 1, 0)
    res.bits.size := eSize(p.lineCountBits - 1, 0)
    when(res.bits.ok) {
      cache(victim).valid := true.B
      cache(victim).obj := obj
      cache(victim).base := eBase(p.addrBits - 1, 0)
      cache(victim).size := eSize(p.lineCountBits - 1, 0)
      victim := Mux(victim === (p.mapCacheEntries - 1).U, 0.U, victim + 1.U)
    }
    state := sIdle
  }
  for (k <- 0 until 2) {
    io.res(k).valid := res.valid && who === k.U
    io.res(k).bits := res.bits
  }

  // entry writes: one beat with the entry's 16 byte lanes strobed, then drop obj from the cache
  val ua = entryAddr(upd.obj)
  val entry = Cat(upd.base.pad(64), upd.size, 0.U(8.W), upd.obj.pad(32), 0.U(7.W), upd.valid)
  io.wr.valid := state === sUpdW
  io.wr.bits.addr := lineOf(ua)
  io.wr.bits.data := Fill(perLine, entry)
  io.wr.bits.strb := (BigInt(0xffff).U(p.lineBytes.W) << (lane(ua) << 4))(p.lineBytes - 1, 0)
  when(io.wr.fire) { state := sUpdB }
  io.updDone.valid := false.B
  io.updDone.bits := upd.obj
  when(state === sUpdB && io.wrDone) {
    io.updDone.valid := true.B
    for (c <- cache) when(c.obj === upd.obj) { c.valid := false.B }
    state := sIdle
  }
  io.idle := state === sIdle
}
