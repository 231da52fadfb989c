/// An immutable byte buffer at a fixed address, shared by reference: an encoded event is written
/// to many connections without a copy per connection, and `writev` can point straight at it.
///
/// ```swift
/// let event = SharedBytes(Array("data: hi\n\n".utf8))
/// connection.write(ByteSlice(event))
/// ```
public final class SharedBytes: @unchecked Sendable {
    // Safe to share: written only in `init`, then read-only until `deinit`.
    private let base: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int
    /// Runs when the buffer is freed (every slice written or dropped): returns a budget charge.
    private let onRelease: (@Sendable () -> Void)?

    /// Copies `bytes` into a new buffer.
    public convenience init(_ bytes: [UInt8]) {
        self.init(parts: [bytes])
    }

    /// Copies the concatenation of `parts` into a new buffer (for example a head and a body).
    ///
    /// - Parameter onRelease: runs once when the buffer is freed — after the last connection
    ///   holding a slice of it wrote or dropped it — for example to return bytes to a budget.
    public init(parts: [[UInt8]], onRelease: (@Sendable () -> Void)? = nil) {
        self.onRelease = onRelease
        count = parts.reduce(0) { $0 + $1.count }
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        var offset = 0
        for part in parts {
            part.withUnsafeBytes { source in
                if let address = source.baseAddress {
                    (base + offset).copyMemory(from: address, byteCount: source.count)
                }
            }
            offset += part.count
        }
    }

    /// Fills a new buffer of `count` bytes with `initializer`.
    public init(count: Int, initializer: (UnsafeMutableRawBufferPointer) -> Void) {
        onRelease = nil
        self.count = count
        base = .allocate(byteCount: max(count, 1), alignment: 1)
        initializer(UnsafeMutableRawBufferPointer(start: base, count: count))
    }

    deinit {
        base.deallocate()
        onRelease?()
    }

    /// Read access to the bytes.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// The bytes as an array (a copy).
    public var array: [UInt8] { withUnsafeBytes { Array($0) } }

    var address: UnsafeRawPointer { UnsafeRawPointer(base) }
}

/// A range of a ``SharedBytes`` buffer: the unit a ``Connection`` queues and writes.
public struct ByteSlice: Sendable {
    public let storage: SharedBytes
    public private(set) var range: Range<Int>

    /// The whole buffer.
    public init(_ storage: SharedBytes) {
        self.init(storage, range: 0..<storage.count)
    }

    /// Part of the buffer; `range` must lie within it.
    public init(_ storage: SharedBytes, range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= storage.count, "slice outside its buffer")
        self.storage = storage
        self.range = range
    }

    public var count: Int { range.count }

    /// Drops the first `count` bytes (already written).
    mutating func removeFirst(_ count: Int) {
        range = (range.lowerBound + count)..<range.upperBound
    }

    var startAddress: UnsafeRawPointer { storage.address + range.lowerBound }
}
