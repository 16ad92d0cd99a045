package apta

import chisel3._
import chisel3.util._

/** The deliberate bugs of the `mutants` variant (`make rtl-mutants`): each is gated by
  * `io_mutant === id`, so one netlist carries all of them and 0 is the correct design. Ids and
  * names are defined here only; Elaborate writes them to build/rtl/mutants/mutants.json.
  * Several mirror a mutant of the Murphi model (spec/murphi/apta.m `MUTANT`), named in `doc`.
  */
object Mutants {
  /** `unit`: "core" (the CoherenceCore: `mutants` variants), "ms" (the OSC/OPC of the memory-server
    * top: `ms3_mutants`, tests/rtl/test_ms_mutants.py), "epoch" (the core's epoch bound, beyond
    * the model's MAX_EPOCH and the stress's rejoins: `mutants_epochs`, tests/rtl/test_core_epochs.py)
    * or "sram" (visible only with the bench's read-first SRAM model: tests/rtl/test_core_sram.py) */
  case class Mutant(id: Int, name: String, doc: String, unit: String = "core")

  val sharersKeptOnCommit = Mutant(1, "sharers_kept_on_commit",
    "a commit does not clear the old sharers (they stay sharers of the new version after their BISnp)")
  val ackNotDecremented = Mutant(2, "ack_not_decremented",
    "a legal ack does not decrement its counter (the round never settles)")
  val acceptInSI = Mutant(3, "accept_in_SI",
    "a get of an object in SI is Served instead of stalled")
  val fenceIgnored = Mutant(4, "fence_ignored",
    "fencing does not retire the acks the server owes (model: M_FENCE_KEEPS_ACKS)")
  val oldEpochAck = Mutant(5, "old_epoch_ack",
    "an ack's epoch and the fenced flag are not checked (model: M_OLD_EPOCH_ACK)")
  val getSAtoS = Mutant(6, "get_SA_to_S",
    "a get in S^A moves the entry to S, the paper's appendix table (model: M_SA_GET_TO_S)")
  val commitStalledInSA = Mutant(7, "commit_stalled_in_SA",
    "a commit in S^A is answered Stall until every ack arrived, the paper artifact (model: M_STALL_PUT_IN_SA)")

  // ---- the memory server's data path (OSC / OPC) -------------------------------------------------------
  val oscNoForward = Mutant(8, "osc_no_forward",
    "the OSC does not forward from a draining staging slot: a get after PutCommit reads stale DRAM while the put drains", "ms")
  val noGetCommitInterlock = Mutant(9, "no_get_commit_interlock",
    "the OPC commits (and drains) an object the OSC is streaming: a torn reply is possible", "ms")
  val fenceKeepsOpenPut = Mutant(10, "fence_keeps_open_put",
    "a fenced writer's open / complete staging slot is not aborted (its staged lines stay and may commit)", "ms")
  val retryNotIdempotent = Mutant(11, "retry_not_idempotent",
    "a retried PutPrepare with the same (writer, txn) opens a second slot instead of reusing the first", "ms")
  val commitBeforeCore = Mutant(12, "commit_before_core",
    "PutCommit leaves when the Commit is sent to the core, before the core answered Committed", "ms")

  // ---- the epoch bound (OIC: CtrlUnit, ServerTable) ------------------------------------------------------
  val epochWraps = Mutant(13, "epoch_wraps",
    "a Rejoin at the last epoch value wraps the epoch to 0 and is granted (the design without the rule; model: M_EPOCH_WRAP_UNGUARDED)", "epoch")

  // ---- the object-storage allocator (ExtentAlloc, in the object map's update path) ---------------------------
  val allocOverlap = Mutant(14, "alloc_overlap",
    "carving an extent does not advance the bump pointer: the next registration gets the same storage", "ms")
  val allocNoExhaustion = Mutant(15, "alloc_no_exhaustion",
    "the capacity check is gone: extents are carved beyond the DRAM instead of answering noSpace", "ms")

  // ---- the OSC's hold table of versioned gets ----------------------------------------------------------------
  val holdReleaseOld = Mutant(16, "hold_release_old",
    "a held get is released at once, before its version committed: the reader gets the old version (model: M_RELEASE_OLD)", "ms")
  val holdDropAtWriterFence = Mutant(17, "hold_drop_at_writer_fence",
    "fencing a writer whose open put is aborted also drops the gets held for its object (model: M_FENCE_DROPS_HOLDS)", "ms")
  val holdWakeExact = Mutant(18, "hold_wake_exact",
    "the version comparator tests equality instead of >=: a get naming a version older than the current one is held for ever (model: M_RELEASE_EXACT)", "ms")
  val holdFullNoRetry = Mutant(19, "hold_full_no_retry",
    "a versioned get meeting a full hold table is dropped without its GetRetry", "ms")
  val holdSweepLane0 = Mutant(20, "hold_sweep_lane0",
    "the version table's reset sweep clears one counter per row, not the whole row: a slot keeps its pre-reset (or power-up) count and a get naming a version never committed is served at once", "ms")

  // ---- the directory SRAM's read during a write (tests/rtl/test_core_sram.py) ---------------------------
  val otcNoForward = Mutant(21, "otc_no_forward",
    "the OTC does not forward the set S1 wrote to the read of that set in the same cycle: correct only with an SRAM that returns the new data (firtool's simulation model), wrong with a read-first one", "sram")

  val all: Seq[Mutant] = Seq(sharersKeptOnCommit, ackNotDecremented, acceptInSI, fenceIgnored,
    oldEpochAck, getSAtoS, commitStalledInSA,
    oscNoForward, noGetCommitInterlock, fenceKeepsOpenPut, retryNotIdempotent, commitBeforeCore,
    epochWraps, allocOverlap, allocNoExhaustion,
    holdReleaseOld, holdDropAtWriterFence, holdWakeExact, holdFullNoRetry, holdSweepLane0,
    otcNoForward)
  require(all.map(_.id).distinct.size == all.size && !all.exists(_.id == 0), "mutant ids unique, 0 = none")

  /** width of io_mutant */
  def width: Int = log2Up(all.map(_.id).max + 1)

  def json: String = all.map { m =>
    s"""  {"id": ${m.id}, "name": "${m.name}", "unit": "${m.unit}", "doc": "${m.doc.replace("\"", "\\\"")}"}"""
  }.mkString("[\n", ",\n", "\n]\n")
}

/** The selector as seen inside a module: `on(m)` is false.B (no logic at all) unless the variant has
  * the mutant port. */
class MutantSel(sel: Option[UInt]) {
  def on(m: Mutants.Mutant): Bool = sel.map(_ === m.id.U).getOrElse(false.B)
}
