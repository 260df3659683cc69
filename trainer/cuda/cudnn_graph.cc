#include "trainer/cuda/cudnn_graph.h"

#if BENCHMAKE_HAVE_CUDNN
#include <fmt/ranges.h>

#include <algorithm>

namespace bm::train::cuda {

Status CudnnError(cudnnStatus_t status, std::string_view call, std::string_view what) {
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));
  return Errorf(ErrorCode::kFailed, "{} failed: {} ({}) [{}]", call, cudnnGetErrorString(status),
                last, what);
}

Status CudnnGraph::Tensor(cudnnBackendDescriptor_t* t, cudnnDataType_t type, Dims dims,
                          Dims strides, int64_t uid, bool by_value,
                          cudnnBackendTensorReordering_t reorder) {
  bool is_virtual = uid == 0;
  if (is_virtual) uid = next_uid_++;
  CudnnDesc& d = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, d.out()),
                 "tensor {} of {}", uid, what_);
  int64_t align = 16;
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()));
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  BM_TRY(Set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
  if (by_value) BM_TRY(Set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
  if (reorder != CUDNN_TENSOR_REORDERING_NONE)
    BM_TRY(
        Set(d, CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &reorder));
  BM_CUDNN_CHECK(cudnnBackendFinalize(d.get()), "tensor uid {} dims [{}] strides [{}] of {}", uid,
                 fmt::join(dims, ","), fmt::join(strides, ","), what_);
  *t = d.get();
  return Status::Ok();
}

Status CudnnGraph::Scalar(cudnnBackendDescriptor_t* t, int64_t uid) {
  return Tensor(t, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, uid, true);
}

Status CudnnGraph::Pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                             cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                             cudnnBackendDescriptor_t y, cudnnDataType_t prec, int64_t axis) {
  CudnnDesc& pw = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw.out()),
                 "pointwise {} of {}", static_cast<int>(mode), what_);
  BM_TRY(Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  BM_TRY(Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
  if (axis >= 0) BM_TRY(Set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
  BM_CUDNN_CHECK(cudnnBackendFinalize(pw.get()), "pointwise mode {} of {}", static_cast<int>(mode),
                 what_);
  CudnnDesc& op = Keep();
  BM_CUDNN_CHECK(
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op.out()),
      "pointwise op of {}", what_);
  auto pwd = pw.get();
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &pwd));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  if (b != nullptr)
    BM_TRY(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  if (t != nullptr)
    BM_TRY(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  return AddOp(op, fmt::format("pointwise mode {}", static_cast<int>(mode)));
}

Status CudnnGraph::Reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                             cudnnBackendDescriptor_t y) {
  CudnnDesc& r = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, r.out()),
                 "reduction of {}", what_);
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  BM_TRY(Set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode));
  BM_TRY(Set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec));
  BM_CUDNN_CHECK(cudnnBackendFinalize(r.get()), "reduction {} of {}", static_cast<int>(mode),
                 what_);
  CudnnDesc& op = Keep();
  BM_CUDNN_CHECK(
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op.out()),
      "reduction op of {}", what_);
  auto rd = r.get();
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  return AddOp(op, fmt::format("reduction {}", static_cast<int>(mode)));
}

Status CudnnGraph::Matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                          cudnnBackendDescriptor_t c) {
  CudnnDesc& m = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, m.out()),
                 "matmul of {}", what_);
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  BM_TRY(Set(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec));
  BM_CUDNN_CHECK(cudnnBackendFinalize(m.get()), "matmul of {}", what_);
  CudnnDesc& op = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op.out()),
                 "matmul op of {}", what_);
  auto md = m.get();
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &md));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
  return AddOp(op, "matmul");
}

Status CudnnGraph::Reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  CudnnDesc& op = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, op.out()),
                 "reshape op of {}", what_);
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  BM_TRY(Set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  return AddOp(op, "reshape");
}

Status CudnnGraph::Finalize(bool deterministic) {
  BM_ASSIGN_OR_RETURN(auto cfgs, HeuristicConfigs(CUDNN_HEUR_MODE_A));
  if (cfgs.empty())
    return Errorf(ErrorCode::kUnsupported, "cuDNN attention: no engine for {}", what_);
  std::string tried;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    if (deterministic && !Deterministic(cfgs[i])) {
      tried += fmt::format(" cfg{}:nondeterministic", i);
      continue;
    }
    std::string why;
    if (Plan(cfgs[i], &why)) return Status::Ok();
    tried += fmt::format(" cfg{}:{}", i, why);
  }
  return Errorf(ErrorCode::kUnsupported,
                "cuDNN attention: none of {} engine configs builds a plan for {}:{}", cfgs.size(),
                what_, tried);
}

Result<std::vector<cudnnBackendDescriptor_t> > CudnnGraph::HeuristicConfigs(
    cudnnBackendHeurMode_t mode) {
  BM_TRY(OperationGraph());
  CudnnDesc& heur = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, heur.out()),
                 "engine heuristics of {}", what_);
  BM_TRY(
      Set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_));
  BM_TRY(Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  BM_CUDNN_CHECK(cudnnBackendFinalize(heur.get()), "engine heuristics (mode {}) of {}",
                 static_cast<int>(mode), what_);
  int64_t count = 0;
  BM_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
                 "engine count of {}", what_);
  std::vector<cudnnBackendDescriptor_t> cfgs;
  for (int64_t i = 0; i < count; ++i) {
    CudnnDesc& c = Keep();
    BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, c.out()),
                   "engine config of {}", what_);
    cfgs.push_back(c.get());
  }
  int64_t got = 0;
  if (count > 0)
    BM_CUDNN_CHECK(
        cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs.data()),
        "engine configs of {}", what_);
  cfgs.resize(static_cast<size_t>(got));
  return cfgs;
}

CudnnGraph::ConfigInfo CudnnGraph::Info(cudnnBackendDescriptor_t cfg) {
  ConfigInfo info;
  cudnnBackendDescriptor_t e = nullptr;
  if (!EngineOf(cfg, &e)) return info;
  int64_t n = 0;
  cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                           &info.engine);
  info.deterministic = NoteFree(e);
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    CudnnDesc& d = Keep();
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, d.out()) !=
        CUDNN_STATUS_SUCCESS)
      break;
    raw.push_back(d.get());
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()),
                               &got, raw.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t k = 0; k < got; ++k) {
      cudnnBackendKnobType_t type{};
      int64_t value = 0;
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                               &n, &type);
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n,
                               &value);
      info.choices.emplace_back(type, value);
    }
  }
  raw.clear();
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    CudnnDesc& d = Keep();
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, d.out()) !=
        CUDNN_STATUS_SUCCESS)
      break;
    raw.push_back(d.get());
  }
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               static_cast<int64_t>(raw.size()), &got,
                               raw.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t k = 0; k < got; ++k) {
      Knob knob;
      cudnnBackendKnobType_t type{};
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n,
                               &type);
      knob.type = type;
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE, CUDNN_TYPE_INT64, 1, &n,
                               &knob.min);
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE, CUDNN_TYPE_INT64, 1, &n,
                               &knob.max);
      cudnnBackendGetAttribute(raw[k], CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &n,
                               &knob.stride);
      info.knobs.push_back(knob);
    }
  }
  return info;
}

bool CudnnGraph::PlanEngine(int64_t index, const std::vector<std::pair<int64_t, int64_t> >& knobs,
                            std::string* why) {
  cudnnBackendDescriptor_t e = nullptr;
  if (!OperationGraph().ok() || !EngineAt(index, &e)) {
    *why = "engine does not take the graph";
    return false;
  }
  std::vector<cudnnBackendDescriptor_t> choices;
  for (auto [type, value] : knobs) {
    CudnnDesc& c = Keep();
    auto t = static_cast<cudnnBackendKnobType_t>(type);
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, c.out()) !=
            CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(c.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                 &t) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(c.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                 &value) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(c.get()) != CUDNN_STATUS_SUCCESS) {
      *why = fmt::format("knob {}={} refused: {}", type, value, LastError());
      return false;
    }
    choices.push_back(c.get());
  }
  CudnnDesc& cfg = Keep();
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, cfg.out()) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e) != CUDNN_STATUS_SUCCESS ||
      (!choices.empty() &&
       cudnnBackendSetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(choices.size()),
                                choices.data()) != CUDNN_STATUS_SUCCESS) ||
      cudnnBackendFinalize(cfg.get()) != CUDNN_STATUS_SUCCESS) {
    *why = "engine config refused: " + LastError();
    return false;
  }
  return Plan(cfg.get(), why);
}

Status CudnnGraph::Execute(std::span<const int64_t> uids, std::vector<void*> ptrs, void* workspace,
                           size_t workspace_bytes, cudaStream_t stream) const {
  if (workspace_bytes < workspace_)
    return Errorf(ErrorCode::kInternal, "cuDNN attention: workspace {} bytes < {} needed for {}",
                  workspace_bytes, workspace_, what_);
  BM_CUDNN_CHECK(cudnnSetStream(handle_, stream), "{}", what_);
  CudnnDesc pack;
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, pack.out()),
                 "variant pack of {}", what_);
  BM_TRY(Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
             static_cast<int64_t>(uids.size()), uids.data()));
  BM_TRY(Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
             static_cast<int64_t>(ptrs.size()), ptrs.data()));
  BM_TRY(Set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  BM_CUDNN_CHECK(cudnnBackendFinalize(pack.get()), "variant pack of {}", what_);
  BM_CUDNN_CHECK(cudnnBackendExecute(handle_, plan_->get(), pack.get()), "{}", what_);
  return Status::Ok();
}

CudnnDesc& CudnnGraph::Keep() {
  owned_.push_back(std::make_unique<CudnnDesc>());
  return *owned_.back();
}

template <typename V>
Status CudnnGraph::Set(const CudnnDesc& d, cudnnBackendAttributeName_t name,
                       cudnnBackendAttributeType_t type, int64_t n, const V* values) const {
  BM_CUDNN_CHECK(cudnnBackendSetAttribute(d.get(), name, type, n, values), "attribute {} of {}",
                 static_cast<int>(name), what_);
  return Status::Ok();
}

Status CudnnGraph::AddOp(CudnnDesc& op, const std::string& kind) {
  BM_CUDNN_CHECK(cudnnBackendFinalize(op.get()), "{} op #{} of {}", kind, ops_.size(), what_);
  ops_.push_back(op.get());
  return Status::Ok();
}

Status CudnnGraph::OperationGraph() {
  if (graph_ != nullptr) return Status::Ok();
  CudnnDesc& g = Keep();
  BM_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, g.out()),
                 "operation graph of {}", what_);
  BM_TRY(Set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             static_cast<int64_t>(ops_.size()), ops_.data()));
  BM_TRY(Set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_));
  BM_CUDNN_CHECK(cudnnBackendFinalize(g.get()), "operation graph ({} ops) of {}", ops_.size(),
                 what_);
  graph_ = g.get();
  return Status::Ok();
}

bool CudnnGraph::Plan(cudnnBackendDescriptor_t cfg, std::string* why) {
  auto plan = std::make_unique<CudnnDesc>();
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, plan->out()) !=
      CUDNN_STATUS_SUCCESS) {
    *why = "no plan descriptor";
    return false;
  }
  cudnnBackendSetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                           &handle_);
  cudnnBackendSetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                           CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
  cudnnStatus_t st = cudnnBackendFinalize(plan->get());
  int64_t ws = 0, n = 0;
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                  CUDNN_TYPE_INT64, 1, &n, &ws);
  if (st != CUDNN_STATUS_SUCCESS) {
    *why = fmt::format("{}: {}", cudnnGetErrorString(st), LastError());
    return false;
  }
  workspace_ = static_cast<size_t>(ws);
  plan_ = std::move(plan);
  return true;
}

bool CudnnGraph::EngineAt(int64_t i, cudnnBackendDescriptor_t* out) {
  CudnnDesc& e = Keep();
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, e.out()) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(e.get(), CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(e.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(e.get()) != CUDNN_STATUS_SUCCESS)
    return false;
  *out = e.get();
  return true;
}

std::string CudnnGraph::LastError() {
  char last[512] = {0};
  cudnnGetLastErrorString(last, sizeof(last));
  return last;
}

bool CudnnGraph::NoteFree(cudnnBackendDescriptor_t e) {
  std::array<cudnnBackendNumericalNote_t, 32> notes{};
  int64_t n = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               notes.size(), &n, notes.data()) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < n; ++i)
    if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) return false;
  return true;
}

bool CudnnGraph::EngineOf(cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t* out) {
  CudnnDesc& engine = Keep();
  int64_t n = 0;
  *out = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, engine.out()) !=
      CUDNN_STATUS_SUCCESS)
    return false;
  auto e = engine.get();
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                               &n, &e) != CUDNN_STATUS_SUCCESS)
    return false;
  *out = e;
  return true;
}

bool CudnnGraph::Deterministic(cudnnBackendDescriptor_t cfg) {
  cudnnBackendDescriptor_t e = nullptr;
  return EngineOf(cfg, &e) && NoteFree(e);
}

}  // namespace bm::train::cuda

#endif  // BENCHMAKE_HAVE_CUDNN
