// tessera cache ls|verify|prune|export|import: the artifact cache
// (engine/io/artifact_cache.h) of a config's server.cache_dir, or --dir.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "config/config.h"
#include "engine/core/error.h"
#include "engine/io/artifact_cache.h"
#include "server/cli/commands.h"
#include "server/serving/runner_setup.h"

namespace tessera::cli {
namespace {

struct CacheOptions {
  std::string dir;
  std::string config;
  std::string archive;
  int64_t max_mib = -1;  // prune: the limit; -1: the config's cache_max_mib
  bool all = false;      // prune: everything
};

// The folder and limit the options name: --dir wins over --config.
ArtifactCache open_cache(const CacheOptions& o, uint64_t* config_max_bytes) {
  std::string dir = o.dir;
  *config_max_bytes = 0;
  if (!o.config.empty()) {
    const Config c = load_config_file(o.config);
    if (dir.empty()) dir = c.server.cache_dir;
    *config_max_bytes = uint64_t(c.server.cache_max_mib) << 20;
  }
  if (dir.empty()) throw Error("no cache folder: give --dir DIR, or --config FILE with server.cache_dir set");
  return ArtifactCache(expand_home(dir));
}

std::string mib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}

int list(const ArtifactCache& cache) {
  uint64_t total = 0;
  const auto entries = cache.list();
  for (const auto& e : entries) {
    std::printf("%-12s %s %10s%s\n", e.kind.c_str(), e.key.c_str(), mib_text(e.bytes).c_str(), e.this_build ? "" : "  (another build)");
    total += e.bytes;
  }
  std::printf("%zu entries, %s in %s (this build's kernel ABI %s)\n", entries.size(), mib_text(total).c_str(),
              cache.dir().string().c_str(), build_kernel_abi().substr(0, 16).c_str());
  return 0;
}

int verify(const ArtifactCache& cache) {
  size_t bad = 0, other = 0;
  const auto entries = cache.verify();
  for (const auto& e : entries) {
    if (!e.problem.empty()) {
      ++bad;
      std::printf("damaged: %s/%s: %s\n", e.kind.c_str(), e.key.c_str(), e.problem.c_str());
    } else if (!e.this_build) {
      ++other;
    }
  }
  std::printf("%zu entries: %zu sound, %zu of another build (never used by this one), %zu damaged\n", entries.size(),
              entries.size() - bad - other, other, bad);
  return bad > 0 ? 1 : 0;
}

}  // namespace

Runner add_cache_command(CLI::App& app) {
  auto o = std::make_shared<CacheOptions>();
  CLI::App* cmd = app.add_subcommand("cache", "List, check, prune, export or import the artifact cache");
  cmd->require_subcommand(1);
  const auto common = [o](CLI::App* sub) {
    sub->add_option("--dir", o->dir, "The cache folder (else the config's server.cache_dir)");
    sub->add_option("--config,-c", o->config, "A config file naming server.cache_dir and cache_max_mib");
  };
  CLI::App* ls = cmd->add_subcommand("ls", "List the entries, most recently used first");
  CLI::App* check = cmd->add_subcommand("verify", "Read every entry and check it; exit 1 when any is damaged");
  CLI::App* prune = cmd->add_subcommand("prune", "Delete damaged entries, those of other builds, then the least recently used down to the limit");
  prune->add_option("--max-mib", o->max_mib, "The limit (default: the config's cache_max_mib, else no limit)")->check(CLI::NonNegativeNumber);
  prune->add_flag("--all", o->all, "Delete every entry");
  CLI::App* out = cmd->add_subcommand("export", "Write this build's sound entries to one archive (ustar)");
  out->add_option("archive", o->archive, "The archive to write")->required();
  CLI::App* in = cmd->add_subcommand("import", "Store an archive's entries; those of another build or damaged are left out");
  in->add_option("archive", o->archive, "The archive to read")->required();
  for (CLI::App* sub : {ls, check, prune, out, in}) common(sub);
  return [o, ls, check, prune, out] {
    uint64_t config_max = 0;
    const ArtifactCache cache = open_cache(*o, &config_max);
    if (*ls) return list(cache);
    if (*check) return verify(cache);
    if (*prune) {
      const uint64_t limit = o->all ? 0 : o->max_mib >= 0 ? uint64_t(o->max_mib) << 20 : config_max > 0 ? config_max : UINT64_MAX;
      std::printf("freed %s\n", mib_text(cache.prune(limit)).c_str());
      return 0;
    }
    const bool exporting = bool(*out);
    const ArtifactCache::Transfer t = exporting ? cache.export_to(o->archive) : cache.import_from(o->archive);
    std::printf("%s %zu entries; left out %zu of another build and %zu damaged\n", exporting ? "exported" : "imported", t.copied,
                t.other_build, t.damaged);
    return 0;
  };
}

}  // namespace tessera::cli
