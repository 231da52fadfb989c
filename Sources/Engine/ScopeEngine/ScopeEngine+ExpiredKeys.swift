import Foundation
import JetstreamJSON
import Store
import Synchronization

/// A keyed change set made longer ago than the idempotency records are kept (a client back from
/// a long time offline): its record may have expired after it was applied. The change-set log
/// keeps each set's key and time, so the retained log decides:
///
/// - the key is in it: the set was applied; its logged answer is replayed, never applied again;
/// - the key is not in it and the log reaches back to before the set was made: it was never
///   applied; it is applied now, once;
/// - otherwise nobody can tell: it is refused (`idempotency-window-passed`), never applied twice.
///
/// The client says when it made the set (`Idempotency-Key-Created`); without that, a key past its
/// record is new to the server, as before.
extension ScopeEngine {
    enum ExpiredKeyDecision: Equatable {
        case apply
        /// The logged change set that carried the key.
        case applied(ChangeRecord)
        /// The log no longer reaches back to when the set was made: `oldest` is its oldest time.
        case unknowable(oldest: Int64?)
    }

    /// A clock difference between clients and server that the decision allows for: an hour, or
    /// half the window when that is shorter.
    var clockAllowance: Int64 { min(3_600_000, configuration.idempotencyTTLMilliseconds / 2) }

    /// Whether a set made at `created` (client clock, ms) may be older than its record would be.
    func isPastIdempotencyWindow(created: Int64) -> Bool {
        created < configuration.wallClock() - configuration.idempotencyTTLMilliseconds + clockAllowance
    }

    /// Reads the retained log of `handle` for `idempotency`'s key (paged, so memory stays bounded).
    func decideExpiredKey(
        _ idempotency: IdempotencyKey, created: Int64, of handle: ScopeHandle
    ) async throws(StoreError) -> ExpiredKeyDecision {
        let needle = Array(#""idempotencyKey":"#.utf8) + JSONValue.string(idempotency.key).encoded()
        var after = Int64(handle.runtime.withLock { $0.oldestResumable })
        var oldestAt: Int64?
        while true {
            let page: ChangePage
            do throws(StoreError) {
                page = try await store.changes(scope: handle.name, after: after, limit: 500)
            } catch .historyTruncated(_, _, let oldest) {
                after = oldest
                continue
            }
            for record in page.records {
                if oldestAt == nil { oldestAt = Self.loggedTime(record.payload) ?? .min }
                guard record.payload.firstRange(of: needle) != nil,
                    let payload = try? JSONParser.parse(record.payload),
                    payload["idempotencyKey"]?.string == idempotency.key,
                    payload["subject"]?.string == idempotency.subject
                else { continue }
                return .applied(record)
            }
            guard let last = page.records.last, last.version < page.currentVersion else { break }
            after = last.version
        }
        // Nothing retained at all: only a scope never written can say so for sure.
        guard let oldestAt else { return handle.version == 0 ? .apply : .unknowable(oldest: nil) }
        return oldestAt <= created - clockAllowance ? .apply : .unknowable(oldest: oldestAt)
    }

    /// A logged change set's `at` in milliseconds since 1970, nil when it has none.
    static func loggedTime(_ payload: [UInt8]) -> Int64? {
        guard let text = (try? JSONParser.parse(payload))?["at"]?.string else { return nil }
        return ChangeTime.milliseconds(rfc3339: text)
    }

    /// The answer a logged change set stands for: its event with an empty reply per fragment,
    /// replayed as the key's outcome.
    static func replayedAnswer(_ record: ChangeRecord, for idempotency: IdempotencyKey) -> IdempotencyRecord {
        var response = record.payload
        if case .object(var object)? = try? JSONParser.parse(record.payload) {
            let count = object["fragments"]?.array?.count ?? 0
            object["fragmentReplies"] = .array(Array(repeating: .object(JSONObject()), count: count))
            response = JSONValue.object(object).encoded()
        }
        return IdempotencyRecord(
            key: idempotency.storageKey, requestDigest: idempotency.digest, status: 200, response: response,
            version: record.version)
    }
}
