#include "common/grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/grammar/grammar.h"

namespace kvmesh::grammar {

StatusOr<std::string> RegexExpression(std::string_view pattern, bool json_string);

namespace {

using nlohmann::json;

// Shared rules of every generated grammar. Whitespace is at most one space,
// numbers at most 16 digits before and after the point, so a model cannot
// run on in padding or digits.
constexpr char kPrimitives[] = R"(ws ::= " "?
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-int ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-int ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value (ws "," ws json-string ws ":" ws json-value)*)? ws "}"
json-array ::= "[" ws (json-value (ws "," ws json-value)*)? ws "]"
)";

const std::set<std::string> kAnnotations = {
    "title",  "description", "default",  "examples",    "$schema",
    "$id",    "$comment",    "readOnly", "writeOnly",   "deprecated",
    "strict", "nullable",    "$defs",    "definitions", "additionalProperties"};

class Converter {
 public:
  Converter(const json& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

  // The rules, the entry one named `entry`; without the primitives.
  StatusOr<std::string> Run(const std::string& entry) {
    ASSIGN_OR_RETURN(std::string expr, Visit(root_, "#", 0));
    std::string out = entry + " ::= " + expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  Status Unsupported(const std::string& path, const std::string& what) const {
    return InvalidArgumentError("JSON schema at " + path + ": " + what);
  }

  std::string NewRule(const std::string& body) {
    std::string name = prefix_ + "s" + std::to_string(rules_.size());
    rules_[name] = body;
    return name;
  }

  StatusOr<std::string> Visit(const json& schema, const std::string& path, int depth) {
    if (depth > 64) return Unsupported(path, "nested too deeply (more than 64 levels)");
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return std::string("json-value");
      return Unsupported(path, "the schema false accepts nothing");
    }
    if (!schema.is_object()) return Unsupported(path, "a schema must be an object or a boolean");
    static const std::set<std::string> kKnown = {"type",
                                                 "properties",
                                                 "required",
                                                 "enum",
                                                 "const",
                                                 "items",
                                                 "prefixItems",
                                                 "minItems",
                                                 "maxItems",
                                                 "anyOf",
                                                 "oneOf",
                                                 "allOf",
                                                 "$ref",
                                                 "minLength",
                                                 "maxLength",
                                                 "pattern",
                                                 "format",
                                                 "minimum",
                                                 "maximum",
                                                 "exclusiveMinimum",
                                                 "exclusiveMaximum",
                                                 "uniqueItems",
                                                 "additionalItems"};
    for (const auto& [key, value] : schema.items()) {
      if (kKnown.count(key) == 0 && kAnnotations.count(key) == 0) {
        return Unsupported(path, "keyword \"" + key + "\" is not supported");
      }
    }
    if (auto u = schema.find("uniqueItems");
        u != schema.end() && u->is_boolean() && u->get<bool>()) {
      return Unsupported(path, "keyword \"uniqueItems\" true is not supported");
    }
    if (auto ref = schema.find("$ref"); ref != schema.end()) {
      if (schema.size() > 1) {
        for (const auto& [key, value] : schema.items()) {
          if (key != "$ref" && kAnnotations.count(key) == 0) {
            return Unsupported(path, "keyword \"" + key + "\" beside $ref is not supported");
          }
        }
      }
      return Ref(*ref, path, depth);
    }
    if (auto c = schema.find("const"); c != schema.end()) return GbnfLiteral(c->dump());
    if (auto e = schema.find("enum"); e != schema.end()) {
      if (!e->is_array() || e->empty())
        return Unsupported(path + "/enum", "must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < e->size(); ++i) out += (i ? " | " : "") + GbnfLiteral((*e)[i].dump());
      return out + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (auto alts = schema.find(key); alts != schema.end()) {
        if (!alts->is_array() || alts->empty()) {
          return Unsupported(path + "/" + key, "must be a non-empty array");
        }
        if (std::string(key) == "oneOf" && !Disjoint(*alts)) {
          return Unsupported(path + "/oneOf",
                             "alternatives that may overlap are not supported (exactly one must "
                             "match: give each a different type or const, or use anyOf)");
        }
        // The keywords beside anyOf apply to every alternative too.
        json base = schema;
        base.erase(key);
        std::string out = "(";
        int written = 0;
        for (size_t i = 0; i < alts->size(); ++i) {
          const std::string alt_path = path + "/" + key + "/" + std::to_string(i);
          json merged = (*alts)[i];
          if (merged.is_boolean() && !merged.get<bool>()) continue;  // matches nothing
          if (merged.is_object()) {
            for (const auto& [k, v] : base.items()) {
              if (kAnnotations.count(k) && k != "additionalProperties") continue;
              if (merged.contains(k) && merged[k] != v) {
                return Unsupported(alt_path, "keyword \"" + k + "\" is set both here and beside " +
                                                 key + ", which is not supported");
              }
              merged[k] = v;
            }
          }
          ASSIGN_OR_RETURN(std::string alt, Visit(merged, alt_path, depth + 1));
          out += (written++ ? " | " : "") + alt;
        }
        if (written == 0) return Unsupported(path + "/" + key, "no alternative can match");
        return out + ")";
      }
    }
    if (auto all = schema.find("allOf"); all != schema.end()) {
      // Merged into one schema: the keywords of all parts together, where
      // no two parts set the same keyword differently (required and
      // properties are joined).
      if (!all->is_array() || all->empty()) {
        return Unsupported(path + "/allOf", "must be a non-empty array");
      }
      json merged = schema;
      merged.erase("allOf");
      for (size_t i = 0; i < all->size(); ++i) {
        const json& part = (*all)[i];
        const std::string part_path = path + "/allOf/" + std::to_string(i);
        if (part.is_boolean()) {
          if (!part.get<bool>()) return Unsupported(part_path, "the schema false accepts nothing");
          continue;
        }
        if (!part.is_object()) return Unsupported(part_path, "a schema must be an object");
        for (const auto& [k, v] : part.items()) {
          if (k == "required" && v.is_array() && merged.contains(k) && merged[k].is_array()) {
            for (const json& name : v) merged[k].push_back(name);
          } else if (k == "properties" && v.is_object() && merged.contains(k) &&
                     merged[k].is_object()) {
            for (const auto& [name, sub] : v.items()) {
              if (merged[k].contains(name) && merged[k][name] != sub) {
                return Unsupported(
                    part_path,
                    "property \"" + name + "\" is given two schemas, which is not supported");
              }
              merged[k][name] = sub;
            }
          } else if (merged.contains(k) && merged[k] != v && kAnnotations.count(k) == 0) {
            return Unsupported(part_path, "keyword \"" + k +
                                              "\" is set differently by two parts of allOf, which "
                                              "is not supported");
          } else {
            merged[k] = v;
          }
        }
      }
      return Visit(merged, path, depth + 1);
    }
    std::vector<std::string> types;
    if (auto t = schema.find("type"); t != schema.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array()) {
        for (const json& each : *t) {
          if (!each.is_string()) return Unsupported(path + "/type", "must name types");
          types.push_back(each.get<std::string>());
        }
      } else {
        return Unsupported(path + "/type", "must be a string or an array of strings");
      }
    } else {
      // No type: a type's keywords constrain only instances of that type,
      // so generate just the types they name (any value when none does).
      static const std::vector<std::pair<std::string, std::vector<std::string>>> kByType = {
          {"object", {"properties", "required", "additionalProperties"}},
          {"array", {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}},
          {"string", {"minLength", "maxLength", "pattern", "format"}},
          {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
      };
      for (const auto& [type, keys] : kByType) {
        for (const std::string& k : keys) {
          if (schema.contains(k)) {
            types.push_back(type == "number" ? "integer" : type);
            break;
          }
        }
      }
      if (types.empty()) return std::string("json-value");
    }
    std::string out = types.size() > 1 ? "(" : "";
    for (size_t i = 0; i < types.size(); ++i) {
      ASSIGN_OR_RETURN(std::string one, Typed(schema, types[i], path, depth));
      out += (i ? " | " : "") + one;
    }
    return types.size() > 1 ? out + ")" : out;
  }

  // True when no instance can match two of `alternatives`: each names one
  // type and no two types overlap (integer lies within number), or each is
  // a const or enum and no value repeats.
  static bool Disjoint(const json& alternatives) {
    std::set<std::string> types;
    std::set<std::string> values;
    bool by_type = true, by_value = true;
    for (const json& alt : alternatives) {
      if (!alt.is_object()) return false;
      auto t = alt.find("type");
      if (t == alt.end() || !t->is_string() || !types.insert(t->get<std::string>()).second) {
        by_type = false;
      }
      if (auto c = alt.find("const"); c != alt.end()) {
        if (!values.insert(c->dump()).second) by_value = false;
      } else if (auto e = alt.find("enum"); e != alt.end() && e->is_array()) {
        for (const json& v : *e) {
          if (!values.insert(v.dump()).second) by_value = false;
        }
      } else {
        by_value = false;
      }
    }
    if (types.count("integer") && types.count("number")) by_type = false;
    return by_type || by_value;
  }

  StatusOr<std::string> Ref(const json& ref, const std::string& path, int depth) {
    if (!ref.is_string()) return Unsupported(path + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const json* node = nullptr;
    if (target == "#") {
      node = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (target.rfind(p, 0) != 0) continue;
        const std::string name = target.substr(p.size());
        auto defs = root_.find(p.substr(2, p.size() - 3));
        if (defs == root_.end() || !defs->is_object()) continue;
        if (auto def = defs->find(name); def != defs->end()) node = &*def;
      }
    }
    if (node == nullptr) {
      return Unsupported(path + "/$ref", "\"" + target +
                                             "\" is not a local definition (#, #/$defs/NAME or "
                                             "#/definitions/NAME)");
    }
    // Name the rule before visiting, so recursive schemas refer to it.
    const std::string name = prefix_ + "ref" + std::to_string(refs_.size());
    refs_[target] = name;
    ASSIGN_OR_RETURN(std::string body, Visit(*node, target, depth + 1));
    rules_[name] = body;
    return name;
  }

  StatusOr<std::string> Typed(const json& schema, const std::string& type, const std::string& path,
                              int depth) {
    if (type == "string") return String(schema, path);
    if (type == "integer") return Integer(schema, path);
    if (type == "number") {
      for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (schema.contains(key)) {
          return Unsupported(path,
                             std::string("keyword \"") + key + "\" is supported for integers only");
        }
      }
      return std::string("json-number");
    }
    if (type == "boolean") return std::string("json-boolean");
    if (type == "null") return std::string("json-null");
    if (type == "object") return Object(schema, path, depth);
    if (type == "array") return Array(schema, path, depth);
    return Unsupported(path + "/type", "unknown type \"" + type + "\"");
  }

  StatusOr<std::string> String(const json& schema, const std::string& path) {
    int64_t min = 0, max = -1;
    if (auto v = schema.find("minLength"); v != schema.end()) {
      if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
        return Unsupported(path + "/minLength", "must be a non-negative integer");
      }
      min = v->get<int64_t>();
    }
    if (auto v = schema.find("maxLength"); v != schema.end()) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0) {
        return Unsupported(path + "/maxLength", "must be a non-negative integer");
      }
      max = v->get<int64_t>();
    }
    if (min > 10000 || max > 10000 || (max >= 0 && max < min)) {
      return Unsupported(path, "string length bounds must be at most 10000 and min <= max");
    }
    if (auto p = schema.find("pattern"); p != schema.end()) {
      if (!p->is_string()) return Unsupported(path + "/pattern", "must be a string");
      if (min > 0 || max >= 0) {
        return Unsupported(path, "pattern together with minLength/maxLength is not supported");
      }
      auto expr = RegexExpression(p->get<std::string>(), /*json_string=*/true);
      if (!expr.ok()) return expr.status().WithPrefix("JSON schema at " + path + "/pattern");
      return NewRule("\"\\\"\" " + *expr + " \"\\\"\"");
    }
    if (auto f = schema.find("format"); f != schema.end()) {
      const std::string format = f->is_string() ? f->get<std::string>() : "";
      static const std::map<std::string, std::string> kFormats = {
          {"date",
           R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))"},
          {"time",
           R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
          {"uuid",
           R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
          {"ipv4",
           R"(("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9]) ("." ("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9])){3})"},
      };
      std::string body;
      if (format == "date-time") {
        body = kFormats.at("date") + " \"T\" " + kFormats.at("time");
      } else if (auto it = kFormats.find(format); it != kFormats.end()) {
        body = it->second;
      } else {
        return Unsupported(path + "/format", "format " + f->dump() +
                                                 " is not supported (date, time, date-time, uuid, "
                                                 "ipv4)");
      }
      return NewRule("\"\\\"\" " + body + " \"\\\"\"");
    }
    if (min == 0 && max < 0) return std::string("json-string");
    std::string count =
        "{" + std::to_string(min) + "," + (max >= 0 ? std::to_string(max) : "") + "}";
    return NewRule("\"\\\"\" json-char" + count + " \"\\\"\"");
  }

  StatusOr<std::string> Integer(const json& schema, const std::string& path) {
    std::optional<int64_t> lo, hi;
    auto bound = [&](const char* key, int64_t shift, bool lower) -> Status {
      auto v = schema.find(key);
      if (v == schema.end()) return Status::Ok();
      if (!v->is_number()) return Unsupported(path + "/" + key, "must be a number");
      const double d = v->get<double>();
      int64_t b = lower ? static_cast<int64_t>(std::ceil(d)) : static_cast<int64_t>(std::floor(d));
      if (shift != 0 && static_cast<double>(b) == d) b += shift;
      if (lower) {
        lo = lo ? std::max(*lo, b) : b;
      } else {
        hi = hi ? std::min(*hi, b) : b;
      }
      return Status::Ok();
    };
    RETURN_IF_ERROR(bound("minimum", 0, true));
    RETURN_IF_ERROR(bound("exclusiveMinimum", 1, true));
    RETURN_IF_ERROR(bound("maximum", 0, false));
    RETURN_IF_ERROR(bound("exclusiveMaximum", -1, false));
    if (lo && hi) {
      if (*hi < *lo) return Unsupported(path, "the integer range is empty");
      if (*hi - *lo <= 1000) {
        std::string out = "(";
        for (int64_t v = *lo; v <= *hi; ++v)
          out += (v > *lo ? " | \"" : "\"") + std::to_string(v) + "\"";
        return out + ")";
      }
    }
    if (hi)
      return Unsupported(path, "a maximum is supported only with a minimum at most 1000 below it");
    if (!lo) return std::string("json-int");
    if (*lo == 0) return NewRule(R"("0" | [1-9] [0-9]{0,15})");
    if (*lo == 1) return NewRule(R"([1-9] [0-9]{0,15})");
    return Unsupported(path, "a minimum other than 0 or 1 is supported only with a maximum");
  }

  StatusOr<std::string> Object(const json& schema, const std::string& path, int depth) {
    std::set<std::string> required;
    if (auto r = schema.find("required"); r != schema.end()) {
      if (!r->is_array()) return Unsupported(path + "/required", "must be an array of names");
      for (const json& name : *r) {
        if (!name.is_string()) return Unsupported(path + "/required", "must be an array of names");
        required.insert(name.get<std::string>());
      }
    }
    const json properties = schema.value("properties", json::object());
    if (!properties.is_object()) return Unsupported(path + "/properties", "must be an object");
    for (const std::string& name : required) {
      if (!properties.contains(name)) {
        return Unsupported(path + "/required",
                           "\"" + name + "\" is required but not in properties");
      }
    }
    if (properties.empty()) {
      auto extra = schema.find("additionalProperties");
      if (extra == schema.end() || (extra->is_boolean() && extra->get<bool>())) {
        return std::string("json-object");
      }
      if (extra->is_boolean()) return NewRule(R"("{" ws "}")");  // nothing allowed
      ASSIGN_OR_RETURN(std::string value, Visit(*extra, path + "/additionalProperties", depth + 1));
      return NewRule("\"{\" ws (json-string ws \":\" ws " + value +
                     " (ws \",\" ws json-string ws \":\" ws " + value + ")*)? ws \"}\"");
    }
    // Required properties first, then optional, each in key order.
    std::vector<std::string> pairs_required, pairs_optional;
    for (const auto& [name, sub] : properties.items()) {
      if (sub.is_boolean() && !sub.get<bool>()) {  // the property must be absent
        if (required.count(name)) {
          return Unsupported(path + "/properties/" + name, "is required but its schema is false");
        }
        continue;
      }
      ASSIGN_OR_RETURN(std::string value, Visit(sub, path + "/properties/" + name, depth + 1));
      const std::string pair = GbnfLiteral(json(name).dump()) + " ws \":\" ws " + value;
      (required.count(name) ? pairs_required : pairs_optional).push_back(pair);
    }
    std::string body = "\"{\" ws ";
    for (size_t i = 0; i < pairs_required.size(); ++i) {
      body += (i ? " ws \",\" ws " : "") + pairs_required[i];
    }
    // Optional ones: each may be left out; a comma goes before every pair
    // that follows another.
    std::string tail;  // the optional pairs from k on, after at least one pair
    for (size_t k = pairs_optional.size(); k-- > 0;) {
      tail = NewRule("(ws \",\" ws " + pairs_optional[k] + ")? " + (tail.empty() ? "" : tail));
      if (tail.empty()) tail = "\"\"";
    }
    if (!pairs_required.empty()) {
      if (!tail.empty()) body += " " + tail;
    } else if (!pairs_optional.empty()) {
      // No pair yet: the first one written has no comma.
      std::string first = "(";
      std::string rest;
      std::vector<std::string> rests(pairs_optional.size() + 1);
      for (size_t k = pairs_optional.size(); k-- > 0;) {
        rests[k] = NewRule("(ws \",\" ws " + pairs_optional[k] + ")? " + rests[k + 1]);
      }
      for (size_t k = 0; k < pairs_optional.size(); ++k) {
        first += (k ? " | " : "") + pairs_optional[k] + " " + rests[k + 1];
      }
      body += first + ")?";
    }
    body += " ws \"}\"";
    return NewRule(body);
  }

  StatusOr<std::string> Array(const json& schema, const std::string& path, int depth) {
    int64_t min = 0, max = -1;
    if (auto v = schema.find("minItems"); v != schema.end()) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0) {
        return Unsupported(path + "/minItems", "must be a non-negative integer");
      }
      min = v->get<int64_t>();
    }
    if (auto v = schema.find("maxItems"); v != schema.end()) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0) {
        return Unsupported(path + "/maxItems", "must be a non-negative integer");
      }
      max = v->get<int64_t>();
    }
    if (min > 1000 || max > 1000 || (max >= 0 && max < min)) {
      return Unsupported(path, "array length bounds must be at most 1000 and min <= max");
    }
    std::vector<std::string> prefix;
    if (auto p = schema.find("prefixItems"); p != schema.end()) {
      if (!p->is_array()) return Unsupported(path + "/prefixItems", "must be an array");
      for (size_t i = 0; i < p->size(); ++i) {
        ASSIGN_OR_RETURN(std::string item,
                         Visit((*p)[i], path + "/prefixItems/" + std::to_string(i), depth + 1));
        prefix.push_back(item);
      }
    }
    std::string item = "json-value";
    bool more = true;
    if (auto it = schema.find("items"); it != schema.end()) {
      if (it->is_boolean() && !it->get<bool>()) {
        more = false;
      } else if (it->is_array()) {
        // Draft 7 tuples: items is the prefix, additionalItems the rest.
        if (!prefix.empty()) return Unsupported(path, "both prefixItems and an items array");
        for (size_t i = 0; i < it->size(); ++i) {
          ASSIGN_OR_RETURN(std::string one,
                           Visit((*it)[i], path + "/items/" + std::to_string(i), depth + 1));
          prefix.push_back(one);
        }
        if (auto extra = schema.find("additionalItems"); extra != schema.end()) {
          if (extra->is_boolean()) {
            more = extra->get<bool>();
          } else {
            ASSIGN_OR_RETURN(item, Visit(*extra, path + "/additionalItems", depth + 1));
          }
        }
      } else {
        ASSIGN_OR_RETURN(item, Visit(*it, path + "/items", depth + 1));
      }
    }
    if (!prefix.empty()) {
      // The prefix items in order, all of them, then more items if allowed.
      if (static_cast<int64_t>(prefix.size()) < min ||
          (max >= 0 && static_cast<int64_t>(prefix.size()) > max)) {
        return Unsupported(path, "prefixItems with minItems/maxItems other than their count");
      }
      std::string body = "\"[\" ws ";
      for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " ws \",\" ws " : "") + prefix[i];
      if (more && max < 0) body += " (ws \",\" ws " + item + ")*";
      return NewRule(body + " ws \"]\"");
    }
    if (!more) return NewRule(R"("[" ws "]")");
    std::string body = "\"[\" ws ";
    if (min == 0) {
      if (max == 0) return NewRule(R"("[" ws "]")");
      const std::string rest =
          max < 0 ? "(ws \",\" ws " + item + ")*"
                  : "(ws \",\" ws " + item + "){0," + std::to_string(max - 1) + "}";
      body += "(" + item + " " + rest + ")?";
    } else {
      body += item;
      const std::string count =
          "{" + std::to_string(min - 1) + "," + (max >= 0 ? std::to_string(max - 1) : "") + "}";
      body += " (ws \",\" ws " + item + ")" + count;
    }
    return NewRule(body + " ws \"]\"");
  }

  const json& root_;
  const std::string prefix_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
};

}  // namespace

StatusOr<std::string> JsonSchemaRules(const json& schema, const std::string& entry) {
  Converter converter(schema, entry + "-");
  return converter.Run(entry);
}

std::string JsonPrimitivesGbnf() { return kPrimitives; }

StatusOr<std::string> JsonSchemaToGbnf(const json& schema) {
  ASSIGN_OR_RETURN(std::string rules, JsonSchemaRules(schema, "root"));
  std::string gbnf = rules + kPrimitives;
  // Refuse here what the grammar parser would (deep repetition and the like).
  auto parsed = Grammar::ParseGbnf(gbnf);
  if (!parsed.ok()) return parsed.status().WithPrefix("JSON schema");
  return gbnf;
}

std::string JsonObjectGbnf() { return std::string("root ::= json-object\n") + kPrimitives; }

}  // namespace kvmesh::grammar
