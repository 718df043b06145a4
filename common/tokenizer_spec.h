// Conversion between TokenizerConfig and its wire form (v1::TokenizerSpec),
// so a router can tokenize exactly as the worker that sent it.
#pragma once

#include "common/status.h"
#include "common/tokenizer/tokenizer_config.h"
#include "kvmesh/v1/common.pb.h"

namespace kvmesh {

void TokenizerConfigToSpec(const TokenizerConfig& config, v1::TokenizerSpec* spec);
// Validates the result (ValidateTokenizerConfig); errors say what is wrong.
StatusOr<TokenizerConfig> TokenizerConfigFromSpec(const v1::TokenizerSpec& spec);

}  // namespace kvmesh
