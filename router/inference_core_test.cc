#include "router/inference_core.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <gtest/gtest.h>

namespace kvmesh::router {
namespace {

// A progress message names who serves the request and nothing else; any
// other field of GenerateTextResponse, present or added later, is content a
// front door must send on.
TEST(InferenceCoreTest, EveryOtherFieldMakesAMessageMoreThanProgress) {
  v1::GenerateTextResponse identity;
  identity.set_worker("w0");
  identity.set_request_id("r1");
  identity.set_choice(2);
  EXPECT_TRUE(IsProgress(identity));
  EXPECT_TRUE(IsProgress(v1::GenerateTextResponse()));
  const google::protobuf::Descriptor* d = v1::GenerateTextResponse::descriptor();
  int checked = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->name() == "worker" || f->name() == "request_id" || f->name() == "choice") continue;
    v1::GenerateTextResponse m = identity;
    const google::protobuf::Reflection* r = m.GetReflection();
    using FD = google::protobuf::FieldDescriptor;
    if (f->is_repeated()) {
      if (f->cpp_type() == FD::CPPTYPE_INT32) {
        r->AddInt32(&m, f, 7);
      } else if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
        r->AddMessage(&m, f);
      } else {
        ADD_FAILURE() << "repeated field " << f->name() << ": extend this test";
      }
    } else if (f->cpp_type() == FD::CPPTYPE_STRING) {
      r->SetString(&m, f, "x");
    } else if (f->cpp_type() == FD::CPPTYPE_ENUM) {
      r->SetEnumValue(&m, f, 1);
    } else if (f->cpp_type() == FD::CPPTYPE_MESSAGE) {
      r->MutableMessage(&m, f);
    } else if (f->cpp_type() == FD::CPPTYPE_UINT32) {
      r->SetUInt32(&m, f, 1);
    } else {
      ADD_FAILURE() << "field " << f->name() << ": extend this test";
    }
    EXPECT_FALSE(IsProgress(m)) << f->name() << " is content, not progress";
    ++checked;
  }
  EXPECT_EQ(checked, d->field_count() - 3);
}

}  // namespace
}  // namespace kvmesh::router
