// apta-sim: the system of system.hpp (3 compute servers, one memory server with the Apta
// protocol engine, ordered links, the seven configurations of §IV-A, the scheduler with the
// pending-invalidation rule, failures) on an analytical backend: fixed-CPI cores with LRU L1/L2
// and a bandwidth-server DDR4. All parameters come from sim/params.json.
#pragma once
#include <string>

#include "model.hpp"

namespace apta {

RunResult simulate(const Plan& plan, const std::string& params_path, const Scenario& sc);

}  // namespace apta
