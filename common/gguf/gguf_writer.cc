#include "common/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "common/gguf/gguf_file.h"

namespace kvmesh::gguf {
namespace {

template <typename V>
void PutBytes(std::vector<uint8_t>& out, V v) {
  const size_t at = out.size();
  out.resize(at + sizeof(V));
  std::memcpy(out.data() + at, &v, sizeof(V));
}

// A value's GGUF payload (what follows its type tag).
void EncodeValue(const Value& v, std::vector<uint8_t>& out) {
  using VT = ValueType;
  switch (v.type()) {
    case VT::kBool:
      PutBytes<uint8_t>(out, *v.AsBool() ? 1 : 0);
      return;
    case VT::kUint8:
      PutBytes<uint8_t>(out, static_cast<uint8_t>(*v.AsUint64()));
      return;
    case VT::kInt8:
      PutBytes<int8_t>(out, static_cast<int8_t>(*v.AsInt64()));
      return;
    case VT::kUint16:
      PutBytes<uint16_t>(out, static_cast<uint16_t>(*v.AsUint64()));
      return;
    case VT::kInt16:
      PutBytes<int16_t>(out, static_cast<int16_t>(*v.AsInt64()));
      return;
    case VT::kUint32:
      PutBytes<uint32_t>(out, static_cast<uint32_t>(*v.AsUint64()));
      return;
    case VT::kInt32:
      PutBytes<int32_t>(out, static_cast<int32_t>(*v.AsInt64()));
      return;
    case VT::kUint64:
      PutBytes<uint64_t>(out, *v.AsUint64());
      return;
    case VT::kInt64:
      PutBytes<int64_t>(out, *v.AsInt64());
      return;
    case VT::kFloat32:
      PutBytes<float>(out, static_cast<float>(*v.AsDouble()));
      return;
    case VT::kFloat64:
      PutBytes<double>(out, *v.AsDouble());
      return;
    case VT::kString: {
      const std::string_view s = *v.AsString();
      PutBytes<uint64_t>(out, s.size());
      out.insert(out.end(), s.begin(), s.end());
      return;
    }
    case VT::kArray: {
      const Array& a = *v.AsArray();
      PutBytes<uint32_t>(out, static_cast<uint32_t>(a.element_type));
      PutBytes<uint64_t>(out, a.elements.size());
      for (const Value& e : a.elements) EncodeValue(e, out);
      return;
    }
  }
}

template <typename T>
void Append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void AppendString(std::vector<uint8_t>& out, const std::string& s) {
  Append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

}  // namespace

void GgufWriter::Put(const std::string& key, ValueType type, std::vector<uint8_t> payload) {
  for (Entry& e : entries_) {
    if (e.key == key) {
      e.type = type;
      e.payload = std::move(payload);
      return;
    }
  }
  entries_.push_back({key, type, std::move(payload)});
}

void GgufWriter::SetUint32(const std::string& key, uint32_t v) {
  std::vector<uint8_t> p;
  Append(p, v);
  Put(key, ValueType::kUint32, std::move(p));
}
void GgufWriter::SetInt32(const std::string& key, int32_t v) {
  std::vector<uint8_t> p;
  Append(p, v);
  Put(key, ValueType::kInt32, std::move(p));
}
void GgufWriter::SetUint64(const std::string& key, uint64_t v) {
  std::vector<uint8_t> p;
  Append(p, v);
  Put(key, ValueType::kUint64, std::move(p));
}
void GgufWriter::SetFloat32(const std::string& key, float v) {
  std::vector<uint8_t> p;
  Append(p, v);
  Put(key, ValueType::kFloat32, std::move(p));
}
void GgufWriter::SetBool(const std::string& key, bool v) {
  Put(key, ValueType::kBool, {static_cast<uint8_t>(v ? 1 : 0)});
}
void GgufWriter::SetString(const std::string& key, const std::string& v) {
  std::vector<uint8_t> p;
  AppendString(p, v);
  Put(key, ValueType::kString, std::move(p));
}
void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> p;
  Append<uint32_t>(p, static_cast<uint32_t>(ValueType::kString));
  Append<uint64_t>(p, v.size());
  for (const std::string& s : v) AppendString(p, s);
  Put(key, ValueType::kArray, std::move(p));
}
void GgufWriter::SetFloat32Array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> p;
  Append<uint32_t>(p, static_cast<uint32_t>(ValueType::kFloat32));
  Append<uint64_t>(p, v.size());
  for (float f : v) Append(p, f);
  Put(key, ValueType::kArray, std::move(p));
}
void GgufWriter::SetInt32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> p;
  Append<uint32_t>(p, static_cast<uint32_t>(ValueType::kInt32));
  Append<uint64_t>(p, v.size());
  for (int32_t i : v) Append(p, i);
  Put(key, ValueType::kArray, std::move(p));
}
void GgufWriter::SetValue(const std::string& key, const Value& v) {
  std::vector<uint8_t> payload;
  EncodeValue(v, payload);
  Put(key, v.type(), std::move(payload));
}

void GgufWriter::SetRaw(const std::string& key, ValueType type, std::vector<uint8_t> payload) {
  Put(key, type, std::move(payload));
}

Status GgufWriter::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                             std::span<const uint8_t> data) {
  return AddTensor(name, type, std::move(dims), std::vector<uint8_t>(data.begin(), data.end()));
}

Status GgufWriter::AddTensor(const std::string& name, TensorType type, std::vector<int64_t> dims,
                             std::vector<uint8_t>&& data) {
  const auto info = LookupTensorType(static_cast<uint32_t>(type));
  if (!info) return InvalidArgumentError("tensor " + name + ": unknown type");
  if (IsKvOnlyTensorType(static_cast<uint32_t>(type))) {
    return InvalidArgumentError("tensor " + name + ": " + std::string(info->name) +
                                " is a KV page type, not a file type");
  }
  if (dims.empty() || dims.size() > static_cast<size_t>(kMaxDims)) {
    return InvalidArgumentError("tensor " + name + ": needs 1..4 dimensions");
  }
  uint64_t elements = 1;
  for (int64_t d : dims) {
    if (d <= 0) return InvalidArgumentError("tensor " + name + ": non-positive dimension");
    elements *= static_cast<uint64_t>(d);
  }
  if (dims[0] % info->block_size != 0) {
    return InvalidArgumentError("tensor " + name +
                                ": row length is not a multiple of the block size");
  }
  const uint64_t bytes = elements / info->block_size * info->bytes_per_block;
  if (bytes != data.size()) {
    return InvalidArgumentError("tensor " + name + ": expected " + std::to_string(bytes) +
                                " bytes of data, got " + std::to_string(data.size()));
  }
  tensors_.push_back({name, type, std::move(dims), std::move(data)});
  return Status::Ok();
}

std::vector<uint8_t> GgufWriter::Serialize() const {
  std::vector<uint8_t> out = SerializeHeader();
  for (const Tensor& t : tensors_) {
    out.insert(out.end(), t.data.begin(), t.data.end());
    out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  }
  return out;
}

std::vector<uint8_t> GgufWriter::SerializeHeader() const {
  std::vector<uint8_t> out;
  Append<uint32_t>(out, kMagic);
  Append<uint32_t>(out, 3);
  Append<uint64_t>(out, tensors_.size());
  const bool has_alignment_key = alignment_ != kDefaultAlignment;
  Append<uint64_t>(out, entries_.size() + (has_alignment_key ? 1 : 0));
  if (has_alignment_key) {
    AppendString(out, "general.alignment");
    Append<uint32_t>(out, static_cast<uint32_t>(ValueType::kUint32));
    Append<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  for (const Entry& e : entries_) {
    AppendString(out, e.key);
    Append<uint32_t>(out, static_cast<uint32_t>(e.type));
    out.insert(out.end(), e.payload.begin(), e.payload.end());
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    AppendString(out, t.name);
    Append<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) Append<uint64_t>(out, static_cast<uint64_t>(d));
    Append<uint32_t>(out, static_cast<uint32_t>(t.type));
    Append<uint64_t>(out, offset);
    offset = (offset + t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, 0);
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return InvalidArgumentError(path + ": cannot open for writing");
  auto write = [&](const uint8_t* data, size_t size) {
    return std::fwrite(data, 1, size, f.get()) == size;
  };
  const std::vector<uint8_t> header = SerializeHeader();
  if (!write(header.data(), header.size())) return InternalError(path + ": short write");
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const Tensor& t : tensors_) {
    const size_t padding = (alignment_ - t.data.size() % alignment_) % alignment_;
    if (!write(t.data.data(), t.data.size()) || !write(zeros.data(), padding)) {
      return InternalError(path + ": short write");
    }
  }
  if (std::fflush(f.get()) != 0) return InternalError(path + ": flush failed");
  return Status::Ok();
}

}  // namespace kvmesh::gguf
