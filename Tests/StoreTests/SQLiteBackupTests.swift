import Foundation
import Store
import Testing

/// `SQLiteBackup`: copies of an open store taken while it commits, restored and reopened; the
/// refusals, and that nothing is left behind by them.
@Suite struct SQLiteBackupTests {
    /// One task appends to `a` and `b` in turn, each append awaited, so every instant of the store
    /// has `a` at the version of `b` or one ahead. Copies are taken while it runs; each must be such
    /// an instant, list the versions it holds, and reopen as a store whose logs are whole.
    @Test func copiesTakenWhileAppendsCommitAreEachOneInstant() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/jetstream.sqlite"
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            for name in ["a", "b"] { _ = try await store.createScope(descriptor(name), snapshot: [1, 2, 3]) }
            let rounds: Int64 = 300
            // Payloads of a few KiB, so that a copy spans many pages while commits go on.
            let filler = [UInt8](repeating: 0x2A, count: 3000)
            let writer = Task {
                for version in 1...rounds {
                    for name in ["a", "b"] {
                        try await store.append(
                            AppendRequest(scope: name, version: version, payload: payload(name, version) + filler))
                    }
                }
            }
            var copies: [SQLiteBackup] = []
            for index in 0..<4 {
                let wanted = Int64(index + 1) * rounds / 5
                #expect(await eventually { ((try? store.scope(named: "b"))?.version ?? 0) >= wanted })
                copies.append(try SQLiteBackup.copy(store: path, to: directory + "/copy-\(index).sqlite"))
            }
            try await writer.value

            for (index, copy) in copies.enumerated() {
                let versions = Dictionary(uniqueKeysWithValues: copy.scopes.map { ($0.name, $0.version) })
                let a = try #require(versions["a"])
                let b = try #require(versions["b"])
                #expect(a == b || a == b + 1, "copy \(index): a at \(a), b at \(b)")
                #expect(copy.bytes > 0)
                try FileManager.default.createDirectory(
                    atPath: directory + "/r\(index)", withIntermediateDirectories: true)
                let restored = try SQLiteBackup.restore(copy.file, toStore: directory + "/r\(index)/jetstream.sqlite")
                #expect(restored.scopes == copy.scopes)
                let reopened = try SQLiteStore(path: restored.file)
                defer { reopened.close() }
                var recovered: [String: Int64] = [:]
                try reopened.recover { scope in recovered[scope.info.name] = scope.info.version }
                #expect(recovered == versions)
                for (name, version) in versions {
                    let page = try reopened.changes(scope: name, after: 0, limit: 1000)
                    #expect(page.records.map(\.version) == Array(stride(from: 1, through: version, by: 1)))
                    #expect(page.records.map(\.payload) == page.records.map { payload(name, $0.version) + filler })
                }
                // The restored store takes the next version.
                try await reopened.append(
                    AppendRequest(scope: "a", version: a + 1, payload: payload("a", a + 1)))
            }
        }
    }

    @Test func aDeletedScopeIsNotListedAndItsTombstoneIsKept() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/jetstream.sqlite"
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            _ = try await store.createScope(descriptor("kept"), snapshot: [])
            _ = try await store.createScope(descriptor("gone"), snapshot: [])
            try await appendVersions(store, "gone", 1...3)
            let tombstone = try await store.deleteScope(named: "gone")
            let copy = try SQLiteBackup.copy(store: path, to: directory + "/copy.sqlite")
            #expect(copy.scopes == [SQLiteBackup.Scope(name: "kept", version: 0)])
            try FileManager.default.createDirectory(atPath: directory + "/r", withIntermediateDirectories: true)
            let restored = try SQLiteBackup.restore(copy.file, toStore: directory + "/r/jetstream.sqlite")
            let reopened = try SQLiteStore(path: restored.file)
            defer { reopened.close() }
            #expect(try await reopened.createScope(descriptor("gone"), snapshot: []) == tombstone + 1)
        }
    }

    @Test func refusalsNameTheFileAndLeaveNothingBehind() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/jetstream.sqlite"
            let destination = directory + "/copy.sqlite"
            #expect(throws: SQLiteBackupError.storeMissing(path: path)) {
                try SQLiteBackup.copy(store: path, to: destination)
            }
            // Looking did not create a store.
            #expect(!FileManager.default.fileExists(atPath: path))
            _ = FileManager.default.createFile(atPath: path, contents: Data())
            #expect(throws: SQLiteBackupError.notAStore(path: path, message: "the file is empty (0 bytes)")) {
                try SQLiteBackup.copy(store: path, to: destination)
            }
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
            #expect {
                try SQLiteBackup.copy(store: path, to: destination)
            } throws: { error in
                guard case .notAStore(let named, _) = error as? SQLiteBackupError else { return false }
                return named == path
            }
            try FileManager.default.removeItem(atPath: path)

            let store = try SQLiteStore(path: path)
            defer { store.close() }
            _ = try await store.createScope(descriptor("a"), snapshot: [])
            try Data("precious".utf8).write(to: URL(fileURLWithPath: destination))
            #expect(throws: SQLiteBackupError.destinationExists(path: destination)) {
                try SQLiteBackup.copy(store: path, to: destination)
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data("precious".utf8))
            let replaced = try SQLiteBackup.copy(store: path, to: destination, replacing: true)
            #expect(replaced.scopes == [SQLiteBackup.Scope(name: "a", version: 0)])

            // The store open in this process holds its lock: restoring onto it is refused.
            #expect {
                try SQLiteBackup.restore(destination, toStore: path)
            } throws: { error in
                guard case .targetInUse(let named, _) = error as? SQLiteBackupError else { return false }
                return named == path
            }
            // A stale WAL would be replayed into the restored file.
            let target = directory + "/stale/jetstream.sqlite"
            try FileManager.default.createDirectory(atPath: directory + "/stale", withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: target + "-wal", contents: Data(count: 32))
            #expect(throws: SQLiteBackupError.targetOccupied(path: target, files: [target + "-wal"])) {
                try SQLiteBackup.restore(destination, toStore: target)
            }
            #expect(!FileManager.default.fileExists(atPath: target))
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(names.filter { $0.contains("partial") } == [])
        }
    }
}
