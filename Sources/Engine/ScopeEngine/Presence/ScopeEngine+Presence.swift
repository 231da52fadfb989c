import JetstreamModel
import Synchronization

/// Presence: who is in a scope right now. Kept in each scope's handle, beside (never inside) its
/// state: no version, no log, forgotten by a restart, gone with the scope. Each change is told to
/// the scope's subscribers as `event: presence` (without an id) under the scope's lock, so it is
/// ordered with the change sets they receive; a subscriber that joins gets a `join` for each
/// current member after its snapshot or catch-up (ScopeEngine+Subscriptions.swift). On a shared
/// store each local change is relayed to the other nodes (``PresenceRelay``).
extension ScopeEngine {
    /// Sets `client`'s presence in the scope of `handle` for `ttl`: a `join` the first time, an
    /// `update` after (which also refreshes it). ``ScopeError/presenceNotYours(client:)`` when a
    /// live member of that id belongs to another subject (with auth);
    /// ``ScopeError/tooManyPresenceMembers(scope:limit:)`` when the scope is full.
    ///
    /// ```swift
    /// try engine.setPresence(of: "window-7", in: handle, subject: "ada", data: ["x": 10], ttl: .seconds(30))
    /// ```
    public func setPresence(
        of client: String, in handle: ScopeHandle, subject: String?, data: JSONValue, ttl: Duration
    ) throws(ScopeError) {
        let member = PresenceMember(
            client: client, subject: subject, data: data,
            expiresAt: configuration.wallClock() + ttl.components.seconds * 1000)
        let limit = configuration.maxPresenceMembers
        let now = configuration.wallClock()
        try handle.runtime.withLock { runtime throws(ScopeError) in
            guard !runtime.deleted else { throw .scopeNotFound(handle.name) }
            // An expired member is gone, whatever the sweeper has done yet: its id is free, and
            // its leave goes out before anyone takes its place.
            expirePresence(of: handle, &runtime, now: now)
            let known = runtime.presence[client]
            if let known, known.subject != subject { throw .presenceNotYours(client: client) }
            if known == nil, runtime.presence.count >= limit {
                throw .tooManyPresenceMembers(scope: handle.name, limit: limit)
            }
            runtime.presence[client] = member
            handle.subscribers.publish(member.event(known == nil ? .join : .update, scope: handle.name))
            // Relayed under the lock too (the relay only queues), so other nodes get one client's
            // changes in the order they were made here.
            configuration.presenceRelay?.publish(PresenceNotice(scope: handle.name, client: client, member: member))
        }
        presenceSweeper.watch(handle.name, engine: self)
    }

    /// Removes `client`'s presence (`leave`); ``ScopeError/presenceNotFound(scope:client:)`` when
    /// it is not there, ``ScopeError/presenceNotYours(client:)`` when another subject made it.
    public func removePresence(of client: String, in handle: ScopeHandle, subject: String?) throws(ScopeError) {
        let now = configuration.wallClock()
        try handle.runtime.withLock { runtime throws(ScopeError) in
            expirePresence(of: handle, &runtime, now: now)
            guard let known = runtime.presence[client] else {
                throw .presenceNotFound(scope: handle.name, client: client)
            }
            guard known.subject == subject else { throw .presenceNotYours(client: client) }
            runtime.presence[client] = nil
            handle.subscribers.publish(known.event(.leave, scope: handle.name))
            configuration.presenceRelay?.publish(PresenceNotice(scope: handle.name, client: client, member: nil))
        }
    }

    /// The scope's members, by client id.
    public func presence(in handle: ScopeHandle) -> [PresenceMember] {
        let now = configuration.wallClock()
        return handle.runtime.withLock { runtime in
            runtime.presence.values.filter { $0.expiresAt > now }.sorted { $0.client < $1.client }
        }
    }

    /// `{"members":[…]}` as `GET …/presence` answers it.
    public func presenceJSON(in handle: ScopeHandle) -> [UInt8] {
        let members = presence(in: handle)
        var writer = JSONWriter(capacity: 32 + members.count * 128)
        writer.writeRaw(#"{"members":["#)
        for (index, member) in members.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            member.write(to: &writer)
        }
        writer.writeRaw("]}")
        return writer.bytes
    }

    /// A change another node made (``PresenceRelay``): applied and told to this node's
    /// subscribers as a local one is, not relayed again. A scope this node does not host is skipped.
    public func applyRemotePresence(_ notice: PresenceNotice) {
        guard let handle = handle(named: notice.scope) else { return }
        handle.runtime.withLock { runtime in
            if let member = notice.member {
                let known = runtime.presence[notice.client]
                runtime.presence[notice.client] = member
                handle.subscribers.publish(member.event(known == nil ? .join : .update, scope: handle.name))
            } else if let known = runtime.presence.removeValue(forKey: notice.client) {
                handle.subscribers.publish(known.event(.leave, scope: handle.name))
            }
        }
        if notice.member != nil { presenceSweeper.watch(handle.name, engine: self) }
    }

    /// The `join` of every current member, for a subscriber that just caught up (under the lock;
    /// the expired ones leave first, before the subscriber is added).
    func presenceJoins(of handle: ScopeHandle, _ runtime: inout ScopeHandle.Runtime) -> [ScopeEvent] {
        expirePresence(of: handle, &runtime, now: configuration.wallClock())
        return runtime.presence.values.sorted { $0.client < $1.client }.map { $0.event(.join, scope: handle.name) }
    }

    /// Removes the expired members of `name` (`leave` each); false once it has none left.
    func expirePresence(in name: String, now: Int64) -> Bool {
        guard let handle = handle(named: name) else { return false }
        return handle.runtime.withLock { runtime in
            expirePresence(of: handle, &runtime, now: now)
            return !runtime.presence.isEmpty
        }
    }

    /// Removes the members past their time, telling each `leave` (under the scope's lock).
    func expirePresence(of handle: ScopeHandle, _ runtime: inout ScopeHandle.Runtime, now: Int64) {
        for (client, member) in runtime.presence where member.expiresAt <= now {
            runtime.presence[client] = nil
            handle.subscribers.publish(member.event(.leave, scope: handle.name))
        }
    }
}

/// Expires presence: every second, the scopes that have members drop those past their time, so
/// a member that stops refreshing gets its `leave` within its ttl plus a second. Runs only while
/// some scope has members.
final class PresenceSweeper: Sendable {
    /// Watched scope names, each with a count of watches: a scope found empty is dropped only if
    /// nobody watched it again meanwhile.
    private let watched = Mutex<(names: [String: UInt64], running: Bool)>(([:], false))

    func watch(_ name: String, engine: ScopeEngine) {
        let start = watched.withLock { watched -> Bool in
            watched.names[name, default: 0] &+= 1
            defer { watched.running = true }
            return !watched.running
        }
        if start { Task { await run(engine) } }
    }

    private func run(_ engine: ScopeEngine) async {
        while true {
            try? await Task.sleep(for: .seconds(1))
            let names = watched.withLock { $0.names }
            let now = engine.configuration.wallClock()
            let idle = names.filter { !engine.expirePresence(in: $0.key, now: now) }
            let stop = watched.withLock { watched -> Bool in
                for (name, count) in idle where watched.names[name] == count { watched.names[name] = nil }
                if watched.names.isEmpty { watched.running = false }
                return !watched.running
            }
            if stop { return }
        }
    }
}
