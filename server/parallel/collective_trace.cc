#include "server/parallel/collective_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>

#include "engine/core/error.h"

namespace tessera {
namespace {

using Json = nlohmann::json;

RankTrace rank_trace_of(const Json& doc, const std::string& source, const std::string& model) {
  RankTrace t;
  t.source = source;
  t.model = model;
  t.rank = doc.at("rank").get<int>();
  t.world = doc.at("world").get<int>();
  if (t.world < 1 || t.world > 4096 || t.rank < 0 || t.rank >= t.world) throw Error("rank outside its world");
  for (const Json& c : doc.at("collectives")) {
    TracedCollective r;
    r.seq = c.at("seq").get<uint64_t>();
    r.op = c.at("op").get<std::string>();
    r.bytes = c.at("bytes").get<uint64_t>();
    r.peer = c.value("peer", -1);
    r.start_us = c.at("start_us").get<int64_t>();
    r.end_us = c.value("end_us", int64_t(0));
    r.state = c.at("state").get<std::string>();
    r.error = c.value("error", std::string());
    if (!t.collectives.empty() && r.seq <= t.collectives.back().seq) throw Error("collectives out of sequence order");
    t.collectives.push_back(std::move(r));
  }
  return t;
}

std::string describe(const TracedCollective& c) {
  return c.op + " #" + std::to_string(c.seq) + " (" + std::to_string(c.bytes) + " bytes)";
}

std::string seconds(int64_t us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", double(us) / 1e6);
  return text;
}

const TracedCollective* find_seq(const RankTrace& t, uint64_t seq) {
  auto it = std::lower_bound(t.collectives.begin(), t.collectives.end(), seq,
                             [](const TracedCollective& c, uint64_t s) { return c.seq < s; });
  return it != t.collectives.end() && it->seq == seq ? &*it : nullptr;
}

std::string state_of(const RankTrace& t, const TracedCollective& c, int64_t earliest_start) {
  std::string s = "rank " + std::to_string(t.rank) + " " + c.state;
  if (c.start_us - earliest_start >= 10'000) s += " (started " + seconds(c.start_us - earliest_start) + " after the first rank)";
  if (c.end_us > 0) s += " after " + seconds(c.end_us - c.start_us);
  if (!c.error.empty()) s += ": " + c.error;
  return s;
}

// Starts further apart than clocks on different machines are: the rank
// that came last is the one the others waited for. Otherwise it is the
// one that was busy longest (stopped, or stuck inside the collective).
constexpr int64_t kLateStartUs = 100'000;

std::vector<int> late_ranks(const std::vector<std::pair<const RankTrace*, const TracedCollective*>>& at) {
  int64_t earliest = INT64_MAX, latest = INT64_MIN, last_end = INT64_MIN;
  const auto end_of = [](const TracedCollective& c) { return c.end_us > 0 ? c.end_us : INT64_MAX; };
  for (const auto& [t, c] : at) {
    earliest = std::min(earliest, c->start_us);
    latest = std::max(latest, c->start_us);
    last_end = std::max(last_end, end_of(*c));
  }
  std::vector<int> late;
  for (const auto& [t, c] : at) {
    const bool by_start = latest - earliest > kLateStartUs && c->start_us == latest;
    const bool by_end = latest - earliest <= kLateStartUs && end_of(*c) == last_end;
    if (by_start || by_end) late.push_back(t->rank);
  }
  if (late.size() == at.size()) late.clear();  // nothing sets one apart
  return late;
}

// The first sequence number where the ranks part, or a verdict of agreement.
TraceVerdict judge(const std::string& model, std::vector<const RankTrace*> ranks) {
  TraceVerdict v;
  v.model = model;
  std::sort(ranks.begin(), ranks.end(), [](const RankTrace* a, const RankTrace* b) { return a->rank < b->rank; });
  uint64_t lo = 1, hi = 0;
  for (const RankTrace* t : ranks) {
    if (t->collectives.empty()) continue;
    lo = std::max(lo, t->collectives.front().seq);  // older records left the ring
    hi = std::max(hi, t->collectives.back().seq);
  }
  std::string missing_dumps;
  const int world = ranks.front()->world;
  for (int r = 0; r < world; ++r) {
    const bool have = std::any_of(ranks.begin(), ranks.end(), [r](const RankTrace* t) { return t->rank == r; });
    if (!have) missing_dumps += (missing_dumps.empty() ? "" : ", ") + std::to_string(r);
  }
  // The numbers some rank recorded, not the whole range between: a dump
  // may skip far ahead, and the work stays linear in the records.
  std::vector<uint64_t> seqs;
  for (const RankTrace* t : ranks) {
    for (const TracedCollective& c : t->collectives) {
      if (c.seq >= lo) seqs.push_back(c.seq);
    }
  }
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  for (uint64_t seq : seqs) {
    std::vector<std::pair<const RankTrace*, const TracedCollective*>> at;
    std::vector<int> absent;
    for (const RankTrace* t : ranks) {
      const TracedCollective* c = find_seq(*t, seq);
      if (c) at.emplace_back(t, c);
      else absent.push_back(t->rank);
    }
    if (at.empty()) continue;
    const TracedCollective& first = *at.front().second;
    bool differ = false, unfinished = false;
    int64_t earliest = first.start_us;
    for (const auto& [t, c] : at) {
      differ |= c->op != first.op || c->bytes != first.bytes || c->peer != first.peer;
      unfinished |= c->state != "completed";
      earliest = std::min(earliest, c->start_us);
    }
    if (absent.empty() && !differ && !unfinished) continue;
    v.agreed = false;
    v.seq = seq;
    std::string text = "model " + (model.empty() ? std::string("(unnamed)") : model) + ": ";
    if (differ) {
      text += "the ranks disagree at collective #" + std::to_string(seq) + ":";
      for (const auto& [t, c] : at) text += " rank " + std::to_string(t->rank) + " ran " + describe(*c) + ";";
    } else {
      text += describe(first) + " did not complete on every rank:";
      for (const auto& [t, c] : at) text += " " + state_of(*t, *c, earliest) + ";";
    }
    if (!absent.empty()) {
      v.stuck_ranks = absent;
      for (int r : absent) text += " rank " + std::to_string(r) + " never started it;";
    } else if (!differ) {
      v.stuck_ranks = late_ranks(at);
    }
    if (!v.stuck_ranks.empty()) {
      text += " the stuck rank:";
      for (int r : v.stuck_ranks) text += " " + std::to_string(r);
      text += ".";
    }
    if (!missing_dumps.empty()) text += " No dump from rank " + missing_dumps + ": it may have died.";
    v.text = text;
    return v;
  }
  v.text = "model " + (model.empty() ? std::string("(unnamed)") : model) + ": the " + std::to_string(ranks.size()) +
           " rank(s) agree on collectives #" + std::to_string(lo) + "..#" + std::to_string(hi) + ", all completed";
  if (!missing_dumps.empty()) v.text += " (no dump from rank " + missing_dumps + ")";
  return v;
}

}  // namespace

std::vector<RankTrace> parse_rank_traces(const std::string& json_text, const std::string& source) {
  try {
    const Json doc = Json::parse(json_text);
    std::vector<RankTrace> out;
    if (doc.contains("models")) {
      for (const auto& [model, dump] : doc.at("models").items()) out.push_back(rank_trace_of(dump, source, model));
    } else {
      out.push_back(rank_trace_of(doc, source, doc.value("model", std::string())));
    }
    return out;
  } catch (const Error& e) {
    throw Error(source + ": not a flight-recorder dump: " + e.what());
  } catch (const std::exception& e) {
    throw Error(source + ": not a flight-recorder dump: " + e.what());
  }
}

std::vector<TraceVerdict> trace_collectives(const std::vector<RankTrace>& traces) {
  std::map<std::string, std::vector<const RankTrace*>> by_model;
  for (const RankTrace& t : traces) by_model[t.model].push_back(&t);
  std::vector<TraceVerdict> verdicts;
  for (auto& [model, ranks] : by_model) {
    for (size_t i = 1; i < ranks.size(); ++i) {
      if (ranks[i]->world != ranks[0]->world) {
        throw Error(ranks[i]->source + " is from a world of " + std::to_string(ranks[i]->world) + ", " + ranks[0]->source +
                    " from one of " + std::to_string(ranks[0]->world));
      }
      for (size_t j = 0; j < i; ++j) {
        if (ranks[i]->rank == ranks[j]->rank) {
          throw Error(ranks[i]->source + " and " + ranks[j]->source + " are both rank " + std::to_string(ranks[i]->rank));
        }
      }
    }
    verdicts.push_back(judge(model, ranks));
  }
  return verdicts;
}

}  // namespace tessera
