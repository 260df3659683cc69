#include "engine/key_material.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/sealed_text.h"

namespace bm::engine {
namespace {

constexpr std::string_view kSpecMagic = "benchmake-spec";
// 2: sealed (base/sealed_text.h): a bit flipped in a value would still parse, as another key
// (another lr), under which the step would cache what the real one made. 1: earlier releases'
// (a .last keeps its material).
constexpr int kSpecVersion = 2;

std::string Short(const std::string& v) { return v.size() > 60 ? v.substr(0, 57) + "..." : v; }

// A source whose bytes are the same but whose executable bit changed says so.
std::string SourceChange(std::string_view a, std::string_view b) {
  bool ax = a.ends_with(kExecutableMark), bx = b.ends_with(kExecutableMark);
  if (ax != bx && a.substr(0, a.size() - (ax ? kExecutableMark.size() : 0)) ==
                      b.substr(0, b.size() - (bx ? kExecutableMark.size() : 0)))
    return bx ? "now executable" : "no longer executable";
  return "content changed";
}

// Moves `i` back to the start of the UTF-8 character it is in.
size_t CharStart(const std::string& v, size_t i) {
  while (i > 0 && i < v.size() && (static_cast<unsigned char>(v[i]) & 0xC0) == 0x80) --i;
  return i;
}

// "A → B" for two long values, each cut to about 60 characters around where
// they first differ (Short() of two commands that differ past their first 57
// characters printed the same text twice).
std::string ChangeOf(const std::string& a, const std::string& b) {
  if (a.size() <= 60 && b.size() <= 60) return a + " → " + b;
  size_t first = 0;
  while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
  size_t begin = first > 20 ? first - 20 : 0;
  auto cut = [&](const std::string& v) {
    size_t from = CharStart(v, std::min(begin, v.size()));
    size_t to = CharStart(v, std::min(v.size(), from + 54));
    return (from > 0 ? "..." : "") + v.substr(from, to - from) + (to < v.size() ? "..." : "");
  };
  return cut(a) + " → " + cut(b);
}

// A one-word summary of platform facts for messages ("H100", "2x H100").
std::string PlatformSummary(const std::string& facts_json) {
  nlohmann::json j = nlohmann::json::parse(facts_json, nullptr, false);
  if (!j.is_object()) return Short(facts_json);
  for (const char* k : {"gpu_name", "gpu", "device", "name"}) {
    if (j.contains(k) && j[k].is_string()) return j[k].get<std::string>();
  }
  return Short(facts_json);
}

std::string PlatformDiff(const std::string& before, const std::string& now) {
  std::string a = PlatformSummary(before), b = PlatformSummary(now);
  if (a != b) return fmt::format("platform: {} → {}", a, b);
  nlohmann::json ja = nlohmann::json::parse(before, nullptr, false);
  nlohmann::json jb = nlohmann::json::parse(now, nullptr, false);
  std::string changed;
  if (ja.is_object() && jb.is_object()) {
    for (auto& [k, v] : jb.items()) {
      if (!ja.contains(k) || ja[k] != v) {
        changed += fmt::format("{}{} {} → {}", changed.empty() ? "" : ", ", k,
                               ja.contains(k) ? Short(ja[k].dump()) : "(none)", Short(v.dump()));
      }
    }
    for (auto& [k, v] : ja.items())
      if (!jb.contains(k)) changed += fmt::format("{}{} removed", changed.empty() ? "" : ", ", k);
  }
  return "platform: " + (changed.empty() ? "facts changed" : changed);
}

}  // namespace

Digest KeyMaterial::Key() const {
  Hasher h;
  for (const KeyField& f : fields) {
    h.Field(f.tag, f.name);
    h.Field("=", f.value);
  }
  return h.Finish();
}

std::string KeyMaterial::Serialize() const {
  std::string body;
  for (const KeyField& f : fields) {
    body += nlohmann::json::array({f.tag, f.name, f.value}).dump();
    body += '\n';
  }
  return SealText(kSpecMagic, kSpecVersion, body);
}

Result<KeyMaterial> KeyMaterial::Parse(std::string_view spec) {
  Result<UnsealedText> sealed = UnsealText(spec, kSpecMagic, kSpecVersion, 2);
  if (!sealed.ok()) {
    return Status(sealed.status().code(),
                  sealed.status().code() == ErrorCode::kUnsupported
                      ? "spec " + sealed.status().message() + ": rebuild with `benchmake clean`"
                      : sealed.status().message());
  }
  std::string_view text = sealed->body;
  KeyMaterial m;
  for (int line_no = 2; !text.empty(); ++line_no) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_array() || j.size() != 3 || !j[0].is_string() || !j[1].is_string() ||
        !j[2].is_string()) {
      return Errorf(ErrorCode::kCorrupt, "line {}: bad spec line '{}'", line_no, line);
    }
    m.fields.push_back(
        KeyField{j[0].get<std::string>(), j[1].get<std::string>(), j[2].get<std::string>()});
  }
  return m;
}

std::string KeyMaterial::DebugString() const {
  std::string out;
  for (const KeyField& f : fields) out += fmt::format("{} {} = {}\n", f.tag, f.name, f.value);
  out += fmt::format("key = {}\n", Key().Hex());
  return out;
}

std::vector<std::string> KeyMaterial::Upstreams() const {
  std::vector<std::string> out;
  for (const KeyField& f : fields)
    if (f.tag == "input") out.push_back(f.name);
  return out;
}

void KeyMaterial::SetInput(const std::string& target, const std::string& manifest_hex) {
  for (KeyField& f : fields)
    if (f.tag == "input" && f.name == target) f.value = manifest_hex;
}

std::vector<std::string> DiffKeyMaterial(const KeyMaterial& before, const KeyMaterial& now) {
  using Id = std::pair<std::string, std::string>;
  std::map<Id, std::string> a, b;
  std::vector<Id> order;
  for (const KeyField& f : before.fields) a[{f.tag, f.name}] = f.value;
  for (const KeyField& f : now.fields) {
    b[{f.tag, f.name}] = f.value;
    order.push_back({f.tag, f.name});
  }
  for (const KeyField& f : before.fields)
    if (!b.count({f.tag, f.name})) order.push_back({f.tag, f.name});
  std::vector<std::string> out;
  for (const Id& id : order) {
    const auto& [tag, name] = id;
    bool in_a = a.count(id), in_b = b.count(id);
    if (in_a && in_b && a[id] == b[id]) continue;
    if (tag == "platform") {
      out.push_back(in_a && in_b ? PlatformDiff(a[id], b[id])
                    : in_b       ? "platform: now part of the key"
                                 : "platform: no longer part of the key");
    } else if (!in_a) {
      out.push_back(fmt::format("{} {}: added{}", tag, name,
                                tag == "param" ? " (" + Short(b[id]) + ")" : ""));
    } else if (!in_b) {
      out.push_back(fmt::format("{} {}: removed", tag, name));
    } else if (tag == "param") {
      out.push_back(fmt::format("param {}: {}", name, ChangeOf(a[id], b[id])));
    } else if (tag == "input") {
      out.push_back(
          fmt::format("input {}: {}", name, b[id].empty() ? "will be rebuilt" : "output changed"));
    } else if (tag == "source") {
      out.push_back(fmt::format("source {}: {}", name, SourceChange(a[id], b[id])));
    } else if (tag == "rule") {
      out.push_back(fmt::format("rule {}: version {} → {}", name, a[id], b[id]));
    } else {
      out.push_back(fmt::format("{} {}: {}", tag, name, ChangeOf(a[id], b[id])));
    }
  }
  return out;
}

}  // namespace bm::engine
