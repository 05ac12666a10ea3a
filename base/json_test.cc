#include "base/json.h"

#include <gtest/gtest.h>

namespace benchfarm::base {
namespace {

TEST(JsonQuote, Escapes) { EXPECT_EQ(JsonQuote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\""); }

}  // namespace
}  // namespace benchfarm::base
