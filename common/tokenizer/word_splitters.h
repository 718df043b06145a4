// Hand-written scanners for the two pre-tokenizer regexes llama.cpp never runs
// through a regex engine:
//
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//            | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (Qwen2's regex is Llama 3's with \p{N} in place of \p{N}{1,3}.) llama.cpp
// scans these by hand, and token ids follow the scanner, not the regex, where
// the two could differ: classes come from unicode::ClassOf, \s is Unicode's
// White_Space, and a character matched by no alternative becomes a word of
// its own.
//
// Both functions refine a split: `fragments` holds the lengths, in code
// points, of consecutive pieces of `cps`; each piece is scanned on its own (a
// lookahead never sees past its end) and the word lengths are appended to
// `words`. Pure functions, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvmesh {

void SplitGpt2Words(const std::vector<uint32_t>& cps, const std::vector<size_t>& fragments,
                    std::vector<size_t>* words);

// `max_digits` is 3 for Llama 3 and 1 for Qwen2.
void SplitLlama3Words(const std::vector<uint32_t>& cps, const std::vector<size_t>& fragments,
                      size_t max_digits, std::vector<size_t>* words);

}  // namespace kvmesh
