// nccl_overlap_bench: what one of ZeRO's collectives costs the products it runs beside, and
// whether NCCL's symmetric-memory path costs them less than its default kernels (issue 38, goal
// 1: at 2 x 2048 rows a GPU, DP2 loses 6-14% against one GPU while the exposed wait is 1-2 ms a
// step; run 124).
//
// One process per GPU, started as cuda_train_bench's ranks are (RANK, WORLD_SIZE, LOCAL_RANK,
// BENCHMAKE_RENDEZVOUS; bench/multi_gpu.sh overlap). Each rank times, with CUDA events:
//   products          a loop of bf16 cuBLASLt products m x n x k on the compute stream alone;
//   <coll> alone      the collective in a loop on a second stream alone (ZeRO's two: the bf16
//                     all-gather of the weights, the fp32 reduce-scatter of the gradients, each
//                     in place as the trainer runs them);
//   <coll> beside     both at once, the collective repeated to span the products' time:
//                     the products' slowdown against alone, the collective's bus bandwidth and
//                     the GPU's watts (NVML) over the pair;
// for each way of running the collective:
//   default           cudaMalloc'd buffers, NCCL's default CTA policy (what the trainer does);
//   window            buffers from ncclMemAlloc registered as a symmetric window
//                     (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC), default policy;
//   window+efficiency the same, NCCL_CTA_POLICY_EFFICIENCY (fewest CTAs that keep the speed);
//   window+zero       the same, NCCL_CTA_POLICY_ZERO (copy engines where NCCL has them: the
//                     all-gather within a node; a reduction still needs CTAs).
// Rank 0 prints a table and one JSON line per row. The question it answers before the trainer
// changes: does a collective on a symmetric window (and on copy engines) slow the products less,
// at the 700 W cap, than NCCL's kernels on plain buffers?
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/cuda/matmul.h"
#include "trainer/cuda/nvml_gpu.h"
#include "trainer/dist/rank_env.h"
#include "trainer/dist/rendezvous.h"

namespace {

using bm::train::cuda::Matmul;
using bm::train::cuda::MatmulArgs;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "nccl_overlap_bench: %s\n", what.c_str());
  std::exit(1);
}
void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void Nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) Die(fmt::format("{}: {}", what, ncclGetErrorString(r)));
}

// The two streams' work, timed by events on each.
struct Timer {
  cudaEvent_t start, stop;
  Timer() {
    Cuda(cudaEventCreate(&start), "event");
    Cuda(cudaEventCreate(&stop), "event");
  }
  double Ms() const {
    float ms = 0;
    Cuda(cudaEventSynchronize(stop), "sync");
    Cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    return ms;
  }
};

struct Way {  // one way of running the collectives: a communicator and its buffers
  std::string name;
  ncclComm_t comm = nullptr;
  void* ag = nullptr;  // the all-gather's output (bf16), its own slot inside
  void* rs = nullptr;  // the reduce-scatter's input (fp32), its own block the output
  std::vector<ncclWindow_t> windows;
};

}  // namespace

int main(int argc, char** argv) {
  int m = 4096, n = 8192, k = 2048, products = 2000;
  size_t mib = 256;  // each collective's whole buffer, MiB (a layer's gradients of LLaMA-2-7B: 772)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      return i + 1 < argc ? std::atoll(argv[++i]) : (Die(a + " needs a value"), 0);
    };
    if (a == "--m")
      m = static_cast<int>(next());
    else if (a == "--n")
      n = static_cast<int>(next());
    else if (a == "--k")
      k = static_cast<int>(next());
    else if (a == "--products")
      products = static_cast<int>(next());
    else if (a == "--mib")
      mib = static_cast<size_t>(next());
    else
      Die("unknown argument " + a + " (--m --n --k --products --mib)");
  }
  auto env = bm::train::dist::ReadRankEnvFromProcess();
  if (!env.ok()) Die(env.status().message());
  if (env->world_size < 2)
    Die("needs WORLD_SIZE >= 2 (bench/multi_gpu.sh overlap starts the ranks)");
  const int rank = env->rank, world = env->world_size;
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);  // as the trainer's (GPU-MACHINE.md)
  Cuda(cudaSetDevice(env->local_rank), "cudaSetDevice");
  auto rdv = bm::train::dist::Rendezvous::Open(env->rendezvous, env->timeout_s);
  if (!rdv.ok()) Die(rdv.status().message());

  // The products: bf16 A [m, k] x B [k, n] -> D [m, n], as a layer's forward product.
  void *a = nullptr, *b = nullptr, *d = nullptr, *ws = nullptr;
  Cuda(cudaMalloc(&a, size_t(m) * k * 2), "A");
  Cuda(cudaMalloc(&b, size_t(k) * n * 2), "B");
  Cuda(cudaMalloc(&d, size_t(m) * n * 2), "D");
  Cuda(cudaMemset(a, 0x3c, size_t(m) * k * 2), "A");  // bf16 ~0.0115: finite products
  Cuda(cudaMemset(b, 0x3c, size_t(k) * n * 2), "B");
  Cuda(cudaMalloc(&ws, Matmul::kDefaultWorkspaceBytes), "workspace");
  auto mm = Matmul::Create(ws, Matmul::kDefaultWorkspaceBytes);
  if (!mm.ok()) Die(mm.status().message());
  MatmulArgs args;
  args.m = m, args.n = n, args.k = k;  // row-major, as the trainer's products
  args.a = a, args.lda = k, args.b = b, args.ldb = n, args.d = d, args.ldd = n;
  cudaStream_t compute, comm_stream;
  Cuda(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "stream");
  Cuda(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking), "stream");
  auto run_products = [&](int count) {
    for (int i = 0; i < count; ++i)
      if (auto s = (*mm)->Run(args, compute); !s.ok()) Die(s.message());
  };

  // One communicator per CTA policy, all from ids rank 0 publishes.
  const size_t bytes = mib << 20;
  const int policies[] = {NCCL_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_DEFAULT,
                          NCCL_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_ZERO};
  const char* names[] = {"default", "window", "window+efficiency", "window+zero"};
  void *plain_ag = nullptr, *plain_rs = nullptr, *win_ag = nullptr, *win_rs = nullptr;
  Cuda(cudaMalloc(&plain_ag, bytes), "plain all-gather buffer");
  Cuda(cudaMalloc(&plain_rs, bytes), "plain reduce-scatter buffer");
  Nccl(ncclMemAlloc(&win_ag, bytes), "ncclMemAlloc");
  Nccl(ncclMemAlloc(&win_rs, bytes), "ncclMemAlloc");
  for (void* p : {plain_ag, plain_rs, win_ag, win_rs}) Cuda(cudaMemset(p, 0, bytes), "memset");
  std::vector<Way> ways;
  for (int w = 0; w < 4; ++w) {
    ncclUniqueId id;
    const std::string key = fmt::format("nccl-id-{}", w);
    if (rank == 0) {
      Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      if (auto s = (*rdv)->Set(key, std::string(id.internal, sizeof id.internal)); !s.ok())
        Die(s.message());
    } else {
      auto got = (*rdv)->Get(key);
      if (!got.ok()) Die(got.status().message());
      std::copy(got->begin(), got->end(), id.internal);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.CTAPolicy = policies[w];
    Way way;
    way.name = names[w];
    Nccl(ncclCommInitRankConfig(&way.comm, world, id, rank, &config), "ncclCommInitRankConfig");
    if (w == 0) {
      way.ag = plain_ag, way.rs = plain_rs;
    } else {
      way.ag = win_ag, way.rs = win_rs;
      for (void* p : {win_ag, win_rs}) {
        ncclWindow_t win;
        Nccl(ncclCommWindowRegister(way.comm, p, bytes, &win, NCCL_WIN_COLL_SYMMETRIC),
             "ncclCommWindowRegister");
        way.windows.push_back(win);
      }
    }
    ways.push_back(std::move(way));
    std::fprintf(stderr, "rank %d: communicator '%s' ready\n", rank, names[w]);
  }

  const size_t ag_count = bytes / 2 / world, rs_count = bytes / 4 / world;
  auto collective = [&](const Way& w, bool gather, int count) {
    for (int i = 0; i < count; ++i) {
      if (gather) {
        char* recv = static_cast<char*>(w.ag);
        Nccl(ncclAllGather(recv + rank * ag_count * 2, recv, ag_count, ncclBfloat16, w.comm,
                           comm_stream),
             "ncclAllGather");
      } else {
        char* send = static_cast<char*>(w.rs);
        Nccl(ncclReduceScatter(send, send + rank * rs_count * 4, rs_count, ncclFloat32, ncclSum,
                               w.comm, comm_stream),
             "ncclReduceScatter");
      }
    }
  };
  int* agreed = nullptr;
  Cuda(cudaMalloc(&agreed, sizeof(int)), "agreed count");
  auto AgreeOnMax = [&](int mine) {
    Cuda(cudaMemcpy(agreed, &mine, sizeof(int), cudaMemcpyHostToDevice), "count");
    Nccl(ncclAllReduce(agreed, agreed, 1, ncclInt32, ncclMax, ways[0].comm, comm_stream),
         "ncclAllReduce");
    Cuda(cudaStreamSynchronize(comm_stream), "count");
    Cuda(cudaMemcpy(&mine, agreed, sizeof(int), cudaMemcpyDeviceToHost), "count");
    return mine;
  };
  bm::train::cuda::NvmlGpu nvml;
  nvml.Open(env->local_rank);
  Timer tp, tc;
  auto products_alone = [&] {
    Cuda(cudaEventRecord(tp.start, compute), "record");
    run_products(products);
    Cuda(cudaEventRecord(tp.stop, compute), "record");
    return tp.Ms();
  };
  run_products(50);  // warm-up: the product's plan
  for (const Way& w : ways) collective(w, true, 2), collective(w, false, 2);
  Cuda(cudaDeviceSynchronize(), "warm-up");
  std::fprintf(stderr, "rank %d: warmed up\n", rank);
  const double alone_ms = products_alone();
  const double tflops = 2.0 * m * n * k * products / (alone_ms * 1e-3) / 1e12;

  std::vector<nlohmann::json> rows;
  for (const Way& w : ways) {
    for (bool gather : {true, false}) {
      std::fprintf(stderr, "rank %d: %s, %s\n", rank, w.name.c_str(),
                   gather ? "all-gather" : "reduce-scatter");
      // Alone: 10 collectives.
      Cuda(cudaDeviceSynchronize(), "sync");
      Cuda(cudaEventRecord(tc.start, comm_stream), "record");
      collective(w, gather, 10);
      Cuda(cudaEventRecord(tc.stop, comm_stream), "record");
      const double coll_ms = tc.Ms() / 10;
      // Beside: as many as span the products alone, the most any rank needs (every rank must
      // issue as many: a rank that issued fewer would leave the others waiting); both streams
      // start together.
      const int count = AgreeOnMax(std::max(1, static_cast<int>(alone_ms / coll_ms)));
      Cuda(cudaDeviceSynchronize(), "sync");
      const double j0 = nvml.Joules();
      Cuda(cudaEventRecord(tp.start, compute), "record");
      Cuda(cudaStreamWaitEvent(comm_stream, tp.start), "wait");
      Cuda(cudaEventRecord(tc.start, comm_stream), "record");
      collective(w, gather, count);
      run_products(products);
      Cuda(cudaEventRecord(tp.stop, compute), "record");
      Cuda(cudaEventRecord(tc.stop, comm_stream), "record");
      const double beside_ms = tp.Ms(), beside_coll_ms = tc.Ms();
      Cuda(cudaDeviceSynchronize(), "sync");
      const double joules = nvml.Joules() - j0;
      // Bus bandwidth as nccl-tests counts it: (world - 1) / world of the whole buffer a call.
      const double bus = double(bytes) * (world - 1) / world;
      nlohmann::json r = {
          {"way", w.name},
          {"collective", gather ? "all-gather bf16" : "reduce-scatter fp32"},
          {"mib", mib},
          {"world", world},
          {"products_alone_ms", alone_ms},
          {"products_beside_ms", beside_ms},
          {"products_slowdown", beside_ms / alone_ms},
          {"collective_alone_busbw_GBs", bus / (coll_ms * 1e-3) / 1e9},
          {"collective_beside_busbw_GBs", bus * count / (beside_coll_ms * 1e-3) / 1e9},
          {"collectives_beside", count},
          {"watts_beside",
           joules >= 0 ? joules / (std::max(beside_ms, beside_coll_ms) * 1e-3) : -1}};
      rows.push_back(r);
    }
  }
  const double again_ms = products_alone();  // the products alone once more: the machine's drift
  if (rank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    std::printf(
        "NCCL %d, %d ranks; products %d x %d x %d bf16, %d of them: %.1f ms alone (%.0f "
        "TFLOP/s), %.1f ms at the end\n",
        version, world, m, n, k, products, alone_ms, tflops, again_ms);
    std::printf("%-18s %-20s %12s %14s %14s %8s\n", "way", "collective", "products x",
                "busbw alone", "busbw beside", "watts");
    for (const auto& r : rows)
      std::printf("%-18s %-20s %12.3f %11.1f GB/s %11.1f GB/s %8.0f\n",
                  r["way"].get<std::string>().c_str(), r["collective"].get<std::string>().c_str(),
                  r["products_slowdown"].get<double>(),
                  r["collective_alone_busbw_GBs"].get<double>(),
                  r["collective_beside_busbw_GBs"].get<double>(), r["watts_beside"].get<double>());
    for (const auto& r : rows) std::printf("%s\n", r.dump().c_str());
  }
  for (Way& w : ways) {
    for (ncclWindow_t win : w.windows) ncclCommWindowDeregister(w.comm, win);
    ncclCommDestroy(w.comm);
  }
  ncclMemFree(win_ag), ncclMemFree(win_rs);
  return 0;
}
