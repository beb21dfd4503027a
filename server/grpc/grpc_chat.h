#pragma once
// A gRPC chat input read as the HTTP chat endpoint reads its JSON: the
// messages (with tool calls and tool results) and what it asks of tools.
#include "server/serving/tool_request.h"
#include "server/serving/served_model.h"
#include "tessera/v1/generation.pb.h"

namespace tessera {

struct GrpcChat {
  Json messages;
  ToolRequest tools;
};

// 400 (ApiError) as the HTTP endpoint gives for the same content.
GrpcChat read_grpc_chat(const v1::ChatMessages& chat, const ServedModel& model);

}  // namespace tessera
