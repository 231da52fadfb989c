import Foundation
import Store
import Testing

/// The SQLite file itself: a damaged log, a second opener, files that are not a store.
@Suite struct SQLiteFileTests {
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
            _ = FileManager.default.createFile(atPath: empty, contents: Data())
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
