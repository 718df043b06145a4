#include "common/tokenizer/unicode.h"

#include <algorithm>
#include <array>

namespace kvmesh::unicode_tables {
// Defined in the generated unicode_class_data.cc / unicode_mapping_data.cc.
extern const uint32_t kClassRanges[];
extern const size_t kClassRangesSize;
extern const uint32_t kLowercaseRuns[];
extern const size_t kLowercaseRunsSize;
extern const uint32_t kDecompositionFirstRuns[];
extern const size_t kDecompositionFirstRunsSize;
}  // namespace kvmesh::unicode_tables

namespace kvmesh::unicode {
namespace {

namespace tables = ::kvmesh::unicode_tables;

uint8_t ClassFromRanges(uint32_t cp) {
  // kClassRanges[i] = (first << 8) | class; find the last range starting <= cp.
  const uint32_t* begin = tables::kClassRanges;
  const uint32_t* end = begin + tables::kClassRangesSize;
  const uint32_t* it =
      std::upper_bound(begin, end, cp, [](uint32_t c, uint32_t entry) { return c < (entry >> 8); });
  return static_cast<uint8_t>(*(it - 1) & 0xFF);
}

// Most text is in the Basic Multilingual Plane; a flat table makes those
// lookups O(1). Built once, on first use.
const std::array<uint8_t, 0x10000>& BmpClasses() {
  static const auto* table = [] {
    auto* t = new std::array<uint8_t, 0x10000>();
    for (uint32_t cp = 0; cp < 0x10000; ++cp) (*t)[cp] = ClassFromRanges(cp);
    return t;
  }();
  return *table;
}

// Run tables: pairs of ((first << 11) | (count << 1) | (stride - 1), value).
// Returns the index of the run covering `cp`, or -1.
long FindRun(const uint32_t* runs, size_t size, uint32_t cp) {
  size_t lo = 0;
  size_t hi = size / 2;  // number of runs
  while (lo < hi) {      // first run whose start is > cp
    const size_t mid = (lo + hi) / 2;
    if ((runs[2 * mid] >> 11) <= cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return -1;
  const size_t run = lo - 1;
  const uint32_t head = runs[2 * run];
  const uint32_t first = head >> 11;
  const uint32_t count = (head >> 1) & 0x3FF;
  const uint32_t stride = (head & 1) + 1;
  const uint32_t delta = cp - first;
  if (delta % stride != 0 || delta / stride >= count) return -1;
  return static_cast<long>(run);
}

constexpr bool IsPrintableLatin1(int byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

struct ByteMap {
  std::array<std::string, 256> spelling;
  std::array<int16_t, 512> byte_of;  // code point (< 512) -> byte, or -1
};

const ByteMap& GetByteMap() {
  static const ByteMap* map = [] {
    auto* m = new ByteMap();
    m->byte_of.fill(-1);
    uint32_t next_unprintable = 256;
    for (int byte = 0; byte < 256; ++byte) {
      const uint32_t cp = IsPrintableLatin1(byte) ? byte : next_unprintable++;
      m->spelling[byte] = EncodeUtf8(cp);
      m->byte_of[cp] = static_cast<int16_t>(byte);
    }
    return m;
  }();
  return *map;
}

bool IsContinuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

uint8_t ClassOf(uint32_t cp) {
  if (cp < 0x10000) return BmpClasses()[cp];
  if (cp > kMaxCodePoint) return kUnassigned;
  return ClassFromRanges(cp);
}

bool IsWhitespace(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint32_t ToLower(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  const long run = FindRun(tables::kLowercaseRuns, tables::kLowercaseRunsSize, cp);
  if (run < 0) return cp;
  return cp + tables::kLowercaseRuns[2 * run + 1];  // the offset is stored mod 2^32
}

uint32_t DecompositionFirst(uint32_t cp) {
  if (cp < 0xC0) return cp;
  const long run =
      FindRun(tables::kDecompositionFirstRuns, tables::kDecompositionFirstRunsSize, cp);
  return run < 0 ? cp : tables::kDecompositionFirstRuns[2 * run + 1];
}

size_t Utf8SequenceLength(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

std::vector<uint32_t> DecodeUtf8(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t b0 = bytes[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      len = 1;
      cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      len = 2;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4;
      cp = b0 & 0x07;
    }
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = IsContinuation(bytes[i + k]);
      cp = (cp << 6) | (bytes[i + k] & 0x3F);
    }
    if (ok && cp > kMaxCodePoint) ok = false;
    if (ok) {
      out.push_back(cp);
      i += len;
    } else {
      out.push_back(kReplacementCharacter);
      i += 1;
    }
  }
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string EncodeUtf8(uint32_t cp) {
  std::string out;
  AppendUtf8(cp, &out);
  return out;
}

int NextUtf8Sequence(std::string_view bytes) {
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  const uint8_t lead = b[0];
  if (lead < 0x80) return 1;
  int len;
  uint8_t second_lo = 0x80;  // Unicode table 3-7: the second byte's range
  uint8_t second_hi = 0xBF;  // depends on the lead byte.
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) second_lo = 0xA0;
    if (lead == 0xED) second_hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) second_lo = 0x90;
    if (lead == 0xF4) second_hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k < len; ++k) {
    if (static_cast<size_t>(k) >= n) return 0;
    const uint8_t lo = k == 1 ? second_lo : 0x80;
    const uint8_t hi = k == 1 ? second_hi : 0xBF;
    if (b[k] < lo || b[k] > hi) return -k;
  }
  return len;
}

void AppendSanitizedUtf8(std::string_view bytes, std::string* out) {
  while (!bytes.empty()) {
    const int len = NextUtf8Sequence(bytes);
    if (len > 0) {
      out->append(bytes.substr(0, len));
      bytes.remove_prefix(len);
    } else {
      AppendUtf8(kReplacementCharacter, out);
      bytes.remove_prefix(len < 0 ? -len : bytes.size());  // an incomplete tail is one subpart
    }
  }
}

std::string_view ByteToUnicode(uint8_t byte) { return GetByteMap().spelling[byte]; }

std::optional<uint8_t> UnicodeToByte(uint32_t cp) {
  if (cp >= 512) return std::nullopt;
  const int16_t byte = GetByteMap().byte_of[cp];
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

}  // namespace kvmesh::unicode
