// The daemon's event log for trace validation (`apta-memd-trace --trace-log FILE`;
// spec/tla/README.md "The QEMU emulation", spec/tla/qemu_trace.py reads it). One JSON object per
// line, in the daemon's cycle order, each with `cycle` and `t` (CLOCK_MONOTONIC ns, the clock the
// executor stamps its placements and completions with: one host, one clock):
//   {"ev":"req","g":G,"idx":I,"op":...}   a request slot consumed at io_req_<g> (I: its index in
//                                          g's request ring), fields of the flit
//   {"ev":"birsp","g":G,"idx":I,...}       an ObjBIRsp consumed at io_birsp
//   {"ev":"rsp",...} / {"ev":"snp",...}    a flit leaving io_rsp / io_snp
//   {"ev":"core","op":O,"server":S,"obj":X,"result":R}   the coherence core's result queue
//                                          (respQ enq: the get's and the commit's linearization points)
//   {"ev":"err",...}                       io_err
//   {"ev":"fenced"|"unfenced","server":S,"epoch":E}      io_status_fenced changed (after the edge)
//   {"ev":"register","obj":X,"base":B,"size":N,"valid":V,"h":[...]}   io_mapUpd done; h: the
//                                          FNV-1a 64 of each of the object's lines in DRAM then
// Data lines are logged as their FNV-1a 64 (`h`), never as data.
#pragma once
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <string>

extern "C" {
#include "apta_msg.h"
}

namespace apta_trace {

inline uint64_t fnv(const uint8_t* d, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 0x100000001b3ull;
  return h;
}

class Log {
 public:
  bool open(const std::string& path) {
    f_ = fopen(path.c_str(), "w");
    if (f_) setvbuf(f_, nullptr, _IOFBF, 1 << 20);
    return f_ != nullptr;
  }
  bool on() const { return f_ != nullptr; }
  void close() {
    if (f_) fclose(f_);
    f_ = nullptr;
  }
  void flush() {
    if (f_ && dirty_) fflush(f_), dirty_ = false;
  }
  // a new cycle: its events share one time stamp, taken at the first event (before any of the
  // cycle's outputs reaches a ring)
  void cycle(uint64_t c) { cycle_ = c, t_ = 0; }

  // a flit at a port; idx: the slot's index in the guest's request ring (consumed flits)
  void flit(const char* ev, const uint8_t* f, int g = -1, uint64_t idx = 0) {
    unsigned op = apta_opcode(f);
    head(ev);
    if (g >= 0) fprintf(f_, ",\"g\":%d,\"idx\":%llu", g, (unsigned long long)idx);
    fprintf(f_, ",\"op\":\"%s\",\"server\":%u", apta_msg_name(op),
            unsigned(apta_bits_get(f, APTA_OPCODE_BITS, APTA_P_serverBits)));
    switch (op) {
      case APTA_OP_ObjGet: { apta_ObjGet m; apta_unpack_ObjGet(f, &m); fields(m.epoch, m.obj); break; }
      case APTA_OP_PutPrepare: { apta_PutPrepare m; apta_unpack_PutPrepare(f, &m); fields(m.epoch, m.obj, m.txn); break; }
      case APTA_OP_PutLine: {
        apta_PutLine m;
        apta_unpack_PutLine(f, &m);
        fields(m.epoch, m.obj, m.txn, m.line);
        fprintf(f_, ",\"h\":\"%016llx\"", (unsigned long long)fnv(m.data, sizeof m.data));
        break;
      }
      case APTA_OP_Rejoin: { apta_Rejoin m; apta_unpack_Rejoin(f, &m); fields(m.epoch); break; }
      case APTA_OP_ObjBIRsp: { apta_ObjBIRsp m; apta_unpack_ObjBIRsp(f, &m); fields(m.epoch, m.obj); break; }
      case APTA_OP_ObjBISnp: { apta_ObjBISnp m; apta_unpack_ObjBISnp(f, &m); fields(m.epoch, m.obj); break; }
      case APTA_OP_ObjData: {
        apta_ObjData m;
        apta_unpack_ObjData(f, &m);
        fields(m.epoch, m.obj, -1, m.line);
        fprintf(f_, ",\"h\":\"%016llx\"", (unsigned long long)fnv(m.data, sizeof m.data));
        break;
      }
      case APTA_OP_PutCommit: { apta_PutCommit m; apta_unpack_PutCommit(f, &m); fields(m.epoch, m.obj, m.txn); break; }
      case APTA_OP_PutRetry: { apta_PutRetry m; apta_unpack_PutRetry(f, &m); fields(m.epoch, m.obj, m.txn); break; }
      case APTA_OP_RejoinAck: { apta_RejoinAck m; apta_unpack_RejoinAck(f, &m); fields(m.epoch); break; }
      case APTA_OP_RejoinRefused: { apta_RejoinRefused m; apta_unpack_RejoinRefused(f, &m); fields(m.epoch); break; }
      case APTA_OP_ObjErr: {
        apta_ObjErr m;
        apta_unpack_ObjErr(f, &m);
        fields(m.epoch, m.obj, m.txn);
        fprintf(f_, ",\"code\":%u", m.code);
        break;
      }
      default: break;
    }
    end();
  }
  void core(unsigned op, unsigned server, uint32_t obj, unsigned result) {
    head("core");
    fprintf(f_, ",\"op\":%u,\"server\":%u,\"obj\":%u,\"result\":%u", op, server, obj, result);
    end();
  }
  void err(unsigned code, unsigned server, unsigned obj, unsigned txn, unsigned opcode) {
    head("err");
    fprintf(f_, ",\"code\":%u,\"server\":%u,\"obj\":%u,\"txn\":%u,\"opcode\":%u", code, server, obj, txn, opcode);
    end();
  }
  void fenced(unsigned server, bool on, unsigned epoch) {
    head(on ? "fenced" : "unfenced");
    fprintf(f_, ",\"server\":%u,\"epoch\":%u", server, epoch);
    end();
  }
  void reg(uint32_t obj, uint64_t base, unsigned size, bool valid, const uint8_t* lines) {
    head("register");
    fprintf(f_, ",\"obj\":%u,\"base\":%llu,\"size\":%u,\"valid\":%s,\"h\":[", obj, (unsigned long long)base, size,
            valid ? "true" : "false");
    for (unsigned l = 0; lines && l < size; l++) fprintf(f_, "%s\"%016llx\"", l ? "," : "", (unsigned long long)fnv(lines + 64ull * l, 64));
    fputc(']', f_);
    end();
  }

 private:
  void head(const char* ev) {
    if (!t_) {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      t_ = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
    }
    fprintf(f_, "{\"ev\":\"%s\",\"cycle\":%llu,\"t\":%llu", ev, (unsigned long long)cycle_, (unsigned long long)t_);
  }
  void fields(unsigned epoch, long obj = -1, long txn = -1, long line = -1) {
    fprintf(f_, ",\"epoch\":%u", epoch);
    if (obj >= 0) fprintf(f_, ",\"obj\":%ld", obj);
    if (txn >= 0) fprintf(f_, ",\"txn\":%ld", txn);
    if (line >= 0) fprintf(f_, ",\"line\":%ld", line);
  }
  void end() {
    fputs("}\n", f_);
    dirty_ = true;
  }
  FILE* f_ = nullptr;
  uint64_t cycle_ = 0, t_ = 0;
  bool dirty_ = false;
};

}  // namespace apta_trace
