#include "common/tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvmesh::unicode {
namespace {

using Cps = std::vector<uint32_t>;

TEST(DecodeUtf8Test, DecodesWellFormedText) {
  EXPECT_EQ(DecodeUtf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x99"), (Cps{'a', 0xE9, 0x4E2D, 0x1F999}));
  EXPECT_EQ(DecodeUtf8(""), Cps{});
}

TEST(DecodeUtf8Test, MalformedSequencesCostOneByteEach) {
  // A stray continuation byte, a truncated 3-byte sequence, an invalid lead.
  EXPECT_EQ(DecodeUtf8("\x80"
                       "a"),
            (Cps{0xFFFD, 'a'}));
  EXPECT_EQ(DecodeUtf8("\xE4\xB8"
                       "a"),
            (Cps{0xFFFD, 0xFFFD, 'a'}));
  EXPECT_EQ(DecodeUtf8("\xFF"), (Cps{0xFFFD}));
  // Past U+10FFFF.
  EXPECT_EQ(DecodeUtf8("\xF5\x80\x80\x80"), (Cps{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}));
}

TEST(DecodeUtf8Test, KeepsLlamaCppLeniency) {
  // Overlong forms and surrogates decode instead of being rejected.
  EXPECT_EQ(DecodeUtf8("\xC0\x80"), (Cps{0}));
  EXPECT_EQ(DecodeUtf8("\xED\xA0\x80"), (Cps{0xD800}));
}

TEST(AppendUtf8Test, EncodesEveryLength) {
  EXPECT_EQ(EncodeUtf8('A'), "A");
  EXPECT_EQ(EncodeUtf8(0xE9), "\xC3\xA9");
  EXPECT_EQ(EncodeUtf8(0x2581), "\xE2\x96\x81");
  EXPECT_EQ(EncodeUtf8(0x1F680), "\xF0\x9F\x9A\x80");
}

TEST(NextUtf8SequenceTest, ClassifiesCompleteIncompleteAndInvalid) {
  EXPECT_EQ(NextUtf8Sequence("a"), 1);
  EXPECT_EQ(NextUtf8Sequence("\xF0\x9F\xA6\x99"), 4);
  EXPECT_EQ(NextUtf8Sequence("\xF0\x9F\xA6"), 0);
  EXPECT_EQ(NextUtf8Sequence("\xE4"), 0);
  EXPECT_EQ(NextUtf8Sequence("\x80"), -1);
  EXPECT_EQ(NextUtf8Sequence("\xC0\x80"), -1);      // overlong lead
  EXPECT_EQ(NextUtf8Sequence("\xED\xA0\x80"), -1);  // surrogate: second byte out of range
  EXPECT_EQ(NextUtf8Sequence("\xE4\xB8"
                             "a"),
            -2);  // maximal subpart of two bytes
}

TEST(AppendSanitizedUtf8Test, ReplacesEachMaximalSubpart) {
  std::string out;
  AppendSanitizedUtf8(
      "a\xE4\xB8"
      "b\xFF\xF0\x9F",
      &out);
  EXPECT_EQ(out,
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ClassOfTest, MatchesLlamaCppClasses) {
  EXPECT_EQ(ClassOf('a'), kLetter);
  EXPECT_EQ(ClassOf('7'), kNumber);
  EXPECT_EQ(ClassOf('!'), kPunctuation);
  EXPECT_EQ(ClassOf('$'), kSymbol);
  EXPECT_EQ(ClassOf('~'), kSymbol);
  EXPECT_EQ(ClassOf(' '), kSeparator);
  EXPECT_EQ(ClassOf('\n'), kControl);
  EXPECT_EQ(ClassOf(0xBD), kNumber);     // ½
  EXPECT_EQ(ClassOf(0x4E2D), kLetter);   // 中
  EXPECT_EQ(ClassOf(0x17B6), kMark);     // Khmer vowel sign aa
  EXPECT_EQ(ClassOf(0x200D), kControl);  // zero width joiner (Cf)
  EXPECT_EQ(ClassOf(0xFF5E), kSymbol);   // fullwidth tilde
  EXPECT_EQ(ClassOf(0x1F999), kSymbol);  // 🦙
  EXPECT_EQ(ClassOf(0x0378), kUnassigned);
  EXPECT_EQ(ClassOf(0x110000), kUnassigned);
}

TEST(IsWhitespaceTest, IsUnicodeWhiteSpace) {
  for (uint32_t cp : {0x09u, 0x0Du, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x200Au, 0x2028u,
                      0x2029u, 0x202Fu, 0x205Fu, 0x3000u}) {
    EXPECT_TRUE(IsWhitespace(cp)) << cp;
  }
  for (uint32_t cp : {0x08u, 0x0Eu, 0x61u, 0x180Eu, 0x200Bu, 0xFEFFu}) {
    EXPECT_FALSE(IsWhitespace(cp)) << cp;
  }
}

TEST(ToLowerTest, UsesSimpleCaseMapping) {
  EXPECT_EQ(ToLower('A'), 'a');
  EXPECT_EQ(ToLower('a'), 'a');
  EXPECT_EQ(ToLower(0xC4), 0xE4u);      // Ä -> ä
  EXPECT_EQ(ToLower(0x0411), 0x0431u);  // Б -> б
  EXPECT_EQ(ToLower(0x0100), 0x0101u);  // Ā -> ā (a stride-2 run)
  EXPECT_EQ(ToLower(0x0101), 0x0101u);
  EXPECT_EQ(ToLower(0x2126), 0x03C9u);  // Ohm sign -> ω
  EXPECT_EQ(ToLower(0x212A), 'k');      // Kelvin sign
  EXPECT_EQ(ToLower(0x10400), 0x10428u);
}

TEST(DecompositionFirstTest, TakesTheBaseCharacter) {
  EXPECT_EQ(DecompositionFirst(0xC4), 'A');        // Ä
  EXPECT_EQ(DecompositionFirst(0x1EED), 'u');      // ử: u + horn + hook
  EXPECT_EQ(DecompositionFirst(0x1EC7), 'e');      // ệ
  EXPECT_EQ(DecompositionFirst(0xD55C), 0x1112u);  // 한: leading jamo
  EXPECT_EQ(DecompositionFirst('a'), 'a');
  EXPECT_EQ(DecompositionFirst(0x4E2D), 0x4E2Du);
}

TEST(ByteMapTest, SpellsBytesAsPrintableCodePoints) {
  EXPECT_EQ(ByteToUnicode('a'), "a");
  EXPECT_EQ(ByteToUnicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(ByteToUnicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(ByteToUnicode(0xE6), "\xC3\xA6");  // æ stands for itself
  EXPECT_EQ(ByteToUnicode(0xAD), "\xC5\x83");  // the soft hyphen is not printable
  for (int byte = 0; byte < 256; ++byte) {
    const std::vector<uint32_t> cps = DecodeUtf8(ByteToUnicode(static_cast<uint8_t>(byte)));
    ASSERT_EQ(cps.size(), 1u);
    EXPECT_EQ(UnicodeToByte(cps[0]), byte);
  }
  EXPECT_EQ(UnicodeToByte(0x4E2D), std::nullopt);
  EXPECT_EQ(UnicodeToByte(0x20), std::nullopt);  // a raw space is not a byte spelling
}

}  // namespace
}  // namespace kvmesh::unicode
