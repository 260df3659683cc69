#include "trainer/dist/gloo_communicator.h"

#include <fmt/ranges.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <vector>

#include "trainer/dist/bf16.h"

namespace bm::train::dist {
namespace {

// Gloo's collectives count elements of a C++ type; only the size matters to
// them (the reduction function knows the type), so one opaque element type
// per size serves every dtype.
template <size_t N>
struct Elem {
  unsigned char bytes[N];
};

template <typename F>
void WithElem(DType dtype, F&& f) {
  switch (DTypeSize(dtype)) {
    case 2:
      return f(Elem<2>{});
    case 4:
      return f(Elem<4>{});
    default:
      return f(Elem<8>{});
  }
}

// Gloo has no bf16 type (trainer/dist/bf16.h): an addition happens in fp32 and rounds back to
// nearest even, as gloo::float16's does for fp16.
void Bf16Sum(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = FloatToBf16(Bf16ToFloat(x[i]) + Bf16ToFloat(y[i]));
}
void Bf16Max(void* c, const void* a, const void* b, size_t n) {
  auto* out = static_cast<uint16_t*>(c);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(x[i]) >= Bf16ToFloat(y[i]) ? x[i] : y[i];
}

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn GlooReduce(ReduceOp op) {
  return op == ReduceOp::kSum ? static_cast<ReduceFn>(&gloo::sum<T>)
                              : static_cast<ReduceFn>(&gloo::max<T>);
}

ReduceFn ReduceFor(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kFloat32:
      return GlooReduce<float>(op);
    case DType::kFloat64:
      return GlooReduce<double>(op);
    case DType::kInt64:
      return GlooReduce<int64_t>(op);
    case DType::kFloat16:
      return GlooReduce<gloo::float16>(op);
    case DType::kBFloat16:
      return op == ReduceOp::kSum ? &Bf16Sum : &Bf16Max;
  }
  return nullptr;
}

// Whether a Gloo transport error says the peer went away (tcp/pair.cc: a read
// of end of file, ECONNRESET or EPIPE), rather than a timeout of this rank's
// wait ("Read timeout", "Timed out waiting", "Application timeout caused pair
// closure") or an error of this machine.
bool PeerWentAway(std::string_view what) {
  for (std::string_view sign :
       {"Connection closed by peer", "Connection reset by peer", "Broken pipe"})
    if (what.find(sign) != std::string_view::npos) return true;
  return false;
}

// Slots of point-to-point messages: a prefix none of Gloo's collectives use
// (gloo/types.h: 0x01..0x08), and the message's number within its pair.
constexpr uint8_t kPointToPointSlotPrefix = 0x10;

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> context, std::string group,
                   std::vector<int> members, double timeout_s)
      : context_(std::move(context)),
        group_(std::move(group)),
        members_(std::move(members)),
        timeout_s_(timeout_s),
        timeout_(static_cast<int64_t>(timeout_s * 1000)),
        sent_(members_.size()),
        received_(members_.size()) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::string_view transport() const override { return "gloo"; }
  bool device() const override { return false; }

  Status AllReduce(void* data, int64_t count, DType dtype, ReduceOp op, void*) override {
    return Run("AllReduce", count, dtype, -1, [&] { Reduce(data, data, count, dtype, op); });
  }

  Status ReduceScatter(const void* send, void* recv, int64_t count, DType dtype, ReduceOp op,
                       void*) override {
    return Run("ReduceScatter", count, dtype, -1, [&] {
      const size_t block = static_cast<size_t>(count) * DTypeSize(dtype);
      scratch_.resize(block * static_cast<size_t>(size()));
      Reduce(send, scratch_.data(), count * size(), dtype, op);
      std::memcpy(recv, scratch_.data() + block * static_cast<size_t>(rank()), block);
    });
  }

  Status AllGather(const void* send, void* recv, int64_t count, DType dtype, void*) override {
    return Run("AllGather", count, dtype, -1, [&] {
      WithElem(dtype, [&](auto e) {
        using T = decltype(e);
        gloo::AllgatherOptions opts(context_);
        T* out = static_cast<T*>(recv);
        opts.setOutput(out, static_cast<size_t>(count * size()));
        // In place when send is this rank's own block of recv.
        if (send != out + count * rank())
          opts.setInput(const_cast<T*>(static_cast<const T*>(send)), static_cast<size_t>(count));
        opts.setTimeout(timeout_);
        gloo::allgather(opts);
      });
    });
  }

  Status Broadcast(void* data, int64_t count, DType dtype, int root, void*) override {
    if (root < 0 || root >= size())
      return Errorf(ErrorCode::kInvalidArgument, "gloo Broadcast from rank {} in group '{}' of {}",
                    root, group_, size());
    return Run("Broadcast", count, dtype, -1, [&] {
      WithElem(dtype, [&](auto e) {
        using T = decltype(e);
        gloo::BroadcastOptions opts(context_);
        opts.setOutput(static_cast<T*>(data), static_cast<size_t>(count));
        opts.setRoot(root);
        opts.setTimeout(timeout_);
        gloo::broadcast(opts);
      });
    });
  }

  Status Send(const void* data, int64_t count, DType dtype, int peer, void*) override {
    BM_TRY(CheckPeer("Send to", peer));
    return Run("Send", count, dtype, peer, [&] {
      auto buffer = context_->createUnboundBuffer(const_cast<void*>(data), Bytes(count, dtype));
      buffer->send(peer, gloo::Slot::build(kPointToPointSlotPrefix, sent_[peer]++));
      if (!buffer->waitSend(timeout_)) throw gloo::IoException("the send was aborted");
    });
  }

  Status Recv(void* data, int64_t count, DType dtype, int peer, void*) override {
    BM_TRY(CheckPeer("Recv from", peer));
    return Run("Recv", count, dtype, peer, [&] {
      auto buffer = context_->createUnboundBuffer(data, Bytes(count, dtype));
      buffer->recv(peer, gloo::Slot::build(kPointToPointSlotPrefix, received_[peer]++));
      if (!buffer->waitRecv(timeout_)) throw gloo::IoException("the receive was aborted");
    });
  }

  // Both posted, then both waited for: the peer may be sending to this rank too.
  Status SendRecv(const void* send, int64_t send_count, int to, void* recv, int64_t recv_count,
                  int from, DType dtype, void*) override {
    BM_TRY(CheckPeer("Send to", to));
    BM_TRY(CheckPeer("Recv from", from));
    if (!failed_.ok()) return failed_;
    if (send_count < 0 || recv_count < 0)
      return Errorf(ErrorCode::kInvalidArgument,
                    "gloo SendRecv of {} and {} elements in group '{}'", send_count, recv_count,
                    group_);
    if (send_count == 0) return Recv(recv, recv_count, dtype, from, nullptr);
    if (recv_count == 0) return Send(send, send_count, dtype, to, nullptr);
    const std::string what = fmt::format("SendRecv of {} {} to rank {} and {} from rank {}",
                                         send_count, DTypeName(dtype), to, recv_count, from);
    return Guard(what, [&] {
      auto out = context_->createUnboundBuffer(const_cast<void*>(send), Bytes(send_count, dtype));
      auto in = context_->createUnboundBuffer(recv, Bytes(recv_count, dtype));
      out->send(to, gloo::Slot::build(kPointToPointSlotPrefix, sent_[to]++));
      in->recv(from, gloo::Slot::build(kPointToPointSlotPrefix, received_[from]++));
      if (!out->waitSend(timeout_)) throw gloo::IoException("the send was aborted");
      if (!in->waitRecv(timeout_)) throw gloo::IoException("the receive was aborted");
    });
  }

  Status Barrier() override {
    if (!failed_.ok()) return failed_;
    return Guard("Barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  static size_t Bytes(int64_t count, DType dtype) {
    return static_cast<size_t>(count) * DTypeSize(dtype);
  }

  // out = op over ranks of in (in == out: in place), `count` elements.
  void Reduce(const void* in, void* out, int64_t count, DType dtype, ReduceOp op) {
    WithElem(dtype, [&](auto e) {
      using T = decltype(e);
      gloo::AllreduceOptions opts(context_);
      if (in != out)
        opts.setInput(const_cast<T*>(static_cast<const T*>(in)), static_cast<size_t>(count));
      opts.setOutput(static_cast<T*>(out), static_cast<size_t>(count));
      opts.setReduceFunction(ReduceFor(dtype, op));
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }

  Status CheckPeer(std::string_view verb, int peer) const {
    if (peer < 0 || peer >= size() || peer == rank())
      return Errorf(ErrorCode::kInvalidArgument, "gloo {} rank {} by rank {} of group '{}' of {}",
                    verb, peer, rank(), group_, size());
    return Status::Ok();
  }

  template <typename F>
  Status Run(std::string_view op, int64_t count, DType dtype, int peer, F&& body) {
    if (!failed_.ok()) return failed_;
    if (count < 0)
      return Errorf(ErrorCode::kInvalidArgument, "gloo {} of {} elements in group '{}'", op, count,
                    group_);
    if (count == 0) return Status::Ok();  // every rank skips alike
    std::string what = fmt::format("{} of {} {}", op, count, DTypeName(dtype));
    if (peer >= 0) what += fmt::format(" {} rank {}", op == "Send" ? "to" : "from", peer);
    return Guard(what, std::forward<F>(body));
  }

  // Gloo reports failures by throwing; they stop at this function.
  template <typename F>
  Status Guard(std::string_view what, F&& body) {
    try {
      body();
      return Status::Ok();
    } catch (const gloo::IoException& e) {
      failed_ = PeerWentAway(e.what())
                    ? Errorf(ErrorCode::kPeerLost,
                             "gloo {} failed in group '{}' (rank {} of {}; global ranks {}): a "
                             "peer was lost (it ended, or its machine went away): {}",
                             what, group_, rank(), size(), fmt::join(members_, ", "), e.what())
                    : Errorf(ErrorCode::kUnavailable,
                             "gloo {} failed in group '{}' (rank {} of {}; global ranks {}): it "
                             "outlasted the {} s timeout, or the network failed: {}",
                             what, group_, rank(), size(), fmt::join(members_, ", "), timeout_s_,
                             e.what());
    } catch (const std::exception& e) {
      failed_ = Errorf(ErrorCode::kFailed, "gloo {} failed in group '{}' (rank {} of {}): {}", what,
                       group_, rank(), size(), e.what());
    }
    return failed_;
  }

  std::shared_ptr<gloo::Context> context_;
  std::string group_;
  std::vector<int> members_;
  double timeout_s_;
  std::chrono::milliseconds timeout_;
  std::vector<uint32_t> sent_, received_;  // point-to-point messages per peer
  std::vector<unsigned char> scratch_;     // ReduceScatter's full-size result
  Status failed_;                          // the first failure; every later call returns it
};

}  // namespace

Result<GlooAddress> ChooseGlooAddress(const RankEnv& env,
                                      const std::map<std::string, std::string>& vars) {
  auto var = [&](const char* name) {
    auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
  GlooAddress address;
  if (address.iface = var(kEnvGlooIfname); !address.iface.empty()) return address;
  if (address.hostname = var(kEnvGlooHostname); !address.hostname.empty()) return address;
  if (env.local_world_size == env.world_size) {
    address.hostname = "127.0.0.1";
    return address;
  }
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0)
    return Errorf(ErrorCode::kIo, "gethostname failed ({}); set {} or {}", std::strerror(errno),
                  kEnvGlooIfname, kEnvGlooHostname);
  address.hostname = name;
  return address;
}

GlooNetwork::GlooNetwork(std::shared_ptr<gloo::transport::Device> device)
    : device_(std::move(device)) {}

GlooNetwork::~GlooNetwork() = default;

Result<std::unique_ptr<GlooNetwork>> GlooNetwork::Open(const GlooAddress& address) {
  // Gloo writes to sockets with writev(2): without this, a peer that died
  // would kill this rank with SIGPIPE before any error could be reported.
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
  gloo::transport::tcp::attr attr;
  attr.iface = address.iface;
  attr.hostname = address.hostname;
  try {
    return std::unique_ptr<GlooNetwork>(new GlooNetwork(gloo::transport::tcp::CreateDevice(attr)));
  } catch (const std::exception& e) {
    return Errorf(ErrorCode::kInvalidArgument, "gloo cannot listen on {} {} ({} or {}): {}",
                  address.iface.empty() ? "host" : "interface",
                  address.iface.empty() ? address.hostname : address.iface, kEnvGlooIfname,
                  kEnvGlooHostname, e.what());
  }
}

Result<std::unique_ptr<Communicator>> GlooNetwork::Connect(Rendezvous& rendezvous,
                                                           const std::string& group, int me,
                                                           std::span<const int> members) {
  const int size = static_cast<int>(members.size());
  auto context = std::make_shared<gloo::rendezvous::Context>(me, size);
  context->setTimeout(
      std::chrono::milliseconds(static_cast<int64_t>(rendezvous.timeout_s() * 1000)));
  try {
    gloo::rendezvous::PrefixStore store(group, rendezvous.store());
    context->connectFullMesh(store, device_);
  } catch (const std::exception& e) {
    return Errorf(PeerWentAway(e.what()) ? ErrorCode::kPeerLost : ErrorCode::kUnavailable,
                  "gloo could not connect group '{}' (global ranks {}) through {} within {} s: {}",
                  group, fmt::join(members, ", "), rendezvous.dir(), rendezvous.timeout_s(),
                  e.what());
  }
  return std::unique_ptr<Communicator>(new GlooCommunicator(
      std::move(context), group, std::vector<int>(members.begin(), members.end()),
      rendezvous.timeout_s()));
}

}  // namespace bm::train::dist
