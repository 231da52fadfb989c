/// One-shot gzip compression of a complete body.
///
/// Uses ``CompressionParameters/oneShot`` (zlib's defaults): the 256 KiB of zlib state exist
/// only for the duration of the call.
///
/// ```swift
/// let body = Array(json.utf8)
/// let gzipped = try Gzip.compress(body)  // send with Content-Encoding: gzip
/// ```
public enum Gzip {
    /// Compresses `bytes` into a complete gzip member (header, deflate data, CRC-32 and size).
    public static func compress(
        _ bytes: some Collection<UInt8>, parameters: CompressionParameters = .oneShot
    ) throws(CompressionError) -> [UInt8] {
        try OneShot.compress(bytes, coding: .gzip, parameters: parameters)
    }
}
