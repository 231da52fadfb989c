import HTTP1
import Testing

@Suite struct HTTP1ResponseEncoderTests {
    @Test func encodesStatusLineAndHeaders() {
        var bytes: [UInt8] = []
        HTTP1ResponseEncoder.encodeHead(
            status: 404, reason: "Not Found", headers: [("Content-Length", "0"), ("X-A", "b")], into: &bytes)
        #expect(
            String(decoding: bytes, as: UTF8.self) == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nX-A: b\r\n\r\n")
    }

    @Test func chunkFraming() {
        #expect(HTTP1ResponseEncoder.chunkHeader(length: 26) == Array("1a\r\n".utf8))
        #expect(HTTP1ResponseEncoder.chunkHeader(length: 0) == Array("0\r\n".utf8))
        #expect(HTTP1ResponseEncoder.lastChunk == Array("0\r\n\r\n".utf8))
    }

    @Test(arguments: [0, 7, 10, 2560, 1_234_567_890])
    func appendsDecimals(_ value: Int) {
        var bytes: [UInt8] = []
        HTTP1ResponseEncoder.appendDecimal(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == String(value))
    }

    @Test func reasonPhrases() {
        #expect(HTTP1ResponseEncoder.reasonPhrase(for: 431) == "Request Header Fields Too Large")
        #expect(HTTP1ResponseEncoder.reasonPhrase(for: 299) == "")
    }
}
