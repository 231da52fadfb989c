import HTTPTypes
import Testing

@testable import HTTPServer

@Suite struct ResponseCompressionTests {
    static let json = Array(String(repeating: #"{"id":1,"name":"widget"},"#, count: 100).utf8)

    func request(acceptEncoding: String?) -> HTTPServerRequest {
        var fields = HTTPFields()
        if let acceptEncoding { fields[.acceptEncoding] = acceptEncoding }
        return HTTPServerRequest(
            head: HTTPRequest(method: .get, scheme: "http", authority: "x", path: "/", headerFields: fields))
    }

    @Test func acceptedAndWorthIt_IsGzipped() {
        var response = HTTPServerResponse.json(Self.json)
        ResponseCompression.apply(to: &response, for: request(acceptEncoding: "gzip, deflate, br"))
        #expect(response.head.headerFields[.contentEncoding] == "gzip")
        #expect(response.head.headerFields[.vary] == "Accept-Encoding")
        #expect(response.body.prefix(2) == [0x1f, 0x8b])
        #expect(response.body.count < Self.json.count / 4)
    }

    @Test func deflateOnly_IsDeflated() {
        var response = HTTPServerResponse.json(Self.json)
        ResponseCompression.apply(to: &response, for: request(acceptEncoding: "deflate"))
        #expect(response.head.headerFields[.contentEncoding] == "deflate")
        #expect(response.body[0] & 0x0f == 8)  // zlib header: CM = deflate
    }

    @Test func notAccepted_IsUnchangedButVaries() {
        var response = HTTPServerResponse.json(Self.json)
        ResponseCompression.apply(to: &response, for: request(acceptEncoding: nil))
        #expect(response.body == Self.json)
        #expect(response.head.headerFields[.contentEncoding] == nil)
        // A cache must not serve this identity copy to a client that asked for gzip, or vice versa.
        #expect(response.head.headerFields[.vary] == "Accept-Encoding")
    }

    @Test func smallOrBinaryBodies_AreUntouched() {
        var small = HTTPServerResponse.text("ok")
        ResponseCompression.apply(to: &small, for: request(acceptEncoding: "gzip"))
        #expect(small.body == Array("ok".utf8))
        #expect(small.head.headerFields[.vary] == nil)
        var binary = HTTPServerResponse(headerFields: [.contentType: "image/png"], body: Self.json)
        ResponseCompression.apply(to: &binary, for: request(acceptEncoding: "gzip"))
        #expect(binary.body == Self.json)
        #expect(binary.head.headerFields[.contentEncoding] == nil)
    }

    @Test func alreadyEncodedOrPartial_IsUntouched() {
        var encoded = HTTPServerResponse.json(Self.json)
        encoded.head.headerFields[.contentEncoding] = "br"
        ResponseCompression.apply(to: &encoded, for: request(acceptEncoding: "gzip"))
        #expect(encoded.body == Self.json)
        var partial = HTTPServerResponse.json(Self.json)
        partial.head.headerFields[.contentRange] = "bytes 0-99/5000"
        ResponseCompression.apply(to: &partial, for: request(acceptEncoding: "gzip"))
        #expect(partial.head.headerFields[.contentEncoding] == nil)
    }

    @Test func existingVary_IsExtendedNotDuplicated() {
        var response = HTTPServerResponse.json(Self.json)
        response.head.headerFields[.vary] = "Origin"
        ResponseCompression.apply(to: &response, for: request(acceptEncoding: "gzip"))
        #expect(response.head.headerFields[values: .vary] == ["Origin", "Accept-Encoding"])
        var again = response
        ResponseCompression.apply(to: &again, for: request(acceptEncoding: "gzip"))
        #expect(again.head.headerFields[values: .vary] == ["Origin", "Accept-Encoding"])
    }

    @Test func eventStream_NegotiatesAPerStreamCompressor() throws {
        var head = HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"])
        let compressor = try #require(
            ResponseCompression.negotiateEventStream(&head, for: request(acceptEncoding: "gzip")))
        #expect(head.headerFields[.contentEncoding] == "gzip")
        #expect(head.headerFields[.vary] == "Accept-Encoding")
        let first = try #require(compressor.compress(EncodedEvent(payload: Array("data: a\n\n".utf8))))
        #expect(first.payloadBytes.prefix(2) == [0x1f, 0x8b])
        #expect(first.payloadBytes.suffix(4) == [0, 0, 0xff, 0xff])
        #expect(compressor.finish() != nil)

        var plain = HTTPResponse(status: .ok, headerFields: [.contentType: "text/event-stream"])
        #expect(ResponseCompression.negotiateEventStream(&plain, for: request(acceptEncoding: "identity")) == nil)
        #expect(plain.headerFields[.contentEncoding] == nil)
    }
}
