internal import CZlib

#if canImport(Glibc)
import Glibc
#endif

/// A streaming gzip or deflate encoder that emits a decodable chunk per `write`.
///
/// Each `write` ends with `Z_SYNC_FLUSH`, so the bytes it returns, appended to everything
/// returned before, can be inflated up to and including the last input byte. That is what
/// SSE needs: one compressed chunk (HTTP/1.1 chunk or HTTP/2 DATA frame) per event, decodable
/// the moment it arrives, while the shared window keeps compressing later events against
/// earlier ones. `finish()` writes the trailer (CRC-32 and length for gzip).
///
/// The `z_stream` lives on the heap because zlib keeps a back-pointer to it. Memory per stream
/// is fixed at creation: see ``CompressionParameters/streaming`` and ``allocatedBytes``.
///
/// Not thread-safe: use one stream from one thread (the connection's loop).
///
/// ```swift
/// let gzip = try CompressionStream(coding: .gzip)
/// let first = try gzip.write(Array("data: hello\n\n".utf8))  // send as one chunk
/// let last = try gzip.finish()                               // send, then end the body
/// ```
public final class CompressionStream {
    /// The container format of the output.
    public let coding: ContentCoding
    /// The settings the stream was created with.
    public let parameters: CompressionParameters

    private let stream: UnsafeMutablePointer<z_stream>
    /// Bytes zlib currently holds for this stream, maintained by `ZlibAllocator`.
    private let heldBytes: UnsafeMutablePointer<Int>
    private var isFinished = false
    private var isInitialized = false

    /// Creates an encoder; zlib allocates all of its memory here.
    ///
    /// - Throws: ``CompressionError/initializationFailed(code:parameters:)`` for parameters
    ///   outside zlib's ranges (level 0…9, windowBits 9…15, memLevel 1…9) or when out of memory.
    public init(coding: ContentCoding = .gzip, parameters: CompressionParameters = .streaming) throws(CompressionError)
    {
        self.coding = coding
        self.parameters = parameters
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        heldBytes = .allocate(capacity: 1)
        heldBytes.initialize(to: 0)
        stream.pointee.zalloc = ZlibAllocator.allocate
        stream.pointee.zfree = ZlibAllocator.release
        stream.pointee.opaque = UnsafeMutableRawPointer(heldBytes)
        let valid =
            (0...9).contains(parameters.level) && (9...15).contains(parameters.windowBits)
            && (1...9).contains(parameters.memLevel)
        let status =
            valid
            ? deflateInit2_(
                stream, parameters.level, Z_DEFLATED, parameters.windowBits + coding.windowBitsOffset,
                parameters.memLevel, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
            : Z_STREAM_ERROR
        // Throwing after every stored property is set still runs deinit, which frees the memory.
        guard status == Z_OK else { throw .initializationFailed(code: status, parameters: parameters) }
        isInitialized = true
    }

    deinit {
        if isInitialized { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
        heldBytes.deallocate()
    }

    /// Bytes this stream holds: zlib's allocations plus the `z_stream` itself. Constant from
    /// `init` until `deinit`.
    public var allocatedBytes: Int { heldBytes.pointee + MemoryLayout<z_stream>.size }

    /// Total bytes fed to ``write(_:)`` so far.
    public var totalIn: Int { Int(stream.pointee.total_in) }
    /// Total compressed bytes returned so far.
    public var totalOut: Int { Int(stream.pointee.total_out) }

    /// Compresses `bytes` and flushes, returning output that decodes through the last input byte.
    ///
    /// An empty input still returns the 4-byte sync marker (or nothing if nothing is pending),
    /// which is harmless to send.
    public func write(_ bytes: some Collection<UInt8>) throws(CompressionError) -> [UInt8] {
        try run(bytes, flush: Z_SYNC_FLUSH)
    }

    /// Compresses `bytes` without flushing: the output may lag behind the input. Use it for
    /// parts of one event, then ``write(_:)`` for the last part.
    public func append(_ bytes: some Collection<UInt8>) throws(CompressionError) -> [UInt8] {
        try run(bytes, flush: Z_NO_FLUSH)
    }

    /// Ends the stream and returns the final bytes (including the gzip trailer). Later calls throw.
    public func finish() throws(CompressionError) -> [UInt8] {
        let output = try run(EmptyCollection<UInt8>(), flush: Z_FINISH)
        isFinished = true
        return output
    }

    private func run(_ bytes: some Collection<UInt8>, flush: Int32) throws(CompressionError) -> [UInt8] {
        guard !isFinished else { throw .streamFinished }
        // The closure-taking pointer APIs rethrow untyped errors, so carry the typed one out in a Result.
        let contiguous: Result<[UInt8], CompressionError>? = bytes.withContiguousStorageIfAvailable { input in
            Result { () throws(CompressionError) in try run(UnsafeRawBufferPointer(input), flush: flush) }
        }
        if let contiguous { return try contiguous.get() }
        let copied: Result<[UInt8], CompressionError> = Array(bytes).withUnsafeBytes { input in
            Result { () throws(CompressionError) in try run(input, flush: flush) }
        }
        return try copied.get()
    }

    private func run(_ input: UnsafeRawBufferPointer, flush: Int32) throws(CompressionError) -> [UInt8] {
        var output: [UInt8] = []
        // zlib's avail_in is 32-bit: feed very large inputs in slices; only the last slice flushes.
        let sliceLimit = Int(Int32.max)
        var offset = 0
        repeat {
            let count = min(input.count - offset, sliceLimit)
            let slice = UnsafeRawBufferPointer(rebasing: input[offset..<(offset + count)])
            offset += count
            let isLast = offset == input.count
            try deflate(slice, flush: isLast ? flush : Z_NO_FLUSH, into: &output)
        } while offset < input.count
        return output
    }

    private func deflate(
        _ input: UnsafeRawBufferPointer, flush: Int32, into output: inout [UInt8]
    ) throws(CompressionError) {
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        // Room for the whole input in one pass in the common case; the loop grows it otherwise.
        let chunkSize = max(512, Int(deflateBound(stream, uLong(input.count))) + 64)
        while true {
            let start = output.count
            output += [UInt8](repeating: 0, count: chunkSize)
            let status = output.withUnsafeMutableBufferPointer { buffer in
                stream.pointee.next_out = buffer.baseAddress! + start
                stream.pointee.avail_out = uInt(chunkSize)
                return CZlib.deflate(stream, flush)
            }
            let unused = Int(stream.pointee.avail_out)
            stream.pointee.next_out = nil
            output.removeLast(unused)
            switch status {
            case Z_STREAM_END:
                return
            case Z_OK, Z_BUF_ERROR:
                // Z_BUF_ERROR only means "no progress possible", e.g. a flush with nothing pending.
                // For Z_FINISH keep going until Z_STREAM_END; otherwise zlib is done when it
                // left output space unused.
                if flush != Z_FINISH && unused > 0 { return }
                if status == Z_BUF_ERROR && unused > 0 { return }
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "no message"
                throw .deflateFailed(code: status, message: message)
            }
        }
    }
}

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
