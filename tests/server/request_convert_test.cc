// server/request_convert.h: a list binding on the wire (BindingValue.int_list)
// becomes the frontend's kIntList, and one past the bound is InvalidArgument
// naming the binding before anything is copied.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/request_convert.h"

namespace kiln::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BindingFromProto, IntListAndTuple) {
  kiln::v1::BindingValue v;
  v.mutable_int_list()->add_values(37);
  v.mutable_int_list()->add_values(64);
  absl::StatusOr<frontend::BindingValue> b = BindingFromProto("sizes", v);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->kind, frontend::BindingValue::Kind::kIntList);
  EXPECT_THAT(b->ivals, ElementsAre(37, 64));
  EXPECT_FALSE(b->tuple);
  v.mutable_int_list()->set_tuple(true);
  b = BindingFromProto("sizes", v);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->tuple);
}

TEST(BindingFromProto, ListPastTheBound) {
  kiln::v1::BindingValue v;
  for (size_t i = 0; i <= frontend::kMaxBindingListItems; ++i) v.mutable_int_list()->add_values(1);
  absl::StatusOr<frontend::BindingValue> b = BindingFromProto("sizes", v);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(b.status().message()), HasSubstr("binding 'sizes': a list of 4097"));
}

} // namespace
} // namespace kiln::server
