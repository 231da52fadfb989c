import Foundation
import JetstreamModel
import Store
import Synchronization

extension ScopeEngine {
    /// How many logged change sets one step of a backward history scan reads (and holds).
    static let historyScanChunk = 1024

    /// `{"uuid","entries":[…],"next"}`: the change sets that touched the object `uuid`, newest
    /// first, at most `limit`, those before version `before` (all when nil). Each entry is
    /// `{"version","at","subject","idempotencyKey","method","fragments"}` with the set's fragments
    /// about this object, and `"removed":true` when the set removed it; `next` is the `before` of
    /// the next page, or null when the retained history holds no older entry.
    ///
    /// The log is read backwards in chunks of ``historyScanChunk`` records, so memory stays bounded
    /// by a chunk and a page whatever the history's length; a record is parsed only when its bytes
    /// name the UUID. ``ScopeError/objectNotFound(scope:uuid:)`` when the object is neither in the
    /// retained history nor in the current state.
    public func history(
        of uuid: UUID, in handle: ScopeHandle, before: Int?, limit: Int
    ) async throws(ScopeError) -> [UInt8] {
        let name = handle.name
        let needle = Array(uuid.wireString.utf8)
        var entries: [JSONValue] = []
        var upper = min(before.map { $0 - 1 } ?? Int.max, handle.version)
        // As far back as `changesets?since=` reaches (the store may keep a little more).
        var oldest = handle.runtime.withLock { $0.oldestResumable }
        var next: Int?
        scan: while upper > oldest {
            let from = max(oldest, upper - Self.historyScanChunk)
            let records: [ChangeRecord]
            do throws(StoreError) {
                records = try await store.changes(scope: name, after: Int64(from), limit: upper - from).records
            } catch .historyTruncated(_, _, let oldestResumable) {
                // The chunk reaches before the retained log: scan from its start instead.
                guard Int(oldestResumable) > oldest else { break }
                oldest = Int(oldestResumable)
                continue
            } catch .scopeMissing {
                throw .scopeNotFound(name)
            } catch {
                throw storeFailure(error)
            }
            for record in records.reversed() where Int(record.version) <= upper {
                guard Self.contains(record.payload, needle),
                    let entry = Self.historyEntry(of: uuid, in: record)
                else { continue }
                if entries.count == limit {
                    next = Int(record.version) + 1
                    break scan
                }
                entries.append(entry)
            }
            upper = from
        }
        if entries.isEmpty, before == nil, !handle.committedState.contains(uuid) {
            throw .objectNotFound(scope: name, uuid: uuid)
        }
        var writer = JSONWriter(capacity: 128 + entries.count * 256)
        writer.write([
            "uuid": .string(uuid.wireString), "entries": .array(entries),
            "next": next.map { .number(JSONNumber($0)) } ?? .null,
        ])
        return writer.bytes
    }

    /// Whether `bytes` contain `needle`: `memchr` to each candidate first byte, `memcmp` there (the
    /// scan reads every retained payload; the generic collection search is several times slower).
    static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, needle.count <= bytes.count else { return false }
        return bytes.withUnsafeBufferPointer { haystack in
            needle.withUnsafeBufferPointer { needle in
                guard let base = haystack.baseAddress, let wanted = needle.baseAddress else { return false }
                var start = base
                let lastStart = base + (haystack.count - needle.count)
                while start <= lastStart {
                    guard let hit = memchr(start, Int32(first), lastStart - start + 1) else { return false }
                    let candidate = hit.assumingMemoryBound(to: UInt8.self)
                    if memcmp(candidate, wanted, needle.count) == 0 { return true }
                    start = UnsafePointer(candidate) + 1
                }
                return false
            }
        }
    }

    /// The entry of one logged change set for `uuid`, nil when it does not touch the object (its
    /// bytes name the UUID only inside another object's values).
    static func historyEntry(of uuid: UUID, in record: ChangeRecord) -> JSONValue? {
        guard let payload = try? JSONParser.parse(record.payload) else { return nil }
        let wire = uuid.wireString
        let fragments = (payload["fragments"]?.array ?? []).filter { $0["uuid"]?.string == wire }
        let removed = (payload["removed"]?.array ?? []).contains { $0.string == wire }
        guard !fragments.isEmpty || removed else { return nil }
        var entry: JSONObject = [
            "version": .number(JSONNumber(Int(record.version))),
            "at": payload["at"] ?? .null,
            "subject": payload["subject"] ?? .null,
            "idempotencyKey": payload["idempotencyKey"] ?? .null,
            "method": payload["method"] ?? .null,
            "fragments": .array(fragments),
        ]
        if removed { entry["removed"] = .bool(true) }
        return .object(entry)
    }
}
