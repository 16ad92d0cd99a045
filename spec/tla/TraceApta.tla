----------------------------- MODULE TraceApta -----------------------------
(***************************************************************************)
(* Trace validation: is a log of the RTL memory server (written by         *)
(* rtl/tools/ms_trace.py, translated by trace.py) a behaviour of Apta.tla? *)
(*                                                                         *)
(* The log is a sequence of events; l counts the events matched so far.   *)
(* Every step of TraceNext is one action of Apta's Next: either the action *)
(* that log event l+1 names, with its parameters (function, server,       *)
(* object, epoch) fixed by the event and the values it observed (the       *)
(* version a get returned, the epoch a fence or rejoin left) checked, or   *)
(* an action the RTL does not log (a hidden step: the scheduler's view     *)
(* refreshed, a directory entry settling, a silent drop of a cached copy,  *)
(* a directory eviction), which leaves l unchanged.  The log is accepted   *)
(* iff a state with l = Len(Log) is reachable: some behaviour of the spec  *)
(* shows exactly the logged events, in order.  TraceProgress records the   *)
(* largest l reached (TLC register 1) and prints it, so trace.py names the *)
(* first event no action can match.  The mapping and why it is sound:      *)
(* README.md, "Trace validation".                                          *)
(*                                                                         *)
(* Events whose spec action changes nothing (a line that is not the last  *)
(* of its put, a BISnp leaving the memory server, a BISnp a compute server *)
(* ignores, the final memory) are matched by a stuttering step that checks *)
(* what the spec's state says about them (an open transaction of that     *)
(* object, an invalidation in flight, the memory's version).               *)
(***************************************************************************)
EXTENDS Apta, Sequences, TLC

CONSTANT Log,     \* the events: records with ev and the fields of ms_trace.py's format
         HiddenRecvInv, \* TRUE: the log cannot show a compute server receiving a BISnp
                        \* (the core alone: core_trace.py), so RecvInv is a hidden step
         Start,         \* {}: the log starts at Init; else a chunk of a longer log: the
                        \* states (records of the variables) in which the previous chunk's
                        \* run matched its last event (README.md, "Long logs")
         Base,          \* Base[c]: the previous chunk's epoch of c that is epoch 0 here
         AllEnds        \* TRUE: explore every behaviour and print every state that matched
                        \* the whole log (the next chunk's Start); FALSE: stop at the
                        \* first state that matched it

VARIABLE l        \* log events matched so far

tvars == <<vars, l>>

E == Log[l + 1]   \* the next event to match

\* every line of the observed value holds the version of the spec's value.  A set, not
\* \A i : lines[i] = val[1]: in an action TLC chains a \A's conjuncts one stack frame group
\* each, and a get of 512 lines overflowed its stack (CI, a QEMU log; test_long_gets_validated)
Holds(lines, val) == {lines[i] : i \in DOMAIN lines} \subseteq {val[1]}

Known(f, c) == f \in Func /\ c \in Server /\ where[f] = c

-----------------------------------------------------------------------------
(* The event l+1, matched by the action it names.                          *)
MatchPlace ==
  /\ E.fn \in Func /\ E.server \in Server /\ epoch[E.server] = E.epoch
  /\ Place(E.fn, E.server)

\* a get answered from the cache (hit) or served by the OSC (the core's Served)
MatchGet ==
  /\ Known(E.fn, E.server) /\ E.obj \in In[E.fn] /\ epoch[E.server] = E.epoch
  /\ (cache[E.server][E.obj] # NoVal) = E.hit
  /\ Get(E.fn, E.obj)
  /\ Holds(E.lines, got'[E.fn][E.obj])

MatchPrepare ==
  /\ Known(E.fn, E.server) /\ E.obj \in Obj /\ wep[E.fn] = E.epoch
  /\ Prepare(E.fn, E.obj)

\* the last line of a put is the spec's WriteLine (NLines = 1); the others
\* only need the put's open transaction
MatchLine ==
  /\ Known(E.fn, E.server) /\ wep[E.fn] = E.epoch
  /\ txn[E.fn] # NoTxn /\ txn[E.fn].obj = E.obj
  /\ IF E.line + 1 = E.size
     THEN WriteLine(E.fn)
     ELSE txn[E.fn].n = 0 /\ UNCHANGED vars

MatchCommit ==
  /\ Known(E.fn, E.server) /\ wep[E.fn] = E.epoch
  /\ txn[E.fn] # NoTxn /\ txn[E.fn].obj = E.obj
  /\ Commit(E.fn)
  /\ ver'[E.obj] = E.version

\* a BISnp leaving the memory server: an invalidation of that epoch is owed
MatchBISnp ==
  /\ E.server \in Server /\ E.obj \in Obj /\ E.epoch \in Epoch
  /\ inv[E.server][E.obj][E.epoch] > 0
  /\ UNCHANGED vars

\* a compute server received a BISnp: acked (current epoch) or ignored
MatchSnpRecv ==
  /\ E.server \in Server /\ E.obj \in Obj /\ E.epoch \in Epoch
  /\ IF E.acked
     THEN E.epoch = epoch[E.server] /\ RecvInv(E.server, E.obj, E.epoch)
     ELSE inv[E.server][E.obj][E.epoch] > 0 /\ UNCHANGED vars

MatchBIRsp ==
  /\ E.server \in Server /\ E.obj \in Obj /\ E.epoch \in Epoch
  /\ RecvAck(E.server, E.obj, E.epoch)

MatchDone == Known(E.fn, E.server) /\ Finish(E.fn)

MatchCrash == E.server \in Server /\ Crash(E.server)

MatchFence ==
  /\ E.server \in Server /\ epoch[E.server] = E.epoch
  /\ FenceDead(E.server) \/ FenceFalse(E.server)

MatchRejoin == E.server \in Server /\ Rejoin(E.server) /\ epoch'[E.server] = E.epoch

\* a PutPrepare/PutLine the memory server discarded at its port (err zombie):
\* the spec agrees that its sender is fenced or the flit's epoch is not current
MatchRefused ==
  /\ E.server \in Server
  /\ fenced[E.server] \/ E.epoch # epoch[E.server]
  /\ UNCHANGED vars

MatchFinal == E.obj \in Obj /\ Holds(E.lines, mline[E.obj]) /\ UNCHANGED vars

\* Not an RTL event: trace.py writes `retire` after a function's last event in a log
\* without a DAG (the core stress: a function per request), so that its name (a slot)
\* can serve a later request.  The function must be inert: no transaction, and either
\* failed by a fence (idle, never placed again under this name) or finished with its
\* work (every input got, every output committed), so that no action of Next but its
\* own Finish or a fence's reset can touch it and none reads it.  Its variables return
\* to their initial values.  Why the state of Apta over unboundedly many functions is
\* the state here plus frozen retired ones: README.md, "Long logs".
MatchRetire ==
  LET f == E.fn IN
  /\ f \in Func /\ Pred[f] = {} /\ \A g \in Func : f \notin Pred[g]
  /\ txn[f] = NoTxn
  /\ \/ phase[f] = "idle"
     \/ phase[f] = "run" /\ Inputs(f) /\ putDone[f] = Out[f]
  /\ phase' = [phase EXCEPT ![f] = "idle"]
  /\ where' = [where EXCEPT ![f] = NoSrv]
  /\ wep' = [wep EXCEPT ![f] = 0]
  /\ got' = [got EXCEPT ![f] = NoGot(f)]
  /\ putDone' = [putDone EXCEPT ![f] = {}]
  /\ floor' = [floor EXCEPT ![f] = [o \in In[f] |-> 0]]
  /\ depSeq' = [depSeq EXCEPT ![f] = 0]
  /\ UNCHANGED <<server, memsrv, view>>

Match ==
  \/ E.ev = "place"       /\ MatchPlace
  \/ E.ev = "get"         /\ MatchGet
  \/ E.ev = "put_prepare" /\ MatchPrepare
  \/ E.ev = "put_line"    /\ MatchLine
  \/ E.ev = "commit"      /\ MatchCommit
  \/ E.ev = "bisnp"       /\ MatchBISnp
  \/ E.ev = "snp_recv"    /\ MatchSnpRecv
  \/ E.ev = "birsp"       /\ MatchBIRsp
  \/ E.ev = "done"        /\ MatchDone
  \/ E.ev = "crash"       /\ MatchCrash
  \/ E.ev = "fence"       /\ MatchFence
  \/ E.ev = "rejoin"      /\ MatchRejoin
  \/ E.ev = "refused"     /\ MatchRefused
  \/ E.ev = "final"       /\ MatchFinal
  \/ E.ev = "retire"      /\ MatchRetire

-----------------------------------------------------------------------------
(* Hidden steps: actions of Next the RTL does not log.  Some are taken    *)
(* only where the next event may need them (a drop before a miss of that   *)
(* object on that server, an eviction before a BISnp of that object, or   *)
(* of an entry without sharers (it sends none) before a get or commit, and *)
(* in a log that cannot show a compute server receiving a BISnp, its       *)
(* receipt before its BIRsp or before the server's rejoin, the last moment *)
(* it can still produce an ack of that epoch), which only prunes           *)
(* behaviours that differ from a kept one by when an unobservable step     *)
(* happened.                                                               *)
Hidden ==
  \/ Sync
  \/ /\ HiddenRecvInv /\ E.ev \in {"birsp", "rejoin"} /\ E.server \in Server
     /\ \E o \in Obj : RecvInv(E.server, o, epoch[E.server])
  \/ \E o \in Obj : Settle(o)
  \/ E.ev = "get" /\ ~E.hit /\ E.server \in Server /\ E.obj \in Obj /\ Drop(E.server, E.obj)
  \/ E.ev = "bisnp" /\ E.obj \in Obj /\ Evict(E.obj)
  \/ E.ev \in {"get", "commit"} /\ \E o \in Obj : Evict(o) /\ sharers[o] = {}

\* A chunk starts in one of the previous chunk's end states s, renumbered: epochs
\* minus Base (a view's epoch older than Base, which no placement can match, becomes
\* NoEp: not eligible either way), invalidations and acks of epochs older than Base
\* dropped (trace.py chose Base below every epoch a later BISnp/BIRsp/snp_recv of the
\* chunk names, so no step reads them), functions of the chunk not in s initial, the
\* fault counters from 0 (MaxCrash, MaxFalse count this chunk's faults).
Carry(fn, f, dflt) == IF f \in DOMAIN fn THEN fn[f] ELSE dflt
Rebase(c, bag) == [o \in Obj |-> [e \in Epoch |-> IF e + Base[c] \in DOMAIN bag[o]
                                                   THEN bag[o][e + Base[c]] ELSE 0]]
FromState(s) ==
  /\ alive = s.alive /\ fenced = s.fenced /\ cache = s.cache
  /\ epoch = [c \in Server |-> s.epoch[c] - Base[c]]
  /\ crashes = 0 /\ falses = 0
  /\ mline = s.mline /\ ver = s.ver /\ cseq = s.cseq /\ dir = s.dir
  /\ sharers = s.sharers /\ pend = s.pend
  /\ inv = [c \in Server |-> Rebase(c, s.inv[c])]
  /\ ack = [c \in Server |-> Rebase(c, s.ack[c])]
  /\ txn = [f \in Func |-> Carry(s.txn, f, NoTxn)]
  /\ phase = [f \in Func |-> Carry(s.phase, f, "idle")]
  /\ where = [f \in Func |-> Carry(s.where, f, NoSrv)]
  /\ wep = [f \in Func |-> IF f \in DOMAIN s.wep /\ s.where[f] \in Server
                                /\ s.wep[f] >= Base[s.where[f]]
                            THEN s.wep[f] - Base[s.where[f]] ELSE 0]
  /\ got = [f \in Func |-> Carry(s.got, f, NoGot(f))]
  /\ putDone = [f \in Func |-> Carry(s.putDone, f, {})]
  /\ floor = [f \in Func |-> Carry(s.floor, f, [o \in In[f] |-> 0])]
  /\ depSeq = [f \in Func |-> Carry(s.depSeq, f, 0)]
  /\ vseq = s.vseq /\ vpend = s.vpend
  /\ vep = [c \in Server |-> IF s.vep[c] \in Nat /\ s.vep[c] >= Base[c]
                              THEN s.vep[c] - Base[c] ELSE NoEp]

TraceInit ==
  /\ IF Start = {} THEN Init ELSE \E s \in Start : FromState(s)
  /\ l = 0

TraceNext ==
  /\ l < Len(Log)
  /\ \/ Match /\ l' = l + 1
     \/ Hidden /\ UNCHANGED l

TraceSpec == TraceInit /\ [][TraceNext]_tvars

-----------------------------------------------------------------------------
(* TLC register 1 (set to 0 by MCTraceApta): the most events any reachable *)
(* state matched; printed when it grows; TLC stops once the whole log is   *)
(* matched, or (AllEnds) prints every state that matched it (State: a      *)
(* record the next chunk's FromState reads).                               *)
State == [alive |-> alive, fenced |-> fenced, epoch |-> epoch, cache |-> cache,
          mline |-> mline, ver |-> ver, cseq |-> cseq, dir |-> dir, sharers |-> sharers,
          pend |-> pend, inv |-> inv, ack |-> ack, txn |-> txn, phase |-> phase,
          where |-> where, wep |-> wep, got |-> got, putDone |-> putDone, floor |-> floor,
          depSeq |-> depSeq, vseq |-> vseq, vpend |-> vpend, vep |-> vep]

TraceProgress ==
  /\ IF l > TLCGet(1) THEN TLCSet(1, l) /\ PrintT(<<"trace-reached", l>>) ELSE TRUE
  /\ IF l = Len(Log)
     THEN IF AllEnds THEN PrintT(<<"trace-end", State>>) ELSE TLCSet("exit", TRUE)
     ELSE TRUE
=============================================================================
