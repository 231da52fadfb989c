import Foundation
import JetstreamJSON
import JetstreamModel
import Testing

@testable import JetstreamClient

/// The storage's files without a server: record framing (a torn last write is dropped quietly,
/// damage is reported), a copy and its journal read back, a crash between writing a copy and
/// emptying the journal, the writer's batches, and the scope's lock.
@Suite("Scope storage files")
struct ScopeStorageFilesTests {
    typealias F = EngineFixtures

    static func folder() -> URL {
        FileManager.default.temporaryDirectory.appending(path: "jetstream-storage-files-\(UUID().uuidString)")
    }

    static func pending(_ sequence: Int, created: String? = "2026-11-28T10:00:00.000Z") -> PendingChangeSet {
        PendingChangeSet(
            key: "c1:\(sequence)", fragments: F.add(F.uuid(100 + sequence), ["label": .string("s\(sequence)")]),
            status: .queued, created: created)
    }

    static func copy(sequence: Int = 0, pending: [PendingChangeSet] = []) -> StoredCopy {
        StoredCopy(
            scope: "canvas-1", clientID: "c1", sequence: sequence, schema: F.schema, schemaTag: "\"abc\"",
            state: F.canvas(version: 7, [(F.uuid(1), ["label": "one"])]), pending: pending)
    }

    @Test("frames: whole records read back; a torn last record is torn, bytes after a bad one are damage")
    func frames() {
        let records = [[UInt8]("first".utf8), [], [UInt8](repeating: 7, count: 70_000)]
        let bytes = records.flatMap(StorageFrames.frame)
        let whole = StorageFrames.read(bytes)
        #expect(whole.records.map(Array.init) == records && whole.tail == nil && whole.validLength == bytes.count)

        for cut in [1, 7, 8, 12, 69_999] {
            let reading = StorageFrames.read(Array(bytes.dropLast(cut)))
            #expect(reading.records.count == 2, "cut \(cut)")
            #expect(reading.tail == .torn(bytes: bytes.count - cut - reading.validLength), "cut \(cut)")
        }
        var flipped = bytes
        flipped[10] ^= 0x01  // inside the first record's payload
        let damaged = StorageFrames.read(flipped)
        #expect(damaged.records.isEmpty && damaged.tail == .damaged(atOffset: 0, bytes: bytes.count))
        var lastFlipped = bytes
        lastFlipped[bytes.count - 1] ^= 0x01  // the last record, with nothing after it: a torn write
        #expect(StorageFrames.read(lastFlipped).tail == .torn(bytes: 70_008))
        #expect(CRC32.checksum("123456789".utf8) == 0xCBF4_3926, "the standard check value")
    }

    @Test("a copy round-trips through JSON: state, schema, keys, stamps and statuses")
    func copyRoundTrip() throws {
        var accepted = Self.pending(2)
        accepted.status = .accepted(version: 9)
        let copy = Self.copy(sequence: 2, pending: [Self.pending(1, created: nil), accepted])
        let read = try StoredCopy(json: JSONParser.parse(copy.jsonValue.encoded()))
        #expect(read.scope == "canvas-1" && read.clientID == "c1" && read.sequence == 2 && read.schemaTag == "\"abc\"")
        #expect(read.state.version == 7 && F.content(read.state) == F.content(copy.state))
        #expect(read.pending.map(\.key) == ["c1:1", "c1:2"])
        #expect(read.pending.map(\.status) == [.queued, .accepted(version: 9)])
        #expect(read.pending.map(\.created) == [nil, "2026-11-28T10:00:00.000Z"])
        #expect(read.pending[1].fragments.map(\.jsonValue) == accepted.fragments.map(\.jsonValue))
        var other = copy.jsonValue.object!
        other["format"] = 2
        #expect(throws: StoredCopyError.self) { try StoredCopy(json: .object(other)) }
    }

    @Test("a journal replayed over its copy; one already in the copy (a crash before emptying it) adds nothing twice")
    func journalReplay() {
        var copy = Self.copy(sequence: 1, pending: [Self.pending(1)])
        for record: JournalRecord in [
            .added(Self.pending(1), sequence: 1), .added(Self.pending(2), sequence: 2),
            .added(Self.pending(3), sequence: 3), .accepted(key: "c1:2", version: 8), .finished(key: "c1:1"),
            .finished(key: "c1:99"),
        ] {
            copy.apply(record)
        }
        #expect(copy.sequence == 3)
        #expect(copy.pending.map(\.key) == ["c1:2", "c1:3"])
        #expect(copy.pending.map(\.status) == [.accepted(version: 8), .queued])
    }

    @Test(
        "restored into the engine: in flight at a crash is queued again, accepted at or below the state is gone, keys go on"
    )
    func restoredEngine() {
        var inFlight = Self.pending(1)
        inFlight.status = .inFlight
        var old = Self.pending(2)
        old.status = .accepted(version: 7)
        var ahead = Self.pending(3)
        ahead.status = .accepted(version: 8)
        var engine = SyncEngine(
            state: F.canvas(version: 7, []), schema: F.schema, clientID: "c1", sequence: 3,
            pending: [inFlight, old, ahead])
        #expect(engine.pending.map(\.key) == ["c1:1", "c1:3"])
        #expect(engine.pending.map(\.status) == [.queued, .accepted(version: 8)])
        #expect(engine.view.object(F.uuid(101)) != nil && engine.view.object(F.uuid(103)) != nil, "the view shows them")
        guard case .success(let key) = engine.local(F.add(F.uuid(200))) else {
            Issue.record("the local change was refused")
            return
        }
        #expect(key == "c1:4")
    }

    @Test(
        "the writer: records and copies in order, saved() after a batch, a torn tail dropped quietly, damage kept aside"
    )
    func writerAndReader() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, opened) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        #expect(opened.copy == nil && opened.problems.isEmpty)
        storage.write(Self.copy())
        storage.append(.added(Self.pending(1), sequence: 1))
        storage.append(.added(Self.pending(2), sequence: 2))
        try await storage.saved()
        storage.append(.accepted(key: "c1:1", version: 8))
        try await storage.close()

        let journal = directory.appending(path: "canvas-1/journal")
        let (second, reopened) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        #expect(reopened.problems.isEmpty)
        #expect(reopened.copy?.pending.map(\.key) == ["c1:1", "c1:2"])
        #expect(reopened.copy?.pending.first?.status == .accepted(version: 8))
        // A copy written now includes the journal, which it empties.
        second.write(Self.copy(sequence: 2, pending: reopened.copy?.pending ?? []))
        second.append(.added(Self.pending(3), sequence: 3))
        try await second.close()
        let records = StorageFrames.read([UInt8](try Data(contentsOf: journal))).records
        #expect(records.count == 1, "only what came after the copy")

        // A torn last write: quietly dropped, and cut off so later records follow the good ones.
        var bytes = [UInt8](try Data(contentsOf: journal))
        bytes += StorageFrames.frame(JournalRecord.finished(key: "c1:2").jsonValue.encoded()).dropLast(3)
        try Data(bytes).write(to: journal)
        let (third, torn) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        #expect(torn.problems.isEmpty && torn.copy?.pending.map(\.key) == ["c1:1", "c1:2", "c1:3"])
        #expect(try Data(contentsOf: journal).count == records.first!.count + 8, "the torn write is cut off")
        try await third.close()

        // Damage in the middle: what came before is kept, the file is copied aside, reported.
        var damagedBytes = [UInt8](try Data(contentsOf: journal))
        let goodLength = damagedBytes.count
        var bad = StorageFrames.frame(JournalRecord.finished(key: "c1:1").jsonValue.encoded())
        bad[9] ^= 0xFF
        damagedBytes += bad + StorageFrames.frame(JournalRecord.finished(key: "c1:3").jsonValue.encoded())
        try Data(damagedBytes).write(to: journal)
        let (fourth, damaged) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        #expect(damaged.problems.count == 1 && damaged.problems[0].contains("is damaged"), "\(damaged.problems)")
        #expect(damaged.copy?.pending.map(\.key) == ["c1:1", "c1:2", "c1:3"], "nothing after the damage")
        #expect(FileManager.default.fileExists(atPath: journal.path + ".damaged"))
        #expect(try Data(contentsOf: journal).count == goodLength)
        try await fourth.close()
    }

    @Test("a copy cut short is moved aside and reported; the scope starts afresh")
    func truncatedCopy() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, _) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        storage.write(Self.copy())
        try await storage.close()
        let copyFile = directory.appending(path: "canvas-1/copy")
        let bytes = try Data(contentsOf: copyFile)
        try bytes.prefix(bytes.count / 3).write(to: copyFile)
        let (again, opened) = try ScopeStorage.open(directory: directory, scope: "canvas-1")
        #expect(opened.copy == nil)
        #expect(opened.problems.count == 1 && opened.problems[0].contains("not one whole record"), "\(opened.problems)")
        #expect(FileManager.default.fileExists(atPath: copyFile.path + ".damaged"))
        #expect(!FileManager.default.fileExists(atPath: copyFile.path))
        try await again.close()
    }

    @Test("one holder of a scope's lock at a time; the lock goes with close()")
    func lock() async throws {
        let directory = Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (storage, _) = try ScopeStorage.open(directory: directory, scope: "canvas/1 ü")
        #expect(throws: ClientError.self) { _ = try ScopeStorage.open(directory: directory, scope: "canvas/1 ü") }
        try await storage.close()
        let (again, _) = try ScopeStorage.open(directory: directory, scope: "canvas/1 ü")
        try await again.close()
        #expect(ScopeStorage.escapedFileName("canvas/1 ü") == "canvas%2F1%20%C3%BC")
        #expect(ScopeStorage.escapedFileName("..") == "%2E.")
    }
}
