#pragma once
// GET /openapi.json: an OpenAPI 3.1 document of every HTTP route. Request
// bodies are the RouteBodies the handlers read through (so the document is
// the validation); answers are described by the schemas below, which the
// schema fuzzer (schemathesis, tests/python/test_openapi.py) holds every
// response to.
#include <string>
#include <vector>

#include "server/serving/route_bodies.h"

namespace tessera {

// A POST route that takes a JSON body: where it is, what it reads, what it answers.
struct PostRoute {
  std::string path;
  const BodySchema* body;
  std::string summary;
  std::string answer;  // the name of its 200 answer's schema (components/schemas)
  bool streams;        // answers with server-sent events when asked (`stream: true`)
  bool anthropic;      // errors in Anthropic's shape
};

// Every POST route, in the order the router tries them.
std::vector<PostRoute> post_routes(const RouteBodies& bodies);

struct OpenApiContext {
  const RouteBodies& bodies;
  std::vector<std::string> models;  // the served names; `model` is one of them
  bool api_keys = false;            // a bearer key (or x-api-key) is asked for
  bool admin_reload = false;        // POST /admin/reload exists
  std::string version;              // the build
};

Json openapi_document(const OpenApiContext& context);

}  // namespace tessera
