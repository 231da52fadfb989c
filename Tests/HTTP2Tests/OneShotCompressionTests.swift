import HTTPCompression
import Testing

@Suite struct OneShotCompressionTests {
    static let body = Array(String(repeating: #"{"name":"widget","price":12.5,"tags":["a","b"]},"#, count: 200).utf8)

    @Test func gzip_RoundTripsWithGzipHeader() throws {
        let compressed = try Gzip.compress(Self.body)
        #expect(compressed.prefix(3) == [0x1f, 0x8b, 0x08])
        #expect(compressed.count < Self.body.count / 5)
        #expect(try Inflater.decode(compressed) == Self.body)
    }

    @Test func deflate_RoundTripsWithZlibHeader() throws {
        let compressed = try Deflate.compress(Self.body)
        #expect(compressed.first == 0x78)
        // The zlib header's check bits make the first two bytes a multiple of 31.
        #expect((Int(compressed[0]) << 8 | Int(compressed[1])) % 31 == 0)
        #expect(try Inflater.decode(compressed) == Self.body)
    }

    @Test func emptyBody_IsAValidGzipMember() throws {
        let compressed = try Gzip.compress([UInt8]())
        #expect(compressed.count == 20)
        #expect(try Inflater.decode(compressed).isEmpty)
    }

    @Test func incompressibleBytes_StillRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<70_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let compressed = try OneShot.compress(noise, coding: .gzip)
        #expect(try Inflater.decode(compressed) == noise)
    }
}
