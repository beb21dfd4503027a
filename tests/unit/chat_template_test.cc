// Chat templates rendered by the Jinja subset against Python jinja2's output
// (tests/data/chat-templates/goldens.json, from
// scripts/gen_chat_template_goldens.py), plus the language features and
// limits the goldens do not reach.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "server/chat/chat_template.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& source, const ordered_json& context = ordered_json::object(),
                   const jinja::RenderLimits& limits = {}) {
  jinja::ValueDict globals;
  for (const auto& [k, v] : context.items()) globals.set(k, jinja::Value::from_json(v));
  return jinja::Template::parse(source).render(globals, limits);
}

std::string error_of(const std::string& source, const ordered_json& context = ordered_json::object(),
                     const jinja::RenderLimits& limits = {}) {
  try {
    render(source, context, limits);
  } catch (const jinja::TemplateError& e) {
    return e.what();
  }
  return "";
}

// Templates that print today's date (strftime_now: gpt-oss's) are compared
// with the date as a pattern: the goldens were rendered on another day.
std::string without_date(const std::string& text) {
  static const std::regex date("Current date: [0-9]{4}-[0-9]{2}-[0-9]{2}");
  return std::regex_replace(text, date, "Current date: (today)");
}

TEST(ChatTemplate, MatchesJinja2OnEveryGoldenCase) {
  const ordered_json goldens = ordered_json::parse(test::read_file(test::data_path("chat-templates/goldens.json")));
  std::map<std::string, std::unique_ptr<ChatTemplate>> templates;
  int rendered = 0, refused = 0;
  for (const auto& c : goldens["cases"]) {
    const std::string name = c["template"];
    if (!templates.count(name)) {
      templates[name] = std::make_unique<ChatTemplate>(test::read_file(test::data_path("chat-templates/" + name)));
    }
    ChatTemplateInput in;
    in.messages = c["messages"];
    in.tools = c["tools"];
    in.extra = c["extra"];
    in.add_generation_prompt = c["add_generation_prompt"];
    in.bos_token = c["bos_token"];
    in.eos_token = c["eos_token"];
    SCOPED_TRACE(name + " / " + c["conversation"].get<std::string>());
    if (c.contains("output")) {
      EXPECT_EQ(without_date(templates[name]->render(in)), without_date(c["output"].get<std::string>()));
      ++rendered;
    } else {
      try {
        templates[name]->render(in);
        ADD_FAILURE() << "jinja2 refused this conversation: " << c["error"];
      } catch (const jinja::TemplateError& e) {
        EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>());
      }
      ++refused;
    }
  }
  EXPECT_GE(rendered, 90);
  EXPECT_GE(refused, 5);
}

TEST(Jinja, WhitespaceControlAndBlockTrimming) {
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(render("  {% if true %}\nx\n  {% endif %}\ny"), "x\ny");  // lstrip_blocks + trim_blocks
  EXPECT_EQ(render("a {{ 'b' }} c"), "a b c");                         // output tags are not lstripped
  EXPECT_EQ(render("x\n{# comment #}\ny\n"), "x\ny");                 // one trailing newline dropped
  EXPECT_EQ(render("a {%+ if true %}b{% endif +%}\nc"), "a b\nc");
}

TEST(Jinja, LoopScopesNamespacesAndLoopVariables) {
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% for i in 'abc' %}{{ loop.index }}{{ i }}{% if not loop.last %},{% endif %}{% endfor %}"), "1a,2b,3c");
  EXPECT_EQ(render("{% for i in range(10) if i is odd %}{% if i > 5 %}{% break %}{% endif %}{{ i }}{% endfor %}"), "135");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
}

TEST(Jinja, PythonValueSemantics) {
  EXPECT_EQ(render("{{ none }} {{ true }} {{ [1, 'a', none] }} {{ {'k': 1.5} }}"), "None True [1, 'a', None] {'k': 1.5}");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1e-05 if false else 0.1 + 0.2 }}"),
            "3 -4 2 3.5 1024 0.30000000000000004");
  EXPECT_EQ(render("{{ 'ab' ~ 1 }} {{ 'x' * 3 }} {{ [1, 2] + [3] }} {{ 'b' in 'abc' }} {{ 3 not in [1, 2] }}"),
            "ab1 xxx [1, 2, 3] True True");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }} {{ 'Hello'[1:-1] }} {{ [1,2,3][::-1] }}"),
            "['a', 'b', '', 'c'] x|hi ell [3, 2, 1]");
  EXPECT_EQ(render("{{ m.missing is defined }} {{ m.missing }}|{{ m['role'] }}", {{"m", {{"role", "user"}}}}), "False |user");
}

TEST(Jinja, FiltersAndTests) {
  const ordered_json ctx = {{"msgs", ordered_json::array({{{"role", "user"}}, {{"role", "tool"}}, {{"role", "user"}}})}};
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | list | length }}", ctx), "2");
  EXPECT_EQ(render("{{ msgs | map(attribute='role') | join(', ') }}", ctx), "user, tool, user");
  EXPECT_EQ(render("{{ ['b', 'a', 'c'] | reject('equalto', 'a') | join }}"), "bc");
  EXPECT_EQ(render("{{ {'z': [1, {'é': none}], 'a': 'x\"y'} | tojson }}"), "{\"z\": [1, {\"é\": null}], \"a\": \"x\\\"y\"}");
  EXPECT_EQ(render("{{ [1, {'a': 2}] | tojson(indent=2) }}"), "[\n  1,\n  {\n    \"a\": 2\n  }\n]");
  EXPECT_EQ(render("{{ undefined_thing | default('d') }} {{ '' | default('e', true) }} {{ 'AbC' | lower }} {{ ' t ' | trim }}"),
            "d e abc t");
  EXPECT_EQ(render("{{ 4 is divisibleby 2 }} {{ 'x' is string }} {{ none is none }} {{ {} is mapping }}"), "True True True True");
}

// Macros as gpt-oss's template uses them: defaults, keywords, recursion,
// and the caller's variables out of reach.
TEST(Jinja, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bo', punct='?') }} {{ greet(punct='.', name='Cy') }}"),
            "Hi Ann! Hi Bo? Hi Cy.");
  EXPECT_EQ(render("{%- macro count(n) -%}{{ n }}{% if n > 0 %},{{ count(n - 1) }}{% endif %}{%- endmacro -%}{{ count(3) }}"),
            "3,2,1,0");
  // The template's top level is visible, the caller's loop variable is not.
  EXPECT_EQ(render("{% set top = 'T' %}{% macro m() %}{{ top }}{{ i is defined }}{% endmacro %}{% for i in [1] %}{{ m() }}{% endfor %}"),
            "TFalse");
  EXPECT_EQ(render("{% macro m() %}{% set x = 1 %}{% endmacro %}{{ m() }}{{ x is defined }}"), "False");
  EXPECT_NE(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").find("not more than 1"), std::string::npos);
  EXPECT_NE(error_of("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}").find("no keyword argument 'b'"), std::string::npos);
  EXPECT_NE(error_of("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}").find("render limit"), std::string::npos);
  EXPECT_NE(error_of("{% macro m() %}").find("endmacro"), std::string::npos);
}

TEST(Jinja, ErrorsNameTheLineAndUnsupportedTagsAreRefused) {
  EXPECT_NE(error_of("line one\n{% if %}").find("line 2"), std::string::npos);
  EXPECT_NE(error_of("{% call m() %}{% endcall %}").find("unsupported"), std::string::npos);
  EXPECT_NE(error_of("{{ 'unclosed }}").find("unclosed"), std::string::npos);
  EXPECT_NE(error_of("{% for x in y %}").find("endfor"), std::string::npos);
  EXPECT_NE(error_of("{{ x | no_such_filter }}").find("no_such_filter"), std::string::npos);
  EXPECT_EQ(error_of("{{ raise_exception('custom message') }}"), "custom message");
  EXPECT_NE(error_of("{{ undefined_thing.attr }}").find("undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
}

TEST(Jinja, TemplatesCannotReachBeyondTheirValues) {
  // Python attribute names lead nowhere: there is no object model to reach.
  EXPECT_EQ(render("{{ ''.__class__ }}{{ messages.__init__ }}{{ range.__globals__ }}", {{"messages", ordered_json::array()}}), "");
  EXPECT_NE(error_of("{{ ''.__class__.__mro__ }}").find("undefined"), std::string::npos);
}

TEST(Jinja, RendersAreBounded) {
  jinja::RenderLimits limits;
  limits.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(100000) %}xxxxxxxxxx{% endfor %}", {}, limits).find("size limit"), std::string::npos);
  limits = {};
  limits.max_steps = 10000;
  EXPECT_NE(error_of("{% for i in range(100000) %}{% endfor %}", {}, limits).find("step limit"), std::string::npos);
  EXPECT_NE(error_of("{{ range(1000000000) }}").find("range()"), std::string::npos);
  std::string deep(500, '(');
  EXPECT_NE(error_of("{{ " + deep + "1" + std::string(500, ')') + " }}").find("nested"), std::string::npos);
}

TEST(Jinja, IntermediateValuesAreBoundedToo) {
  // Repetition whose size overflows 64 bits, concatenation past the budget.
  EXPECT_NE(error_of("{{ 'ab' * 9223372036854775807 }}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{% set s = 'x' * 5000000 %}{% set t = s ~ s %}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{% set s = 'x' * 5000000 %}{% set t = s + s %}").find("size limit"), std::string::npos);
  EXPECT_NE(error_of("{{ ('x' * 1000000) | replace('x', 'yyyyyyyyyyyyyyyyyyyy') }}").find("size limit"), std::string::npos);
  // Python: -2**63 % -1 == 0, where the machine instruction traps.
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) is divisibleby(-1) }}"), "True");
  // A namespace cannot be made to hold itself (a cycle would leak and recurse).
  EXPECT_NE(error_of("{% set xs = namespace(a=1) %}{% set xs.a = xs %}").find("cannot hold itself"), std::string::npos);
  EXPECT_NE(error_of("{% set a = namespace(v=1) %}{% set b = namespace(v=[1, a]) %}{% set a.v = [b] %}")
                .find("cannot hold itself"), std::string::npos);
  EXPECT_EQ(render("{% set a = namespace(v=1) %}{% set b = namespace(v=a) %}{% set a.v = 2 %}{{ b.v.v }}"), "2");
  // Deep nesting built from literals is bounded when printed.
  EXPECT_NE(error_of("{% set ns = namespace(x=1) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x | tojson }}")
                .find("deeper"), std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(x=1) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}")
                .find("deeper"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 | tojson(indent=1000000000) }}").find("indent"), std::string::npos);
  // Trimming and splitting walk the text in place.
  EXPECT_EQ(render("{{ ('\u3000 ' * 3 + 'a b' + ' \n' * 3) | trim }}|{{ ' a  b '.split() | join(',') }}|{{ 'h\u00e9llo'[1] }}{{ 'h\u00e9llo'[-1] }}"),
            "a b|a,b|\u00e9o");
}

}  // namespace
}  // namespace tessera
