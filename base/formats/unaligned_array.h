// UnalignedArray<T>: a read-only view of `size` little-endian T values at any
// byte address, loaded through memcpy. A memory-mapped file's arrays sit where
// its header puts them (Megatron's .idx arrays start at byte 34), so reading
// them through a T* would be a misaligned access: undefined behaviour that
// UBSan reports, even where the CPU executes it. Copyable, trivially cheap;
// valid while the memory it views is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>

namespace bm::formats {

template <typename T>
class UnalignedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;

    Iterator() = default;
    explicit Iterator(const std::byte* at) : at_(at) {}
    T operator*() const { return Load(at_); }
    T operator[](difference_type i) const { return Load(at_ + i * difference_type{sizeof(T)}); }
    Iterator& operator++() { return *this += 1; }
    Iterator operator++(int) {
      Iterator old = *this;
      ++*this;
      return old;
    }
    Iterator& operator--() { return *this -= 1; }
    Iterator operator--(int) {
      Iterator old = *this;
      --*this;
      return old;
    }
    Iterator& operator+=(difference_type n) {
      at_ += n * difference_type{sizeof(T)};
      return *this;
    }
    Iterator& operator-=(difference_type n) { return *this += -n; }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(Iterator a, Iterator b) {
      return (a.at_ - b.at_) / difference_type{sizeof(T)};
    }
    friend bool operator==(Iterator a, Iterator b) { return a.at_ == b.at_; }
    friend auto operator<=>(Iterator a, Iterator b) { return a.at_ <=> b.at_; }

   private:
    const std::byte* at_ = nullptr;
  };

  UnalignedArray() = default;
  UnalignedArray(const void* data, size_t size)
      : data_(static_cast<const std::byte*>(data)), size_(size) {}

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Precondition: i < size().
  T operator[](size_t i) const { return Load(data_ + i * sizeof(T)); }
  T front() const { return (*this)[0]; }
  T back() const { return (*this)[size_ - 1]; }
  Iterator begin() const { return Iterator(data_); }
  Iterator end() const { return Iterator(data_ + size_ * sizeof(T)); }

 private:
  static T Load(const std::byte* at) {
    T value;
    std::memcpy(&value, at, sizeof(T));
    return value;
  }

  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace bm::formats
