/// One-shot gzip compression of a complete body.
///
/// Unless `parameters` are given, uses ``CompressionParameters/oneShot(forBodySize:)``: a window
/// just large enough for the body (at most zlib's defaults), alive only during the call.
///
/// ```swift
/// let body = Array(json.utf8)
/// let gzipped = try Gzip.compress(body)  // send with Content-Encoding: gzip
/// ```
public enum Gzip {
    /// Compresses `bytes` into a complete gzip member (header, deflate data, CRC-32 and size).
    public static func compress(
        _ bytes: some Collection<UInt8>, parameters: CompressionParameters? = nil
    ) throws(CompressionError) -> [UInt8] {
        try OneShot.compress(bytes, coding: .gzip, parameters: parameters)
    }
}
