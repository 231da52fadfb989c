import Foundation
import Store
import Testing

@Suite struct RecoveryTests {
    @Test func reopeningRecoversEveryScopeFromItsSnapshotAndLogTail() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                defer { store.close() }
                for name in ["c", "a", "b"] {
                    _ = try await store.createScope(descriptor(name), snapshot: Array(name.utf8))
                }
                try await appendVersions(store, "a", 1...5)
                try await store.writeSnapshot(scope: "a", version: 3, snapshot: Array("a at 3".utf8))
                try await appendVersions(store, "b", 1...2)
            }
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            var recovered: [RecoveredScope] = []
            try store.recover { recovered.append($0) }
            #expect(recovered.map(\.info.name) == ["a", "b", "c"])
            #expect(recovered.map(\.info.version) == [5, 2, 0])
            #expect(recovered.map(\.snapshotVersion) == [3, 0, 0])
            #expect(recovered.map(\.snapshot) == [Array("a at 3".utf8), Array("b".utf8), Array("c".utf8)])
            #expect(recovered[0].tail == [4, 5].map { ChangeRecord(version: $0, payload: payload("a", $0)) })
            #expect(recovered[1].tail.map(\.version) == [1, 2])
            #expect(recovered[2].tail.isEmpty)
            #expect(recovered[0].info.descriptor == descriptor("a"))
            // Writing continues where the log ended.
            await #expect(throws: StoreError.versionConflict(scope: "a", expected: 6, attempted: 5)) {
                try await store.append(AppendRequest(scope: "a", version: 5, payload: []))
            }
            try await appendVersions(store, "a", 6...6)
            let one = try #require(try store.recoverScope(named: "a"))
            #expect(one.snapshotVersion == 3)
            #expect(one.tail.map(\.version) == [4, 5, 6])
            #expect(try store.recoverScope(named: "zz") == nil)
        }
    }

    @Test func closingCommitsWhatIsQueuedEvenWhilePaused() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            let results = ResultCollector()
            do {
                let store = try SQLiteStore(path: path)
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                store.pauseCommits()
                for version: Int64 in 1...3 {
                    store.append(AppendRequest(scope: "a", version: version, payload: payload("a", version))) {
                        results.add("\(version)", $0)
                    }
                }
                store.close()
                #expect(results.count == 3)
                #expect(results.failures.isEmpty)
                await #expect(throws: StoreError.closed) {
                    try await store.append(AppendRequest(scope: "a", version: 4, payload: []))
                }
            }
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            #expect(try store.changes(scope: "a", after: 0, limit: 10).records.map(\.version) == [1, 2, 3])
        }
    }

    @Test func recoveryWalksManyScopesPageByPage() async throws {
        try await withStore { store, _ in
            let names = (0..<40).map { String(format: "scope-%03d", $0) }
            for name in names { _ = try await store.createScope(descriptor(name), snapshot: []) }
            var seen: [String] = []
            try store.recover { seen.append($0.info.name) }
            #expect(seen == names)
        }
    }

    @Test func aGapInTheLogIsReportedAsCorruption() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                defer { store.close() }
                _ = try await store.createScope(descriptor("a"), snapshot: [])
                try await appendVersions(store, "a", 1...4)
            }
            try executeRawSQL("DELETE FROM changes WHERE version = 2", path: path)
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            #expect(throws: StoreError.corrupt(path: path, message: "scope 'a' log jumps from 1 to 3")) {
                try store.recover { _ in }
            }
        }
    }

    @Test func aSecondStoreOnTheSameFileIsRefusedUntilTheFirstCloses() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            let first = try SQLiteStore(path: path)
            #expect {
                try SQLiteStore(path: path)
            } throws: { error in
                guard case .openFailed(let named, let message) = error as? StoreError else { return false }
                return named == path && message.contains("pid \(getpid())") && message.contains("one gateway")
            }
            _ = try await first.createScope(descriptor("kept"), snapshot: [])
            first.close()
            let second = try SQLiteStore(path: path)
            defer { second.close() }
            #expect(try second.scope(named: "kept") != nil)
        }
    }

    @Test func openFailuresNameThePath() async throws {
        try await withTemporaryDirectory { directory in
            let missing = directory + "/no/such/dir/store.sqlite"
            #expect {
                try SQLiteStore(path: missing)
            } throws: { error in
                guard case .openFailed(let path, let message) = error as? StoreError else { return false }
                return path == missing && !message.isEmpty && "\(error)".contains(missing)
            }

            let garbage = directory + "/garbage.sqlite"
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: garbage))
            #expect {
                try SQLiteStore(path: garbage)
            } throws: { error in
                guard case .corrupt(let path, _) = error as? StoreError else { return false }
                return path == garbage
            }

            // An empty file is not a new store: SQLite would quietly start an empty one in it.
            let empty = directory + "/empty.sqlite"
            FileManager.default.createFile(atPath: empty, contents: Data())
            #expect {
                try SQLiteStore(path: empty)
            } throws: { error in
                guard case .corrupt(let path, let message) = error as? StoreError else { return false }
                return path == empty && message.contains("empty")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
        }
    }

    @Test func aDatabaseOfAnotherSchemaVersionIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            try executeRawSQL("PRAGMA user_version=7; CREATE TABLE other(x);", path: path)
            #expect(throws: StoreError.corrupt(path: path, message: "schema version 7 is not the supported 1")) {
                try SQLiteStore(path: path)
            }
        }
    }
}
