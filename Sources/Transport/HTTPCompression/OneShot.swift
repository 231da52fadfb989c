/// One-shot compression in the given coding; what ``Gzip`` and ``Deflate`` share.
public enum OneShot {
    /// Compresses `bytes` completely in `coding`; `parameters` default to
    /// ``CompressionParameters/oneShot(forBodySize:)``.
    ///
    /// ```swift
    /// let body = try OneShot.compress(bytes, coding: negotiatedCoding)
    /// ```
    public static func compress(
        _ bytes: some Collection<UInt8>, coding: ContentCoding, parameters: CompressionParameters? = nil
    ) throws(CompressionError) -> [UInt8] {
        let stream = try CompressionStream(
            coding: coding, parameters: parameters ?? .oneShot(forBodySize: bytes.count))
        var output = try stream.append(bytes)
        output += try stream.finish()
        return output
    }
}

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
