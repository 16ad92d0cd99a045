// One workflow run in gem5: the system of sim/src/system.hpp (the seven configurations'
// protocols, links, protocol engine, scheduler, failures) on a gem5 backend. Time is gem5's
// tick; a compute phase is replayed by the server's AptaCore through gem5's caches and its local
// DDR4; object data moves through AptaMemServer and the memory server's DDR4 controller; a
// fetched object is written into the LLC. In the CXL configurations objects stay in the memory
// server: the functions' loads and stores, the logged puts' line writes and the back-invalidation
// snoops cross each compute server's AptaCxlLink as packets. The plan, scenario and result are apta-sim's documents
// (sim/src/model.hpp), so both simulators' results compare field by field.
#ifndef APTA_GEM5_APTA_WORKFLOW_HH
#define APTA_GEM5_APTA_WORKFLOW_HH

#include <memory>
#include <string>
#include <vector>

#include "apta_core.hh"
#include "apta_mem_server.hh"
#include "cxl_link.hh"
#include "model.hpp"
#include "params/AptaWorkflow.hh"
#include "sim/sim_object.hh"
#include "system.hpp"

namespace gem5
{

class AptaWorkflow : public SimObject, public ::apta::Backend
{
  public:
    PARAMS(AptaWorkflow);
    explicit AptaWorkflow(const Params &p);

    void startup() override;

    // Ends the run (whether or not the workflow finished) and writes the result document to
    // `path`: apta-sim's result fields plus the gem5 run's own (exported to the config script).
    bool writeResult(const std::string &path);

    // ::apta::Backend
    double now() const override;
    void at(double t, std::function<void()> fn) override;
    void compute(int i, int s, ::apta::Phase ph, const ::apta::Slots &slots,
                 std::function<void(double)> done) override;
    void ms_dram(double t, uint32_t obj, uint64_t firstLine, uint64_t lines, bool write,
                 std::function<void(double, double)> done) override;
    void install(int s, uint32_t obj, uint32_t ver, uint64_t lines) override;
    void data_arriving(int s, uint32_t obj, uint32_t ver, uint64_t lines) override;
    bool link_message(int s, bool up, ::apta::MsgKind k, uint64_t flits, double notBefore, double minEnd,
                      std::function<void()> fn) override;
    bool flush_copy(int s, uint32_t obj, uint32_t ver, uint64_t lines, std::function<void()> done) override;
    bool cxl_packets() const override { return packetLink; }
    void cxl_write_lines(int s, uint32_t obj, uint32_t ver, uint64_t firstLine, uint64_t n,
                         std::function<void()> done) override;
    void cxl_read_lines(int s, uint32_t obj, uint32_t ver, uint64_t n, std::function<void()> done) override;
    void cxl_back_invalidate(int x, uint32_t obj, uint64_t n, std::function<void()> done) override;
    void failed(int s) override;
    void finished() override;

  private:
    std::vector<AptaCore *> cores;
    std::vector<AptaCxlLink *> links;
    AptaMemServer *memServer;
    const bool packetLink;  // false: the analytical link (bench-gem5's reference run)
    ::apta::Plan plan;
    ::apta::Scenario scenario;
    AptaCore::ObjectHome objectHome = AptaCore::ObjectHome::Local;  // by the configuration
    std::unique_ptr<::apta::System> sys;
    double wall0 = 0;

    // Stall detection. apta-sim's run ends when its event queue drains; gem5's never does (DRAM
    // refresh), so the system's own outstanding work is counted: scheduled callbacks, phases
    // being replayed, memory-server accesses whose completion the system waits for. When none
    // is left and the workflow has not finished, it is stalled (CXL cached after a crash) and
    // the run ends there rather than at the horizon.
    uint64_t work = 0;
    std::vector<bool> replaying;  // per core: a phase in flight (a crash cancels it)
    std::vector<uint64_t> streams;  // per core: line streams in flight over its link (a crash cancels them)
    bool ended = false;
    // per core: the object the next Data message down carries, and one whose lines were written
    // into the LLC as they arrived (install() has nothing left to fill)
    struct Arrival { uint32_t obj = 0, ver = 0; uint64_t lines = 0; bool set = false; };
    std::vector<Arrival> arriving, streamed;
    std::vector<uint64_t> crashes;  // per core: a piece arriving after its server died fills nothing
    void settle();

    Tick toTick(double ns) const;
    double toNs(Tick t) const;
};

} // namespace gem5

#endif // APTA_GEM5_APTA_WORKFLOW_HH
