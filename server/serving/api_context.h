#pragma once
// What every protocol's handlers share: the served models and the request limits.
#include "server/serving/api_error.h"
#include "server/serving/generation_request.h"
#include "server/serving/model_registry.h"
#include "server/serving/route_bodies.h"

namespace tessera {

struct ApiContext {
  ModelRegistry& registry;
  ApiLimits limits;
  // What each route's body may hold, read through and published (/openapi.json).
  RouteBodies bodies{limits};

  // The model a request names, loaded first if it sleeps (registry.acquire);
  // 404 when there is none. A request that names none gets the only model
  // served, or a 400 listing the choices. The handle keeps the model alive
  // while the request holds it.
  ModelHandle model(const std::string& name, LoadWait* waited = nullptr) const {
    if (name.empty()) {
      const std::vector<std::string> all = registry.names();
      if (all.size() == 1) return model(all.front(), waited);
      std::string names;
      for (const auto& n : all) names += (names.empty() ? "" : ", ") + n;
      throw ApiError::invalid("'model' is required: this server serves " + names, "model");
    }
    ModelHandle m = registry.acquire(name, waited);
    if (!m) throw ApiError(404, "invalid_request_error", "the model '" + clip_echo(name) + "' does not exist", "model", "model_not_found");
    return m;
  }

  // Counts a request refused as invalid (a 400 its model's admission did not
  // count already) against the model it names, if that model is served.
  void count_invalid(const ApiError& e, const std::string& name) const {
    if (e.status() != 400 || e.is_counted()) return;
    const std::vector<std::string> all = registry.names();
    const ModelHandle m = registry.find(name.empty() && all.size() == 1 ? all.front() : name);
    if (m) m->metrics->count_rejected("invalid");
  }
};

}  // namespace tessera
