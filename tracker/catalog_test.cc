// The operator catalog on a real SQLite store: names owned by the client who first added them
// (issue 34: a second user's same-named operator became the latest and was measured in the first
// user's tune), admins, names from before owners, insecure trackers, per-client quotas, and files
// kept in the store rather than in memory.

#include "tracker/catalog.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/example_ops.h"
#include "tracker/sqlite_store.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

using ::testing::HasSubstr;

// deploy/examples/ops/gemv under `name`, with `source` as its gemv.c.
v1::Operator Op(const std::string& name, const std::string& source) {
  absl::StatusOr<v1::Operator> op =
      testing::ExampleGemv([&](const std::string&) { return source; });
  EXPECT_TRUE(op.ok()) << op.status();
  op->set_name(name);
  op->mutable_spec()->set_op(name);
  return *op;
}

CatalogCaller User(const std::string& name) {
  CatalogCaller c;
  c.client = name;
  c.authenticated = true;
  return c;
}

CatalogCaller Admin(const std::string& name) {
  CatalogCaller c = User(name);
  c.admin = true;
  return c;
}

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TestDir() + "/tracker.db";
    Open();
  }

  // A catalog as a (re)started tracker has it.
  void Open(CatalogOptions options = {}) {
    catalog_.reset();
    store_.reset();
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    catalog_ = std::make_unique<OperatorCatalog>(store_.get(), options);
    ASSERT_TRUE(catalog_->Load().ok());
  }

  std::string path_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<OperatorCatalog> catalog_;
};

TEST_F(CatalogTest, ANameBelongsToWhoFirstAddedItAndOnlyTheyAndAdminsAddVersions) {
  auto alice = catalog_->Add(Op("gemv", "/* alice v1 */"), User("alice"), kNow);
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(alice->op.owner(), "alice");
  EXPECT_EQ(alice->op.added_by(), "alice");

  // Mallory's gemv, new content or alice's own: refused, naming the owner; nothing changes.
  for (const char* source : {"/* impostor */", "/* alice v1 */"}) {
    auto mallory = catalog_->Add(Op("gemv", source), User("mallory"), kNow);
    ASSERT_FALSE(mallory.ok());
    EXPECT_EQ(mallory.status().code(), absl::StatusCode::kPermissionDenied) << mallory.status();
    EXPECT_THAT(mallory.status().message(), HasSubstr("operator gemv belongs to alice"));
  }
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), alice->op.version());

  // The owner adds versions; an admin may too (the name stays alice's).
  auto v2 = catalog_->Add(Op("gemv", "/* alice v2 */"), User("alice"), kNow);
  ASSERT_TRUE(v2.ok()) << v2.status();
  auto fix = catalog_->Add(Op("gemv", "/* admin's fix */"), Admin("root"), kNow);
  ASSERT_TRUE(fix.ok()) << fix.status();
  EXPECT_EQ(fix->op.owner(), "alice");
  EXPECT_EQ(fix->op.added_by(), "root");

  // Mallory's own name is hers.
  auto own = catalog_->Add(Op("gemv_fast", "/* mallory */"), User("mallory"), kNow);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->op.owner(), "mallory");

  // Listings say who owns each name and who added each version, after a restart too.
  Open();
  auto versions = catalog_->List("gemv", true);
  ASSERT_EQ(versions.size(), 3u);
  EXPECT_EQ(versions[0].added_by(), "alice");
  EXPECT_EQ(versions[1].added_by(), "alice");
  EXPECT_EQ(versions[2].added_by(), "root");
  for (const v1::Operator& v : versions) EXPECT_EQ(v.owner(), "alice");
  EXPECT_TRUE(versions[2].latest());
  EXPECT_EQ(catalog_->List("gemv_fast", false).at(0).owner(), "mallory");
  EXPECT_EQ(catalog_->Add(Op("gemv", "/* later */"), User("mallory"), kNow).status().code(),
            absl::StatusCode::kPermissionDenied);
  // Built-ins are nobody's to extend.
  EXPECT_EQ(catalog_->Add(Op("matmul", "/* x */"), Admin("root"), kNow).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CatalogTest, CompileOptionsOutsideTheAllowListAreRefusedAndNothingIsStored) {
  for (const char* option : {"-fplugin=evil.so", "@/etc/passwd", "-B/tmp", "-specs=x.specs",
                             "-wrapper", "-fprofile-use=/tmp/p"}) {
    v1::Operator op = Op("gemv", "/* options */");
    op.mutable_spec()->add_cflags(option);
    auto added = catalog_->Add(op, Admin("root"), kNow);  // admins too
    ASSERT_FALSE(added.ok()) << option;
    EXPECT_EQ(added.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(added.status().message(),
                HasSubstr(absl::StrCat("op.spec.cflags[0]: \"", option, "\" is refused: ")));
  }
  // A knob whose values are options: each value held to the same list.
  v1::Operator knob = Op("gemv", "/* options */");
  v1::Knob* opt = knob.mutable_spec()->add_knobs();
  opt->set_name("opt");
  opt->set_cflag(true);
  opt->add_values()->set_string_value("-O3");
  opt->add_values()->set_string_value("-Os -fplugin=x");
  auto added = catalog_->Add(knob, User("alice"), kNow);
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(added.status().message(),
              HasSubstr("op.spec.knobs[2].values[1]: \"-fplugin=x\" is refused: it loads a "
                        "compiler plugin"));
  EXPECT_EQ(catalog_->Find("gemv", ""), nullptr);
  EXPECT_TRUE(catalog_->List("gemv", true).empty());
  // Within the list: stored, the options part of the version.
  opt->mutable_values(1)->set_string_value("-Os");
  auto good = catalog_->Add(knob, User("alice"), kNow);
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(catalog_->Find("gemv", "")->spec().knobs(2).cflag());
  EXPECT_NE(good->op.version(), Op("gemv", "/* options */").version());
}

TEST_F(CatalogTest, ANameFromBeforeOwnersIsAdminsOnlyUntilGivenToSomeone) {
  // What an older tracker stored: a version, no owner.
  v1::Operator old = Op("gemv", "/* old */");
  old.set_version("00000000000000aa");
  ASSERT_TRUE(store_->InsertOperator(old).ok());
  Open();
  EXPECT_EQ(catalog_->Find("gemv", "")->owner(), "");
  auto alice = catalog_->Add(Op("gemv", "/* alice */"), User("alice"), kNow);
  ASSERT_EQ(alice.status().code(), absl::StatusCode::kPermissionDenied) << alice.status();
  EXPECT_THAT(alice.status().message(),
              AllOf(HasSubstr("gemv has no owner"), HasSubstr("farmctl op chown gemv alice")));
  auto given = catalog_->SetOwner("gemv", "alice");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->owner(), "alice");
  EXPECT_TRUE(catalog_->Add(Op("gemv", "/* alice */"), User("alice"), kNow).ok());
  Open();
  EXPECT_EQ(catalog_->List("gemv", false).at(0).owner(), "alice");
  EXPECT_EQ(catalog_->SetOwner("nope", "alice").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->SetOwner("matmul", "alice").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->SetOwner("gemv", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CatalogTest, AnInsecureTrackerHasNoOwners) {
  ASSERT_TRUE(catalog_->Add(Op("gemv", "/* 1 */"), CatalogCaller(), kNow).ok());
  auto again = catalog_->Add(Op("gemv", "/* 2 */"), CatalogCaller(), kNow);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->op.owner(), "");
  EXPECT_EQ(again->op.added_by(), "");
}

TEST_F(CatalogTest, EachClientAddsAtMostItsQuotaOfVersionsAndBytes) {
  CatalogOptions options;
  options.max_versions_per_client = 3;
  options.max_bytes_per_client = 1000;
  Open(options);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(catalog_->Add(Op("gemv", absl::StrCat("/* ", i, " */")), User("alice"), kNow).ok());
  }
  auto fourth = catalog_->Add(Op("gemv", "/* 3 */"), User("alice"), kNow);
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted) << fourth.status();
  EXPECT_THAT(fourth.status().message(), AllOf(HasSubstr("alice has added 3 operator versions"),
                                               HasSubstr("max_operator_versions_per_client (3)")));
  // Content already stored costs nothing.
  EXPECT_TRUE(catalog_->Add(Op("gemv", "/* 0 */"), User("alice"), kNow).ok());
  // Bytes: bob's 900-byte source fits, a second does not.
  const std::string big(900 - std::string("gemv.c").size(), 'x');  // 900 bytes with its name
  ASSERT_TRUE(catalog_->Add(Op("conv", big), User("bob"), kNow).ok());
  EXPECT_EQ(catalog_->UsageOf("bob").bytes, 900);
  auto more = catalog_->Add(Op("conv", big + "y"), User("bob"), kNow);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted) << more.status();
  EXPECT_THAT(more.status().message(), HasSubstr("max_operator_bytes_per_client (1000 bytes)"));
  // Admins are not limited; the counts survive a restart.
  EXPECT_TRUE(catalog_->Add(Op("gemv", "/* admin */"), Admin("root"), kNow).ok());
  Open(options);
  EXPECT_EQ(catalog_->UsageOf("alice").versions, 3);
  EXPECT_EQ(catalog_->UsageOf("bob").bytes, 900);
  EXPECT_EQ(catalog_->Add(Op("gemv", "/* 4 */"), User("alice"), kNow).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(CatalogTest, FilesStayInTheStoreAndAreReadThroughABoundedCache) {
  CatalogOptions options;
  options.cache_bytes = 1500;  // one of the two operators below at a time
  Open(options);
  const std::string a(1000, 'a'), b(1000, 'b');
  auto added_a = catalog_->Add(Op("op_a", a), User("alice"), kNow);
  auto added_b = catalog_->Add(Op("op_b", b), User("alice"), kNow);
  ASSERT_TRUE(added_a.ok() && added_b.ok());
  Open(options);
  // What the catalog keeps: no files, their size.
  std::shared_ptr<const v1::Operator> light = catalog_->Find("op_a", "");
  ASSERT_NE(light, nullptr);
  EXPECT_EQ(light->files_size(), 0);
  EXPECT_EQ(light->files_bytes(), 1006);
  for (const v1::Operator& op : catalog_->List("", true)) EXPECT_EQ(op.files_size(), 0);
  // Read when needed (an offer, GetOperator), alternately: each evicts the other.
  for (int round = 0; round < 3; ++round) {
    for (const auto& [name, content] : {std::pair{"op_a", a}, std::pair{"op_b", b}}) {
      auto full = catalog_->WithFiles(name, "");
      ASSERT_TRUE(full.ok()) << full.status();
      EXPECT_EQ((*full)->files().at("gemv.c"), content);
    }
  }
  auto got = catalog_->Get("op_b", added_b->op.version());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->files().at("gemv.c"), b);
  EXPECT_EQ(got->owner(), "alice");
  EXPECT_TRUE(got->latest());
  EXPECT_EQ(catalog_->WithFiles("op_b", "ffffffffffffffff").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->WithFiles("nope", "").status().code(), absl::StatusCode::kNotFound);
  // Built-ins have no files: every firmware carries them.
  auto matmul = catalog_->WithFiles("matmul", "");
  ASSERT_TRUE(matmul.ok());
  EXPECT_TRUE((*matmul)->builtin());
}

// Issue 36: a buggy v2 was added after v1; adding v1's source again left v2 the latest, so every
// trial naming no version kept measuring the bug.
TEST_F(CatalogTest, AddingAnEarlierSourceAgainMakesItTheLatestAgain) {
  auto v1 = catalog_->Add(Op("gemv", "/* v1 */"), User("alice"), kNow);
  auto v2 = catalog_->Add(Op("gemv", "/* v2, buggy */"), User("alice"), kNow);
  ASSERT_TRUE(v1.ok() && v2.ok());
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v2->op.version());
  auto again = catalog_->Add(Op("gemv", "/* v1 */"), User("alice"), kNow);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_TRUE(again->made_latest);
  EXPECT_TRUE(again->op.latest());
  EXPECT_EQ(again->op.version(), v1->op.version());
  EXPECT_TRUE(again->op.state().has_readded_at());
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v1->op.version());
  EXPECT_EQ(catalog_->ForNewTrial("gemv", "").value()->version(), v1->op.version());
  // Adding the latest again changes nothing; nobody else may bring an old version back.
  auto same = catalog_->Add(Op("gemv", "/* v1 */"), User("alice"), kNow);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->made_latest);
  EXPECT_EQ(catalog_->Add(Op("gemv", "/* v2, buggy */"), User("mallory"), kNow).status().code(),
            absl::StatusCode::kPermissionDenied);
  // It stays the latest across a restart (the order is stored), and the listing says so.
  Open();
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v1->op.version());
  std::vector<v1::Operator> versions = catalog_->List("gemv", true);
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].version(), v2->op.version());
  EXPECT_FALSE(versions[0].latest());
  EXPECT_EQ(versions[1].version(), v1->op.version());
  EXPECT_TRUE(versions[1].latest());
  EXPECT_EQ(catalog_->UsageOf("alice").versions, 2);  // adding again is no new version
  // A new version (at the same clock reading) is the latest after it, also after a restart.
  auto v3 = catalog_->Add(Op("gemv", "/* v3 */"), User("alice"), kNow);
  ASSERT_TRUE(v3.ok());
  Open();
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v3->op.version());
}

TEST_F(CatalogTest, ARetiredVersionIsHiddenFromNewTrialsAndKeptForOldOnes) {
  auto v1 = catalog_->Add(Op("gemv", "/* v1 */"), User("alice"), kNow);
  auto v2 = catalog_->Add(Op("gemv", "/* v2, buggy */"), User("alice"), kNow);
  ASSERT_TRUE(v1.ok() && v2.ok());
  // Only the owner (or an admin) retires; built-ins and unknown names cannot be.
  auto mallory = catalog_->Retire("gemv", "", User("mallory"));
  EXPECT_EQ(mallory.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(mallory.status().message(),
              HasSubstr("belongs to alice: only its owner (or an admin) may retire versions"));
  EXPECT_EQ(catalog_->Retire("matmul", "", Admin("root")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(catalog_->Retire("nope", "", Admin("root")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->Retire("gemv", "ffffffffffffffff", Admin("root")).status().code(),
            absl::StatusCode::kNotFound);

  // No version: the latest is retired, the one before it is the latest.
  auto retired = catalog_->Retire("gemv", "", User("alice"));
  ASSERT_TRUE(retired.ok()) << retired.status();
  EXPECT_EQ(retired->op.version(), v2->op.version());
  EXPECT_TRUE(retired->op.state().retired());
  EXPECT_FALSE(retired->op.latest());
  EXPECT_FALSE(retired->already);
  ASSERT_TRUE(retired->latest.has_value());
  EXPECT_EQ(retired->latest->version(), v1->op.version());
  EXPECT_EQ(catalog_->ForNewTrial("gemv", "").value()->version(), v1->op.version());
  auto named = catalog_->ForNewTrial("gemv", v2->op.version());
  EXPECT_EQ(named.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(named.status().message(),
              AllOf(HasSubstr("op.template_op.version: operator gemv version " + v2->op.version() +
                              " is retired"),
                    HasSubstr("the latest is " + v1->op.version())));
  // Jobs that ran it (or wait to) still find it, with its files; GetOperator shows it retired.
  EXPECT_NE(catalog_->Find("gemv", v2->op.version()), nullptr);
  auto files = catalog_->WithFiles("gemv", v2->op.version());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ((*files)->files().at("gemv.c"), "/* v2, buggy */");
  EXPECT_TRUE(catalog_->Get("gemv", v2->op.version())->state().retired());
  EXPECT_TRUE(catalog_->Retire("gemv", v2->op.version(), Admin("root"))->already);

  // Retired for good: across a restart.
  Open();
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v1->op.version());
  EXPECT_EQ(catalog_->List("gemv", false).at(0).version(), v1->op.version());

  // Every version retired: nothing for new trials, the listing keeps the name (marked).
  auto last = catalog_->Retire("gemv", "", Admin("root"));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_FALSE(last->latest.has_value());
  EXPECT_EQ(catalog_->Find("gemv", ""), nullptr);
  EXPECT_THAT(catalog_->ForNewTrial("gemv", "").status().message(),
              HasSubstr("op.template_op.op: every version of operator gemv is retired"));
  EXPECT_EQ(catalog_->Get("gemv", "").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(catalog_->Retire("gemv", "", User("alice")).status().code(),
            absl::StatusCode::kNotFound);
  std::vector<v1::Operator> listed = catalog_->List("gemv", false);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].state().retired());
  EXPECT_FALSE(listed[0].latest());

  // Adding its source again brings a version back, as the latest.
  auto back = catalog_->Add(Op("gemv", "/* v2, buggy */"), User("alice"), kNow);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->made_latest);
  EXPECT_FALSE(back->op.state().retired());
  Open();
  EXPECT_EQ(catalog_->Find("gemv", "")->version(), v2->op.version());
  EXPECT_TRUE(catalog_->Find("gemv", v1->op.version()) != nullptr);
  EXPECT_EQ(catalog_->ForNewTrial("gemv", v1->op.version()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace benchfarm::tracker
