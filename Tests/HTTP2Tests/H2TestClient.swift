import CNGHTTP2

/// An in-memory nghttp2 *client* session: the real protocol peer for the server session tests.
/// It records what a client sees per stream (status, fields, each DATA chunk, how it closed)
/// and the connection-level frames (GOAWAY, RST_STREAM).
final class H2TestClient {
    struct Stream {
        var status: Int?
        var fields: [(name: String, value: String)] = []
        var chunks: [[UInt8]] = []
        var closedWith: UInt32?
        var resetWith: UInt32?

        var body: [UInt8] { chunks.flatMap { $0 } }
        func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }
    }

    struct Failure: Error {
        let code: Int
    }

    let session: OpaquePointer
    var streams: [Int32: Stream] = [:]
    var goAway: (lastStreamID: Int32, errorCode: UInt32)?
    var requestBodies: [Int32: [UInt8]] = [:]
    var receivedSettings = 0

    init(
        settings: [(Int32, UInt32)] = [], configure: (OpaquePointer) -> Void = { _ in },
        sendSettings: Bool = true
    ) throws {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks, H2TestClientCallbacks.onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, H2TestClientCallbacks.onData)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, H2TestClientCallbacks.onFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, H2TestClientCallbacks.onClose)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        configure(option!)
        var created: OpaquePointer?
        let status = nghttp2_session_client_new2(&created, callbacks, nil, option)
        guard status == 0, let created else { throw Failure(code: Int(status)) }
        session = created
        nghttp2_session_set_user_data(session, Unmanaged.passUnretained(self).toOpaque())
        if sendSettings {
            let entries = settings.map { nghttp2_settings_entry(settings_id: $0.0, value: $0.1) }
            nghttp2_submit_settings(session, 0, entries, entries.count)
        }
    }

    deinit {
        nghttp2_session_del(session)
    }

    /// Queues a request; returns its stream id.
    @discardableResult
    func request(
        _ method: String = "GET", _ path: String, authority: String = "example.test",
        fields: [(String, String)] = [], body: [UInt8]? = nil
    ) -> Int32 {
        var all = [(":method", method), (":scheme", "http"), (":authority", authority), (":path", path)]
        all += fields
        var storage: [UInt8] = []
        var ranges: [(Range<Int>, Range<Int>)] = []
        for (name, value) in all {
            let nameStart = storage.count
            storage += Array(name.utf8)
            let valueStart = storage.count
            storage += Array(value.utf8)
            ranges.append((nameStart..<valueStart, valueStart..<storage.count))
        }
        let streamID = storage.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            let pairs = ranges.map {
                nghttp2_nv(
                    name: base + $0.0.lowerBound, value: base + $0.1.lowerBound, namelen: $0.0.count,
                    valuelen: $0.1.count, flags: 0)
            }
            if body != nil {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil), read_callback: H2TestClientCallbacks.readBody)
                return nghttp2_submit_request(session, nil, pairs, pairs.count, &provider, nil)
            }
            return nghttp2_submit_request(session, nil, pairs, pairs.count, nil, nil)
        }
        if let body { requestBodies[streamID] = body }
        streams[streamID] = Stream()
        return streamID
    }

    func reset(_ stream: Int32, code: UInt32 = 8) {
        nghttp2_submit_rst_stream(session, 0, stream, code)
    }

    /// Tells nghttp2 the application consumed `count` bytes (only matters without auto window update).
    func consume(_ count: Int, on stream: Int32) {
        nghttp2_session_consume(session, stream, count)
    }

    func output() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count >= 0 else { throw Failure(code: count) }
            guard count > 0, let data else { return bytes }
            bytes += UnsafeBufferPointer(start: data, count: count)
        }
    }

    func receive(_ bytes: [UInt8]) throws {
        guard !bytes.isEmpty else { return }
        let status = nghttp2_session_mem_recv(session, bytes, bytes.count)
        guard status >= 0 else { throw Failure(code: status) }
    }
}

enum H2TestClientCallbacks {
    static func client(_ userData: UnsafeMutableRawPointer?) -> H2TestClient {
        Unmanaged<H2TestClient>.fromOpaque(userData!).takeUnretainedValue()
    }

    static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        let streamID = frame!.pointee.hd.stream_id
        let name = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
        let value = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
        let client = client(userData)
        if name == ":status" {
            client.streams[streamID, default: .init()].status = Int(value)
        } else {
            client.streams[streamID, default: .init()].fields.append((name, value))
        }
        return 0
    }

    static let onData: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
        client(userData).streams[streamID, default: .init()].chunks.append(
            Array(UnsafeBufferPointer(start: data, count: length)))
        return 0
    }

    static let onFrame: nghttp2_on_frame_recv_callback = { _, frame, userData in
        let frame = frame!.pointee
        let client = client(userData)
        switch UInt32(frame.hd.type) {
        case NGHTTP2_GOAWAY.rawValue:
            client.goAway = (frame.goaway.last_stream_id, frame.goaway.error_code)
        case NGHTTP2_RST_STREAM.rawValue:
            client.streams[frame.hd.stream_id, default: .init()].resetWith = frame.rst_stream.error_code
        case NGHTTP2_SETTINGS.rawValue where frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            client.receivedSettings += 1
        default:
            break
        }
        return 0
    }

    static let onClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
        client(userData).streams[streamID, default: .init()].closedWith = errorCode
        return 0
    }

    static let readBody: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
        let client = client(userData)
        let pending = client.requestBodies[streamID] ?? []
        let count = min(length, pending.count)
        pending.withUnsafeBufferPointer { source in
            if count > 0 { buffer!.update(from: source.baseAddress!, count: count) }
        }
        client.requestBodies[streamID] = Array(pending.dropFirst(count))
        if client.requestBodies[streamID]!.isEmpty { flags!.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}
