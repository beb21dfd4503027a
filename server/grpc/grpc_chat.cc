#include "server/grpc/grpc_chat.h"

#include "server/serving/route_bodies.h"
#include "server/serving/tool_calls.h"

namespace tessera {

GrpcChat read_grpc_chat(const v1::ChatMessages& chat, const ServedModel& model) {
  GrpcChat out;
  out.messages = Json::array();
  for (const auto& m : chat.messages()) {
    Json message = {{"role", m.role()}, {"content", m.content()}};
    if (!m.tool_call_id().empty()) message["tool_call_id"] = m.tool_call_id();
    for (const auto& call : m.tool_calls()) message["tool_calls"].push_back(tool_call_json({call.id(), call.name(), call.arguments()}));
    out.messages.push_back(std::move(message));
  }
  Json fields = Json::object();
  if (!chat.tools().empty()) fields["tools"] = parse_bounded_json(chat.tools(), JsonLimits{});
  const std::string& choice = chat.tool_choice();
  if (choice == "none" || choice == "auto" || choice == "required") fields["tool_choice"] = choice;
  else if (!choice.empty()) fields["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice}}}};
  if (chat.has_parallel_tool_calls()) fields["parallel_tool_calls"] = chat.parallel_tool_calls();
  RequestFields f(fields, tool_fields_body());
  out.tools = read_tool_request(f, model);
  f.finish();
  return out;
}

}  // namespace tessera
