-- apta.m: the Apta object-granular coherence protocol with failures, epochs and the scheduler rule.
--
-- What this models (paper section in brackets; see spec/murphi/README.md for the protocol table):
--   * compute servers running one FaaS function at a time: GET controller (bulk object read,
--     [III-C c1]), PUT controller (one-phase commit: prepare, NUM_LINES line writes, commit
--     [III-C c2]), a Shared-only object cache with the transient states a cross-channel race needs;
--   * the memory server: OSC (serve an object in one reply, forwarding committed lines still in
--     staging), OPC (stage, commit atomically, drain, discard transactions of fenced writers),
--     OTC (object directory I / S / S^A / SI with DIR_CAPACITY entries and eviction), OIC (lazy
--     back-invalidations, outstanding acks counted per object and per compute server) [III-D1];
--   * crash-stop of any compute server at any step, a failure detector that fences (possibly a live
--     server: false suspicion), rejoin in a new epoch with an empty cache; epoch tags on every
--     message so stale acks, zombie puts and stale replies are discarded;
--   * the scheduler rule [III-B b2] as the guard of function placement, in its undeclared form (no
--     pending invalidation at all) and its declared-input form (none for the declared object);
--   * data values: every put writes a fresh put id into every line, so P1-P3 are checked on data.
--
-- Channels: per compute server, four FIFOs, ordered per channel only (so cross-channel races exist):
--   req   (C->M) ObjGet, PutPrepare, PutLine, Rejoin        -- CXL.mem M2S Req/RwD flavoured
--   rsp   (M->C) ObjData, PutCommit, PutRetry, RejoinAck     -- S2M NDR/DRS flavoured
--   snp   (M->C) ObjBISnp: object-granular back-invalidate   -- extension of CXL 3.0 S2M BISnp
--   birsp (C->M) ObjBIRsp: invalidation ack                  -- extension of CXL 3.0 M2S BIRsp
--
-- Bounds that keep the state space finite (stated, not hidden): MAX_PUTS puts per object in a run;
-- MAX_FAULTS crashes plus false suspicions in a run; MAX_EPOCH epochs per server.
--
-- Mutants: MUTANT selects a one-rule switch of this model (M_NONE = the real protocol). Each is listed in
-- spec/murphi/checks.json with the property it must break; `make verify` checks that it does.

------------------------------------------------------------------------------------------------
-- constants (spec/murphi/checks.json overrides the numbers per configuration)
------------------------------------------------------------------------------------------------
const
  NUM_SERVERS: 3;         -- compute servers
  NUM_OBJECTS: 1;         -- objects
  NUM_LINES: 2;           -- cache lines per object (>= 2 so a torn object is possible)
  DIR_CAPACITY: 1;        -- OTC entries (fully associative; < NUM_OBJECTS exercises eviction / SI)
  STAGING_SLOTS: 1;       -- OPC staging buffers (< concurrent writers exercises PutRetry)
  MAX_PUTS: 2;            -- puts per object in one run (put ids 1..MAX_PUTS; 0 = initial value)
  TOTAL_PUTS: NUM_OBJECTS * MAX_PUTS;  -- puts over all objects in one run (<= NUM_OBJECTS x MAX_PUTS): lets a
                          -- configuration race two puts on one object of several without paying
                          -- for MAX_PUTS puts on every object (the objects stay a scalarset)
  MAX_FAULTS: 1;          -- crashes + false suspicions in one run
  MAX_EPOCH: 2;           -- epochs per server: 2 x MAX_FAULTS suffices (a crash during a rejoin
                          -- can cost two); Rejoin asserts it is never exceeded
  EPOCH_MOD: 0;           -- 0: epochs never wrap (the hardware's are wide incarnation numbers).
                          -- k > 0: epochs count modulo k (MAX_EPOCH = k - 1), so a server's epoch
                          -- value is reused and the guard on reuse (EpochReusable) is what keeps an
                          -- old incarnation's messages out of the new one
  OPC_TIMEOUT: true;      -- the OPC may abort an open transaction (timeout); the writer retries
  SILENT_EVICTION: true;  -- compute-server caches may drop a shared object without telling the OTC
  VERSIONED: false;       -- dataflow invocation: a get may name the minimum version it needs
                          -- (its producer's commit); the OSC holds it until that version commits;
                          -- functions may be placed early (before their inputs exist), and then
                          -- read only with versioned gets. false: the paper's protocol, unchanged
  HOLD_SLOTS: 1;          -- entries of the OSC's hold table (VERSIONED only): a full table answers GetRetry
  VECTOR_CELLS: false;    -- ghost vcells records the protocol-table cells of each memory-server step
                          -- (spec/murphi/vectors.py turns it on; off, vcells stays all false)

  -- mutant selector: one-rule switches of the real model (see checks.json)
  M_NONE: 0;
  M_SCHED_RULE_OFF: 1;    -- placement ignores pending invalidations
  M_CXL3_SYNC_INV: 2;     -- CXL 3.0: put answered only after all BIRsp; no failure detector
  M_NO_FENCING: 3;        -- failure detector never fences
  M_OLD_EPOCH_ACK: 4;     -- an ack of an older epoch decrements the new counter
  M_FENCED_SCHEDULABLE: 5;-- placement ignores the fenced flag
  M_NONATOMIC_PUT: 6;     -- PutLine written straight to memory (no staging): CXL line atomicity only
  M_STALL_PUT_IN_SA: 7;   -- the paper artifact: a put waits in S^A until every ack arrived
  M_NO_FORWARD: 8;        -- OSC reads memory only, ignoring committed lines still draining
  M_INSTALL_AFTER_INV: 9; -- GET controller installs data even though a BISnp overtook it
  M_UNDECLARED_READ: 10;  -- a declared-input function may read an object it did not declare
  M_FORWARD_OPEN: 11;     -- OSC also forwards lines of an open (uncommitted) transaction
  M_FENCE_KEEPS_ACKS: 12; -- fencing does not retire the acks the fenced server owes
  M_NO_CAPACITY: 13;      -- the OTC allocates an entry without checking its capacity
  M_SA_GET_TO_S: 14;      -- the paper's table: a get in S^A moves the entry to S
  M_INSTALL_EARLY: 15;    -- the PUT controller installs its version before PutCommit
  -- second mutants: a second class of bug per property, on other configurations
  M_ACK_CLEARS_ALL: 16;   -- an ack clears every round the server owes on the object, not one
  M_FORWARD_PARTIAL: 17;  -- the OSC forwards only the first staged line of a draining put
  M_FENCE_DROPS_DRAINING: 18; -- fencing the writer also discards its committed, draining put
  M_NO_WAKEUP_ON_ACK: 19; -- the OPC does not retry a waiting commit when an ack settles an entry
  M_FULL_NO_RETRY: 20;    -- staging full: the PutPrepare is dropped without a PutRetry
  M_SI_ACK_IGNORED: 21;   -- the OIC ignores acks for an entry being evicted (SI)
  M_INSTALL_ON_RETRY: 22; -- the PUT controller installs its version when told PutRetry
  M_SETTLE_EARLY: 23;     -- an entry settles when the acking server owes nothing, others regardless
  M_FENCE_KEEPS_SHARER: 24; -- fencing leaves the server in the sharer vectors
  M_COMMIT_NO_CAPACITY: 25; -- the OPC commits into I without checking the directory's capacity
  M_EPOCH_WRAP_UNGUARDED: 26; -- a wrapping epoch is granted while the old incarnation's messages
                          -- with that value are still in flight
  -- the versioned-get feature (VERSIONED): one mutant per property
  M_RELEASE_OLD: 27;      -- the OSC releases a held get before its version committed (serves the old one)
  M_FENCE_DROPS_HOLDS: 28;-- fencing a writer also drops the gets held for the object it was writing
  M_HIT_IGNORES_VERSION: 29; -- a versioned get hits any cached copy, whatever its version
  M_EARLY_UNVERSIONED: 30;-- an early-placed function may also read without a version
  M_RELEASE_EXACT: 31;    -- the hold table wakes a get only on a commit of exactly its version
  MUTANT: M_NONE;         -- the real protocol

  -- derived sizes
  REQ_DEPTH: 2 * (NUM_LINES + 1) + 2;   -- a retried put behind its dropped tail, plus Rejoin
  RSP_DEPTH: 3;
  MAX_PEND: MAX_PUTS + 1;               -- outstanding acks per (object, server): puts + 1 eviction
  SNP_DEPTH: NUM_OBJECTS * MAX_PEND * (MAX_FAULTS + 1);   -- a fenced live server's BISnps stay
                                        -- queued (and are ignored) while its next epochs' arrive:
                                        -- one round per object per epoch without a crash
                                        -- (found by evict_two_faults: eviction rounds, 2 faults)
  BIRSP_DEPTH: 2 * SNP_DEPTH;           -- acks of an old epoch may still be queued

------------------------------------------------------------------------------------------------
-- types
------------------------------------------------------------------------------------------------
type
  Server: scalarset(NUM_SERVERS);
  Obj: scalarset(NUM_OBJECTS);
  Slot: scalarset(STAGING_SLOTS);
  Line: 0..NUM_LINES-1;
  PutId: 0..MAX_PUTS;                   -- data value: which put wrote it (0 = initial)
  Rank: 0..MAX_PUTS;                    -- commit order of a put id within its object
  Epoch: 0..MAX_EPOCH;
  Faults: 0..MAX_FAULTS;
  HoldSlot: scalarset(HOLD_SLOTS);
  Pend: 0..MAX_PEND;

  MsgType: enum { ObjGet, PutPrepare, PutLine, Rejoin,          -- req
                  ObjData, PutCommit, PutRetry, RejoinAck,      -- rsp
                  GetRetry, GetCancelled,                       -- rsp, versioned gets only
                  ObjBISnp,                                     -- snp
                  ObjBIRsp };                                   -- birsp

  ObjLines: array[Line] of PutId;       -- an object's data: which put wrote each line

  Msg: record
    mtype: MsgType;
    obj:   Obj;                          -- all but Rejoin / RejoinAck
    line:  Line;                         -- PutLine
    val:   PutId;                        -- PutLine
    data:  ObjLines;                     -- ObjData: the whole object in one reply
    epoch: Epoch;                        -- sender's (C->M) or addressee's (M->C) epoch
    need:  Rank;                         -- ObjGet: the version it needs (commit number; 0 = any)
  end;

  ReqChan:   record q: array[0..REQ_DEPTH-1] of Msg; n: 0..REQ_DEPTH; end;
  RspChan:   record q: array[0..RSP_DEPTH-1] of Msg; n: 0..RSP_DEPTH; end;
  SnpChan:   record q: array[0..SNP_DEPTH-1] of Msg; n: 0..SNP_DEPTH; end;
  BIRspChan: record q: array[0..BIRSP_DEPTH-1] of Msg; n: 0..BIRSP_DEPTH; end;

  -- compute server
  Status: enum { Live, Dead, Joining };
  -- cache state per object; transient names follow <stable>_<event>_<awaited>
  CState: enum { C_I,            -- invalid
                 C_S,            -- shared, version `ver`
                 C_IS_D,         -- ObjGet sent, awaiting ObjData
                 C_IS_D_I,       -- ... and a BISnp overtook the data: use it once, do not install
                 C_P_A,          -- put in flight, awaiting PutCommit (old copy dropped)
                 C_P_A_I };      -- ... and a BISnp arrived: do not install the new version
  CacheLine: record st: CState; ver: PutId; end;
  OpKind: enum { OpNone, OpGet, OpPutSend, OpPutWait };

  ComputeServer: record
    status:   Status;
    epoch:    Epoch;                        -- survives a crash (kept by the server's BMC)
    running:  boolean;                      -- a function is placed here
    declared: boolean;                      -- it declared its inputs ...
    input:    Obj;                          -- ... namely this object
    early:    boolean;                      -- placed early (no pending-invalidation check): versioned gets only
    snap:     array[Obj] of Rank;           -- ghost: commits per object when it was placed (P1)
    op:       OpKind;
    opObj:    Obj;
    opNeed:   Rank;                         -- the get in flight: the version it needs (0 = any)
    putId:    PutId;                        -- put id being written
    sent:     0..NUM_LINES+1;               -- PUT controller: 0 = prepare next, k = line k-1 next
    cache:    array[Obj] of CacheLine;
  end;

  -- the cells of the OTC/OIC protocol table (rtl/CORE.md "Cells": id get.I.alloc is V_get_I_alloc)
  VCell: enum { V_get_I_alloc, V_get_I_evict, V_get_I_full, V_get_S, V_get_SA, V_get_SI,
                V_get_owes, V_get_zombie,
                V_commit_I_alloc, V_commit_I_evict, V_commit_I_full, V_commit_S_alone,
                V_commit_S_inval, V_commit_SA, V_commit_SI,
                V_evict_S_clean, V_evict_S_sharers,
                V_ack_SA_more, V_ack_SA_last, V_ack_SI_more, V_ack_SI_last, V_ack_stale, V_ack_stale_owing,
                V_fence_owes, V_fence_others, V_fence_sharer, V_fence_idle,
                V_rejoin_fenced, V_rejoin_live,
                -- the OSC/OPC table of the memory-server top (rtl/MEMSERVER.md "Cells")
                V_osc_get_mem, V_osc_get_forward, V_osc_get_open,
                V_opc_prepare_open, V_opc_prepare_full, V_opc_line_stage, V_opc_line_commit,
                V_opc_line_orphan, V_opc_drain, V_opc_abort_fence, V_opc_abort_timeout, V_opc_zombie,
                -- its hold table of versioned gets (VERSIONED)
                V_osc_hold, V_osc_hold_full, V_osc_release, V_osc_hold_keep, V_osc_hold_drop,
                V_osc_hold_cancel };

  -- memory server
  DState: enum { D_I, D_S, D_SA, D_SI };    -- OTC directory states (S^A written SA)
  DirEntry: record st: DState; sharers: array[Server] of boolean; end;
  SlotState: enum { SlotFree, SlotOpen, SlotDraining };
  -- the OSC's hold table: a versioned get whose version has not committed waits here
  Held: record valid: boolean; c: Server; o: Obj; need: Rank; end;
  StagingSlot: record
    st:    SlotState;
    owner: Server;
    epoch: Epoch;
    obj:   Obj;
    got:   array[Line] of boolean;          -- staged (Open) / not yet drained (Draining)
    data:  ObjLines;
  end;

------------------------------------------------------------------------------------------------
-- state
------------------------------------------------------------------------------------------------
var
  cs:      array[Server] of ComputeServer;
  req:     array[Server] of ReqChan;
  rsp:     array[Server] of RspChan;
  snp:     array[Server] of SnpChan;
  birsp:   array[Server] of BIRspChan;

  dir:     array[Obj] of DirEntry;                      -- OTC
  pend:    array[Obj] of array[Server] of Pend;         -- OIC: outstanding acks (object, server)
  staging: array[Slot] of StagingSlot;                  -- OPC
  hold:    array[HoldSlot] of Held;                     -- OSC: held versioned gets (VERSIONED)
  mem:     array[Obj] of array[Line] of PutId;          -- DRAM behind the memory controller
  mepoch:  array[Server] of Epoch;                      -- control plane: current epoch per server
  fenced:  array[Server] of boolean;                    -- control plane: fenced by the detector
  owed:    array[Server] of boolean;                    -- CXL 3.0 mutant only: PutCommit withheld
  owedMsg: array[Server] of Msg;

  -- ghosts (never read by the protocol rules, only by properties and counters of the bounds)
  issued:  array[Obj] of PutId;                         -- put ids handed out so far
  commits: array[Obj] of Rank;                          -- commits so far; with VERSIONED also the
                                                        -- memory server's version counter per object,
                                                        -- which its hold decision reads
  rank:    array[Obj] of array[PutId] of Rank;          -- commit rank of a put id (0: not committed)
  faults:  Faults;
  vcells:  array[VCell] of boolean;                     -- cells the last step exercised (VECTOR_CELLS)

------------------------------------------------------------------------------------------------
-- functions: channels
------------------------------------------------------------------------------------------------
procedure SendReq(c: Server; m: Msg);
begin
  assert req[c].n < REQ_DEPTH "req channel overflow: REQ_DEPTH too small";
  req[c].q[req[c].n] := m; req[c].n := req[c].n + 1;
end;

procedure PopReq(c: Server);
begin
  for i := 0 to REQ_DEPTH-2 do req[c].q[i] := req[c].q[i+1]; end;
  undefine req[c].q[REQ_DEPTH-1]; req[c].n := req[c].n - 1;
end;

-- M->C sends: the link drops what is addressed to a crashed server
procedure SendRsp(c: Server; m: Msg);
begin
  if cs[c].status != Dead then
    assert rsp[c].n < RSP_DEPTH "rsp channel overflow: RSP_DEPTH too small";
    rsp[c].q[rsp[c].n] := m; rsp[c].n := rsp[c].n + 1;
  end;
end;

procedure PopRsp(c: Server);
begin
  for i := 0 to RSP_DEPTH-2 do rsp[c].q[i] := rsp[c].q[i+1]; end;
  undefine rsp[c].q[RSP_DEPTH-1]; rsp[c].n := rsp[c].n - 1;
end;

procedure SendSnp(c: Server; m: Msg);
begin
  if cs[c].status != Dead then
    assert snp[c].n < SNP_DEPTH "snp channel overflow: SNP_DEPTH too small";
    snp[c].q[snp[c].n] := m; snp[c].n := snp[c].n + 1;
  end;
end;

procedure PopSnp(c: Server);
begin
  for i := 0 to SNP_DEPTH-2 do snp[c].q[i] := snp[c].q[i+1]; end;
  undefine snp[c].q[SNP_DEPTH-1]; snp[c].n := snp[c].n - 1;
end;

procedure SendBIRsp(c: Server; m: Msg);
begin
  assert birsp[c].n < BIRSP_DEPTH "birsp channel overflow: BIRSP_DEPTH too small";
  birsp[c].q[birsp[c].n] := m; birsp[c].n := birsp[c].n + 1;
end;

procedure PopBIRsp(c: Server);
begin
  for i := 0 to BIRSP_DEPTH-2 do birsp[c].q[i] := birsp[c].q[i+1]; end;
  undefine birsp[c].q[BIRSP_DEPTH-1]; birsp[c].n := birsp[c].n - 1;
end;

function Message(t: MsgType; o: Obj; e: Epoch): Msg;
var m: Msg;
begin
  undefine m; m.mtype := t; m.obj := o; m.epoch := e;
  if t = ObjGet then m.need := 0; end;           -- a get without a version
  return m;
end;

function Control(t: MsgType; e: Epoch): Msg;    -- Rejoin / RejoinAck: no object
var m: Msg;
begin
  undefine m; m.mtype := t; m.epoch := e; return m;
end;

------------------------------------------------------------------------------------------------
-- functions: test-vector cells (ghost: inert unless VECTOR_CELLS; read only by vectors.py's traps)
------------------------------------------------------------------------------------------------
procedure VecStep();                             -- every rule starts a step: no cell yet
begin
  if VECTOR_CELLS then for v: VCell do vcells[v] := false; end; end;
end;

procedure VecCell(v: VCell);                     -- this step exercised cell v
begin
  if VECTOR_CELLS then vcells[v] := true; end;
end;

------------------------------------------------------------------------------------------------
-- functions: memory server
------------------------------------------------------------------------------------------------
function Entries(): 0..NUM_OBJECTS;
var n: 0..NUM_OBJECTS;
begin
  n := 0;
  for o: Obj do if dir[o].st != D_I then n := n + 1; end; end;
  return n;
end;

function DirFull(): boolean;
begin return MUTANT != M_NO_CAPACITY & Entries() >= DIR_CAPACITY; end;

function PendingOn(o: Obj): boolean;           -- OIC: some ack for o outstanding
begin return exists c: Server do pend[o][c] > 0 end; end;

function PendingAt(c: Server): boolean;        -- OIC: c owes some ack (scheduler's query)
begin return exists o: Obj do pend[o][c] > 0 end; end;

function Draining(o: Obj): boolean;
begin return exists s: Slot do staging[s].st = SlotDraining & staging[s].obj = o end; end;

-- P3's view of memory: DRAM, overlaid by committed lines still in staging (OSC forwards them)
function MemView(o: Obj; l: Line): PutId;
begin
  for s: Slot do
    if staging[s].st = SlotDraining & staging[s].obj = o & staging[s].got[l] then
      return staging[s].data[l];
    end;
  end;
  return mem[o][l];
end;

function RankOf(o: Obj; v: PutId): Rank;       -- ghost: commit order of a value (0 = initial)
begin
  if v = 0 then return 0; end;
  return rank[o][v];
end;

function LatestOf(o: Obj): PutId;              -- ghost: the put id committed last
begin
  if commits[o] = 0 then return 0; end;
  for v: PutId do if v != 0 & rank[o][v] = commits[o] then return v; end; end;
  error "no put id has the latest commit rank";
end;

function PutsIssued(): 0..NUM_OBJECTS * MAX_PUTS;   -- ghost: puts handed out over all objects
var n: 0..NUM_OBJECTS * MAX_PUTS;
begin
  n := 0;
  for o: Obj do n := n + issued[o]; end;
  return n;
end;

function Complete(s: Slot): boolean;
begin return staging[s].st = SlotOpen & forall l: Line do staging[s].got[l] end; end;

function GetAtHead(c: Server): boolean;        -- a valid ObjGet waits at the head of c's channel
begin
  return req[c].n > 0 & req[c].q[0].mtype = ObjGet & !fenced[c] & req[c].q[0].epoch = mepoch[c];
end;

-- requests that need a directory entry for an object in I (the eviction's triggers)
function GetNeedsEntry(c: Server): boolean;
begin
  return GetAtHead(c) & req[c].q[0].need <= commits[req[c].q[0].obj]
       & pend[req[c].q[0].obj][c] = 0 & dir[req[c].q[0].obj].st = D_I;
end;

function CommitNeedsEntry(s: Slot): boolean;
begin return Complete(s) & dir[staging[s].obj].st = D_I; end;

-- The contract: a complete put must commit unless the directory has no entry for it yet (SI, or I
-- with the directory full) or an earlier commit of the same object is still draining. Pending
-- invalidation acks (S^A) are no reason to wait [III-B b2].
function PutMayProceed(o: Obj): boolean;
begin
  return !Draining(o) & (dir[o].st = D_S | dir[o].st = D_SA | (dir[o].st = D_I & !DirFull()));
end;

-- The OPC's commit guard as implemented (the S^A stall mutant changes only this).
function CommitAllowed(o: Obj): boolean;
begin
  if MUTANT = M_STALL_PUT_IN_SA & dir[o].st = D_SA then return false; end;
  if MUTANT = M_COMMIT_NO_CAPACITY & dir[o].st = D_I then return !Draining(o); end;
  return PutMayProceed(o);
end;

-- OIC: back-invalidate every sharer, count the acks it owes; the sharer vector is cleared.
procedure InvalidateSharers(o: Obj);
begin
  for c: Server do
    if dir[o].sharers[c] then
      assert pend[o][c] < MAX_PEND "OIC counter overflow";
      pend[o][c] := pend[o][c] + 1;
      SendSnp(c, Message(ObjBISnp, o, mepoch[c]));
    end;
    dir[o].sharers[c] := false;
  end;
end;

procedure Settle(o: Obj);                        -- OTC: the last ack of a round has arrived
begin
  if !PendingOn(o) then
    if dir[o].st = D_SA then dir[o].st := D_S;
    elsif dir[o].st = D_SI then dir[o].st := D_I;
    end;
  end;
end;

-- OTC put cells: the OPC tells the OTC a put committed. Write-allocate: the writer is the sole
-- sharer of the new version; the old sharers get lazy BISnps and the put is answered now.
procedure OtcPut(o: Obj; w: Server);
begin
  switch dir[o].st
  case D_I:  -- "OTC I Put": allocate
    VecCell(V_commit_I_alloc);
    dir[o].st := D_S;
  case D_S:  -- "OTC S Put": invalidate the others lazily
    if exists d: Server do d != w & dir[o].sharers[d] end
    then VecCell(V_commit_S_inval); else VecCell(V_commit_S_alone); end;
    dir[o].sharers[w] := false; InvalidateSharers(o);
    if PendingOn(o) then dir[o].st := D_SA; end;
  case D_SA: -- "OTC SA Put": serviced, not stalled: a new round on top of the pending one
    cover "put serviced in S^A" true;
    VecCell(V_commit_SA);
    dir[o].sharers[w] := false; InvalidateSharers(o);
  else
    error "OtcPut in SI: the OPC must not commit into an entry being evicted";
  end;
  dir[o].sharers[w] := true;
end;

-- OPC commit: make the staged object the committed version, tell the OTC, answer the writer.
procedure Commit(s: Slot);
var o: Obj; w: Server; v: PutId;
begin
  o := staging[s].obj; w := staging[s].owner; v := staging[s].data[0];
  assert CommitAllowed(o) "commit not allowed";
  OtcPut(o, w);
  commits[o] := commits[o] + 1; rank[o][v] := commits[o];
  staging[s].st := SlotDraining;
  for l: Line do staging[s].got[l] := true; end;     -- every line still to drain
  if MUTANT = M_NONATOMIC_PUT then                   -- lines already went to DRAM
    staging[s].st := SlotFree; undefine staging[s].owner; undefine staging[s].epoch;
    undefine staging[s].obj; undefine staging[s].got; undefine staging[s].data;
  end;
  if MUTANT = M_CXL3_SYNC_INV & PendingOn(o) then
    owed[w] := true; owedMsg[w] := Message(PutCommit, o, mepoch[w]);  -- sent at the last BIRsp
  else
    SendRsp(w, Message(PutCommit, o, mepoch[w]));
  end;
end;

-- The OPC re-tries its waiting commits whenever the directory or a drain changes, so a complete
-- put never waits longer than the contract allows (property P4_put_not_stalled_by_acks).
procedure TryCommits();
begin
  for s: Slot do
    if Complete(s) then
      if CommitAllowed(staging[s].obj) then Commit(s); end;
    end;
  end;
end;

procedure FreeSlot(s: Slot);
begin
  staging[s].st := SlotFree;
  undefine staging[s].owner; undefine staging[s].epoch; undefine staging[s].obj;
  undefine staging[s].got; undefine staging[s].data;
end;

-- OSC + OTC: serve c's get of o in one reply (the cells of `OTC get`, and of a released held get).
procedure ServeGet(c: Server; o: Obj);
var m: Msg;
begin
  switch dir[o].st
  case D_I:  dir[o].st := D_S;                      -- "OTC I Get": allocate
    VecCell(V_get_I_alloc);
  case D_SA: cover "get served in S^A" true;        -- "OTC SA Get": stays S^A (paper: -> S)
    VecCell(V_get_SA);
    if MUTANT = M_SA_GET_TO_S then dir[o].st := D_S; end;
  else                                              -- "OTC S Get"
    VecCell(V_get_S);
  end;
  dir[o].sharers[c] := true;
  if Draining(o) then VecCell(V_osc_get_forward); else VecCell(V_osc_get_mem); end;
  if exists s: Slot do staging[s].st = SlotOpen & staging[s].obj = o
                       & exists l: Line do staging[s].got[l] end end
  then VecCell(V_osc_get_open); end;
  m := Message(ObjData, o, mepoch[c]);
  for l: Line do
    if MUTANT = M_NO_FORWARD | (MUTANT = M_FORWARD_PARTIAL & l != 0) then m.data[l] := mem[o][l];
    else m.data[l] := MemView(o, l); end;
    if MUTANT = M_FORWARD_OPEN then
      for s: Slot do
        if staging[s].st = SlotOpen & staging[s].obj = o & staging[s].got[l] then
          m.data[l] := staging[s].data[l];
        end;
      end;
    end;
  end;
  SendRsp(c, m);
end;

-- The directory lets c's get of o be served now: c owes no ack for o (its own BIRsp is on the
-- way, and waiting for it bounds the counters), and o has an entry or one is free (SI stalls).
function GetServable(c: Server; o: Obj): boolean;
begin
  return pend[o][c] = 0
       & (dir[o].st = D_S | dir[o].st = D_SA | (dir[o].st = D_I & !DirFull()));
end;

-- A successor may name version k of o: it has committed, or a put that may make it is running on a
-- live server (its producer, started; k <= issued: no version beyond the puts begun is named).
function VersionNamed(o: Obj; k: Rank): boolean;
begin
  return k <= commits[o]
       | (k <= issued[o] & exists c: Server do cs[c].status = Live
            & (cs[c].op = OpPutSend | cs[c].op = OpPutWait) & cs[c].opObj = o end);
end;

-- A held get may leave the hold table: its version has committed.
function HeldReady(h: HoldSlot): boolean;
begin
  if MUTANT = M_RELEASE_EXACT then return hold[h].valid & commits[hold[h].o] = hold[h].need; end;
  return hold[h].valid & (commits[hold[h].o] >= hold[h].need | MUTANT = M_RELEASE_OLD);
end;

function HoldFree(): boolean;
begin return exists h: HoldSlot do !hold[h].valid end; end;

procedure FreeHold(h: HoldSlot);
begin
  hold[h].valid := false; undefine hold[h].c; undefine hold[h].o; undefine hold[h].need;
end;

-- c's held gets go with c's epoch (fence, rejoin): nobody is left to answer.
procedure DropHolds(c: Server);
begin
  for h: HoldSlot do if hold[h].valid & hold[h].c = c then VecCell(V_osc_hold_drop); FreeHold(h); end; end;
end;

-- Ghost guard of the runtime's cancellation: no put of o can commit any more (the run's puts are
-- all issued, none is in progress at a compute server, in a request channel or open in staging), so
-- a version above commits[o] will never exist. In a deployment the workflow controller decides this
-- (the producer's re-execution budget is spent); here it may cancel only then, so a held get whose
-- version can still be produced is never cancelled and must be served (V2).
function NoPutCanCommit(o: Obj): boolean;
begin
  return (issued[o] = MAX_PUTS | PutsIssued() = TOTAL_PUTS)
       & !(exists c: Server do cs[c].status != Dead & (cs[c].op = OpPutSend | cs[c].op = OpPutWait)
                              & cs[c].opObj = o end)
       & !(exists c: Server do exists i: 0..REQ_DEPTH-1 do
             i < req[c].n & (req[c].q[i].mtype = PutPrepare | req[c].q[i].mtype = PutLine)
             & req[c].q[i].obj = o end end)
       & !(exists s: Slot do staging[s].st = SlotOpen & staging[s].obj = o end);
end;

-- The no-fencing mutants (and CXL 3.0) have no failure detector and retire nothing on rejoin.
function FencingExists(): boolean;
begin return MUTANT != M_NO_FENCING & MUTANT != M_CXL3_SYNC_INV; end;

function CrashedForFD(c: Server): boolean;
begin
  return cs[c].status = Dead | (cs[c].status = Joining & cs[c].epoch = mepoch[c]);
end;

-- Failure detector / fencing step: retire everything c owes, forget it as a sharer, abort its
-- uncommitted transactions. Committed (draining) transactions are durable and keep draining.
procedure Fence(c: Server);
begin
  fenced[c] := true;
  for o: Obj do
    if MUTANT != M_FENCE_KEEPS_ACKS then pend[o][c] := 0; end;
    if MUTANT != M_FENCE_KEEPS_SHARER then dir[o].sharers[c] := false; end;
  end;
  DropHolds(c);
  for s: Slot do
    if staging[s].st = SlotOpen & staging[s].owner = c
       & exists h: HoldSlot do hold[h].valid & hold[h].o = staging[s].obj end
    then VecCell(V_osc_hold_keep); end;                -- the producer's put aborts, its readers wait
    if MUTANT = M_FENCE_DROPS_HOLDS & staging[s].st = SlotOpen & staging[s].owner = c then
      for h: HoldSlot do                            -- the wrong abort: its readers' gets go too
        if hold[h].valid & hold[h].o = staging[s].obj then FreeHold(h); end;
      end;
    end;
    if staging[s].st = SlotOpen & staging[s].owner = c then VecCell(V_opc_abort_fence); FreeSlot(s);
    elsif MUTANT = M_FENCE_DROPS_DRAINING & staging[s].st = SlotDraining & staging[s].owner = c then
      FreeSlot(s);
    end;
  end;
  for o: Obj do Settle(o); end;
  TryCommits();
end;

------------------------------------------------------------------------------------------------
-- functions: compute server
------------------------------------------------------------------------------------------------
function Schedulable(c: Server): boolean;       -- the scheduler rule, undeclared inputs
begin
  return cs[c].status = Live & !cs[c].running
       & (MUTANT = M_FENCED_SCHEDULABLE | !fenced[c])
       & cs[c].epoch = mepoch[c]
       & (MUTANT = M_SCHED_RULE_OFF | !PendingAt(c));
end;

function SchedulableFor(c: Server; o: Obj): boolean;   -- declared input o
begin
  return cs[c].status = Live & !cs[c].running
       & (MUTANT = M_FENCED_SCHEDULABLE | !fenced[c])
       & cs[c].epoch = mepoch[c]
       & (MUTANT = M_SCHED_RULE_OFF | pend[o][c] = 0);
end;

function MayRead(c: Server; o: Obj): boolean;
begin
  return !cs[c].declared | cs[c].input = o | MUTANT = M_UNDECLARED_READ;
end;

procedure Place(c: Server);
begin
  cs[c].running := true;
  for o: Obj do cs[c].snap[o] := commits[o]; end;
end;

procedure FunctionEnds(c: Server);
begin
  cs[c].running := false; cs[c].declared := false; cs[c].early := false;
  undefine cs[c].input; undefine cs[c].snap;
  cs[c].op := OpNone; undefine cs[c].opObj; undefine cs[c].opNeed; undefine cs[c].putId; cs[c].sent := 0;
end;

-- A get returns object o with data d to the function running on c. P1 and P2 are checked on the
-- value returned, here, rather than on a ghost copy kept in the state (which would multiply it).
procedure Returned(c: Server; o: Obj; d: ObjLines; need: Rank);
begin
  -- P2: no get ever returns a torn object (lines written by different puts).
  assert forall l: Line do d[l] = d[0] end "P2_no_torn_get";
  -- P1: a get by a function placed after a put committed returns that version or a newer
  -- committed one: what it returns is committed, and its commit rank is at least the number of
  -- commits of o when the function was placed. A versioned get of an early-placed function
  -- promises only V1 (its version), which is all its workflow edge needs.
  if !cs[c].early | need = 0 then
    assert (d[0] = 0 | rank[o][d[0]] > 0) & RankOf(o, d[0]) >= cs[c].snap[o]
      "P1_get_returns_latest_at_placement";
  end;
  -- V1: a versioned get never returns a version older than the one it names.
  assert need = 0 | ((d[0] = 0 | rank[o][d[0]] > 0) & RankOf(o, d[0]) >= need)
    "V1_get_returns_required_version";
end;

procedure ClearCache(c: Server);
begin
  for o: Obj do cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver; end;
end;

-- a crash loses the volatile state (cache, function, outstanding operation) and what the links
-- were delivering; what the server had already sent stays in flight (zombie messages)
procedure LoseState(c: Server);
begin
  ClearCache(c); FunctionEnds(c);
  undefine rsp[c].q; rsp[c].n := 0;
  undefine snp[c].q; snp[c].n := 0;
end;

-- Epochs (a wide incarnation number in the hardware, a small counter here when EPOCH_MOD > 0).
function NextEpoch(c: Server): Epoch;
begin
  if EPOCH_MOD = 0 then return mepoch[c] + 1; end;
  return (mepoch[c] + 1) % EPOCH_MOD;
end;

function Stamped(m: Msg; e: Epoch): boolean;
begin return !isundefined(m.epoch) & m.epoch = e; end;

-- The guard on reuse: the memory server grants c an epoch value again only when no message stamped
-- with it is still in flight between c and the memory server (its acks drained, its snoop and reply
-- queues emptied: the memory server counts both with the link's credits). Everything older than
-- the Rejoin on c's request channel is already consumed (FIFO); what remains drains by itself
-- (a joining server consumes and ignores replies and snoops), so the wait always ends.
function EpochReusable(c: Server): boolean;
var e: Epoch;
begin
  if EPOCH_MOD = 0 | MUTANT = M_EPOCH_WRAP_UNGUARDED then return true; end;
  e := NextEpoch(c);
  -- (the head of req is this Rejoin: it carries the epoch it leaves, which may be e)
  return !(exists i: 1..REQ_DEPTH-1 do i < req[c].n & Stamped(req[c].q[i], e) end)
       & !(exists i: 0..RSP_DEPTH-1 do i < rsp[c].n & Stamped(rsp[c].q[i], e) end)
       & !(exists i: 0..SNP_DEPTH-1 do i < snp[c].n & Stamped(snp[c].q[i], e) end)
       & !(exists i: 0..BIRSP_DEPTH-1 do i < birsp[c].n & Stamped(birsp[c].q[i], e) end);
end;

procedure SendRejoin(c: Server);
begin
  cs[c].status := Joining;
  SendReq(c, Control(Rejoin, cs[c].epoch));
end;

------------------------------------------------------------------------------------------------
-- rules: scheduler and FaaS functions (compute side)
------------------------------------------------------------------------------------------------
ruleset c: Server do

  -- Early placement (VERSIONED): a function whose gets all name their versions needs no
  -- pending-invalidation check: a stale copy is older than the version it names, hence a miss.
  rule "Sched place (early: versioned gets only)"
    VERSIONED & cs[c].status = Live & !cs[c].running
    & (MUTANT = M_FENCED_SCHEDULABLE | !fenced[c]) & cs[c].epoch = mepoch[c]
  ==>
  begin
    VecStep();
    cover "early placement on a server with pending invalidations" PendingAt(c);
    Place(c); cs[c].declared := false; cs[c].early := true;
  end;

  rule "Sched place (undeclared inputs)"
    Schedulable(c)
  ==>
  begin
    VecStep();
    cover "placement while another server has pending invalidations"
      exists d: Server do d != c & PendingAt(d) end;
    Place(c); cs[c].declared := false;
  end;

  ruleset o: Obj do
    rule "Sched place (declared input)"
      NUM_OBJECTS > 1 & SchedulableFor(c, o)
    ==>
    begin
      VecStep();
      cover "declared placement beside an undeclared pending object" PendingAt(c);
      Place(c); cs[c].declared := true; cs[c].input := o;
    end;
  end;

  ruleset o: Obj do
    rule "Fn get: hit"
      cs[c].status = Live & cs[c].running & cs[c].op = OpNone & MayRead(c, o)
      & (!cs[c].early | MUTANT = M_EARLY_UNVERSIONED)
      & cs[c].cache[o].st = C_S
    ==>
    var d: ObjLines;
    begin
      VecStep();
      for l: Line do d[l] := cs[c].cache[o].ver; end;
      Returned(c, o, d, 0);
    end;

    rule "Fn get: miss, GET controller sends ObjGet"
      cs[c].status = Live & cs[c].running & cs[c].op = OpNone & MayRead(c, o)
      & (!cs[c].early | MUTANT = M_EARLY_UNVERSIONED)
      & cs[c].cache[o].st = C_I
    ==>
    begin
      VecStep();
      cs[c].cache[o].st := C_IS_D; cs[c].op := OpGet; cs[c].opObj := o; cs[c].opNeed := 0;
      SendReq(c, Message(ObjGet, o, cs[c].epoch));
    end;

    -- Versioned gets (VERSIONED). A function names version k of o: the commit its
    -- producer's put makes. It asks only while that version exists or its producer is running
    -- (VersionNamed): the plugin creates successor pods when the predecessor starts, and while a
    -- dead producer waits for its re-execution no new successor may take a server, or waiting
    -- readers could fill every server and leave none for the re-executed put (Rumur found that
    -- deadlock when the guard was only k <= issued; see README "Versioned gets"). The
    -- cache keeps the version number ObjData and PutCommit carry (here: the put id's commit rank,
    -- fixed at its commit; cached values are committed), so a copy older than k is a miss.
    ruleset k: Rank do
      rule "Fn get (version k): hit"
        VERSIONED & k > 0 & VersionNamed(o, k)
        & cs[c].status = Live & cs[c].running & cs[c].op = OpNone & MayRead(c, o)
        & cs[c].cache[o].st = C_S
        & (RankOf(o, cs[c].cache[o].ver) >= k | MUTANT = M_HIT_IGNORES_VERSION)
      ==>
      var d: ObjLines;
      begin
        VecStep();
        cover "versioned hit beside a pending invalidation" pend[o][c] > 0;
        for l: Line do d[l] := cs[c].cache[o].ver; end;
        Returned(c, o, d, k);
      end;

      rule "Fn get (version k): miss, ObjGet names k (an older copy is dropped)"
        VERSIONED & k > 0 & VersionNamed(o, k)
        & cs[c].status = Live & cs[c].running & cs[c].op = OpNone & MayRead(c, o)
        & (cs[c].cache[o].st = C_I
           | (cs[c].cache[o].st = C_S & RankOf(o, cs[c].cache[o].ver) < k
              & MUTANT != M_HIT_IGNORES_VERSION))
      ==>
      var m: Msg;
      begin
        VecStep();
        cover "versioned get drops an older cached copy" cs[c].cache[o].st = C_S;
        cs[c].cache[o].st := C_IS_D; undefine cs[c].cache[o].ver;
        cs[c].op := OpGet; cs[c].opObj := o; cs[c].opNeed := k;
        m := Message(ObjGet, o, cs[c].epoch); m.need := k;
        SendReq(c, m);
      end;
    end;

    rule "Fn get: undeclared object is an error"
      cs[c].status = Live & cs[c].running & cs[c].op = OpNone & !MayRead(c, o)
    ==>
    begin
      VecStep();
      cover "undeclared read rejected" true;
      FunctionEnds(c);                           -- the function fails; the runtime re-executes it
    end;

    rule "Fn put: PUT controller starts a transaction"
      cs[c].status = Live & cs[c].running & cs[c].op = OpNone & issued[o] < MAX_PUTS
      & PutsIssued() < TOTAL_PUTS
    ==>
    begin
      VecStep();
      issued[o] := issued[o] + 1;
      cs[c].op := OpPutSend; cs[c].opObj := o; cs[c].putId := issued[o]; cs[c].sent := 0;
      cs[c].cache[o].st := C_P_A; undefine cs[c].cache[o].ver;
    end;
  end;

  rule "PUT ctl: send PutPrepare"
    cs[c].status = Live & cs[c].op = OpPutSend & cs[c].sent = 0
  ==>
  begin
    VecStep();
    SendReq(c, Message(PutPrepare, cs[c].opObj, cs[c].epoch));
    cs[c].sent := 1;
  end;

  rule "PUT ctl: send PutLine"
    cs[c].status = Live & cs[c].op = OpPutSend & cs[c].sent > 0
  ==>
  var m: Msg;
  begin
    VecStep();
    m := Message(PutLine, cs[c].opObj, cs[c].epoch);
    m.line := cs[c].sent - 1; m.val := cs[c].putId;
    SendReq(c, m);
    if cs[c].sent = NUM_LINES then
      cs[c].op := OpPutWait; cs[c].sent := 0;
      if MUTANT = M_INSTALL_EARLY then
        cs[c].cache[cs[c].opObj].st := C_S; cs[c].cache[cs[c].opObj].ver := cs[c].putId;
      end;
    else cs[c].sent := cs[c].sent + 1;
    end;
  end;

  ruleset o: Obj do
    rule "Cache silent eviction of a shared object"     -- no PutS to the directory [III-A a2]
      SILENT_EVICTION & cs[c].status = Live & cs[c].cache[o].st = C_S
    ==>
    begin
      VecStep();
      cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
    end;
  end;

  rule "Fn finish"
    cs[c].status = Live & cs[c].running & cs[c].op = OpNone
  ==>
  begin
    VecStep();
    FunctionEnds(c);
  end;

------------------------------------------------------------------------------------------------
-- rules: compute side, inbound channels
------------------------------------------------------------------------------------------------
  rule "GET ctl: receive rsp"
    rsp[c].n > 0 & cs[c].status != Dead
  ==>
  var m: Msg; o: Obj;
  begin
    VecStep();
    m := rsp[c].q[0]; PopRsp(c);
    if cs[c].status = Joining then
      if m.mtype = RejoinAck then                -- rejoined: new epoch, empty cache
        cover "rejoin in a new epoch" true;
        cs[c].status := Live; cs[c].epoch := m.epoch;
      end;                                       -- anything else is from the old epoch: dropped
    elsif m.epoch != cs[c].epoch | m.mtype = RejoinAck then
      cover "stale reply discarded" true;
    else
      o := m.obj;
      switch m.mtype
      case ObjData:
        assert cs[c].op = OpGet & cs[c].opObj = o "ObjData without a get";
        Returned(c, o, m.data, cs[c].opNeed);
        if cs[c].cache[o].st = C_IS_D | MUTANT = M_INSTALL_AFTER_INV then
          cs[c].cache[o].st := C_S; cs[c].cache[o].ver := m.data[0];
        else
          cover "BISnp overtook ObjData (IS_D_I)" true;
          cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
        end;
        cs[c].op := OpNone; undefine cs[c].opObj; undefine cs[c].opNeed;
      case GetRetry:                             -- hold table full: the get is not held; ask again later
        assert cs[c].op = OpGet & cs[c].opObj = o "GetRetry without a get";
        cover "versioned get retried: hold table full" true;
        cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
        cs[c].op := OpNone; undefine cs[c].opObj; undefine cs[c].opNeed;
      case GetCancelled:                         -- the version will never exist: the function fails
        assert cs[c].op = OpGet & cs[c].opObj = o "GetCancelled without a get";
        cover "held get cancelled: its version can never commit" true;
        cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
        FunctionEnds(c);
      case PutCommit:
        assert cs[c].op = OpPutWait & cs[c].opObj = o "PutCommit without a put";
        if cs[c].cache[o].st = C_P_A then
          cs[c].cache[o].st := C_S; cs[c].cache[o].ver := cs[c].putId;
        else
          cover "BISnp overtook PutCommit (P_A_I)" true;
          cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
        end;
        cs[c].op := OpNone; undefine cs[c].opObj; undefine cs[c].putId;
      case PutRetry:                             -- staging full or timed out: same put id again
        assert (cs[c].op = OpPutWait | cs[c].op = OpPutSend) & cs[c].opObj = o "PutRetry without a put";
        cover "put retried" true;
        if MUTANT = M_INSTALL_ON_RETRY then cs[c].cache[o].st := C_S; cs[c].cache[o].ver := cs[c].putId; end;
        cs[c].op := OpPutSend; cs[c].sent := 0;
      else
        error "unexpected message on rsp";
      end;
    end;
  end;

  rule "GET ctl: receive ObjBISnp"
    snp[c].n > 0 & cs[c].status != Dead
  ==>
  var m: Msg; o: Obj;
  begin
    VecStep();
    m := snp[c].q[0]; PopSnp(c); o := m.obj;
    if cs[c].status = Live & m.epoch = cs[c].epoch then
      switch cs[c].cache[o].st
      case C_S:    cs[c].cache[o].st := C_I; undefine cs[c].cache[o].ver;
      case C_IS_D: cs[c].cache[o].st := C_IS_D_I;
      case C_P_A:  cs[c].cache[o].st := C_P_A_I;
      else         -- I, IS_D_I, P_A_I: nothing cached to drop
      end;
      SendBIRsp(c, Message(ObjBIRsp, o, cs[c].epoch));
    else
      cover "BISnp of an old epoch ignored" true;
    end;
  end;

------------------------------------------------------------------------------------------------
-- rules: faults (bounded by MAX_FAULTS) and recovery
------------------------------------------------------------------------------------------------
  -- A crashed server may stay down for ever: it simply never takes "Reboot".
  rule "Crash"
    cs[c].status != Dead & faults < MAX_FAULTS
  ==>
  begin
    VecStep();
    cover "crash while owing acks" PendingAt(c);
    cover "crash mid-put" cs[c].op = OpPutSend | cs[c].op = OpPutWait;
    cover "crash mid-get" cs[c].op = OpGet;
    cover "crash holding a copy" exists o: Obj do cs[c].cache[o].st = C_S end;
    faults := faults + 1;
    cs[c].status := Dead;
    LoseState(c);
  end;

  rule "Reboot: send Rejoin"
    cs[c].status = Dead
  ==>
  begin
    VecStep();
    SendRejoin(c);
  end;

  rule "Lease refused: a fenced live server drops its state and rejoins"
    cs[c].status = Live & fenced[c]
  ==>
  begin
    VecStep();
    cover "fenced live server told to rejoin" true;
    ClearCache(c); FunctionEnds(c);   -- its links keep running: old-epoch replies are discarded
    SendRejoin(c);
  end;

  -- Fencing a crashed server (or one rebooting whose Rejoin is not yet processed) is the detector
  -- doing its job; fencing any other server is a false suspicion and counts as a fault.
  rule "FD fence"
    !fenced[c] & FencingExists() & (CrashedForFD(c) | faults < MAX_FAULTS)
  ==>
  begin
    VecStep();
    if !CrashedForFD(c) then
      cover "false suspicion: live server fenced" true;
      faults := faults + 1;
    end;
    cover "fence retires owed acks" PendingAt(c);
    cover "fence while a BISnp or its ack is in flight" snp[c].n > 0 | birsp[c].n > 0;
    if PendingAt(c) then VecCell(V_fence_owes); end;
    -- the walk meets an entry another server still owes acks for: it must not settle it
    if exists o: Obj do exists d: Server do d != c & pend[o][d] > 0 end end then VecCell(V_fence_others); end;
    if exists o: Obj do dir[o].sharers[c] end then VecCell(V_fence_sharer); end;
    if !PendingAt(c) & !(exists o: Obj do dir[o].sharers[c] end) then VecCell(V_fence_idle); end;
    Fence(c);
  end;

------------------------------------------------------------------------------------------------
-- rules: memory server, request channel of c (OSC, OPC, OTC, control plane)
------------------------------------------------------------------------------------------------
  rule "MS: discard request of a fenced server or an old epoch"
    req[c].n > 0 & req[c].q[0].mtype != Rejoin
    & (fenced[c] | req[c].q[0].epoch != mepoch[c])
  ==>
  begin
    VecStep();
    cover "zombie put discarded"
      req[c].q[0].mtype = PutPrepare | req[c].q[0].mtype = PutLine;
    if req[c].q[0].mtype = ObjGet then VecCell(V_get_zombie); end;
    if req[c].q[0].mtype = PutPrepare | req[c].q[0].mtype = PutLine then VecCell(V_opc_zombie); end;
    PopReq(c);
  end;

  rule "MS: Rejoin (fence if needed, new epoch)"
    req[c].n > 0 & req[c].q[0].mtype = Rejoin & EpochReusable(c)
  ==>
  begin
    VecStep();
    assert EPOCH_MOD > 0 | mepoch[c] < MAX_EPOCH "model bound: MAX_EPOCH too small for MAX_FAULTS";
    cover "epoch value reused" EPOCH_MOD > 0 & NextEpoch(c) < mepoch[c];
    PopReq(c);
    if fenced[c] then VecCell(V_rejoin_fenced); else VecCell(V_rejoin_live); end;
    if !fenced[c] & FencingExists() then Fence(c); end;
    DropHolds(c);                                 -- (already dropped at the fence, if any)
    mepoch[c] := NextEpoch(c); fenced[c] := false;
    SendRsp(c, Control(RejoinAck, mepoch[c]));
  end;

  -- OSC + OTC get cells. SI stalls, and so does a get from a server that still owes an ack for
  -- the same object (it is live: its own BIRsp is on the way); no rule fires, the request waits.
  rule "OTC get: I, S or S^A (serve the object in one reply)"
    GetAtHead(c) & req[c].q[0].need <= commits[req[c].q[0].obj]
    & GetServable(c, req[c].q[0].obj)
  ==>
  var o: Obj;
  begin
    VecStep();
    o := req[c].q[0].obj; PopReq(c);
    ServeGet(c, o);
  end;

  -- Versioned gets whose version has not committed (VERSIONED): the OSC holds the get
  -- (no directory entry yet: it is not a sharer of anything) and serves it once the version
  -- commits; with the hold table full it answers GetRetry at once, so the channel never blocks.
  rule "OSC get: version not committed, hold"
    GetAtHead(c) & req[c].q[0].need > commits[req[c].q[0].obj] & HoldFree()
  ==>
  var found: boolean;
  begin
    VecStep();
    cover "get held until its version commits" true;
    VecCell(V_osc_hold);
    found := false;
    for h: HoldSlot do
      if !found & !hold[h].valid then
        found := true;
        hold[h].valid := true; hold[h].c := c; hold[h].o := req[c].q[0].obj;
        hold[h].need := req[c].q[0].need;
      end;
    end;
    PopReq(c);
  end;

  rule "OSC get: version not committed, hold table full: GetRetry"
    GetAtHead(c) & req[c].q[0].need > commits[req[c].q[0].obj] & !HoldFree()
  ==>
  begin
    VecStep();
    VecCell(V_osc_hold_full);
    SendRsp(c, Message(GetRetry, req[c].q[0].obj, mepoch[c]));
    PopReq(c);
  end;

  rule "OPC PutPrepare: open a staging slot or answer PutRetry"
    req[c].n > 0 & req[c].q[0].mtype = PutPrepare & !fenced[c] & req[c].q[0].epoch = mepoch[c]
  ==>
  var o: Obj; found: boolean;
  begin
    VecStep();
    o := req[c].q[0].obj; PopReq(c);
    found := false;
    for s: Slot do
      if !found & staging[s].st = SlotFree then
        found := true;
        staging[s].st := SlotOpen; staging[s].owner := c; staging[s].epoch := mepoch[c];
        staging[s].obj := o;
        for l: Line do staging[s].got[l] := false; end;
        undefine staging[s].data;
        VecCell(V_opc_prepare_open);
      end;
    end;
    if !found then
      cover "staging full: PutRetry" true;
      VecCell(V_opc_prepare_full);
      if MUTANT != M_FULL_NO_RETRY then SendRsp(c, Message(PutRetry, o, mepoch[c])); end;
    end;
  end;

  rule "OPC PutLine: stage (commit when the last line arrives)"
    req[c].n > 0 & req[c].q[0].mtype = PutLine & !fenced[c] & req[c].q[0].epoch = mepoch[c]
  ==>
  var m: Msg; found: boolean;
  begin
    VecStep();
    m := req[c].q[0]; PopReq(c);
    found := false;
    for s: Slot do
      if staging[s].st = SlotOpen & staging[s].owner = c then
        assert staging[s].obj = m.obj & staging[s].epoch = m.epoch "PutLine of another transaction";
        found := true;
        staging[s].got[m.line] := true; staging[s].data[m.line] := m.val;
        if MUTANT = M_NONATOMIC_PUT then mem[m.obj][m.line] := m.val; end;
        if Complete(s) then VecCell(V_opc_line_commit); else VecCell(V_opc_line_stage); end;
      end;
    end;
    if found then
      TryCommits();
    else
      cover "line of a rejected or aborted transaction dropped" true;
      VecCell(V_opc_line_orphan);
    end;
  end;

------------------------------------------------------------------------------------------------
-- rules: memory server, invalidation acks of c (OIC)
------------------------------------------------------------------------------------------------
  rule "OIC ObjBIRsp"
    birsp[c].n > 0
  ==>
  var m: Msg;
  begin
    VecStep();
    m := birsp[c].q[0]; PopBIRsp(c);
    if ((m.epoch = mepoch[c] & !fenced[c]) | MUTANT = M_OLD_EPOCH_ACK)
       & !(MUTANT = M_SI_ACK_IGNORED & dir[m.obj].st = D_SI) then
      if pend[m.obj][c] > 0 then
        if MUTANT = M_ACK_CLEARS_ALL then pend[m.obj][c] := 0;
        else pend[m.obj][c] := pend[m.obj][c] - 1; end;
        switch dir[m.obj].st
        case D_SA: if PendingOn(m.obj) then VecCell(V_ack_SA_more); else VecCell(V_ack_SA_last); end;
        case D_SI: if PendingOn(m.obj) then VecCell(V_ack_SI_more); else VecCell(V_ack_SI_last); end;
        end;
        if MUTANT = M_SETTLE_EARLY & pend[m.obj][c] = 0 then   -- looks at the acking server only
          if dir[m.obj].st = D_SA then dir[m.obj].st := D_S;
          elsif dir[m.obj].st = D_SI then dir[m.obj].st := D_I; end;
        end;
        Settle(m.obj);
        if MUTANT != M_NO_WAKEUP_ON_ACK then TryCommits(); end;
        if MUTANT = M_CXL3_SYNC_INV & !PendingOn(m.obj) then
          for w: Server do                       -- CXL 3.0: the writer is answered only now
            if owed[w] & owedMsg[w].obj = m.obj then
              SendRsp(w, owedMsg[w]);
              owed[w] := false; undefine owedMsg[w];
            end;
          end;
        end;
      else VecCell(V_ack_stale);                  -- nothing owed: discarded
      end;
    else
      cover "ack of an old epoch or fenced server discarded" true;
      -- a late ack of the old epoch must not pay for the new epoch's round (P1's counters)
      if pend[m.obj][c] > 0 then VecCell(V_ack_stale_owing); else VecCell(V_ack_stale); end;
    end;
  end;

end; -- ruleset c

------------------------------------------------------------------------------------------------
-- rules: memory server internals
------------------------------------------------------------------------------------------------
ruleset s: Slot; l: Line do
  rule "OPC drain a committed line to DRAM"
    staging[s].st = SlotDraining & staging[s].got[l]
  ==>
  begin
    VecStep();
    mem[staging[s].obj][l] := staging[s].data[l];
    staging[s].got[l] := false;
    if forall k: Line do !staging[s].got[k] end then
      VecCell(V_opc_drain);
      FreeSlot(s);
      TryCommits();
    end;
  end;
end;

ruleset s: Slot do
  rule "OPC timeout: abort an open transaction, answer PutRetry"
    OPC_TIMEOUT & staging[s].st = SlotOpen & !Complete(s)
  ==>
  var c: Server; o: Obj;
  begin
    VecStep();
    c := staging[s].owner; o := staging[s].obj;
    cover "OPC timeout abort" true;
    VecCell(V_opc_abort_timeout);
    SendRsp(c, Message(PutRetry, o, staging[s].epoch));
    FreeSlot(s);
  end;
end;

-- A held get leaves the hold table once its version committed and the directory can serve it (the
-- commit wakes the entries holding its object; no polling): the same cells as `OTC get`.
-- Fencing and rejoin drop c's held gets, so a held get is always of c's current epoch.
ruleset h: HoldSlot do
  rule "OSC release a held get (its version committed)"
    HeldReady(h) & GetServable(hold[h].c, hold[h].o)
  ==>
  var c: Server; o: Obj;
  begin
    VecStep();
    c := hold[h].c; o := hold[h].o;
    cover "held get released with a newer version than it named" commits[o] > hold[h].need;
    VecCell(V_osc_release);
    FreeHold(h);
    ServeGet(c, o);
  end;

  rule "Runtime cancels a held get: its version can never commit"
    VERSIONED & hold[h].valid & commits[hold[h].o] < hold[h].need & NoPutCanCommit(hold[h].o)
  ==>
  var c: Server; o: Obj;
  begin
    VecStep();
    c := hold[h].c; o := hold[h].o;
    VecCell(V_osc_hold_cancel);
    FreeHold(h);
    SendRsp(c, Message(GetCancelled, o, mepoch[c]));
  end;
end;

-- a released held get needs an entry for an object in I (the eviction's third trigger)
function HeldNeedsEntry(): boolean;
begin
  return exists h: HoldSlot do HeldReady(h) & pend[hold[h].o][hold[h].c] = 0 & dir[hold[h].o].st = D_I end;
end;

-- OTC eviction: a request (get or complete put) needs an entry and the directory is full; evict a
-- shared victim (the paper evicts a cold S entry), back-invalidating its sharers -> SI.
ruleset v: Obj do
  rule "OTC S evict (directory full) -> SI"
    dir[v].st = D_S & DirFull()
    & ((exists c: Server do GetNeedsEntry(c) end) | (exists s: Slot do CommitNeedsEntry(s) end)
       | HeldNeedsEntry())
  ==>
  begin
    VecStep();
    cover "eviction with a crashed sharer"
      exists c: Server do dir[v].sharers[c] & cs[c].status = Dead end;
    cover "eviction for a complete put waiting for an entry"
      exists s: Slot do Complete(s) & dir[staging[s].obj].st = D_I end;
    if exists c: Server do dir[v].sharers[c] end
    then VecCell(V_evict_S_sharers); else VecCell(V_evict_S_clean); end;
    if exists c: Server do GetNeedsEntry(c) end then VecCell(V_get_I_evict); end;
    if exists s: Slot do CommitNeedsEntry(s) end then VecCell(V_commit_I_evict); end;
    InvalidateSharers(v);
    dir[v].st := D_SI;
    Settle(v);
    TryCommits();
  end;
end;

------------------------------------------------------------------------------------------------
-- test-vector traps (spec/murphi/vectors.py adds `invariant "trap: <cell>" !VecHit(V_<cell>)`)
------------------------------------------------------------------------------------------------
-- Cell v was exercised by the last step, or (the stall cells) a request the core must answer
-- Stall waits at the head of its channel (a commit: a complete staging slot it may not commit).
function VecHit(v: VCell): boolean;
begin
  switch v
  case V_get_I_full:
    return DirFull() & !(exists o: Obj do dir[o].st = D_S end)
         & exists c: Server do GetNeedsEntry(c) end;
  case V_get_SI:
    return exists c: Server do
      GetAtHead(c) & req[c].q[0].need <= commits[req[c].q[0].obj]
      & pend[req[c].q[0].obj][c] = 0 & dir[req[c].q[0].obj].st = D_SI end;
  case V_get_owes:
    return exists c: Server do
      GetAtHead(c) & req[c].q[0].need <= commits[req[c].q[0].obj] & pend[req[c].q[0].obj][c] > 0 end;
  case V_commit_I_full:
    return DirFull() & !(exists o: Obj do dir[o].st = D_S end)
         & exists s: Slot do CommitNeedsEntry(s) & !Draining(staging[s].obj) end;
  case V_commit_SI:
    return exists s: Slot do Complete(s) & dir[staging[s].obj].st = D_SI end;
  else
    return vcells[v];
  end;
end;

------------------------------------------------------------------------------------------------
-- start state
------------------------------------------------------------------------------------------------
startstate "all servers live in epoch 0, every object committed as put id 0"
begin
  undefine cs; undefine req; undefine rsp; undefine snp; undefine birsp;
  undefine staging;
  for c: Server do
    cs[c].status := Live; cs[c].epoch := 0;
    cs[c].running := false; cs[c].declared := false; cs[c].early := false;
    cs[c].op := OpNone; cs[c].sent := 0;
    for o: Obj do cs[c].cache[o].st := C_I; end;
    req[c].n := 0; rsp[c].n := 0; snp[c].n := 0; birsp[c].n := 0;
    mepoch[c] := 0; fenced[c] := false; owed[c] := false;
  end;
  for o: Obj do
    dir[o].st := D_I;
    for c: Server do dir[o].sharers[c] := false; pend[o][c] := 0; end;
    for l: Line do mem[o][l] := 0; end;
    issued[o] := 0; commits[o] := 0;
    for p: PutId do rank[o][p] := 0; end;
  end;
  for s: Slot do staging[s].st := SlotFree; end;
  undefine hold;
  for h: HoldSlot do hold[h].valid := false; end;
  faults := 0;
  for v: VCell do vcells[v] := false; end;
end;

------------------------------------------------------------------------------------------------
-- properties
------------------------------------------------------------------------------------------------
-- P3: the memory server always holds the latest committed version (committed lines still in the
-- OPC's staging count as memory); nothing uncommitted is ever visible in it.
invariant "P3_memory_holds_latest_commit"
  forall o: Obj do forall l: Line do MemView(o, l) = LatestOf(o) end end;

-- P1 and P2 are assertions on every value a get returns: see procedure Returned.

-- P1's inductive core, what the scheduler rule relies on: a live, unfenced server's copy that is
-- no longer the latest is covered by an outstanding ack for that object.
invariant "P1_stale_copies_are_pending"
  forall c: Server do forall o: Obj do
    (cs[c].status = Live & !fenced[c] & cs[c].epoch = mepoch[c] & cs[c].cache[o].st = C_S
     & RankOf(o, cs[c].cache[o].ver) < commits[o])
      -> pend[o][c] > 0
  end end;

-- P4 (safety half): a complete put is never held back by pending invalidation acks; it waits only
-- for a directory entry (SI / full) or an earlier drain of the same object.
invariant "P4_put_not_stalled_by_acks"
  forall s: Slot do Complete(s) -> !PutMayProceed(staging[s].obj) end;

-- A cache never holds a value that was not committed.
invariant "Cache_holds_committed_values"
  forall c: Server do forall o: Obj do
    cs[c].cache[o].st = C_S -> (cs[c].cache[o].ver = 0 | rank[o][cs[c].cache[o].ver] > 0)
  end end;

-- OIC accounting: acks are owed only while the entry is transient, and a fenced server owes none.
invariant "OIC_pending_only_in_SA_or_SI"
  forall o: Obj do PendingOn(o) -> (dir[o].st = D_SA | dir[o].st = D_SI) end;

invariant "OIC_fenced_server_owes_nothing"
  forall c: Server do fenced[c] -> !PendingAt(c) end;

invariant "OTC_capacity_respected"
  Entries() <= DIR_CAPACITY;

-- V2: a versioned get of a live, unfenced server in its current epoch can always still
-- complete: a held get is served once its version commits, or cancelled when it never can. Its
-- crash cases: the producer dies (its open put aborts at the fence, the get keeps waiting for the
-- re-executed put), the reader dies (its held gets go with its epoch).
liveness "V2_versioned_get_completes"
  forall c: Server do
    !(cs[c].status = Live & !fenced[c] & cs[c].epoch = mepoch[c] & cs[c].op = OpGet
      & cs[c].opNeed > 0)
  end;

-- P4 (liveness half, no fairness: "from every state it is still possible that ..."): every
-- operation of a live, unfenced server in its current epoch can complete. Crashes and false
-- suspicions are bounded by MAX_FAULTS, so once they are spent the writer cannot escape by dying.
liveness "P4_live_server_ops_complete"
  forall c: Server do
    !(cs[c].status = Live & !fenced[c] & cs[c].epoch = mepoch[c] & cs[c].op != OpNone)
  end;

-- P5: acks owed by crashed servers are retired and every directory entry returns to a stable
-- state (I or S).
liveness "P5_entries_return_to_stable"
  forall o: Obj do dir[o].st = D_I | dir[o].st = D_S end;
