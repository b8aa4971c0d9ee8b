#pragma once
/// \file stream.hpp
/// A CUDA stream named without CUDA types, so that public headers can take one: DeviceStream{} is
/// the default (legacy) stream, DeviceStream{s} wraps a cudaStream_t s (a pointer type). Work on a
/// stream other than the default one can be captured into a CUDA graph.
namespace krysp {

/// A cudaStream_t without CUDA types (see the file comment).
struct DeviceStream {
  void* handle = nullptr;  ///< the cudaStream_t; nullptr: the default stream
};

}  // namespace krysp
