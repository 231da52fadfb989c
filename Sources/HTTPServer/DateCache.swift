import Glibc

/// The `Date` header value (IMF-fixdate), formatted at most once per second per loop.
final class DateCache: @unchecked Sendable {
    // Used only on its own loop thread.
    private var second: time_t = -1
    private var value = ""

    var current: String {
        let now = time(nil)
        if now != second {
            second = now
            var parts = tm()
            var seconds = now
            gmtime_r(&seconds, &parts)
            var buffer = [CChar](repeating: 0, count: 64)
            let length = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
            value = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return value
    }
}
