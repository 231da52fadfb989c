internal import CNGHTTP2
import HTTPTypes

/// The nghttp2 callbacks: non-capturing closures (C function pointers) that find the owning
/// ``HTTP2ServerSession`` through `user_data` and forward to it. Returning 0 means "continue";
/// nghttp2 handles every protocol error itself.
enum HTTP2Callbacks {
    static func install(on callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, onBeginFrame)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSent)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, onFrameNotSent)
    }

    static func owner(_ userData: UnsafeMutableRawPointer?) -> HTTP2ServerSession {
        Unmanaged<HTTP2ServerSession>.fromOpaque(userData!).takeUnretainedValue()
    }

    static let onBeginFrame: nghttp2_on_begin_frame_callback = { _, header, userData in
        guard let header, header.pointee.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
        owner(userData).beginHeadersFrame(stream: header.pointee.stream_id)
        return 0
    }

    static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
            frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
        else { return 0 }
        owner(userData).beginRequest(stream: frame.pointee.hd.stream_id)
        return 0
    }

    static let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
        guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
        let keepDecoding = owner(userData).receiveHeader(
            stream: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
            value: UnsafeBufferPointer(start: value, count: valueLength))
        return keepDecoding ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
    }

    static let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let frame else { return 0 }
        owner(userData).hasReceivedFrame = true
        let header = frame.pointee.hd
        let endsStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue:
            owner(userData).receiveHeadersFrame(
                stream: header.stream_id, isRequestHead: frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST,
                endsStream: endsStream)
        case NGHTTP2_DATA.rawValue where endsStream:
            owner(userData).receiveEndOfBody(stream: header.stream_id)
        case NGHTTP2_GOAWAY.rawValue:
            let goAway = frame.pointee.goaway
            owner(userData).events.append(
                .goAway(
                    lastStreamID: HTTP2StreamID(goAway.last_stream_id),
                    errorCode: HTTP2ErrorCode(rawValue: goAway.error_code)))
        default:
            break
        }
        return 0
    }

    static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, stream, data, length, userData in
        owner(userData).receiveBody(stream: stream, bytes: UnsafeBufferPointer(start: data, count: length))
        return 0
    }

    static let onStreamClose: nghttp2_on_stream_close_callback = { _, stream, errorCode, userData in
        owner(userData).closeStream(stream, errorCode: errorCode)
        return 0
    }

    static let onFrameSent: nghttp2_on_frame_send_callback = { _, frame, userData in
        guard let frame else { return 0 }
        let header = frame.pointee.hd
        let type = UInt32(header.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
            header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        else { return 0 }
        owner(userData).sentEndOfStream(stream: header.stream_id)
        return 0
    }

    /// nghttp2 gave up on a frame, e.g. a response head over its 64 KiB header block limit. For a
    /// response HEADERS the stream would otherwise stay open with the client waiting forever.
    static let onFrameNotSent: nghttp2_on_frame_not_send_callback = { _, frame, _, userData in
        guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else { return 0 }
        owner(userData).reset(HTTP2StreamID(frame.pointee.hd.stream_id), errorCode: .internalError)
        return 0
    }

    static let readResponseBody: nghttp2_data_source_read_callback = { _, stream, buffer, length, flags, _, userData in
        guard let buffer, let flags else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        return owner(userData).readResponseBody(stream: stream, into: buffer, capacity: length, flags: flags)
    }
}
