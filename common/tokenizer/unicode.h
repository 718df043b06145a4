// Unicode helpers for the tokenizers: UTF-8 decoding and encoding, the coarse
// code point classes the pre-tokenizers test, lower-casing, and the GPT-2
// byte <-> code point map of byte-level BPE.
//
// Token ids must match llama.cpp's, so the lenient decoder below reproduces
// llama.cpp's, quirks included: a malformed sequence costs one byte and
// becomes U+FFFD; overlong forms and surrogates are decoded, not rejected.
// Text handed to users goes through the strict helpers instead
// (NextUtf8Sequence, AppendSanitizedUtf8), which follow the Unicode
// "maximal subpart" rule for U+FFFD.
//
// Everything here is a pure function over immutable tables: safe from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvmesh::unicode {

inline constexpr uint32_t kReplacementCharacter = 0xFFFD;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Coarse classes, one bit each (a code point has exactly one). These are the
// general-category groups llama.cpp's pre-tokenizers test: \p{N}, \p{L}, \p{Z},
// \p{M}, \p{P}, \p{S} and \p{C}; unassigned code points form their own class.
enum CodePointClass : uint8_t {
  kUnassigned = 1 << 0,
  kNumber = 1 << 1,
  kLetter = 1 << 2,
  kSeparator = 1 << 3,
  kMark = 1 << 4,
  kPunctuation = 1 << 5,
  kSymbol = 1 << 6,
  kControl = 1 << 7,
};

// The class of `cp`; code points past U+10FFFF are unassigned.
uint8_t ClassOf(uint32_t cp);
// Unicode's White_Space property (26 code points; includes U+0085 and U+00A0).
bool IsWhitespace(uint32_t cp);

// Simple (one code point) lower-case mapping; `cp` itself when it has none.
uint32_t ToLower(uint32_t cp);
// First code point of the canonical decomposition (NFD) of `cp`: 'é' -> 'e'.
uint32_t DecompositionFirst(uint32_t cp);

// Length of the sequence a lead byte announces, judged by its top four bits
// only (1 for ASCII and for stray continuation bytes, 2, 3 or 4).
size_t Utf8SequenceLength(uint8_t lead);

// Decodes like llama.cpp: each malformed sequence yields U+FFFD and consumes
// one byte. Lead bytes 0xF5..0xF7 that would decode past U+10FFFF are
// malformed too (llama.cpp aborts on those).
std::vector<uint32_t> DecodeUtf8(std::string_view text);
// Appends the UTF-8 form of `cp` (<= U+10FFFF; surrogates are encoded as-is).
void AppendUtf8(uint32_t cp, std::string* out);
std::string EncodeUtf8(uint32_t cp);

// Strict validation of one sequence at the start of `bytes`:
//   > 0: a complete, well-formed sequence of that many bytes;
//   == 0: a well-formed but incomplete prefix (more bytes may complete it);
//   < 0: -n, the first n bytes are a maximal ill-formed subpart.
// `bytes` must not be empty.
int NextUtf8Sequence(std::string_view bytes);
// Appends `bytes` to `out`, replacing each maximal ill-formed subpart (and an
// incomplete tail) with U+FFFD.
void AppendSanitizedUtf8(std::string_view bytes, std::string* out);

// Byte-level BPE (GPT-2) spells every byte as one printable code point:
// printable Latin-1 bytes stand for themselves, the others map to U+0100...
// Returns the UTF-8 spelling of the code point standing for `byte`.
std::string_view ByteToUnicode(uint8_t byte);
// Inverse of ByteToUnicode, by code point.
std::optional<uint8_t> UnicodeToByte(uint32_t cp);

}  // namespace kvmesh::unicode
