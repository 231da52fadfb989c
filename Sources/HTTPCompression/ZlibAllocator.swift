internal import CZlib

#if canImport(Glibc)
import Glibc
#endif

/// zlib allocation callbacks that count the bytes a stream holds, so the memory per stream is a
/// measured figure rather than a formula. zlib allocates only in `deflateInit2` (five blocks), so
/// the bookkeeping costs nothing per compressed byte.
///
/// `opaque` points at the owning stream's `Int` counter. Each block carries its size in a 16-byte
/// prefix (16 keeps the returned pointer as aligned as `malloc`'s).
enum ZlibAllocator {
    static let prefixSize = 16

    static let allocate: alloc_func = { opaque, items, size in
        let (bytes, overflow) = Int(items).multipliedReportingOverflow(by: Int(size))
        guard !overflow, let block = malloc(bytes + ZlibAllocator.prefixSize) else { return nil }
        block.storeBytes(of: bytes, as: Int.self)
        opaque?.assumingMemoryBound(to: Int.self).pointee += bytes
        return block + ZlibAllocator.prefixSize
    }

    static let release: free_func = { opaque, address in
        guard let address else { return }
        let block = address - ZlibAllocator.prefixSize
        let bytes = block.load(as: Int.self)
        opaque?.assumingMemoryBound(to: Int.self).pointee -= bytes
        free(block)
    }
}
