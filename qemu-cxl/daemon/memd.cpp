// apta-memd: the host memory-server daemon of the CXL emulation (README.md). Runs the Verilated
// memory-server top (build/rtl/<variant>/MemoryServer.sv, rtl/MEMSERVER.md) one clock cycle per
// loop iteration behind the guests' rings (qemu-cxl/RINGS.md), with the control-plane API
// (schema/controlplane.yaml) on its own thread. Nothing a guest writes is trusted: a request's
// compute-server id is the ring it came through, every slot is checked with the generated codec
// before it reaches the RTL, and a malformed slot is answered with a refusal slot.
// This file: the log, the deliberate bugs' names, and start-up in the order that lets a bad
// option or file stop the daemon before it touches the rack.
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

#include "daemon.h"
#include "handover.h"
#include "verilated.h"

namespace apta_memd {

volatile sig_atomic_t g_stop = 0;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

namespace {
const uint64_t g_t0 = now_ns();
void on_signal(int) { g_stop = 1; }
}  // namespace

void say(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "apta-memd %9.3f ", double(now_ns() - g_t0) / 1e9);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

// The deliberate bugs for negative controls, schema/mutants.json's daemon layer (whose checker,
// schema/mutants.py, reads their names here):
//   --mutant commit-waits-for-acks  a PutCommit is held while another server owes an ack
bool set_mutant(const std::string& a, const std::string& m, Options& o) {
  if (a == "--mutant" && m == "commit-waits-for-acks") return o.mutant_commit_waits = true;
  return false;
}

}  // namespace apta_memd

using namespace apta_memd;

int main(int argc, char** argv) {
  Options o;
  if (int rc = parse_options(argc, argv, N, o); rc >= 0) return rc;

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(1, argv);
  Daemon d(o, ctx.get());
  if (!o.token_file.empty()) {
    std::string err;
    if (!load_tokens(o.token_file, o.names, d.tokens, err)) { fprintf(stderr, "apta-memd: --token-file %s\n", err.c_str()); return 2; }
    say("API authentication on: %zu tokens", d.tokens.byToken.size());
  }
  std::shared_ptr<apta_http::Tls> tls;
  if (!o.tls.cert.empty() || !o.tls.key.empty() || !o.tls.client_ca.empty()) {
    std::string err;
    if (!(tls = apta_http::Tls::load(o.tls, err))) { fprintf(stderr, "apta-memd: %s\n", err.c_str()); return 2; }
    d.tokens.certs = tls->client_certs();
    say("API over TLS: %s%s", o.tls.cert.c_str(), tls->client_certs() ? ", client certificates of the CA in --client-ca-file" : "");
  }
  if (d.open_region() < 0) return 1;
  if (!o.trace_log.empty()) {
    if (!d.open_trace(o.trace_log)) { fprintf(stderr, "apta-memd: --trace-log %s: %s\n", o.trace_log.c_str(), strerror(errno)); return 1; }
  }
  if (o.port > 0 && (d.listen_fd = listen_on(o.port)) < 0) {
    fprintf(stderr, "apta-memd: cannot listen on 127.0.0.1:%d: %s\n", o.port, strerror(errno));
    return 1;
  }
  d.reset();
  std::unique_ptr<apta_http::Server> http;
  if (d.listen_fd >= 0) {
    d.api_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    http = std::make_unique<apta_http::Server>(d.listen_fd, apta_http::Limits{},
                                               [&d](uint64_t id, apta_http::Request& q, apta_http::Reply& r) { return enqueue(d, id, q, r); }, tls);
    d.http = http.get();
    http->start();
  }
  uint64_t t0 = now_ns();
  d.run();
  if (http) http->stop();
  d.close_trace();
  double secs = double(now_ns() - t0) / 1e9;
  say("stopped");
  if (o.stats) d.stats(secs);
  return 0;
}
