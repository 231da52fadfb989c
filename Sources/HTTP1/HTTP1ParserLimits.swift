/// Bounds enforced while parsing a request head.
///
/// ```swift
/// let limits = HTTP1ParserLimits(maxHeaderBytes: 8192)
/// ```
public struct HTTP1ParserLimits: Sendable, Hashable {
    /// The request line plus all header lines, in bytes (431 beyond it). Default 16 KiB.
    public var maxHeaderBytes: Int
    /// The request target, in bytes (414 beyond it). Default 8 KiB.
    public var maxTargetBytes: Int
    /// The number of header lines (431 beyond it). Default 100.
    public var maxHeaderCount: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxTargetBytes: Int = 8 * 1024, maxHeaderCount: Int = 100) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxHeaderCount = maxHeaderCount
    }
}
