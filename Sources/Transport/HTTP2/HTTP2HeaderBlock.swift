internal import CNGHTTP2
import HTTPTypes

/// A response head laid out for `nghttp2_submit_response`: all names and values in one
/// contiguous buffer and an `nghttp2_nv` array pointing into it (nghttp2 copies both during the
/// call). One buffer avoids per-field pointer juggling and the exclusivity errors of nesting
/// `withUnsafe…` calls per field.
struct HTTP2HeaderBlock {
    /// Fields RFC 9113 §8.2.2 forbids in HTTP/2 (connection-specific); an HTTP/1-minded
    /// handler may set them, so they are dropped rather than making the client reset the stream.
    static let connectionSpecific: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te",
    ]

    private var storage: [UInt8] = []
    private var ranges: [(name: Range<Int>, value: Range<Int>)] = []

    init(response: HTTPResponse) {
        append(name: ":status", value: String(response.status.code))
        for field in response.headerFields {
            let name = field.name.canonicalName
            guard !Self.connectionSpecific.contains(name) else { continue }
            append(name: name, value: field.value)
        }
    }

    private mutating func append(name: String, value: String) {
        let nameStart = storage.count
        storage.append(contentsOf: name.utf8)
        let valueStart = storage.count
        storage.append(contentsOf: value.utf8)
        ranges.append((nameStart..<valueStart, valueStart..<storage.count))
    }

    /// Calls `body` with the `nghttp2_nv` array; the pointers are valid only inside `body`.
    func withNameValuePairs<Result>(_ body: (UnsafeBufferPointer<nghttp2_nv>) -> Result) -> Result {
        var storage = storage
        return storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            let pairs = ranges.map { range in
                nghttp2_nv(
                    name: base + range.name.lowerBound, value: base + range.value.lowerBound,
                    namelen: range.name.count, valuelen: range.value.count,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return pairs.withUnsafeBufferPointer(body)
        }
    }
}
