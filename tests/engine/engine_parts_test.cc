// Smaller engine parts: key material, the ninja writer, the GPU allocator.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/gpu_allocator.h"
#include "engine/key_material.h"
#include "engine/ninja_writer.h"
#include "engine/staleness.h"
#include "engine/target_graph.h"
#include "rules/registry.h"
#include "tests/support/memory_filesystem.h"

namespace bm::engine {
namespace {

TEST(KeyMaterialTest, SerializeParseRoundTripAndKeyDependsOnEveryField) {
  KeyMaterial m;
  m.fields = {{"rule", "exec", "1"}, {"param", "lbs", "4"}, {"input", "data", ""}};
  Result<KeyMaterial> back = KeyMaterial::Parse(m.Serialize());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, m);
  EXPECT_EQ(m.Serialize().rfind("benchmake-spec 2 ", 0), 0u);
  KeyMaterial other = m;
  other.SetInput("data", "ab");
  EXPECT_NE(other.Key(), m.Key());
  Result<KeyMaterial> newer = KeyMaterial::Parse("benchmake-spec 3\n");
  EXPECT_EQ(newer.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(newer.status().message().find("benchmake clean"), std::string::npos);
}

// The material of an exec target as release 0.1.0 kept it in its NAME.last (version 1, no
// seal), with the key 0.1.0 computed for it (the same .last's "key", and its cache record's
// name): still read, to the same key, written back sealed: an upgrade keeps every cached key.
TEST(KeyMaterialTest, AVersionOneSpecIsReadToTheKeyItHadAndWrittenSealed) {
  const std::string v1 =
      "benchmake-spec 1\n"
      R"(["tool","benchmake","benchmake-key-1"])"
      "\n"
      R"(["rule","exec","1"])"
      "\n"
      R"(["param","command","[\"sh\",\"-c\",\"tr -cs 'A-Za-z' '\\\\n' < {in.corpus}/corpus.txt | sort | uniq -c | sort -rn > {out}/words.txt\"]"])"
      "\n"
      R"(["param","device","\"\""])"
      "\n"
      R"(["param","env","{}"])"
      "\n"
      R"(["param","excluded_warmup_steps","-1"])"
      "\n"
      R"(["param","gas","0"])"
      "\n"
      R"(["param","gpus","0"])"
      "\n"
      R"(["param","hidden","0"])"
      "\n"
      R"(["param","inputs","[\"corpus\"]"])"
      "\n"
      R"(["param","layers","0"])"
      "\n"
      R"(["param","layout","\"\""])"
      "\n"
      R"(["param","lbs","0"])"
      "\n"
      R"(["param","log","\"\""])"
      "\n"
      R"(["param","log_format","\"none\""])"
      "\n"
      R"(["param","metrics","\"\""])"
      "\n"
      R"(["param","model","\"\""])"
      "\n"
      R"(["param","mpe","0"])"
      "\n"
      R"(["param","outputs","[\"words.txt\"]"])"
      "\n"
      R"(["param","overrides","{}"])"
      "\n"
      R"(["param","parameters","0.0"])"
      "\n"
      R"(["param","peak_tflops","0.0"])"
      "\n"
      R"(["param","precision","\"\""])"
      "\n"
      R"(["param","shell","false"])"
      "\n"
      R"(["input","corpus","45d2771ffddaac505e35534c1a07cc1e"])"
      "\n";
  Result<KeyMaterial> m = KeyMaterial::Parse(v1);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->Key().Hex(), "270ea1aa3c937a5fe8312d88cc5f348c");
  const std::string sealed = m->Serialize();
  EXPECT_EQ(sealed.rfind("benchmake-spec 2 ", 0), 0u);
  Result<KeyMaterial> back = KeyMaterial::Parse(sealed);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->Key().Hex(), "270ea1aa3c937a5fe8312d88cc5f348c");
  // A bit flipped in a value still parses as a spec, of another key: the seal refuses it.
  std::string flipped = sealed;
  flipped[flipped.find("\"gas\",\"0\"") + 7] ^= 0x01;  // gas "1"
  Result<KeyMaterial> damaged = KeyMaterial::Parse(flipped);
  EXPECT_EQ(damaged.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(damaged.status().message().find("do not match its digest"), std::string::npos)
      << damaged.status().message();
}

TEST(KeyMaterialTest, DiffNamesEachChangedField) {
  KeyMaterial a, b;
  a.fields = {{"param", "lbs", "4"},
              {"input", "owt.tokens", "aa"},
              {"platform", "facts", R"({"gpu_name":"H100"})"},
              {"source", "x.txt", "11"}};
  b.fields = {{"param", "lbs", "8"},
              {"input", "owt.tokens", "bb"},
              {"platform", "facts", R"({"gpu_name":"H200"})"},
              {"source", "x.txt", "22"},
              {"param", "seed", "1"}};
  std::vector<std::string> d = DiffKeyMaterial(a, b);
  std::vector<std::string> want = {"param lbs: 4 → 8", "input owt.tokens: output changed",
                                   "platform: H100 → H200", "source x.txt: content changed",
                                   "param seed: added (1)"};
  EXPECT_EQ(d, want);
}

// A long value is cut where it changed, 20 characters before the first
// difference: `explain` of a command edited past its first 57 characters
// printed the same 57 characters on both sides of the arrow.
TEST(KeyMaterialTest, DiffOfLongValuesShowsWhereTheyDiffer) {
  std::string head = R"(["sh","-c","echo data >> /tmp/engine-semantics-runs.log; cp {in.src/)";
  KeyMaterial a, b;
  a.fields = {{"param", "command", head + R"(raw.txt} {out}/data.txt"])"}};
  b.fields = {{"param", "command", head + R"(raw2.txt} {out}/data.txt"])"}};
  std::vector<std::string> want = {
      R"(param command: ....log; cp {in.src/raw.txt} {out}/data.txt"] → ....log; cp {in.src/raw2.txt} {out}/data.txt"])"};
  EXPECT_EQ(DiffKeyMaterial(a, b), want);
}

TEST(StalenessTest, VerdictsAndReasons) {
  TargetFacts f;
  f.material.fields = {{"param", "lbs", "4"}};
  Staleness s = Assess(f);
  EXPECT_EQ(s.verdict, Verdict::kRun);
  EXPECT_EQ(s.reasons, (std::vector<std::string>{"never built in this workspace", "not in cache"}));
  f.last = LastBuild{};
  f.last->key = f.material.Key();
  f.last->material = f.material;
  f.outputs_present = true;
  EXPECT_EQ(Assess(f).verdict, Verdict::kUpToDate);
  EXPECT_TRUE(Assess(f).reasons.empty());
  f.outputs_present = false;
  f.in_cache = true;
  s = Assess(f);
  EXPECT_EQ(s.verdict, Verdict::kRestore);
  EXPECT_EQ(s.reasons, (std::vector<std::string>{"outputs missing from out/", "in cache"}));
  f.pending = {"data"};
  EXPECT_EQ(Assess(f).verdict, Verdict::kPending);
}

TEST(NinjaWriterTest, EdgesPoolsAndRestat) {
  testing::MemoryFilesystem fs;
  fs.Write("/ws/BENCHFILE.toml", R"(
[target.a]
rule = "exec"
command = ["x"]
progress = true
[target.b]
rule = "exec"
command = ["x"]
inputs = ["a"]
gpus = 2
)");
  RuleRegistry rules;
  rules::RegisterBuiltinRules(rules);
  Result<TargetGraph> g = LoadGraph(fs, rules, "/ws/BENCHFILE.toml");
  ASSERT_TRUE(g.ok()) << g.status().message();
  NinjaOptions o;
  o.step_command = NinjaShellQuote("/opt/bench make/benchmake$1") + " step";
  o.gpu_pool_depth = 4;
  std::string n = RenderNinja(*g, o);
  EXPECT_NE(n.find("command = '/opt/bench make/benchmake$$1' step -- $target\n"), std::string::npos)
      << n;
  EXPECT_NE(n.find("restat = 1"), std::string::npos);
  EXPECT_NE(n.find("pool gpu\n  depth = 4"), std::string::npos);
  EXPECT_NE(n.find("build t/a.out: step t/a.spec\n  target = a\n  pool = console\n"),
            std::string::npos)
      << n;
  EXPECT_NE(n.find("build t/b.out: step t/b.spec | t/a.out\n  target = b\n  pool = gpu\n"),
            std::string::npos)
      << n;
}

TEST(GpuAllocatorTest, HandsOutDistinctDevicesAcrossHolders) {
  std::string dir = ::testing::TempDir() + "/gpu_locks_" + std::to_string(::getpid());
  Result<GpuLease> a = AcquireGpus(1, 2, dir, nullptr);
  ASSERT_TRUE(a.ok());
  Result<GpuLease> b = AcquireGpus(1, 2, dir, nullptr);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->VisibleDevices(), "0");
  EXPECT_EQ(b->VisibleDevices(), "1");
  EXPECT_FALSE(AcquireGpus(3, 2, dir, nullptr).ok());
  *a = GpuLease();  // release device 0
  Result<GpuLease> c = AcquireGpus(1, 2, dir, nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->VisibleDevices(), "0");
}

// A 4-GPU step and two 2-GPU steps on 4 GPUs, each taking its GPUs again and
// again (threads: every AcquireGpus opens its own lock files, as processes
// do), the 2-GPU ones until the 4-GPU one is done: every lease is whole, no
// GPU is ever in two leases, nobody deadlocks, and the 4-GPU step is not
// starved by 2-GPU steps slipping into every gap.
TEST(GpuAllocatorTest, WholeLeasesNeverOverlapNorDeadlockNorStarve) {
  std::string dir = ::testing::TempDir() + "/gpu_locks_mixed_" + std::to_string(::getpid());
  std::atomic<int> in_use[4] = {};
  std::atomic<int> overlaps{0}, errors{0}, finished{0};
  std::atomic<bool> big_done{false};
  auto hold = [&](int count) {
    Result<GpuLease> lease = AcquireGpus(count, 4, dir, nullptr);
    if (!lease.ok() || static_cast<int>(lease->ids.size()) != count) {
      ++errors;
      return false;
    }
    for (int id : lease->ids)
      if (in_use[id].fetch_add(1) != 0) ++overlaps;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int id : lease->ids) in_use[id].fetch_sub(1);
    return true;
  };
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    for (int i = 0; i < 3 && hold(4); ++i) {
    }
    big_done = true;
    ++finished;
  });
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!big_done && hold(2)) {
      }
      ++finished;
    });
  }
  auto start = std::chrono::steady_clock::now();
  while (finished.load() < 3) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) {
      ADD_FAILURE() << "deadlock or starvation: " << finished.load()
                    << " of 3 holders finished in 20 s";
      std::_Exit(1);  // the stuck threads cannot be joined
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

}  // namespace
}  // namespace bm::engine
