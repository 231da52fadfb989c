import HTTPServer
import JetstreamModel
import Logging
import SocketLoop
import Store
import Synchronization

extension ScopeHub {
    /// Where a new subscriber starts.
    enum StreamStart: Equatable {
        /// No resume point: a `snapshot` event first.
        case fresh
        /// Resume after this version (from `Last-Event-ID` or `?lastEventId=`).
        case after(Int)
        /// A resume point that names no version of ours: a `reset`.
        case unknown
    }

    static func streamStart(lastEventID: String?) -> StreamStart {
        guard let text = lastEventID?.trimmingSpaces, !text.isEmpty else { return .fresh }
        guard let version = Int(text), version >= 0 else { return .unknown }
        return .after(version)
    }

    /// Starts `stream` on the scope: the snapshot, the change sets after its resume point, or a
    /// reset; then every change set as it becomes durable, each exactly once and in order.
    ///
    /// Ordering: the catch-up events and the registration are queued on the stream's loop in one
    /// task, while the scope's lock is held. A publication made before that point was queued to
    /// the loop earlier (and misses the not-yet-registered stream, whose catch-up includes it);
    /// one made after is queued later (and reaches it). So nothing is lost or doubled.
    func subscribe(_ stream: EventStream, to handle: ScopeHandle, start: StreamStart) {
        stream.sendEncoded(ScopeEvents.retry(milliseconds: configuration.retryMilliseconds))
        let needsStore: Int? = handle.runtime.withLock { runtime in
            if runtime.deleted {
                stream.loop.execute { stream.close() }
                return nil
            }
            if drainState.isDraining {
                stream.sendEncoded(Self.closingEvent)
                stream.loop.execute { stream.close() }
                return nil
            }
            let committed = runtime.committed.version
            switch start {
            case .after(let version) where version == committed:
                register(stream, on: handle, catchUp: [])
            case .after(let version) where version < committed && version >= runtime.oldestResumable:
                if let first = runtime.recent.first, first.version <= version + 1 {
                    let events = runtime.recent.filter { $0.version > version }.map(\.event)
                    register(stream, on: handle, catchUp: events)
                } else {
                    return version
                }
            case .fresh:
                register(stream, on: handle, catchUp: [stateEvent("snapshot", &runtime, handle)])
            case .after, .unknown:
                register(stream, on: handle, catchUp: [stateEvent("reset", &runtime, handle)])
            }
            return nil
        }
        if let version = needsStore {
            catchUpFromStore(stream, on: handle, after: version, attempts: 3)
        }
    }

    /// Must be called with the scope's lock held (see ``subscribe(_:to:start:)``).
    private func register(_ stream: EventStream, on handle: ScopeHandle, catchUp: [EncodedEvent]) {
        stream.loop.execute {
            for event in catchUp { stream.sendEncoded(event) }
            handle.subscribers.add(stream)
        }
    }

    /// The full state as a `snapshot` or `reset` event (called with the scope's lock held; the
    /// encoding is cached, so only the first reader of a version pays for it).
    private func stateEvent(_ name: String, _ runtime: inout ScopeHandle.Runtime, _ handle: ScopeHandle) -> EncodedEvent
    {
        let state = runtime.committed
        let json: [UInt8]
        if let cached = runtime.cachedState, cached.version == state.version {
            json = cached.json
        } else {
            json = ScopeEvents.stateJSON(name: handle.name, state: state)
            runtime.cachedState = .init(version: state.version, json: json)
        }
        return ScopeEvents.event(name, id: state.version, json: json)
    }

    /// Reads the change sets after `version` that the in-memory buffer no longer holds, then joins
    /// them to the buffer and registers the stream; retries if the buffer moved past the read.
    private func catchUpFromStore(_ stream: EventStream, on handle: ScopeHandle, after version: Int, attempts: Int) {
        let store = self.store
        let pageLimit = configuration.maxHistoryPage
        Task {
            var records: [ChangeRecord] = []
            var cursor = Int64(version)
            do {
                while true {
                    let page = try await store.changes(scope: handle.name, after: cursor, limit: pageLimit)
                    records.append(contentsOf: page.records)
                    guard let last = page.records.last, last.version < page.currentVersion else { break }
                    cursor = last.version
                }
            } catch {
                logger.warning("resume read failed", metadata: ["scope": "\(handle.name)", "error": "\(error)"])
            }
            let readAgain = handle.runtime.withLock { runtime in
                if runtime.deleted {
                    stream.loop.execute { stream.close() }
                    return false
                }
                let lastRead = records.last.map { Int($0.version) } ?? version
                let committed = runtime.committed.version
                let contiguous = records.enumerated().allSatisfy { Int($1.version) == version + 1 + $0 }
                if contiguous, lastRead == committed {
                    register(stream, on: handle, catchUp: records.map { encodeRecord($0) })
                } else if contiguous, lastRead < committed, let first = runtime.recent.first,
                    first.version <= lastRead + 1
                {
                    let tail = runtime.recent.filter { $0.version > lastRead }.map(\.event)
                    register(stream, on: handle, catchUp: records.map { encodeRecord($0) } + tail)
                } else if contiguous, attempts > 1, lastRead < committed {
                    // The buffer moved on past what was read (many change sets meanwhile): read again.
                    return true
                } else {
                    register(stream, on: handle, catchUp: [stateEvent("reset", &runtime, handle)])
                }
                return false
            }
            if readAgain { catchUpFromStore(stream, on: handle, after: version, attempts: attempts - 1) }
        }
    }

    private func encodeRecord(_ record: ChangeRecord) -> EncodedEvent {
        ScopeEvents.event("changeset", id: Int(record.version), json: record.payload)
    }
}
