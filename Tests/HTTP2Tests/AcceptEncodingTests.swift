import HTTPCompression
import Testing

@Suite struct AcceptEncodingTests {
    @Test(arguments: [
        ("gzip", ContentCoding.gzip),
        ("deflate", .deflate),
        ("gzip, deflate, br", .gzip),
        ("deflate, gzip", .gzip),
        ("GZIP", .gzip),
        ("x-gzip", .gzip),
        ("gzip;q=0.5, deflate", .deflate),
        ("gzip ; q=0.9 , deflate;q=0.8", .gzip),
        ("*", .gzip),
        ("br, *;q=0.1", .gzip),
        ("gzip;q=0, *", .deflate),
    ])
    func acceptable_PicksBest(header: String, expected: ContentCoding) {
        #expect(AcceptEncoding(header: header).preferredCoding() == expected)
    }

    @Test(arguments: [
        "", "identity", "br", "gzip;q=0", "gzip;q=0, deflate;q=0.000", "*;q=0", "identity;q=1, *;q=0",
        "gzip;q=2", "gzip;q=abc", ",,,", "gzip;q=0.12345",
    ])
    func nothingAcceptable_MeansIdentity(header: String) {
        #expect(AcceptEncoding(header: header).preferredCoding() == nil)
    }

    @Test func missingHeader_MeansIdentity() {
        #expect(AcceptEncoding(header: nil).preferredCoding() == nil)
    }

    @Test func namedEntry_BeatsWildcard() {
        let accept = AcceptEncoding(header: "*;q=1, gzip;q=0.2")
        #expect(accept.quality(of: .gzip) == 0.2)
        #expect(accept.quality(of: .deflate) == 1)
        #expect(accept.preferredCoding() == .deflate)
    }

    @Test func serverPreference_BreaksTies() {
        let accept = AcceptEncoding(header: "deflate, gzip")
        #expect(accept.preferredCoding(among: [.deflate, .gzip]) == .deflate)
        #expect(accept.preferredCoding(among: [.gzip]) == .gzip)
    }

    @Test func members_AreParsedInOrder() {
        let accept = AcceptEncoding(header: "gzip;q=0.8, Identity, *;q=0")
        #expect(
            accept.members == [
                .init(coding: "gzip", quality: 0.8), .init(coding: "identity", quality: 1),
                .init(coding: "*", quality: 0),
            ])
    }
}

@Suite struct CompressionPolicyTests {
    let policy = CompressionPolicy()

    @Test(arguments: [
        "application/json", "text/html; charset=utf-8", "text/event-stream", "application/problem+json",
        "image/svg+xml", "application/vnd.api+json", "TEXT/PLAIN",
        // What the gateway serves of the browser client and the demo.
        "text/javascript; charset=utf-8", "application/typescript; charset=utf-8", "text/css; charset=utf-8",
    ])
    func textualTypes_AreCompressed(contentType: String) {
        #expect(policy.coding(acceptEncoding: "gzip", contentType: contentType, bodySize: 5000) == .gzip)
    }

    @Test(arguments: ["image/png", "application/octet-stream", "application/zip", "video/mp4", ""])
    func binaryTypes_AreNot(contentType: String) {
        #expect(policy.coding(acceptEncoding: "gzip", contentType: contentType, bodySize: 5000) == nil)
    }

    @Test func smallBodies_AreNot() {
        #expect(policy.coding(acceptEncoding: "gzip", contentType: "application/json", bodySize: 1023) == nil)
        #expect(policy.coding(acceptEncoding: "gzip", contentType: "application/json", bodySize: 1024) == .gzip)
    }

    @Test func streams_IgnoreTheSizeRule() {
        #expect(policy.coding(acceptEncoding: "gzip", contentType: "text/event-stream", bodySize: nil) == .gzip)
    }

    @Test func encodedBodies_AreNotEncodedAgain() {
        let coding = policy.coding(
            acceptEncoding: "gzip", contentType: "application/json", contentEncoding: "br", bodySize: 5000)
        #expect(coding == nil)
        let identity = policy.coding(
            acceptEncoding: "gzip", contentType: "application/json", contentEncoding: "identity", bodySize: 5000)
        #expect(identity == .gzip)
    }

    @Test func missingContentTypeOrAcceptEncoding_AreNot() {
        #expect(policy.coding(acceptEncoding: "gzip", contentType: nil, bodySize: 5000) == nil)
        #expect(policy.coding(acceptEncoding: nil, contentType: "application/json", bodySize: 5000) == nil)
    }

    @Test func eligibility_IgnoresAcceptEncoding() {
        #expect(policy.isEligible(contentType: "application/json", bodySize: 5000))
        #expect(policy.isEligible(contentType: "text/html; charset=utf-8", bodySize: nil))
        #expect(!policy.isEligible(contentType: "application/json", bodySize: 1023))
        #expect(!policy.isEligible(contentType: "image/png", bodySize: 5000))
        #expect(!policy.isEligible(contentType: nil, bodySize: 5000))
        #expect(!policy.isEligible(contentType: "application/json", contentEncoding: "gzip", bodySize: 5000))
        #expect(policy.coding(acceptEncoding: "", contentType: "application/json", bodySize: 5000) == nil)
    }
}
