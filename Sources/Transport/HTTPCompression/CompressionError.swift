/// Why zlib refused to compress.
///
/// These are programming or resource errors (zlib reports no errors for any input bytes), so the
/// caller normally sends the body uncompressed or drops the stream.
public enum CompressionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `deflateInit2` failed (bad parameters or out of memory); `code` is zlib's return value.
    case initializationFailed(code: Int32, parameters: CompressionParameters)
    /// `deflate` returned an error code instead of `Z_OK`/`Z_STREAM_END`/`Z_BUF_ERROR`.
    case deflateFailed(code: Int32, message: String)
    /// `write` or `finish` was called after `finish()` completed the stream.
    case streamFinished

    public var description: String {
        switch self {
        case .initializationFailed(let code, let parameters):
            "zlib deflateInit2 failed with code \(code) for \(parameters)"
        case .deflateFailed(let code, let message):
            "zlib deflate failed with code \(code): \(message)"
        case .streamFinished:
            "the compression stream is already finished; start a new one"
        }
    }
}
