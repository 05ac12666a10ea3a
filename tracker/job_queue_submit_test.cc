// JobQueue's submissions (tracker/README.md, "Validation at the door" and "Sizes"): malformed
// trials named by field, idempotence per request id, job ids, concurrent copies, user operators,
// the largest board of a kind, and per-client caps.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(JobQueueTest, MalformedSubmissionsNameTheFieldAndStoreNothing) {
  struct Case {
    std::string want;
    std::function<void(v1::Trial*)> mutate;
  };
  std::vector<Case> cases = {
      {"trials[0].board_kind: required", [](v1::Trial* t) { t->clear_board_kind(); }},
      {"trials[0].board_kind: unknown board kind", [](v1::Trial* t) { t->set_board_kind("nope"); }},
      {"trials[0].op: set template_op or c_source", [](v1::Trial* t) { t->clear_op(); }},
      {"trials[0].args[1].shape[0]", [](v1::Trial* t) { t->mutable_args(1)->set_shape(0, -4); }},
      {"trials[0].args[0].dtype", [](v1::Trial* t) { t->mutable_args(0)->set_dtype("int8"); }},
      {"trials[0].args: more than 16",
       [](v1::Trial* t) {
         for (int k = 0; k < 17; ++k) t->add_args()->add_shape(1);
       }},
      // The catalog: operator, version, knobs, shapes.
      {"trials[0].op.template_op.op: unknown operator \"nope\"",
       [](v1::Trial* t) { t->mutable_op()->mutable_template_op()->set_op("nope"); }},
      {"trials[0].op.template_op.version: operator matmul has no version \"0123\"",
       [](v1::Trial* t) { t->mutable_op()->mutable_template_op()->set_version("0123"); }},
      {"trials[0].op.template_op.knobs: matmul has no knob \"tile_q\"",
       [](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_q"] = "1";
       }},
      {"trials[0].op.template_op.knobs: matmul knob tile_m = \"3\" is not one of",
       [](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = "3";
       }},
      {"trials[0].args[1].shape[0]: K is 8 in args[0], 4 here",
       [](v1::Trial* t) { t->mutable_args(1)->set_shape(0, 4); }},
      {"trials[0].args[2].shape: matmul's C has 2 dims",
       [](v1::Trial* t) { t->mutable_args(2)->add_shape(8); }},
      {"trials[0].args: matmul takes 3 arguments, the trial gives 2",
       [](v1::Trial* t) { t->mutable_args()->RemoveLast(); }},
      // Pins some registered board of the kind must satisfy.
      {"trials[0].board_id: no board \"b9\" is registered",
       [](v1::Trial* t) { t->set_board_id("b9"); }},
      {"trials[0].board_id: board s1 is of kind stm32, not host",
       [](v1::Trial* t) { t->set_board_id("s1"); }},
      {"trials[0].labels: no registered board of kind host has fpu=yes",
       [](v1::Trial* t) { (*t->mutable_labels())["fpu"] = "yes"; }},
      {"trials[0].labels: board b1 does not have fpu=yes",
       [](v1::Trial* t) {
         t->set_board_id("b1");
         (*t->mutable_labels())["fpu"] = "yes";
       }},
      // Sizes the board kind can hold (b1 reports 64 KiB).
      {"trials[0].args: the arguments take 3145728 bytes; the largest board of kind host holds "
       "65536",
       [](v1::Trial* t) {
         for (int a = 0; a < 3; ++a) {
           t->mutable_args(a)->set_shape(0, 512);
           t->mutable_args(a)->set_shape(1, 512);
         }
       }},
      // One-off C sources.
      {"trials[0].op.reference_function: required to check the outputs",
       [](v1::Trial* t) {
         t->mutable_op()->set_c_source("int f;");
         t->mutable_op()->set_entry_function("f");
         t->set_check_outputs(true);
       }},
      {"trials[0].args: a C source trial names its arguments",
       [](v1::Trial* t) {
         t->mutable_op()->set_c_source("int f;");
         t->mutable_op()->set_entry_function("f");
         t->clear_args();
       }},
      {"trials[0].measure.repeat", [](v1::Trial* t) { t->mutable_measure()->set_repeat(5000); }},
      {"trials[0].priority", [](v1::Trial* t) { t->set_priority(1000); }},
      {"trials[0].op.entry_function: required with c_source",
       [](v1::Trial* t) { t->mutable_op()->set_c_source("int x;"); }},
  };
  v1::Register reg = MakeAgent("a", {"b1"});
  reg.mutable_boards(0)->set_memory_bytes(64 * 1024);
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("s", {"s1"}, "stm32")).ok());
  for (const Case& c : cases) {
    v1::Trial t = MakeTrial();
    c.mutate(&t);
    auto ids = queue_->Submit("c1", "bad", {t});
    EXPECT_TRUE(absl::IsInvalidArgument(ids.status())) << c.want;
    EXPECT_NE(ids.status().message().find(c.want), absl::string_view::npos) << ids.status();
  }
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("", "r", {MakeTrial()}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "", {MakeTrial()}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "r", {}).status()));
  // A bad trial anywhere in a batch rejects the whole batch.
  v1::Trial bad = MakeTrial();
  bad.set_priority(-1);
  auto ids = queue_->Submit("c1", "mixed", {MakeTrial(), bad});
  EXPECT_NE(ids.status().message().find("trials[1].priority"), absl::string_view::npos);
  JobFilter all;
  EXPECT_TRUE(queue_->List(all)->empty());
}

TEST_F(JobQueueTest, SubmissionIsIdempotentPerRequestId) {
  auto first = Submit({MakeTrial(), MakeTrial()}, "c1", "same");
  auto again = Submit({MakeTrial(), MakeTrial()}, "c1", "same");
  EXPECT_EQ(first, again);
  // The stored trial names the version it resolved; a retry naming it is the same submission.
  v1::Trial versioned = MakeTrial();
  versioned.mutable_op()->mutable_template_op()->set_version(
      queue_->GetJob(first[0])->trial().op().template_op().version());
  ASSERT_EQ(versioned.op().template_op().version().size(), 16u);
  EXPECT_EQ(Submit({versioned, MakeTrial()}, "c1", "same"), first);
  // The same id with other trials is a mistake, refused, and stores nothing.
  auto more = queue_->Submit("c1", "same", {MakeTrial(), MakeTrial(), MakeTrial()});
  EXPECT_EQ(more.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(more.status().message().find("it had 2 trials, this one 3"), absl::string_view::npos)
      << more.status();
  v1::Trial other = MakeTrial();
  (*other.mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = "16";
  auto changed = queue_->Submit("c1", "same", {MakeTrial(), other});
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(changed.status().message().find("trials[1] differs"), absl::string_view::npos)
      << changed.status();
  EXPECT_EQ(queue_->List(JobFilter())->size(), 2u);
  auto other_client = Submit({MakeTrial()}, "c2", "same");
  EXPECT_NE(other_client[0], first[0]);
}

TEST_F(JobQueueTest, JobIdsAreShortDistinctOrderedAndRandom) {
  std::vector<v1::Trial> trials(500, MakeTrial());
  std::vector<std::string> ids = Submit(trials, "c1", "ids");
  ASSERT_EQ(ids.size(), trials.size());
  std::set<std::string> seen;
  std::set<char> last_digits;
  for (const std::string& id : ids) {
    // "j-" + 13 base-32 digits: 15 characters, kept inside std::string (no allocation per copy).
    EXPECT_EQ(id.size(), 15u) << id;
    EXPECT_EQ(id.rfind("j-", 0), 0u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdefghijklmnopqrstuv", 2), std::string::npos) << id;
    EXPECT_LE(id.size(), std::string().capacity()) << "no longer kept inline";
    seen.insert(id);
    last_digits.insert(id.back());
  }
  EXPECT_EQ(seen.size(), ids.size());
  EXPECT_GT(last_digits.size(), 16u) << "not random in the low bits";
  // In submission order (the store's index of job ids grows at its end), across submissions too.
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  std::vector<std::string> more = Submit({MakeTrial()}, "c2", "ids");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_LT(ids.back(), more[0]);
}

// The same submission sent by several threads at once (a client retrying while its first call is
// still being stored) is taken once: every call gets the same job ids.
TEST_F(JobQueueTest, ConcurrentCopiesOfASubmissionAreTakenOnce) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int round = 0; round < 20; ++round) {
    const std::string request = absl::StrCat("same-", round);
    std::vector<std::vector<std::string>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto ids = queue_->Submit("c1", request, {MakeTrial(), MakeTrial()});
        ASSERT_TRUE(ids.ok()) << ids.status();
        got[t] = *ids;
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 1; t < 4; ++t) EXPECT_EQ(got[t], got[0]) << "round " << round;
  }
  // 20 submissions of 2 jobs: 40 jobs, each stored once.
  JobFilter all;
  all.client_id = "c1";
  auto listed = queue_->List(all);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 40u);
  EXPECT_TRUE(queue_->Stats().store_problem.empty());
}

// Large submissions are taken a chunk at a time (JobQueue::kAcceptChunk trials per hold of the
// queue's lock), but one submission at a time: submissions sent at once each get consecutive
// sequence numbers (job ids in order, nothing of another submission between them), stored in that
// order — a client paging the jobs by sequence number meanwhile misses none — while a board keeps
// taking work.
TEST_F(JobQueueTest, SubmissionsSentAtOnceEachGetConsecutiveJobs) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  constexpr int kTrials = 3 * 64 + 5;  // more than one chunk
  std::map<std::string, int> submission_of;
  std::atomic<bool> done{false}, submitted{false};
  // Pages through the stored jobs by sequence number as they come: after_seq, as clients do.
  std::set<std::string> paged;
  int64_t after_seq = 0;
  auto page = [&] {
    JobFilter next;
    next.after_seq = after_seq;
    auto jobs = queue_->List(next);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    for (const StoredJob& stored : *jobs) {
      paged.insert(stored.job.job_id());
      after_seq = stored.seq;
      // A job a client can list, it can cancel: refused only once it has finished (not while
      // its submission is still being queued).
      if (paged.size() % 7 == 0) {
        absl::StatusOr<v1::Job> cancelled = queue_->Cancel(stored.job.job_id());
        if (!cancelled.ok()) {
          EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kFailedPrecondition)
              << cancelled.status();
          absl::StatusOr<v1::Job> now = queue_->GetJob(stored.job.job_id());
          ASSERT_TRUE(now.ok()) << now.status();
          EXPECT_TRUE(now->state() == v1::DONE || now->state() == v1::CANCELLED_STATE)
              << stored.job.job_id() << " refused a cancel as finished, but is "
              << v1::JobState_Name(now->state());
        }
      }
    }
  };
  std::thread pager([&] {
    while (!submitted.load()) page();
  });
  std::thread board([&] {
    while (!done.load()) {
      std::vector<Offer> offers = queue_->TakeOffers("a");
      if (offers.empty()) absl::SleepFor(absl::Milliseconds(1));
      for (const Offer& o : offers) {
        v1::JobResult r;
        r.set_job_id(o.offer.job_id());
        r.set_attempt(o.offer.attempt());
        r.mutable_result()->add_costs_s(1e-3);
        ASSERT_TRUE(queue_->ReportResult("a", r).ok());
      }
    }
  });
  for (int round = 0; round < 5; ++round) {
    std::vector<std::vector<std::string>> got(3);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        auto ids = queue_->Submit(absl::StrCat("c", t), absl::StrCat("r", round),
                                  std::vector<v1::Trial>(kTrials, MakeTrial()));
        ASSERT_TRUE(ids.ok()) << ids.status();
        got[t] = *ids;
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < 3; ++t) {
      ASSERT_EQ(got[t].size(), static_cast<size_t>(kTrials));
      EXPECT_TRUE(std::is_sorted(got[t].begin(), got[t].end()));
      for (const std::string& id : got[t]) submission_of[id] = round * 3 + t;
    }
  }
  submitted = true;
  pager.join();
  for (size_t before = 0; before != paged.size();) {
    before = paged.size();
    page();
  }
  done = true;
  board.join();
  for (const auto& [id, submission] : submission_of) {
    EXPECT_EQ(paged.count(id), 1u) << "paging by sequence number missed " << id;
  }
  // In id order (sequence order), each submission's jobs form one run.
  std::set<int> ended;
  int current = -1;
  for (const auto& [id, submission] : submission_of) {
    if (submission == current) continue;
    EXPECT_EQ(ended.count(submission), 0u)
        << "submission " << submission << " interleaved at " << id;
    if (current >= 0) ended.insert(current);
    current = submission;
  }
  EXPECT_EQ(submission_of.size(), static_cast<size_t>(15 * kTrials));
  ASSERT_TRUE(queue_->CheckIndexes().ok());
  EXPECT_TRUE(queue_->Stats().store_problem.empty());
}

constexpr char kGemv[] = R"json({
  "op": "gemv", "entry": "gemv", "reference_entry": "gemv_reference", "sources": ["gemv.c"],
  "dims": {"M": 4, "K": 8},
  "args": [{"name": "A", "shape": ["M", "K"]}, {"name": "x", "shape": ["K"]},
           {"name": "y", "shape": ["M"]}],
  "knobs": [{"name": "unroll", "values": [1, 2, 4]}, {"name": "acc", "values": [1, 2]}]
})json";

v1::Operator Gemv(const std::string& source) {
  v1::Operator op;
  google::protobuf::util::JsonParseOptions options;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(kGemv, op.mutable_spec(), options).ok());
  op.set_name("gemv");
  (*op.mutable_files())["gemv.c"] = source;
  return op;
}

TEST_F(JobQueueTest, AnOfferCarriesItsJobsTrialOnTheWireAsIfCopied) {
  using google::protobuf::util::MessageDifferencer;
  v1::Trial t = MakeTrial();
  t.set_seed(42);
  (*t.mutable_op()->mutable_template_op()->mutable_knobs())["tile_n"] = "8";
  t.mutable_measure()->set_repeat(3);
  auto ids = Submit({t});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  absl::StatusOr<v1::Job> job = queue_->GetJob(ids[0]);
  ASSERT_TRUE(job.ok()) << job.status();
  // Every attempt's offer (the second after the first's infrastructure failure), as an agent
  // parses it, equals the offer with the trial copied in.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    std::vector<Offer> offers = queue_->TakeOffers("a");
    ASSERT_EQ(offers.size(), 1u);
    v1::JobOffer offer = std::move(offers[0].offer);
    v1::JobOffer copied = offer;
    v1::JobOffer::GetReflection()->MutableUnknownFields(&copied)->Clear();
    *copied.mutable_trial() = job->trial();
    v1::JobOffer parsed;
    ASSERT_TRUE(parsed.ParseFromString(offer.SerializeAsString()));
    EXPECT_TRUE(v1::JobOffer::GetReflection()->GetUnknownFields(parsed).empty());
    EXPECT_EQ(parsed.attempt(), attempt);
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, copied)) << parsed.DebugString();
    // Within a TrackerMessage too (how the stream writes it).
    v1::TrackerMessage message;
    *message.mutable_offer() = std::move(offer);
    v1::TrackerMessage read;
    ASSERT_TRUE(read.ParseFromString(message.SerializeAsString()));
    EXPECT_TRUE(MessageDifferencer::Equals(read.offer().trial(), job->trial()));
    ASSERT_TRUE(queue_->ReportResult("a", Failed(parsed, v1::SESSION_ERROR)).ok());
  }
}

TEST_F(JobQueueTest, UserOperatorsAreVersionedCheckedAndTravelWithTheirOffers) {
  auto v1_added = queue_->catalog()->Add(Gemv("/* v1 */"), {}, clock_.Now());
  ASSERT_TRUE(v1_added.ok()) << v1_added.status();
  EXPECT_TRUE(v1_added->created);
  EXPECT_FALSE(
      queue_->catalog()->Add(Gemv("/* v1 */"), {}, clock_.Now())->created);  // same content
  v1::Trial t;
  t.set_board_kind("host");
  t.mutable_op()->mutable_template_op()->set_op("gemv");
  (*t.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = "4";
  auto first = Submit({t});
  // A new version: old jobs keep theirs, new ones get it.
  auto v2_added = queue_->catalog()->Add(Gemv("/* v2 */"), {}, clock_.Now());
  ASSERT_TRUE(v2_added.ok());
  EXPECT_NE(v2_added->op.version(), v1_added->op.version());
  auto second = Submit({t});
  EXPECT_EQ(queue_->GetJob(first[0])->trial().op().template_op().version(), v1_added->op.version());
  EXPECT_EQ(queue_->GetJob(second[0])->trial().op().template_op().version(),
            v2_added->op.version());
  // Asking for the old version by name still works.
  v1::Trial old = t;
  old.mutable_op()->mutable_template_op()->set_version(v1_added->op.version());
  Submit({old});
  // Knobs and shapes are checked against the user's op like a built-in's.
  v1::Trial bad = t;
  (*bad.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = "3";
  EXPECT_NE(queue_->Submit("c1", "bad1", {bad})
                .status()
                .message()
                .find("gemv knob unroll = \"3\" is not one of 1, 2, 4"),
            absl::string_view::npos);
  bad = t;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 8}, {9}, {4}}) {
    v1::ArgSpec* a = bad.add_args();
    for (int64_t d : shape) a->add_shape(d);
  }
  EXPECT_NE(queue_->Submit("c1", "bad2", {bad})
                .status()
                .message()
                .find("trials[0].args[1].shape[0]: K is 8 in args[0], 9 here"),
            absl::string_view::npos);
  // The offer carries the version's sources for the agent to build.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  EXPECT_EQ(o.job_id(), first[0]);
  EXPECT_EQ(o.operator_().version(), v1_added->op.version());
  EXPECT_EQ(o.operator_().files().at("gemv.c"), "/* v1 */");
  // Built-ins need no sources: every firmware has them.
  Submit({MakeTrial()});
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(TakeOne("a"))).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(TakeOne("a"))).ok());
  v1::JobOffer builtin = TakeOne("a");
  EXPECT_EQ(builtin.trial().op().template_op().op(), "matmul");
  EXPECT_FALSE(builtin.has_operator_());
  // The catalog survives a restart.
  Restart();
  EXPECT_EQ(queue_->catalog()->List("gemv", true).size(), 2u);
  EXPECT_EQ(queue_->catalog()->Get("gemv", "")->version(), v2_added->op.version());
  EXPECT_EQ(queue_->catalog()->List("", false).size(), 4u);  // add, conv2d, gemv, matmul
}

TEST_F(JobQueueTest, ARetiredVersionRunsNoNewTrialButItsQueuedJobsRun) {
  auto v1_added = queue_->catalog()->Add(Gemv("/* v1 */"), {}, clock_.Now());
  auto v2_added = queue_->catalog()->Add(Gemv("/* v2 */"), {}, clock_.Now());
  ASSERT_TRUE(v1_added.ok() && v2_added.ok());
  v1::Trial t;
  t.set_board_kind("host");
  t.mutable_op()->mutable_template_op()->set_op("gemv");
  auto queued = Submit({t}, "c1", "before");  // v2, queued before it is retired
  ASSERT_TRUE(queue_->catalog()->Retire("gemv", v2_added->op.version(), {}).ok());
  // A retry of that submission is answered with its ids, even naming the version now retired
  // (the trials' checks, made before the queue's lock, do not apply to a retry).
  EXPECT_EQ(Submit({t}, "c1", "before"), queued);
  v1::Trial retried = t;
  retried.mutable_op()->mutable_template_op()->set_version(v2_added->op.version());
  EXPECT_EQ(Submit({retried}, "c1", "before"), queued);
  auto after = Submit({t});
  EXPECT_EQ(queue_->GetJob(after[0])->trial().op().template_op().version(), v1_added->op.version());
  v1::Trial named = t;
  named.mutable_op()->mutable_template_op()->set_version(v2_added->op.version());
  absl::Status refused = queue_->Submit("c1", "retired", {named}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("trials[0].op.template_op.version: operator gemv version " +
                                   v2_added->op.version() + " is retired"),
            absl::string_view::npos)
      << refused;
  // The job queued before still runs its version, sources and all.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  EXPECT_EQ(o.job_id(), queued[0]);
  EXPECT_EQ(o.operator_().version(), v2_added->op.version());
  EXPECT_EQ(o.operator_().files().at("gemv.c"), "/* v2 */");
}

// The size check reads each kind's boards' memory from an index kept as boards register again
// (with more or less memory, or as another kind) and across a restart.
TEST_F(JobQueueTest, TheLargestBoardOfAKindFollowsRegistrationsAndRestarts) {
  v1::Trial big = MakeTrial();  // three 256x256 float32 arguments: 786,432 bytes
  for (int a = 0; a < 3; ++a) {
    big.mutable_args(a)->set_shape(0, 256);
    big.mutable_args(a)->set_shape(1, 256);
  }
  auto agent = [](const std::string& id, const std::string& board, int64_t memory,
                  const std::string& kind = "host") {
    v1::Register r = MakeAgent(id, {board}, kind);
    r.mutable_boards(0)->set_memory_bytes(memory);
    return r;
  };
  auto submit = [&](const std::string& request) {
    return queue_->Submit("c1", request, {big}).status();
  };
  ASSERT_TRUE(queue_->RegisterAgent(agent("a", "b1", 64 << 10)).ok());
  ASSERT_TRUE(queue_->RegisterAgent(agent("b", "b2", 1 << 20)).ok());
  EXPECT_TRUE(submit("r1").ok());                                        // b2 holds it
  ASSERT_TRUE(queue_->RegisterAgent(agent("b", "b2", 512 << 10)).ok());  // b2 now says less
  absl::Status refused = submit("r2");
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find("the largest board of kind host holds 524288"),
            absl::string_view::npos)
      << refused;
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", "b3", 2 << 20, "stm32")).ok());  // another kind
  EXPECT_TRUE(absl::IsInvalidArgument(submit("r3")));
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", "b3", 2 << 20)).ok());  // b3 becomes a host board
  EXPECT_TRUE(submit("r4").ok());
  Restart();
  EXPECT_TRUE(submit("r5").ok());  // b3 stored with its kind and memory
  ASSERT_TRUE(queue_->RegisterAgent(agent("d", "b4", 0)).ok());  // says nothing: no size check
  for (int a = 0; a < 3; ++a) {  // 12 MiB: more than any board says it holds
    big.mutable_args(a)->set_shape(0, 1024);
    big.mutable_args(a)->set_shape(1, 1024);
  }
  EXPECT_TRUE(submit("r6").ok()) << submit("r6");
}

// A board's core (BoardRegistration.cpu) is listed and stored with it. A kind is one core: a
// registration naming another core than a board of the kind a connected agent serves is refused,
// as is one whose own boards of a kind disagree or whose core is not a -mcpu name; an offline
// board's core does not keep a rebased kind out, and a board that names none (an older agent) is
// never refused for it.
TEST_F(JobQueueTest, ABoardsCoreIsListedStoredAndOnePerKind) {
  auto agent = [](const std::string& id, const std::vector<std::string>& boards,
                  const std::string& cpu, const std::string& kind = "stm32") {
    v1::Register r = MakeAgent(id, boards, kind);
    for (v1::BoardRegistration& b : *r.mutable_boards()) b.set_cpu(cpu);
    return r;
  };
  auto core_of = [&](const std::string& board) {
    for (const v1::Board& b : queue_->Boards("")) {
      if (b.board_id() == board) return b.cpu();
    }
    return std::string("(not listed)");
  };
  ASSERT_TRUE(queue_->RegisterAgent(agent("a", {"h1"}, "", "host")).ok());
  ASSERT_TRUE(queue_->RegisterAgent(agent("b", {"s1", "s2"}, "cortex-m4")).ok());
  EXPECT_EQ(core_of("h1"), "");
  EXPECT_EQ(core_of("s1"), "cortex-m4");

  absl::Status other = queue_->RegisterAgent(agent("c", {"s3"}, "cortex-m3"));
  EXPECT_TRUE(absl::IsFailedPrecondition(other)) << other;
  EXPECT_NE(other.message().find("board kind stm32: this agent's boards are a cortex-m3, board s"),
            absl::string_view::npos)
      << other;
  EXPECT_EQ(core_of("s3"), "(not listed)");
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", {"s3"}, "")).ok());  // says nothing: not refused
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", {"s3"}, "cortex-m4")).ok());

  v1::Register mixed = agent("d", {"s4", "s5"}, "cortex-m4");
  mixed.mutable_boards(1)->set_cpu("cortex-m7");
  absl::Status own = queue_->RegisterAgent(mixed);
  EXPECT_TRUE(absl::IsInvalidArgument(own)) << own;
  EXPECT_NE(own.message().find("register.boards[1].cpu: board s5 of kind stm32 is a cortex-m7, "
                               "board s4 of the same kind a cortex-m4"),
            absl::string_view::npos)
      << own;
  absl::Status bad = queue_->RegisterAgent(agent("d", {"s4"}, "Cortex M4"));
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_NE(bad.message().find("register.boards[0].cpu: \"Cortex M4\" is not a core"),
            absl::string_view::npos)
      << bad;

  // Stored: listed after a restart. No agent is connected then: a kind rebased on another core
  // registers, and the old boards, coming back, are the ones refused.
  Restart();
  EXPECT_EQ(core_of("s1"), "cortex-m4");
  ASSERT_TRUE(queue_->RegisterAgent(agent("e", {"s6"}, "cortex-m7")).ok());
  EXPECT_TRUE(
      absl::IsFailedPrecondition(queue_->RegisterAgent(agent("b", {"s1", "s2"}, "cortex-m4"))));
}

TEST_F(JobQueueTest, PerClientCapsAreResourceExhaustedAndStoreNothing) {
  JobQueueOptions options = Defaults();
  options.max_queued_per_client = 5;
  Restart(options);
  auto first = Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1", "first");
  auto over = queue_->Submit("c1", "over", {MakeTrial(), MakeTrial(), MakeTrial()});
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_NE(over.status().message().find(
                "client c1 has 3 unfinished jobs; 3 more would exceed max_queued_per_client (5)"),
            absl::string_view::npos)
      << over.status();
  EXPECT_EQ(queue_->List(JobFilter())->size(), 3u);
  // A retry of an accepted submission stores nothing, so the cap does not apply to it.
  EXPECT_EQ(Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1", "first"), first);
  // Another client has its own cap.
  Submit(std::vector<v1::Trial>(5, MakeTrial()), "c2");
  // Finished and cancelled jobs no longer count; running ones do.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_EQ(o.job_id(), first[0]);
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "still-over", {MakeTrial(), MakeTrial(), MakeTrial()}).status()));
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  ASSERT_TRUE(queue_->Cancel(first[1]).ok());
  Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1");  // 1 + 3 of 5
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "two-more", {MakeTrial(), MakeTrial()}).status()));
  // The count survives a restart (rebuilt from the unfinished jobs).
  Restart(options);
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "after-restart", {MakeTrial(), MakeTrial()}).status()));
  Submit({MakeTrial()}, "c1");

  // Bytes: the serialized trials of a client's unfinished jobs.
  auto source = [](size_t bytes) {
    v1::Trial t = MakeTrial();
    t.mutable_op()->set_c_source(std::string(bytes, ' '));
    t.mutable_op()->set_entry_function("f");
    return t;
  };
  options = Defaults();
  options.max_queued_bytes_per_client = 250 << 10;
  Restart(options);
  Submit({source(100 << 10)}, "c3");
  Submit({source(100 << 10)}, "c3");
  auto big = queue_->Submit("c3", "big", {source(100 << 10)});
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_NE(big.status().message().find("client c3 has "), absl::string_view::npos);
  EXPECT_NE(big.status().message().find("would exceed max_queued_bytes_per_client (256000 bytes)"),
            absl::string_view::npos)
      << big.status();
  JobFilter c3;
  c3.client_id = "c3";
  EXPECT_EQ(queue_->List(c3)->size(), 2u);
  Submit({source(10 << 10)}, "c3");  // what still fits
}

}  // namespace
}  // namespace benchfarm::tracker
