#include "server/serving/tool_calls.h"

#include <algorithm>
#include <random>

#include "server/serving/api_error.h"
#include "server/serving/bounded_json.h"

namespace tessera {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kFence = "```";

std::string new_call_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[pick(rng)];
  return id;
}

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag_suffix(const std::string& text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.compare(text.size() - n, n, tag.substr(0, n)) == 0) return n;
  }
  return 0;
}

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

// The contents of the ``` fences of `text` when it is nothing but fences and
// blank text between them (an unclosed last fence runs to the end), or the
// whole text as one block when it does not open with a fence; an empty list
// when text sits outside the fences.
std::vector<std::string_view> fenced_blocks(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text.substr(first, kFence.size()) != kFence) return {text};
  std::vector<std::string_view> blocks;
  size_t at = first;
  while (at < text.size()) {
    const size_t gap_end = text.find(kFence, at);
    if (!is_blank(std::string(text.substr(at, std::min(gap_end, text.size()) - at)))) return {};
    if (gap_end == std::string_view::npos) break;
    const size_t line_end = text.find('\n', gap_end);
    if (line_end == std::string_view::npos) return {};
    const size_t close = text.find(kFence, line_end);
    blocks.push_back(text.substr(line_end + 1, std::min(close, text.size()) - line_end - 1));
    if (close == std::string_view::npos) break;
    at = close + kFence.size();
  }
  return blocks;
}

// Arguments and the model's calls sit inside a request or a reply: they get
// the depth a body has left below them, and the body's other caps, so a
// string of JSON costs what the same JSON costs as a body (linear time).
constexpr JsonLimits kEmbeddedJsonLimits{.max_depth = 32};

// The model's text as JSON, or null when it is not JSON within the caps.
nlohmann::ordered_json parse_model_json(std::string_view text) {
  BoundedJsonResult parsed = try_parse_bounded_json(text, kEmbeddedJsonLimits);
  return parsed.ok() ? std::move(parsed.value) : nlohmann::ordered_json();
}

}  // namespace

ToolCallFormat tool_call_format_of(const std::string& template_source) {
  if (template_source.find(kOpen) != std::string::npos) return ToolCallFormat::kHermes;
  if (template_source.find(kMistralMarker) != std::string::npos) return ToolCallFormat::kMistral;
  // Llama 3.1+ templates ask for {"name": ..., "parameters": ...} in words.
  if (template_source.find("\"parameters\": dictionary of argument name") != std::string::npos ||
      template_source.find(kPythonTag) != std::string::npos) {
    return ToolCallFormat::kLlamaJson;
  }
  return ToolCallFormat::kNone;
}

void ToolCallParser::parse_call(const std::string& body, std::vector<ToolCallPiece>& out) {
  const auto json = parse_model_json(body);
  const bool valid = json.is_object() && json.contains("name") && json["name"].is_string() &&
                     (!json.contains("arguments") || json["arguments"].is_object());
  if (!valid) {
    // Not a call after all: the model's text, as it wrote it.
    out.push_back({std::string(kOpen) + body + (inside_ ? "" : std::string(kClose)), std::nullopt});
    return;
  }
  const auto arguments = json.contains("arguments") ? json["arguments"] : nlohmann::ordered_json::object();
  out.push_back({"", ToolCall{new_call_id(), json["name"].get<std::string>(), arguments.dump()}});
  ++calls_;
}

std::optional<ToolCall> ToolCallParser::bare_call(const nlohmann::ordered_json& json) const {
  // Hermes models write "arguments", Llama 3.1+ "parameters".
  const char* key = json.is_object() && json.contains("parameters") ? "parameters" : "arguments";
  if (!json.is_object() || json.size() != 2 || !json.contains("name") || !json["name"].is_string() ||
      !json.contains(key) || !json[key].is_object()) {
    return std::nullopt;
  }
  const std::string name = json["name"].get<std::string>();
  if (std::find(tools_.begin(), tools_.end(), name) == tools_.end()) return std::nullopt;
  return ToolCall{new_call_id(), name, json[key].dump()};
}

bool ToolCallParser::add_bare_calls(std::string_view block, std::vector<ToolCall>& calls) const {
  // One value (an object, perhaps spread over lines, or a list of them)...
  if (const auto whole = parse_model_json(block); whole.is_object() || whole.is_array()) {
    for (const auto& json : whole.is_array() ? whole : nlohmann::ordered_json::array({whole})) {
      auto call = bare_call(json);
      if (!call) return false;
      calls.push_back(std::move(*call));
    }
    return !whole.empty();
  }
  // ...or one object a line.
  size_t begin = 0;
  while (begin < block.size()) {
    size_t end = block.find('\n', begin);
    if (end == std::string_view::npos) end = block.size();
    const std::string_view line = block.substr(begin, end - begin);
    begin = end + 1;
    if (is_blank(std::string(line))) continue;
    auto call = bare_call(parse_model_json(line));
    if (!call) return false;
    calls.push_back(std::move(*call));
  }
  return true;
}

std::optional<std::vector<ToolCall>> ToolCallParser::bare_calls() const {
  std::vector<ToolCall> calls;
  for (const std::string_view block : fenced_blocks(buffer_)) {
    if (!add_bare_calls(block, calls)) return std::nullopt;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<std::vector<ToolCall>> ToolCallParser::mistral_calls() const {
  const size_t marker = buffer_.find(kMistralMarker);
  if (marker == std::string::npos) return std::nullopt;
  const auto json = parse_model_json(std::string_view(buffer_).substr(marker + kMistralMarker.size()));
  if (!json.is_array() || json.empty()) return std::nullopt;
  std::vector<ToolCall> calls;
  for (const auto& call : json) {
    if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
    auto arguments = call.contains("arguments") ? call["arguments"] : nlohmann::ordered_json::object();
    if (arguments.is_string()) arguments = parse_model_json(arguments.get<std::string>());
    if (!arguments.is_object()) return std::nullopt;
    calls.push_back({new_call_id(), call["name"].get<std::string>(), arguments.dump()});
  }
  return calls;
}

std::vector<ToolCallPiece> ToolCallParser::feed(const std::string& text) {
  buffer_ += text;
  std::vector<ToolCallPiece> out;
  if (start_ == Start::kUnknown) {
    // Everything before this text was blank, so the buffer decides; a
    // possible start of a marker waits for more text.
    const size_t first = buffer_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return out;
    const std::string_view rest = std::string_view(buffer_).substr(first);
    for (const std::string_view marker : {kMistralMarker, kPythonTag}) {
      if (rest.substr(0, marker.size()) == marker) start_ = marker == kMistralMarker ? Start::kMistral : Start::kBare;
      else if (rest.size() < marker.size() && marker.substr(0, rest.size()) == rest) return out;
    }
    if (start_ == Start::kUnknown && rest.substr(0, kFence.size()).size() < kFence.size() &&
        kFence.substr(0, rest.size()) == rest) {
      return out;  // perhaps the start of a fence
    }
    if (start_ == Start::kUnknown && rest.substr(0, kFence.size()) == kFence) {
      // A ```json (or bare ```) fence may hold calls, as Qwen2.5-Coder writes
      // them: held to the end. A fence of code in another language streams.
      const size_t line_end = rest.find('\n');
      if (line_end == std::string_view::npos) return out;
      std::string_view info = rest.substr(kFence.size(), line_end - kFence.size());
      while (!info.empty() && (info.back() == ' ' || info.back() == '\r')) info.remove_suffix(1);
      start_ = info.empty() || info == "json" ? Start::kBare : Start::kTagged;
    }
    if (start_ == Start::kUnknown) start_ = rest[0] == '{' ? Start::kBare : Start::kTagged;
  }
  if (start_ == Start::kBare || start_ == Start::kMistral) return out;  // read whole, at the end
  for (;;) {
    if (!inside_) {
      // A held blank run holds no tag: only what follows it is searched.
      const size_t open = buffer_.find(kOpen, held_blank_);
      const size_t end = open == std::string::npos ? buffer_.size() - partial_tag_suffix(buffer_, kOpen) : open;
      // Between and after calls, the model's line breaks are not content:
      // blank text after a call waits to see whether text or a call follows.
      const bool blank = calls_ > 0 && is_blank(buffer_.substr(held_blank_, end - held_blank_));
      if (open == std::string::npos && blank) {
        held_blank_ = end;
        return out;
      }
      if (end > 0 && !blank) out.push_back({buffer_.substr(0, end), std::nullopt});
      held_blank_ = 0;
      if (open == std::string::npos) {
        buffer_.erase(0, end);
        return out;
      }
      buffer_.erase(0, open + kOpen.size());
      inside_ = true;
    }
    // Only the new text (and a tag it may complete) is searched: a long
    // call costs linear time, not a scan of its body per token.
    const size_t close = buffer_.find(kClose, scanned_);
    if (close == std::string::npos) {
      scanned_ = buffer_.size() - std::min(buffer_.size(), kClose.size() - 1);
      return out;
    }
    scanned_ = 0;
    inside_ = false;
    parse_call(buffer_.substr(0, close), out);
    buffer_.erase(0, close + kClose.size());
  }
}

std::vector<ToolCallPiece> ToolCallParser::finish() {
  std::vector<ToolCallPiece> out;
  if (start_ == Start::kBare || start_ == Start::kMistral) {
    const size_t tag = buffer_.find(kPythonTag);
    if (start_ == Start::kBare && tag != std::string::npos && is_blank(buffer_.substr(0, tag))) {
      buffer_.erase(0, tag + kPythonTag.size());
    }
    if (auto calls = start_ == Start::kBare ? bare_calls() : mistral_calls()) {
      for (ToolCall& call : *calls) out.push_back({"", std::move(call)});
      calls_ += int(calls->size());
    } else {
      out.push_back({buffer_, std::nullopt});
    }
    buffer_.clear();
    return out;
  }
  if (inside_) {
    parse_call(buffer_, out);
    inside_ = false;
    scanned_ = 0;
  } else if (!buffer_.empty() && !(calls_ > 0 && is_blank(buffer_))) {
    out.push_back({buffer_, std::nullopt});
  }
  buffer_.clear();
  held_blank_ = 0;
  return out;
}

std::vector<ToolCallPiece> ToolCallParser::take(const std::string& text, bool last) {
  std::vector<ToolCallPiece> pieces = feed(text);
  if (last) {
    for (auto& p : finish()) pieces.push_back(std::move(p));
  }
  std::vector<ToolCallPiece> kept;
  for (auto& p : pieces) {
    if (p.call && !parallel_ && kept_ > 0) continue;
    if (p.call) ++kept_;
    kept.push_back(std::move(p));
  }
  return kept;
}

std::vector<ToolCallPiece> output_pieces(ToolCallParser& parser, bool parse, const std::string& text, bool last) {
  if (parse) return parser.take(text, last);
  if (text.empty()) return {};
  return {ToolCallPiece{text, std::nullopt}};
}

nlohmann::ordered_json tool_call_json(const ToolCall& call) {
  return {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

void check_tools(const nlohmann::ordered_json& tools) {
  if (!tools.is_array()) throw ApiError::invalid("'tools' must be an array", "tools");
  for (const auto& tool : tools) {
    if (!tool.is_object() || tool.value("type", nlohmann::ordered_json()) != "function" || !tool.contains("function") || !tool["function"].is_object()) {
      throw ApiError::invalid("each tool must be {\"type\": \"function\", \"function\": {...}}", "tools");
    }
    const auto& fn = tool["function"];
    const auto name = fn.find("name");
    if (name == fn.end() || !name->is_string() || name->get<std::string>().empty() || name->get<std::string>().size() > 64 ||
        name->get<std::string>().find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
            std::string::npos) {
      throw ApiError::invalid("each function needs a 'name' of 1 to 64 letters, digits, '_' or '-'", "tools");
    }
    if (fn.contains("parameters") && !fn["parameters"].is_object()) {
      throw ApiError::invalid("function '" + name->get<std::string>() + "': 'parameters' must be a JSON schema object", "tools");
    }
  }
}

nlohmann::ordered_json tool_arguments_as_objects(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = messages;
  if (!out.is_array()) return out;
  for (size_t i = 0; i < out.size(); ++i) {
    auto& m = out[i];
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    auto& calls = m["tool_calls"];
    for (size_t j = 0; j < calls.size(); ++j) {
      auto& call = calls[j];
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      auto& fn = call["function"];
      if (!fn.contains("arguments") || !fn["arguments"].is_string()) continue;
      BoundedJsonResult parsed = try_parse_bounded_json(fn["arguments"].get_ref<const std::string&>(), kEmbeddedJsonLimits);
      const std::string param = "messages[" + std::to_string(i) + "].tool_calls[" + std::to_string(j) + "].function.arguments";
      // Text that is not JSON stays text, as the client wrote it; JSON
      // that breaks a cap is refused rather than rendered half-read.
      if (parsed.over_limit) throw ApiError::invalid("'" + param + "': " + parsed.error, param);
      if (parsed.ok() && parsed.value.is_object()) fn["arguments"] = std::move(parsed.value);
    }
  }
  return out;
}

}  // namespace tessera
