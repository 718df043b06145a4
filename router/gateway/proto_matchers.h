// Test helper: compares a proto message with its expected text format.
#pragma once

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace kvmesh::router::gateway {

inline ::testing::AssertionResult ProtoEquals(const google::protobuf::Message& actual,
                                              const std::string& expected_text) {
  std::unique_ptr<google::protobuf::Message> expected(actual.New());
  if (!google::protobuf::TextFormat::ParseFromString(expected_text, expected.get())) {
    return ::testing::AssertionFailure() << "bad expected text: " << expected_text;
  }
  if (google::protobuf::util::MessageDifferencer::Equals(*expected, actual)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "actual: " << actual.ShortDebugString()
                                       << "\nexpected: " << expected->ShortDebugString();
}

}  // namespace kvmesh::router::gateway
