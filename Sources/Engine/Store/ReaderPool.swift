import Synchronization

/// A few read connections, each behind its own `Mutex`. A read takes the first free one and waits for
/// one (round robin) only when all are busy; WAL lets all of them read while the commit thread writes.
final class ReaderPool: Sendable {
    /// One connection and its lock (a `Mutex` cannot live in an array by itself).
    private final class Slot: Sendable {
        let connection: Mutex<SQLiteConnection?>

        init(_ connection: sending SQLiteConnection) { self.connection = Mutex(connection) }
    }

    private let slots: [Slot]
    private let nextSlot = Atomic<Int>(0)

    init(path: String, count: Int) throws(StoreError) {
        var slots: [Slot] = []
        for _ in 0..<max(1, count) {
            let connection = try SQLiteConnection(path: path)
            try connection.execute(SQLiteSchema.readerPragmas)
            slots.append(Slot(connection))
        }
        self.slots = slots
    }

    /// Runs `body` in a read transaction on a free connection.
    func read<Value: Sendable>(_ body: (SQLiteConnection) throws(StoreError) -> Value) throws(StoreError) -> Value {
        /// `body` between `BEGIN` and `COMMIT` on a locked connection; rolled back when it throws.
        func transaction(_ connection: inout sending SQLiteConnection?) throws(StoreError) -> sending Value {
            guard let connection else { throw .closed }
            try connection.statement("BEGIN").run()
            do throws(StoreError) {
                let value = try body(connection)
                try connection.statement("COMMIT").run()
                return value
            } catch {
                try? connection.statement("ROLLBACK").run()
                throw error
            }
        }
        for slot in slots {
            if let value = try slot.connection.withLockIfAvailable(transaction) { return value }
        }
        let index = nextSlot.wrappingAdd(1, ordering: .relaxed).oldValue % slots.count
        return try slots[index].connection.withLock(transaction)
    }

    /// Closes every connection; later reads fail with ``StoreError/closed``.
    func close() {
        for slot in slots { slot.connection.withLock { $0 = nil } }
    }
}
