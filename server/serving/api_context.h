#pragma once
// What every protocol's handlers share: the served models and the request limits.
#include "server/serving/api_error.h"
#include "server/serving/generation_request.h"
#include "server/serving/model_registry.h"

namespace tessera {

struct ApiContext {
  ModelRegistry& registry;
  ApiLimits limits;

  // The model a request names; 404 when there is none. A request that
  // names none gets the only model served, or a 400 listing the choices.
  ServedModel& model(const std::string& name) const {
    if (name.empty()) {
      const auto& all = registry.models();
      if (all.size() == 1) return *all.front();
      std::string names;
      for (const auto& m : all) names += (names.empty() ? "" : ", ") + m->name();
      throw ApiError::invalid("'model' is required: this server serves " + names, "model");
    }
    ServedModel* m = registry.find(name);
    if (!m) throw ApiError(404, "invalid_request_error", "the model '" + clip_echo(name) + "' does not exist", "model", "model_not_found");
    return *m;
  }
};

}  // namespace tessera
