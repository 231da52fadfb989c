import HTTP1
import Testing

@Suite struct HTTP1ChunkedDecoderTests {
    func decodeWhole(_ text: String, maxBody: Int = 1 << 20) -> (HTTP1ChunkedDecoder.Result, [UInt8]) {
        var decoder = HTTP1ChunkedDecoder(maxBodyBytes: maxBody)
        var body: [UInt8] = []
        let result = decoder.decode(Array(text.utf8), into: &body)
        return (result, body)
    }

    @Test func decodesChunksExtensionsAndTrailers() {
        let encoded = "3\r\nabc\r\n0A;name=value\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT"
        let (result, body) = decodeWhole(encoded)
        #expect(result == .complete(consumed: encoded.utf8.count - 4))
        #expect(String(decoding: body, as: UTF8.self) == "abc0123456789")
    }

    @Test func byteByByteGivesTheSameBody() {
        let encoded = Array("5\r\nhello\r\n1 ;x\r\n!\r\n0\r\n\r\n".utf8)
        var decoder = HTTP1ChunkedDecoder(maxBodyBytes: 100)
        var body: [UInt8] = []
        var completeAt: Int?
        for (position, byte) in encoded.enumerated() {
            switch decoder.decode([byte], into: &body) {
            case .needMore: continue
            case .complete(let consumed):
                #expect(consumed == 1)
                completeAt = position + 1
            case .invalid(let error): Issue.record("unexpected \(error)")
            }
            break
        }
        #expect(completeAt == encoded.count)
        #expect(String(decoding: body, as: UTF8.self) == "hello!")
        #expect(decoder.bodyBytes == 6)
    }

    static let invalid: [(String, Int)] = [
        ("x\r\n", 400),
        ("\r\n", 400),
        ("3x\r\nabc\r\n0\r\n\r\n", 400),
        ("-3\r\nabc\r\n", 400),
        ("3\nabc\r\n0\r\n\r\n", 400),
        ("3\r\nabcd\r\n0\r\n\r\n", 400),
        ("3\r\nabc\n0\r\n\r\n", 400),
        ("3 \r\nabc\r\n0\r\n\r\n", 400),
        ("0\r\n\n", 400),
        ("0\r\nT: v\n\r\n", 400),
        ("0\r\n folded\r\n\r\n", 400),
        ("00000000000000001\r\n", 400),
        ("11111111111111111\r\n", 413),
        ("3;ext\u{01}\r\nabc\r\n", 400),
        // Trailer lines are field lines: a token name, a colon, a value.
        ("0\r\nBad Trailer: x\r\n\r\n", 400),
        ("0\r\nNoColonHere\r\n\r\n", 400),
        ("0\r\n(T): x\r\n\r\n", 400),
    ]

    @Test(arguments: invalid)
    func rejectsMalformedFraming(_ encoded: String, _ status: Int) {
        let (result, _) = decodeWhole(encoded)
        guard case .invalid(let error) = result else {
            Issue.record("accepted \(encoded.debugDescription): \(result)")
            return
        }
        #expect(error.status == status)
    }

    @Test func bodyOverTheLimitIs413BeforeTheDataArrives() {
        let (result, body) = decodeWhole("5\r\nhel", maxBody: 4)
        #expect(result == .invalid(HTTP1ParseError(status: 413, reason: "request body too large")))
        #expect(body.isEmpty)
        let (sum, _) = decodeWhole("3\r\nabc\r\n3\r\n", maxBody: 5)
        guard case .invalid(let error) = sum else {
            Issue.record("the total over the limit was accepted")
            return
        }
        #expect(error.status == 413)
    }
}
