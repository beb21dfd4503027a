#pragma once
// A chat conversation as prompt tokens, the same for every protocol: the
// messages checked, tool-call arguments read once, control-token text kept
// out of what the template renders outside content, the model's chat
// template applied and the text tokenised.
#include <cstdint>
#include <vector>

#include "server/serving/bounded_json.h"
#include "server/serving/served_model.h"

namespace tessera {

// The tokens of the rendered conversation; 400 unless `messages` is a
// non-empty array of objects with a known role and string or text-part
// content, when the model has no template, or when the template refuses the
// conversation. Control-token text the client
// wrote inside a message stays plain text unless the model's configuration
// sets parse_special_in_messages; the template's own markers are tokens.
// `tools`: the request's tool definitions for the template, or null.
std::vector<int32_t> chat_prompt_tokens(const ServedModel& model, const Json& messages, bool add_generation_prompt,
                                        const Json& template_kwargs, bool add_special = false, const Json& tools = Json());

}  // namespace tessera
