#include "common/tokenizer_spec.h"

namespace kvmesh {

void TokenizerConfigToSpec(const TokenizerConfig& c, v1::TokenizerSpec* s) {
  s->Clear();
  s->set_model(std::string(TokenizerModelName(c.model)));
  s->set_pre(c.pre);
  for (const std::string& t : c.tokens) s->add_tokens(t);
  s->mutable_scores()->Assign(c.scores.begin(), c.scores.end());
  s->mutable_token_types()->Assign(c.token_types.begin(), c.token_types.end());
  s->mutable_token_attrs()->Assign(c.token_attrs.begin(), c.token_attrs.end());
  for (const std::string& m : c.merges) s->add_merges(m);
  s->set_bos_id(c.bos_id);
  s->set_eos_id(c.eos_id);
  s->set_eot_id(c.eot_id);
  s->set_eom_id(c.eom_id);
  s->set_unk_id(c.unk_id);
  s->set_sep_id(c.sep_id);
  s->set_pad_id(c.pad_id);
  s->set_mask_id(c.mask_id);
  s->set_fim_pre_id(c.fim_pre_id);
  s->set_fim_suf_id(c.fim_suf_id);
  s->set_fim_mid_id(c.fim_mid_id);
  s->set_fim_pad_id(c.fim_pad_id);
  s->set_fim_rep_id(c.fim_rep_id);
  s->set_fim_sep_id(c.fim_sep_id);
  s->mutable_eog_ids()->Assign(c.eog_ids.begin(), c.eog_ids.end());
  s->set_add_bos(c.add_bos);
  s->set_add_eos(c.add_eos);
  s->set_add_sep(c.add_sep);
  s->set_add_space_prefix(c.add_space_prefix);
  s->set_remove_extra_whitespaces(c.remove_extra_whitespaces);
  s->set_clean_spaces(c.clean_spaces);
  s->set_ignore_merges(c.ignore_merges);
  s->set_escape_whitespaces(c.escape_whitespaces);
  s->set_lowercase(c.lowercase);
  s->set_strip_accents(c.strip_accents);
}

StatusOr<TokenizerConfig> TokenizerConfigFromSpec(const v1::TokenizerSpec& s) {
  TokenizerConfig c;
  if (s.model() == "llama") {
    c.model = TokenizerModel::kSpm;
  } else if (s.model() == "gpt2") {
    c.model = TokenizerModel::kBpe;
  } else if (s.model() == "bert") {
    c.model = TokenizerModel::kWpm;
  } else {
    return InvalidArgumentError("tokenizer spec: unknown model \"" + s.model() + "\"");
  }
  c.pre = s.pre();
  c.tokens.assign(s.tokens().begin(), s.tokens().end());
  c.scores.assign(s.scores().begin(), s.scores().end());
  c.token_types.assign(s.token_types().begin(), s.token_types().end());
  c.token_attrs.assign(s.token_attrs().begin(), s.token_attrs().end());
  c.merges.assign(s.merges().begin(), s.merges().end());
  c.bos_id = s.bos_id();
  c.eos_id = s.eos_id();
  c.eot_id = s.eot_id();
  c.eom_id = s.eom_id();
  c.unk_id = s.unk_id();
  c.sep_id = s.sep_id();
  c.pad_id = s.pad_id();
  c.mask_id = s.mask_id();
  c.fim_pre_id = s.fim_pre_id();
  c.fim_suf_id = s.fim_suf_id();
  c.fim_mid_id = s.fim_mid_id();
  c.fim_pad_id = s.fim_pad_id();
  c.fim_rep_id = s.fim_rep_id();
  c.fim_sep_id = s.fim_sep_id();
  c.eog_ids.assign(s.eog_ids().begin(), s.eog_ids().end());
  c.add_bos = s.add_bos();
  c.add_eos = s.add_eos();
  c.add_sep = s.add_sep();
  c.add_space_prefix = s.add_space_prefix();
  c.remove_extra_whitespaces = s.remove_extra_whitespaces();
  c.clean_spaces = s.clean_spaces();
  c.ignore_merges = s.ignore_merges();
  c.escape_whitespaces = s.escape_whitespaces();
  c.lowercase = s.lowercase();
  c.strip_accents = s.strip_accents();
  RETURN_IF_ERROR(ValidateTokenizerConfig(c).WithPrefix("tokenizer spec"));
  return c;
}

}  // namespace kvmesh
