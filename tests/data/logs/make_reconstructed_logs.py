# Writes the reconstructed corpus logs (see tests/data/logs/SOURCES.md for the
# upstream code each format follows). Run once; the outputs are committed.
import os
D = os.path.dirname(os.path.abspath(__file__))
def w(name, text):
    with open(os.path.join(D, name), "w", newline="") as f:
        f.write(text)

def mline(ts, it, total, consumed, ms, lr, gbs, losses, scale, gnorm, skipped, nan, tput=None, frac=False):
    s = f" [{ts}]" if ts else ""
    s += " iteration {:8d}/{:8d} |".format(it, total)
    s += " consumed samples: {:12d} |".format(consumed)
    s += " elapsed time per iteration (ms): {:.1f} |".format(ms)
    if tput is not None:
        s += f" throughput per GPU (TFLOP/s/GPU): {tput:.1f} |"
    s += f" learning rate: {lr:.6E} |"
    s += f" global batch size: {gbs:5d} |"
    for k, v in losses:
        s += " {}: {:.6E} |".format(k, v)
    s += f" loss scale: {scale:.1f} |"
    if gnorm is not None:
        s += f" grad norm: {gnorm:.3f} |"
    s += " number of skipped iterations: {:3d} |".format(skipped)
    s += " number of nan iterations: {:3d} |".format(nan)
    return s

def args_block(d):
    out = ["------------------------ arguments ------------------------"]
    for k in sorted(d):
        dots = "." * (48 - len(k))
        out.append("  {} {} {}".format(k, dots, d[k]))
    out.append("-------------------- end of arguments ---------------------")
    return out

# 1. Megatron-LM core 0.16 (3bec9aa): iteration 1 printed, timers not reset until 10.
L = ["using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical context-parallel sizes: None, tensor-model-parallel size: 1, encoder-tensor-model-parallel size: 0, pipeline-model-parallel size: 1, encoder-pipeline-model-parallel size: 0"]
L += args_block({"bf16": True, "fp16": False, "data_parallel_size": 8, "global_batch_size": 64,
                 "hidden_size": 2048, "micro_batch_size": 1, "num_attention_heads": 16,
                 "num_layers": 16, "pipeline_model_parallel_size": 1, "seq_length": 4096,
                 "tensor_model_parallel_size": 1, "world_size": 8, "log_interval": 10})
L += [" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1235814400",
      "[before the start of training step] datetime: 2026-02-10 09:00:00 "]
L.append(mline("2026-02-10 09:00:09.412871", 1, 30, 64, 9000.0, 1.0e-05, 64, [("lm loss", 10.5)], 1.0, 14.112, 0, 0, tput=45.9))
L.append("[Rank 0] (after 1 iterations) memory (MB) | allocated: 20123.45 | max allocated: 41234.56 | reserved: 44032.00 | max reserved: 44032.00")
L.append(mline("2026-02-10 09:00:25.618003", 10, 30, 640, 1800.0, 1.0e-04, 64, [("lm loss", 10.05)], 1.0, 6.204, 0, 0, tput=229.5))
L.append(mline("2026-02-10 09:00:35.620114", 20, 30, 1280, 1000.0, 2.0e-04, 64, [("lm loss", 9.5)], 1.0, 3.871, 0, 0, tput=413.1))
L.append(mline("2026-02-10 09:00:45.621950", 30, 30, 1920, 1000.0, 3.0e-04, 64, [("lm loss", 9.0)], 1.0, 2.530, 0, 0, tput=413.1))
L.append("[after training is done] datetime: 2026-02-10 09:00:45 ")
w("megatron_core016_first_interval.log", "\n".join(L) + "\n")

# 2. Megatron-LM main (d98e8a6): (tensor, gtp_weight_remat, pipeline) parameter lines,
#    fp16 --log-interval 1, a skipped iteration printing lm loss 0 (b09ee64), a crash mid-line.
L = args_block({"bf16": False, "fp16": True, "global_batch_size": 16, "micro_batch_size": 2,
                "num_layers": 24, "hidden_size": 2048, "num_attention_heads": 16, "seq_length": 2048,
                "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1,
                "data_parallel_size": 2, "world_size": 8, "log_interval": 1})
for t, g in [(0, 0), (1, 0), (0, 1), (1, 1)]:
    L.append(" > number of parameters on (tensor, gtp_weight_remat, pipeline) model parallel rank ({}, {}, 0): 100663296".format(t, g))
L.append(mline("2026-08-20 14:00:05.000113", 1, 1000, 16, 5000.0, 1.0e-06, 16, [("lm loss", 10.9)], 65536.0, 9.114, 0, 0))
L.append(mline("2026-08-20 14:00:06.001207", 2, 1000, 32, 1000.0, 2.0e-06, 16, [("lm loss", 10.7)], 65536.0, 8.902, 0, 0))
L.append(mline("2026-08-20 14:00:06.991340", 3, 1000, 48, 990.0, 2.0e-06, 16, [("lm loss", 0.0)], 32768.0, None, 1, 0))
L.append(mline("2026-08-20 14:00:08.001551", 4, 1000, 64, 1010.0, 3.0e-06, 16, [("lm loss", 10.3)], 32768.0, 8.410, 0, 0))
L.append(mline("2026-08-20 14:00:09.001660", 5, 1000, 80, 1000.0, 4.0e-06, 16, [("lm loss", 10.1)], 32768.0, 7.993, 0, 0))
L.append("[Rank 0] (after 5 iterations) memory (MB) | allocated: 9120.50 | max allocated: 30500.25 | reserved: 31744.00 | max reserved: 31744.00")
cut = mline("2026-08-20 14:00:10.006702", 6, 1000, 96, 1005.0, 5.0e-06, 16, [("lm loss", 9.9)], 32768.0, 7.5, 0, 0)
L.append(cut[: cut.index("learning rate: ") + len("learning rate: 5.00")])  # the job was killed mid-line
w("megatron_main_fp16_gtp_crash.log", "\n".join(L))  # no final newline: cut

# 3. Megatron with srun --label prefixes, two ranks, a crash and a resumed run.
L = ["0: " + x for x in args_block({"bf16": True, "fp16": False, "global_batch_size": 64, "micro_batch_size": 4,
                                   "seq_length": 2048, "tensor_model_parallel_size": 2,
                                   "pipeline_model_parallel_size": 1, "data_parallel_size": 1,
                                   "world_size": 2, "num_layers": 32, "hidden_size": 4096,
                                   "num_attention_heads": 32})]
L += ["0:  > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3500000000",
      "1:  > number of parameters on (tensor, pipeline) model parallel rank (1, 0): 3500000000",
      "0: [before the start of training step] datetime: 2024-11-02 10:00:00 "]
L.append("1: " + mline("2024-11-02 10:02:00", 10, 100, 640, 12000.0, 1.0e-05, 64, [("lm loss", 9.0)], 1.0, 3.0, 0, 0))
L.append("0: [Rank 0] (after 10 iterations) memory (MB) | allocated: 30000.00 | max allocated: 50000.00 | reserved: 52000.00 | max reserved: 52000.00")
L.append("1: [Rank 1] (after 10 iterations) memory (MB) | allocated: 30100.00 | max allocated: 50100.00 | reserved: 53000.00 | max reserved: 53000.00")
L.append("1: " + mline("2024-11-02 10:03:40", 20, 100, 1280, 10000.0, 2.0e-05, 64, [("lm loss", 8.0)], 1.0, 2.5, 0, 0))
L.append("0: saving checkpoint at iteration      20 to /ckpt/llama7b")
L.append("0:   successfully saved checkpoint from iteration      20 to /ckpt/llama7b [ t 1/2, p 1/1 ]")
cut = "1: " + mline("2024-11-02 10:05:20", 30, 100, 1920, 10000.0, 3.0e-05, 64, [("lm loss", 7.0)], 1.0, 2.0, 0, 0)
L.append(cut[: cut.index("lm loss: ") + len("lm loss: 7.00")])
L += ["srun: error: node12: task 1: Killed",
      "srun: launch/slurm: _step_signal: Terminating StepId=4242.0",
      "0:  loading checkpoint from /ckpt/llama7b at iteration 20",
      "0:   successfully loaded checkpoint from /ckpt/llama7b [ t 1/2, p 1/1 ] at iteration 20",
      "0:  > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3500000000",
      "1:  > number of parameters on (tensor, pipeline) model parallel rank (1, 0): 3500000000"]
L.append("1: " + mline("2024-11-02 11:00:00", 30, 100, 1920, 10500.0, 3.0e-05, 64, [("lm loss", 7.1)], 1.0, 2.1, 0, 0))
L.append("1: " + mline("2024-11-02 11:01:40", 40, 100, 2560, 10000.0, 4.0e-05, 64, [("lm loss", 6.5)], 1.0, 1.8, 0, 0))
w("megatron_srun_ranks_resumed.log", "\n".join(L) + "\n")

# 4. DeepSpeed >= 0.17 under transformers >= 2025: DeepSpeed logs at WARNING, no step= or
#    timer lines; only the Trainer's dicts, values as f"{v:.4g}" strings.
losses = [10.46, 10.41, 10.37, 10.35, 10.30, 10.27, 10.22, 10.19, 10.15, 10.12,
          10.08, 10.04, 10.01, 9.978, 9.941, 9.913, 9.88, 9.852, 9.821, 9.794]
L = ["[2026-11-20 10:00:01,104] [WARNING] [engine.py:1255:_do_optimizer_sanity_check] **** You are using ZeRO with an untested optimizer, proceed with caution *****",
     "  0%|          | 0/20 [00:00<?, ?it/s]"]
for i, l in enumerate(losses, 1):
    lr = 5e-05 * (1 - (i - 1) / 20)
    L.append("{{'loss': '{:.4g}', 'grad_norm': '{:.4g}', 'learning_rate': '{:.4g}', 'epoch': '{:.4g}'}}".format(l, 0.6301 - 0.01 * i, lr, i * 0.000416))
L.append("{'train_runtime': '9.874', 'train_samples_per_second': '16.2', 'train_steps_per_second': '2.026', 'train_loss': '10.12', 'epoch': '0.00832'}")
L.append("100%|██████████| 20/20 [00:09<00:00,  2.03it/s]")
w("deepspeed_0.17_trainer_dicts_only.log", "\n".join(L) + "\n")

# 5. DeepSpeed >= 0.17.1 at INFO: the config print says bfloat16_config ... enabled=True,
#    steps_per_print None; the Trainer logs every 5 steps.
cfg = [("bfloat16_config", "enabled=True immediate_grad_update=False check_grad_overflow=True bf16_master_weights_and_grads=False bf16_optimizer_states=False"),
       ("float16_config", "enabled=False auto_cast=False loss_scale=0.0 initial_scale_power=16 loss_scale_window=1000 hysteresis=2 consecutive_hysteresis=False min_loss_scale=1"),
       ("gradient_accumulation_steps", "1"), ("steps_per_print", "None"),
       ("train_batch_size", "8"), ("train_micro_batch_size_per_gpu", "4"), ("world_size", "2")]
L = ["[2026-11-21 08:30:00,010] [INFO] [config.py:1008:print] DeepSpeedEngine configuration:"]
for k, v in cfg:
    L.append("[2026-11-21 08:30:00,010] [INFO] [config.py:1013:print]   {} {} {}".format(k, "." * (29 - len(k)), v))
L.append("  --logging_steps 5 --bf16 True --deepspeed ds_zero2.json")
for i, l in zip([5, 10, 15, 20], [9.87, 9.12, 8.55, 8.21]):
    L.append("{{'loss': '{:.4g}', 'grad_norm': '{:.4g}', 'learning_rate': '{:.4g}', 'epoch': '{:.4g}'}}".format(l, 1.2, 4e-05, i * 0.0025))
L.append("{'train_runtime': '12.5', 'train_samples_per_second': '12.8', 'train_steps_per_second': '1.6', 'train_loss': '8.938', 'epoch': '0.05'}")
w("deepspeed_0.17_bf16_config_info.log", "\n".join(L) + "\n")

# 6. transformers Trainer, logging_steps=10 and logging_first_step=True, an eval dict.
L = ["11/22/2026 09:00:00 - INFO - __main__ - Training/evaluation parameters TrainingArguments(",
     "_n_gpu=1,",
     "bf16=True,",
     "fp16=False,",
     "gradient_accumulation_steps=1,",
     "logging_first_step=True,",
     "logging_steps=10,",
     "per_device_train_batch_size=4,",
     ")",
     "[INFO|trainer.py:2440] 2026-11-22 09:00:02,000 >> ***** Running training *****",
     "[INFO|trainer.py:2441] 2026-11-22 09:00:02,000 >>   Num examples = 120",
     "[INFO|trainer.py:2442] 2026-11-22 09:00:02,000 >>   Num Epochs = 1",
     "[INFO|trainer.py:2443] 2026-11-22 09:00:02,000 >>   Instantaneous batch size per device = 4",
     "[INFO|trainer.py:2446] 2026-11-22 09:00:02,000 >>   Total train batch size (w. parallel, distributed & accumulation) = 4",
     "[INFO|trainer.py:2447] 2026-11-22 09:00:02,000 >>   Gradient Accumulation steps = 1",
     "[INFO|trainer.py:2448] 2026-11-22 09:00:02,000 >>   Total optimization steps = 30"]
for s, l in [(1, 10.83), (10, 9.912), (20, 8.745), (30, 8.102)]:
    L.append("{{'loss': '{:.4g}', 'grad_norm': '2.5', 'learning_rate': '{:.4g}', 'epoch': '{:.4g}'}}".format(l, 5e-05 * (1 - s / 30), s / 30))
L.append("{'eval_loss': '8.05', 'eval_runtime': '0.9', 'eval_samples_per_second': '44.4', 'eval_steps_per_second': '5.6', 'epoch': '1'}")
L.append("{'train_runtime': '15', 'train_samples_per_second': '8', 'train_steps_per_second': '2', 'train_loss': '9.1', 'epoch': '1'}")
w("trainer_logging_first_step.log", "\n".join(L) + "\n")

# 7. accelerate launch of a Trainer script, tqdm redrawing its bar with carriage returns.
L = ["The following values were not passed to `accelerate launch` and had defaults used instead:",
     "\t`--num_machines` was set to a value of `1`",
     "\t`--mixed_precision` was set to a value of `'no'`",
     "\t`--dynamo_backend` was set to a value of `'no'`",
     "To avoid this warning pass in values for each of the problematic parameters or run `accelerate config`."]
bar = ""
for s, l in [(1, 11.02), (2, 10.87), (3, 10.71), (4, 10.66)]:
    bar += "\r{:3d}%|{}| {}/4 [00:0{}<00:00,  1.50it/s]".format(s * 25, "█" * (s * 2) + " " * (8 - 2 * s), s, s)
    bar += "\r{{'loss': {}, 'grad_norm': 3.25, 'learning_rate': 1e-05, 'epoch': {}}}".format(l, s * 0.25)
L.append(bar)
L.append("{'train_runtime': 2.6667, 'train_samples_per_second': 24.0, 'train_steps_per_second': 1.5, 'train_loss': 10.815, 'epoch': 1.0}")
w("trainer_accelerate_tqdm_cr.log", "\n".join(L) + "\n")

# 8. MLPerf llama2_70b_lora reference (mlperf_logging_utils.py @ 7d3dee3): train_loss with
#    samples_count = step x gbs, no step; eval at step 30 and 60; gbs 8.
T0 = 1715000000000
def ev(t, etype, key, value, meta, lineno):
    import json
    m = {"file": "/workspace/ft-llm/scripts/mlperf_logging_utils.py", "lineno": lineno}
    m.update(meta)
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": etype, "key": key, "value": value, "metadata": m})
P = "POINT_IN_TIME"
L = [ev(T0 - 9000, P, "cache_clear", "True", {}, 94),
     ev(T0 - 9000, P, "submission_benchmark", "llama2_70b_lora", {}, 97),
     ev(T0 - 9000, P, "submission_org", "referece", {}, 105),
     ev(T0 - 9000, P, "global_batch_size", 8, {}, 124),
     ev(T0 - 9000, P, "train_samples", 3901, {}, 128),
     ev(T0 - 9000, P, "eval_samples", 173, {}, 132),
     ev(T0 - 9000, P, "seed", 1234, {}, 136),
     ev(T0 - 9000, P, "opt_base_learning_rate", 0.0004, {}, 141),
     ev(T0 - 9000, P, "lora_rank", 16, {}, 143),
     ev(T0 - 9000, P, "gradient_accumulation_steps", 1, {}, 144),
     ev(T0 - 8000, "INTERVAL_START", "init_start", "", {}, 145),
     ev(T0 - 1000, "INTERVAL_END", "init_stop", "", {}, 147),
     ev(T0, "INTERVAL_START", "run_start", "", {}, 148),
     ev(T0 + 10000, P, "train_loss", 1.4561, {"samples_count": 80}, 166),
     ev(T0 + 20000, P, "train_loss", 1.3012, {"samples_count": 160}, 166),
     ev(T0 + 30000, "INTERVAL_END", "block_stop", "", {"samples_count": 240}, 174),
     ev(T0 + 33000, P, "eval_accuracy", 0.9611, {"samples_count": 240}, 179),
     ev(T0 + 33000, "INTERVAL_START", "block_start", "", {"samples_count": 30}, 184),
     ev(T0 + 43000, P, "train_loss", 1.2214, {"samples_count": 320}, 166),
     ev(T0 + 53000, P, "train_loss", 1.1892, {"samples_count": 400}, 166),
     ev(T0 + 63000, "INTERVAL_END", "block_stop", "", {"samples_count": 480}, 174),
     ev(T0 + 66000, P, "eval_accuracy", 0.9243, {"samples_count": 480}, 179),
     ev(T0 + 66000, "INTERVAL_START", "block_start", "", {"samples_count": 60}, 184),
     ev(T0 + 66001, "INTERVAL_END", "run_stop", 0.9243, {"samples_count": 480, "status": "success"}, 196)]
w("mllog_llama2_70b_lora_samples_count.log", "\n".join(L) + "\n")

# 9. MLPerf llama3.1 405b reference (callbacks.py @ 5595df4): only eval_accuracy, blocks
#    with consumed samples, and every rank's print(":::MLLOG Weight initialization: ...").
def ev2(t, etype, key, value, meta, lineno, rank="0"):
    import json
    m = {"file": "/workspace/llm/callbacks.py", "lineno": lineno}
    m.update(meta)
    return rank + ": :::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": etype, "key": key, "value": value, "metadata": m})
T0 = 1720000000000
L = [ev2(T0 - 60000, P, "cache_clear", True, {}, 165),
     ev2(T0 - 60000, "INTERVAL_START", "init_start", None, {}, 166)]
for r in range(4):
    L.append("{}: :::MLLOG Weight initialization: dict_keys(['state_dict', 'optimizer_states', 'lr_schedulers'])".format(r))
L += [ev2(T0 - 2000, P, "submission_benchmark", "llama31_405b", {}, 53),
      ev2(T0 - 2000, P, "submission_org", "reference_implementation", {}, 54),
      ev2(T0 - 2000, P, "global_batch_size", 1152, {}, 240),
      ev2(T0 - 2000, P, "max_sequence_length", 8192, {}, 240),
      ev2(T0 - 1000, "INTERVAL_END", "init_stop", None, {}, 242),
      ev2(T0, "INTERVAL_START", "run_start", None, {}, 243),
      ev2(T0, "INTERVAL_START", "epoch_start", None, {"samples_count": 0}, 188),
      ev2(T0, "INTERVAL_START", "block_start", None, {"samples_count": 0}, 189),
      ev2(T0 + 500000, "INTERVAL_END", "block_stop", None, {"samples_count": 46080}, 206),
      ev2(T0 + 500000, "INTERVAL_START", "eval_start", None, {"samples_count": 46080}, 207),
      ev2(T0 + 560000, "INTERVAL_END", "eval_stop", None, {"samples_count": 46080}, 216),
      ev2(T0 + 560000, P, "eval_accuracy", 5.982, {"samples_count": 46080}, 131),
      ev2(T0 + 560000, "INTERVAL_START", "block_start", None, {"samples_count": 46080}, 225),
      ev2(T0 + 1040000, "INTERVAL_END", "block_stop", None, {"samples_count": 92160}, 206),
      ev2(T0 + 1040000, "INTERVAL_START", "eval_start", None, {"samples_count": 92160}, 207),
      ev2(T0 + 1100000, "INTERVAL_END", "eval_stop", None, {"samples_count": 92160}, 216),
      ev2(T0 + 1100000, P, "eval_accuracy", 5.601, {"samples_count": 92160}, 131),
      ev2(T0 + 1100000, "INTERVAL_END", "run_stop", None, {"status": "aborted"}, 200)]
w("mllog_llama31_405b_eval_only.log", "\n".join(L) + "\n")

# 10. PaddleNLP model zoo GPT (run_pretrain.py's 'global step %d, epoch: %d, loss: ...'),
#     4 GPUs, micro batch 4, max_seq_len 1024, logging_freq 1 (model_zoo/gpt/scripts/run_multi.sh).
rows = [(1, 10.9871, 0.01, 2.50000, 0.40, 6554, 1638), (2, 10.7012, 0.0001, 0.50000, 2.00, 32768, 8192),
        (3, 10.5123, 0.0001, 0.51200, 1.95, 32000, 8000), (4, 10.3304, 0.0001, 0.49600, 2.02, 33032, 8258),
        (5, 10.2011, 0.0001, 0.50000, 2.00, 32768, 8192)]
L = []
for i, (st, loss, rc, bc, sp, tot, ips) in enumerate(rows):
    L.append("[2023-06-01 12:00:{:02d},{:03d}] [    INFO] - global step {}, epoch: 0, loss: {:.9f}, avg_reader_cost: {:.5f} sec, avg_batch_cost: {:.5f} sec, speed: {:.2f} step/s, ips_total: {} tokens/s, ips: {} tokens/s, learning rate: {:.5e}".format(
        3 + i, 100 * i, st, loss, rc, bc, sp, tot, ips, 1.5e-6 * st))
w("paddle_gpt_model_zoo_ips.log", "\n".join(L) + "\n")

# 11. FlagPerf llama2_7b/deepspeed case (run_pretraining.py @ FlagPerf 1b5a030): DeepSpeed's
#     timer lines, then FlagPerf's summary from RunningAvgSamplesPerSec.
L = []
for s, cur in [(10, 3.21), (20, 3.19), (30, 3.2)]:
    L.append("[2024-05-10 08:0{}:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={}, skipped=0, lr=[3e-05], mom=[(0.9, 0.95)]".format(s // 10, s))
    L.append("[2024-05-10 08:0{}:00,001] [INFO] [timer.py:260:stop] epoch=0/micro_step={}/global_step={}, RunningAvgSamplesPerSec=3.2, CurrSamplesPerSec={}, MemAllocated=20.1GB, MaxMemAllocated=58.42GB".format(s // 10, s, s, cur))
L += ["System tokens per second:  13107.2", "Tokens/p/s:  1638.4", "Theory TFLOPS:  312",
      "Tokens/TFLOPS:  5.251282051282051", "MFU:  0.22055384615384614"]
w("flagperf_llama2_7b_deepspeed.log", "\n".join(L) + "\n")

# 12. FlagPerf aquila2_7b/flagscale case's stdout: only the summary (the Megatron lines went
#     to flagscale.log.txt).
w("flagperf_aquila2_7b_summary_only.log", "System tokens per second:  24576.0\nTokens/p/s:  3072.0\nMFU:  0.41353846153846155\n")

# 13. Megatron-Bridge v0.6.0 (067f987): no argument block; ConfigContainer.log_non_default_values
#     (training/config.py, from #2184; [dataset] from #2514): MCore-derived configs print only
#     their non-default values `  name: repr  (Mcore default: repr)`, the others every non-None
#     field `  name: repr` (here a shortened set of fields); then train_utils.py training_log's
#     `Step Time : ...` line before each iteration line, report_memory in GB after the first.
#     Llama 3 8B-like, TP2 PP2 on 16 GPUs (DP 4), GBS 128, MBS 1, 8192 tokens, --log-interval 10.
R = 70
L = ["INFO:megatron.core.num_microbatches_calculator:setting number of microbatches to constant 32",
     "> initializing torch distributed ...", "", "=" * R,
     "Configuration Summary (Non-Default Values vs Megatron Core)", "=" * R, ""]
L += ["[optimizer] Non-default values (vs Mcore OptimizerConfig):",
      "  adam_beta2: 0.95  (Mcore default: 0.999)",
      "  bf16: True  (Mcore default: False)",
      "  lr: 0.0003  (Mcore default: None)",
      "  min_lr: 3e-05  (Mcore default: None)",
      "  use_distributed_optimizer: True  (Mcore default: False)", ""]
L += ["[ddp] Non-default values (vs Mcore DistributedDataParallelConfig):",
      "  grad_reduce_in_fp32: True  (Mcore default: False)",
      "  overlap_grad_reduce: True  (Mcore default: False)",
      "  use_distributed_optimizer: True  (Mcore default: False)", ""]
L += ["[model] Non-default values (vs Mcore TransformerConfig):",
      "  bf16: True  (Mcore default: False)",
      "  ffn_hidden_size: 14336  (Mcore default: None)",
      "  gated_linear_unit: True  (Mcore default: False)",
      "  hidden_size: 4096  (Mcore default: 0)",
      "  normalization: 'RMSNorm'  (Mcore default: 'LayerNorm')",
      "  num_attention_heads: 32  (Mcore default: 0)",
      "  num_layers: 32  (Mcore default: 0)",
      "  num_query_groups: 8  (Mcore default: None)",
      "  params_dtype: torch.bfloat16  (Mcore default: torch.float32)",
      "  pipeline_dtype: torch.bfloat16  (Mcore default: None)",
      "  pipeline_model_parallel_size: 2  (Mcore default: 1)",
      "  sequence_parallel: True  (Mcore default: False)",
      "  tensor_model_parallel_size: 2  (Mcore default: 1)",
      "", "-" * R, "Other Configuration Values:", "-" * R, ""]
L += ["[train]:", "  decrease_batch_size_if_needed: False", "  empty_unused_memory_level: 0",
      "  global_batch_size: 128", "  manual_gc: True", "  manual_gc_interval: 100",
      "  micro_batch_size: 1", "  train_iters: 30", ""]
L += ["[validation]:", "  eval_interval: 1000", "  eval_iters: 32", ""]
L += ["[scheduler]:", "  lr_decay_iters: 30", "  lr_decay_style: 'cosine'", "  lr_warmup_iters: 5", ""]
L += ["[dataset]:", "  dataloader_type: 'single'", "  num_workers: 8", "  random_seed: 1234",
      "  seq_length: 8192", "  sequence_length: 8192", "  split: '9999,8,2'", ""]
L += ["[logger]:", "  log_interval: 10", "  log_throughput: False", ""]
L += ["[rng]:", "  seed: 1234", "", "=" * R]
L += ["Training ...", "Setting rerun_state_machine.current_iteration to 0..."]
for it, ts, ms, lr, loss, gn, tf in [(10, "10:01:35", 9500.0, 3.0e-04, 9.8812, 6.214, 332.4),
                                     (20, "10:02:16", 4100.0, 1.5e-04, 7.4125, 2.038, 770.1),
                                     (30, "10:02:57", 4120.0, 3.0e-05, 6.9917, 1.622, 766.4)]:
    L.append("Step Time : {:.2f}s GPU utilization: {:.1f}MODEL_TFLOP/s/GPU".format(ms / 1000, tf))
    L.append(mline("2026-08-25 " + ts, it, 30, it * 128, ms, lr, 128,
                   [("lm loss", loss)], 1.0, gn, 0, 0))
    if it == 10:
        L.append("[Rank 0] (after 10 iterations) memory (GB) | mem-allocated-gigabytes: 38.912 | mem-active-gigabytes: 38.912 | mem-inactive-gigabytes: 0.0 | mem-reserved-gigabytes: 71.305 | mem-max-allocated-gigabytes: 66.107 | mem-max-active-gigabytes: 66.107 | mem-max-inactive-gigabytes: 0.0 | mem-max-reserved-gigabytes: 71.305 | mem-alloc-retires: 0 | mem-allocated-count: 1288")
w("megatron_bridge_v06_config_summary.log", "\n".join(L) + "\n")
