import Foundation
import JetstreamJSON

extension ScopeStorage {
    /// Reads a scope's copy and journal. What cannot be read is kept aside for a person to look
    /// at (`copy.damaged`, `journal.damaged`) and reported; a journal's last record torn by a crash
    /// is dropped quietly (its write never finished, so no ``saved()`` reported it).
    static func read(folder: String, scope: String) -> Opened {
        let copyPath = folder + "/copy"
        let journalPath = folder + "/journal"
        var opened = Opened()
        guard FileManager.default.fileExists(atPath: copyPath) else {
            // A journal without a copy cannot be: the copy is always written before any record.
            try? FileManager.default.removeItem(atPath: journalPath)
            return opened
        }
        var copy: StoredCopy
        do {
            copy = try readCopy(at: copyPath, scope: scope)
        } catch {
            let keptAside = (try? StorageFile.move(copyPath, to: copyPath + ".damaged")) ?? false
            _ = try? StorageFile.move(journalPath, to: journalPath + ".damaged")
            opened.problems.append(
                "the stored copy of scope \(scope) (\(copyPath)) could not be read: \(error); "
                    + (keptAside ? "it was moved to \(copyPath).damaged and " : "")
                    + "the scope starts afresh from the server")
            return opened
        }
        do {
            let journal = try StorageFile(path: journalPath)
            let bytes = try journal.readAll()
            let reading = StorageFrames.read(bytes)
            var readLength = 0
            var damage: String?
            for record in reading.records {
                do {
                    let json = try JSONParser.parse(Array(record), options: ScopeReplica.eventJSONOptions)
                    copy.apply(try JournalRecord(json: json))
                    readLength += record.count + 8
                } catch {
                    damage = "a record at byte \(readLength) could not be read: \(error)"
                    break
                }
            }
            if damage == nil, case .damaged(let offset, _) = reading.tail {
                damage = "a record at byte \(offset) does not check out (length or checksum)"
            }
            if let damage {
                _ = FileManager.default.createFile(atPath: journalPath + ".damaged", contents: Data(bytes))
                opened.problems.append(
                    "the journal of scope \(scope) (\(journalPath)) is damaged: \(damage); what came before it is kept, "
                        + "the rest was copied to \(journalPath).damaged")
            }
            // Later records go after the last good one, never after damage or a torn write.
            if readLength < bytes.count { try journal.truncate(to: readLength) }
        } catch {
            opened.problems.append("the journal of scope \(scope) could not be read: \(error)")
        }
        opened.copy = copy
        return opened
    }

    private static func readCopy(at path: String, scope: String) throws(StoredCopyError) -> StoredCopy {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(filePath: path)))
        } catch {
            throw StoredCopyError("\(error.localizedDescription)")
        }
        let reading = StorageFrames.read(bytes)
        guard reading.records.count == 1, reading.tail == nil, let record = reading.records.first else {
            throw StoredCopyError(
                "it is not one whole record (\(bytes.count) bytes; its length or checksum does not check out)")
        }
        let json: JSONValue
        do {
            json = try JSONParser.parse(Array(record), options: ScopeReplica.eventJSONOptions)
        } catch {
            throw StoredCopyError("\(error)")
        }
        let copy = try StoredCopy(json: json)
        guard copy.scope == scope else { throw StoredCopyError("it is the copy of scope \(copy.scope), not \(scope)") }
        return copy
    }
}

extension ScopeStorage {
    /// One batch of the writer, in the order asked: records are appended and made durable with one
    /// `fsync` at the end; a copy replaces the copy file and empties the journal (the records asked
    /// before it are in it, so they are not written). Returns the first failure, if any.
    static func write(_ items: [Item], folder: String) -> String? {
        var failure: String?
        var appended: [UInt8] = []
        for item in items {
            switch item {
            case .record(let bytes):
                appended += bytes
            case .copy(let copy):
                do {
                    try StorageFile.replace(folder + "/copy", with: StorageFrames.frame(copy.jsonValue.encoded()))
                    appended = []
                    try StorageFile(path: folder + "/journal").truncate(to: 0)
                } catch {
                    // The old copy and the journal stay as they were: the records still go there.
                    failure = failure ?? "writing the copy: \(error)"
                }
            case .barrier:
                break
            }
        }
        guard !appended.isEmpty else { return failure }
        do {
            let journal = try StorageFile(path: folder + "/journal")
            try journal.append(appended)
            try journal.synchronize()
        } catch {
            failure = failure ?? "writing the journal: \(error)"
        }
        return failure
    }
}

extension ScopeStorage {
    /// Removes the scope's copy and journal (after ``close()``: the scope was deleted on the server).
    func removeFiles() {
        for file in ["copy", "journal"] { try? FileManager.default.removeItem(atPath: folder + "/" + file) }
    }
}
