internal import CNGHTTP2

#if canImport(Glibc)
import Glibc
#endif

/// nghttp2 allocation callbacks that count the bytes a session holds, so the memory per
/// connection is a measured figure (``HTTP2ServerSession/allocatedBytes``). `mem_user_data`
/// points at the session's `Int` counter; each block carries its size in a 16-byte prefix
/// (16 keeps the returned pointer as aligned as `malloc`'s).
enum HTTP2Allocator {
    static let prefixSize = 16

    static func counter(_ userData: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<Int>? {
        userData?.assumingMemoryBound(to: Int.self)
    }

    static func allocate(_ size: Int, _ userData: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        guard let block = malloc(size + prefixSize) else { return nil }
        block.storeBytes(of: size, as: Int.self)
        counter(userData)?.pointee += size
        return block + prefixSize
    }

    static func release(_ pointer: UnsafeMutableRawPointer?, _ userData: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let block = pointer - prefixSize
        counter(userData)?.pointee -= block.load(as: Int.self)
        free(block)
    }

    static let mallocCallback: nghttp2_malloc = { size, userData in allocate(size, userData) }

    static let freeCallback: nghttp2_free = { pointer, userData in release(pointer, userData) }

    static let callocCallback: nghttp2_calloc = { count, size, userData in
        let (bytes, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, let pointer = allocate(bytes, userData) else { return nil }
        memset(pointer, 0, bytes)
        return pointer
    }

    static let reallocCallback: nghttp2_realloc = { pointer, size, userData in
        guard let pointer else { return allocate(size, userData) }
        let block = pointer - prefixSize
        let oldSize = block.load(as: Int.self)
        guard let moved = realloc(block, size + prefixSize) else { return nil }
        moved.storeBytes(of: size, as: Int.self)
        counter(userData)?.pointee += size - oldSize
        return moved + prefixSize
    }

    /// The allocator for a session whose counter is `counter` (which must outlive the session).
    static func make(counting counter: UnsafeMutablePointer<Int>) -> nghttp2_mem {
        nghttp2_mem(
            mem_user_data: UnsafeMutableRawPointer(counter), malloc: mallocCallback, free: freeCallback,
            calloc: callocCallback, realloc: reallocCallback)
    }
}
