// JSON Schema and regular expressions → GBNF grammars (grammar.h), for
// constrained decoding: the model can only write text the grammar matches,
// so its output parses and validates by construction.
//
// The generated JSON is compact, with at most one space where JSON allows
// whitespace, and an object's properties in a fixed order (its required
// properties, then the optional ones, each in key order); no property the
// schema does not name is generated. Every text the grammar matches is
// valid under the schema (the converse need not hold: the grammar picks one
// of the many ways to write a valid instance).
//
// Supported keywords (anything else is an error naming the keyword and its
// place, so a caller can answer 400): type (one or a list), properties,
// required, additionalProperties (false, true, or a schema: used for
// objects without properties), enum, const, items, prefixItems, minItems,
// maxItems, anyOf, oneOf, allOf, $ref to
// "#", "#/$defs/…" or "#/definitions/…", minLength, maxLength, pattern
// (regex subset below), format (date, time, date-time, uuid, ipv4), integer
// minimum/maximum/exclusiveMinimum/exclusiveMaximum (bounds of 0 or 1 below,
// or ranges of at most 1000 values), and annotations that constrain nothing
// (title, description, default, examples, $schema, $id, $comment, readOnly,
// writeOnly, deprecated, strict, nullable, uniqueItems false). allOf parts
// are merged (required and properties joined; any other keyword set
// differently by two parts is an error); oneOf is taken only when its
// alternatives cannot overlap (distinct types, or distinct const/enum
// values); anyOf and oneOf alternatives also get the keywords beside them;
// a type's keywords without "type" generate only that type. Draft 7's items
// array and additionalItems are prefixItems and the rest.
//
// Regular expressions (pattern, RegexToGbnf): literals, ., [classes] with
// ranges and ^, \d \w \s \D \W \S and escaped punctuation, groups (…) and
// (?:…), |, the quantifiers * + ? {m} {m,} {m,n} (lazy forms taken as
// greedy), ^ at the start and $ at the end. Backreferences, lookaround and
// other anchors are errors. Unanchored ends may be filled with any text.
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvmesh::grammar {

// GBNF whose root matches the JSON instances written as described above.
StatusOr<std::string> JsonSchemaToGbnf(const nlohmann::json& schema);

// The rules of `schema` alone, its entry rule named `entry` and the others
// prefixed with it, for embedding in a larger grammar (forced tool calls);
// they use the shared JSON rules of JsonPrimitivesGbnf(), which the caller
// adds once.
StatusOr<std::string> JsonSchemaRules(const nlohmann::json& schema, const std::string& entry);
std::string JsonPrimitivesGbnf();

// GBNF for any JSON object (OpenAI's response_format json_object).
std::string JsonObjectGbnf();

// GBNF whose root matches the whole text `pattern` matches (a regex as
// above). With `json_string`, for the inside of a JSON string literal: the
// characters a JSON string must escape are written escaped, and classes
// never produce them raw.
StatusOr<std::string> RegexToGbnf(std::string_view pattern, bool json_string = false);

}  // namespace kvmesh::grammar
