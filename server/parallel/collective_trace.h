#pragma once
// Reads the flight-recorder dumps of every rank of a group and names the
// first collective where the ranks part: one never started it, they started
// different operations, or it did not complete everywhere (naming the rank
// that arrived last, the one the others waited for).
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

struct TracedCollective {
  uint64_t seq = 0;
  std::string op;
  uint64_t bytes = 0;
  int peer = -1;
  int64_t start_us = 0, end_us = 0;
  std::string state;  // started, completed, failed
  std::string error;
};

struct RankTrace {
  std::string source;  // the file it came from
  std::string model;   // empty when the dump does not say
  int rank = 0;
  int world = 1;
  std::vector<TracedCollective> collectives;  // oldest first
};

// One dump file's text: a rank's dump ({"rank", "world", "collectives"}, with
// "model" when written by a serving process) or the admin endpoint's
// document holding one per model. Throws tessera::Error on malformed input.
std::vector<RankTrace> parse_rank_traces(const std::string& json_text, const std::string& source);

struct TraceVerdict {
  std::string model;
  bool agreed = true;  // every rank completed every collective the others did
  uint64_t seq = 0;    // the first collective where they part (when !agreed)
  std::vector<int> stuck_ranks;  // never arrived, or arrived last
  std::string text;    // one paragraph for people
};

// One verdict per model found in the traces.
std::vector<TraceVerdict> trace_collectives(const std::vector<RankTrace>& traces);

}  // namespace tessera
