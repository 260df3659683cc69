#include "engine/report/metrics_view.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace bm::report {

const nlohmann::json* ValueAt(const nlohmann::json& metrics, std::string_view path) {
  const nlohmann::json* node = &metrics;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string key(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

std::optional<double> NumberAt(const nlohmann::json& metrics, std::string_view path) {
  const nlohmann::json* v = ValueAt(metrics, path);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<std::string> StringAt(const nlohmann::json& metrics, std::string_view path) {
  const nlohmann::json* v = ValueAt(metrics, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::string ScalarText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_float())
    return fmt::format("{}", value.get<double>());  // shortest round trip
  return value.dump();
}

std::string DeviceName(const nlohmann::json& metrics) {
  std::string name;
  const nlohmann::json* gpus = ValueAt(metrics, "platform.gpus");
  std::optional<std::string> config_device = StringAt(metrics, "config.device");
  bool cpu_run = config_device && *config_device == "cpu";
  if (!cpu_run && gpus != nullptr && gpus->is_array() && !gpus->empty()) {
    const nlohmann::json& g = (*gpus)[0];
    if (g.is_object() && g.contains("name") && g["name"].is_string()) name = g["name"];
    if (g.is_string()) name = g.get<std::string>();
  }
  if (name.empty() && !cpu_run) name = StringAt(metrics, "provenance.device_name").value_or("");
  if (name.empty()) name = StringAt(metrics, "platform.device").value_or("");
  if (name.empty() && !cpu_run) name = StringAt(metrics, "platform.gpu_name").value_or("");
  if (name.empty()) name = config_device.value_or("");
  if (name.empty()) name = StringAt(metrics, "mlperf.platform").value_or("");
  constexpr std::string_view kVendor = "NVIDIA ";
  if (name.size() > kVendor.size() && name.compare(0, kVendor.size(), kVendor) == 0) {
    name.erase(0, kVendor.size());
  }
  return name;
}

int DeviceCount(const nlohmann::json& metrics) {
  if (auto d = NumberAt(metrics, "config.devices")) return static_cast<int>(*d);
  auto tp = NumberAt(metrics, "config.tp");
  auto pp = NumberAt(metrics, "config.pp");
  auto dp = NumberAt(metrics, "config.dp");
  if (!tp || !pp || !dp) return 0;
  return static_cast<int>(*tp * *pp * *dp);
}

std::string ParallelLayout(const nlohmann::json& metrics) {
  if (auto layout = StringAt(metrics, "config.layout")) return *layout;
  auto tp = NumberAt(metrics, "config.tp");
  auto pp = NumberAt(metrics, "config.pp");
  auto dp = NumberAt(metrics, "config.dp");
  if (!tp || !pp || !dp) return "";
  return fmt::format("TP{}PP{}DP{}", static_cast<long long>(*tp), static_cast<long long>(*pp),
                     static_cast<long long>(*dp));
}

std::string FixHp(const nlohmann::json& metrics) {
  std::vector<std::string> items;
  if (const nlohmann::json* o = ValueAt(metrics, "model.overrides"); o && o->is_object()) {
    for (auto it = o->begin(); it != o->end(); ++it) {
      items.push_back(fmt::format("{}={}", it.key(), ScalarText(it.value())));
    }
  }
  constexpr std::pair<const char*, const char*> kTerms[] = {
      {"MPE", "config.mpe"}, {"LBS", "config.lbs"}, {"GAS", "config.gas"}};
  for (const auto& [label, path] : kTerms) {
    const nlohmann::json* v = ValueAt(metrics, path);
    if (v == nullptr || v->is_null()) continue;
    if (std::string_view(label) == "GAS" && v->is_number() && v->get<double>() == 1) continue;
    items.push_back(fmt::format("{}={}", label, ScalarText(*v)));
  }
  if (auto p = StringAt(metrics, "config.precision")) items.push_back(*p);
  if (auto z = NumberAt(metrics, "config.zero"); z && *z > 0) {
    items.push_back(fmt::format("zero={}", static_cast<long long>(*z)));
  }
  // Gradients summed in bf16 (Megatron's --grad-reduce-in-bf16): another arithmetic, shown.
  if (auto g = StringAt(metrics, "config.grad_reduce"); g && *g == "bf16")
    items.push_back("grad_reduce=bf16");
  // cuDNN's attention backward asked for one way (another order of dQ's sums), shown.
  if (auto a = StringAt(metrics, "config.attention_backward"); a && *a != "auto")
    items.push_back("attention_backward=" + *a);
  const nlohmann::json* sp = ValueAt(metrics, "config.sequence_parallel");
  if (sp != nullptr && sp->is_boolean() && sp->get<bool>()) items.push_back("sequence_parallel");
  const nlohmann::json* rc = ValueAt(metrics, "config.recompute");
  if (rc != nullptr && rc->is_boolean() && rc->get<bool>()) items.push_back("recompute");
  const nlohmann::json* fa = ValueAt(metrics, "config.flash_attention");
  if (fa != nullptr && fa->is_boolean() && fa->get<bool>()) items.push_back("flash");
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

std::string TrainerName(const nlohmann::json& metrics) {
  if (auto t = StringAt(metrics, "provenance.trainer")) return *t;
  constexpr std::string_view kOurs = "benchmake-train";
  if (auto b = StringAt(metrics, "provenance.trainer_build"); b && b->rfind(kOurs, 0) == 0)
    return std::string(kOurs);
  return "";
}

}  // namespace bm::report
