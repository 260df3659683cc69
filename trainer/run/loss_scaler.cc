#include "trainer/run/loss_scaler.h"

#include <cmath>

namespace bm::train {

Status LossScalerOptions::Validate() const {
  auto bad = [](const char* key, const char* rule, auto value) {
    return Errorf(ErrorCode::kInvalidArgument, "{} must be {} (got {})", key, rule, value);
  };
  if (!(init_scale > 0) || !std::isfinite(init_scale))
    return bad("init_scale", "positive and finite", init_scale);
  if (!(growth_factor > 1) || !std::isfinite(growth_factor))
    return bad("growth_factor", "above 1", growth_factor);
  if (!(backoff_factor > 0 && backoff_factor < 1))
    return bad("backoff_factor", "in (0, 1)", backoff_factor);
  if (growth_interval < 1) return bad("growth_interval", ">= 1", growth_interval);
  if (!(min_scale > 0 && min_scale <= init_scale))
    return bad("min_scale", "in (0, init_scale]", min_scale);
  if (hysteresis < 1) return bad("hysteresis", ">= 1", hysteresis);
  return Status::Ok();
}

nlohmann::json LossScalerOptions::ToJson() const {
  return {{"init_scale", init_scale},         {"growth_factor", growth_factor},
          {"backoff_factor", backoff_factor}, {"growth_interval", growth_interval},
          {"min_scale", min_scale},           {"hysteresis", hysteresis}};
}

LossScaler::LossScaler(const LossScalerOptions& options)
    : options_(options), scale_(options.init_scale), hysteresis_tracker_(options.hysteresis) {}

Status LossScaler::Update(bool overflow) {
  if (!overflow) {
    if (++growth_tracker_ == options_.growth_interval) {
      growth_tracker_ = 0;
      hysteresis_tracker_ = options_.hysteresis;
      scale_ *= options_.growth_factor;
    }
    return Status::Ok();
  }
  if (hysteresis_tracker_ - 1 <= 0) {
    const double next = scale_ * options_.backoff_factor;
    if (next < options_.min_scale)
      return Errorf(ErrorCode::kFailed,
                    "the fp16 loss scale would fall below min_scale = {} (from {}, after {} "
                    "overflowing steps): the gradients overflow fp16 even barely scaled",
                    options_.min_scale, scale_, skipped_ + 1);
    scale_ = next;
  }
  hysteresis_tracker_ = std::max<int64_t>(hysteresis_tracker_ - 1, 0);
  growth_tracker_ = 0;
  ++skipped_;
  return Status::Ok();
}

nlohmann::json LossScaler::State() const {
  return {{"scale", scale_},
          {"growth_tracker", growth_tracker_},
          {"hysteresis_tracker", hysteresis_tracker_},
          {"skipped", skipped_}};
}

Status LossScaler::Restore(const nlohmann::json& state) {
  auto corrupt = [&] {
    return Errorf(ErrorCode::kCorrupt, "loss scaler state {} is incomplete or impossible",
                  state.dump());
  };
  if (!state.is_object()) return corrupt();
  for (const char* key : {"scale", "growth_tracker", "hysteresis_tracker", "skipped"})
    if (!state.contains(key) || !state[key].is_number()) return corrupt();
  const double scale = state["scale"].get<double>();
  const int64_t growth = state["growth_tracker"].get<int64_t>();
  const int64_t hysteresis = state["hysteresis_tracker"].get<int64_t>();
  const int64_t skipped = state["skipped"].get<int64_t>();
  if (!(scale >= options_.min_scale) || !std::isfinite(scale) || growth < 0 ||
      growth >= options_.growth_interval || hysteresis < 0 || hysteresis > options_.hysteresis ||
      skipped < 0)
    return corrupt();
  scale_ = scale;
  growth_tracker_ = growth;
  hysteresis_tracker_ = hysteresis;
  skipped_ = skipped;
  return Status::Ok();
}

}  // namespace bm::train
