------------------------------- MODULE Store -------------------------------
(***************************************************************************)
(* The apta object store as FaaS workflows see it: the abstract contract   *)
(* that the protocol (Apta.tla) refines.                                   *)
(*                                                                         *)
(* A workflow is a DAG of functions (Pred); function f reads the objects   *)
(* In[f] with whole-object gets, then writes the objects Out[f] with       *)
(* whole-object puts.  A function whose run fails (its server crashed or   *)
(* was fenced) is re-executed, possibly elsewhere; functions are           *)
(* idempotent, so a re-execution may put an object again.                  *)
(*                                                                         *)
(* An object's value is a whole version: a put commits version mem[o]+1    *)
(* on every line of o at once.  The store promises (docs/PROTOCOL.md): *)
(*   P1 a get by f of o returns a committed version no older than the one  *)
(*      committed when f became ready, i.e. no older than every put of o   *)
(*      made by f's DAG ancestors.  (Gets and puts of one object by        *)
(*      functions the DAG does not order are outside the contract: such a  *)
(*      get may return any committed version from that floor on.)          *)
(*   P2 a get returns a whole object (one version on every line), never    *)
(*      a torn one, and never an uncommitted version.                      *)
(*   P3 the store holds the latest committed version; committed puts are   *)
(*      never lost (mem only grows, and only by puts).                     *)
(* P1 and P2 are the guard of Get; P3 is that Put is the only action that  *)
(* changes mem.  Liveness (P4/P5) is stated on the protocol, and through   *)
(* the refinement mapping as Completion below.                             *)
(*                                                                         *)
(* Left out: object sizes and contents beyond a version number, the        *)
(* compute phase, undeclared reads (reading an object not in In[f] is an   *)
(* error by the workflow contract), the function's return value.           *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
  Obj,    \* objects of the workflow
  Func,   \* functions of the workflow
  In,     \* In[f]  \subseteq Obj: the objects f declares it reads
  Out,    \* Out[f] \subseteq Obj: the objects f writes
  Pred,   \* Pred[f] \subseteq Func: f's direct predecessors in the DAG
  Line,   \* the cache lines of an object (an object is a function Line -> version)
  NoVal   \* "no value yet" (a model value)

ASSUME /\ \A f \in Func : In[f] \subseteq Obj /\ Out[f] \subseteq Obj /\ Pred[f] \subseteq Func
       /\ \A f \in Func : f \notin Pred[f]

Whole(v) == [l \in Line |-> v]           \* every line of the object holds version v

VARIABLES
  mem,    \* mem[o]: the version of o's latest committed put (0 = the initial object)
  phase,  \* phase[f]: "idle" (not running: not yet started, or failed), "run", "done"
  floor,  \* floor[f][o]: mem[o] when f became ready (all of Pred[f] done): P1's bound
  got,    \* got[f][o]: the value f's current run got for o, or NoVal
  wrote   \* wrote[f]: the outputs f's current run has put

vars == <<mem, phase, floor, got, wrote>>

Ready(f) == \A p \in Pred[f] : phase[p] = "done"

NoGot(f) == [o \in In[f] |-> NoVal]

Init == /\ mem = [o \in Obj |-> 0]
        /\ phase = [f \in Func |-> "idle"]
        /\ floor = [f \in Func |-> [o \in In[f] |-> 0]]
        /\ got = [f \in Func |-> NoGot(f)]
        /\ wrote = [f \in Func |-> {}]

\* The scheduler starts a ready function.
Start(f) == /\ phase[f] = "idle" /\ Ready(f)
            /\ phase' = [phase EXCEPT ![f] = "run"]
            /\ UNCHANGED <<mem, floor, got, wrote>>

\* P1 + P2: a whole, committed version no older than the DAG floor.
Get(f, o) == /\ phase[f] = "run" /\ o \in In[f] /\ got[f][o] = NoVal
             /\ \E v \in floor[f][o]..mem[o] : got' = [got EXCEPT ![f][o] = Whole(v)]
             /\ UNCHANGED <<mem, phase, floor, wrote>>

\* P3: a put commits the next version atomically; nothing else changes mem.
Put(f, o) == /\ phase[f] = "run" /\ o \in Out[f] \ wrote[f]
             /\ mem' = [mem EXCEPT ![o] = @ + 1]
             /\ wrote' = [wrote EXCEPT ![f] = @ \cup {o}]
             /\ UNCHANGED <<phase, floor, got>>

\* A run that has read all inputs and written all outputs completes; the
\* successors it makes ready get their floor from the current versions.
Finish(f) ==
  /\ phase[f] = "run" /\ wrote[f] = Out[f] /\ \A o \in In[f] : got[f][o] # NoVal
  /\ phase' = [phase EXCEPT ![f] = "done"]
  /\ floor' = [g \in Func |->
                 IF phase[g] = "idle" /\ f \in Pred[g]
                    /\ \A p \in Pred[g] \ {f} : phase[p] = "done"
                 THEN [o \in In[g] |-> mem[o]] ELSE floor[g]]
  /\ UNCHANGED <<mem, got, wrote>>

\* Runs fail (a crashed or fenced server may carry several); committed puts stay.
Fail(F) == /\ F # {} /\ \A f \in F : phase[f] = "run"
           /\ phase' = [f \in Func |-> IF f \in F THEN "idle" ELSE phase[f]]
           /\ got' = [f \in Func |-> IF f \in F THEN NoGot(f) ELSE got[f]]
           /\ wrote' = [f \in Func |-> IF f \in F THEN {} ELSE wrote[f]]
           /\ UNCHANGED <<mem, floor>>

Next == \/ \E f \in Func : Start(f) \/ Finish(f)
        \/ \E f \in Func, o \in Obj : Get(f, o) \/ Put(f, o)
        \/ \E F \in SUBSET Func : Fail(F)

Spec == Init /\ [][Next]_vars

\* P4 at the workflow level: every function eventually completes.
Completion == <>(\A f \in Func : phase[f] = "done")

-----------------------------------------------------------------------------
(* Checks of the abstract spec itself (MCStore.cfg).                       *)
TypeOK == /\ mem \in [Obj -> Nat]
          /\ phase \in [Func -> {"idle", "run", "done"}]
          /\ \A f \in Func : /\ floor[f] \in [In[f] -> Nat]
                             /\ DOMAIN got[f] = In[f]
                             /\ \A o \in In[f] : got[f][o] = NoVal \/
                                                 \E v \in 0..mem[o] : got[f][o] = Whole(v)
                             /\ wrote[f] \subseteq Out[f]

\* P1/P2 as state invariants of the contract: every value got is whole,
\* committed and no older than the floor.
GotFresh == \A f \in Func, o \in Obj :
              o \in In[f] /\ got[f][o] # NoVal =>
                \E v \in floor[f][o]..mem[o] : got[f][o] = Whole(v)
\* Floors only name committed versions.
FloorCommitted == \A f \in Func : \A o \in In[f] : floor[f][o] <= mem[o]
=============================================================================
