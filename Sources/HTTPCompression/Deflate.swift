/// One-shot `deflate` compression (the zlib format, RFC 1950, as HTTP defines "deflate").
///
/// ```swift
/// let compressed = try Deflate.compress(Array("hello".utf8))  // Content-Encoding: deflate
/// ```
public enum Deflate {
    /// Compresses `bytes` into a complete zlib stream (header, deflate data, Adler-32).
    public static func compress(
        _ bytes: some Collection<UInt8>, parameters: CompressionParameters? = nil
    ) throws(CompressionError) -> [UInt8] {
        try OneShot.compress(bytes, coding: .deflate, parameters: parameters)
    }
}
