// Prints worker/kernels/cpu/iq_grids_data.h: the codebooks of the IQ3_S,
// IQ3_XXS and IQ2_XS weight types, read back through ggml's own decoders.
//
// The codebooks are part of the GGUF format (a file stores indices into
// them), so kvmesh must use the same points. They are measured here rather
// than transcribed: a block whose every group names a different index, with
// unit scales and no signs, decodes to the points themselves; each point is
// then written as its level indices (3 bits per value for the IQ3 types, 2
// for IQ2_XS), and kvmesh rebuilds the byte tables from those at compile time
// (iq_grids.h). Also checks that the sign codes of IQ3_XXS and IQ2_XS are
// seven bits plus an even-parity eighth, which iq_grids.h computes.
//
// Built and run by bench/iq_grids.sh against a native llama.cpp build.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ggml.h"

namespace {

int failures = 0;

std::vector<float> Decode(ggml_type type, const std::vector<uint8_t>& block) {
  std::vector<float> y(256);
  ggml_get_type_traits(type)->to_float(block.data(), y.data(), 256);
  return y;
}

std::vector<uint8_t> UnitBlock(size_t bytes) {
  std::vector<uint8_t> block(bytes, 0);
  const uint16_t one = 0x3C00;  // f16 1.0
  std::memcpy(block.data(), &one, 2);
  return block;
}

// The level index of value v among `levels`, or -1.
int LevelOf(float v, const std::vector<float>& levels) {
  for (size_t i = 0; i < levels.size(); ++i) {
    if (levels[i] == v) return static_cast<int>(i);
  }
  return -1;
}

// Packs one point of `width` values as `bits`-bit level indices, value 0 in
// the low bits.
uint32_t Pack(const float* values, int width, int bits, const std::vector<float>& levels,
              const char* type, int index) {
  uint32_t code = 0;
  for (int k = 0; k < width; ++k) {
    const int level = LevelOf(values[k], levels);
    if (level < 0) {
      std::fprintf(stderr, "%s point %d: value %g is no level\n", type, index, values[k]);
      ++failures;
      return 0;
    }
    code |= static_cast<uint32_t>(level) << (bits * k);
  }
  return code;
}

void Print(const char* name, const std::vector<uint32_t>& codes) {
  std::printf("inline constexpr uint16_t %s[%zu] = {\n", name, codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    std::printf("%s0x%04x,%s", i % 10 == 0 ? "    " : " ", codes[i],
                i % 10 == 9 || i + 1 == codes.size() ? "\n" : "");
  }
  std::printf("};\n");
}

// IQ3_S: 110-byte blocks, d | qs[64] | qh[8] | signs[32] | scales[4]; a
// group's index is its qs byte plus bit g % 8 of qh[g / 8] as bit 8. Scale
// code 0 gives the step d * 1.
std::vector<uint32_t> Iq3sCodes() {
  const std::vector<float> levels = {1, 3, 5, 7, 9, 11, 13, 15};
  std::vector<uint32_t> codes;
  for (int b = 0; b < 8; ++b) {
    std::vector<uint8_t> block = UnitBlock(110);
    for (int g = 0; g < 64; ++g) {
      const int index = 64 * b + g;
      block[2 + g] = static_cast<uint8_t>(index & 0xFF);
      if (index >> 8) block[66 + g / 8] |= static_cast<uint8_t>(1 << (g % 8));
    }
    const std::vector<float> y = Decode(GGML_TYPE_IQ3_S, block);
    for (int g = 0; g < 64; ++g)
      codes.push_back(Pack(&y[4 * g], 4, 3, levels, "IQ3_S", 64 * b + g));
  }
  return codes;
}

// IQ3_XXS: 98-byte blocks, d | qs[64] (one index per group of 4) | eight
// 32-bit words (4 x 7 sign bits, scale in the top 4). Scale code 0 gives the
// step d * 0.25.
std::vector<uint32_t> Iq3xxsCodes() {
  const std::vector<float> levels = {1, 3, 5, 7, 9, 11, 13, 15.5};  // points / 4
  std::vector<uint32_t> codes;
  for (int b = 0; b < 4; ++b) {
    std::vector<uint8_t> block = UnitBlock(98);
    for (int g = 0; g < 64; ++g) block[2 + g] = static_cast<uint8_t>(64 * b + g);
    const std::vector<float> y = Decode(GGML_TYPE_IQ3_XXS, block);
    for (int g = 0; g < 64; ++g) {
      codes.push_back(Pack(&y[4 * g], 4, 3, levels, "IQ3_XXS", 64 * b + g));
    }
  }
  // Sign codes: group 0 of sub-block 0 with sign code s flips the values
  // whose bit is set in s | parity(s) << 7.
  for (int s = 0; s < 128; ++s) {
    std::vector<uint8_t> block = UnitBlock(98);
    block[2] = block[3] = 0;
    const uint32_t word = static_cast<uint32_t>(s);
    std::memcpy(block.data() + 66, &word, 4);
    const std::vector<float> y = Decode(GGML_TYPE_IQ3_XXS, block);
    const int expected = s | (__builtin_popcount(s) & 1) << 7;
    for (int k = 0; k < 8; ++k) {
      if ((y[k] < 0) != ((expected >> k) & 1)) {
        std::fprintf(stderr, "IQ3_XXS sign code %d: value %d has the wrong sign\n", s, k);
        ++failures;
      }
    }
  }
  return codes;
}

// IQ2_XS: 74-byte blocks, d | qs[32] u16 (9-bit index, 7 sign bits) |
// scales[8] (a nibble per 16 values). Scale code 0 gives the step d * 0.125.
std::vector<uint32_t> Iq2xsCodes() {
  const std::vector<float> levels = {1, 3.125f, 5.375f};  // points / 8
  std::vector<uint32_t> codes;
  for (int b = 0; b < 16; ++b) {
    std::vector<uint8_t> block = UnitBlock(74);
    for (int g = 0; g < 32; ++g) {
      const uint16_t q = static_cast<uint16_t>(32 * b + g);
      std::memcpy(block.data() + 2 + 2 * g, &q, 2);
    }
    const std::vector<float> y = Decode(GGML_TYPE_IQ2_XS, block);
    for (int g = 0; g < 32; ++g) {
      codes.push_back(Pack(&y[8 * g], 8, 2, levels, "IQ2_XS", 32 * b + g));
    }
  }
  for (int s = 0; s < 128; ++s) {
    std::vector<uint8_t> block = UnitBlock(74);
    const uint16_t q = static_cast<uint16_t>(s << 9);
    std::memcpy(block.data() + 2, &q, 2);
    const std::vector<float> y = Decode(GGML_TYPE_IQ2_XS, block);
    const int expected = s | (__builtin_popcount(s) & 1) << 7;
    for (int k = 0; k < 8; ++k) {
      if ((y[k] < 0) != ((expected >> k) & 1)) {
        std::fprintf(stderr, "IQ2_XS sign code %d: value %d has the wrong sign\n", s, k);
        ++failures;
      }
    }
  }
  return codes;
}

}  // namespace

int main() {
  const std::vector<uint32_t> iq3s = Iq3sCodes();
  const std::vector<uint32_t> iq3xxs = Iq3xxsCodes();
  const std::vector<uint32_t> iq2xs = Iq2xsCodes();
  if (failures > 0) return 1;
  std::printf(
      "// Generated by bench/iq_grids.sh from a native llama.cpp build's decoders; do\n"
      "// not edit. The codebook points of the IQ3_S, IQ3_XXS and IQ2_XS weight\n"
      "// types as level indices, value k of a point in bits [b*k, b*k + b) (see\n"
      "// iq_grids.h, which turns them into the byte tables the kernels read).\n"
      "#pragma once\n\n#include <cstdint>\n\nnamespace kvmesh::kernels {\n\n");
  std::printf("// IQ3_S: 512 points of 4 values, 3 bits each; level l is the value 2l + 1.\n");
  Print("kIq3sGridLevels", iq3s);
  std::printf(
      "\n// IQ3_XXS: 256 points of 4 values, 3 bits each; level l is the value 8l + 4,\n"
      "// except level 7, which is 62.\n");
  Print("kIq3xxsGridLevels", iq3xxs);
  std::printf("\n// IQ2_XS: 512 points of 8 values, 2 bits each; levels 0, 1, 2 are 8, 25, 43.\n");
  Print("kIq2xsGridLevels", iq2xs);
  std::printf("\n}  // namespace kvmesh::kernels\n");
  return 0;
}
