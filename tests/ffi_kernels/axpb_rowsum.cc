#include <cstdint>
#include "xla/ffi/api/ffi.h"
namespace ffi = xla::ffi;

// y = scale * x + offset (elementwise); attribute scale (f32), offset (f64)
static ffi::Error AxpbImpl(float scale, double offset, ffi::Buffer<ffi::F32> x,
                           ffi::ResultBuffer<ffi::F32> y) {
  auto n = x.element_count();
  for (size_t i = 0; i < n; ++i) y->typed_data()[i] = scale * x.typed_data()[i] + (float)offset;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Axpb, AxpbImpl,
    ffi::Ffi::Bind().Attr<float>("scale").Attr<double>("offset")
        .Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// row sums of a rank-2 array, and the count of rows as int32
static ffi::Error RowSumImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> s,
                             ffi::ResultBuffer<ffi::S32> n) {
  auto dims = x.dimensions();
  int64_t rows = dims.size() ? dims[0] : 1;
  int64_t cols = x.element_count() / (rows ? rows : 1);
  for (int64_t r = 0; r < rows; ++r) {
    float acc = 0;
    for (int64_t c = 0; c < cols; ++c) acc += x.typed_data()[r * cols + c];
    s->typed_data()[r] = acc;
  }
  n->typed_data()[0] = (int32_t)rows;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(RowSum, RowSumImpl,
    ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>()
        .Ret<ffi::Buffer<ffi::S32>>());
