----------------------------- MODULE StoreFlow -----------------------------
(***************************************************************************)
(* The store contract with early placement: Store.tla, plus                *)
(* functions that start when their predecessors have started and read      *)
(* with versioned gets.  AptaFlow.tla refines it.                          *)
(*                                                                         *)
(* Which functions may be placed early (Early): every input has at most    *)
(* one writer in the workflow, an ancestor (its producer), and no ancestor *)
(* reads or writes an output.  Then every committed version of an input is *)
(* its producer's output: an attempt of the producer commits, or aborts at *)
(* its fence and commits nothing; a re-execution commits the next version  *)
(* with the same (deterministic) output.  So "the version the producer's   *)
(* put commits" is unambiguous: the first version after the instance's    *)
(* start, v0 + 1 (here v0 = 0: objects start at version 0), and a get      *)
(* that asks for AT LEAST it returns the producer's output whichever      *)
(* attempt committed it.  With two writers (an in-place update, racing     *)
(* puts) "the k-th version" could be a re-execution of the first writer,   *)
(* and an early function's commit could precede an ancestor's             *)
(* re-execution that reads or overwrites it: such functions keep the      *)
(* paper's placement (ready, scheduler rule) and gets without a version.   *)
(*                                                                         *)
(* The contract for an early function f (P1 with versions):                *)
(*   a get of o returns a whole committed version >= Need(f, o): its       *)
(*   producer's output when an ancestor writes o, never an older version. *)
(* For every other function, Store's P1 (the floor) unchanged; P2, P3 as  *)
(* Store.  f may finish before a predecessor reports completion (the      *)
(* predecessor committed its outputs, then crashed before reporting).     *)
(***************************************************************************)
EXTENDS Store

\* The ancestors of f (Pred is acyclic: Workflows.tla assumes it).
RECURSIVE AncN(_, _)
AncN(f, n) == IF n = 0 THEN {} ELSE Pred[f] \cup UNION {AncN(p, n - 1) : p \in Pred[f]}
Anc(f) == AncN(f, Cardinality(Func))

Writers(o) == {g \in Func : o \in Out[g]}

EarlyOK(f) ==
  /\ Pred[f] # {}
  /\ \A o \in In[f] : Writers(o) \subseteq Anc(f) /\ Cardinality(Writers(o)) <= 1
  /\ \A o \in Out[f] : \A a \in Anc(f) : o \notin In[a] \cup Out[a]

Early == {f \in Func : EarlyOK(f)}

\* The version f's get of o names: its producer's first commit (v0 + 1), or the
\* initial object when no ancestor writes o.
Need(f, o) == IF Writers(o) \cap Anc(f) # {} THEN 1 ELSE 0

\* An early function starts once every predecessor has started (is running or
\* done; not while a failed one waits for its re-execution).
StartEarly(f) ==
  /\ f \in Early /\ phase[f] = "idle"
  /\ \A p \in Pred[f] : phase[p] # "idle"
  /\ phase' = [phase EXCEPT ![f] = "run"]
  /\ UNCHANGED <<mem, floor, got, wrote>>

\* P1 with versions, P2: a whole committed version no older than the one named.
GetVersioned(f, o) ==
  /\ f \in Early /\ phase[f] = "run" /\ o \in In[f] /\ got[f][o] = NoVal
  /\ \E v \in Need(f, o)..mem[o] : got' = [got EXCEPT ![f][o] = Whole(v)]
  /\ UNCHANGED <<mem, phase, floor, wrote>>

FlowNext ==
  \/ \E f \in Func \ Early : Start(f)
  \/ \E f \in Early : StartEarly(f)
  \/ \E f \in Func \ Early, o \in Obj : Get(f, o)
  \/ \E f \in Early, o \in Obj : GetVersioned(f, o)
  \/ \E f \in Func, o \in Obj : Put(f, o)
  \/ \E f \in Func : Finish(f)
  \/ \E F \in SUBSET Func : Fail(F)

FlowSpec == Init /\ [][FlowNext]_vars
=============================================================================
