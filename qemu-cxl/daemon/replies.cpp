// The API's answers (schema/controlplane.yaml), JSON values built from a snapshot of the RTL's
// state: GET /v1/schedulable and /v1/status, GET /v1/objects/{obj}, POST /v1/objects,
// POST /v1/cancel, POST /v1/servers/{name}/fence and /rejoin.
#include "replies.h"

#include <nlohmann/json.hpp>

#include "daemon.h"

namespace apta_memd {
namespace {

using apta_api::Call;
using apta_api::error_reply;
using apta_http::Reply;
using Json = nlohmann::ordered_json;   // fields in a fixed order: the answers read the same every time

Reply answer(int code, const Json& j, std::string headers = {}) { return {code, apta_http::json_text(j), std::move(headers)}; }

// What every answer starts with (ChangeAnswer): the state's sequence number and the daemon's instance.
Json change(const Daemon& d, uint64_t seq) {
  Json o = Json::object();
  o["seq"] = seq;
  o["instance"] = d.instance();
  return o;
}

Reply api_schedulable(Daemon& d, const std::string& query) {
  std::vector<uint32_t> req;
  std::vector<std::string> req_names;
  std::string err;
  if (!apta_api::parse_objects_query(query, req, req_names, err)) return error_reply(400, err);
  Daemon::Snapshot s;
  if (!d.snapshot(req, s, err)) return error_reply(503, err);
  Json o = change(d, s.seq);
  if (!req.empty()) {
    Json unknown = Json::array();
    for (size_t i = 0; i < req.size(); i++)
      if (!d.objects().count(req[i])) unknown.push_back(req_names[i]);
    o["objects"] = req_names;
    o["unknown"] = unknown;
  }
  Json servers = Json::array();
  for (unsigned g = 0; g < N; g++) {
    bool fenced = (s.fenced >> g) & 1u;
    uint64_t pending = 0;
    Json pobj = Json::array(), caches = Json::array(), pfor = Json::object();
    for (auto& kv : s.objs)
      if (kv.second.pend[g]) { pending += kv.second.pend[g]; pobj.push_back(std::to_string(kv.first)); }
    // s.objs holds every object owing acks (snapshot: the counts add up to io_status_pendTotal),
    // so this sum is the core's total; the bitmap stays authoritative all the same
    if (((s.pending >> g) & 1u) && pending == 0) pending = 1;
    bool sched_for = s.live[g] && !fenced;
    for (size_t i = 0; i < req.size(); i++) {
      const Daemon::ObjState& st = s.objs[req[i]];
      if (st.pend[g]) pfor[req_names[i]] = st.pend[g];
      if ((st.sharers >> g) & 1u) caches.push_back(req_names[i]);
      if (!((st.schedFor >> g) & 1u)) sched_for = false;
    }
    bool sched = s.live[g] && ((s.schedulable >> g) & 1u);
    if (req.empty()) sched_for = sched;
    bool trunc = pobj.size() > 64;
    if (trunc) pobj.erase(pobj.begin() + 64, pobj.end());
    Json sv = Json::object();
    sv["name"] = d.name(g);
    sv["live"] = s.live[g];
    sv["fenced"] = fenced;
    sv["epoch"] = s.epoch[g];
    sv["pending"] = pending;
    sv["pendingFor"] = pfor;
    sv["pendingObjects"] = pobj;
    sv["pendingObjectsTruncated"] = trunc;
    sv["caches"] = caches;
    sv["schedulable"] = sched;
    sv["schedulableFor"] = sched_for;
    servers.push_back(sv);
  }
  o["servers"] = servers;
  return answer(200, o);
}

Reply api_object(Daemon& d, const std::string& name) {
  uint32_t obj;
  if (!apta_api::parse_obj(name, obj)) return error_reply(400, "object names are decimal object ids");
  if (!d.objects().count(obj)) return error_reply(404, "unknown object " + name);
  Daemon::Snapshot s;
  std::string err;
  if (!d.snapshot({obj}, s, err)) return error_reply(503, err);
  const Daemon::ObjState& st = s.objs[obj];
  Json sharers = Json::array(), pend = Json::object();
  for (unsigned g = 0; g < N; g++) {
    if ((st.sharers >> g) & 1u) sharers.push_back(d.name(g));
    if (st.pend[g]) pend[d.name(g)] = st.pend[g];
  }
  Json o = change(d, s.seq);
  o["object"] = name;
  o["version"] = d.version(obj);
  o["sharers"] = sharers;
  o["pending"] = pend;
  return answer(200, o);
}

// The answer to each MapUpdCode (schema/core.json; controlplane.yaml registerObject): the HTTP status,
// the request field it is about, and what to say.
struct MapRefusal { int http; const char* field; std::string why; };
MapRefusal map_refusal(unsigned code) {
  switch (code) {
    case APTA_MAP_UPD_CODE_BADSIZE: return {400, "size", "size must be 1.." + std::to_string(APTA_P_linesPerObject) + " lines"};
    case APTA_MAP_UPD_CODE_EXISTS: return {409, "obj", "object already registered (remove it first)"};
    case APTA_MAP_UPD_CODE_COLLISION: return {409, "obj", "the object's map slot (obj modulo the map's entries) holds another object"};
    case APTA_MAP_UPD_CODE_NOSPACE: return {507, "size", "no storage left for an object of this size"};
    case APTA_MAP_UPD_CODE_UNKNOWNOBJ: return {404, "obj", "object not registered"};
    case APTA_MAP_UPD_CODE_BUSY: return {409, "obj", "copies of the object are outstanding (sharers, owed acks, or a get or put in flight)"};
    case APTA_MAP_UPD_CODE_BADENTRY: return {409, "obj", "the object's map entry does not describe storage of the allocator"};
  }
  return {500, "obj", "unknown map answer"};
}

// An error about one field of the request: {"error", "field"[, "code"]}.
Json field_error(const std::string& msg, const char* field) {
  Json o = Json::object();
  o["error"] = msg;
  o["field"] = field;
  return o;
}

Reply api_post_object(Daemon& d, const Call& c) {
  std::string err;
  unsigned code = 0;
  uint64_t base = 0;
  // api.cpp checked the port widths; the RTL checks everything else and answers with a MapUpdCode
  if (!d.map_update(uint32_t(c.obj), unsigned(c.size), c.valid != 0, code, base, err)) return error_reply(503, err);
  if (code != APTA_MAP_UPD_CODE_OK) {
    MapRefusal r = map_refusal(code);
    Json o = field_error(std::string(c.valid ? "registration" : "removal") + " of object " + std::to_string(c.obj) +
                             " refused: " + r.why, r.field);
    o["code"] = APTA_MAP_UPD_CODE_NAME[code];
    return answer(r.http, o);
  }
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  Json o = change(d, s.seq);
  o["object"] = std::to_string(c.obj);
  o["base"] = base;
  if (c.valid) o["size"] = c.size;
  return answer(200, o);
}

Reply api_cancel(Daemon& d, const Call& c) {
  std::string err;
  int code = d.cancel(uint32_t(c.obj), c.version, err);
  if (code == 409) return answer(409, field_error(err, "version"));
  if (code) return error_reply(code, err);
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  return answer(200, change(d, s.seq));
}

Reply api_ctrl(Daemon& d, const std::string& server, bool fence) {
  int g = d.server_by_name(server);
  if (g < 0) return error_reply(400, "unknown server " + server);
  std::string err;
  unsigned e;
  uint64_t wait_ms = 0;
  if (!fence && !d.rejoin_allowed(unsigned(g), wait_ms))
    return answer(429, field_error("rejoins of " + server + " over the rate limit: retry in " + std::to_string(wait_ms) + " ms", "server"),
                  "Retry-After: " + std::to_string((wait_ms + 999) / 1000) + "\r\n");
  if (!d.ctrl_and_wait(fence ? APTA_OP_Fence : APTA_OP_Rejoin, unsigned(g), err, e))
    return error_reply(err.rfind("epochs exhausted", 0) == 0 ? 400 : 503, err);   // 400: a refused request
  Daemon::Snapshot s;
  if (!d.snapshot({}, s, err)) return error_reply(503, err);
  Json o = change(d, s.seq);
  o["server"] = server;
  o["epoch"] = e;
  return answer(200, o);
}

}  // namespace

Reply execute(Daemon& d, const Call& c) {
  switch (c.kind) {
    case Call::Schedulable: return api_schedulable(d, c.arg);
    case Call::Object: return api_object(d, c.arg);
    case Call::PostObject: return api_post_object(d, c);
    case Call::Ctrl: return api_ctrl(d, c.arg, c.fence);
    case Call::Cancel: return api_cancel(d, c);
  }
  return error_reply(500, "unknown call");
}

}  // namespace apta_memd
