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
