#pragma once
// OpenAI's Responses API over the chat pipeline: POST /v1/responses (whole
// or streamed with its typed events), and GET / DELETE /v1/responses/{id}
// on the responses it keeps for previous_response_id.
#include <string>

#include "server/http/http_server.h"
#include "server/responses/response_store.h"
#include "server/serving/api_context.h"

namespace tessera {

class ResponsesApi {
 public:
  explicit ResponsesApi(ResponseStoreLimits limits) : store_(limits) {}

  // `owner`: the API key the request presented ("" without keys); a stored
  // response is visible only to its owner.
  void create(const ApiContext& api, const Json& body, const std::string& owner, HttpExchange& exchange);
  void get(const std::string& id, const std::string& owner, HttpExchange& exchange);
  void remove(const std::string& id, const std::string& owner, HttpExchange& exchange);

 private:
  ResponseStore store_;
};

}  // namespace tessera
