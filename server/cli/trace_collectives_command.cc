// tessera trace-collectives DUMP…: reads the flight-recorder dumps of the
// ranks of a parallel group (the files a failure or SIGUSR1 writes, or the
// admin endpoint's document) and names, for each model, the first
// collective where the ranks part and the rank the others waited for.
// Exit status 0 when every rank agrees, 2 when they part.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "server/cli/commands.h"
#include "server/parallel/collective_trace.h"

namespace tessera::cli {
namespace {

constexpr size_t kMaxDumpBytes = size_t(256) << 20;

std::string read_dump(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot open " + path);
  if (size_t(in.tellg()) > kMaxDumpBytes) throw Error(path + " is larger than a flight-recorder dump can be");
  in.seekg(0);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int run_trace(const std::vector<std::string>& paths) {
  std::vector<RankTrace> traces;
  for (const std::string& p : paths) {
    for (RankTrace& t : parse_rank_traces(read_dump(p), p)) traces.push_back(std::move(t));
  }
  bool agreed = true;
  for (const TraceVerdict& v : trace_collectives(traces)) {
    std::printf("%s\n", v.text.c_str());
    agreed &= v.agreed;
  }
  return agreed ? 0 : 2;
}

}  // namespace

Runner add_trace_collectives_command(CLI::App& app) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("trace-collectives", "Name the first collective where the ranks' flight recorders part");
  cmd->add_option("dumps", *paths, "Flight-recorder dump files, one per rank (or admin endpoint documents)")
      ->required()
      ->check(CLI::ExistingFile);
  return [paths] { return run_trace(*paths); };
}

}  // namespace tessera::cli
