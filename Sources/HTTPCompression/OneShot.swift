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
