------------------------------- MODULE Apta --------------------------------
(***************************************************************************)
(* The apta protocol at the level of controller actions, with the FaaS     *)
(* scheduler, crashes, fencing and epochs; refined to Store.tla.           *)
(*                                                                         *)
(* Memory server: OSC serves a whole object in one bulk reply; OPC commits *)
(* a put by one-phase commit (prepare, NLines line writes, commit when all *)
(* lines arrived); OTC is the object directory (I, S, SA = new version     *)
(* shared while acks for old ones are pending, SI = eviction waiting for   *)
(* acks) with DirCap entries; OIC counts the acks each compute server owes *)
(* per object (pend) and sends object-granular back-invalidations.         *)
(* A put is answered as soon as it commits: sharers := {writer}            *)
(* (write-allocate), every other prior sharer owes one more ack and gets   *)
(* an invalidation; nobody waits for acks.  A get in SA stays SA; a put in *)
(* SA is serviced (stays SA); requests to an object in SI stall.           *)
(*                                                                         *)
(* Compute servers cache whole objects (Shared only) and may evict them    *)
(* silently.  They crash at any time.  A failure detector fences a server  *)
(* (crashed, or falsely suspected while alive): fencing retires every ack  *)
(* it owes, removes it from every sharer set, aborts its uncommitted OPC   *)
(* transactions and has its running functions re-executed.  A fenced      *)
(* server rejoins in a new epoch with an empty cache.  Invalidations, acks *)
(* and puts carry the epoch; anything from an older epoch is discarded.    *)
(*                                                                         *)
(* The scheduler places a ready function on a server that its view says    *)
(* is unfenced, in its current epoch and without pending invalidations     *)
(* (Declared: none for the function's inputs), preferring servers that     *)
(* cache the inputs.  The view is a snapshot of the control plane that may *)
(* lag (Lag); the freshness it needs is contract C1-C5 of README.md.       *)
(*                                                                         *)
(* Left out (the Murphi model spec/murphi covers the message level):       *)
(*  - the get request/reply is one step: the memory server's channel to a  *)
(*    compute server is FIFO, so a reply always precedes any invalidation  *)
(*    sent after it was served;                                            *)
(*  - a line write or commit message in flight is folded into the OPC's    *)
(*    staging count; the commit response is delivered with the commit;    *)
(*  - committed lines still staged in the OPC count as memory (P3), so the *)
(*    drain to DRAM is part of the commit step;                            *)
(*  - a fenced function's zombie run (falsely suspected server) is not     *)
(*    modelled beyond its OPC transaction (mutant ZombiePut);              *)
(*  - the directory's set structure: one fully associative set;           *)
(*  - OPC timeouts and retries (a retry is a new run of the function).     *)
(*                                                                         *)
(* Mutant (a CONSTANT) selects one one-rule change; "none" is the protocol.*)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
  Server,     \* compute servers
  Obj,        \* objects
  Func,       \* functions of the workflow
  In, Out,    \* declared inputs and outputs of each function
  Pred,       \* DAG: direct predecessors of each function
  NLines,     \* cache lines per object
  DirCap,     \* directory entries (objects not in I)
  MaxCrash,   \* crashes in a behaviour (finitely many)
  MaxFalse,   \* false suspicions (fences of live servers) in a behaviour
  Declared,   \* TRUE: functions declare inputs; the scheduler checks only those
  Lag,        \* TRUE: the scheduler reads a lagging snapshot (vseq, vpend, vep)
  Locality,   \* TRUE: only the eligible servers caching most inputs; FALSE: any
              \* eligible server (a load balancer may override the preference)
  SilentEvict,\* TRUE: compute servers may drop cached objects silently
  Mutant,     \* "none" or the name of one mutation (see Mutants below)
  NoVal, NoTxn, NoSrv, NoEp   \* model values: no value / transaction / server / epoch

Mutants == {"none", "SchedRuleOff", "StaleView", "NoFence", "OldEpochAck",
            "EarlyPutAck", "ZombiePut", "NonAtomicPut", "FencedSchedulable",
            "SyncInval", "GetSAtoS",
            \* the versioned extension's (AptaFlow.tla; no effect on Apta's own actions)
            "ReleaseOld", "FenceDropsHolds", "HitIgnoresVersion", "EarlyUnversioned",
            "CancelKeepsHeld"}

ASSUME /\ NLines \in Nat \ {0} /\ DirCap \in Nat \ {0}
       /\ MaxCrash \in Nat /\ MaxFalse \in Nat
       /\ MaxCrash < Cardinality(Server)   \* some compute server never crashes (P4)
       /\ Declared \in BOOLEAN /\ Lag \in BOOLEAN /\ SilentEvict \in BOOLEAN
       /\ Locality \in BOOLEAN
       /\ Mutant \in Mutants

Line == 1..NLines
Whole(v) == [l \in Line |-> v]
Epoch == 0..(MaxCrash + MaxFalse)            \* each fence starts at most one epoch
MaxVer == Cardinality(Func) * (1 + MaxCrash + MaxFalse)
Version == 0..MaxVer

VARIABLES
  \* compute servers
  alive,    \* alive[c]: c is up (FALSE after a crash, until it rejoins)
  fenced,   \* fenced[c]: the failure detector fenced c's current epoch
  epoch,    \* epoch[c]: c's current epoch
  cache,    \* cache[c][o]: c's cached copy of o (a value), or NoVal
  crashes,  \* crashes so far
  falses,   \* false suspicions so far
  \* memory server
  mline,    \* mline[o][l]: version held by line l of o in memory
  ver,      \* ver[o]: version of o's latest committed put (the OPC's counter)
  cseq,     \* commit sequence number of the control plane (commits so far)
  dir,      \* dir[o]: OTC state of o's entry: "I", "S", "SA", "SI"
  sharers,  \* sharers[o]: servers the OTC lists as caching o (a superset)
  pend,     \* pend[o][c]: acks for o that the OIC still expects from c
  inv,      \* inv[c][o][e]: invalidations of o in flight to c, sent in epoch e
  ack,      \* ack[c][o][e]: acks for o in flight from c, sent in epoch e
  txn,      \* txn[f]: f's OPC transaction [obj, n = lines staged], or NoTxn
  \* workflow and scheduler
  phase,    \* phase[f]: "idle" (not running), "run", "done"
  where,    \* where[f]: the server of f's latest run, or NoSrv
  wep,      \* wep[f]: the epoch of that server when f was placed
  got,      \* got[f][o]: the value f's current run got for input o, or NoVal
  putDone,  \* putDone[f]: outputs whose put the current run saw committed
  floor,    \* floor[f][o]: ver[o] when f became ready (history, for P1)
  depSeq,   \* depSeq[f]: cseq when f became ready: the freshness f's placement needs
  vseq,     \* scheduler view: the cseq at which the snapshot was taken
  vpend,    \* scheduler view: vpend[c] = objects with acks pending from c
  vep       \* scheduler view: vep[c] = c's epoch if unfenced, else NoEp

server == <<alive, fenced, epoch, cache, crashes, falses>>
memsrv == <<mline, ver, cseq, dir, sharers, pend, inv, ack, txn>>
work   == <<phase, where, wep, got, putDone, floor, depSeq>>
view   == <<vseq, vpend, vep>>
vars   == <<server, memsrv, work, view>>

-----------------------------------------------------------------------------
(* Helpers                                                                 *)
NoGot(f) == [o \in In[f] |-> NoVal]
Ready(f) == \A p \in Pred[f] : phase[p] = "done"
Entries == {o \in Obj : dir[o] # "I"}
CanAllocate(o) == dir[o] # "I" \/ Cardinality(Entries) < DirCap
Inputs(f) == \A i \in In[f] : got[f][i] # NoVal
EmptyCache == [o \in Obj |-> NoVal]
NoMsgs == [c \in Server |-> [o \in Obj |-> [e \in Epoch |-> 0]]]
Truth(c) == {o \in Obj : pend[o][c] > 0}      \* the OIC's answer for c now
TruthEp(c) == IF fenced[c] THEN NoEp ELSE epoch[c]

\* What the scheduler sees: the snapshot, or the live control plane (~Lag).
VSeq == IF Lag THEN vseq ELSE cseq
VPend(c) == IF Lag THEN vpend[c] ELSE Truth(c)
VEp(c) == IF Lag THEN vep[c] ELSE TruthEp(c)

\* Send one invalidation of o to each server in S, each in its current epoch.
SendInv(o, S) ==
  inv' = [c \in Server |-> IF c \in S THEN [inv[c] EXCEPT ![o][epoch[c]] = @ + 1]
                           ELSE inv[c]]
OweAck(o, S) == pend' = [pend EXCEPT ![o] = [c \in Server |-> IF c \in S THEN @[c] + 1 ELSE @[c]]]

-----------------------------------------------------------------------------
Init ==
  /\ alive = [c \in Server |-> TRUE]
  /\ fenced = [c \in Server |-> FALSE]
  /\ epoch = [c \in Server |-> 0]
  /\ cache = [c \in Server |-> EmptyCache]
  /\ crashes = 0 /\ falses = 0
  /\ mline = [o \in Obj |-> Whole(0)]
  /\ ver = [o \in Obj |-> 0]
  /\ cseq = 0
  /\ dir = [o \in Obj |-> "I"]
  /\ sharers = [o \in Obj |-> {}]
  /\ pend = [o \in Obj |-> [c \in Server |-> 0]]
  /\ inv = NoMsgs /\ ack = NoMsgs
  /\ txn = [f \in Func |-> NoTxn]
  /\ phase = [f \in Func |-> "idle"]
  /\ where = [f \in Func |-> NoSrv]
  /\ wep = [f \in Func |-> 0]
  /\ got = [f \in Func |-> NoGot(f)]
  /\ putDone = [f \in Func |-> {}]
  /\ floor = [f \in Func |-> [o \in In[f] |-> 0]]
  /\ depSeq = [f \in Func |-> 0]
  /\ vseq = 0
  /\ vpend = [c \in Server |-> {}]
  /\ vep = [c \in Server |-> 0]

-----------------------------------------------------------------------------
(* Scheduler (the Executor Manager / kube-scheduler plugin)                *)

\* The scheduling correctness criterion on the scheduler's view, plus the
\* admission check (the invocation carries the epoch the view showed).
Eligible(f, c) ==
  /\ \/ Mutant = "FencedSchedulable"
     \/ VEp(c) = epoch[c] /\ ~fenced[c]                    \* C3: unfenced, current epoch
  /\ Mutant = "StaleView" \/ VSeq >= depSeq[f]             \* C1: fresh enough for f
  /\ \/ Mutant = "SchedRuleOff"                            \* C4: no pending invalidations
     \/ IF Declared THEN VPend(c) \cap In[f] = {} ELSE VPend(c) = {}

\* Locality: how many of f's inputs the directory lists c as caching.
Score(f, c) == Cardinality({o \in In[f] : c \in sharers[o]})

Place(f, c) ==
  /\ phase[f] = "idle" /\ Ready(f)
  /\ Eligible(f, c)
  /\ Locality => \A d \in Server : Eligible(f, d) => Score(f, d) <= Score(f, c)
  /\ phase' = [phase EXCEPT ![f] = "run"]
  /\ where' = [where EXCEPT ![f] = c]
  /\ wep' = [wep EXCEPT ![f] = epoch[c]]
  /\ UNCHANGED <<server, memsrv, got, putDone, floor, depSeq, view>>

\* The control plane hands the scheduler a fresh, consistent snapshot (C2).
Sync ==
  /\ Lag
  /\ <<vseq, vpend, vep>> # <<cseq, [c \in Server |-> Truth(c)], [c \in Server |-> TruthEp(c)]>>
  /\ vseq' = cseq
  /\ vpend' = [c \in Server |-> Truth(c)]
  /\ vep' = [c \in Server |-> TruthEp(c)]
  /\ UNCHANGED <<server, memsrv, work>>

-----------------------------------------------------------------------------
(* A function run on compute server where[f]: gets, then puts, then done. *)

\* get: a cache hit, or a miss served by the OSC (bulk reply) and the OTC.
Get(f, o) ==
  LET c == where[f] IN
  /\ phase[f] = "run" /\ alive[c] /\ o \in In[f] /\ got[f][o] = NoVal
  /\ IF cache[c][o] # NoVal
     THEN /\ got' = [got EXCEPT ![f][o] = cache[c][o]]
          /\ UNCHANGED <<cache, dir, sharers>>
     ELSE /\ dir[o] # "SI" /\ CanAllocate(o)               \* stall in SI / when full
          /\ dir' = [dir EXCEPT ![o] = IF @ = "I" \/ (@ = "SA" /\ Mutant = "GetSAtoS")
                                       THEN "S" ELSE @]          \* SA + get stays SA
          /\ sharers' = [sharers EXCEPT ![o] = @ \cup {c}]
          /\ cache' = [cache EXCEPT ![c][o] = mline[o]]
          /\ got' = [got EXCEPT ![f][o] = mline[o]]
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, mline, ver, cseq, pend, inv, ack,
                 txn, phase, where, wep, putDone, floor, depSeq, view>>

\* put, step 1: prepare (the OPC opens a transaction for f's epoch).
Prepare(f, o) ==
  LET c == where[f] IN
  /\ phase[f] = "run" /\ alive[c] /\ Inputs(f)
  /\ txn[f] = NoTxn /\ o \in Out[f] \ putDone[f]
  /\ txn' = [txn EXCEPT ![f] = [obj |-> o, n |-> 0]]
  /\ UNCHANGED <<server, mline, ver, cseq, dir, sharers, pend, inv, ack, work, view>>

\* put, step 2: one line write (clwb) reaches the OPC's staging buffer.
WriteLine(f) ==
  LET c == where[f]
      o == txn[f].obj
      n == txn[f].n + 1 IN
  /\ phase[f] = "run" /\ alive[c]
  /\ txn[f] # NoTxn /\ txn[f].n < NLines
  /\ txn' = [txn EXCEPT ![f].n = n]
  /\ IF Mutant = "NonAtomicPut"                  \* lines go straight to memory
     THEN mline' = [mline EXCEPT ![o][n] = ver[o] + 1]
     ELSE UNCHANGED mline
  /\ IF Mutant = "EarlyPutAck" /\ n = NLines     \* writer answered before commit
     THEN putDone' = [putDone EXCEPT ![f] = @ \cup {o}]
     ELSE UNCHANGED putDone
  /\ UNCHANGED <<server, ver, cseq, dir, sharers, pend, inv, ack,
                 phase, where, wep, got, floor, depSeq, view>>

\* put, step 3: the OPC commits when all lines arrived (the writer may have
\* crashed meanwhile: the lines are at the memory server).  The OTC makes the
\* writer the only sharer and the OIC owes-and-sends one invalidation per
\* prior sharer; the writer is answered at once.
Commit(f) ==
  LET c == where[f]
      o == txn[f].obj
      v == ver[o] + 1
      Sh == sharers[o] \ {c} IN
  /\ txn[f] # NoTxn /\ txn[f].n = NLines
  /\ Mutant = "ZombiePut" \/ (wep[f] = epoch[c] /\ ~fenced[c])   \* epoch check
  /\ dir[o] # "SI" /\ CanAllocate(o)
  /\ Mutant = "SyncInval" => \A d \in Server : pend[o][d] = 0     \* CXL 3.0: wait for acks
  /\ ver' = [ver EXCEPT ![o] = v]
  /\ mline' = [mline EXCEPT ![o] = Whole(v)]
  /\ cseq' = cseq + 1
  /\ OweAck(o, Sh)
  /\ SendInv(o, Sh)
  /\ sharers' = [sharers EXCEPT ![o] = {c}]
  /\ dir' = [dir EXCEPT ![o] = IF Sh # {} \/ @ = "SA" THEN "SA" ELSE "S"]
  /\ cache' = IF alive[c] THEN [cache EXCEPT ![c][o] = Whole(v)] ELSE cache
  /\ putDone' = [putDone EXCEPT ![f] = @ \cup {o}]
  /\ txn' = [txn EXCEPT ![f] = NoTxn]
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, ack,
                 phase, where, wep, got, floor, depSeq, view>>

\* The run completes and reports to the scheduler; successors it makes ready
\* record the versions (floor) and commit sequence number (depSeq) they depend on.
Finish(f) ==
  /\ phase[f] = "run" /\ alive[where[f]] /\ Inputs(f) /\ putDone[f] = Out[f]
  /\ phase' = [phase EXCEPT ![f] = "done"]
  /\ LET New == {g \in Func : phase[g] = "idle" /\ f \in Pred[g]
                              /\ \A p \in Pred[g] \ {f} : phase[p] = "done"} IN
     /\ floor' = [g \in Func |-> IF g \in New THEN [o \in In[g] |-> ver[o]] ELSE floor[g]]
     /\ depSeq' = [g \in Func |-> IF g \in New THEN cseq ELSE depSeq[g]]
  /\ UNCHANGED <<server, memsrv, where, wep, got, putDone, view>>

-----------------------------------------------------------------------------
(* Invalidations and acks                                                  *)

\* c receives an invalidation: drops its copy and acks in the invalidation's
\* epoch; one from an older epoch is discarded.
RecvInv(c, o, e) ==
  /\ alive[c] /\ inv[c][o][e] > 0
  /\ inv' = [inv EXCEPT ![c][o][e] = @ - 1]
  /\ IF e = epoch[c]
     THEN /\ cache' = [cache EXCEPT ![c][o] = NoVal]
          /\ ack' = [ack EXCEPT ![c][o][e] = @ + 1]
     ELSE UNCHANGED <<cache, ack>>
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, mline, ver, cseq, dir, sharers,
                 pend, txn, work, view>>

\* The OIC receives an ack: it counts only if sent in c's current, unfenced epoch.
RecvAck(c, o, e) ==
  /\ ack[c][o][e] > 0
  /\ ack' = [ack EXCEPT ![c][o][e] = @ - 1]
  /\ IF (e = epoch[c] /\ ~fenced[c]) \/ Mutant = "OldEpochAck"
     THEN pend' = [pend EXCEPT ![o][c] = IF @ > 0 THEN @ - 1 ELSE 0]
     ELSE UNCHANGED pend
  /\ UNCHANGED <<server, mline, ver, cseq, dir, sharers, inv, txn, work, view>>

\* All acks for o are in: SA -> S, SI -> I (the entry is free).
Settle(o) ==
  /\ dir[o] \in {"SA", "SI"} /\ \A c \in Server : pend[o][c] = 0
  /\ dir' = [dir EXCEPT ![o] = IF @ = "SA" THEN "S" ELSE "I"]
  /\ UNCHANGED <<server, mline, ver, cseq, sharers, pend, inv, ack, txn, work, view>>

\* Some request waits for a directory entry for object p.
NeedsEntry(p) ==
  /\ dir[p] = "I"
  /\ \E f \in Func :
       \/ /\ phase[f] = "run" /\ alive[where[f]] /\ p \in In[f]
          /\ got[f][p] = NoVal /\ cache[where[f]][p] = NoVal
       \/ txn[f] # NoTxn /\ txn[f].obj = p /\ txn[f].n = NLines

\* The directory is full: evict an entry in S (invalidate its sharers -> SI).
Evict(o) ==
  /\ dir[o] = "S" /\ Cardinality(Entries) >= DirCap /\ \E p \in Obj : NeedsEntry(p)
  /\ dir' = [dir EXCEPT ![o] = "SI"]
  /\ OweAck(o, sharers[o])
  /\ SendInv(o, sharers[o])
  /\ sharers' = [sharers EXCEPT ![o] = {}]
  /\ UNCHANGED <<server, mline, ver, cseq, ack, txn, work, view>>

\* A compute server drops a cached object without telling the directory.
Drop(c, o) ==
  /\ SilentEvict /\ alive[c] /\ cache[c][o] # NoVal
  /\ cache' = [cache EXCEPT ![c][o] = NoVal]
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, memsrv, work, view>>

-----------------------------------------------------------------------------
(* Failures                                                                *)

Crash(c) ==
  /\ alive[c] /\ crashes < MaxCrash
  /\ alive' = [alive EXCEPT ![c] = FALSE]
  /\ cache' = [cache EXCEPT ![c] = EmptyCache]
  /\ crashes' = crashes + 1
  /\ UNCHANGED <<fenced, epoch, falses, memsrv, work, view>>

\* Fencing retires c's acks, drops it from every sharer set, aborts its OPC
\* transactions and fails its runs (the scheduler re-executes them).
DoFence(c) ==
  LET Gone == {f \in Func : phase[f] = "run" /\ where[f] = c} IN
  /\ fenced' = [fenced EXCEPT ![c] = TRUE]
  /\ pend' = [o \in Obj |-> [pend[o] EXCEPT ![c] = 0]]
  /\ sharers' = [o \in Obj |-> sharers[o] \ {c}]
  /\ txn' = IF Mutant = "ZombiePut" THEN txn
            ELSE [f \in Func |-> IF where[f] = c THEN NoTxn ELSE txn[f]]
  /\ phase' = [f \in Func |-> IF f \in Gone THEN "idle" ELSE phase[f]]
  /\ got' = [f \in Func |-> IF f \in Gone THEN NoGot(f) ELSE got[f]]
  /\ putDone' = [f \in Func |-> IF f \in Gone THEN {} ELSE putDone[f]]
  /\ UNCHANGED <<alive, epoch, cache, crashes, mline, ver, cseq, dir, inv, ack,
                 where, wep, floor, depSeq, view>>

FenceDead(c) ==   \* the failure detector fences a crashed server
  /\ Mutant \notin {"NoFence", "SyncInval"}
  /\ ~alive[c] /\ ~fenced[c]
  /\ DoFence(c) /\ UNCHANGED falses

FenceFalse(c) ==  \* ... or suspects a live one
  /\ Mutant \notin {"NoFence", "SyncInval"}
  /\ alive[c] /\ ~fenced[c] /\ falses < MaxFalse
  /\ DoFence(c) /\ falses' = falses + 1

\* A fenced server (restarted, or the falsely suspected one) rejoins in a new
\* epoch with an empty cache.
Rejoin(c) ==
  /\ fenced[c]
  /\ alive' = [alive EXCEPT ![c] = TRUE]
  /\ fenced' = [fenced EXCEPT ![c] = FALSE]
  /\ epoch' = [epoch EXCEPT ![c] = @ + 1]
  /\ cache' = [cache EXCEPT ![c] = EmptyCache]
  /\ UNCHANGED <<crashes, falses, memsrv, work, view>>

-----------------------------------------------------------------------------
AllDone == \A f \in Func : phase[f] = "done"

\* The workflow completed: a final stuttering step (so that TLC's deadlock
\* check means "stuck before every function completed").
Terminated == AllDone /\ UNCHANGED vars

Next ==
  \/ \E f \in Func, c \in Server : Place(f, c)
  \/ Sync
  \/ \E f \in Func, o \in Obj : Get(f, o) \/ Prepare(f, o)
  \/ \E f \in Func : WriteLine(f) \/ Commit(f) \/ Finish(f)
  \/ \E c \in Server, o \in Obj, e \in Epoch : RecvInv(c, o, e) \/ RecvAck(c, o, e)
  \/ \E o \in Obj : Settle(o) \/ Evict(o)
  \/ \E c \in Server, o \in Obj : Drop(c, o)
  \/ \E c \in Server : Crash(c) \/ FenceDead(c) \/ FenceFalse(c) \/ Rejoin(c)
  \/ Terminated

Spec == Init /\ [][Next]_vars

(* Fairness: the memory server, the scheduler and live servers keep going;  *)
(* crashes and false suspicions are finitely many (MaxCrash, MaxFalse) and  *)
(* a crashed server is eventually fenced.  Strong fairness where an action  *)
(* can be disabled by other servers (a stall in SI, a full directory, a     *)
(* view with pending invalidations).                                        *)
Run(f) == \/ \E o \in Obj : Get(f, o) \/ Prepare(f, o)
          \/ WriteLine(f) \/ Commit(f) \/ Finish(f)
Deliver == \E c \in Server, o \in Obj, e \in Epoch : RecvInv(c, o, e) \/ RecvAck(c, o, e)

Fairness ==
  /\ \A f \in Func : SF_vars(\E c \in Server : Place(f, c)) /\ SF_vars(Run(f))
  /\ WF_vars(Deliver)
  /\ WF_vars(\E o \in Obj : Settle(o))
  /\ SF_vars(\E o \in Obj : Evict(o))
  /\ WF_vars(Sync)
  /\ \A c \in Server : WF_vars(FenceDead(c)) /\ WF_vars(alive[c] /\ Rejoin(c))

LiveSpec == Spec /\ Fairness

-----------------------------------------------------------------------------
(* Refinement: the protocol implements the store contract (Store.tla).     *)
(* mem is the OPC's committed version (memory and staging hold it, P3);    *)
(* a run's gets are what the cache or the OSC returned; a run has put o    *)
(* once the writer saw o's commit.  phase and floor are the same.          *)
Abs == INSTANCE Store WITH mem <- ver, wrote <- putDone, Line <- Line

AbsVars == <<ver, phase, floor, got, putDone>>   \* Abs!vars under the mapping
RefinementInit == Abs!Init                        \* initial states map to Store's
Refinement == [][Abs!Next]_AbsVars                \* every step is a Store step or stutters
Completion == Abs!Completion                      \* P4 (workflow level)

-----------------------------------------------------------------------------
(* Invariants: TypeOK first, then the contract, then the protocol lemmas.  *)
Val == {NoVal} \cup [Line -> Version]
TypeOK ==
  /\ alive \in [Server -> BOOLEAN] /\ fenced \in [Server -> BOOLEAN]
  /\ epoch \in [Server -> Epoch]
  /\ cache \in [Server -> [Obj -> Val]]
  /\ crashes \in 0..MaxCrash /\ falses \in 0..MaxFalse
  /\ mline \in [Obj -> [Line -> Version]]
  /\ ver \in [Obj -> Version] /\ cseq \in Nat
  /\ dir \in [Obj -> {"I", "S", "SA", "SI"}]
  /\ sharers \in [Obj -> SUBSET Server]
  /\ pend \in [Obj -> [Server -> Nat]]
  /\ inv \in [Server -> [Obj -> [Epoch -> Nat]]]
  /\ ack \in [Server -> [Obj -> [Epoch -> Nat]]]
  /\ \A f \in Func : txn[f] = NoTxn \/ txn[f] \in [obj : Out[f], n : 0..NLines]
  /\ phase \in [Func -> {"idle", "run", "done"}]
  /\ where \in [Func -> Server \cup {NoSrv}] /\ wep \in [Func -> Epoch]
  /\ \A f \in Func : /\ got[f] \in [In[f] -> Val]
                     /\ putDone[f] \subseteq Out[f]
                     /\ floor[f] \in [In[f] -> Version]
  /\ depSeq \in [Func -> Nat]
  /\ vseq \in Nat /\ vpend \in [Server -> SUBSET Obj]
  /\ vep \in [Server -> Epoch \cup {NoEp}]

\* P1: a get returns a committed version no older than the DAG floor.
GetFresh == \A f \in Func : \A o \in In[f] :
              got[f][o] # NoVal => \E v \in floor[f][o]..ver[o] : got[f][o][1] = v
\* P2: no torn object is ever returned or cached.
NoTornGet == \A f \in Func : \A o \in In[f] :
               got[f][o] # NoVal => \E v \in Version : got[f][o] = Whole(v)
NoTornCache == \A c \in Server, o \in Obj :
                 cache[c][o] # NoVal => \E v \in Version : cache[c][o] = Whole(v)
\* P3: memory holds the latest committed version of every object.
MemoryLatest == \A o \in Obj : mline[o] = Whole(ver[o])

\* A stale copy on a live, unfenced server is always covered by an
\* invalidation in flight to it in its epoch and an ack the OIC still expects:
\* the reason the scheduler rule suffices.
StaleCovered == \A c \in Server, o \in Obj :
  alive[c] /\ ~fenced[c] /\ cache[c][o] # NoVal /\ cache[c][o] # Whole(ver[o])
    => pend[o][c] > 0 /\ inv[c][o][epoch[c]] > 0
\* The OIC's counter for an unfenced server is exact: every ack it expects
\* is an invalidation or an ack in flight in that server's epoch.
AckAccounting == \A c \in Server, o \in Obj :
  ~fenced[c] => pend[o][c] = inv[c][o][epoch[c]] + ack[c][o][epoch[c]]
\* The directory is inclusive: a copy is listed, or its invalidation pending.
Inclusive == \A c \in Server, o \in Obj :
  alive[c] /\ ~fenced[c] /\ cache[c][o] # NoVal => c \in sharers[o] \/ pend[o][c] > 0
\* Directory shape: stable entries owe nothing; I has no sharers; capacity.
DirShape == /\ \A o \in Obj : dir[o] \in {"I", "S"} => \A c \in Server : pend[o][c] = 0
            /\ \A o \in Obj : dir[o] \in {"I", "SI"} => sharers[o] = {}
            /\ Cardinality(Entries) <= DirCap
\* Fenced servers owe nothing and are nobody's sharer; runs are in the
\* current epoch of an unfenced server; transactions belong to runs.
FenceClean == /\ \A c \in Server : fenced[c] => \A o \in Obj : pend[o][c] = 0 /\ c \notin sharers[o]
              /\ \A f \in Func : phase[f] = "run" => ~fenced[where[f]] /\ wep[f] = epoch[where[f]]
              /\ \A f \in Func : txn[f] # NoTxn => phase[f] = "run"
\* The view never runs ahead of the control plane.
ViewBehind == vseq <= cseq /\ \A f \in Func : depSeq[f] <= cseq

-----------------------------------------------------------------------------
(* Liveness (P4, P5)                                                       *)
\* P5: acks owed by any server (crashed ones included) are eventually retired.
AcksRetired == \A o \in Obj, c \in Server : pend[o][c] > 0 ~> pend[o][c] = 0
\* P5: every directory entry returns to a stable state.
DirSettles == \A o \in Obj : dir[o] \in {"SA", "SI"} ~> dir[o] \in {"I", "S"}
\* P4: a put by a live, unfenced server commits no matter who else crashed.
PutCompletes == \A f \in Func : txn[f] # NoTxn ~> txn[f] = NoTxn
=============================================================================
