----------------------------- MODULE MCAptaFlow -----------------------------
(***************************************************************************)
(* Model-checking module for AptaFlow (early placement, versioned gets):   *)
(* the workflow constants and the symmetry of compute servers (safety      *)
(* runs only).                                                             *)
(***************************************************************************)
EXTENDS AptaFlow, Workflows, TLC

Sym == Permutations(Server)
=============================================================================
