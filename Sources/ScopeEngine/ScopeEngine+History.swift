import JetstreamModel
import Store
import Synchronization

extension ScopeEngine {
    /// `{"version":C,"changesets":[…]}`: the change sets after `since`, oldest first, at most
    /// `limit` — from memory when the resume buffer holds them, else from the store; the same
    /// bytes either way.
    public func history(of handle: ScopeHandle, since: Int, limit: Int) async throws(ScopeError) -> [UInt8] {
        enum Plan {
            case done(current: Int, payloads: [[UInt8]])
            case readStore(current: Int)
        }
        let plan: Plan = try handle.runtime.withLock { runtime throws(ScopeError) -> Plan in
            let current = runtime.committed.version
            guard since <= current else { throw .historyAhead(since: since, current: current) }
            guard since >= runtime.oldestResumable else { throw historyGone(handle, since, runtime) }
            if since == current { return .done(current: current, payloads: []) }
            if let events = runtime.recent.events(after: since, limit: limit) {
                return .done(current: current, payloads: events.map(\.payload))
            }
            return .readStore(current: current)
        }
        switch plan {
        case .done(let current, let payloads):
            return ScopeEncoding.historyJSON(current: current, payloads: payloads)
        case .readStore(let current):
            do {
                let page = try await store.changes(scope: handle.name, after: Int64(since), limit: limit)
                return ScopeEncoding.historyJSON(
                    current: current, payloads: page.records.lazy.filter { $0.version <= current }.map(\.payload))
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
