package apta

import chisel3._
import chisel3.util._

/** Every parameter of the memory-server RTL, in one place (the style of CoupledL2's L2Param).
  *
  * The defaults are schema/'s (ParamDefaults, generated from schema/params.json and the message-field
  * parameters of schema/messages.json), so the simulator and the daemon read the same numbers; Elaborate writes them to build/rtl/params.json
  * and the Python tests compare that file with the schema, so the two cannot drift silently.
  * Vectors from the model checker replay against a build whose servers / directory geometry match
  * the model's configuration (spec/murphi/configs): pass those values here.
  */
case class AptaParams(
  servers: Int = ParamDefaults.servers,          // compute servers (the OTC sharer vector and the OIC counters are this wide)
  dirSets: Int = ParamDefaults.dirSets,          // OTC: directory sets
  dirWays: Int = ParamDefaults.dirWays,           // OTC: directory ways (victim choice prefers cold S entries)
  objIdBits: Int = ParamDefaults.objIdBits,        // object id width
  epochBits: Int = ParamDefaults.epochBits,         // epoch width per compute server (Rejoin increments it)
  linesPerObject: Int = ParamDefaults.linesPerObject,   // cache lines per object (maximum object size)
  txnBits: Int = ParamDefaults.txnBits,           // put transaction id width
  dataBits: Int = ParamDefaults.dataBits,        // one cache line (64 bytes)
  addrBits: Int = ParamDefaults.addrBits,         // host physical address width (object base in ObjBISnp)
  versionBits: Int = ParamDefaults.versionBits,   // an object's version (its commit count): ObjGet's version field, the version table
  stagingSlots: Int = ParamDefaults.stagingSlots,      // OPC: concurrent put transactions staged (PutRetry when full)
  maxPendPerServer: Int = ParamDefaults.maxPendPerServer, // OIC: outstanding invalidations one server may owe per object
  snpRounds: Int = ParamDefaults.snpRounds,         // OIC: invalidation rounds (one commit or eviction each) queued for the BISnp issuer
  respSlots: Int = ParamDefaults.respSlots,         // OTC: resp buffer; requests are accepted only while their answer has a slot
  mutantPort: Boolean = false, // `mutants` variant only: an io_mutant input selecting one deliberate bug (rtl/Mutants.scala)
  // ---- the memory-server top (rtl/MEMSERVER.md) ----
  mapBase: Int = ParamDefaults.mapBase,           // object map: byte address of the direct-mapped entry table in DRAM
  mapEntries: Int = ParamDefaults.mapEntries,     // object map: entries (16 bytes each), entry of obj at index obj % mapEntries
  mapCacheEntries: Int = ParamDefaults.mapCacheEntries,   // object map: fully associative translation cache entries
  axiIdBits: Int = ParamDefaults.axiIdBits,         // AXI4 master: id width (0 map walk, 1 OSC reads, 2 OPC drain, 3 map updates)
  oscBufLines: Int = ParamDefaults.oscBufLines,       // OSC: DRAM read credit (lines in flight or buffered)
  stallBackoff: Int = ParamDefaults.stallBackoff,      // OSC/OPC: cycles before a Stall'd get/commit is retried
  opcTimeout: Int = ParamDefaults.opcTimeout,        // OPC: abort an open put with no line for this many cycles (0 = never)
  commitSeqBits: Int = ParamDefaults.commitSeqBits,  // OPC: width of the committed-puts counter (status.commitSeq; wraps)
  holdSlots: Int = ParamDefaults.holdSlots          // OSC: hold-table entries of versioned gets (0: no hold or version table)
) {
  require(servers >= 1 && servers <= 64, s"servers must be 1..64 (sharer vector), got $servers")
  require(isPow2(dirSets), s"dirSets must be a power of two, got $dirSets")
  require(dirWays >= 1, s"dirWays must be >= 1, got $dirWays")
  require(objIdBits >= log2Ceil(dirSets) + 1,
    s"objIdBits ($objIdBits) must exceed the set index (${log2Ceil(dirSets)} bits) so a tag remains")
  require(epochBits >= 1 && epochBits <= 32, s"epochBits must be 1..32, got $epochBits")
  require(linesPerObject >= 2, s"linesPerObject must be >= 2 (a torn object must be possible), got $linesPerObject")
  require(txnBits >= 1, s"txnBits must be >= 1, got $txnBits")
  require(dataBits % 8 == 0 && dataBits > 0, s"dataBits must be whole bytes, got $dataBits")
  require(addrBits >= 12 && addrBits <= 64, s"addrBits must be 12..64, got $addrBits")
  require(stagingSlots >= 1, s"stagingSlots must be >= 1, got $stagingSlots")
  require(maxPendPerServer >= 1, s"maxPendPerServer must be >= 1, got $maxPendPerServer")
  require(snpRounds >= 1, s"snpRounds must be >= 1, got $snpRounds")
  require(respSlots >= 1, s"respSlots must be >= 1, got $respSlots")
  require(isPow2(mapEntries) && mapEntries >= 1, s"mapEntries must be a power of two, got $mapEntries")
  require(mapBase >= 0 && mapBase % 64 == 0, s"mapBase must be 64-byte aligned, got $mapBase")
  require(mapCacheEntries >= 1, s"mapCacheEntries must be >= 1, got $mapCacheEntries")
  require(axiIdBits >= 2, s"axiIdBits must be >= 2 (four AXI ids), got $axiIdBits")
  require(oscBufLines >= 1 && stallBackoff >= 0 && opcTimeout >= 0, "oscBufLines >= 1, stallBackoff, opcTimeout >= 0")
  require(allocBase + (BigInt(linesPerObject) * lineBytes) < (BigInt(1) << addrBits),
    s"the allocator's arena (from $allocBase) must hold one largest object below 2^addrBits")
  require(versionBits >= 1 && versionBits <= 64, s"versionBits must be 1..64, got $versionBits")
  require(holdSlots >= 0, s"holdSlots must be >= 0, got $holdSlots")
  require(commitSeqBits >= 1 && commitSeqBits <= 64, s"commitSeqBits must be 1..64, got $commitSeqBits")

  // derived widths (names as in schema/messages.json "derived")
  def serverBits: Int = log2Up(servers)                // a server id
  def lineBits: Int = log2Up(linesPerObject)           // a line index
  def lineCountBits: Int = log2Up(linesPerObject + 1)  // a line count 0..linesPerObject
  def setBits: Int = log2Ceil(dirSets) // OTC set index (low bits of the object id)
  def tagBits: Int = objIdBits - setBits
  def wayBits: Int = log2Up(dirWays)
  def slotBits: Int = log2Up(stagingSlots)
  def pendBits: Int = log2Up(maxPendPerServer + 1)
  /** a count of hold-table entries 0..holdSlots (status.held) */
  def heldBits: Int = log2Up(holdSlots + 1)
  def setIdxBits: Int = log2Up(dirSets)               // a set index signal (>= 1 bit; constant 0 when dirSets = 1)
  /** OIC: acks one server may owe in total (every entry at its per-object bound) */
  /** bytes of one line = one AXI beat */
  def lineBytes: Int = dataBits / 8
  /** the map entry table's end (exclusive byte address) */
  def mapEnd: BigInt = BigInt(mapBase) + BigInt(mapEntries) * 16
  def totalPendBits: Int = log2Up(dirSets * dirWays * maxPendPerServer + 1)
  /** the allocator's arena starts at the first 4 KiB (page) boundary after the object map
    * (rtl/MEMSERVER.md "Object storage allocation"); it ends at the DRAM capacity `io_memBytes` */
  def allocAlign: Int = 4096
  def allocBase: BigInt = (mapEnd + allocAlign - 1) / allocAlign * allocAlign
  /** size classes: class k holds extents of 2^k lines, k = 0 .. ceil(log2 linesPerObject) */
  def allocClasses: Int = log2Ceil(linesPerObject) + 1
  def allocClassBits: Int = log2Up(allocClasses)

  /** every parameter and derived width, for build/rtl/<variant>/params.json */
  def allParams: Seq[(String, Any)] =
    productElementNames.zip(productIterator).toSeq ++ Seq(
      "serverBits" -> serverBits, "lineBits" -> lineBits, "lineCountBits" -> lineCountBits,
      "setBits" -> setBits, "tagBits" -> tagBits, "wayBits" -> wayBits, "slotBits" -> slotBits,
      "pendBits" -> pendBits, "totalPendBits" -> totalPendBits, "allocBase" -> allocBase,
      "allocClasses" -> allocClasses)

  /** the values the message schema knows, for build/rtl/params.json */
  def schemaParams: Seq[(String, Int)] = Seq(
    "servers" -> servers, "epochBits" -> epochBits, "objIdBits" -> objIdBits,
    "linesPerObject" -> linesPerObject, "txnBits" -> txnBits, "dataBits" -> dataBits,
    "addrBits" -> addrBits, "serverBits" -> serverBits, "lineBits" -> lineBits,
    "lineCountBits" -> lineCountBits, "versionBits" -> versionBits)
}

/** Mixed into modules and bundles that need the parameters' derived widths. */
trait HasAptaParameters {
  implicit val p: AptaParams
  def flitBits: Int = Messages.flitBits
}
