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

/** `io_mapUpd_bits_*`: the Object Manager registers or removes one object. A registration names
  * the object and its size, never an address: the memory server allocates the storage (ExtentAlloc). */
class MapUpd(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  /** lines (registration; 0 or > linesPerObject is refused with badSize); ignored by a removal */
  val size = UInt(16.W)
  /** 1 = register, 0 = remove (its extent is freed) */
  val valid = Bool()
}

/** `io_mapUpdDone_bits_*`: the answer to one MapUpd, in order */
class MapUpdDone(implicit p: AptaParams) extends Bundle {
  val obj = UInt(p.objIdBits.W)
  /** MapUpdCode (schema/core.json): ok, or why nothing changed */
  val code = MapUpdCode()
  /** the object's base byte address (registered: allocated; removed: freed; else 0) */
  val base = UInt(p.addrBits.W)
}

/** The object-map walker (rtl/MEMSERVER.md "Object map in DRAM"): a direct-mapped table of 16-byte
  * entries at mapBase, one AXI read per miss, a fully associative cache of good translations, and
  * the Object Manager's registrations and removals, which allocate and free the object's storage
  * (ExtentAlloc) and answer on `updDone` with a MapUpdCode. Two lookup clients (0 OSC, 1 OPC), one
  * lookup or update at a time; a hit answers 2 cycles after the lookup fired.
  */
class ObjMap(implicit val p: AptaParams) extends Module with HasAptaParameters {
  val io = IO(new Bundle {
    /** lookups per client (0 OSC, 1 OPC): an object id */
    val lk = Vec(2, Flipped(Decoupled(UInt(p.objIdBits.W))))
    /** per client: the object's extent or why it is invalid */
    val res = Vec(2, Valid(new MapResult))
    /** control-plane registrations and removals */
    val upd = Flipped(Decoupled(new MapUpd))
    /** one answer per update */
    val updDone = Valid(new MapUpdDone)
    /** DRAM capacity in bytes: the allocator's arena ends here */
    val memBytes = Input(UInt(p.addrBits.W))
    /** a removal asks the directory whether copies of the object are outstanding */
    val qry = Decoupled(new QueryReq)
    /** the directory's answer */
    val qryResp = Flipped(Valid(new QueryResp))
    /** the object being removed, and whether a get or put of it is in flight in the OSC / OPC */
    val probe = Output(UInt(p.objIdBits.W))
    val probeBusy = Input(Bool())
    /** reads of a map entry's line (or a free extent's link) from DRAM */
    val rd = Decoupled(new MemRd)
    /** its data */
    val rdData = Flipped(Valid(new MemRdData))
    /** writes of a map entry's line (or a free extent's link) to DRAM */
    val wr = Decoupled(new MemWr)
    /** one pulse per completed write */
    val wrDone = Input(Bool())
    /** no lookup or update in progress */
    val idle = Output(Bool())
    /** `mutantPort` variants only (rtl/Mutants.scala): the allocator's deliberate bugs */
    val mutant = if (p.mutantPort) Some(Input(UInt(Mutants.width.W))) else None
  })
  require(p.objIdBits <= 32, "map entries hold 32-bit object ids")
  require(p.dataBits >= 128 && p.dataBits % 128 == 0, "a line holds whole 16-byte map entries")
  val perLine = p.dataBits / 128
  val idxBits = log2Ceil(p.mapEntries)
  val alloc = Module(new ExtentAlloc)
  alloc.io.mutant.foreach(_ := io.mutant.get)
  alloc.io.memBytes := io.memBytes

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

  // the one walker: lookups (sCheck, sRead, sWait) and updates: read the entry (sURd, sUWait); a
  // removal asks the directory (sQry, sQWait); a registration allocates (sAlloc, from a free list:
  // sFRd, sFWait); write the entry (sUpdW, sUpdB); a removal links the extent into its free list
  // (sLinkW, sLinkB); answer (sDone)
  val sIdle :: sCheck :: sRead :: sWait :: sURd :: sUWait :: sQry :: sQWait :: sAlloc :: sFRd :: sFWait :: sUpdW :: sUpdB :: sLinkW :: sLinkB :: sDone :: Nil = Enum(16)
  val state = RegInit(sIdle)
  val who = Reg(UInt(1.W))
  val obj = Reg(UInt(p.objIdBits.W))
  val upd = Reg(new MapUpd)
  val code = Reg(MapUpdCode())
  val base = Reg(UInt(p.addrBits.W))
  /** a removal: the entry's size (its extent's class) */
  val oldSize = Reg(UInt(16.W))

  val arb = Module(new RRArbiter(UInt(p.objIdBits.W), 2))
  arb.io.in <> io.lk
  arb.io.out.ready := state === sIdle && !io.upd.valid
  io.upd.ready := state === sIdle
  when(io.upd.fire) {
    upd := io.upd.bits
    code := MapUpdCode.ok
    base := 0.U
    // a registration's size is checked before anything is read
    val sizeBad = io.upd.bits.valid && (io.upd.bits.size === 0.U || io.upd.bits.size > p.linesPerObject.U)
    when(sizeBad) {
      code := MapUpdCode.badSize
      state := sDone
    }.otherwise { state := sURd }
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
  io.rd.valid := state === sRead || state === sURd || state === sFRd
  io.rd.bits.addr := Mux(state === sFRd, lineOf(alloc.io.head), lineOf(entryAddr(Mux(state === sRead, obj, upd.obj))))
  when(state === sCheck) {
    when(hits.reduce(_ || _)) {
      res.valid := true.B
      res.bits.ok := true.B
      res.bits.base := hitE.base
      res.bits.size := hitE.size
      state := sIdle
    }.otherwise { state := sRead }
  }
  when(io.rd.fire) { state := Mux(state === sRead, sWait, Mux(state === sURd, sUWait, sFWait)) }

  // decode the entry (table in rtl/MEMSERVER.md) of `o` from the line just read
  val line = io.rdData.bits.data
  def entryOf(o: UInt): UInt = VecInit((0 until perLine).map(i => line(128 * i + 127, 128 * i)))(lane(entryAddr(o)))
  val e = entryOf(obj)
  val eValid = e(0)
  val eObj = e(39, 8)
  val eSize = e(63, 48)
  val eBase = e(127, 64)
  // a read answered other than OKAY carries no entry: badMapEntry (MEMSERVER.md "AXI4 master"),
  // whatever its data would say
  val unknown = !io.rdData.bits.err && (!eValid || eObj =/= obj.pad(32))
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

  // ---- updates ---------------------------------------------------------------------------------------
  // the allocator is asked about the registration's size, or the removed entry's
  alloc.io.size := Mux(upd.valid, upd.size, oldSize)
  alloc.io.carve := false.B
  alloc.io.pop.valid := false.B
  alloc.io.pop.bits := 0.U
  alloc.io.push.valid := false.B
  alloc.io.push.bits := base
  alloc.io.link := base
  val u = entryOf(upd.obj)
  val uMine = u(0) && u(39, 8) === upd.obj.pad(32)
  when(state === sUWait && io.rdData.valid) {
    // a removal frees the entry's extent (refused busy or badEntry: answers it, kept); a registration's
    // base comes from the allocator; any other refusal answers 0 (not an invalid entry's bytes)
    base := Mux(upd.valid, 0.U, u(127, 64))
    oldSize := u(63, 48)
    when(upd.valid) {
      // registration: the slot must be free (not this object: exists; another one: collision)
      when(io.rdData.bits.err) {
        code := MapUpdCode.noSpace   // the map itself is unreadable: nothing can be placed
        state := sDone
      }.elsewhen(uMine) {
        code := MapUpdCode.exists
        base := 0.U
        state := sDone
      }.elsewhen(u(0)) {
        code := MapUpdCode.collision
        base := 0.U
        state := sDone
      }.otherwise { state := sAlloc }
    }.otherwise {
      when(!uMine) {
        code := MapUpdCode.unknownObj
        base := 0.U
        state := sDone
      }.otherwise { state := sQry }
    }
  }
  // a removal: the entry must describe an allocated extent, and nothing may hold the object
  io.qry.valid := state === sQry
  io.qry.bits.obj := upd.obj
  io.probe := upd.obj
  when(state === sQry) {
    when(!alloc.io.extentOk) {     // an entry written around the allocator: its storage is not ours to free
      code := MapUpdCode.badEntry
      state := sDone
    }.elsewhen(io.qry.fire) { state := sQWait }
  }
  val q = io.qryResp.bits
  val copies = q.hit && (q.sharers =/= 0.U || q.state =/= DirState.S || q.pend.map(_ =/= 0.U).reduce(_ || _))
  when(state === sQWait && io.qryResp.valid) {
    when(copies || io.probeBusy) {
      code := MapUpdCode.busy
      state := sDone
    }.otherwise { state := sUpdW }
  }
  // a registration: the head of its class's free list, else a new extent from the bump pointer
  when(state === sAlloc) {
    when(alloc.io.head =/= 0.U) {
      state := sFRd
    }.elsewhen(alloc.io.carveOk) {
      base := alloc.io.bump
      alloc.io.carve := true.B
      state := sUpdW
    }.otherwise {
      code := MapUpdCode.noSpace
      state := sDone
    }
  }
  val link = line(p.addrBits - 1, 0)
  when(state === sFWait && io.rdData.valid) {
    alloc.io.link := link
    alloc.io.pop.valid := true.B
    when(alloc.io.linkOk && !io.rdData.bits.err) {
      base := alloc.io.head
      alloc.io.pop.bits := link
      state := sUpdW
    }.otherwise {
      // a corrupt list (its DRAM written around the memory server): dropped, its extents leak
      alloc.io.pop.bits := 0.U
      state := sAlloc
    }
  }

  // entry writes: one beat with the entry's 16 byte lanes strobed; a removal then writes the class's
  // old head into the freed extent's first 8 bytes (its free-list link)
  val ua = entryAddr(upd.obj)
  val entry = Cat(Mux(upd.valid, base, 0.U).pad(64), Mux(upd.valid, upd.size, 0.U), 0.U(8.W), upd.obj.pad(32), 0.U(7.W), upd.valid)
  val linking = state === sLinkW
  io.wr.valid := state === sUpdW || linking
  io.wr.bits.addr := Mux(linking, base, lineOf(ua))
  io.wr.bits.data := Mux(linking, alloc.io.head.pad(p.dataBits), Fill(perLine, entry))
  io.wr.bits.strb := Mux(linking, 0xff.U(p.lineBytes.W),
    (BigInt(0xffff).U(p.lineBytes.W) << (lane(ua) << 4))(p.lineBytes - 1, 0))
  when(io.wr.fire) { state := Mux(linking, sLinkB, sUpdB) }
  when(state === sUpdB && io.wrDone) { state := Mux(upd.valid, sDone, sLinkW) }
  when(state === sLinkB && io.wrDone) {
    alloc.io.push.valid := true.B
    state := sDone
  }
  io.updDone.valid := state === sDone
  io.updDone.bits.obj := upd.obj
  io.updDone.bits.code := code
  io.updDone.bits.base := base
  when(state === sDone) {
    when(code === MapUpdCode.ok) { for (c <- cache) when(c.obj === upd.obj) { c.valid := false.B } }
    state := sIdle
  }
  io.idle := state === sIdle
}
