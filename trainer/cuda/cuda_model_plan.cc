#include "trainer/cuda/cuda_model_impl.h"

namespace bm::train::cuda {

Status CudaModel::Impl::Plan() {
  MemoryPlan plan;
  size_t n = MaxN(), c = C();
  // The residual stream's rows here (a TP rank's share under sequence parallelism); the norms'
  // gathered outputs and the TP regions keep every row.
  const size_t rows = StreamRows(MaxN());
  elem = Lowp() ? 2 : 4;
  dp.Plan(&plan);
  // Per activation slot (one, or the micro-batches a pipeline stage keeps in flight): the
  // stage's residual streams and, without recompute, each layer's activations. Layer l's block
  // holds the stream into it (alive from layer l - 1's forward to the end of layer l's
  // backward, as its activations are) and, without recompute, its activations; the head's
  // input stream stands alone. With full recompute the blocks are the streams alone.
  const int slots = run.pipeline_slots, layers = Layers();
  const size_t stream_bytes = rows * c * elem;
  res.resize(static_cast<size_t>(slots) * (layers + 1));
  acts.resize(run.recompute ? 1 : static_cast<size_t>(slots) * layers);
  size_t bh = static_cast<size_t>(run.micro_batch) * Heads() * run.seq;
  const size_t norm_out =
      run.recompute_norms ? plan.Add("norm output (shared, recomputed)", n * c * elem) : 0;
  // One layer's activations, at offsets from 0 (a sub-plan placed as a whole below).
  MemoryPlan one;
  LayerActs rel{};
  if (!run.recompute_norms) rel.norm1 = one.Add("norm1", n * c * elem);
  rel.mean1 = one.Add("mean1", rows * 4);
  rel.rstd1 = one.Add("rstd1", rows * 4);
  rel.qkv = one.Add("qkv", n * QkvCols() * elem);
  rel.att = one.Add("attention out", n * AttCols() * elem);
  rel.lse = one.Add("attention lse", bh * 4);
  rel.res_mid = one.Add("residual mid", rows * c * elem);
  if (!run.recompute_norms) rel.norm2 = one.Add("norm2", n * c * elem);
  rel.mean2 = one.Add("mean2", rows * 4);
  rel.rstd2 = one.Add("rstd2", rows * 4);
  rel.pre = one.Add("mlp pre-activation", n * BigCols() * elem);
  const auto placed = [&](size_t base) {  // the layer's activations from `base`
    LayerActs a = rel;
    for (size_t* f : {&a.norm1, &a.mean1, &a.rstd1, &a.qkv, &a.att, &a.lse, &a.res_mid, &a.norm2,
                      &a.mean2, &a.rstd2, &a.pre})
      *f += base;
    if (run.recompute_norms) a.norm1 = a.norm2 = norm_out;
    return a;
  };
  // A layer's block: its input stream, then (without recompute) its activations.
  const size_t acts_at = MemoryPlan::Aligned(stream_bytes);
  const size_t block = acts_at + (run.recompute ? 0 : one.total());
  // With one micro-batch a step, layer l's block is dead when its backward ends, and the
  // reduced gradients of the layers below it (and of the embeddings, the last) are first written
  // after that: at zero 0-1 the full gradients (their added parts zeroed only then:
  // dp.ZeroGradientsPerUnit), at zero 2-3 the own slices (each reduce-scattered whole after its
  // unit's backward, on the communication stream once the compute stream is past it). So layers'
  // blocks go there, packed bottom up from the gradients' start (at zero 0-1 after tied
  // embeddings, whose gradient the head writes there; at 2-3 it goes to the embeddings' bucket),
  // layer l's ending before the gradients of layer l - 1 do (layer 0's before the embeddings' do).
  std::vector<std::optional<size_t>> over(static_cast<size_t>(slots) * layers);
  if (run.micro_batches_per_step == 1 && slots == 1 && !Pp() && !Frozen()) {
    std::vector<size_t> limits;
    for (int l = 0; l < layers; ++l)
      limits.push_back(dp.ReducedGradEnd(l > 0 ? layout.unit_of_layer(l - 1) : 0));
    const bool after_tied = spec.tied_here() && !dp.gradients_in_buckets();
    over =
        PackUnderLimits(after_tied ? dp.ReducedGradEnd(0) : dp.ReducedGradBegin(), block, limits);
  }
  memory.layers_over_gradients = 0;
  for (int s = 0; s < slots; ++s) {
    for (int l = 0; l < layers; ++l) {
      const size_t i = static_cast<size_t>(s) * layers + l;
      size_t base;
      if (over[i]) {
        base = *over[i];
        ++memory.layers_over_gradients;
      } else {
        base = plan.Add(run.recompute ? "residual stream" : "residual stream + layer activations",
                        block);
      }
      res[static_cast<size_t>(s) * (layers + 1) + l] = base;
      if (!run.recompute) acts[i] = placed(base + acts_at);
    }
    res[static_cast<size_t>(s) * (layers + 1) + layers] =
        plan.Add("residual stream (the head's)", stream_bytes);
  }
  if (run.recompute) acts[0] = placed(plan.Add("layer activations", one.total()));
  if (memory.layers_over_gradients > 0 && !dp.gradients_in_buckets()) dp.ZeroGradientsPerUnit();
  if (CountsRanges()) {
    counted = {Range{0, layout.total(), false}};  // until CountGradients says otherwise
    range_sums = plan.Add("grad sum of squares per counted range", RangeSumsCapacity() * 4);
  }
  if (Sp()) {
    sp_rows = plan.Add("sequence-parallel norm rows", rows * c * elem);
    sp_norm_grad = plan.Add("sequence-parallel norm gradients", 2 * c * 4);
  }
  // The first of several stages receives the last stage's tied-embedding gradient here.
  if (spec.tied && spec.embeddings && !spec.head)
    tied_scratch = plan.Add("tied embedding gradient (received)",
                            static_cast<size_t>(spec.local_vocab()) * c * 4);
  losses = plan.Add("token losses", n * 4);
  loss_sum = plan.Add("loss sum", 4);
  dres = plan.Add("residual grad", rows * c * elem);
  dln = plan.Add("norm grad", n * c * elem);
  size_t ns = Gpt() ? LayerNormScratchFloats(n, c) : RmsNormScratchFloats(n, c);
  // Frozen: the norms' weight-gradient column sums (never read) at the scratch's end, 256-byte
  // aligned as an entry of its own would be.
  const size_t ns_aligned = (ns + 63) / 64 * 64;
  norm_scratch = plan.Add("norm scratch", (Frozen() ? ns_aligned + 2 * c : ns) * 4);
  frozen_norm_grad = norm_scratch + ns_aligned * 4;
  // A layer's MLP temporaries, its attention's and the head's are never live together (a layer
  // runs its attention, then its MLP, backward the other way round; the head runs between the
  // last layer's forward and its backward; each operation whole on one stream): they share.
  // The attention's part comes last, so that its cuDNN scratch can be sized to the room the
  // others leave.
  plan.BeginShared("a layer's MLP | the head | a layer's attention");
  post = plan.Add("mlp activation", n * Ffn() * elem);
  if (Gpt()) gelu_grad = plan.Add("mlp pre-activation grad", n * BigCols() * elem);
  plan.NextPart();
  if (spec.head) {
    int chunk = std::min<int>(run.logits_chunk_rows, MaxN());
    normf = plan.Add("final norm", n * c * elem);
    meanf = plan.Add("final mean", rows * 4);
    rstdf = plan.Add("final rstd", rows * 4);
    dnormf = plan.Add("final norm grad", n * c * elem);
    logits = plan.Add("logits chunk", static_cast<size_t>(chunk) * spec.local_vocab() * elem);
    if (Tp())
      xent_stats = plan.Add("vocabulary-parallel row statistics", static_cast<size_t>(chunk) * 16);
    plan.NextPart();
  }
  if (QkvCols() > BigCols()) qkv_grad = plan.Add("qkv grad", n * QkvCols() * elem);
  if (static_cast<size_t>(AttCols()) > c)
    att_grad = plan.Add("attention out grad", n * AttCols() * elem);
  att_scratch_bytes = AttentionScratchFloats(run.micro_batch, run.seq, Heads()) * 4;
  if (run.attention == AttentionImpl::kCudnn) {
    if (!Lowp())
      return Status(ErrorCode::kInvalidArgument, "cuDNN attention needs bf16 or fp16 (not fp32)");
    if (!run.deterministic_attention) {  // one call, its fp32 dQ accumulator in the scratch
      BM_ASSIGN_OR_RETURN(
          size_t ws, CudnnAttentionAccumulatedWorkspaceBytes(AttShape(run.micro_batch, run.seq)));
      att_scratch_bytes = std::max(att_scratch_bytes, ws);
      memory.attention_key_block = run.seq;
    } else {
      // kCudnnKeyChunkAuto: the backward as one call (faster: no partial dQ to add, fewer
      // launches; run 31) when its scratch fits in the room the MLP's or the head's part takes
      // anyway, so that it costs no memory; else blocks of kCudnnKeyChunk keys.
      if (run.attention_chunk == kCudnnKeyChunkAuto) {
        run.attention_chunk = 0;
        BM_ASSIGN_OR_RETURN(size_t one,
                            CudnnAttentionWorkspaceBytes(AttShape(run.micro_batch, run.seq)));
        if (!plan.PartFits(std::max(one, att_scratch_bytes))) run.attention_chunk = kCudnnKeyChunk;
      }
      BM_ASSIGN_OR_RETURN(size_t ws,
                          CudnnAttentionWorkspaceBytes(AttShape(run.micro_batch, run.seq)));
      att_scratch_bytes = std::max(att_scratch_bytes, ws);
      memory.attention_key_block = CudnnKeysPerCall(AttShape(run.micro_batch, run.seq));
    }
  }
  att_scratch = plan.Add("attention scratch", att_scratch_bytes);
  plan.EndShared();
  size_t widest = std::max<size_t>({size_t(BigCols()), size_t(QkvCols()), c});
  if (!Frozen()) {  // a frozen model has no gradients: no bias-gradient or norm-sum scratch
    bias_scratch =
        plan.Add("bias grad scratch", BiasGradScratchFloats(static_cast<int>(n), widest) * 4);
    norm_sq = plan.Add("grad sum of squares", 4);
    norm_partials = plan.Add("grad norm partials", kGradNormBlocks * 4);
  }
  rope = plan.Add("rope table", static_cast<size_t>(run.seq) * spec.head_dim() * 4);
  tokens = plan.Add("tokens", n * 4);
  targets = plan.Add("targets", n * 4);
  argmax = plan.Add("argmax", n * 4);
  weights = plan.Add("loss weights", n * 4);
  bucket_tokens = plan.Add("embedding buckets", n * 4);
  bucket_offsets = plan.Add("embedding bucket offsets", (n + 1) * 4);
  bucket_positions = plan.Add("embedding bucket positions", n * 4);
  spliced_positions = plan.Add("spliced row positions", n * 4);
  workspace = plan.Add("cuBLASLt workspace", Matmul::kDefaultWorkspaceBytes);
  memory.plan_bytes = plan.total();
  memory.plan_summary = plan.Summary();
  if (memory.layers_over_gradients > 0)
    memory.plan_summary += fmt::format(
        "  and {} layers' input streams{} ({:.1f} MiB each) over the "
        "gradients written after their backward\n",
        memory.layers_over_gradients, run.recompute ? "" : " and activations", block / 1048576.0);
  if (memory.attention_key_block > 0)
    memory.plan_summary += fmt::format("  cuDNN's attention backward: {} of the {} keys a call\n",
                                       memory.attention_key_block, run.seq);
  BM_TRY(CheckFits(plan));
  BM_ASSIGN_OR_RETURN(arena, DeviceArena::Create(plan, run.nccl_window ? comm : nullptr));
  return dp.Bind(arena.get(), stream);
}

// Refuses a plan the GPU cannot hold, with the plan's numbers and what would help.
Status CudaModel::Impl::CheckFits(const MemoryPlan& plan) const {
  size_t free_bytes = 0, total_bytes = 0;
  BM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes), "memory info");
  if (plan.total() <= free_bytes) return Status::Ok();
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::string hint;
  if (Frozen())
    hint = "a frozen model is whole on every rank: try a smaller lbs or recompute = true";
  else if (run.zero < 3)
    hint = fmt::format("try zero = {} or more ranks", run.zero + 1);
  else
    hint = "try more ranks, a smaller lbs, or recompute = true";
  return Errorf(
      ErrorCode::kUnavailable,
      "the run needs {:.1f} GiB per GPU, the GPU has {:.1f} GiB free of {:.1f} GiB; {}\n{}",
      plan.total() / kGiB, free_bytes / kGiB, total_bytes / kGiB, hint, plan.Summary());
}

Status CudaModel::Impl::Stage(const TokenBatch& batch) {
  if (batch.batch <= 0 || batch.seq <= 0 || batch.batch > run.micro_batch || batch.seq > run.seq) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "batch {} x {} tokens; this CUDA model was planned for at most {} x {}",
                  batch.batch, batch.seq, run.micro_batch, run.seq);
  }
  cur_b = batch.batch, cur_t = batch.seq;
  size_t n = N();
  if (Sp() && n % spec.tp != 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "sequence parallelism splits a micro-batch's {} x {} tokens over TP{}: not "
                  "divisible",
                  batch.batch, batch.seq, spec.tp);
  for (size_t i = 0; i < n; ++i) {
    int tok = batch.tokens[i], tgt = batch.targets ? batch.targets[i] : 0;
    if (tok < 0 || tok >= spec.vocab || tgt >= spec.vocab) {
      return Errorf(ErrorCode::kInvalidArgument, "token {} or target {} at {} outside vocab {}",
                    tok, tgt, i, spec.vocab);
    }
  }
  BM_TRY(CheckSpliced(batch.spliced));
  // The previous batch's copies must be done before the staging buffers are reused.
  BM_CUDA_CHECK(cudaEventSynchronize(staged), "staging event");
  size_t max_n = MaxN();
  int* hi = h_ints;
  std::memcpy(hi, batch.tokens, n * 4);
  if (batch.targets)
    std::memcpy(hi + max_n, batch.targets, n * 4);
  else
    std::fill(hi + max_n, hi + max_n + n, 0);
  float* hw = h_floats;
  for (size_t i = 0; i < n; ++i) hw[i] = batch.mask ? (batch.mask[i] ? 1.0f : 0.0f) : 1.0f;
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(tokens), hi, n * 4, cudaMemcpyHostToDevice, stream),
                "tokens {}", n);
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(targets), hi + max_n, n * 4, cudaMemcpyHostToDevice, stream),
                "targets {}", n);
  BM_CUDA_CHECK(cudaMemcpyAsync(A<float>(weights), hw, n * 4, cudaMemcpyHostToDevice, stream),
                "weights {}", n);
  host_tokens = batch.tokens;
  if (spliced_count > 0) {
    int* hs = hi + 5 * max_n + 1;
    std::memcpy(hs, batch.spliced->positions, static_cast<size_t>(spliced_count) * 4);
    BM_CUDA_CHECK(
        cudaMemcpyAsync(A<int>(spliced_positions), hs, static_cast<size_t>(spliced_count) * 4,
                        cudaMemcpyHostToDevice, stream),
        "spliced positions {}", spliced_count);
  }
  BM_CUDA_CHECK(cudaEventRecord(staged, stream), "staging event");
  return Status::Ok();
}

// Takes the batch's spliced rows (none: count 0) after checking them against the batch.
Status CudaModel::Impl::CheckSpliced(const SplicedRows* sp) {
  spliced_count = 0, spliced_rows = nullptr, spliced_grad = nullptr;
  if (!sp || sp->count == 0) return Status::Ok();
  const int n = N();
  if (Pp())
    return Status(ErrorCode::kUnsupported, "CUDA backend: spliced rows with pipeline parallelism");
  if (sp->count < 0 || sp->count > n || !sp->positions || !sp->rows)
    return Errorf(ErrorCode::kInvalidArgument,
                  "spliced rows: {} rows (positions {}, rows {}) for a batch of {} positions",
                  sp->count, sp->positions ? "given" : "null", sp->rows ? "given" : "null", n);
  BM_TRY(CheckSplicedPointers(*sp));
  spliced_skip.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i < sp->count; ++i) {
    const int pos = sp->positions[i];
    if (pos < 0 || pos >= n)
      return Errorf(ErrorCode::kInvalidArgument,
                    "spliced row {}: position {} outside the batch's {} x {} = {} positions", i,
                    pos, cur_b, cur_t, n);
    if (spliced_skip[pos])
      return Errorf(ErrorCode::kInvalidArgument, "spliced row {}: position {} given twice", i, pos);
    spliced_skip[pos] = 1;
  }
  spliced_count = sp->count, spliced_rows = sp->rows, spliced_grad = sp->grad;
  return Status::Ok();
}

// The kinds of SplicedRows' pointers (cuda_model.h): positions on the host (read there before
// anything else touches them), rows and grad on this GPU, each spanning [count, hidden] in the
// compute dtype. A host buffer or a short one given as rows would otherwise fault inside the
// splice kernel and be reported, sticky, by whichever kernel's check came next.
Status CudaModel::Impl::CheckSplicedPointers(const SplicedRows& sp) const {
  BM_TRY(CheckHostPointer(sp.positions, "spliced rows' positions (SplicedRows::positions)"));
  int device = 0;
  BM_CUDA_CHECK(cudaGetDevice(&device), "current device");
  const size_t bytes = static_cast<size_t>(sp.count) * C() * elem;
  BM_TRY(CheckDeviceRange(sp.rows, bytes, device,
                          fmt::format("spliced rows (SplicedRows::rows: {} x {} {})", sp.count, C(),
                                      DTypeName(run.dtype))));
  if (sp.grad)
    BM_TRY(CheckDeviceRange(sp.grad, bytes, device,
                            fmt::format("spliced rows' gradient (SplicedRows::grad: {} x {} {})",
                                        sp.count, C(), DTypeName(run.dtype))));
  return Status::Ok();
}

Status CudaModel::Impl::EmbeddingBackwardAll() {
  int n = N(), c = C();
  if (Frozen()) {  // the spliced rows' gradient only: no embedding gradients
    if (spliced_count == 0 || !spliced_grad) return Status::Ok();
    return WithElementType(run.dtype, [&](auto tag) -> Status {
      using T = decltype(tag);
      BM_ASSIGN_OR_RETURN(T * dout, WholeStreamGrad<T>());
      return Phase("embedding", [&] {
        return EmbeddingSpliceBackward<T>(static_cast<T*>(spliced_grad), dout,
                                          A<int>(spliced_positions), spliced_count, c, stream);
      });
    });
  }
  // The staging buffers are free: Stage waited for their last copies, and the host is here
  // before the GPU is (the forward and backward before this are queued, not done).
  // Spliced positions are in no bucket: the token embedding gets nothing from them.
  EmbeddingBuckets b = BuildEmbeddingBuckets(host_tokens, n, spec.vocab_begin(), spec.local_vocab(),
                                             spliced_count > 0 ? spliced_skip.data() : nullptr);
  const size_t max_n = MaxN();
  int* bt = h_ints + 2 * max_n;
  int* bo = bt + max_n;
  int* bp = bo + max_n + 1;
  std::copy(b.tokens.begin(), b.tokens.end(), bt);
  std::copy(b.offsets.begin(), b.offsets.end(), bo);
  std::copy(b.positions.begin(), b.positions.end(), bp);
  const int num_buckets = static_cast<int>(b.tokens.size());
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(bucket_tokens), bt, b.tokens.size() * 4,
                                cudaMemcpyHostToDevice, stream),
                "buckets");
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(bucket_offsets), bo, b.offsets.size() * 4,
                                cudaMemcpyHostToDevice, stream),
                "bucket offsets");
  BM_CUDA_CHECK(cudaMemcpyAsync(A<int>(bucket_positions), bp, b.positions.size() * 4,
                                cudaMemcpyHostToDevice, stream),
                "bucket positions");
  BM_CUDA_CHECK(cudaEventRecord(staged, stream), "staging event");
  return WithElementType(run.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    BM_ASSIGN_OR_RETURN(T * dout, WholeStreamGrad<T>());  // every row's gradient
    return Phase("embedding", [&] {
      if (spliced_count > 0 && spliced_grad)
        BM_TRY(EmbeddingSpliceBackward<T>(static_cast<T*>(spliced_grad), dout,
                                          A<int>(spliced_positions), spliced_count, c, stream));
      if (const CudaDataParallel::Rows* rows = dp.FirstUnitRows())
        return EmbeddingBackwardRows<T>(rows->rows, rows->tokens, dout, A<int>(bucket_tokens),
                                        A<int>(bucket_offsets), A<int>(bucket_positions),
                                        num_buckets, c, stream);
      return EmbeddingBackward<T>(G(layout.wte), Gpt() ? G(layout.wpe) : nullptr, dout,
                                  A<int>(bucket_tokens), A<int>(bucket_offsets),
                                  A<int>(bucket_positions), num_buckets, n, cur_t, c, stream);
    });
  });
}

}  // namespace bm::train::cuda
