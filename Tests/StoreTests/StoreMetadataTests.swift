import Foundation
import Store
import Testing

/// The store's metadata (what the engine records about the schema it serves): bytes by key,
/// replaced on write, durable across a reopen, apart from the scopes.
@Suite struct StoreMetadataTests {
    /// Bytes no text encoding would keep: a zero byte, invalid UTF-8, every byte value.
    static let binary: [UInt8] = [0, 0xFF, 0xC3, 0x28] + (0...255).map { UInt8($0) }

    @Test(arguments: StoreKind.allCases)
    func metadataRoundTripsByKeyAndSurvivesAReopen(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try location.open()
                defer { store.close() }
                #expect(try await store.metadata(key: "schema") == nil)
                try await store.writeMetadata(key: "schema", value: Array(#"{"fingerprint":"a"}"#.utf8))
                #expect(try await store.metadata(key: "schema") == Array(#"{"fingerprint":"a"}"#.utf8))
                // A write replaces what the key held; other keys are apart.
                try await store.writeMetadata(key: "schema", value: Array(#"{"fingerprint":"b"}"#.utf8))
                try await store.writeMetadata(key: "other", value: Self.binary)
                #expect(try await store.metadata(key: "schema") == Array(#"{"fingerprint":"b"}"#.utf8))
                #expect(try await store.metadata(key: "other") == Self.binary)
                #expect(try await store.metadata(key: "Schema") == nil)
                try await store.writeMetadata(key: "empty", value: [])
                #expect(try await store.metadata(key: "empty") == [])
                // Scopes come and go without touching it, and it is no scope.
                _ = try await store.createScope(descriptor("canvas-1"), snapshot: [])
                try await appendVersions(store, "canvas-1", 1...2)
                _ = try await store.deleteScope(named: "canvas-1")
                var recovered: [String] = []
                try await store.recover { recovered.append($0.info.name) }
                #expect(recovered.isEmpty)
            }
            let reopened = try location.open()
            defer { reopened.close() }
            #expect(try await reopened.metadata(key: "schema") == Array(#"{"fingerprint":"b"}"#.utf8))
            #expect(try await reopened.metadata(key: "other") == Self.binary)
            #expect(try await reopened.metadata(key: "empty") == [])
            #expect(try await reopened.metadata(key: "missing") == nil)
        }
    }

    @Test func aSQLiteFileWithoutTheMetadataTableGainsItOnOpen() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/store.sqlite"
            do {
                let store = try SQLiteStore(path: path)
                defer { store.close() }
                _ = try await store.createScope(descriptor("canvas-1"), snapshot: Array("state".utf8))
            }
            // As a file written before the table existed.
            try executeRawSQL("DROP TABLE metadata", path: path)
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            #expect(try store.metadata(key: "schema") == nil)
            try await store.writeMetadata(key: "schema", value: [1, 2, 3])
            #expect(try store.metadata(key: "schema") == [1, 2, 3])
            #expect(try await store.scope(named: "canvas-1")?.version == 0)
        }
    }
}
