// Gate 10, the environment header of acceptance.json: where and with what the records were
// produced, and the fingerprint output hashes are keyed by.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "rlk/spec.hpp"

namespace rlk::conform {

struct Environment {
  nlohmann::json header;
  std::string fingerprint;  // "arch | driver | runtime | build"
};

Environment describe_environment(const Device& device, const OpSpec& spec, const std::string& implementation,
                                 const std::string& build_info);

}  // namespace rlk::conform
