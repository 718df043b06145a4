#include "worker/kv/kv_bias.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/check.h"

namespace kvmesh {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the bias file is little-endian and is read with memcpy");

constexpr size_t kMagicBytes = 8;
// Far above any real model; bounds what a corrupt header can make us allocate.
constexpr uint32_t kMaxDimension = 1 << 16;
constexpr uint32_t kMaxStringBytes = 4096;

// resize + memcpy rather than insert(): g++ 12 reports a false
// -Wstringop-overflow for vector<uint8_t>::insert of a pointer range.
void Append(std::vector<uint8_t>* out, const void* data, size_t n) {
  if (n == 0) return;
  const size_t at = out->size();
  out->resize(at + n);
  std::memcpy(out->data() + at, data, n);
}

template <typename T>
void AppendValue(std::vector<uint8_t>* out, T value) {
  Append(out, &value, sizeof(value));
}

void AppendString(std::vector<uint8_t>* out, const std::string& s) {
  AppendValue<uint32_t>(out, static_cast<uint32_t>(s.size()));
  Append(out, s.data(), s.size());
}

// Reads fields front to back; the first short read records where it happened.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  bool Read(T* value) {
    return ReadBytes(value, sizeof(T));
  }
  bool ReadBytes(void* dst, size_t n) {
    if (bytes_.size() - offset_ < n) return false;
    std::memcpy(dst, bytes_.data() + offset_, n);
    offset_ += n;
    return true;
  }
  bool ReadString(std::string* s, uint32_t max_bytes) {
    uint32_t n = 0;
    if (!Read(&n) || n > max_bytes || bytes_.size() - offset_ < n) return false;
    s->assign(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return true;
  }
  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

 private:
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
};

std::string ShortIdentity(const std::string& identity) {
  return identity.size() > 16 ? identity.substr(0, 16) + "…" : identity;
}

std::string ShapeText(int n_layer, int n_head_kv, int head_dim) {
  return std::to_string(n_layer) + " layers x " + std::to_string(n_head_kv) + " KV heads x " +
         std::to_string(head_dim) + " channels";
}

}  // namespace

KvBias::KvBias(std::string model_identity, std::string model_name, int n_layer, int n_head_kv,
               int head_dim, uint64_t n_tokens, std::vector<float> mean)
    : model_identity_(std::move(model_identity)),
      model_name_(std::move(model_name)),
      n_layer_(n_layer),
      n_head_kv_(n_head_kv),
      head_dim_(head_dim),
      n_tokens_(n_tokens),
      mean_(std::move(mean)) {
  KVMESH_CHECK(n_layer > 0 && n_head_kv > 0 && head_dim > 0);
  KVMESH_CHECK(mean_.size() == static_cast<size_t>(n_layer) * n_head_kv * head_dim);
}

std::vector<uint8_t> KvBias::Serialize() const {
  std::vector<uint8_t> out;
  out.reserve(64 + model_identity_.size() + model_name_.size() + mean_.size() * sizeof(float));
  Append(&out, kMagic, kMagicBytes);
  AppendValue<uint32_t>(&out, kVersion);
  AppendValue<uint32_t>(&out, static_cast<uint32_t>(n_layer_));
  AppendValue<uint32_t>(&out, static_cast<uint32_t>(n_head_kv_));
  AppendValue<uint32_t>(&out, static_cast<uint32_t>(head_dim_));
  AppendValue<uint64_t>(&out, n_tokens_);
  AppendString(&out, model_identity_);
  AppendString(&out, model_name_);
  Append(&out, mean_.data(), mean_.size() * sizeof(float));
  return out;
}

StatusOr<std::shared_ptr<const KvBias>> KvBias::Parse(std::span<const uint8_t> bytes,
                                                      const std::string& source) {
  const std::string where = source + ": ";
  Reader r(bytes);
  char magic[kMagicBytes];
  if (!r.ReadBytes(magic, kMagicBytes) || std::memcmp(magic, kMagic, kMagicBytes) != 0) {
    return InvalidArgumentError(where +
                                "not a KV bias file (no KVMKBIAS header); write one with "
                                "`kvmesh kv-calibrate`");
  }
  uint32_t version = 0, n_layer = 0, n_head_kv = 0, head_dim = 0;
  uint64_t n_tokens = 0;
  if (!r.Read(&version)) return DataLossError(where + "truncated header");
  if (version != kVersion) {
    return InvalidArgumentError(where + "KV bias file version " + std::to_string(version) +
                                " is not supported (this build reads version " +
                                std::to_string(kVersion) + "); re-run `kvmesh kv-calibrate`");
  }
  std::string identity, name;
  if (!r.Read(&n_layer) || !r.Read(&n_head_kv) || !r.Read(&head_dim) || !r.Read(&n_tokens) ||
      !r.ReadString(&identity, kMaxStringBytes) || !r.ReadString(&name, kMaxStringBytes)) {
    return DataLossError(where + "truncated or corrupt header at byte " +
                         std::to_string(r.offset()));
  }
  if (n_layer == 0 || n_head_kv == 0 || head_dim == 0 || n_layer > kMaxDimension ||
      n_head_kv > kMaxDimension || head_dim > kMaxDimension) {
    return DataLossError(where + "implausible shape " + ShapeText(n_layer, n_head_kv, head_dim));
  }
  const uint64_t count = static_cast<uint64_t>(n_layer) * n_head_kv * head_dim;
  if (r.remaining() != count * sizeof(float)) {
    return DataLossError(where + "expected " + std::to_string(count * sizeof(float)) +
                         " bytes of means after the header (" +
                         ShapeText(n_layer, n_head_kv, head_dim) + "), found " +
                         std::to_string(r.remaining()));
  }
  std::vector<float> mean(count);
  (void)r.ReadBytes(mean.data(), count * sizeof(float));
  for (uint64_t i = 0; i < count; ++i) {
    if (!std::isfinite(mean[i])) {
      return DataLossError(where + "mean " + std::to_string(i) + " is not a finite number");
    }
  }
  return std::shared_ptr<const KvBias>(new KvBias(
      std::move(identity), std::move(name), static_cast<int>(n_layer), static_cast<int>(n_head_kv),
      static_cast<int>(head_dim), n_tokens, std::move(mean)));
}

StatusOr<std::shared_ptr<const KvBias>> KvBias::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the KV bias file");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) return DataLossError(path + ": read error");
  return Parse(bytes, path);
}

Status KvBias::Save(const std::string& path) const {
  const std::vector<uint8_t> bytes = Serialize();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return PermissionDeniedError(tmp + ": cannot create the KV bias file");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return DataLossError(tmp + ": write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return PermissionDeniedError(path +
                                 ": cannot move the KV bias file into place: " + ec.message());
  return Status::Ok();
}

Status KvBias::CheckModel(const std::string& model_identity, const std::string& model_name,
                          int n_layer, int n_head_kv, int head_dim) const {
  if (model_identity != model_identity_) {
    std::string message = "the KV bias table was measured on model '";
    message += model_name_;
    message += "' (identity ";
    message += ShortIdentity(model_identity_);
    message += "), not on the loaded model '";
    message += model_name;
    message += "' (identity ";
    message += ShortIdentity(model_identity);
    message += "); run `kvmesh kv-calibrate` with this model";
    return InvalidArgumentError(std::move(message));
  }
  if (n_layer != n_layer_ || n_head_kv != n_head_kv_ || head_dim != head_dim_) {
    return InvalidArgumentError("the KV bias table has " +
                                ShapeText(n_layer_, n_head_kv_, head_dim_) + " but model '" +
                                model_name + "' has " + ShapeText(n_layer, n_head_kv, head_dim));
  }
  return Status::Ok();
}

}  // namespace kvmesh
