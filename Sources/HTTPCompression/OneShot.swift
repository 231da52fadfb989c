/// One-shot compression in the given coding; what ``Gzip`` and ``Deflate`` share.
public enum OneShot {
    /// Compresses `bytes` completely in `coding`.
    ///
    /// ```swift
    /// let body = try OneShot.compress(bytes, coding: negotiatedCoding)
    /// ```
    public static func compress(
        _ bytes: some Collection<UInt8>, coding: ContentCoding, parameters: CompressionParameters = .oneShot
    ) throws(CompressionError) -> [UInt8] {
        let stream = try CompressionStream(coding: coding, parameters: parameters)
        var output = try stream.append(bytes)
        output += try stream.finish()
        return output
    }
}
