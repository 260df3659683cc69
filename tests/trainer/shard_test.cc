// ModelShard (trainer/model/shard.h), ZeRO-3's kept units (trainer/dist/shard_plan.h) and the
// 1F1B schedule
// (trainer/dist/pipeline_schedule.h): the layer partition, the local shapes,
// the slice maps (whole -> shards -> whole is the identity, every element
// owned once), the refusals, and the schedule's order and link agreement.
#include "trainer/model/shard.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "trainer/dist/pipeline_schedule.h"
#include "trainer/dist/shard_plan.h"
#include "trainer/model/layout.h"

namespace bm::train {
namespace {

std::vector<int64_t> Shape(const ModelShard& s, const std::string& name) {
  const ParamTensor* t = s.layout().Find(name);
  EXPECT_NE(t, nullptr) << name;
  return t ? t->shape : std::vector<int64_t>{};
}

ModelShard Make(const ModelConfig& c, int tp, int t, int pp, int p) {
  Result<ModelShard> s = ModelShard::Make(c, {tp, t, pp, p});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

TEST(ShardTest, StagesCountTheEmbeddingAndTheHeadAsLayers) {
  // L = 2, PP = 2: items emb, l0 | l1, head.
  PipelineStage s0 = StageOf(2, 2, 0), s1 = StageOf(2, 2, 1);
  EXPECT_TRUE(s0.embeddings && !s0.head);
  EXPECT_EQ(s0.layer_begin, 0);
  EXPECT_EQ(s0.layer_end, 1);
  EXPECT_TRUE(!s1.embeddings && s1.head);
  EXPECT_EQ(s1.layer_begin, 1);
  EXPECT_EQ(s1.layer_end, 2);
  // L = 32, PP = 4 (34 items): 8, 9, 8, 9 items = emb + 7 | 9 | 8 | 8 + head.
  const int64_t want[4][2] = {{0, 7}, {7, 16}, {16, 24}, {24, 32}};
  for (int p = 0; p < 4; ++p) {
    PipelineStage s = StageOf(32, 4, p);
    EXPECT_EQ(s.layer_begin, want[p][0]) << p;
    EXPECT_EQ(s.layer_end, want[p][1]) << p;
  }
  // Every layer on exactly one stage, in order; stages differ by at most one item.
  for (int64_t layers : {1, 2, 3, 4, 7, 32, 40})
    for (int pp = 1; pp <= layers; ++pp) {
      int64_t next = 0, fewest = layers + 2, most = 0;
      for (int p = 0; p < pp; ++p) {
        PipelineStage s = StageOf(layers, pp, p);
        EXPECT_EQ(s.layer_begin, next) << layers << " " << pp << " " << p;
        EXPECT_EQ(s.embeddings, p == 0);
        EXPECT_EQ(s.head, p == pp - 1);
        next = s.layer_end;
        const int64_t items = s.layer_end - s.layer_begin + s.embeddings + s.head;
        fewest = std::min(fewest, items);
        most = std::max(most, items);
      }
      EXPECT_EQ(next, layers);
      EXPECT_LE(most - fewest, 1) << layers << " " << pp;
    }
}

TEST(ShardTest, RefusesWhatDoesNotSplit) {
  ModelConfig c = *Preset("llama-tiny");  // heads 4, kv_heads 2, ffn 160, layers 2
  EXPECT_TRUE(CheckModelParallel(c, 2, 2).ok());
  Status kv = CheckModelParallel(c, 4, 1);
  ASSERT_FALSE(kv.ok());
  EXPECT_EQ(kv.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(kv.message().find("kv_heads (2) is not divisible by 4"), std::string::npos)
      << kv.message();
  EXPECT_NE(CheckModelParallel(c, 3, 1).message().find("heads (4) is not divisible by 3"),
            std::string::npos);
  c.ffn_hidden = 161;
  EXPECT_NE(CheckModelParallel(c, 2, 1).message().find("ffn_hidden (161)"), std::string::npos);
  c = *Preset("llama-tiny");
  EXPECT_NE(CheckModelParallel(c, 1, 3).message().find("PP3"), std::string::npos);
  EXPECT_FALSE(ModelShard::Make(c, {4, 0, 1, 0}).ok());
  EXPECT_FALSE(ModelShard::Make(c, {2, 2, 1, 0}).ok());  // rank outside the layout
}

TEST(ShardTest, LocalShapesSplitHeadsFfnAndVocabulary) {
  ModelConfig c = *Preset("llama-tiny");  // V 512, C 64, NH 4, KVH 2, HS 16, F 160
  c.vocab = 11;                           // not a multiple of TP: padded to 12
  ModelShard s = Make(c, 2, 1, 2, 0);     // TP rank 1 of the first stage
  EXPECT_EQ(Shape(s, "model.embed_tokens.weight"), (std::vector<int64_t>{6, 64}));
  EXPECT_EQ(s.vocab_begin(), 6);
  EXPECT_EQ(s.vocab_real(), 5);
  EXPECT_EQ(Shape(s, "model.layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(Shape(s, "model.layers.0.self_attn.k_proj.weight"), (std::vector<int64_t>{16, 64}));
  EXPECT_EQ(Shape(s, "model.layers.0.self_attn.o_proj.weight"), (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(Shape(s, "model.layers.0.mlp.up_proj.weight"), (std::vector<int64_t>{80, 64}));
  EXPECT_EQ(Shape(s, "model.layers.0.mlp.down_proj.weight"), (std::vector<int64_t>{64, 80}));
  EXPECT_EQ(Shape(s, "model.layers.0.input_layernorm.weight"), (std::vector<int64_t>{64}));
  EXPECT_EQ(s.layout().Find("model.layers.1.input_layernorm.weight"), nullptr);  // stage 1's
  EXPECT_EQ(s.layout().Find("lm_head.weight"), nullptr);
  EXPECT_EQ(s.classifier(), nullptr);
  ModelShard last = Make(c, 2, 0, 2, 1);
  EXPECT_EQ(last.layout().units().size(), 2u);  // layer 1, final
  EXPECT_EQ(last.layout().units()[0].name, "layer 1");
  EXPECT_EQ(Shape(last, "lm_head.weight"), (std::vector<int64_t>{6, 64}));
  // GPT: the fused q|k|v and its bias; the last stage holds a copy of the tied wte.
  ModelConfig g = *Preset("gpt-tiny");  // C 64, NH 4, F 256
  ModelShard gl = Make(g, 2, 0, 2, 1);
  EXPECT_EQ(Shape(gl, "transformer.h.1.attn.c_attn.weight"), (std::vector<int64_t>{96, 64}));
  EXPECT_EQ(Shape(gl, "transformer.h.1.attn.c_attn.bias"), (std::vector<int64_t>{96}));
  EXPECT_EQ(Shape(gl, "transformer.h.1.attn.c_proj.bias"), (std::vector<int64_t>{64}));
  EXPECT_EQ(Shape(gl, "transformer.h.1.mlp.c_fc.weight"), (std::vector<int64_t>{128, 64}));
  ASSERT_NE(gl.classifier(), nullptr);
  EXPECT_EQ(gl.classifier()->name, "transformer.wte.weight");
  EXPECT_TRUE(gl.tied_copy(gl.layout().Index("transformer.wte.weight")));
  EXPECT_EQ(gl.layout().Find("transformer.wpe.weight"), nullptr);
  ModelShard gf = Make(g, 2, 0, 2, 0);
  EXPECT_FALSE(gf.tied_copy(gf.layout().Index("transformer.wte.weight")));
}

// Fills every element of the whole model with its own index: a slice map that
// moves anything to the wrong place shows.
void CheckRoundTrip(const ModelConfig& c, int tp, int pp) {
  SCOPED_TRACE(fmt::format("{} TP{} PP{}", c.preset, tp, pp));
  const ParamLayout whole(c);
  std::vector<float> full(whole.total());
  std::iota(full.begin(), full.end(), 1.0f);  // exact in fp32 below 2^24
  std::vector<float> back(full.size(), 0.0f);
  std::vector<int> owners(full.size(), 0);
  double counted = 0;
  for (int p = 0; p < pp; ++p) {
    for (int t = 0; t < tp; ++t) {
      ModelShard s = Make(c, tp, t, pp, p);
      std::vector<float> local(s.layout().total());
      s.Extract(full, local);
      // From a source, the same values, and the source is asked for the real elements only.
      std::vector<float> sourced(local.size(), -1.0f);
      int64_t asked = 0;
      s.Extract(
          [&](int64_t begin, std::span<float> out) {
            asked += static_cast<int64_t>(out.size());
            std::copy_n(full.begin() + begin, out.size(), out.begin());
          },
          sourced);
      EXPECT_EQ(sourced, local);
      EXPECT_EQ(asked, std::count_if(local.begin(), local.end(), [](float v) { return v != 0; }));
      // padding rows are zero; nothing else is
      for (const ParamTensor& lt : s.layout().tensors()) {
        const bool vocab = lt.name == "lm_head.weight" || lt.name.ends_with("wte.weight") ||
                           lt.name.ends_with("embed_tokens.weight");
        for (int64_t j = 0; j < lt.numel; ++j) {
          const bool padding = vocab && j / c.hidden >= s.vocab_real();
          ASSERT_EQ(local[lt.offset + j] == 0.0f, padding) << lt.name << " " << j;
        }
      }
      // The whole model again, and who wrote each element.
      std::vector<float> marks(local.size(), 1.0f), seen(full.size(), 0.0f);
      s.Place(local, back);
      s.Place(marks, seen);
      for (size_t i = 0; i < full.size(); ++i) owners[i] += seen[i] != 0.0f;
      for (auto [b, e] : s.OwnedRanges()) counted += static_cast<double>(e - b);
      // the owned ranges hold the real elements each owner places, plus padding rows
      for (const ParamTensor& lt : s.layout().tensors()) {
        const int i = s.layout().Index(lt.name);
        if (s.owns(i) && (lt.name.ends_with("wte.weight") ||
                          lt.name.ends_with("embed_tokens.weight") || lt.name == "lm_head.weight"))
          counted -= static_cast<double>((lt.shape[0] - s.vocab_real()) * c.hidden);
      }
    }
  }
  EXPECT_EQ(back, full);
  for (size_t i = 0; i < owners.size(); ++i) ASSERT_EQ(owners[i], 1) << "element " << i;
  EXPECT_EQ(counted, static_cast<double>(full.size()));  // the norm counts each parameter once
}

TEST(ShardTest, WholeToShardsToWholeIsTheIdentity) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    ModelConfig c = *Preset(preset);
    c.vocab = 13;  // padding on every TP > 1
    c.layers = 4;
    for (int tp : {1, 2}) {
      for (int pp : {1, 2, 3, 4}) CheckRoundTrip(c, tp, pp);
    }
  }
  ModelConfig gqa = *Preset("llama-tiny");
  gqa.heads = 8;
  gqa.kv_heads = 4;
  gqa.hidden = 64;
  CheckRoundTrip(gqa, 4, 2);
  ModelConfig tied = *Preset("llama-tiny");
  tied.tied_embeddings = true;
  CheckRoundTrip(tied, 2, 2);
}

// Blocking messages between the threads of one test: a send waits until its message is taken
// (as a rendezvous transport would), so an order that could deadlock fails within seconds.
class Mailbox {
 public:
  Status Send(const std::string& group, int from, int to, const float* data, int64_t count) {
    std::unique_lock lock(mu_);
    auto msg = std::make_shared<Message>(Message{std::vector<float>(data, data + count), false});
    boxes_[{group, from, to}].push_back(msg);
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return msg->taken; }))
      return Errorf(ErrorCode::kInternal, "{}: {} -> {} never taken", group, from, to);
    return Status::Ok();
  }
  Status Recv(const std::string& group, int from, int to, float* data, int64_t count) {
    std::unique_lock lock(mu_);
    auto& box = boxes_[{group, from, to}];
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !box.empty(); }))
      return Errorf(ErrorCode::kInternal, "{}: {} -> {} never sent", group, from, to);
    std::shared_ptr<Message> msg = box.front();
    box.pop_front();
    if (static_cast<int64_t>(msg->data.size()) != count)
      return Errorf(ErrorCode::kInternal, "{}: {} -> {}: {} floats, expected {}", group, from, to,
                    msg->data.size(), count);
    std::copy(msg->data.begin(), msg->data.end(), data);
    msg->taken = true;
    cv_.notify_all();
    return Status::Ok();
  }
  ShardLink Link(const std::string& group, int rank) {
    ShardLink link;
    link.send = [this, group, rank](const float* d, int64_t n, int peer) {
      return Send(group, rank, peer, d, n);
    };
    link.recv = [this, group, rank](float* d, int64_t n, int peer) {
      return Recv(group, peer, rank, d, n);
    };
    return link;
  }

 private:
  struct Message {
    std::vector<float> data;
    bool taken;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<std::string, int, int>, std::deque<std::shared_ptr<Message>>> boxes_;
};

// Every shard, a thread each, gathered onto the first rank: the whole model there, exactly;
// nothing asked of the others; a buffer on another rank refused.
void CheckGatherToFirst(const ModelConfig& c, int tp, int pp) {
  SCOPED_TRACE(fmt::format("{} TP{} PP{}", c.preset, tp, pp));
  const ParamLayout whole_layout(c);
  std::vector<float> full(whole_layout.total());
  std::iota(full.begin(), full.end(), 1.0f);
  std::vector<float> gathered(full.size(), 0.0f);
  Mailbox mail;
  std::vector<Status> results(static_cast<size_t>(tp * pp), Status::Ok());
  std::vector<std::thread> threads;
  for (int p = 0; p < pp; ++p)
    for (int t = 0; t < tp; ++t)
      threads.emplace_back([&, t, p] {
        ModelShard s = Make(c, tp, t, pp, p);
        std::vector<float> local(s.layout().total());
        s.Extract(full, local);
        std::span<float> out = t == 0 && p == 0 ? std::span<float>(gathered) : std::span<float>();
        results[p * tp + t] =
            GatherShardsToFirst(s, local, out, mail.Link(fmt::format("tp{}", p), t),
                                mail.Link(fmt::format("pp{}", t), p));
      });
  for (std::thread& th : threads) th.join();
  for (const Status& st : results) ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(gathered, full);
  if (tp * pp > 1) {
    ModelShard last = Make(c, tp, tp - 1, pp, pp - 1);
    std::vector<float> local(last.layout().total()), wrong(full.size());
    EXPECT_EQ(GatherShardsToFirst(last, local, wrong, {}, {}).code(), ErrorCode::kInvalidArgument);
  }
}

TEST(ShardTest, GatheringOntoTheFirstRankGivesTheWholeModelThere) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    ModelConfig c = *Preset(preset);
    c.vocab = 13;
    c.layers = 4;
    for (int tp : {1, 2})
      for (int pp : {1, 2, 3}) CheckGatherToFirst(c, tp, pp);
  }
  ModelConfig gqa = *Preset("llama-tiny");
  gqa.heads = 8;
  gqa.kv_heads = 4;
  gqa.hidden = 64;
  CheckGatherToFirst(gqa, 4, 2);
}

TEST(ShardTest, TheWholeShardIsTheWholeModel) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    ModelConfig c = *Preset(preset);
    ModelShard s = ModelShard::Whole(c);
    const ParamLayout whole(c);
    ASSERT_EQ(s.layout().tensors().size(), whole.tensors().size());
    for (size_t i = 0; i < whole.tensors().size(); ++i) {
      EXPECT_EQ(s.layout().tensors()[i].name, whole.tensors()[i].name);
      EXPECT_EQ(s.layout().tensors()[i].shape, whole.tensors()[i].shape);
      EXPECT_EQ(s.layout().tensors()[i].offset, whole.tensors()[i].offset);
    }
    const auto ranges = s.OwnedRanges();
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0], (std::pair<int64_t, int64_t>{0, whole.total()}));
  }
}

std::string Ops(const std::vector<dist::PipelineOp>& ops) {
  std::string s;
  for (const dist::PipelineOp& op : ops)
    s += fmt::format("{}{} ", op.forward ? 'F' : 'B', op.micro);
  return s;
}

// Units of 10 (the embeddings), 4, 4 and 6 parameters, counted by hand: the last units while
// their sum fits, never the first.
TEST(ShardPlanTest, KeptUnitsAreTheLastOnesWhoseParametersFit) {
  dist::ShardPlan plan({{0, 10}, {10, 4}, {14, 4}, {18, 6}}, 2, 0);
  EXPECT_EQ(plan.FirstKeptUnit(0), 4);     // none
  EXPECT_EQ(plan.FirstKeptUnit(5), 4);     // the last unit alone is 6
  EXPECT_EQ(plan.FirstKeptUnit(6), 3);     // 6
  EXPECT_EQ(plan.FirstKeptUnit(9), 3);     // 6 + 4 = 10 > 9
  EXPECT_EQ(plan.FirstKeptUnit(10), 2);    // 6 + 4
  EXPECT_EQ(plan.FirstKeptUnit(14), 1);    // 6 + 4 + 4
  EXPECT_EQ(plan.FirstKeptUnit(1000), 1);  // never the embeddings
  EXPECT_EQ(dist::ShardPlan({{0, 10}}, 1, 0).FirstKeptUnit(1000), 1);
}

TEST(PipelineScheduleTest, OneForwardOneBackward) {
  // P = 4, M = 4: stage s warms up with 3 - s forwards.
  EXPECT_EQ(Ops(dist::OneFOneB(4, 0, 4)), "F0 F1 F2 F3 B0 B1 B2 B3 ");
  EXPECT_EQ(Ops(dist::OneFOneB(4, 1, 4)), "F0 F1 F2 B0 F3 B1 B2 B3 ");
  EXPECT_EQ(Ops(dist::OneFOneB(4, 3, 4)), "F0 B0 F1 B1 F2 B2 F3 B3 ");
  EXPECT_EQ(Ops(dist::OneFOneB(2, 0, 1)), "F0 B0 ");
  EXPECT_EQ(dist::MaxInFlight(4, 0, 4), 4);
  EXPECT_EQ(dist::MaxInFlight(4, 2, 4), 2);
  EXPECT_EQ(dist::MaxInFlight(4, 0, 2), 2);
  EXPECT_DOUBLE_EQ(dist::BubbleFraction(1, 4), 0.0);
  EXPECT_DOUBLE_EQ(dist::BubbleFraction(2, 4), 0.2);
  EXPECT_DOUBLE_EQ(dist::BubbleFraction(4, 4), 3.0 / 7.0);
}

// Every micro-batch's forward precedes its backward, each once, and the stage
// keeps at most MaxInFlight of them.
TEST(PipelineScheduleTest, EveryForwardPrecedesItsBackward) {
  for (int stages = 1; stages <= 5; ++stages)
    for (int m = 1; m <= 7; ++m)
      for (int s = 0; s < stages; ++s) {
        SCOPED_TRACE(fmt::format("P{} M{} stage {}", stages, m, s));
        const auto ops = dist::OneFOneB(stages, s, m);
        ASSERT_EQ(ops.size(), 2u * m);
        std::map<int, int> forward_at, backward_at;
        for (size_t k = 0; k < ops.size(); ++k)
          (ops[k].forward ? forward_at : backward_at)[ops[k].micro] = static_cast<int>(k);
        int in_flight = 0, most = 0;
        for (const auto& op : ops) {
          in_flight += op.forward ? 1 : -1;
          most = std::max(most, in_flight);
        }
        EXPECT_EQ(most, dist::MaxInFlight(stages, s, m));
        for (int i = 0; i < m; ++i) ASSERT_LT(forward_at.at(i), backward_at.at(i));
      }
}

// Every stage's exchanges, run together as point-to-point operations that wait
// for their match (the k-th send from a to b meets b's k-th receive from a, as
// NCCL and Gloo match them; a send completes only once its receive is posted,
// the worst case): no chain of stages deadlocks, every message meets the one
// its peer expects (the same activation or gradient), each operation's input
// has arrived before it runs, and every output goes to its neighbour once.
TEST(PipelineScheduleTest, TheStagesExchangesMeetWithoutDeadlock) {
  struct P2p {
    bool send;
    dist::PipelineMessage msg;
    int index;  // the k-th send or receive between this pair, this direction
    bool done = false;
  };
  for (int stages = 1; stages <= 5; ++stages)
    for (int m = 1; m <= 8; ++m) {
      SCOPED_TRACE(fmt::format("P{} M{}", stages, m));
      // Each stage's program: groups of point-to-point operations, done together; a
      // group of none stands for the operation that follows an exchange.
      std::vector<std::vector<std::vector<P2p>>> program(stages);
      std::map<std::pair<int, int>, int> sends, recvs;  // (from, to) -> count so far
      for (int s = 0; s < stages; ++s) {
        const auto ops = dist::OneFOneB(stages, s, m);
        const auto ex = dist::Exchanges(stages, s, m);
        ASSERT_EQ(ex.size(), ops.size() + 1);
        for (size_t k = 0; k < ex.size(); ++k) {
          std::vector<P2p> group;
          auto add = [&](bool send, const dist::PipelineMessage& msg) {
            if (msg.peer < 0) return;
            ASSERT_NE(msg.peer, s);
            ASSERT_EQ(std::abs(msg.peer - s), 1);
            int& n = send ? sends[{s, msg.peer}] : recvs[{msg.peer, s}];
            group.push_back({send, msg, n++});
          };
          add(true, ex[k].send);
          if (!ex[k].together) {
            program[s].push_back(group);
            group.clear();
          }
          add(false, ex[k].recv);
          if (k < ops.size()) {  // the input of operation k is what arrives just before it
            const dist::PipelineOp& op = ops[k];
            const bool needs = op.forward ? s > 0 : s + 1 < stages;
            ASSERT_EQ(ex[k].recv.peer >= 0, needs) << "stage " << s << " op " << k;
            if (needs) {
              EXPECT_EQ(ex[k].recv.activation, op.forward);
              EXPECT_EQ(ex[k].recv.micro, op.micro);
            }
          }
          program[s].push_back(group);
          if (k < ops.size()) program[s].push_back({});  // the operation itself
        }
      }
      for (const auto& [link, n] : sends) EXPECT_EQ(n, m) << link.first << " -> " << link.second;
      EXPECT_EQ(sends.size(), recvs.size());
      // Run: a posted send and the posted receive that matches it complete together.
      std::vector<size_t> at(stages, 0);
      bool progress = true;
      while (progress) {
        progress = false;
        for (int s = 0; s < stages; ++s) {
          if (at[s] >= program[s].size()) continue;
          for (P2p& op : program[s][at[s]]) {
            if (op.done) continue;
            const int peer = op.msg.peer;
            if (at[peer] >= program[peer].size()) continue;
            for (P2p& other : program[peer][at[peer]]) {
              if (other.done || other.send == op.send || other.msg.peer != s ||
                  other.index != op.index)
                continue;
              EXPECT_EQ(other.msg.activation, op.msg.activation) << "stage " << s;
              EXPECT_EQ(other.msg.micro, op.msg.micro) << "stage " << s;
              op.done = other.done = true;
              progress = true;
            }
          }
          auto& group = program[s][at[s]];
          if (std::all_of(group.begin(), group.end(), [](const P2p& p) { return p.done; })) {
            ++at[s];
            progress = true;
          }
        }
      }
      for (int s = 0; s < stages; ++s)
        EXPECT_EQ(at[s], program[s].size()) << "stage " << s << " deadlocked";
    }
}

}  // namespace
}  // namespace bm::train
