// The running model (model.h) on blocks built from the assembler's encodings, driven the way
// QEMU's plugin drives it: taken and not-taken branches, a block QEMU cut short and re-ran,
// markers placing intervals exactly, flash lines through the ART accelerator, data reads.

#include "cyclemodel/model.h"

#include <memory>
#include <string>
#include <vector>

#include "cyclemodel/testing/assemble.h"
#include "gtest/gtest.h"

namespace benchfarm::cyclemodel {
namespace {

constexpr char kM4F[] = "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard";

struct BlockFree {
  void operator()(bf_block* b) const { bf_block_free(b); }
};
using Block = std::unique_ptr<bf_block, BlockFree>;

class Program {
 public:
  Program(const std::string& source, uint32_t origin, const char* core = "cortex-m4f")
      : core_(bf_core_find(core)) {
    absl::StatusOr<std::vector<AsmInsn>> a = Assemble(source, kM4F, origin);
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok()) insns_ = *a;
  }
  // A block of instructions [first, first + n), as QEMU would translate it.
  Block Make(size_t first, size_t n) {
    std::vector<uint32_t> addresses;
    std::vector<const uint8_t*> bytes;
    std::vector<uint8_t> sizes;
    for (size_t i = first; i < first + n; ++i) {
      addresses.push_back(insns_[i].address);
      bytes.push_back(insns_[i].bytes.data());
      sizes.push_back(static_cast<uint8_t>(insns_[i].bytes.size()));
    }
    return Block(bf_block_build(core_, memory_, static_cast<uint32_t>(n), addresses.data(),
                                bytes.data(), sizes.data()));
  }
  const bf_core* core() const { return core_; }
  uint32_t address(size_t i) const { return insns_[i].address; }
  // The memory the blocks made from now on are in (their lines' wait states).
  void SetMemory(const bf_memory* memory) { memory_ = memory; }

 private:
  const bf_core* core_;
  const bf_memory* memory_ = nullptr;
  std::vector<AsmInsn> insns_;
};

struct Intervals {
  std::vector<std::pair<uint64_t, uint64_t>> got;
  static void Record(void* ctx, uint64_t cycles, uint64_t instructions) {
    static_cast<Intervals*>(ctx)->got.push_back({cycles, instructions});
  }
};

TEST(Model, ALoopPaysTheRefillOnEveryTakenBranchButTheLast) {
  // Block A: ldr; adds; subs; bne A. Static: 2 + 1 + 1 + 1 = 5; taken: +1.
  Program p("1: ldr r1, [r2]\nadds r3, r3, r1\nsubs r0, #1\nbne 1b\nnop\n", 0x1000);
  Block loop = p.Make(0, 4), after = p.Make(4, 1);
  ASSERT_EQ(loop->static_cycles, 5u);
  bf_model m;
  bf_model_init(&m, p.core(), nullptr, nullptr, nullptr);
  for (int i = 0; i < 10; ++i) bf_model_enter(&m, loop.get());
  bf_model_enter(&m, after.get());  // not taken: falls through
  EXPECT_EQ(m.cycles, 10u * 5u + 9u * 1u + 1u);
  EXPECT_EQ(m.instructions, 41u);
}

TEST(Model, RegisterBranchesAndLoadedPcs) {
  // bx lr (refill 1) into a block; pop {pc} (refill 3) into a block.
  Program p("bx lr\nnop\npop {r4, pc}\nnop\n", 0x1000);
  Block bx = p.Make(0, 1), nop = p.Make(1, 1), pop = p.Make(2, 1), nop2 = p.Make(3, 1);
  bf_model m;
  bf_model_init(&m, p.core(), nullptr, nullptr, nullptr);
  bf_model_enter(&m, bx.get());
  bf_model_enter(&m, nop2.get());  // somewhere else: taken
  EXPECT_EQ(m.cycles, 1u + 1u + 1u);
  bf_model_enter(&m, pop.get());  // 1 + 2
  bf_model_enter(&m, nop.get());  // refill 3
  EXPECT_EQ(m.cycles, 3u + 3u + 3u + 1u);
}

TEST(Model, ABlockCutShortAndRerunIsChargedOnce) {
  // QEMU -icount re-executes the rest of a block after a device read as a new block.
  Program p("adds r2, #1\nldr r3, [r0]\nadds r2, r3\nadds r2, #1\nsubs r5, #1\nbne 1f\n1: nop\n",
            0x1000);
  Block whole = p.Make(0, 6), rest = p.Make(2, 4), next = p.Make(6, 1);
  bf_model m;
  bf_model_init(&m, p.core(), nullptr, nullptr, nullptr);
  bf_model_enter(&m, whole.get());
  bf_model_enter(&m, rest.get());
  bf_model_enter(&m, next.get());
  // Charged as if the block ran once: 1 + 2 + 1 + 1 + 1 + 1, then the nop (bne's target is the
  // next instruction: not a refill).
  EXPECT_EQ(m.instructions, 7u);
  EXPECT_EQ(m.cycles, whole->static_cycles + 1u);
}

TEST(Model, MarkersPlaceTheIntervalExactly) {
  // START as the second instruction of a block, STOP as the second of another.
  Program p(
      "adds r0, #1\n.inst.w 0xf3af80c0\nadds r0, #1\nb 1f\n"
      "1: ldr r1, [r2]\nadds r1, #1\nb 2f\n"
      "2: adds r3, #1\n.inst.w 0xf3af80c1\nadds r3, #1\nbx lr\n",
      0x1000);
  Block start = p.Make(0, 4), body = p.Make(4, 3), stop = p.Make(7, 4);
  ASSERT_EQ(start->nmarks, 1u);
  ASSERT_EQ(stop->nmarks, 1u);
  Intervals iv;
  bf_model m;
  bf_model_init(&m, p.core(), nullptr, Intervals::Record, &iv);
  bf_model_enter(&m, start.get());
  bf_model_mark(&m, &start->marks[0]);
  bf_model_enter(&m, body.get());
  bf_model_enter(&m, stop.get());
  bf_model_mark(&m, &stop->marks[0]);
  ASSERT_EQ(iv.got.size(), 1u);
  // After START: adds 1, b 1 (+1 refill); ldr 2, adds 1, b 1 (+1); adds 1; before STOP.
  EXPECT_EQ(iv.got[0].first, 1u + 1u + 1u + 2u + 1u + 1u + 1u + 1u);
  EXPECT_EQ(iv.got[0].second, 6u);
  // A STOP with no START is counted, not reported.
  bf_model_mark(&m, &stop->marks[0]);
  EXPECT_EQ(iv.got.size(), 1u);
  EXPECT_EQ(m.stray_stops, 1u);
}

TEST(Model, FlashLinesGoThroughTheArtAccelerator) {
  // A loop of one line in flash with 5 wait states: the first entry misses, the rest run free.
  Program p("1: subs r0, #1\nbne 1b\nnop\n", 0x08000000);
  bf_memory mem;
  bf_memory_init(&mem);
  char error[128];
  ASSERT_EQ(bf_memory_add_region(&mem, "0x08000000:0x80000:5:art", error, sizeof(error)), 0);
  p.SetMemory(&mem);
  Block loop = p.Make(0, 2);
  bf_model m;
  bf_model_init(&m, p.core(), &mem, nullptr, nullptr);
  for (int i = 0; i < 4; ++i) bf_model_enter(&m, loop.get());
  EXPECT_EQ(m.cycles, 5u + 4u * 2u + 3u * 1u);
  EXPECT_EQ(m.memory.counters.line_misses, 1u);
}

TEST(Model, DataReadsFromFlashStallOnADataCacheMiss) {
  Program p("nop\n", 0x1000);
  bf_memory mem;
  bf_memory_init(&mem);
  char error[128];
  ASSERT_EQ(bf_memory_add_region(&mem, "0x08000000:0x80000:5:art", error, sizeof(error)), 0);
  bf_model m;
  bf_model_init(&m, p.core(), &mem, nullptr, nullptr);
  bf_model_read(&m, 0x08000400);
  bf_model_read(&m, 0x08000404);
  bf_model_read(&m, 0x20000000);
  EXPECT_EQ(m.cycles, 5u);
}

TEST(Model, WhereQemuSplitsStraightLineCodeDoesNotChangeTheCount) {
  // Two independent loads pipeline (2 + 1) whether QEMU translated them as one block or two.
  Program p("ldr r0, [r1]\nldr r2, [r3]\nadds r4, #1\nbx lr\n", 0x1000);
  Block whole = p.Make(0, 4), head = p.Make(0, 1), tail = p.Make(1, 3);
  bf_model one, two;
  bf_model_init(&one, p.core(), nullptr, nullptr, nullptr);
  bf_model_init(&two, p.core(), nullptr, nullptr, nullptr);
  bf_model_enter(&one, whole.get());
  bf_model_enter(&two, head.get());
  bf_model_enter(&two, tail.get());
  EXPECT_EQ(one.cycles, 2u + 1u + 1u + 1u);
  EXPECT_EQ(two.cycles, one.cycles);
  EXPECT_EQ(two.instructions, one.instructions);
}

TEST(Model, ANarrowInstructionQemuReportsWideAtAPageEndIsTheNarrowOne) {
  // QEMU 7.2 appends the next halfword to a 16-bit instruction that ends a page.
  Program p("ldr r0, [r1]\nadds r2, #1\n", 0x13fc);
  const uint32_t addresses[] = {0x13fc};
  const uint8_t bytes[] = {0x08, 0x68, 0x01, 0x32};  // ldr r0, [r1] + the next halfword
  const uint8_t* ptrs[] = {bytes};
  const uint8_t sizes[] = {4};
  Block b(bf_block_build(p.core(), nullptr, 1, addresses, ptrs, sizes));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->unknown, 0u);
  EXPECT_EQ(b->first.op, BF_OP_LOAD);
  EXPECT_EQ(b->end, 0x13feu);
  EXPECT_EQ(b->static_cycles, 2u);
}

TEST(Model, UnknownInstructionsAreCountedAndCostOne) {
  Program p(".inst.w 0xee000a10\n.inst.w 0xfc000000\n", 0x1000);  // VMOV s0, r0; a coprocessor op
  Block b = p.Make(0, 2);
  EXPECT_EQ(b->unknown, 1u);
}

}  // namespace
}  // namespace benchfarm::cyclemodel
