import HTTPServer
import SocketLoop
import Testing

@Suite struct SSEEventTests {
    func text(_ event: SSEEvent) -> String { String(decoding: event.serialized, as: UTF8.self) }

    @Test func serializesFieldsInOrder() {
        let event = SSEEvent(id: "42", event: "changeset", data: #"{"v":42}"#, retry: 2000)
        #expect(text(event) == "retry: 2000\nid: 42\nevent: changeset\ndata: {\"v\":42}\n\n")
    }

    @Test func splitsMultiLineDataAndStripsNewlinesFromIdAndEvent() {
        let event = SSEEvent(id: "1\n2", event: "a\r\nb", data: "one\ntwo\r\nthree\rfour")
        #expect(text(event) == "id: 12\nevent: ab\ndata: one\ndata: two\ndata: three\ndata: four\n\n")
        #expect(text(SSEEvent(data: "")) == "data: \n\n")
    }

    @Test func encodedEventSharesOneBufferForChunkAndPayload() {
        let encoded = SSEEvent(data: "hi").encoded()
        #expect(encoded.payloadBytes == Array("data: hi\n\n".utf8))
        #expect(encoded.chunk.storage === encoded.payload.storage)
        #expect(encoded.chunk.storage.array == Array("a\r\ndata: hi\n\n\r\n".utf8))
        #expect(EncodedEvent.heartbeat.payloadBytes == Array(": keep-alive\n\n".utf8))
    }
}
