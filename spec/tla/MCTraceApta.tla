---------------------------- MODULE MCTraceApta -----------------------------
(***************************************************************************)
(* Model-checking module of a trace validation run: TraceApta with the     *)
(* constants of one log, module TraceLog, which spec/tla/trace.py writes   *)
(* into build/trace/tla/<log>/ (on TLC's library path) from the ndjson log;*)
(* it also declares the model values NoVal, NoTxn, NoSrv, NoEp, which the  *)
(* start states of a chunk (TLStart) name.                                 *)
(*                                                                         *)
(* The constants are bound by INSTANCE, not by `<-` in the .cfg: TLC       *)
(* evaluates a definition bound by INSTANCE once, but re-evaluates one     *)
(* substituted in the .cfg at every use (measured: the log, a sequence of  *)
(* hundreds of records, made TLC 10-100x slower).                         *)
(*                                                                         *)
(* NLines = 1: a put's last line is its WriteLine and every line of a get  *)
(* must hold the version of the spec's value.  Lag: the scheduler's view   *)
(* is any earlier snapshot (Sync is a hidden step).  Locality = FALSE: any *)
(* eligible server.  SilentEvict: a compute server's copy may be gone      *)
(* before the spec's invalidation (a model that did not install a version  *)
(* its BISnp overtook; README.md, "Trace validation").                     *)
(***************************************************************************)
EXTENDS TraceLog, TLC

VARIABLES alive, fenced, epoch, cache, crashes, falses,
          mline, ver, cseq, dir, sharers, pend, inv, ack, txn,
          phase, where, wep, got, putDone, floor, depSeq,
          vseq, vpend, vep, l

T == INSTANCE TraceApta WITH
       Server <- TLServer, Obj <- TLObj, Func <- TLFunc,
       In <- TLIn, Out <- TLOut, Pred <- TLPred,
       NLines <- 1, DirCap <- TLDirCap, MaxCrash <- TLMaxCrash, MaxFalse <- TLMaxFalse,
       Declared <- TLDeclared, Lag <- TRUE, Locality <- FALSE, SilentEvict <- TRUE,
       Mutant <- "none", Log <- TLLog, HiddenRecvInv <- TLHiddenRecvInv,
       Start <- TLStart, Base <- TLBase, AllEnds <- TLAllEnds

ASSUME TLCSet(1, 0)      \* TLC register 1: the most log events matched (TraceProgress)

TraceInit == T!TraceInit
TraceNext == T!TraceNext
TraceProgress == T!TraceProgress
=============================================================================
