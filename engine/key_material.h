// KeyMaterial: exactly what a target's action key hashes, as an ordered list
// of tagged fields, so that it can be printed (--debug-key), stored (the
// .spec file), and diffed field by field (explain).
//
// Fields, in order:
//   tool     benchmake = <tool salt>          (bumped when keys change meaning)
//   rule     <name>    = <version>
//   param    <name>    = <canonical JSON>     key parameters only, sorted by name
//   source   <path>    = <hex digest>[ executable]  source-file inputs, as written
//   input    <target>  = <hex manifest digest> upstream outputs ("" = not yet known)
//   platform facts     = <canonical JSON>     platform-dependent rules only
// Key = XXH3-128 over Field(tag, name), Field("=", value) for each field.
//
// Spec file layout (.benchmake/t/NAME.spec; STYLE §5):
//   spec  := "benchmake-spec 2 " hex32 "\n" line*   (sealed: base/sealed_text.h; version 1,
//            without hex32, is still read)
//   line  := json-array [tag, name, value] '\n'
// In the .spec file, `input` values are empty: the step fills them from the
// upstream .out files when it runs (upstream outputs, not keys, feed the key).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/digest.h"
#include "base/result.h"

namespace bm::engine {

// A source field's value ends with this when the file is executable.
inline constexpr std::string_view kExecutableMark = " executable";

struct KeyField {
  std::string tag;
  std::string name;
  std::string value;
  friend bool operator==(const KeyField&, const KeyField&) = default;
};

struct KeyMaterial {
  std::vector<KeyField> fields;

  Digest Key() const;
  std::string Serialize() const;  // the .spec format
  static Result<KeyMaterial> Parse(std::string_view text);
  std::string DebugString() const;  // one "tag name = value" line per field

  // Names of upstream targets (the `input` fields).
  std::vector<std::string> Upstreams() const;
  // Sets the value of the `input` field for `target`.
  void SetInput(const std::string& target, const std::string& manifest_hex);
  friend bool operator==(const KeyMaterial&, const KeyMaterial&) = default;
};

// Version of what keys mean; part of every key (field `tool`).
inline constexpr std::string_view kKeySalt = "benchmake-key-1";

// What changed between two key materials, one line per field, e.g.
//   "param lbs: 4 → 8", "input owt.tokens: output changed",
//   "source data.txt: content changed", "platform: H100 → H200".
std::vector<std::string> DiffKeyMaterial(const KeyMaterial& before, const KeyMaterial& now);

}  // namespace bm::engine
