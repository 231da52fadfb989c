import HTTPServer
import ScopeEngine
import SocketLoop
import Synchronization

/// One SSE stream carrying several scopes (`GET /v1/events?scope=…&scope=…`): one connection and
/// one send buffer whatever the number of scopes, and one small ``Member`` per scope subscribed to
/// that scope like a single-scope stream (so each scope gets exactly its snapshot, resume, live
/// change sets and `deleted`).
///
/// Every scope-bound event's data carries `"scope"` (made once per event and shared by every such
/// stream, ``SSEFrame/scopeTagged(_:scope:)``); every `snapshot`, `reset` and `changeset` gets an
/// `id:` naming every scope's position after it (``ManyScopesEventID``), made and sent under this
/// stream's lock so ids go out in the order positions change. `closing` is sent once; `deleted`
/// ends its scope only, and the stream ends when no scope is left.
///
/// Until ``start()`` (called once every scope is subscribed) change sets wait: the snapshots of
/// every scope come first, in the order given, then live events.
final class ManyScopesStream: Sendable {
    let stream: EventStream
    let names: [String]
    private let keys: [UInt64]
    private let state: Mutex<State>
    /// One per scope, made once (the engine knows a subscriber by its identity); released when
    /// the stream has left every scope, which breaks the members' references back to it.
    private let memberList = Mutex<[Member]>([])

    fileprivate struct State {
        /// The id as sent last: ``ManyScopesEventID/prefix`` and one entry per positioned scope.
        var id: [UInt8] = ManyScopesEventID.prefix
        /// Where each scope's entry starts in ``id``, nil until its first snapshot, reset or
        /// change set (or a resume point) gave it a position.
        var entries: [Int?]
        var live: [Bool]
        var closingSent = false
        /// Change sets that arrived before every scope was subscribed, in arrival order.
        var held: [(index: Int, event: ScopeEvent)]? = []
    }

    /// `resumedAt`: each scope's resume point, the position it starts from (nil: a snapshot first),
    /// so an id sent before a scope's first event still names where that scope stands.
    init(stream: EventStream, names: [String], resumedAt: [Int?]) {
        self.stream = stream
        self.names = names
        let keys = names.map(ManyScopesEventID.key(of:))
        self.keys = keys
        var initial = State(entries: Array(repeating: nil, count: names.count), live: names.map { _ in true })
        for (index, version) in resumedAt.enumerated() {
            if let version { initial.place(index, ManyScopesEventID.entry(key: keys[index], version: version)) }
        }
        state = Mutex(initial)
        let members = names.indices.map { Member(stream: self, index: $0) }
        memberList.withLock { $0 = members }
    }

    /// The subscriber of each scope of ``names``, in order (empty once released).
    var members: [Member] { memberList.withLock { $0 } }

    /// Drops the members (after they left their scopes).
    func release() { memberList.withLock { $0 = [] } }

    /// Every scope is subscribed: the change sets held meanwhile go out, in their order.
    func start() {
        state.withLock { state in
            let held = state.held ?? []
            state.held = nil
            for (index, event) in held { send(event, from: index, &state) }
        }
    }

    fileprivate func deliver(_ event: ScopeEvent, from index: Int) {
        state.withLock { state in
            if event.kind == .changeset || event.kind == .presence, state.held != nil {
                state.held?.append((index, event))
                return
            }
            send(event, from: index, &state)
        }
    }

    private func send(_ event: ScopeEvent, from index: Int, _ state: inout State) {
        guard state.live[index] else { return }
        switch event.kind {
        case .closing:
            // The engine drains: every scope says so; the client hears it once.
            guard !state.closingSent else { return }
            state.closingSent = true
            stream.sendEncoded(SSEFrame.frame(event))
        case .presence:
            // Its data already names the scope; no id: presence never moves a position.
            stream.sendEncoded(SSEFrame.frame(event))
        case .deleted:
            stream.sendEncoded(
                SSEFrame.frame(
                    name: event.kind.rawValue, id: nil, data: SSEFrame.scopeTagged(event, scope: names[index])))
        case .snapshot, .reset, .changeset:
            if let version = event.version {
                state.place(index, ManyScopesEventID.entry(key: keys[index], version: version))
            }
            stream.sendEncoded(
                SSEFrame.frame(
                    name: event.kind.rawValue, id: state.id, data: SSEFrame.scopeTagged(event, scope: names[index])))
        }
    }

    fileprivate func end(_ index: Int) {
        let last = state.withLock { state -> Bool in
            guard state.live[index] else { return false }
            state.live[index] = false
            return !state.live.contains(true)
        }
        if last { stream.close() }
    }

    /// One scope of the stream, as the engine's subscriber of that scope.
    final class Member: ScopeSubscriber {
        let stream: ManyScopesStream
        let index: Int

        init(stream: ManyScopesStream, index: Int) {
            self.stream = stream
            self.index = index
        }

        func receive(_ event: ScopeEvent) { stream.deliver(event, from: index) }

        func end() { stream.end(index) }

        var hasLeft: Bool { stream.stream.isClosed }
    }
}

extension ManyScopesStream.State {
    /// Writes scope `index`'s entry in place, or appends it the first time.
    fileprivate mutating func place(_ index: Int, _ entry: [UInt8]) {
        if let start = entries[index] {
            id.replaceSubrange(start..<(start + entry.count), with: entry)
        } else {
            entries[index] = id.count
            id += entry
        }
    }
}
