------------------------------ MODULE MCApta -------------------------------
(***************************************************************************)
(* Model-checking module for Apta: the workflow constants (Workflows.tla)  *)
(* and the symmetry of compute servers (safety runs only).                 *)
(***************************************************************************)
EXTENDS Apta, Workflows, TLC

Sym == Permutations(Server)
=============================================================================
