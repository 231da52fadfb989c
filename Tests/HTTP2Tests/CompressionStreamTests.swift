import HTTPCompression
import Testing

@Suite struct CompressionStreamTests {
    /// SSE-like events with the repetition real change events have.
    static func events(count: Int) -> [[UInt8]] {
        (0..<count).map { index in
            let json =
                #"{"scope":"demo","version":\#(1000 + index),"changes":[{"op":"set","path":"/items/\#(index % 17)/title","value":"item \#(index)"}]}"#
            return Array("id: \(index)\nevent: change\ndata: \(json)\n\n".utf8)
        }
    }

    @Test(arguments: ContentCoding.allCases)
    func eachWrite_DecodesImmediately(coding: ContentCoding) throws {
        let stream = try CompressionStream(coding: coding)
        let inflater = try Inflater()
        for event in Self.events(count: 50) {
            let chunk = try stream.write(event)
            #expect(try inflater.inflate(chunk) == event)
        }
        let tail = try stream.finish()
        #expect(try inflater.inflate(tail).isEmpty)
        #expect(inflater.isFinished)
    }

    @Test func syncFlush_EndsWithSyncMarker() throws {
        let stream = try CompressionStream(coding: .gzip)
        let chunk = try stream.write(Array("data: one\n\n".utf8))
        #expect(chunk.prefix(2) == [0x1f, 0x8b])
        #expect(chunk.suffix(4) == [0x00, 0x00, 0xff, 0xff])
    }

    @Test func laterEvents_CompressAgainstEarlierOnes() throws {
        let stream = try CompressionStream(coding: .gzip)
        let event = Array("event: change\ndata: {\"path\":\"/items/1/title\",\"value\":\"same again\"}\n\n".utf8)
        let first = try stream.write(event)
        let second = try stream.write(event)
        // The second copy is a back-reference into the shared window: far smaller than the first.
        #expect(second.count < first.count / 2)
        #expect(second.count < event.count / 4)
    }

    @Test func streamingParameters_HoldAboutFortyKiB() throws {
        let stream = try CompressionStream(coding: .gzip, parameters: .streaming)
        #expect(stream.allocatedBytes >= CompressionParameters.streaming.estimatedBytes)
        #expect(stream.allocatedBytes <= 40 * 1024)
        // Writing does not allocate more: zlib sizes everything in deflateInit2.
        let before = stream.allocatedBytes
        for event in Self.events(count: 200) { _ = try stream.write(event) }
        #expect(stream.allocatedBytes == before)
    }

    @Test func oneShotParameters_UseZlibDefaults() throws {
        let stream = try CompressionStream(coding: .gzip, parameters: .oneShot)
        #expect(stream.allocatedBytes >= 256 * 1024)
        #expect(CompressionParameters.oneShot.estimatedBytes == 256 * 1024)
        #expect(CompressionParameters.streaming.estimatedBytes == 32 * 1024)
    }

    @Test func writeAfterFinish_Throws() throws {
        let stream = try CompressionStream()
        _ = try stream.write(Array("x".utf8))
        _ = try stream.finish()
        #expect(throws: CompressionError.streamFinished) { try stream.write(Array("y".utf8)) }
        #expect(throws: CompressionError.streamFinished) { try stream.finish() }
    }

    @Test func invalidParameters_ThrowNamingThem() {
        let bad = CompressionParameters(level: 6, windowBits: 20, memLevel: 5)
        #expect(throws: CompressionError.initializationFailed(code: -2, parameters: bad)) {
            try CompressionStream(parameters: bad)
        }
        let error = CompressionError.initializationFailed(code: -2, parameters: bad)
        #expect(error.description.contains("windowBits 20"))
    }

    @Test func largeWrite_RoundTrips() throws {
        var generator = SystemRandomNumberGenerator()
        let words = ["alpha", "beta", "gamma", "delta", "epsilon"]
        var text = ""
        while text.utf8.count < 1 << 20 { text += words.randomElement(using: &generator)! + " " }
        let input = Array(text.utf8)
        let stream = try CompressionStream(coding: .deflate)
        var output = try stream.write(input)
        output += try stream.finish()
        #expect(output.count < input.count / 2)
        #expect(try Inflater.decode(output) == input)
    }

    @Test func appendWithoutFlush_CompletesOnWrite() throws {
        let stream = try CompressionStream()
        let inflater = try Inflater()
        var chunk = try stream.append(Array("data: part one, ".utf8))
        chunk += try stream.write(Array("part two\n\n".utf8))
        #expect(try inflater.inflate(chunk) == Array("data: part one, part two\n\n".utf8))
    }

    @Test func nonContiguousInput_IsAccepted() throws {
        let stream = try CompressionStream()
        let inflater = try Inflater()
        let input = (0..<300).lazy.map { UInt8(truncatingIfNeeded: $0 % 7 + 65) }
        let chunk = try stream.write(input)
        #expect(try inflater.inflate(chunk) == Array(input))
    }
}
