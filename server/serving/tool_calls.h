#pragma once
// Tool calling for chat completions: the request's tools checked and the
// model's output split into text and calls. Calls are recognised in the
// formats of the common model families:
//   Hermes / Qwen 2.5:  <tool_call>\n{"name": "...", "arguments": {...}}\n</tool_call>
//   Llama 3.1+ JSON:    {"name": "...", "parameters": {...}}  (after <|python_tag|> or bare)
//   Mistral:            [TOOL_CALLS][{"name": "...", "arguments": {...}}, ...]
// Tagged calls are read incrementally, so a stream can hand out text as it
// comes and each call as soon as its closing tag arrives. Small models
// (Qwen2.5-Coder-0.5B) often answer with the bare object instead, or inside
// a ```json fence: an output that starts with "{" or such a fence is held
// back to the end and read as calls when it is nothing but such objects (one
// per line, or one value per fence: an object over several lines or a list)
// naming offered tools. A Mistral call list is read at the end as well.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// The formats of tool calls a chat template teaches its model.
enum class ToolCallFormat { kNone, kHermes, kLlamaJson, kMistral };

// The format a template's source uses, from the markup it teaches.
ToolCallFormat tool_call_format_of(const std::string& template_source);

struct ToolCall {
  std::string id;         // "call_" and 24 random letters and digits
  std::string name;
  std::string arguments;  // a JSON object, as text
};

// One piece of parsed output: text, or a complete call.
struct ToolCallPiece {
  std::string text;
  std::optional<ToolCall> call;
};

// A call as OpenAI's message.tool_calls entries write it.
nlohmann::ordered_json tool_call_json(const ToolCall& call);

class ToolCallParser {
 public:
  // `tools`: the names of the functions the request offers. Without
  // `parallel` (parallel_tool_calls: false) only the first call is kept.
  explicit ToolCallParser(std::vector<std::string> tools = {}, bool parallel = true)
      : tools_(std::move(tools)), parallel_(parallel) {}

  // What a streamed update completes: feed(text), then finish() when it is
  // the output's last, with calls past the first dropped unless parallel.
  std::vector<ToolCallPiece> take(const std::string& text, bool last);

  // Pieces that are complete after `text` arrives; a possible start of a
  // tag is held back until it resolves.
  std::vector<ToolCallPiece> feed(const std::string& text);
  // What is left at the end of the output: held-back text, and a call whose
  // closing tag never came (models often stop right after the JSON).
  std::vector<ToolCallPiece> finish();
  int calls() const { return calls_; }

 private:
  void parse_call(const std::string& body, std::vector<ToolCallPiece>& out);
  // The held-back output as bare calls, or nothing when it is not all calls.
  std::optional<std::vector<ToolCall>> bare_calls() const;
  // Adds the calls of one block of bare output; false when it holds anything else.
  bool add_bare_calls(std::string_view block, std::vector<ToolCall>& calls) const;
  // A {"name", "arguments" or "parameters"} object naming an offered tool as a call.
  std::optional<ToolCall> bare_call(const nlohmann::ordered_json& json) const;

  // The Mistral call list after its marker, or nothing when it is not one.
  std::optional<std::vector<ToolCall>> mistral_calls() const;

  enum class Start { kUnknown, kBare, kTagged, kMistral };
  std::vector<std::string> tools_;
  bool parallel_ = true;
  int kept_ = 0;  // calls handed out by take()
  std::string buffer_;
  Start start_ = Start::kUnknown;
  bool inside_ = false;
  size_t scanned_ = 0;  // inside a call: where in buffer_ the closing tag may start
  size_t held_blank_ = 0;  // outside, after a call: the blank text held at the front of buffer_
  int calls_ = 0;
};

// The pieces an update's text makes: the text as it is, or, when the
// output is read for calls (`parse`), what the parser completes with it.
std::vector<ToolCallPiece> output_pieces(ToolCallParser& parser, bool parse, const std::string& text, bool last);

// Checks `tools` (an array of {"type": "function", "function": {"name",
// "description"?, "parameters"?}}); throws ApiError naming what is wrong.
void check_tools(const nlohmann::ordered_json& tools);

// The "arguments" strings of assistant tool calls in a conversation turned
// into objects, as chat templates expect them.
nlohmann::ordered_json tool_arguments_as_objects(const nlohmann::ordered_json& messages);

}  // namespace tessera
