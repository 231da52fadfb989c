import Foundation
import JetstreamJSON
import Synchronization

/// One scope's files in the client's storage directory (docs/offline.md), and the one writer that
/// changes them, off the actor the scope is used on:
///
///     <directory>/<scope name, percent-escaped>/
///         copy      the last whole copy (``StoredCopy``), replaced atomically
///         journal   what happened to the pending sets since, appended record by record
///         lock      held (`flock`) while a sync uses the scope: one at a time, in any process
///
/// Writes are taken in the order they are asked for and done in batches: whatever queued while the
/// writer was busy is written with one `write` and made durable with one `fsync`. ``saved()``
/// returns once everything asked before it is durable.
final class ScopeStorage: Sendable {
    let scope: String
    let folder: String
    private let lock: LockHolder
    private let queue = WriteQueue()
    private let wakeups: AsyncStream<Void>.Continuation
    private let writer: Task<Void, Never>

    /// The requests not yet written, and the first failure since the last ``saved()``.
    struct Queue: Sendable {
        var items: [Item] = []
        var failure: String?
        var closed = false
    }

    /// The queue, shared by the askers and the writer task.
    final class WriteQueue: Sendable {
        private let state = Mutex(Queue())

        func withLock<Result: Sendable>(_ body: (inout Queue) -> Result) -> Result {
            state.withLock { body(&$0) }
        }
    }

    /// One request to the writer.
    enum Item: Sendable {
        case record([UInt8])
        case copy(StoredCopy)
        case barrier(CheckedContinuation<Result<Void, ClientError>, Never>)
    }

    /// A stored copy read back, and what was wrong with the files (each problem says what was done).
    struct Opened: Sendable {
        var copy: StoredCopy?
        var problems: [String] = []
    }

    /// Takes the scope's lock and reads what is stored. Unreadable files are moved aside (renamed
    /// `copy.damaged`, `journal.damaged`) and named in `problems`; the scope then starts afresh.
    ///
    /// - Throws: ``ClientError/storage(_:)`` when the directory cannot be made or another sync
    ///   holds the scope's lock.
    static func open(directory: URL, scope: String, reading: Bool = true) throws(ClientError) -> (ScopeStorage, Opened)
    {
        let folder = directory.appending(path: escapedFileName(scope)).path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw ClientError.storage("cannot make the storage directory \(folder): \(error.localizedDescription)")
        }
        let lock: LockHolder
        do {
            lock = LockHolder(file: try StorageFile(path: folder + "/lock"))
            try lock.file.lockExclusively()
        } catch {
            throw ClientError.storage(
                "the stored copy of scope \(scope) in \(folder) is in use by another sync (in this process or another): "
                    + "\(error)")
        }
        let opened = reading ? read(folder: folder, scope: scope) : Opened()
        return (ScopeStorage(scope: scope, folder: folder, lock: lock), opened)
    }

    private init(scope: String, folder: String, lock: LockHolder) {
        self.scope = scope
        self.folder = folder
        self.lock = lock
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wakeups = continuation
        let queue = self.queue
        writer = Task.detached {
            for await _ in stream {
                let items = queue.withLock { queue in
                    defer { queue.items.removeAll() }
                    return queue.items
                }
                let failure = Self.write(items, folder: folder)
                let (waiters, firstFailure) = queue.withLock { queue in
                    if queue.failure == nil { queue.failure = failure }
                    return (items.compactMap(\.waiter), queue.failure)
                }
                guard !waiters.isEmpty else { continue }
                queue.withLock { $0.failure = nil }
                let result: Result<Void, ClientError> = firstFailure.map { .failure(.storage($0)) } ?? .success(())
                for waiter in waiters { waiter.resume(returning: result) }
            }
        }
    }

    // MARK: - Asking for writes

    func append(_ record: JournalRecord) {
        enqueue(.record(StorageFrames.frame(record.jsonValue.encoded())))
    }

    /// Replaces the copy (and empties the journal, which it includes). Encoded by the writer.
    func write(_ copy: StoredCopy) {
        enqueue(.copy(copy))
    }

    /// Returns once every write asked for before is durable; throws the first failure since the
    /// last call.
    func saved() async throws(ClientError) {
        let result = await withCheckedContinuation { waiter in
            if !enqueue(.barrier(waiter)) {
                waiter.resume(returning: .failure(.storage("the stored copy of scope \(scope) is closed")))
            }
        }
        try result.get()
    }

    /// Writes what was asked, then lets the lock go (another sync may take the scope).
    func close() async throws(ClientError) {
        try await saved()
        queue.withLock { $0.closed = true }
        wakeups.finish()
        await writer.value
        lock.file.unlock()
    }

    @discardableResult
    private func enqueue(_ item: Item) -> Bool {
        let accepted = queue.withLock { queue in
            guard !queue.closed else { return false }
            queue.items.append(item)
            return true
        }
        if accepted { wakeups.yield() }
        return accepted
    }

    /// `canvas-1` → `canvas-1`; anything but letters, digits, `-`, `_` and `.` is `%XX` (a leading
    /// `.` too, so no name is hidden or `..`).
    static func escapedFileName(_ name: String) -> String {
        var escaped = ""
        for byte in name.utf8 {
            let isPlain =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F || (byte == 0x2E && !escaped.isEmpty)
            escaped +=
                isPlain ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }
        return escaped
    }
}

extension ScopeStorage.Item {
    fileprivate var waiter: CheckedContinuation<Result<Void, ClientError>, Never>? {
        if case .barrier(let waiter) = self { return waiter }
        return nil
    }
}

/// Owns the lock file's descriptor for the storage's lifetime (the lock goes with it).
private final class LockHolder: Sendable {
    let file: StorageFile
    init(file: consuming StorageFile) { self.file = file }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
