----------------------------- MODULE Workflows -----------------------------
(***************************************************************************)
(* The workflows checked, as constants: small instances of the paper's     *)
(* patterns (pipeline, broadcast, broadcast-gather, scatter-gather,        *)
(* map-reduce, diamond).  Functions and objects are strings.  An object    *)
(* that no function of the workflow writes before reading it starts as     *)
(* version 0 (the workflow's input, already in the store).  A .cfg picks   *)
(* one with Workflow = "<name>" and substitutes Func <- MCFunc, Obj <-     *)
(* MCObj, ...                                                              *)
(*                                                                         *)
(* The instances are defined once, beside every other layer's instance     *)
(* of the same pattern, in workloads/patterns/<pattern>.json ("model").    *)
(* `python -m apta.workflow tla` writes them as the module                 *)
(* WorkflowPatterns (F(in, out, pred) and Patterns); check.py generates    *)
(* it into build/tla/gen/ and puts that on TLC's library path              *)
(* (-DTLA-Library).                                                        *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, WorkflowPatterns

CONSTANT Workflow   \* the name of the workflow checked: one of DOMAIN Patterns

ASSUME Workflow \in DOMAIN Patterns

W == Patterns[Workflow]
MCFunc == DOMAIN W
MCIn == [f \in MCFunc |-> W[f].in]
MCOut == [f \in MCFunc |-> W[f].out]
MCPred == [f \in MCFunc |-> W[f].pred]
MCObj == UNION {W[f].in \cup W[f].out : f \in MCFunc}

\* The DAG is acyclic: no function is its own ancestor.
RECURSIVE Ancestors(_, _)
Ancestors(f, n) == IF n = 0 THEN {} ELSE
                   MCPred[f] \cup UNION {Ancestors(p, n - 1) : p \in MCPred[f]}
ASSUME \A f \in MCFunc : f \notin Ancestors(f, Cardinality(MCFunc))
=============================================================================
