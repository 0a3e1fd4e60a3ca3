// tensor::PickleValue: what tensor::pickle_load returns (tensor/pickle.h).
#include "src/core/Check.h"
#include "tensor/pickle.h"

namespace tensor {

// ---- PickleValue ----

PickleValue PickleValue::from_bool(bool b) {
  PickleValue v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
PickleValue PickleValue::from_int(int64_t i) {
  PickleValue v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
PickleValue PickleValue::from_double(double d) {
  PickleValue v;
  v.kind_ = Kind::Double;
  v.d_ = d;
  return v;
}
PickleValue PickleValue::from_string(std::string s, bool bytes) {
  PickleValue v;
  v.kind_ = bytes ? Kind::Bytes : Kind::String;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
PickleValue PickleValue::from_tensor(Tensor t) {
  PickleValue v;
  v.kind_ = Kind::Tensor;
  v.t_ = std::move(t);
  return v;
}
PickleValue PickleValue::from_list(List items, bool tuple) {
  PickleValue v;
  v.kind_ = tuple ? Kind::Tuple : Kind::List;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}
PickleValue PickleValue::from_dict(Dict items) {
  PickleValue v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<const Dict>(std::move(items));
  return v;
}

const char* PickleValue::kind_name() const {
  switch (kind_) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Double:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::Tensor:
      return "tensor";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return "dict";
  }
  return "?";
}

namespace {
[[noreturn]] void wrong_kind(const PickleValue& v, const char* want) {
  TENSOR_ERROR("PickleValue: expected {}, but the value is {}", want, v.kind_name());
}
}  // namespace

bool PickleValue::to_bool() const {
  if (kind_ != Kind::Bool) wrong_kind(*this, "a bool");
  return b_;
}
int64_t PickleValue::to_int() const {
  if (kind_ != Kind::Int) wrong_kind(*this, "an int");
  return i_;
}
double PickleValue::to_double() const {
  if (kind_ == Kind::Int) return static_cast<double>(i_);
  if (kind_ != Kind::Double) wrong_kind(*this, "a float");
  return d_;
}
const std::string& PickleValue::to_string() const {
  if (kind_ != Kind::String && kind_ != Kind::Bytes) wrong_kind(*this, "a str or bytes");
  return *s_;
}
const Tensor& PickleValue::to_tensor() const {
  if (kind_ != Kind::Tensor) wrong_kind(*this, "a tensor");
  return t_;
}
const PickleValue::List& PickleValue::to_list() const {
  if (!is_list()) wrong_kind(*this, "a list or tuple");
  return *list_;
}
const PickleValue::Dict& PickleValue::to_dict() const {
  if (kind_ != Kind::Dict) wrong_kind(*this, "a dict");
  return *dict_;
}
const PickleValue* PickleValue::find(const std::string& key) const {
  for (const auto& [k, v] : to_dict())
    if (k.kind_ == Kind::String && *k.s_ == key) return &v;
  return nullptr;
}

}  // namespace tensor
