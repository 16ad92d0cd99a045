// The daemon's command line: what each option sets, and its parser (options.cpp, CLI11).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "http.h"

extern "C" {
#include "apta_layout.h"
}

namespace apta_memd {

struct Options {
  std::string file;                    // the server file
  std::string guest_file;              // printf pattern of guest g's file (%u = g); default: next to file
  bool init = false, stats = false, trace = false;
  uint32_t slots = APTA_DEFAULT_SLOTS;
  int port = 0;                        // HTTP port on 127.0.0.1; 0 = no API
  std::string token_file;              // --token-file: bearer tokens with roles (else no authentication)
  apta_http::TlsFiles tls;             // --tls-cert-file, --tls-private-key-file, --client-ca-file
  uint64_t lease_ms = APTA_LEASE_MS;
  double rejoin_rate = 1.0, rejoin_burst = 16;   // --rejoin-rate (per s, 0 = no limit), --rejoin-burst
  std::vector<std::string> names;      // compute-server names of the API
  std::string pidfile;                 // printf pattern of guest g's QEMU pidfile (%u = g); "" = none
  // A deliberate bug for the tests' negative control (tests/test_runner.py, test_qemu_workflows.py):
  // a PutCommit is held back while any other server owes an invalidation ack, as if a put waited
  // for the invalidations (the CXL-cached baseline), so a dead sharer stalls live writers until
  // its fence.
  bool mutant_commit_waits = false;
  std::string trace_log;               // --trace-log FILE: the event log of trace validation (tracelog.h)
};

// The largest --lease-ms: a day (a longer lease is no lease; the ns count stays far from 2^64).
constexpr uint64_t kMaxLeaseMs = 86400000;

// Parses and checks the whole command line before anything is opened. Returns -1 to go on with
// `o` filled; else the exit status: 0 after --help (on stdout), 2 after one stderr line
// "apta-memd: ..." naming the option and the value (or the unknown option, or the missing one).
int parse_options(int argc, char** argv, unsigned servers, Options& o);

// The deliberate bugs' names (memd.cpp, where schema/mutants.py reads them for the mutant
// registry): true when option `a` with value `m` names one, which is then switched on in `o`.
bool set_mutant(const std::string& a, const std::string& m, Options& o);

}  // namespace apta_memd
