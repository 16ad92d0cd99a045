---------------------------- MODULE MCTraceApta -----------------------------
(***************************************************************************)
(* Model-checking module of a trace validation run: TraceApta with the     *)
(* constants of one log, module TraceLog, which spec/tla/trace.py writes   *)
(* into build/trace/tla/<log>/ (on TLC's library path) from the ndjson log.*)
(***************************************************************************)
EXTENDS TraceApta, TraceLog
=============================================================================
