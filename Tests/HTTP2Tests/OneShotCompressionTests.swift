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
        #expect(compressed[0] & 0x0f == 8)  // CM = deflate; the high nibble is the window size
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

    @Test(arguments: [
        (0, Int32(9), Int32(2)), (100, 9, 2), (512, 9, 2), (513, 10, 3), (2560, 12, 5), (4096, 12, 5),
        (40_000, 15, 8), (10_000_000, 15, 8),
    ])
    func oneShotParameters_FitTheBody(size: Int, windowBits: Int32, memLevel: Int32) {
        let parameters = CompressionParameters.oneShot(forBodySize: size)
        #expect(parameters.windowBits == windowBits)
        #expect(parameters.memLevel == memLevel)
        #expect(parameters.level == 6)
    }

    @Test func sizedWindow_CompressesAsWellAsTheDefaults() throws {
        let sized = try Gzip.compress(Self.body)
        let full = try Gzip.compress(Self.body, parameters: .oneShot)
        #expect(sized.count <= full.count + 8)
        #expect(try Inflater.decode(sized) == Self.body)
    }
}
