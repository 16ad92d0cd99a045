----------------------------- MODULE Workflows -----------------------------
(***************************************************************************)
(* The workflows checked, as constants: small instances of the paper's     *)
(* patterns (pipeline, broadcast, broadcast-gather, scatter-gather,        *)
(* map-reduce).  Functions and objects are strings.  An object that no     *)
(* function of the workflow writes before reading it starts as version 0   *)
(* (the workflow's input, already in the store).  A .cfg picks one with    *)
(* Workflow = "<name>" and substitutes Func <- MCFunc, Obj <- MCObj, ...   *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANT Workflow   \* the name of the workflow checked: one of DOMAIN Patterns

F(in, out, pred) == [in |-> in, out |-> out, pred |-> pred]

Patterns == [
  \* f1 -> f2 -> f3; f2 updates x in place (like sentiment_analysis on
  \* parsed_reviews), so f3's get of x must not see f1's version.
  pipeline |-> [f1 |-> F({}, {"x"}, {}),
                f2 |-> F({"x"}, {"x"}, {"f1"}),
                f3 |-> F({"x"}, {"y"}, {"f2"})],
  \* two stages updating one object in turn: the liveness model.
  pipe2 |-> [f1 |-> F({"x"}, {"x"}, {}),
             f2 |-> F({"x"}, {"x"}, {"f1"})],
  \* p updates x; two consumers read it in parallel (and share it).
  broadcast |-> [p  |-> F({"x"}, {"x"}, {}),
                 c1 |-> F({"x"}, {}, {"p"}),
                 c2 |-> F({"x"}, {}, {"p"})],
  \* two consumers of x race to put y (unordered puts: serviced in SA);
  \* the gather reads y after both and rewrites x, which both consumers cache.
  bgather |-> [c1 |-> F({"x"}, {"y"}, {}),
               c2 |-> F({"x"}, {"y"}, {}),
               g  |-> F({"y"}, {"x"}, {"c1", "c2"})],
  \* s scatters x and y; w1, w2 update one part each; g gathers both.
  scatter |-> [s  |-> F({}, {"x", "y"}, {}),
               w1 |-> F({"x"}, {"x"}, {"s"}),
               w2 |-> F({"y"}, {"y"}, {"s"}),
               g  |-> F({"x", "y"}, {}, {"w1", "w2"})],
  \* a reader f1 in parallel with two updates f2 -> f3 of x, then a final
  \* reader g: re-executing f1 re-caches x between the two updates.
  diamond |-> [f1 |-> F({"x"}, {}, {}),
               f2 |-> F({"x"}, {"x"}, {}),
               f3 |-> F({"x"}, {"x"}, {"f2"}),
               g  |-> F({"x"}, {}, {"f1", "f3"})],
  \* two mappers read the input x and write partitions y, z; the reducer
  \* reads both and writes the result back to x.
  mapreduce |-> [m1 |-> F({"x"}, {"y"}, {}),
                 m2 |-> F({"x"}, {"z"}, {}),
                 r  |-> F({"y", "z"}, {"x"}, {"m1", "m2"})]
]

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
