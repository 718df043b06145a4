#include "common/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace kvmesh {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckPositive(int x) {
  if (x <= 0) return OutOfRangeError("not positive");
  return Status::Ok();
}

Status Both(int a, int b) {
  RETURN_IF_ERROR(CheckPositive(a));
  RETURN_IF_ERROR(CheckPositive(b));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrorsRender) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  Status s = NotFoundError("model.gguf: missing");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: model.gguf: missing");
  EXPECT_EQ(s.WithPrefix("loading").message(), "loading: model.gguf: missing");
}

TEST(StatusTest, StatusOrPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_TRUE(Both(1, 2).ok());
  EXPECT_EQ(Both(1, -2).code(), StatusCode::kOutOfRange);
}

TEST(StatusTest, StatusOrFromOkStatusIsAnError) {
  StatusOr<int> s = Status::Ok();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

TEST(StatusTest, StatusOrHoldsMoveOnly) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> v = std::move(p).value();
  EXPECT_EQ(*v, 7);
}

TEST(StatusDeathTest, ValueOnErrorAborts) {
  StatusOr<int> s = InternalError("boom");
  EXPECT_DEATH((void)s.value(), "boom");
}

}  // namespace
}  // namespace kvmesh
