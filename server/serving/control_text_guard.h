#pragma once
// Client strings that a chat template renders outside message content (tool
// names, descriptions and schemas, enum values, tool-call arguments, message
// names, chat_template_kwargs values) cannot be protected as text: the
// template may quote, escape or reorder them. Control-token text in any of
// them is refused, so no client string becomes a turn marker.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tessera {

using ControlTextTest = std::function<bool(std::string_view)>;

// Throws ApiError 400 naming the first string (or object key) of `value`
// for which `is_control` holds; `param` names `value` in the request.
// Iterative, linear in the size of `value`.
void refuse_control_text(const nlohmann::ordered_json& value, const std::string& param, const ControlTextTest& is_control);

// The same over a conversation, skipping each message's `content`, which is
// protected as text where it is rendered.
void refuse_control_text_outside_content(const nlohmann::ordered_json& messages, const ControlTextTest& is_control);

// Keys the server itself gives the template; chat_template_kwargs may not
// set them (tools would skip their validation).
void refuse_reserved_template_kwargs(const nlohmann::ordered_json& kwargs);

}  // namespace tessera
