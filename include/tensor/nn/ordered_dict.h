// An insertion-ordered dictionary, as libtorch's torch::OrderedDict: what named_parameters(),
// named_buffers() and named_children() return.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/core/Error.h"

namespace tensor {

/// Keys in insertion order; lookup is a linear scan (modules hold few entries per level).
/// Items are (key, value) pairs: `for (auto& [name, t] : dict)`, or `item.key()` / `item.value()`
/// as in libtorch.
template <typename Key, typename Value>
class OrderedDict {
 public:
  /// A std::pair with libtorch's accessors; structured bindings see `first` and `second`.
  struct Item : std::pair<Key, Value> {
    Item(Key k, Value v) : std::pair<Key, Value>(std::move(k), std::move(v)) {}
    const Key& key() const noexcept { return this->first; }
    Value& value() noexcept { return this->second; }
    const Value& value() const noexcept { return this->second; }
    Value& operator*() noexcept { return this->second; }
    const Value& operator*() const noexcept { return this->second; }
    Value* operator->() noexcept { return &this->second; }
    const Value* operator->() const noexcept { return &this->second; }
    const std::pair<Key, Value>& pair() const noexcept { return *this; }
  };
  using Iterator = typename std::vector<Item>::iterator;
  using ConstIterator = typename std::vector<Item>::const_iterator;

  /// `key_description` names the kind of key in error messages ("Parameter", "Buffer").
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}

  const std::string& key_description() const noexcept { return key_description_; }

  /// Appends; throws tensor::Error if the key exists.
  Value& insert(Key key, Value value) {
    if (find(key)) detail::throw_error((key_description_ + " '" + key_str(key) + "' already defined").c_str());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  /// Inserts or overwrites (keeping the original position).
  Value& insert_or_assign(Key key, Value value) {
    if (Value* v = find(key)) return *v = std::move(value);
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  /// Inserts every item of `other` (throws on a duplicate key).
  void update(const OrderedDict& other) {
    for (const auto& item : other) insert(item.first, item.second);
  }
  /// Removes the item with this key; throws if absent.
  void erase(const Key& key) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == key) { items_.erase(it); return; }
    detail::throw_error((key_description_ + " '" + key_str(key) + "' is not defined").c_str());
  }

  /// Pointer to the value, or null.
  Value* find(const Key& key) noexcept {
    for (auto& item : items_) if (item.first == key) return &item.second;
    return nullptr;
  }
  const Value* find(const Key& key) const noexcept {
    for (const auto& item : items_) if (item.first == key) return &item.second;
    return nullptr;
  }
  bool contains(const Key& key) const noexcept { return find(key) != nullptr; }
  /// The value for `key`; throws tensor::Error naming the key when absent.
  Value& operator[](const Key& key) {
    if (Value* v = find(key)) return *v;
    detail::throw_error((key_description_ + " '" + key_str(key) + "' is not defined").c_str());
  }
  const Value& operator[](const Key& key) const { return const_cast<OrderedDict&>(*this)[key]; }
  Value& at(const Key& key) { return (*this)[key]; }
  const Value& at(const Key& key) const { return (*this)[key]; }

  /// The item at insertion position `i` (bounds-checked).
  Item& operator[](size_t i) { return items_.at(i); }
  const Item& operator[](size_t i) const { return items_.at(i); }
  Item& front() { return items_.at(0); }
  Item& back() { return items_.at(items_.size() - 1); }

  Iterator begin() { return items_.begin(); }
  Iterator end() { return items_.end(); }
  ConstIterator begin() const { return items_.begin(); }
  ConstIterator end() const { return items_.end(); }
  size_t size() const noexcept { return items_.size(); }
  bool is_empty() const noexcept { return items_.empty(); }
  bool empty() const noexcept { return items_.empty(); }
  void clear() { items_.clear(); }
  void reserve(size_t n) { items_.reserve(n); }

  std::vector<Key> keys() const {
    std::vector<Key> k;
    k.reserve(items_.size());
    for (const auto& item : items_) k.push_back(item.first);
    return k;
  }
  std::vector<Value> values() const {
    std::vector<Value> v;
    v.reserve(items_.size());
    for (const auto& item : items_) v.push_back(item.second);
    return v;
  }
  const std::vector<Item>& items() const noexcept { return items_; }
  /// The items as plain pairs (what io's save/load and optimizer state dicts take).
  std::vector<std::pair<Key, Value>> pairs() const {
    std::vector<std::pair<Key, Value>> p;
    p.reserve(items_.size());
    for (const auto& item : items_) p.emplace_back(item.first, item.second);
    return p;
  }
  operator std::vector<std::pair<Key, Value>>() const { return pairs(); }

 private:
  static std::string key_str(const Key& k) {
    if constexpr (std::is_convertible_v<Key, std::string>) return std::string(k);
    else return "?";
  }
  std::string key_description_;
  std::vector<Item> items_;
};

}  // namespace tensor
