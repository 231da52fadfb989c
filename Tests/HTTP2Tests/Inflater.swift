import CZlib

/// A zlib inflater for the tests: decodes gzip or zlib (auto-detected, windowBits 15 + 32) and
/// returns everything decodable so far after each call, as a client decoding SSE would.
final class Inflater {
    enum Failure: Error, Equatable {
        case initFailed(Int32)
        case inflateFailed(Int32)
    }

    private let stream: UnsafeMutablePointer<z_stream>
    private(set) var isFinished = false

    init() throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deallocate()
            throw Failure.initFailed(status)
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    func inflate(_ input: [UInt8]) throws -> [UInt8] {
        var output: [UInt8] = []
        var input = input
        try input.withUnsafeMutableBufferPointer { inputBuffer in
            stream.pointee.next_in = inputBuffer.baseAddress
            stream.pointee.avail_in = uInt(inputBuffer.count)
            var chunk = [UInt8](repeating: 0, count: 4096)
            repeat {
                let status = chunk.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = uInt(out.count)
                    return CZlib.inflate(stream, Z_SYNC_FLUSH)
                }
                let produced = chunk.count - Int(stream.pointee.avail_out)
                output += chunk[0..<produced]
                if status == Z_STREAM_END {
                    isFinished = true
                    break
                }
                guard status == Z_OK || status == Z_BUF_ERROR else { throw Failure.inflateFailed(status) }
                if stream.pointee.avail_out != 0 { break }
            } while true
        }
        stream.pointee.next_in = nil
        return output
    }

    static func decode(_ bytes: [UInt8]) throws -> [UInt8] {
        let inflater = try Inflater()
        let output = try inflater.inflate(bytes)
        guard inflater.isFinished else { throw Failure.inflateFailed(Z_BUF_ERROR) }
        return output
    }
}
