import CLinuxIO
import Glibc

/// One non-blocking client socket on a ``ClientLoop``: queues request bytes, parses responses and
/// hands them to its delegate. Confined to its loop's thread.
public final class ClientConnection {
    public let fileDescriptor: Int32
    /// The caller's number for this connection (subscriber or writer index).
    public let tag: Int
    unowned let loop: ClientLoop
    let delegate: any ClientConnectionDelegate
    var parser = HTTPResponseParser()
    var outgoing: [UInt8] = []
    var outgoingOffset = 0
    public private(set) var isConnected = false
    public private(set) var isClosed = false

    init(fileDescriptor: Int32, tag: Int, loop: ClientLoop, delegate: any ClientConnectionDelegate) {
        self.fileDescriptor = fileDescriptor
        self.tag = tag
        self.loop = loop
        self.delegate = delegate
    }

    /// Queues `bytes` and writes as much as the socket takes now.
    public func send(_ bytes: [UInt8]) {
        guard !isClosed else { return }
        if outgoingOffset == outgoing.count {
            outgoing = bytes
            outgoingOffset = 0
        } else {
            outgoing.append(contentsOf: bytes)
        }
        if isConnected { flush() }
    }

    /// Closes the socket; the delegate hears `connectionDidClose(error: nil)`.
    public func close() {
        close(error: nil)
    }

    func close(error: String?) {
        guard !isClosed else { return }
        isClosed = true
        loop.remove(self)
        Glibc.close(fileDescriptor)
        delegate.connectionDidClose(self, error: error)
    }

    func didBecomeWritable() {
        if !isConnected {
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fileDescriptor, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else {
                close(error: "connect: \(String(cString: strerror(code)))")
                return
            }
            isConnected = true
            loop.connectionDidEstablish()
            delegate.connectionDidConnect(self)
        }
        flush()
    }

    func flush() {
        while outgoingOffset < outgoing.count, !isClosed {
            let written = outgoing.withUnsafeBytes { buffer in
                Glibc.write(fileDescriptor, buffer.baseAddress! + outgoingOffset, buffer.count - outgoingOffset)
            }
            if written > 0 {
                outgoingOffset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return
            } else {
                close(error: "write: \(String(cString: strerror(errno)))")
                return
            }
        }
        if outgoingOffset == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingOffset = 0
        }
    }

    func didRead(_ bytes: UnsafeRawBufferPointer) {
        do {
            try parser.consume(bytes) { event in
                guard !isClosed else { return }
                delegate.connection(self, didReceive: event)
            }
        } catch {
            close(error: "bad response: \(error)")
        }
    }

    func didReadEndOfFile() {
        parser.finish { event in delegate.connection(self, didReceive: event) }
        close(error: parser.isIdle ? "closed by the server" : "closed by the server mid-response")
    }
}
