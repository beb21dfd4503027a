#include "server/serving/structured_output.h"

#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/regex_to_gbnf.h"
#include "server/serving/api_error.h"

namespace tessera {
namespace {

// Grammar text past this is refused before compiling: compile time and
// memory grow with it.
constexpr size_t kMaxGrammarBytes = 512u << 10;
constexpr size_t kMaxChoices = 1024;

// The GBNF expression for whitespace between JSON tokens.
std::string json_whitespace(const StructuredOutput& s) {
  if (!s.whitespace_pattern) return grammar::kJsonWhitespace;
  if (s.whitespace_pattern->empty()) return "\"\"";
  try {
    return "( " + grammar::regex_to_gbnf_expression(*s.whitespace_pattern, false) + " )";
  } catch (const grammar::GrammarError& e) {
    throw ApiError::invalid(std::string("'guided_whitespace_pattern': ") + e.what(), "guided_whitespace_pattern");
  }
}

std::string lower(const StructuredOutput& s) {
  switch (s.kind) {
    case StructuredOutput::Kind::kJsonSchema: return grammar::json_schema_to_gbnf(s.schema, json_whitespace(s));
    case StructuredOutput::Kind::kJsonObject: return grammar::json_object_gbnf(json_whitespace(s));
    case StructuredOutput::Kind::kRegex: return grammar::regex_to_gbnf(s.text);
    case StructuredOutput::Kind::kGrammar: return s.text;
    case StructuredOutput::Kind::kChoice: {
      if (s.choices.empty()) throw ApiError::invalid("'" + s.param + "' must list at least one choice", s.param);
      if (s.choices.size() > kMaxChoices) {
        throw ApiError::invalid("'" + s.param + "' lists more than " + std::to_string(kMaxChoices) + " choices", s.param);
      }
      std::string g = "root ::= ";
      for (size_t i = 0; i < s.choices.size(); ++i) g += (i ? " | " : "") + grammar::gbnf_literal(s.choices[i]);
      return g + "\n";
    }
  }
  return {};
}

void check_grammar_size(const std::string& gbnf, const std::string& param) {
  if (gbnf.size() > kMaxGrammarBytes) {
    throw ApiError::invalid("'" + param + "' makes a grammar of " + std::to_string(gbnf.size()) + " bytes; at most " +
                                std::to_string(kMaxGrammarBytes) + " are allowed", param);
  }
}

}  // namespace

std::string structured_output_identity(const StructuredOutput& s) {
  std::string id = std::to_string(int(s.kind)) + '\0' + (s.whitespace_pattern ? "w" + *s.whitespace_pattern : "-") + '\0';
  switch (s.kind) {
    case StructuredOutput::Kind::kJsonSchema: id += s.schema.dump(); break;
    case StructuredOutput::Kind::kJsonObject: break;
    case StructuredOutput::Kind::kRegex:
    case StructuredOutput::Kind::kGrammar: id += s.text; break;
    case StructuredOutput::Kind::kChoice:
      for (const std::string& c : s.choices) id += std::to_string(c.size()) + ':' + c;
      break;
  }
  return id;
}

std::string structured_output_gbnf(const StructuredOutput& s) {
  std::string gbnf;
  try {
    gbnf = lower(s);
  } catch (const grammar::GrammarError& e) {
    throw ApiError::invalid("'" + s.param + "': " + e.what(), s.param);
  }
  check_grammar_size(gbnf, s.param);
  return gbnf;
}

}  // namespace tessera
