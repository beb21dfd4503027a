// libFuzzer target: any bytes as a chat template either parse and render a
// fixed conversation within the render limits, or give a TemplateError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/chat/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const tessera::ChatTemplate tmpl(source);
    tessera::ChatTemplateInput in;
    in.messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"},
            {"role": "assistant", "content": "Hello"}, {"role": "user", "content": [{"type": "text", "text": "Bye"}]}])");
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    (void)tmpl.render(in);
  } catch (const tessera::jinja::TemplateError&) {
  }
  return 0;
}
