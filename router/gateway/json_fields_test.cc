#include "router/gateway/json_fields.h"

#include <gtest/gtest.h>

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;

TEST(JsonFieldsTest, ParseJsonObject) {
  StatusOr<json> parsed = ParseJsonObject(R"({"model":"tiny"})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)["model"], "tiny");

  parsed = ParseJsonObject(R"({"model": )");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "request body is not valid JSON: parse error at line 1, column 11: syntax error "
            "while parsing value - unexpected end of input; expected '[', '{', or a literal");

  parsed = ParseJsonObject("[1,2]");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "request body must be a JSON object, got array");

  // A number past a double is nlohmann's out_of_range, not a parse_error
  // (found by gateway_fuzz): still a 400, never an uncaught exception.
  parsed = ParseJsonObject(R"({"temperature": 1e999})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "request body is not valid JSON: number overflow parsing '1e999'");
}

TEST(JsonFieldsTest, AbsentAndNullLeaveValues) {
  json body = {{"model", nullptr}};
  JsonObjectReader reader(body, "");
  std::string model = "unchanged";
  ASSERT_TRUE(reader.String("model", &model).ok());
  ASSERT_TRUE(reader.String("other", &model).ok());
  EXPECT_EQ(model, "unchanged");
}

TEST(JsonFieldsTest, TypeErrorsNameTheField) {
  json body = {{"model", 3}, {"stream", "yes"}, {"top_k", 2.5}, {"temperature", "hot"}};
  JsonObjectReader reader(body, "");
  std::string model;
  EXPECT_EQ(reader.String("model", &model).message(),
            "field \"model\" must be a string, got number");
  bool stream = false;
  EXPECT_EQ(reader.Bool("stream", &stream).message(),
            "field \"stream\" must be a boolean, got string");
  std::optional<int64_t> top_k;
  EXPECT_EQ(reader.Integer("top_k", &top_k).message(),
            "field \"top_k\" must be an integer, got 2.5");
  std::optional<double> temperature;
  EXPECT_EQ(reader.Number("temperature", &temperature).message(),
            "field \"temperature\" must be a number, got string");

  json message = {{"role", 7}};
  JsonObjectReader nested(message, "messages[2]");
  std::string role;
  EXPECT_EQ(nested.String("role", &role).message(),
            "field \"messages[2].role\" must be a string, got number");
  EXPECT_EQ(nested.Missing("content").message(), "field \"messages[2].content\" is required");
}

TEST(JsonFieldsTest, Ranges) {
  json body = {{"temperature", 2.5}, {"top_p", 0.5}, {"max_tokens", 0}, {"seed", 7}};
  JsonObjectReader reader(body, "");
  std::optional<double> number;
  EXPECT_EQ(reader.NumberInRange("temperature", 0, 2, &number).message(),
            "field \"temperature\" must be between 0 and 2, got 2.5");
  EXPECT_FALSE(number.has_value());
  ASSERT_TRUE(reader.NumberInRange("top_p", 0, 1, &number).ok());
  EXPECT_EQ(number, 0.5);
  std::optional<int64_t> integer;
  EXPECT_EQ(reader.IntegerInRange("max_tokens", 1, 100, &integer).message(),
            "field \"max_tokens\" must be between 1 and 100, got 0");
  ASSERT_TRUE(reader.IntegerInRange("seed", 0, 100, &integer).ok());
  EXPECT_EQ(integer, 7);
}

TEST(JsonFieldsTest, ValueErrorShortensStrings) {
  json body = {{"role", std::string(60, 'x')}};
  JsonObjectReader reader(body, "");
  EXPECT_EQ(reader.ValueError("role", "must be user", body["role"]).message(),
            "field \"role\" must be user, got \"" + std::string(40, 'x') + "...\"");
}

TEST(JsonFieldsTest, ValueErrorLooksUpTheFieldAndCallsAMissingOneMissing) {
  const json body = {{"role", "robot"}, {"name", nullptr}};
  JsonObjectReader reader(body, "messages[0]");
  EXPECT_EQ(reader.ValueError("role", "must be user").message(),
            "field \"messages[0].role\" must be user, got \"robot\"");
  EXPECT_EQ(reader.ValueError("type", "must be text").message(),
            "field \"messages[0].type\" is required");
  EXPECT_EQ(reader.ValueError("name", "must be a name").message(),
            "field \"messages[0].name\" is required");
}

}  // namespace
}  // namespace kvmesh::router::gateway
