import JetstreamModel
import Store
import Synchronization

extension ScopeEngine {
    /// `{"version":C,"changesets":[…]}`: the change sets after `since`, oldest first, at most
    /// `limit` — from memory when the resume buffer holds them, else from the store; the same
    /// bytes either way.
    public func history(of handle: ScopeHandle, since: Int, limit: Int) async throws(ScopeError) -> [UInt8] {
        try await historyPage(of: handle, since: since, limit: limit).encoded()
    }

    /// The page ``history(of:since:limit:)`` encodes, before it is encoded: its size is known
    /// first, so a caller can refuse a page too large to send now without building it.
    ///
    /// ```swift
    /// let page = try await engine.historyPage(of: handle, since: 10, limit: 100)
    /// guard page.byteCount <= room else { throw busy }
    /// send(page.encoded())
    /// ```
    public func historyPage(of handle: ScopeHandle, since: Int, limit: Int) async throws(ScopeError) -> HistoryPage {
        enum Plan {
            case done(HistoryPage)
            case readStore(current: Int)
        }
        let plan: Plan = try handle.runtime.withLock { runtime throws(ScopeError) -> Plan in
            let current = runtime.committed.version
            guard since <= current else { throw .historyAhead(since: since, current: current) }
            guard since >= runtime.oldestResumable else { throw historyGone(handle, since, runtime) }
            if since == current { return .done(HistoryPage(current: current, payloads: [])) }
            if let events = runtime.recent.events(after: since, limit: limit) {
                return .done(HistoryPage(current: current, payloads: events.map(\.payload)))
            }
            return .readStore(current: current)
        }
        switch plan {
        case .done(let page):
            return page
        case .readStore(let current):
            do {
                let page = try await store.changes(scope: handle.name, after: Int64(since), limit: limit)
                return HistoryPage(
                    current: current,
                    payloads: page.records.filter { $0.version <= current }.map { servedPayload($0, of: handle.name) })
            } catch .historyTruncated {
                throw handle.runtime.withLock { historyGone(handle, since, $0) }
            } catch .scopeMissing {
                throw .scopeNotFound(handle.name)
            } catch {
                throw storeFailure(error)
            }
        }
    }

    private func historyGone(_ handle: ScopeHandle, _ since: Int, _ runtime: ScopeHandle.Runtime) -> ScopeError {
        .historyGone(
            scope: handle.name, since: since, oldest: runtime.oldestResumable, current: runtime.committed.version)
    }
}

/// One page of a scope's history: the committed version and the change sets' payloads (shared
/// with the resume buffer or read from the store), not yet joined into the response body.
public struct HistoryPage: Sendable {
    /// The scope's committed version when the page was read.
    public let current: Int
    /// The change sets' stored payloads, oldest first.
    public let payloads: [[UInt8]]

    /// The size of ``encoded()``, in bytes.
    public var byteCount: Int {
        let prefix = #"{"version":\#(current),"changesets":["#.utf8.count
        let commas = max(payloads.count - 1, 0)
        return payloads.reduce(prefix + commas + 2) { $0 + $1.count }
    }

    /// `{"version":C,"changesets":[…]}`.
    public func encoded() -> [UInt8] {
        ScopeEncoding.historyJSON(current: current, payloads: payloads, capacity: byteCount)
    }
}
