import HTTPTypes
import SocketLoop

/// The protocol side a request's answer goes to: the HTTP/1 connection, or (later) an HTTP/2
/// stream. Called only on the channel's loop thread. This is the seam the HTTP/2 integration
/// implements so that handlers, ``HTTPResponder`` and ``EventStream`` stay protocol-neutral.
protocol HTTPResponseChannel: AnyObject, Sendable {
    /// Sends `response` for request `requestID`; ignored when that request is no longer current.
    func deliver(_ response: HTTPServerResponse, for requestID: UInt64)
    /// Sends the head of an event stream for `requestID` and attaches `stream` to a sink that
    /// writes its events. Returns false when the request is gone (the stream is then closed).
    func openEventStream(_ head: HTTPResponse, for requestID: UInt64, stream: EventStream) -> Bool
}

/// Writes the events of one ``EventStream`` to its protocol: HTTP/1.1 chunks, close-delimited
/// HTTP/1.0, or (later) HTTP/2 DATA frames, possibly gzip'd per stream. Loop thread only.
protocol EventStreamSink: AnyObject {
    /// Writes one encoded event (the buffer is shared with other streams: do not mutate it).
    func write(_ event: EncodedEvent)
    /// Ends the stream cleanly (last chunk, END_STREAM) and releases the request.
    func end()
}
