#include "trainer/cuda/cuda_model_impl.h"

namespace bm::train::cuda {

// y[rows, out] = x[rows, in] W^T + b (+ residual)
template <typename T>
Status CudaModel::Impl::Linear(T* y, const T* x, size_t w, size_t b, int rows, int in, int out,
                               const T* residual) {
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in;
  a.trans_a = false, a.trans_b = true;
  a.ab_type = a.d_type = Dt();
  a.a = x, a.lda = in, a.b = W<T>(w), a.ldb = in, a.d = y, a.ldd = out;
  if (residual) a.c = residual, a.beta = 1.0f;
  bool has_bias = Gpt() && b != 0;
  if (has_bias && run.fused_epilogues) {
    a.epilogue = Epilogue::kBias;
    a.bias = W<T>(b);
    if (matmul->Supports(a)) return matmul->Run(a, stream);
    a.epilogue = Epilogue::kNone;
  }
  BM_TRY(matmul->Run(a, stream));
  if (!has_bias) return Status::Ok();
  return AddBias<T>(y, W<T>(b), rows, out, stream);
}

template <typename T>
Status CudaModel::Impl::RowParallelLinear(T* y, const T* x, size_t w, size_t b, int rows, int in,
                                          int out, const T* residual) {
  if (!Tp())
    return Phase("matmul fwd", [&] { return Linear<T>(y, x, w, b, rows, in, out, residual); });
  // Sequence parallel: the partial products (every row) in dln, reduce-scattered to this rank's
  // rows of y; otherwise all-reduced in y.
  T* partial = Sp() ? A<T>(dln) : y;
  BM_TRY(Phase("matmul fwd", [&] { return Linear<T>(partial, x, w, 0, rows, in, out, nullptr); }));
  const int mine = StreamRows(rows);
  const size_t count = static_cast<size_t>(mine) * out;
  if (Sp()) {
    BM_TRY(Phase("tp all-reduce", [&] {
      return run.tp->ReduceScatter(partial, y, count, ActType(), dist::ReduceOp::kSum, stream);
    }));
  } else {
    BM_TRY(TpAllReduce(y, count, ActType()));
  }
  return Phase("residual", [&] {
    if (Gpt() && b != 0) BM_TRY(AddBias<T>(y, W<T>(b), mine, out, stream));
    return ResidualAdd<T>(y, y, residual, count, stream);
  });
}

template <typename T>
Status CudaModel::Impl::NormForward(T* out, size_t mean, size_t rstd, const T* x, size_t w,
                                    size_t b) {
  const int rows = Rows(), c = C();
  T* y = Sp() ? A<T>(sp_rows) : out;
  BM_TRY(Phase("norm fwd", [&] {
    if (Gpt())
      return LayerNormForward<T>(y, A<float>(mean), A<float>(rstd), x, W<T>(w), W<T>(b), rows, c,
                                 stream);
    return RmsNormForward<T>(y, A<float>(rstd), x, W<T>(w), rows, c, stream, spec.norm_eps);
  }));
  if (!Sp()) return Status::Ok();
  return Phase("tp all-reduce", [&] {
    return run.tp->AllGather(y, out, static_cast<int64_t>(rows) * c, ActType(), stream);
  });
}

template <typename T>
Status CudaModel::Impl::NormBackward(T* dx, T* dy, const T* x, size_t w, size_t b, size_t mean,
                                     size_t rstd) {
  const int rows = Rows(), c = C();
  if (Sp()) {  // this rank's rows of the summed output gradient
    BM_TRY(Phase("tp all-reduce", [&] {
      return run.tp->ReduceScatter(dy, A<T>(sp_rows), static_cast<int64_t>(rows) * c, ActType(),
                                   dist::ReduceOp::kSum, stream);
    }));
    dy = A<T>(sp_rows);
  } else {
    BM_TRY(TpAllReduce(dy, static_cast<size_t>(rows) * c, ActType()));
  }
  // Under sequence parallelism the weight gradients of this rank's rows are summed over the TP
  // group before they are added.
  float* dw = Frozen() ? A<float>(frozen_norm_grad) : Sp() ? A<float>(sp_norm_grad) : G(w);
  float* db = !Gpt()     ? nullptr
              : Frozen() ? A<float>(frozen_norm_grad) + c
              : Sp()     ? A<float>(sp_norm_grad) + c
                         : G(b);
  if (Sp())
    BM_CUDA_CHECK(cudaMemsetAsync(dw, 0, 2 * static_cast<size_t>(c) * 4, stream),
                  "norm gradient scratch");
  BM_TRY(Phase("norm bwd", [&] {
    if (Gpt())
      return LayerNormBackward<T>(dx, dw, db, A<float>(norm_scratch), dy, x, W<T>(w),
                                  A<float>(mean), A<float>(rstd), rows, c, stream);
    return RmsNormBackward<T>(dx, dw, A<float>(norm_scratch), dy, x, W<T>(w), A<float>(rstd), rows,
                              c, stream);
  }));
  if (!Sp()) return Status::Ok();
  const size_t n = Gpt() ? 2 * static_cast<size_t>(c) : c;
  BM_TRY(TpAllReduce(dw, n, dist::DType::kFloat32));
  BM_TRY(AccumulateF32(G(w), dw, c, stream));
  return Gpt() ? AccumulateF32(G(b), db, c, stream) : Status::Ok();
}

template <typename T>
Result<T*> CudaModel::Impl::WholeStreamGrad() {
  if (!Sp()) return A<T>(dres);
  BM_TRY(Phase("tp all-reduce", [&] {
    return run.tp->AllGather(A<T>(dres), A<T>(dln), static_cast<int64_t>(Rows()) * C(), ActType(),
                             stream);
  }));
  return A<T>(dln);
}

template <typename T>
Status CudaModel::Impl::LinearGelu(T* post_out, T* pre_out, const T* x, size_t w, size_t b,
                                   int rows, int in, int out) {
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in;
  a.trans_a = false, a.trans_b = true;
  a.ab_type = a.d_type = Dt();
  a.a = x, a.lda = in, a.b = W<T>(w), a.ldb = in, a.ldd = out;
  a.bias = W<T>(b);
  if (run.fused_epilogues) {
    a.epilogue = Epilogue::kGeluAuxBias;
    a.d = post_out, a.aux = pre_out, a.ld_aux = out;
    if (matmul->Supports(a)) return matmul->Run(a, stream);
  }
  BM_TRY(Linear<T>(pre_out, x, w, b, rows, in, out, nullptr));
  return GeluForward<T>(post_out, pre_out, static_cast<size_t>(rows) * out, stream);
}

// dx[rows, in] = dy[rows, out] W (written), dW += dy^T x, db += sum dy. With dgelu_aux,
// dx is multiplied by gelu'(aux) (the caller's "dx" is then the pre-activation's gradient).
template <typename T>
Status CudaModel::Impl::LinearBackward(T* dx, const T* dy, const T* x, size_t w, size_t b, int rows,
                                       int in, int out, bool dgelu_aux, const T* aux) {
  BM_TRY(LinearWeightGrad<T>(dy, x, w, b, rows, in, out, !first_micro));
  if (!dx) return Status::Ok();
  return LinearInputGrad<T>(dx, dy, w, rows, in, out, dgelu_aux, aux);
}

// dW += dy^T x (dW = dy^T x without `accumulate`) and db += sum dy. The bias gradient is a
// column sum of its own rather than cuBLASLt's BGRADB epilogue: that epilogue slowed GPT-2's
// weight-gradient products by 0.2 ms a layer (run 35, docs/perf-history.md), more than the sum
// costs. `sole`: this product is dW's only one of the micro-batch (not the first of several
// chunks), so that dW may be written in bf16 where the data parallel reduces it in bf16
// (CudaDataParallel::GradBf16).
template <typename T>
Status CudaModel::Impl::LinearWeightGrad(const T* dy, const T* x, size_t w, size_t b, int rows,
                                         int in, int out, bool accumulate, bool sole) {
  if (Frozen()) return Status::Ok();  // no weight gradients: the input gradients only
  MatmulArgs g;
  g.m = out, g.n = in, g.k = rows;
  g.trans_a = true, g.trans_b = false;
  g.ab_type = Dt(), g.d_type = DType::kF32;
  g.a = dy, g.lda = out, g.b = x, g.ldb = in, g.d = G(w), g.ldd = in;
  g.beta = accumulate ? 1.0f : 0.0f;
  bf16* direct = nullptr;
  if constexpr (std::is_same_v<T, bf16>)
    if (!accumulate && sole) direct = dp.GradBf16(w, static_cast<size_t>(in) * out);
  if (direct) g.d = direct, g.d_type = DType::kBF16;
  BM_TRY(matmul->Run(g, stream));
  if (Gpt() && b != 0) BM_TRY(BiasGrad<T>(G(b), A<float>(bias_scratch), dy, rows, out, stream));
  return Status::Ok();
}

// dx = dy W (written), times gelu'(aux) with dgelu_aux.
template <typename T>
Status CudaModel::Impl::LinearInputGrad(T* dx, const T* dy, size_t w, int rows, int in, int out,
                                        bool dgelu_aux, const T* aux) {
  MatmulArgs d;
  d.m = rows, d.n = in, d.k = out;
  d.trans_a = false, d.trans_b = false;
  d.ab_type = d.d_type = Dt();
  d.a = dy, d.lda = out, d.b = W<T>(w), d.ldb = in, d.d = dx, d.ldd = in;
  if (dgelu_aux && run.fused_epilogues) {
    d.epilogue = Epilogue::kDGelu;
    d.aux = const_cast<T*>(aux), d.ld_aux = in;
    if (matmul->Supports(d)) return matmul->Run(d, stream);
    d.epilogue = Epilogue::kNone, d.aux = nullptr, d.ld_aux = 0;
  }
  BM_TRY(matmul->Run(d, stream));
  if (dgelu_aux) return GeluBackward<T>(dx, dx, aux, static_cast<size_t>(rows) * in, stream);
  return Status::Ok();
}

template <typename T>
Status CudaModel::Impl::LayerForward(int l, bool recompute) {
  const LayerActs& a = Acts(l);
  const LayerParams& p = layout.layers[l];
  int n = N(), c = C(), hd = spec.head_dim();
  T* x = A<T>(Res(l));
  BM_TRY(NormForward<T>(A<T>(a.norm1), a.mean1, a.rstd1, x, p.norm1_w, p.norm1_b));
  BM_TRY(Phase("matmul fwd", [&] {
    return Linear<T>(A<T>(a.qkv), A<T>(a.norm1), p.qkv_w, p.qkv_b, n, c, QkvCols(), nullptr);
  }));
  if (!Gpt()) {
    BM_TRY(Phase("rope", [&] {
      return Rope<T>(A<T>(a.qkv), A<float>(rope), cur_b, cur_t, Heads(), KvHeads(), hd, false,
                     stream);
    }));
  }
  BM_TRY(Phase("attention fwd", [&] {
    if (run.attention == AttentionImpl::kCudnn)
      return CudnnAttentionForward(A<T>(a.att), A<float>(a.lse), A<T>(a.qkv),
                                   AttShape(cur_b, cur_t), A<char>(att_scratch), att_scratch_bytes,
                                   stream);
    return AttentionForward<T>(A<T>(a.att), A<float>(a.lse), A<T>(a.qkv), cur_b, cur_t, Heads(),
                               KvHeads(), hd, run.attention, stream);
  }));
  BM_TRY(
      RowParallelLinear<T>(A<T>(a.res_mid), A<T>(a.att), p.proj_w, p.proj_b, n, AttCols(), c, x));
  BM_TRY(NormForward<T>(A<T>(a.norm2), a.mean2, a.rstd2, A<T>(a.res_mid), p.norm2_w, p.norm2_b));
  if (Gpt()) {
    BM_TRY(Phase("matmul fwd", [&] {
      return LinearGelu<T>(A<T>(post), A<T>(a.pre), A<T>(a.norm2), p.fc_w, p.fc_b, n, c, Ffn());
    }));
  } else {
    BM_TRY(Phase("matmul fwd", [&] {
      return Linear<T>(A<T>(a.pre), A<T>(a.norm2), p.fc_w, 0, n, c, BigCols(), nullptr);
    }));
    BM_TRY(Phase("activation",
                 [&] { return SwigluForward<T>(A<T>(post), A<T>(a.pre), n, Ffn(), stream); }));
  }
  if (recompute) return Status::Ok();  // the layer's output is already stored
  return RowParallelLinear<T>(A<T>(Res(l + 1)), A<T>(post), p.fc2_w, p.fc2_b, n, Ffn(), c,
                              A<T>(a.res_mid));
}

template <typename T>
Status CudaModel::Impl::LayerBackward(int l) {
  if (run.recompute) BM_TRY(LayerForward<T>(l, true));
  const LayerActs& a = Acts(l);
  const LayerParams& p = layout.layers[l];
  int n = N(), c = C(), hd = spec.head_dim(), f = Ffn();
  T* dr = A<T>(dres);  // the residual stream's rows here
  // MLP: res[l+1] = res_mid + fc2(act(fc(norm2(res_mid)))). The row-parallel fc2 reads the
  // whole stream's gradient (gathered into dln under sequence parallelism; done with it before
  // the fc backward writes dln).
  BM_ASSIGN_OR_RETURN(T * drw, WholeStreamGrad<T>());
  // recompute_norms: the norms' outputs share one buffer; the fc backward reads norm2's (already
  // there after a recomputed forward), the qkv backward norm1's (recomputed below).
  if (run.recompute_norms && !run.recompute)
    BM_TRY(NormForward<T>(A<T>(a.norm2), a.mean2, a.rstd2, A<T>(a.res_mid), p.norm2_w, p.norm2_b));
  T* dbig = A<T>(BigGrad(a));
  if (Gpt()) {
    BM_TRY(Phase("activation", [&] {
      return GeluForward<T>(A<T>(post), A<T>(a.pre), static_cast<size_t>(n) * f, stream);
    }));
    BM_TRY(Phase("matmul bwd", [&] {
      return LinearBackward<T>(dbig, drw, A<T>(post), p.fc2_w, p.fc2_b, n, f, c, true, A<T>(a.pre));
    }));
  } else {
    // The activation is not kept: the SwiGLU backward recomputes it on its way (one read of
    // the pre-activation for both), before the down projection's weight gradient reads it. Its
    // gradient comes in the activation's buffer and the pre-activation's goes out over the
    // pre-activation (each element read before it is written, by the same thread).
    BM_TRY(Phase("matmul bwd", [&] {
      return LinearInputGrad<T>(A<T>(post), drw, p.fc2_w, n, f, c, false, nullptr);
    }));
    BM_TRY(Phase("activation", [&] {
      return SwigluBackward<T>(dbig, A<T>(post), A<T>(post), A<T>(a.pre), n, f, stream);
    }));
    BM_TRY(Phase("matmul bwd", [&] {
      return LinearWeightGrad<T>(drw, A<T>(post), p.fc2_w, 0, n, f, c, !first_micro);
    }));
  }
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(A<T>(dln), dbig, A<T>(a.norm2), p.fc_w, p.fc_b, n, c, BigCols(), false,
                             nullptr);
  }));
  BM_TRY(NormBackward<T>(dr, A<T>(dln), A<T>(a.res_mid), p.norm2_w, p.norm2_b, a.mean2, a.rstd2));
  // Attention: res_mid = res[l] + proj(attn(qkv(norm1(res[l]))))
  BM_ASSIGN_OR_RETURN(drw, WholeStreamGrad<T>());
  T* datt = A<T>(AttGrad(a));
  T* dqkv = A<T>(QkvGrad(a));
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(datt, drw, A<T>(a.att), p.proj_w, p.proj_b, n, AttCols(), c, false,
                             nullptr);
  }));
  BM_TRY(Phase("attention bwd", [&] {
    if (run.attention == AttentionImpl::kCudnn && !run.deterministic_attention)
      return CudnnAttentionAccumulatedBackward(dqkv, datt, A<T>(a.att), A<T>(a.qkv),
                                               A<float>(a.lse), AttShape(cur_b, cur_t),
                                               A<char>(att_scratch), att_scratch_bytes, stream);
    if (run.attention == AttentionImpl::kCudnn)
      return CudnnAttentionBackward(dqkv, datt, A<T>(a.att), A<T>(a.qkv), A<float>(a.lse),
                                    AttShape(cur_b, cur_t), A<char>(att_scratch), att_scratch_bytes,
                                    stream);
    return AttentionBackward<T>(dqkv, A<float>(att_scratch), datt, A<T>(a.att), A<T>(a.qkv),
                                A<float>(a.lse), cur_b, cur_t, Heads(), KvHeads(), hd,
                                run.attention, stream);
  }));
  if (!Gpt()) {
    BM_TRY(Phase("rope", [&] {
      return Rope<T>(dqkv, A<float>(rope), cur_b, cur_t, Heads(), KvHeads(), hd, true, stream);
    }));
  }
  if (run.recompute_norms)
    BM_TRY(NormForward<T>(A<T>(a.norm1), a.mean1, a.rstd1, A<T>(Res(l)), p.norm1_w, p.norm1_b));
  BM_TRY(Phase("matmul bwd", [&] {
    return LinearBackward<T>(A<T>(dln), dqkv, A<T>(a.norm1), p.qkv_w, p.qkv_b, n, c, QkvCols(),
                             false, nullptr);
  }));
  return NormBackward<T>(dr, A<T>(dln), A<T>(Res(l)), p.norm1_w, p.norm1_b, a.mean1, a.rstd1);
}

// Rows [r0, r0 + rows) of the final norm's output through the LM head and the loss; in
// training also dlogits (in place), dnormf for those rows, and the LM head's gradient.
template <typename T>
Status CudaModel::Impl::Classifier(int r0, int rows, float grad_scale, Mode mode) {
  int c = C(), v = spec.local_vocab();
  T* x = A<T>(normf) + static_cast<size_t>(r0) * c;
  T* lg = A<T>(logits);
  BM_TRY(Phase("lm head matmul",
               [&] { return Linear<T>(lg, x, layout.lm_head, 0, rows, c, v, nullptr); }));
  if (mode == Mode::kArgmax) {
    if (Tp()) return Status(ErrorCode::kUnsupported, "argmax under tensor parallelism");
    return Phase("cross-entropy",
                 [&] { return ArgmaxRows<T>(A<int>(argmax) + r0, lg, rows, v, v, stream); });
  }
  if (Tp()) {
    BM_TRY(VocabParallelLoss<T>(lg, r0, rows, grad_scale, mode == Mode::kTrain));
  } else {
    BM_TRY(Phase("cross-entropy", [&] {
      return CrossEntropy<T>(lg, A<float>(losses) + r0, A<int>(targets) + r0,
                             A<float>(weights) + r0, grad_scale, rows, v, v, mode == Mode::kTrain,
                             stream);
    }));
  }
  if (mode != Mode::kTrain) return Status::Ok();
  // The first chunk of a step's first micro-batch writes the LM head's gradient; the rest add,
  // and so does the embedding's backward when the head is tied to it here.
  return Phase("lm head matmul", [&] {
    BM_TRY(LinearWeightGrad<T>(lg, x, layout.lm_head, 0, rows, c, v, !first_micro || r0 > 0,
                               rows == N() && !spec.tied_here()));
    return LinearInputGrad<T>(A<T>(dnormf) + static_cast<size_t>(r0) * c, lg, layout.lm_head, rows,
                              c, v, false, nullptr);
  });
}

// The cross-entropy of rows [r0, r0 + rows) over the TP group's vocabulary shares
// (classifier.cuh): every rank gets the rows' whole losses and its own columns of dlogits.
template <typename T>
Status CudaModel::Impl::VocabParallelLoss(T* lg, int r0, int rows, float grad_scale,
                                          bool write_grad) {
  const int v = spec.local_vocab(), real = spec.vocab_real(), begin = spec.vocab_begin();
  float* stats = A<float>(xent_stats);  // [4, rows]
  const int* tg = A<int>(targets) + r0;
  BM_TRY(Phase("cross-entropy",
               [&] { return VocabParallelStats<T>(stats, lg, tg, rows, real, v, begin, stream); }));
  BM_TRY(TpAllReduce(stats + rows, rows, dist::DType::kFloat32, dist::ReduceOp::kMax));
  BM_TRY(Phase("cross-entropy", [&] { return VocabParallelRescale(stats, rows, stream); }));
  BM_TRY(TpAllReduce(stats + 2 * rows, 2 * static_cast<size_t>(rows), dist::DType::kFloat32));
  return Phase("cross-entropy", [&] {
    return VocabParallelFinish<T>(lg, A<float>(losses) + r0, stats, tg, A<float>(weights) + r0,
                                  grad_scale, rows, real, v, begin, write_grad, stream);
  });
}

// The units (trainer/cuda/param_layout.h) go through dp's hooks in the order they are used,
// as in the CPU twin (trainer/cpu/model.cc): acquired before (ZeRO-3 gathers, the next one
// prefetched), released after, and in training their gradients begun (ZeRO 2-3: a fresh unit
// bucket) and reported ready when their backward is done (the reduction starts, overlapping
// the next unit's backward). A pipeline stage has its own units only.
template <typename T>
Status CudaModel::Impl::ForwardLayers() {
  int n = N(), c = C();
  const int units = static_cast<int>(layout.units().size());
  if (spec.embeddings) {
    BM_TRY(dp.Acquire(0, units > 1 ? 1 : -1));
    BM_TRY(Phase("embedding", [&] {
      // Vocabulary-parallel: each TP rank looks up its ids (zeros for the others) and the first
      // adds the positions; the sum over the group is the whole embedding (under sequence
      // parallelism every row is looked up into dln and reduce-scattered to this rank's rows).
      const T* wpe = Gpt() && spec.tp_rank == 0 ? W<T>(layout.wpe) : nullptr;
      return EmbeddingForward<T>(Sp() ? A<T>(dln) : A<T>(Res(0)), A<int>(tokens), W<T>(layout.wte),
                                 wpe, n, cur_t, c, spec.vocab_begin(), spec.local_vocab(), stream);
    }));
    if (Sp()) {
      BM_TRY(Phase("tp all-reduce", [&] {
        return run.tp->ReduceScatter(A<T>(dln), A<T>(Res(0)), static_cast<int64_t>(Rows()) * c,
                                     ActType(), dist::ReduceOp::kSum, stream);
      }));
    } else {
      BM_TRY(TpAllReduce(A<T>(Res(0)), static_cast<size_t>(n) * c, ActType()));
    }
    if (spliced_count > 0) {
      // The spliced rows over the summed lookup, on every rank (its stream's rows under
      // sequence parallelism), each with its learned position (gpt).
      BM_TRY(Phase("embedding", [&] {
        return EmbeddingSpliceForward<T>(
            A<T>(Res(0)), A<int>(spliced_positions), static_cast<const T*>(spliced_rows),
            Gpt() ? W<T>(layout.wpe) : nullptr, spliced_count, Sp() ? spec.tp_rank * Rows() : 0,
            Rows(), cur_t, c, stream);
      }));
    }
    if (!spec.tied_here()) BM_TRY(dp.Release(0));  // tied: the classifier reads wte again
  }
  for (int l = 0; l < Layers(); ++l) {
    const int u = layout.unit_of_layer(l);
    BM_TRY(dp.Acquire(u, u + 1 < units ? u + 1 : -1));
    BM_TRY(LayerForward<T>(l, false));
    BM_TRY(dp.Release(u));
  }
  return Status::Ok();
}

// The last stage's head on the stage's output: the final norm, the classifier over chunks of
// rows and, in training, the loss's gradient back to dres (the gradient of the output).
template <typename T>
Status CudaModel::Impl::Head(float grad_scale, Mode mode) {
  int n = N(), c = C();
  const int final_unit = layout.final_unit();
  BM_TRY(dp.Acquire(final_unit, -1));
  T* xl = A<T>(Res(Layers()));
  BM_TRY(NormForward<T>(A<T>(normf), meanf, rstdf, xl, layout.normf_w, layout.normf_b));
  if (mode == Mode::kTrain) {
    // The classifier writes the LM head's gradient first: the final unit's (or, tied, wte's).
    BM_TRY(dp.BeginUnitGradients(final_unit));
    if (spec.tied_here()) BM_TRY(dp.BeginUnitGradients(0));
  }
  int chunk = std::min<int>(run.logits_chunk_rows, n);
  for (int r0 = 0; r0 < n; r0 += chunk) {
    BM_TRY(Classifier<T>(r0, std::min(chunk, n - r0), grad_scale, mode));
  }
  if (mode != Mode::kTrain) {
    BM_TRY(dp.Release(final_unit));
    if (spec.tied_here()) BM_TRY(dp.Release(0));
    if (mode == Mode::kArgmax) return Status::Ok();
    return SumLosses(A<float>(loss_sum), A<float>(losses), n, stream);
  }
  BM_TRY(SumLosses(A<float>(loss_sum), A<float>(losses), n, stream));
  BM_CUDA_CHECK(cudaMemsetAsync(A<T>(dres), 0, static_cast<size_t>(Rows()) * c * sizeof(T), stream),
                "zero residual grad");
  // The head's input gradient: partial sums over the TP group, reduced by the norm's backward.
  BM_TRY(
      NormBackward<T>(A<T>(dres), A<T>(dnormf), xl, layout.normf_w, layout.normf_b, meanf, rstdf));
  BM_TRY(dp.GradientsReady(final_unit));
  return dp.Release(final_unit);
}

// From dres (the gradient of the stage's output) through the stage's layers; the first stage
// then runs the embedding backward, another leaves dres = the gradient of its input.
template <typename T>
Status CudaModel::Impl::BackwardLayers() {
  for (int l = Layers() - 1; l >= 0; --l) {
    const int u = layout.unit_of_layer(l);
    BM_TRY(dp.Acquire(u, l > 0 ? u - 1 : -1));  // the embedding backward reads no weights
    BM_TRY(dp.BeginUnitGradients(u));
    BM_TRY(LayerBackward<T>(l));
    BM_TRY(dp.GradientsReady(u));
    BM_TRY(dp.Release(u));
  }
  if (!spec.embeddings) return Status::Ok();
  if (!spec.tied_here()) BM_TRY(dp.BeginUnitGradients(0));
  BM_TRY(EmbeddingBackwardAll());
  BM_TRY(dp.GradientsReady(0));
  if (spec.tied_here()) BM_TRY(dp.Release(0));
  return Status::Ok();
}

// The whole model on one stage.
template <typename T>
Status CudaModel::Impl::ForwardBackward(float grad_scale, Mode mode) {
  BM_TRY(ForwardLayers<T>());
  BM_TRY(Head<T>(grad_scale, mode));
  if (mode != Mode::kTrain) return Status::Ok();
  // A frozen model's backward only carries the spliced rows' gradient: without them, nothing.
  if (Frozen() && !(spliced_count > 0 && spliced_grad)) return Status::Ok();
  return BackwardLayers<T>();
}

Status CudaModel::Impl::GradSumSquares() {
  float* out = A<float>(norm_sq);
  BM_TRY(dp.ZeroPendingGradients());  // (no micro-batch since ZeroGradients: their squares too)
  // Data parallel alone: the whole gradient, or the own slices over the group (the squares
  // summed as they were reduced, or read again).
  if (!Tp() && !Pp() && (!dp.sums_own_slices() || dp.squares_summed()))
    return dp.GradSumSquares(out, A<float>(norm_partials));
  // Model parallel, or ZeRO-1 over several ranks: the ranges this rank counts (of those, the
  // parts in its own slices where only they are reduced: ZeRO-1 over several ranks, ZeRO 2-3),
  // summed in a fixed order, then over the DP group (own slices), the TP and the PP group. So a
  // tensor replicated over the TP group counts once (on the rank that owns it), and once over
  // its DP group (in the slices of the one rank that holds each element).
  const bool own = dp.reduces_to_own_slices();
  const std::vector<Range> summed = own ? dp.OwnSlicesOf(counted) : counted;
  if (summed.size() > RangeSumsCapacity())
    return Errorf(ErrorCode::kInternal, "{} gradient ranges to sum, room for {}", summed.size(),
                  RangeSumsCapacity());
  for (size_t i = 0; i < summed.size(); ++i)
    BM_TRY(cuda::GradSumSquares(A<float>(range_sums) + i, A<float>(norm_partials),
                                dp.ReducedGrad(summed[i].offset), summed[i].numel, stream));
  BM_TRY(SumLosses(out, A<float>(range_sums), static_cast<int>(summed.size()), stream));
  if (own) BM_TRY(dp.SumOverGroup(out));
  BM_TRY(TpAllReduce(out, 1, dist::DType::kFloat32));
  if (!Pp()) return Status::Ok();
  return run.pp->AllReduce(out, 1, dist::DType::kFloat32, dist::ReduceOp::kSum, stream);
}

Status CudaModel::Impl::Run(float grad_scale, Mode mode) {
  if (mode == Mode::kTrain) {
    BM_TRY(dp.BeginMicroBatch(last_micro));
    first_micro = dp.writes_fresh_gradients();
    if (memory.layers_over_gradients > 0 && !(dp.begins_step() && last_micro)) {
      return Status(ErrorCode::kInvalidArgument,
                    "CUDA model: planned for one micro-batch a step (activations over the "
                    "gradients: RunSpec::micro_batches_per_step = 1), given one that accumulates");
    }
  } else {
    first_micro = false;
  }
  Status s = WithElementType(
      run.dtype, [&](auto tag) { return ForwardBackward<decltype(tag)>(grad_scale, mode); });
  if (!s.ok()) return s;
  if (mode == Mode::kTrain) {
    norm_fresh = false;
    BM_TRY(dp.EndMicroBatch());
  }
  return Status::Ok();
}

}  // namespace bm::train::cuda
