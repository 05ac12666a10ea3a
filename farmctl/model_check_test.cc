// check-model's comparison and table: rules matched by name, errors relative to the measured
// board, rules only one board ran listed, the largest error named.

#include "farmctl/model_check.h"

#include <string>

#include "gtest/gtest.h"

namespace benchfarm::farmctl {
namespace {

TEST(ModelCheck, MatchesRulesByNameAndMeasuresTheErrorAgainstTheRealBoard) {
  ModelCheck c = CompareMicrobenchmarks({{"alu", 11}, {"mla", 19}, {"vadd", 11}},
                                        {{"mla", 20}, {"alu", 11}, {"umull", 7}});
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].rule, "alu");
  EXPECT_DOUBLE_EQ(c.rows[0].error, 0);
  EXPECT_EQ(c.rows[1].rule, "mla");
  EXPECT_DOUBLE_EQ(c.rows[1].error, -0.05);
  EXPECT_EQ(c.only_model, std::vector<std::string>{"vadd"});
  EXPECT_EQ(c.only_measured, std::vector<std::string>{"umull"});
  const std::string table = FormatModelCheck(c, "qemu (cycles)", "serial /dev/ttyACM0", false);
  EXPECT_NE(table.find("mla"), std::string::npos);
  EXPECT_NE(table.find("-5.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("largest error: mla -5.0 %"), std::string::npos) << table;
  EXPECT_NE(table.find("only on the model's board: vadd"), std::string::npos);
  const std::string json = FormatModelCheck(c, "a", "b", true);
  EXPECT_NE(json.find("\"rule\": \"mla\", \"model_cycles\": 19, \"measured_cycles\": 20, "
                      "\"error\": -0.05"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace benchfarm::farmctl
