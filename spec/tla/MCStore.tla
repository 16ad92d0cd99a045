------------------------------ MODULE MCStore ------------------------------
(***************************************************************************)
(* Model-checking module for the abstract contract alone (sanity: it is   *)
(* consistent, deadlock-free up to completion, and its own invariants     *)
(* hold).  Re-executions are unbounded in Store, so the model is bounded  *)
(* by a state constraint on versions.                                      *)
(***************************************************************************)
EXTENDS Store, Workflows, TLC

CONSTANT MaxVersion   \* state constraint: at most this many puts per object

Bound == \A o \in Obj : mem[o] <= MaxVersion

\* The abstract spec is not stuck before the workflow completes.
Term == (\A f \in Func : phase[f] = "done") /\ UNCHANGED vars
SpecT == Init /\ [][Next \/ Term]_vars
=============================================================================
