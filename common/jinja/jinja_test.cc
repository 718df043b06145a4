// The Jinja engine's semantics, one rule at a time.
#include "common/jinja/jinja.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvmesh::jinja {
namespace {

using ::testing::HasSubstr;

std::string Render(const std::string& source,
                   const nlohmann::ordered_json& vars = nlohmann::ordered_json::object(),
                   RenderOptions options = {}) {
  auto t = Template::Parse(source);
  if (!t.ok()) return "PARSE ERROR: " + t.status().message();
  auto out = t->Render(vars, options);
  if (!out.ok()) return "ERROR: " + out.status().message();
  return *out;
}

TEST(JinjaTest, WhitespaceControlTrimAndLstrip) {
  EXPECT_EQ(Render("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  EXPECT_EQ(Render("a  {%- if true -%}  b  {%- endif %}"), "ab");
  EXPECT_EQ(Render("{{ 'x' }}\n{{ 'y' }}"), "x\ny");
  EXPECT_EQ(Render("a {# note #}\nb"), "a b");
  EXPECT_EQ(Render("  {%+ if true %}x{% endif %}"), "  x");
}

TEST(JinjaTest, PythonValuesPrintAsPythonDoes) {
  const nlohmann::ordered_json v = {{"l", {1, "a", nullptr, true, 1.5}}, {"d", {{"k", 1}}}};
  EXPECT_EQ(
      Render("{{ l }} {{ d }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }}",
             v),
      "[1, 'a', None, True, 1.5] {'k': 1} 1e+20 0.30000000000000004 3 -4 -2");
  EXPECT_EQ(Render("{{ d | tojson }} {{ l | tojson(indent=2) }}", v),
            "{\"k\": 1} [\n  1,\n  \"a\",\n  null,\n  true,\n  1.5\n]");
  EXPECT_EQ(Render("{{ 'é'|length }} {{ 'héllo'[1:3] }} {{ 'abc'[::-1] }}"), "1 él cba");
}

TEST(JinjaTest, LoopsNamespacesMacros) {
  EXPECT_EQ(Render("{% for x in [1,2,3] if x != 2 %}{{ loop.index }}/{{ loop.length }}{{ ',' if "
                   "not loop.last }}{% endfor %}"),
            "1/2,2/2");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for x in range(4) %}{% if x == 3 %}{% break "
                   "%}{% endif %}"
                   "{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(Render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(Render("{% macro m(a, b='B') %}[{{ a }}{{ b }}{{ varargs|length }}]{% endmacro %}{{ "
                   "m(1) }}{{ m(1, 2, 3) }}"),
            "[1B0][121]");
  EXPECT_EQ(Render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=2;");
}

TEST(JinjaTest, FiltersAndTests) {
  EXPECT_EQ(Render("{{ '  x  '|trim }}|{{ none|default('d') }}|{{ [3,1,2]|sort|join(',') }}|{{ "
                   "'a\nb'|indent(2) }}"),
            "x|None|1,2,3|a\n  b");
  EXPECT_EQ(Render("{{ undefined_name|default('d') }} {{ x is defined }} {{ 3 is odd }} {{ 'ab' is "
                   "string }}"),
            "d False True True");
  const nlohmann::ordered_json v = {{"xs", {{{"t", "a"}, {"n", 1}}, {{"t", "b"}, {"n", 2}}}}};
  EXPECT_EQ(Render("{{ xs|selectattr('t', 'equalto', 'b')|map(attribute='n')|list }}", v), "[2]");
}

TEST(JinjaTest, StringMethods) {
  EXPECT_EQ(Render("{{ ' a b  c '.split() }} {{ 'a,b'.split(',') }} {{ 'xxhixx'.strip('x') }} {{ "
                   "'abc'.startswith(('z', 'a')) }}"),
            "['a', 'b', 'c'] ['a', 'b'] hi True");
}

TEST(JinjaTest, ErrorsNameTheProblem) {
  EXPECT_THAT(Render("{{ raise_exception('no system role') }}"), HasSubstr("no system role"));
  EXPECT_THAT(Render("{{ x.y.z }}"), HasSubstr("undefined"));
  EXPECT_THAT(Render("{{ 'a' + 1 }}"), HasSubstr("TypeError"));
  EXPECT_THAT(Render("{{ x|nosuchfilter }}"), HasSubstr("no filter named 'nosuchfilter'"));
  EXPECT_THAT(Render("{% if %}"), HasSubstr("line 1"));
  EXPECT_THAT(Render("{% include 'x' %}"), HasSubstr("not supported"));
  const nlohmann::ordered_json v = {{"l", {1}}};
  EXPECT_THAT(Render("{{ l.append(2) }}", v), HasSubstr("SecurityError"));
}

TEST(JinjaTest, HostileTemplatesHitTheirLimits) {
  RenderOptions o;
  o.limits.max_steps = 100000;
  EXPECT_THAT(Render("{% for i in range(1000000) %}{% endfor %}", {}, o), HasSubstr("steps"));
  o.limits.max_output_bytes = 1000;
  EXPECT_THAT(Render("{% for i in range(100) %}{{ 'xxxxxxxxxxxxxxxxxxxx' }}{% endfor %}", {}, o),
              HasSubstr("output exceeded"));
  EXPECT_THAT(Render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
              HasSubstr("nested deeper"));
}

TEST(JinjaTest, StrftimeNowReadsTheInjectedClock) {
  RenderOptions o;
  o.now = [] {
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    return tm;
  };
  EXPECT_EQ(Render("{{ strftime_now('%d %b %Y') }}", {}, o), "26 Jul 2024");
}

}  // namespace
}  // namespace kvmesh::jinja
