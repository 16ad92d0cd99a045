------------------------------ MODULE AptaFlow ------------------------------
(***************************************************************************)
(* Dataflow invocation over apta: Apta.tla with early placement            *)
(* and versioned gets held at the memory server; refined to StoreFlow.tla. *)
(*                                                                         *)
(* A function of StoreFlow's Early set (every input has one producer, an  *)
(* ancestor) is placed as soon as every predecessor has started: on any    *)
(* live, unfenced server in the epoch the view shows (contract C3), with  *)
(* no freshness (C1) and no pending-invalidation check (C4).  It reads     *)
(* only with versioned gets naming Need(f, o) (StoreFlow):                 *)
(*  - a cached copy at least that new is a hit; an older one is dropped    *)
(*    (VDrop) and the get is a miss;                                      *)
(*  - the OSC serves a miss whose version has committed like any get      *)
(*    (the directory as in Apta: an entry, SI stalls);                     *)
(*  - a miss whose version has not committed is held in the OSC's hold    *)
(*    table (HoldSlots entries, no directory entry); a full table answers  *)
(*    GetRetry at once, which changes nothing (the run asks again: a       *)
(*    stuttering step, so it is not written as an action);                *)
(*  - a commit wakes the held gets of its object (Release: served with the *)
(*    version memory holds, no polling);                                  *)
(*  - faults: a fenced producer's open put aborts (Apta's DoFence) and the *)
(*    gets held for its object stay, to be served by the re-execution's    *)
(*    commit; a fenced reader's held gets go with its epoch;               *)
(*  - the workflow may be cancelled (MayCancel): nothing is placed any     *)
(*    more, and a get whose version has not committed (held, or new) is   *)
(*    answered GetCancelled: the run fails.                                *)
(* Every other function is placed and reads as in Apta (scheduler rule,    *)
(* gets without a version).                                                *)
(*                                                                         *)
(* Left out beyond Apta's list: a compute server runs any number of        *)
(* functions (the Murphi model has one per server, where waiting readers   *)
(* could take every server; spec/murphi/README.md "Versioned gets");       *)
(* a held get's reply to a crashed reader (it waits for the fence).        *)
(***************************************************************************)
EXTENDS Apta

CONSTANTS
  HoldSlots,  \* entries of the OSC's hold table
  MayCancel   \* TRUE: the workflow may be cancelled (once, at any time)

ASSUME HoldSlots \in Nat /\ MayCancel \in BOOLEAN

VARIABLES
  hold,       \* the OSC's hold table: <<f, o>> = f's get of o waits for its version
  asked,      \* asked[f]: the objects f's run asked for and has no answer yet
  cancelled   \* the workflow was cancelled

flow == <<hold, asked, cancelled>>
fvars == <<vars, flow>>

\* The contract (one definition of Early and Need: StoreFlow's).
AbsF == INSTANCE StoreFlow WITH mem <- ver, wrote <- putDone, Line <- Line
EarlyF == AbsF!Early
Need(f, o) == AbsF!Need(f, o)

FlowInit == Init /\ hold = {} /\ asked = [f \in Func |-> {}] /\ cancelled = FALSE

-----------------------------------------------------------------------------
(* Placement                                                               *)

\* The paper's placement for every other function (Apta's Place).
FPlace(f, c) == f \notin EarlyF /\ ~cancelled /\ Place(f, c) /\ UNCHANGED flow

\* Early placement: every predecessor started (running or done); C3 only.
PlaceEarly(f, c) ==
  /\ f \in EarlyF /\ ~cancelled
  /\ phase[f] = "idle" /\ \A p \in Pred[f] : phase[p] # "idle"
  /\ VEp(c) = epoch[c] /\ ~fenced[c]
  /\ phase' = [phase EXCEPT ![f] = "run"]
  /\ where' = [where EXCEPT ![f] = c]
  /\ wep' = [wep EXCEPT ![f] = epoch[c]]
  /\ UNCHANGED <<server, memsrv, got, putDone, floor, depSeq, view, flow>>

-----------------------------------------------------------------------------
(* Gets                                                                    *)

\* A get without a version (Apta's Get): functions placed by the rule only.
FGet(f, o) == /\ f \notin EarlyF \/ Mutant = "EarlyUnversioned"
              /\ o \notin asked[f]
              /\ Get(f, o) /\ UNCHANGED flow

\* The guard every versioned get of f's run for o starts from.
VAsk(f, o) == /\ f \in EarlyF /\ phase[f] = "run" /\ alive[where[f]]
              /\ o \in In[f] /\ got[f][o] = NoVal /\ o \notin asked[f]

\* A cached copy at least as new as the version named: a hit.
VHit(f, o) ==
  LET copy == cache[where[f]][o] IN
  /\ VAsk(f, o) /\ copy # NoVal
  /\ copy[1] >= Need(f, o) \/ Mutant = "HitIgnoresVersion"
  /\ got' = [got EXCEPT ![f][o] = copy]
  /\ UNCHANGED <<server, memsrv, phase, where, wep, putDone, floor, depSeq, view, flow>>

\* An older cached copy is dropped: the get is a miss.
VDrop(f, o) ==
  LET c == where[f] IN
  /\ VAsk(f, o) /\ cache[c][o] # NoVal /\ cache[c][o][1] < Need(f, o)
  /\ Mutant # "HitIgnoresVersion"
  /\ cache' = [cache EXCEPT ![c][o] = NoVal]
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, memsrv, work, view, flow>>

\* The OSC serves f's get of o on server where[f] with the version memory
\* holds (as Apta's Get miss: the directory lists the reader, SA stays SA).
Serve(f, o) ==
  LET c == where[f] IN
  /\ dir[o] # "SI" /\ CanAllocate(o)
  /\ dir' = [dir EXCEPT ![o] = IF @ = "I" THEN "S" ELSE @]
  /\ sharers' = [sharers EXCEPT ![o] = @ \cup {c}]
  /\ cache' = [cache EXCEPT ![c][o] = mline[o]]
  /\ got' = [got EXCEPT ![f][o] = mline[o]]

\* A miss whose version has committed: served at once.
VMiss(f, o) ==
  /\ VAsk(f, o) /\ cache[where[f]][o] = NoVal /\ ver[o] >= Need(f, o)
  /\ Serve(f, o)
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, mline, ver, cseq, pend, inv, ack,
                 txn, phase, where, wep, putDone, floor, depSeq, view, flow>>

\* A miss whose version has not committed: held (a full table answers GetRetry:
\* no step).
VHold(f, o) ==
  /\ VAsk(f, o) /\ cache[where[f]][o] = NoVal /\ ver[o] < Need(f, o)
  /\ ~cancelled /\ Cardinality(hold) < HoldSlots
  /\ hold' = hold \cup {<<f, o>>}
  /\ asked' = [asked EXCEPT ![f] = @ \cup {o}]
  /\ UNCHANGED <<vars, cancelled>>

\* f's run fails on GetCancelled: its held gets go (it has no open put: it
\* prepares only once every input is got).
CancelRun(f) ==
  /\ phase' = [phase EXCEPT ![f] = "idle"]
  /\ got' = [got EXCEPT ![f] = NoGot(f)]
  /\ putDone' = [putDone EXCEPT ![f] = {}]
  /\ hold' = {h \in hold : h[1] # f}
  /\ asked' = [asked EXCEPT ![f] = {}]
  /\ UNCHANGED <<server, memsrv, where, wep, floor, depSeq, view, cancelled>>

\* A get of a cancelled workflow for a version that has not committed.
VCancelled(f, o) ==
  /\ VAsk(f, o) /\ cache[where[f]][o] = NoVal /\ ver[o] < Need(f, o)
  /\ cancelled
  /\ CancelRun(f)

\* The commit woke the held get: served with the version memory holds.
Release(f, o) ==
  /\ <<f, o>> \in hold
  /\ ver[o] >= Need(f, o) \/ Mutant = "ReleaseOld"
  /\ alive[where[f]]
  /\ Serve(f, o)
  /\ hold' = hold \ {<<f, o>>}
  /\ asked' = [asked EXCEPT ![f] = @ \ {o}]
  /\ UNCHANGED <<alive, fenced, epoch, crashes, falses, mline, ver, cseq, pend, inv, ack,
                 txn, phase, where, wep, putDone, floor, depSeq, view, cancelled>>

\* The held get of a cancelled workflow whose version has not committed.
CancelHeld(f, o) ==
  /\ cancelled /\ <<f, o>> \in hold /\ ver[o] < Need(f, o)
  /\ Mutant # "CancelKeepsHeld"
  /\ CancelRun(f)

Cancel == MayCancel /\ ~cancelled /\ cancelled' = TRUE /\ UNCHANGED <<vars, hold, asked>>

-----------------------------------------------------------------------------
(* Fences: Apta's, plus the hold table.  The fenced server's runs fail and *)
(* their held gets go; the gets held for a fenced producer's aborted put   *)
(* stay (its re-execution commits the version).                           *)
FenceHolds(c) ==
  LET Gone == {f \in Func : phase[f] = "run" /\ where[f] = c}
      Aborted == {txn[g].obj : g \in {h \in Func : txn[h] # NoTxn /\ where[h] = c}}
  IN /\ hold' = {h \in hold : /\ h[1] \notin Gone
                              /\ Mutant = "FenceDropsHolds" => h[2] \notin Aborted}
     /\ asked' = [f \in Func |-> IF f \in Gone THEN {} ELSE asked[f]]
     /\ UNCHANGED cancelled

FFenceDead(c) == FenceDead(c) /\ FenceHolds(c)
FFenceFalse(c) == FenceFalse(c) /\ FenceHolds(c)

-----------------------------------------------------------------------------
AllDoneOrCancelled == AllDone \/ (cancelled /\ \A f \in Func : phase[f] # "run")

\* The workflow completed, or was cancelled and nothing runs: a final stuttering step.
FlowTerminated == AllDoneOrCancelled /\ UNCHANGED fvars

VGet(f, o) == VHit(f, o) \/ VDrop(f, o) \/ VMiss(f, o) \/ VHold(f, o) \/ VCancelled(f, o)

FlowNext ==
  \/ \E f \in Func, c \in Server : FPlace(f, c) \/ PlaceEarly(f, c)
  \/ Sync /\ UNCHANGED flow
  \/ \E f \in Func, o \in Obj : \/ FGet(f, o) \/ VGet(f, o)
                                \/ Prepare(f, o) /\ UNCHANGED flow
                                \/ Release(f, o) \/ CancelHeld(f, o)
  \/ \E f \in Func : (WriteLine(f) \/ Commit(f) \/ Finish(f)) /\ UNCHANGED flow
  \/ \E c \in Server, o \in Obj, e \in Epoch :
       (RecvInv(c, o, e) \/ RecvAck(c, o, e)) /\ UNCHANGED flow
  \/ \E o \in Obj : (Settle(o) \/ Evict(o)) /\ UNCHANGED flow
  \/ \E c \in Server, o \in Obj : Drop(c, o) /\ UNCHANGED flow
  \/ \E c \in Server : \/ (Crash(c) \/ Rejoin(c)) /\ UNCHANGED flow
                       \/ FFenceDead(c) \/ FFenceFalse(c)
  \/ Cancel
  \/ FlowTerminated

FlowSpec == FlowInit /\ [][FlowNext]_fvars

(* Fairness: Apta's, with the new steps; the hold table's release (and the  *)
(* cancel answer) strongly fair (a release can stall on SI or a full        *)
(* directory).  Cancel has none: a workflow need never be cancelled.        *)
FRun(f) == \/ \E o \in Obj : FGet(f, o) \/ VGet(f, o) \/ (Prepare(f, o) /\ UNCHANGED flow)
           \/ (WriteLine(f) \/ Commit(f) \/ Finish(f)) /\ UNCHANGED flow

FlowFairness ==
  /\ \A f \in Func : /\ SF_fvars(\E c \in Server : FPlace(f, c) \/ PlaceEarly(f, c))
                     /\ SF_fvars(FRun(f))
                     /\ SF_fvars(\E o \in Obj : Release(f, o) \/ CancelHeld(f, o))
  /\ WF_fvars(Deliver /\ UNCHANGED flow)
  /\ WF_fvars(\E o \in Obj : Settle(o) /\ UNCHANGED flow)
  /\ SF_fvars(\E o \in Obj : Evict(o) /\ UNCHANGED flow)
  /\ WF_fvars(Sync /\ UNCHANGED flow)
  /\ \A c \in Server : WF_fvars(FFenceDead(c)) /\ WF_fvars(alive[c] /\ Rejoin(c) /\ UNCHANGED flow)

FlowLiveSpec == FlowSpec /\ FlowFairness

-----------------------------------------------------------------------------
(* Refinement: AptaFlow implements StoreFlow under Apta's mapping.         *)
FlowRefinementInit == AbsF!Init
FlowRefinement == [][AbsF!FlowNext]_AbsVars

(* Invariants (with Apta's P2, P3 and lemmas, which hold unchanged).       *)
FlowTypeOK ==
  /\ TypeOK
  /\ hold \subseteq Func \X Obj
  /\ asked \in [Func -> SUBSET Obj]
  /\ cancelled \in BOOLEAN

\* V1 (P1 with versions): an early function's get returned a committed version
\* no older than the one it named.
GetRequired == \A f \in EarlyF : \A o \in In[f] :
                 got[f][o] # NoVal => Need(f, o) <= got[f][o][1] /\ got[f][o][1] <= ver[o]
\* P1 for every other function (Apta's GetFresh, which early functions need not meet:
\* one that became ready after a re-execution's commit may hit the first attempt's version).
FlowGetFresh == \A f \in Func \ EarlyF : \A o \in In[f] :
                  got[f][o] # NoVal => \E v \in floor[f][o]..ver[o] : got[f][o][1] = v
\* The hold table: bounded; an entry is exactly a running early function's
\* unanswered get, of a live or not yet fenced server.
HoldShape ==
  /\ Cardinality(hold) <= HoldSlots
  /\ \A f \in Func, o \in Obj :
       (<<f, o>> \in hold) <=> (phase[f] = "run" /\ o \in asked[f])
  /\ \A f \in Func : asked[f] # {} => f \in EarlyF /\ asked[f] \subseteq In[f]
                                      /\ \A o \in asked[f] : got[f][o] = NoVal

-----------------------------------------------------------------------------
(* Liveness                                                                *)
\* P4 with early placement and crashes: every function of a workflow that is
\* not cancelled completes.
FlowCompletion == <>AllDoneOrCancelled
\* Every get a run is waiting for is answered (served or cancelled), or the
\* run fails (its server fenced).
GetAnswered == \A f \in Func, o \in Obj : o \in asked[f] ~> o \notin asked[f]
=============================================================================
