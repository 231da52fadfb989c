import JetstreamModel
import Store
import Synchronization

extension ScopeHub {
    /// `{"version":C,"changesets":[…]}`: the change sets after `since`, oldest first, at most
    /// `limit` — from memory when the resume buffer holds them, else from the store.
    func history(of handle: ScopeHandle, since: Int, limit: Int) async throws(Problem) -> [UInt8] {
        enum Plan {
            case done(current: Int, payloads: [[UInt8]])
            case readStore(current: Int)
        }
        let plan: Plan = try handle.runtime.withLock { runtime throws(Problem) -> Plan in
            let current = runtime.committed.version
            guard since <= current else {
                throw Problem(
                    .badRequest, detail: "since=\(since) is ahead of the scope's version \(current)",
                    extensions: ["version": .number(JSONNumber(current))])
            }
            guard since >= runtime.oldestResumable else { throw Self.historyGone(handle, since, runtime) }
            if since == current { return .done(current: current, payloads: []) }
            if let first = runtime.recent.first, first.version <= since + 1 {
                let payloads = runtime.recent.lazy.filter { $0.version > since }.prefix(limit).map(\.payload)
                return .done(current: current, payloads: Array(payloads))
            }
            return .readStore(current: current)
        }
        switch plan {
        case .done(let current, let payloads):
            return Self.historyBody(current: current, payloads: payloads)
        case .readStore(let current):
            do {
                let page = try await store.changes(scope: handle.name, after: Int64(since), limit: limit)
                return Self.historyBody(
                    current: current, payloads: page.records.lazy.filter { $0.version <= current }.map(\.payload))
            } catch .historyTruncated {
                throw handle.runtime.withLock { Self.historyGone(handle, since, $0) }
            } catch .scopeMissing {
                throw Problem(.notFound, detail: "no scope named '\(handle.name)'")
            } catch {
                throw storeProblem(error)
            }
        }
    }

    private static func historyGone(_ handle: ScopeHandle, _ since: Int, _ runtime: ScopeHandle.Runtime) -> Problem {
        Problem(
            .historyGone,
            detail: "change sets after version \(since) of '\(handle.name)' are no longer retained; "
                + "the oldest version to read from is \(runtime.oldestResumable): GET the scope's state instead",
            extensions: [
                "version": .number(JSONNumber(runtime.committed.version)),
                "oldestVersion": .number(JSONNumber(runtime.oldestResumable)),
            ])
    }

    private static func historyBody(current: Int, payloads: some Sequence<[UInt8]>) -> [UInt8] {
        var body = Array(#"{"version":\#(current),"changesets":["#.utf8)
        var first = true
        for payload in payloads {
            if !first { body.append(UInt8(ascii: ",")) }
            first = false
            body.append(contentsOf: payload)
        }
        body.append(contentsOf: "]}".utf8)
        return body
    }
}
