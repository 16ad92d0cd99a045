// The event-driven trace-replay simulator: 3 compute servers (fixed-CPI cores, L1/L2, local
// DDR4), one memory server (OTC/OSC latencies, the Apta protocol engine, DDR4), ordered
// point-to-point links, the seven configurations of the paper's §IV-A, the schedule of a workflow
// (from its plan), the locality-aware scheduler with the pending-invalidation rule, and
// compute-server failure injection. All parameters come from sim/params.json.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "cache.hpp"
#include "directory.hpp"
#include "json.hpp"
#include "model.hpp"
#include "trace.hpp"

namespace apta {

RunResult simulate(const Plan& plan, const std::string& params_path, const Scenario& sc);

}  // namespace apta
