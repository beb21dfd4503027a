#pragma once
// A Jinja2 subset sufficient for chat templates, rendering byte-identically
// to Python jinja2 configured as Hugging Face transformers configures it
// (trim_blocks, lstrip_blocks, loop controls, no trailing newline). Templates
// can only compute and emit text: there is no file, network or attribute
// access beyond the values handed in, and renders are bounded in output size,
// loop iterations and nesting.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "server/chat/jinja_ast.h"
#include "server/chat/jinja_value.h"

namespace tessera::jinja {

// Raised for syntax errors, unsupported constructs, runtime type errors,
// exceeded limits and raise_exception(); what() names the line.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RenderLimits {
  size_t max_output_bytes = 8u << 20;
  uint64_t max_steps = 5'000'000;  // loop iterations and evaluated nodes
  int max_depth = 200;             // nesting of blocks and expressions
};

class Template {
 public:
  static Template parse(std::string_view source);
  std::string render(const ValueDict& globals, const RenderLimits& limits = {}) const;

 private:
  std::shared_ptr<const Body> body_;
};

}  // namespace tessera::jinja
